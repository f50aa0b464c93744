/* The CLI client's way to a running supervisor; see api_info.h. */
#include "supervisor/web/api_info.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "protocol/json_strict.h"
#include "supervisor/approval/sha256.h"

#define INFO_MAX_BYTES 4096

/* 0 when PATH is a directory of ours that others cannot write, -EPERM when it is anything
 * else (another user's, a symlink, a file), -ENOENT when absent. Looked at through a
 * descriptor that followed no symlink. */
static int check_private(const char *path)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return errno == ELOOP || errno == ENOTDIR ? -EPERM : -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 0022))
		return -EPERM;
	return 0;
}

/* Our first (by name) private directory /tmp/cloister-UID.*, made when the fixed name was
 * another user's; NULL when there is none. */
static char *tmp_fallback(const char *base)
{
	_cleanup_free_ char *prefix = NULL;
	char *best = NULL;
	struct dirent *de;
	DIR *d;

	if (asprintf(&prefix, "%s.", strrchr(base, '/') + 1) < 0)
		return NULL;
	d = opendir("/tmp");
	if (!d)
		return NULL;
	while ((de = readdir(d))) {
		_cleanup_free_ char *path = NULL;

		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0 ||
		    (best && strcmp(de->d_name, strrchr(best, '/') + 1) >= 0) ||
		    asprintf(&path, "/tmp/%s", de->d_name) < 0 || check_private(path) < 0)
			continue;
		free(best);
		best = TAKE_PTR(path);
	}
	closedir(d);
	return best;
}

/* The directory above api/ for a user without XDG_RUNTIME_DIR: /tmp/cloister-UID when it is
 * ours or absent; when another user took that name (anyone can, in /tmp), a private
 * /tmp/cloister-UID.XXXXXX of ours — made by CREATE when there is none yet. */
static int tmp_dir(bool create, char **ret_dir, bool *ret_fallback)
{
	_cleanup_free_ char *base = NULL, *fallback = NULL;
	int r;

	*ret_fallback = false;
	if (asprintf(&base, "/tmp/cloister-%u", (unsigned)geteuid()) < 0)
		return -ENOMEM;
	r = check_private(base);
	if (r == 0) {
		*ret_dir = TAKE_PTR(base);
		return 0;
	}
	/* A fallback of ours first, even when the fixed name is free again: the supervisors
	 * running there stay the ones the CLI finds. */
	fallback = tmp_fallback(base);
	if (!fallback && create && r == -ENOENT && mkdir(base, 0700) == 0) {
		*ret_dir = TAKE_PTR(base);
		return 0;
	}
	if (!fallback && create) {
		if (asprintf(&fallback, "%s.XXXXXX", base) < 0)
			return -ENOMEM;
		if (!mkdtemp(fallback))
			return -errno;
	}
	if (!fallback) { /* nothing of ours: the listing finds nothing there */
		*ret_dir = TAKE_PTR(base);
		return 0;
	}
	*ret_dir = TAKE_PTR(fallback);
	*ret_fallback = true;
	return 0;
}

static int dir_for(bool create, char **ret_dir, bool *ret_fallback)
{
	_cleanup_free_ char *top = NULL;
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char *dir;
	int n;

	*ret_fallback = false;
	if (xdg && xdg[0] == '/')
		n = asprintf(&dir, "%s/cloister/api", xdg);
	else if (geteuid() == 0)
		n = asprintf(&dir, "/run/cloister/api");
	else {
		int r = tmp_dir(create, &top, ret_fallback);

		if (r < 0)
			return r;
		n = asprintf(&dir, "%s/api", top);
	}
	if (n < 0)
		return -ENOMEM;
	*ret_dir = dir;
	return 0;
}

int api_info_dir(char **ret_dir)
{
	bool fallback;

	return dir_for(false, ret_dir, &fallback);
}

int api_info_dir_claim(char **ret_dir, bool *ret_fallback)
{
	return dir_for(true, ret_dir, ret_fallback);
}

/* Create PATH 0700 if missing; refuse one that is not ours or is open to others. */
static int private_dir(const char *path)
{
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	return check_private(path);
}

static int private_dirs(const char *dir)
{
	_cleanup_free_ char *copy = strdup(dir);
	char *slash;
	int r;

	if (!copy)
		return -ENOMEM;
	/* The parent ("…/cloister") is ours too; what is above it exists already. */
	slash = strrchr(copy, '/');
	if (slash && slash != copy) {
		*slash = '\0';
		r = private_dir(copy);
		if (r < 0)
			return r;
	}
	return private_dir(dir);
}

int api_info_write(const char *dir, const struct api_info *info, char **ret_path,
                   struct cl_error *err)
{
	_cleanup_free_ char *path = NULL, *tmp = NULL, *text = NULL;
	_cleanup_close_ int fd = -EBADF;
	cJSON *o;
	size_t len;
	int r;

	r = private_dirs(dir);
	if (r < 0)
		return cl_error_set(err, r, "%s: %s", dir,
		                    r == -EPERM ? "not a private directory of ours" : strerror(-r));
	if (asprintf(&path, "%s/%d.json", dir, (int)info->pid) < 0 ||
	    asprintf(&tmp, "%s/.%d.json.tmp", dir, (int)info->pid) < 0)
		return -ENOMEM;
	o = cJSON_CreateObject();
	if (!o)
		return -ENOMEM;
	cJSON_AddStringToObject(o, "url", info->url);
	cJSON_AddStringToObject(o, "tokens_url", info->tokens_url);
	cJSON_AddStringToObject(o, "request_url", info->request_url);
	cJSON_AddStringToObject(o, "token", info->token);
	cJSON_AddStringToObject(o, "name", info->name);
	cJSON_AddStringToObject(o, "nonce", info->nonce);
	cJSON_AddNumberToObject(o, "pid", info->pid);
	cJSON_AddNumberToObject(o, "start", (double)info->start);
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!text)
		return -ENOMEM;
	len = strlen(text);
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return cl_error_set(err, -errno, "%s: %s", tmp, strerror(errno));
	if (write(fd, text, len) != (ssize_t)len || fsync(fd) < 0) {
		r = -errno;
		unlink(tmp);
		return cl_error_set(err, r ? r : -EIO, "%s: write failed", tmp);
	}
	if (rename(tmp, path) < 0) {
		r = -errno;
		unlink(tmp);
		return cl_error_set(err, r, "%s: %s", path, strerror(-r));
	}
	*ret_path = TAKE_PTR(path);
	return 0;
}

void api_info_remove(const char *path)
{
	if (path)
		unlink(path);
}

static int copy_field(const cJSON *o, const char *key, char *dst, size_t size, bool required)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!v)
		return required ? -EINVAL : 0;
	if (!cJSON_IsString(v) || strlen(v->valuestring) >= size)
		return -EINVAL;
	memcpy(dst, v->valuestring, strlen(v->valuestring) + 1);
	return 0;
}

int api_info_parse(const char *json, size_t len, struct api_info *ret)
{
	_cleanup_cjson_ cJSON *o = NULL;
	struct api_info info = {0};
	const cJSON *pid, *start;

	if (cl_json_parse_strict(json, len, 2, 16, NULL, &o) < 0 || !cJSON_IsObject(o))
		return -EINVAL;
	if (copy_field(o, "url", info.url, sizeof(info.url), true) < 0 ||
	    copy_field(o, "tokens_url", info.tokens_url, sizeof(info.tokens_url), false) < 0 ||
	    copy_field(o, "request_url", info.request_url, sizeof(info.request_url), false) < 0 ||
	    copy_field(o, "token", info.token, sizeof(info.token), true) < 0 ||
	    copy_field(o, "name", info.name, sizeof(info.name), false) < 0 ||
	    copy_field(o, "nonce", info.nonce, sizeof(info.nonce), false) < 0)
		return -EINVAL;
	pid = cJSON_GetObjectItemCaseSensitive(o, "pid");
	if (!cJSON_IsNumber(pid) || pid->valuedouble < 1 || pid->valuedouble > 4194304)
		return -EINVAL;
	info.pid = (pid_t)pid->valuedouble;
	start = cJSON_GetObjectItemCaseSensitive(o, "start");
	if (start && (!cJSON_IsNumber(start) || start->valuedouble < 0 ||
	              start->valuedouble > 9007199254740992.0))
		return -EINVAL;
	info.start = start ? (uint64_t)start->valuedouble : 0;
	*ret = info;
	return 0;
}

int api_info_start_time(pid_t pid, uint64_t *ret_start)
{
	char path[64], buf[1024];
	_cleanup_close_ int fd = -EBADF;
	unsigned long long start;
	const char *p;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = '\0';
	/* After the command's closing parenthesis (the command may hold any character): state is
	 * field 3, the start time field 22. */
	p = strrchr(buf, ')');
	if (!p)
		return -EIO;
	p++;
	for (int field = 3; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EIO;
	}
	if (sscanf(p, " %llu", &start) != 1)
		return -EIO;
	*ret_start = start;
	return 0;
}

static bool process_alive(const struct api_info *info)
{
	uint64_t start;

	if (kill(info->pid, 0) < 0 && errno == ESRCH)
		return false;
	if (info->start && api_info_start_time(info->pid, &start) == 0 && start != info->start)
		return false;
	return true;
}

int api_info_proof(const char *nonce, const char *challenge, char ret_proof[static 65])
{
	size_t len = strlen(challenge);
	uint8_t mac[SHA256_DIGEST_SIZE];

	if (!*nonce || len == 0 || len > API_PROOF_CHALLENGE_MAX ||
	    strspn(challenge, "0123456789abcdef") != len)
		return -EINVAL;
	hmac_sha256(nonce, strlen(nonce), challenge, len, mac);
	sha256_hex(mac, ret_proof);
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	const struct api_info *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

int api_info_list(const char *dir, void (*fn)(const struct api_info *info, void *userdata),
                  void *userdata)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	struct api_info *found = NULL;
	size_t n = 0, cap = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char buf[INFO_MAX_BYTES];
		_cleanup_close_ int fd = -EBADF;
		struct api_info info;
		struct stat st;
		ssize_t len;

		if (de->d_name[0] == '.' || !strstr(de->d_name, ".json"))
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
			continue;
		len = read(fd, buf, sizeof(buf));
		if (len <= 0 || (size_t)len >= sizeof(buf))
			continue;
		if (api_info_parse(buf, (size_t)len, &info) < 0)
			continue;
		/* A supervisor that died without cleaning up leaves its file behind: the file goes
		 * (ours, in our private directory). A live pid with another start time is another
		 * process that reused it. */
		if (!process_alive(&info)) {
			(void)unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		if (n == cap) {
			size_t c = cap ? cap * 2 : 4;
			struct api_info *v = realloc(found, c * sizeof(*v));

			if (!v)
				break;
			found = v;
			cap = c;
		}
		found[n++] = info;
	}
	closedir(d);
	if (n > 1) /* qsort's pointer must not be NULL, even for no elements */
		qsort(found, n, sizeof(*found), cmp_pid);
	for (size_t i = 0; i < n; i++)
		fn(&found[i], userdata);
	free(found);
	return (int)n;
}

static bool hex64(const char *s)
{
	for (int i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

int api_info_secret(const char *dir, char ret[static 65], struct cl_error *err)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_close_ int fd = -EBADF;
	char buf[65] = "";
	struct stat st;
	int r;

	r = private_dirs(dir);
	if (r < 0)
		return cl_error_set(err, r, "%s: %s", dir,
		                    r == -EPERM ? "not a private directory of ours" : strerror(-r));
	if (asprintf(&path, "%s/../secret", dir) < 0)
		return -ENOMEM;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0) {
		unsigned char raw[32];

		if (getrandom(raw, sizeof(raw), 0) != sizeof(raw))
			return cl_error_set(err, -EIO, "getrandom failed");
		for (size_t i = 0; i < sizeof(raw); i++)
			snprintf(buf + 2 * i, 3, "%02x", raw[i]);
		explicit_bzero(raw, sizeof(raw));
		if (write(fd, buf, 64) != 64 || fsync(fd) < 0) {
			unlink(path);
			return cl_error_set(err, -EIO, "%s: write failed", path);
		}
		memcpy(ret, buf, 65);
		explicit_bzero(buf, sizeof(buf));
		return 0;
	}
	if (errno != EEXIST)
		return cl_error_set(err, -errno, "%s: %m", path);
	/* Made by another supervisor (perhaps a moment ago: give its write a chance). */
	for (int tries = 0; tries < 50; tries++) {
		ssize_t n;

		cl_closep(&fd);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 || fstat(fd, &st) < 0)
			return cl_error_set(err, -errno, "%s: %m", path);
		if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
			return cl_error_set(err, -EPERM, "%s: not a private file of ours", path);
		n = read(fd, buf, 64);
		if (n == 64 && hex64(buf)) {
			buf[64] = '\0';
			memcpy(ret, buf, 65);
			explicit_bzero(buf, sizeof(buf));
			return 0;
		}
		usleep(10000);
	}
	return cl_error_set(err, -EINVAL, "%s: not a secret (64 hex characters)", path);
}
