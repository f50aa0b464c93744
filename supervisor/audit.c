/* The audit log (see audit.h): a pure formatter and a thin writer. */
#include "supervisor/audit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "protocol/cleanup.h"
#include "protocol/json_strict.h"
#include "protocol/utf8.h"

static const char *const verdict_names[] = {
        [AUDIT_ALLOW] = "allow",         [AUDIT_DENY] = "deny",     [AUDIT_ASK] = "ask",
        [AUDIT_APPROVED] = "approved",   [AUDIT_DENIED] = "denied", [AUDIT_TIMED_OUT] = "timed_out",
        [AUDIT_CANCELLED] = "cancelled",
};

const char *audit_verdict_to_string(enum audit_verdict verdict)
{
	return (unsigned)verdict < ELEMENTSOF(verdict_names) ? verdict_names[verdict] : NULL;
}

void audit_record_from_queue_event(const struct queue_event *ev, uint64_t wall_ms,
                                   struct audit_record *ret)
{
	const struct queue_item *it = ev->item;
	bool added = ev->type == QUEUE_EVENT_ADDED;
	static const enum audit_verdict by_state[] = {
	        [QUEUE_STATE_PENDING] = AUDIT_ASK,
	        [QUEUE_STATE_APPROVED] = AUDIT_APPROVED,
	        [QUEUE_STATE_DENIED] = AUDIT_DENIED,
	        [QUEUE_STATE_TIMED_OUT] = AUDIT_TIMED_OUT,
	        [QUEUE_STATE_CANCELLED] = AUDIT_CANCELLED,
	};

	*ret = (struct audit_record){
	        .time_ms = wall_ms,
	        .id = it->id,
	        .sandbox = it->sandbox,
	        .project = it->project,
	        .kind = queue_kind_to_string(it->kind),
	        .pid = it->pid,
	        .uid = it->uid,
	        .exe = it->exe,
	        .argv = (const char *const *)it->argv,
	        .argc = it->argc,
	        .cwd = it->cwd,
	        .interpreter = it->interpreter,
	        .summary = it->summary,
	        .verdict = added ? AUDIT_ASK : by_state[ev->state],
	        .decided_by = added ? NULL : it->decided_by,
	        .scope = added ? NULL : queue_scope_to_string(it->scope),
	        .latency_ms = added ? -1 : (int64_t)(it->decided_ms - it->created_ms),
	        .reason = added ? NULL : it->reason,
	};
}

void audit_format_time(uint64_t time_ms, char buf[static 32])
{
	time_t secs = (time_t)(time_ms / 1000);
	struct tm tm;
	size_t n;

	/* Years past 9999 do not fit the format: write the epoch rather than a wrong shape. */
	if (time_ms / 1000 > 253402300799ULL || !gmtime_r(&secs, &tm) ||
	    (n = strftime(buf, 32, "%Y-%m-%dT%H:%M:%S", &tm)) != 19) {
		snprintf(buf, 32, "%s", "1970-01-01T00:00:00.000Z");
		return;
	}
	snprintf(buf + n, 32 - n, ".%03uZ", (unsigned)(time_ms % 1000));
}

/* S as valid UTF-8, each byte of an invalid sequence replaced by U+FFFD; malloc'd. */
static char *utf8_sanitize(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s);
	char *out = malloc(len * 3 + 1), *o = out;

	if (!out)
		return NULL;
	while (*p) {
		size_t n = cl_utf8_decode((const char *)p, NULL);
		if (n == 0) {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			p++;
		} else {
			memcpy(o, p, n);
			o += n;
			p += n;
		}
	}
	*o = '\0';
	return out;
}

static cJSON *json_string_or_null(const char *s)
{
	_cleanup_free_ char *clean = NULL;

	if (!s)
		return cJSON_CreateNull();
	clean = utf8_sanitize(s);
	return clean ? cJSON_CreateString(clean) : NULL;
}

static int add_string(cJSON *obj, const char *key, const char *s)
{
	cJSON *v = json_string_or_null(s);

	if (!v || !cJSON_AddItemToObject(obj, key, v)) {
		cJSON_Delete(v);
		return -ENOMEM;
	}
	return 0;
}

static int add_int(cJSON *obj, const char *key, int64_t v)
{
	cJSON *j = v < 0 ? cJSON_CreateNull() : cJSON_CreateNumber((double)v);

	if (!j || !cJSON_AddItemToObject(obj, key, j)) {
		cJSON_Delete(j);
		return -ENOMEM;
	}
	return 0;
}

int audit_format_line(const struct audit_record *rec, char **ret_line)
{
	_cleanup_cjson_ cJSON *root = NULL;
	_cleanup_free_ char *json = NULL;
	const char *verdict = audit_verdict_to_string(rec->verdict);
	char when[32];
	cJSON *argv;
	char *line;
	size_t len;

	if (!verdict)
		return -EINVAL;
	root = cJSON_CreateObject();
	if (!root)
		return -ENOMEM;
	audit_format_time(rec->time_ms, when);

	if (add_string(root, "time", when) < 0 || add_string(root, "id", rec->id) < 0 ||
	    add_string(root, "sandbox", rec->sandbox) < 0 ||
	    add_string(root, "project", rec->project) < 0 ||
	    add_string(root, "kind", rec->kind) < 0 || add_int(root, "pid", rec->pid) < 0 ||
	    add_int(root, "uid", rec->uid) < 0 || add_string(root, "exe", rec->exe) < 0)
		return -ENOMEM;
	if (rec->argv) {
		argv = cJSON_AddArrayToObject(root, "argv");
		if (!argv)
			return -ENOMEM;
		for (size_t i = 0; i < rec->argc; i++) {
			cJSON *a = json_string_or_null(rec->argv[i] ? rec->argv[i] : "");
			if (!a || !cJSON_AddItemToArray(argv, a)) {
				cJSON_Delete(a);
				return -ENOMEM;
			}
		}
	} else if (!cJSON_AddNullToObject(root, "argv")) {
		return -ENOMEM;
	}
	if (add_string(root, "cwd", rec->cwd) < 0 ||
	    add_string(root, "interpreter", rec->interpreter) < 0 ||
	    add_string(root, "summary", rec->summary) < 0 ||
	    add_string(root, "verdict", verdict) < 0 || add_string(root, "rule", rec->rule) < 0 ||
	    add_string(root, "decided_by", rec->decided_by) < 0 ||
	    add_string(root, "scope", rec->scope) < 0 ||
	    add_int(root, "latency_ms", rec->latency_ms) < 0 ||
	    add_string(root, "reason", rec->reason) < 0)
		return -ENOMEM;

	json = cJSON_PrintUnformatted(root);
	if (!json)
		return -ENOMEM;
	len = strlen(json);
	line = malloc(len + 2);
	if (!line)
		return -ENOMEM;
	memcpy(line, json, len);
	line[len] = '\n';
	line[len + 1] = '\0';
	*ret_line = line;
	return 0;
}

int audit_log_path(const char *xdg_state_home, const char *home, char **ret_path)
{
	char *path = NULL;
	int r;

	/* The XDG spec says relative values are invalid and must be ignored. */
	if (xdg_state_home && xdg_state_home[0] == '/')
		r = asprintf(&path, "%s/cloister/audit.log", xdg_state_home);
	else if (home && home[0] == '/')
		r = asprintf(&path, "%s/.local/share/cloister/audit.log", home);
	else
		return -ENOENT;
	if (r < 0)
		return -ENOMEM;
	*ret_path = path;
	return 0;
}

/* mkdir -p of PATH's parent, new directories 0700; existing ones are left as they are. */
static int make_parents(const char *path)
{
	_cleanup_free_ char *dir = strdup(path);
	char *slash;

	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	for (char *p = dir + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;
		*p = '\0';
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = saved;
		if (saved == '\0')
			break;
	}
	return 0;
}

int audit_log_open(const char *path, int *ret_fd)
{
	_cleanup_close_ int fd = -EBADF;
	struct stat st;
	int r;

	if (!path || path[0] != '/')
		return -EINVAL;
	r = make_parents(path);
	if (r < 0)
		return r;
	/* O_NONBLOCK: a FIFO planted at the path must not block the open; refused below. */
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
	if (fd < 0)
		return errno == ENXIO ? -EINVAL : -errno; /* ENXIO: a FIFO without a reader */
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) < 0)
		return -errno;
	if (fcntl(fd, F_SETFL, O_APPEND) < 0)
		return -errno;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int audit_log_write(int fd, const char *line)
{
	size_t len = strlen(line);
	ssize_t n;

	do
		n = write(fd, line, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}
