#include "supervisor/sandbox/cgroup.h"

#include "base/dirs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"

#define LEAF_NAME_MAX 64
/* The child of a v1 companion leaf that the sandbox's tasks join (see make_legacy_pids_leaf). */
#define LEGACY_TASKS_DIR "sandbox"

/* ---- pure parsers ------------------------------------------------------------------------ */

/* Decode mountinfo's octal escapes (\040 space, \011 tab, \012 newline, \134 backslash). */
static void unescape_octal(char *s)
{
	char *w = s;

	for (const char *r = s; *r;) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
}

static char *next_field(char **cursor)
{
	char *s = *cursor, *end;

	while (*s == ' ')
		s++;
	if (*s == '\0')
		return NULL;
	end = strchr(s, ' ');
	if (end) {
		*end = '\0';
		*cursor = end + 1;
	} else {
		*cursor = s + strlen(s);
	}
	return s;
}

static int parse_int(const char *s, int *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < INT_MIN || v > INT_MAX)
		return -EINVAL;
	*ret = (int)v;
	return 0;
}

static int parse_u64(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end)
		return -EINVAL;
	*ret = v;
	return 0;
}

int mountinfo_parse_line(char *line, struct mountinfo_entry *ret)
{
	/* 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue */
	char *cur = line, *f[5], *sep;
	struct mountinfo_entry e;

	for (size_t i = 0; i < ELEMENTSOF(f); i++) {
		f[i] = next_field(&cur);
		if (!f[i])
			return -EINVAL;
	}
	if (parse_int(f[0], &e.mount_id) < 0 || parse_int(f[1], &e.parent_id) < 0)
		return -EINVAL;
	if (!next_field(&cur)) /* mount options */
		return -EINVAL;
	/* optional fields, up to the lone "-" */
	for (;;) {
		sep = next_field(&cur);
		if (!sep)
			return -EINVAL;
		if (strcmp(sep, "-") == 0)
			break;
	}
	e.fstype = next_field(&cur);
	e.source = next_field(&cur);
	if (!e.fstype || !e.source)
		return -EINVAL;
	e.super_options = next_field(&cur);
	if (!e.super_options)
		e.super_options = "";
	unescape_octal(f[3]);
	unescape_octal(f[4]);
	unescape_octal((char *)e.source);
	e.root = f[3];
	e.mount_point = f[4];
	*ret = e;
	return 0;
}

static int copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);

	if (n >= size)
		return -ENAMETOOLONG;
	memcpy(dst, src, n + 1);
	return 0;
}

int cgroup_find_cgroup2_in_mountinfo(const char *text, char *ret_mount, size_t mount_size,
                                     char *ret_root, size_t root_size)
{
	_cleanup_free_ char *copy = strdup(text);
	_cleanup_free_ char *best_mount = NULL, *best_root = NULL;
	char *save = NULL;
	int r;

	if (!copy)
		return -ENOMEM;
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct mountinfo_entry e;

		if (mountinfo_parse_line(line, &e) < 0)
			return -EINVAL;
		if (strcmp(e.fstype, "cgroup2") != 0)
			continue;
		if (best_mount && strcmp(best_root, "/") == 0)
			continue;
		free(best_mount);
		free(best_root);
		best_mount = strdup(e.mount_point);
		best_root = strdup(e.root);
		if (!best_mount || !best_root)
			return -ENOMEM;
	}
	if (!best_mount)
		return -ENOENT;
	r = copy_str(ret_mount, mount_size, best_mount);
	if (r < 0)
		return r;
	return copy_str(ret_root, root_size, best_root);
}

/* Whether WORD is one of the SEP-separated items of LIST. */
static bool list_has(const char *list, const char *seps, const char *word)
{
	size_t wlen = strlen(word);

	for (const char *p = list; *p;) {
		size_t n = strcspn(p, seps);

		if (n == wlen && strncmp(p, word, n) == 0)
			return true;
		p += n;
		p += strspn(p, seps);
	}
	return false;
}

bool cgroup_controllers_has(const char *text, const char *controller)
{
	return list_has(text, " \t\n", controller);
}

int cgroup_find_v1_in_mountinfo(const char *text, const char *controller, char *ret_mount,
                                size_t size)
{
	_cleanup_free_ char *copy = strdup(text);
	_cleanup_free_ char *best = NULL;
	bool best_at_root = false;
	char *save = NULL;

	if (!copy)
		return -ENOMEM;
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct mountinfo_entry e;

		if (mountinfo_parse_line(line, &e) < 0)
			return -EINVAL;
		if (strcmp(e.fstype, "cgroup") != 0 || !list_has(e.super_options, ",", controller))
			continue;
		/* The whole hierarchy (root "/") over a bind mount of a part of it. */
		if (best && (best_at_root || strcmp(e.root, "/") != 0))
			continue;
		free(best);
		best = strdup(e.mount_point);
		if (!best)
			return -ENOMEM;
		best_at_root = strcmp(e.root, "/") == 0;
	}
	if (!best)
		return -ENOENT;
	return copy_str(ret_mount, size, best);
}

int proc_stat_parse_start_time(const char *text, uint64_t *ret)
{
	/* pid (comm) state ppid ... : after ')' come fields 3..; start time is field 22. */
	const char *p = strrchr(text, ')');
	uint64_t v = 0;
	int field = 2;

	if (!p)
		return -EINVAL;
	p++;
	while (field < 22) {
		while (*p == ' ')
			p++;
		if (*p == '\0' || *p == '\n')
			return -EINVAL;
		field++;
		if (field == 22)
			break;
		while (*p && *p != ' ')
			p++;
	}
	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (*p != ' ' && *p != '\n' && *p != '\0')
		return -EINVAL;
	*ret = v;
	return 0;
}

int proc_cgroup_parse_unified(const char *text, char *ret, size_t size)
{
	for (const char *line = text; *line;) {
		const char *end = strchrnul(line, '\n');

		if (strncmp(line, "0::", 3) == 0) {
			size_t n = (size_t)(end - line) - 3;

			if (n == 0 || line[3] != '/')
				return -EINVAL;
			if (n >= size)
				return -ENAMETOOLONG;
			memcpy(ret, line + 3, n);
			ret[n] = '\0';
			return 0;
		}
		line = *end ? end + 1 : end;
	}
	return -ENOENT;
}

int cgroup_events_parse(const char *text, const char *key, int *ret)
{
	size_t klen = strlen(key);

	for (const char *line = text; *line;) {
		const char *end = strchrnul(line, '\n');

		if ((size_t)(end - line) > klen + 1 && strncmp(line, key, klen) == 0 &&
		    line[klen] == ' ') {
			char buf[16];
			size_t n = (size_t)(end - line) - klen - 1;

			if (n >= sizeof(buf))
				return -EINVAL;
			memcpy(buf, line + klen + 1, n);
			buf[n] = '\0';
			return parse_int(buf, ret);
		}
		line = *end ? end + 1 : end;
	}
	return -ENOENT;
}

int cgroup_leaf_name_format(const char *name, const struct cgroup_owner *owner, char *buf,
                            size_t size)
{
	char clean[LEAF_NAME_MAX + 1];
	size_t n = 0;
	int len;

	for (; name[n] && n < LEAF_NAME_MAX; n++)
		clean[n] = (isalnum((unsigned char)name[n]) || name[n] == '_' || name[n] == '.')
		                   ? name[n]
		                   : '_';
	if (n == 0)
		clean[n++] = '_';
	clean[n] = '\0';
	/* A name of dots only would be "." or ".." as a prefix: harmless with the suffix, but keep
	 * names obviously ours. */
	if (clean[0] == '.')
		clean[0] = '_';
	len = snprintf(buf, size, "%s-%" PRIu64 "-%d-%" PRIu64, clean, owner->pidns_ino,
	               (int)owner->pid, owner->start_time);
	if (len < 0 || (size_t)len >= size)
		return -ENAMETOOLONG;
	return 0;
}

int cgroup_leaf_name_parse(const char *leaf, struct cgroup_owner *ret)
{
	/* Parse from the right: the name itself contains no '-', but stay tolerant. */
	char buf[NAME_MAX + 1], *dash[3];
	struct cgroup_owner o;
	uint64_t pid;

	if (copy_str(buf, sizeof(buf), leaf) < 0)
		return -EINVAL;
	for (int i = 0; i < 3; i++) {
		dash[i] = strrchr(buf, '-');
		if (!dash[i] || dash[i] == buf)
			return -EINVAL;
		*dash[i] = '\0';
	}
	if (parse_u64(dash[0] + 1, &o.start_time) < 0 || parse_u64(dash[1] + 1, &pid) < 0 ||
	    parse_u64(dash[2] + 1, &o.pidns_ino) < 0)
		return -EINVAL;
	if (pid == 0 || pid > INT_MAX)
		return -EINVAL;
	o.pid = (pid_t)pid;
	*ret = o;
	return 0;
}

bool cgroup_owner_is_stale(const struct cgroup_owner *owner, uint64_t our_pidns_ino, bool alive,
                           uint64_t current_start_time)
{
	if (owner->pidns_ino != our_pidns_ino)
		return false;
	return !alive || current_start_time != owner->start_time;
}

/* ---- small file I/O ---------------------------------------------------------------------- */

static int read_file_at(int dirfd, const char *path, char *buf, size_t size)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	size_t len = 0;

	if (fd < 0)
		return -errno;
	while (len + 1 < size) {
		ssize_t n = read(fd, buf + len, size - 1 - len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return (int)len;
}

static int write_file_at(int dirfd, const char *path, const char *text)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC);
	size_t len = strlen(text);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, len);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

static int read_malloc(const char *path, char **ret)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	_cleanup_free_ char *buf = NULL;
	size_t size = 0;
	FILE *mem;

	if (!f)
		return -errno;
	mem = open_memstream(&buf, &size);
	if (!mem)
		return -ENOMEM;
	for (;;) {
		char chunk[4096];
		size_t n = fread(chunk, 1, sizeof(chunk), f);

		if (n > 0 && fwrite(chunk, 1, n, mem) != n) {
			fclose(mem);
			return -ENOMEM;
		}
		if (n < sizeof(chunk))
			break;
	}
	if (ferror(f)) {
		fclose(mem);
		return -EIO;
	}
	if (fclose(mem) != 0)
		return -ENOMEM;
	*ret = TAKE_PTR(buf);
	return 0;
}

int mountinfo_read_self(char **ret_text)
{
	return read_malloc("/proc/self/mountinfo", ret_text);
}

/* ---- cgroupfs ---------------------------------------------------------------------------- */

int cgroup_find_cgroup2(char *ret_mount, size_t size)
{
	_cleanup_free_ char *text = NULL;
	char root[PATH_MAX];
	int r;

	r = mountinfo_read_self(&text);
	if (r < 0)
		return r;
	return cgroup_find_cgroup2_in_mountinfo(text, ret_mount, size, root, sizeof(root));
}

int cgroup_default_parent(char **ret)
{
	char mount[PATH_MAX], own[PATH_MAX];
	char *path;
	int r;

	r = cgroup_find_cgroup2(mount, sizeof(mount));
	if (r < 0)
		return r;
	if (geteuid() == 0) {
		strcpy(own, "");
	} else {
		char text[8192];

		r = read_file_at(AT_FDCWD, "/proc/self/cgroup", text, sizeof(text));
		if (r < 0)
			return r;
		r = proc_cgroup_parse_unified(text, own, sizeof(own));
		if (r < 0)
			return r;
		if (strcmp(own, "/") == 0)
			strcpy(own, "");
	}
	if (asprintf(&path, "%s%s/cloister", mount, own) < 0)
		return -ENOMEM;
	*ret = path;
	return 0;
}

static int pidns_ino_self(uint64_t *ret)
{
	struct stat st;

	if (stat("/proc/self/ns/pid", &st) < 0)
		return -errno;
	*ret = (uint64_t)st.st_ino;
	return 0;
}

static int start_time_of(pid_t pid, uint64_t *ret)
{
	char path[64], text[1024];
	int r;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	r = read_file_at(AT_FDCWD, path, text, sizeof(text));
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	return proc_stat_parse_start_time(text, ret);
}

int cgroup_owner_self(struct cgroup_owner *ret)
{
	struct cgroup_owner o;
	int r;

	r = pidns_ino_self(&o.pidns_ino);
	if (r < 0)
		return r;
	o.pid = getpid();
	r = start_time_of(o.pid, &o.start_time);
	if (r < 0)
		return r;
	*ret = o;
	return 0;
}

struct cgroup {
	char *path;
	int dirfd;
	uint64_t id;
	/* The v1 pids companion leaf on a hybrid hierarchy (cgroup_limit_pids), or NULL / -1. */
	char *legacy_path;
	int legacy_dirfd;
	int pids_events_fd; /* pids.events of whichever leaf holds the limit, or -1 */
};

const char *cgroup_path(const struct cgroup *cg)
{
	return cg->path;
}

int cgroup_dir_fd(const struct cgroup *cg)
{
	return cg->dirfd;
}

uint64_t cgroup_id(const struct cgroup *cg)
{
	return cg->id;
}

static void cgroup_free(struct cgroup *cg)
{
	if (!cg)
		return;
	if (cg->dirfd >= 0)
		close(cg->dirfd);
	if (cg->legacy_dirfd >= 0)
		close(cg->legacy_dirfd);
	if (cg->pids_events_fd >= 0)
		close(cg->pids_events_fd);
	free(cg->legacy_path);
	free(cg->path);
	free(cg);
}
CL_DEFINE_TRIVIAL_CLEANUP(struct cgroup *, cgroup_free)

int cgroup_create(const char *parent, const char *name, const struct cgroup_owner *owner,
                  struct cgroup **ret, struct cl_error *err)
{
	_cleanup_(cgroup_freep) struct cgroup *cg = NULL;
	char leaf[NAME_MAX + 1];
	struct stat st;
	int r;

	if (parent[0] != '/')
		return cl_error_set(err, -EINVAL, "cgroup parent %s is not an absolute path",
		                    parent);
	r = dirs_make(parent, 0755);
	if (r < 0)
		return cl_error_set(err, r, "cannot create cgroup directory %s: %s", parent,
		                    strerror(-r));
	cg = calloc(1, sizeof(*cg));
	if (!cg)
		return -ENOMEM;
	cg->dirfd = cg->legacy_dirfd = cg->pids_events_fd = -EBADF;
	for (int attempt = 1;; attempt++) {
		char base[LEAF_NAME_MAX + 16];

		if (attempt == 1)
			snprintf(base, sizeof(base), "%.*s", LEAF_NAME_MAX, name);
		else
			snprintf(base, sizeof(base), "%.*s.%d", LEAF_NAME_MAX, name, attempt);
		r = cgroup_leaf_name_format(base, owner, leaf, sizeof(leaf));
		if (r < 0)
			return cl_error_set(err, r, "cgroup name too long");
		free(cg->path);
		if (asprintf(&cg->path, "%s/%s", parent, leaf) < 0) {
			cg->path = NULL;
			return -ENOMEM;
		}
		if (mkdir(cg->path, 0755) == 0)
			break;
		if (errno != EEXIST || attempt >= 100)
			return cl_error_set(err, -errno, "cannot create cgroup %s: %s", cg->path,
			                    strerror(errno));
	}
	cg->dirfd = open(cg->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg->dirfd < 0 || fstat(cg->dirfd, &st) < 0) {
		r = -errno;
		rmdir(cg->path);
		return cl_error_set(err, r, "cannot open cgroup %s: %s", cg->path, strerror(-r));
	}
	cg->id = (uint64_t)st.st_ino;
	/* Make sure the features we rely on are here (hybrid hierarchies, old kernels). */
	if (faccessat(cg->dirfd, "cgroup.kill", F_OK, 0) < 0 ||
	    faccessat(cg->dirfd, "cgroup.freeze", F_OK, 0) < 0) {
		r = -errno;
		rmdir(cg->path);
		return cl_error_set(err, r == -ENOENT ? -EOPNOTSUPP : r,
		                    "cgroup %s has no cgroup.kill/cgroup.freeze (kernel < 5.14?)",
		                    cg->path);
	}
	*ret = TAKE_PTR(cg);
	return 0;
}

/* ---- the pids limit ----------------------------------------------------------------------- */

/* -EOPNOTSUPP when the hierarchy does not have the controller: a hybrid one, where it is bound
 * to v1. The parent holds no process (cgroup_default_parent), which enabling a controller for
 * its children requires. */
int cgroup_enable_pids_above(const char *mount, const char *leaf, struct cl_error *err)
{
	char dir[PATH_MAX];
	size_t mlen = strlen(mount);
	int r;

	if (strncmp(leaf, mount, mlen) != 0 || leaf[mlen] != '/' ||
	    copy_str(dir, sizeof(dir), mount) < 0)
		return cl_error_set(err, -EINVAL, "cgroup %s is not below the cgroup2 mount %s",
		                    leaf, mount);
	for (const char *p = leaf + mlen;;) {
		char text[512];
		const char *next = strchr(p + 1, '/');
		size_t dlen = strlen(dir);

		{
			_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

			if (fd < 0)
				return cl_error_set(err, -errno, "%s: %m", dir);
			r = read_file_at(fd, "cgroup.controllers", text, sizeof(text));
			if (r < 0)
				return cl_error_set(err, r, "%s/cgroup.controllers: %s", dir,
				                    strerror(-r));
			if (!cgroup_controllers_has(text, "pids"))
				return cl_error_set(err, -EOPNOTSUPP,
				                    "the cgroup2 hierarchy has no pids controller "
				                    "at %s (it is not in its cgroup.controllers)",
				                    dir);
			r = read_file_at(fd, "cgroup.subtree_control", text, sizeof(text));
			if (r >= 0 && !cgroup_controllers_has(text, "pids"))
				r = write_file_at(fd, "cgroup.subtree_control", "+pids");
			if (r < 0)
				return cl_error_set(err, r,
				                    "enabling the pids controller in "
				                    "%s/cgroup.subtree_control: %s",
				                    dir, strerror(-r));
		}
		if (!next)
			break; /* dir is the leaf's parent now */
		if (dlen + (size_t)(next - p) >= sizeof(dir))
			return cl_error_set(err, -ENAMETOOLONG, "cgroup path too long");
		memcpy(dir + dlen, p, (size_t)(next - p));
		dir[dlen + (size_t)(next - p)] = '\0';
		p = next;
	}
	return 0;
}

static int64_t now_ms(void);
static int remove_tree(int parentfd, const char *name);

/* Remove a v1 companion leaf and what is below it (its tasks' child, cgroups an agent made
 * there), whose processes are those of the cgroup2 leaf: gone once that one is unpopulated,
 * though rmdir may see the last of them leave a moment later. */
static int remove_legacy_leaf(const char *path, int timeout_ms)
{
	_cleanup_free_ char *parent = strdup(path);
	_cleanup_close_ int parentfd = -EBADF;
	int64_t deadline = now_ms() + timeout_ms;
	char *slash;

	if (!parent)
		return -ENOMEM;
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return -EINVAL;
	*slash = '\0';
	parentfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (parentfd < 0)
		return errno == ENOENT ? 0 : -errno;
	for (;;) {
		int r = remove_tree(parentfd, slash + 1);

		if (r != -EBUSY || now_ms() >= deadline)
			return r;
		(void)poll(NULL, 0, 5);
	}
}

/* The v1 pids hierarchy's mount point, from our mountinfo. */
static int find_v1_pids(char *ret_mount, size_t size)
{
	_cleanup_free_ char *text = NULL;
	int r = mountinfo_read_self(&text);

	if (r < 0)
		return r;
	return cgroup_find_v1_in_mountinfo(text, "pids", ret_mount, size);
}

/* The v1 companion leaf in the pids hierarchy, named as the cgroup2 leaf, holding MAX, and
 * its child where the sandbox's tasks go. The limit is one level above them: an agent that
 * mounts the hierarchy again in a cgroup namespace of its own (--allow-nested-sandbox, root
 * in a user namespace of its own) sees that child as the root and may write its pids.max,
 * but not the parent's, which still holds them all (cgroup v1 has no nsdelegate to refuse
 * the write). */
static int make_legacy_pids_leaf(struct cgroup *cg, const char *max, struct cl_error *err)
{
	char mount[PATH_MAX];
	_cleanup_free_ char *parent = NULL, *path = NULL;
	_cleanup_close_ int fd = -EBADF;
	int r;

	if (geteuid() != 0)
		return -EOPNOTSUPP;
	r = find_v1_pids(mount, sizeof(mount));
	if (r < 0)
		return r == -ENOENT ? -EOPNOTSUPP : r;
	if (asprintf(&parent, "%s/cloister", mount) < 0 ||
	    asprintf(&path, "%s/%s", parent, strrchr(cg->path, '/') + 1) < 0)
		return -ENOMEM;
	r = dirs_make(parent, 0755);
	if (r < 0)
		return cl_error_set(err, r, "cannot create cgroup directory %s: %s", parent,
		                    strerror(-r));
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return cl_error_set(err, -errno, "cannot create cgroup %s: %m", path);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		rmdir(path);
		return cl_error_set(err, r, "cannot open cgroup %s: %s", path, strerror(-r));
	}
	r = write_file_at(fd, "pids.max", max);
	if (r >= 0 && mkdirat(fd, LEGACY_TASKS_DIR, 0755) < 0 && errno != EEXIST)
		r = -errno;
	if (r < 0) {
		(void)remove_legacy_leaf(path, 0);
		return cl_error_set(err, r, "cannot set up cgroup %s: %s", path, strerror(-r));
	}
	cg->legacy_path = TAKE_PTR(path);
	cg->legacy_dirfd = TAKE_FD(fd);
	return 0;
}

int cgroup_limit_pids(struct cgroup *cg, uint64_t max, bool *ret_legacy, struct cl_error *err)
{
	struct cl_error v2_err = {""};
	char text[32], mount[PATH_MAX];
	int r;

	if (max == 0)
		return cl_error_set(err, -EINVAL,
		                    "a pids limit of 0 would refuse the agent itself");
	snprintf(text, sizeof(text), "%" PRIu64, max);
	r = cgroup_find_cgroup2(mount, sizeof(mount));
	if (r < 0)
		return cl_error_set(err, r, "the cgroup2 mount: %s", strerror(-r));
	r = cgroup_enable_pids_above(mount, cg->path, &v2_err);
	if (r >= 0) {
		r = write_file_at(cg->dirfd, "pids.max", text);
		if (r < 0)
			return cl_error_set(err, r, "cannot write %s/pids.max: %s", cg->path,
			                    strerror(-r));
		cg->pids_events_fd = openat(cg->dirfd, "pids.events", O_RDONLY | O_CLOEXEC);
		*ret_legacy = false;
		return 0;
	}
	if (r != -EOPNOTSUPP)
		return cl_error_set(err, r, "%s", v2_err.msg);
	r = make_legacy_pids_leaf(cg, text, err);
	if (r == -EOPNOTSUPP)
		return cl_error_set(err, r, "%s%s", v2_err.msg,
		                    geteuid() == 0 ? ", nor is there a cgroup v1 pids hierarchy"
		                                   : "");
	if (r < 0)
		return r;
	/* v1 counts a refused fork where the forking task is. */
	cg->pids_events_fd =
	        openat(cg->legacy_dirfd, LEGACY_TASKS_DIR "/pids.events", O_RDONLY | O_CLOEXEC);
	*ret_legacy = true;
	return 0;
}

int cgroup_attach_companions(struct cgroup *cg, pid_t pid)
{
	char text[32];

	if (cg->legacy_dirfd < 0)
		return 0;
	snprintf(text, sizeof(text), "%d", (int)pid);
	return write_file_at(cg->legacy_dirfd, LEGACY_TASKS_DIR "/cgroup.procs", text);
}

int cgroup_pids_events_fd(struct cgroup *cg)
{
	return cg->pids_events_fd >= 0 ? cg->pids_events_fd : -ENOENT;
}

int cgroup_pids_refused(struct cgroup *cg, uint64_t *ret)
{
	char text[256];
	ssize_t n;
	int v, r;

	if (cg->pids_events_fd < 0)
		return -ENOENT;
	n = pread(cg->pids_events_fd, text, sizeof(text) - 1, 0);
	if (n < 0)
		return -errno;
	text[n] = '\0';
	r = cgroup_events_parse(text, "max", &v);
	if (r < 0)
		return r;
	*ret = v < 0 ? 0 : (uint64_t)v;
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until cgroup.events of DIRFD says KEY == WANT. cgroup.events raises POLLPRI on every
 * change, so this sleeps instead of spinning. */
static int wait_event(int dirfd, const char *key, int want, int timeout_ms)
{
	_cleanup_close_ int fd = openat(dirfd, "cgroup.events", O_RDONLY | O_CLOEXEC);
	int64_t deadline = now_ms() + timeout_ms;

	if (fd < 0)
		return -errno;
	for (;;) {
		char text[256];
		ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
		struct pollfd p = {.fd = fd, .events = POLLPRI};
		int64_t left;
		int value;

		if (n < 0)
			return -errno;
		text[n] = '\0';
		if (cgroup_events_parse(text, key, &value) < 0)
			return -EIO;
		if (value == want)
			return 0;
		left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)(left > 100 ? 100 : left)) < 0 && errno != EINTR)
			return -errno;
	}
}

int cgroup_freeze(struct cgroup *cg, bool frozen, int timeout_ms)
{
	int r = write_file_at(cg->dirfd, "cgroup.freeze", frozen ? "1" : "0");

	if (r < 0 || !frozen)
		return r;
	return wait_event(cg->dirfd, "frozen", 1, timeout_ms);
}

int cgroup_kill(struct cgroup *cg)
{
	return write_file_at(cg->dirfd, "cgroup.kill", "1");
}

/* The name of a directory in DIRFD into *NAME: 1, or 0 when there is none. */
static int first_subdir(int dirfd, char name[static NAME_MAX + 1])
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	int r = 0;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		r = -errno;
		close(fd);
		return r;
	}
	for (struct dirent *de; (de = readdir(d));) {
		if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(name, NAME_MAX + 1, "%s", de->d_name);
		r = 1;
		break;
	}
	closedir(d);
	return r;
}

/* rmdir NAME in PARENTFD and every cgroup below it, deepest first. Without recursion and with
 * one directory open at a time: an agent with a cgroup namespace of its own nests cgroups as
 * deep as it likes (cgroup v1 has no cgroup.max.depth), and a bound on the depth left such a
 * tree, and the leaf above it, behind for good (no stale cleanup could remove it either). The
 * names on the way down are kept to rmdir each from its parent, reached again by "..". */
static int remove_tree(int parentfd, const char *name)
{
	_cleanup_close_ int cur = -EBADF;
	char **down = NULL;
	size_t n = 0, cap = 0;
	int r = 0;

	cur = openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (cur < 0)
		return errno == ENOENT ? 0 : -errno;
	for (;;) {
		char child[NAME_MAX + 1];
		int next, q = first_subdir(cur, child);

		if (q < 0) {
			r = q;
			break;
		}
		if (q == 1) {
			next = openat(cur, child, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
			if (next < 0) {
				r = -errno;
				if (r == -ENOENT) {
					r = 0;
					continue; /* gone meanwhile */
				}
				break;
			}
			if (n == cap) {
				size_t ncap = cap ? 2 * cap : 16;
				char **grown = realloc(down, ncap * sizeof(*down));

				if (!grown) {
					close(next);
					r = -ENOMEM;
					break;
				}
				down = grown;
				cap = ncap;
			}
			down[n] = strdup(child);
			if (!down[n]) {
				close(next);
				r = -ENOMEM;
				break;
			}
			n++;
			close(cur);
			cur = next;
			continue;
		}
		/* CUR has no cgroup below it: rmdir it from its parent. */
		if (n == 0)
			break;
		next = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (next < 0) {
			r = -errno;
			break;
		}
		close(cur);
		cur = next;
		n--;
		q = unlinkat(cur, down[n], AT_REMOVEDIR) < 0 && errno != ENOENT ? -errno : 0;
		free(down[n]);
		if (q < 0) {
			r = q;
			break;
		}
	}
	for (size_t i = 0; i < n; i++)
		free(down[i]);
	free(down);
	if (r == 0 && unlinkat(parentfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		r = -errno;
	return r;
}

static int remove_leaf(int dirfd, const char *path, int timeout_ms)
{
	_cleanup_free_ char *parent = strdup(path);
	_cleanup_close_ int parentfd = -EBADF;
	char *slash;
	int r;

	if (!parent)
		return -ENOMEM;
	r = write_file_at(dirfd, "cgroup.kill", "1");
	if (r == -ENOENT || r == -ENODEV)
		return 0; /* removed already (by a stale cleanup, say) */
	if (r < 0)
		return r;
	/* Killed processes leave the cgroup when they are gone for good; until then rmdir says
	 * EBUSY. Zombies do not count (they left at exit). */
	r = wait_event(dirfd, "populated", 0, timeout_ms);
	if (r < 0)
		return r;
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return -EINVAL;
	*slash = '\0';
	parentfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (parentfd < 0)
		return -errno;
	return remove_tree(parentfd, slash + 1);
}

int cgroup_destroy(struct cgroup *cg, int timeout_ms)
{
	int r, q = 0;

	if (!cg)
		return 0;
	r = remove_leaf(cg->dirfd, cg->path, timeout_ms);
	if (cg->legacy_path && r >= 0)
		q = remove_legacy_leaf(cg->legacy_path, timeout_ms);
	cgroup_free(cg);
	return r < 0 ? r : q;
}

int cgroup_remove_path(const char *path, int timeout_ms)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	return remove_leaf(fd, path, timeout_ms);
}

static int cleanup_stale(const char *parent, int timeout_ms, bool legacy);

int cgroup_cleanup_stale(const char *parent, int timeout_ms)
{
	return cleanup_stale(parent, timeout_ms, false);
}

int cgroup_cleanup_stale_companions(int timeout_ms)
{
	char mount[PATH_MAX], parent[PATH_MAX + 16];

	if (geteuid() != 0 || find_v1_pids(mount, sizeof(mount)) < 0)
		return 0;
	snprintf(parent, sizeof(parent), "%s/cloister", mount);
	return cleanup_stale(parent, timeout_ms, true);
}

static int cleanup_stale(const char *parent, int timeout_ms, bool legacy)
{
	struct cgroup_owner self;
	int r, removed = 0;
	DIR *d;

	r = cgroup_owner_self(&self);
	if (r < 0)
		return r;
	d = opendir(parent);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	for (struct dirent *de; (de = readdir(d));) {
		struct cgroup_owner owner;
		uint64_t start = 0;
		bool alive;
		char *path;

		if (de->d_type != DT_DIR || cgroup_leaf_name_parse(de->d_name, &owner) < 0)
			continue;
		r = start_time_of(owner.pid, &start);
		if (r < 0 && r != -ESRCH)
			continue; /* cannot tell: leave it */
		alive = r == 0;
		if (!cgroup_owner_is_stale(&owner, self.pidns_ino, alive, start))
			continue;
		if (asprintf(&path, "%s/%s", parent, de->d_name) < 0) {
			closedir(d);
			return -ENOMEM;
		}
		if ((legacy ? remove_legacy_leaf(path, 0) : cgroup_remove_path(path, timeout_ms)) ==
		    0)
			removed++;
		free(path);
	}
	closedir(d);
	return removed;
}
