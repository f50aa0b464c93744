/* The audit log (see audit.h): a pure formatter and a thin writer. */
#include "supervisor/audit.h"

#include "supervisor/dirs.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "protocol/cleanup.h"
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

/* The line is built directly, not through a cJSON tree: one exec is one line, and the tree
 * (a node and a copy per value, numbers printed and scanned back) cost more than the rest of
 * an allowed exec's bookkeeping. The output is byte for byte what cJSON_PrintUnformatted
 * gives for the same values (tests/unit/supervisor/test_audit.c holds it to that). */
struct line_buf {
	char *s;
	size_t len, cap;
	bool failed;
};

static void buf_reserve(struct line_buf *b, size_t more)
{
	size_t cap;
	char *s;

	if (b->failed || b->len + more + 1 <= b->cap)
		return;
	cap = b->cap ? b->cap : 512;
	while (cap < b->len + more + 1) {
		if (cap > SIZE_MAX / 2) {
			b->failed = true;
			return;
		}
		cap *= 2;
	}
	s = realloc(b->s, cap);
	if (!s) {
		b->failed = true;
		return;
	}
	b->s = s;
	b->cap = cap;
}

static void buf_put(struct line_buf *b, const char *s, size_t n)
{
	buf_reserve(b, n);
	if (b->failed)
		return;
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void buf_puts(struct line_buf *b, const char *s)
{
	buf_put(b, s, strlen(s));
}

/* S as a JSON string: made valid UTF-8 first (each byte of an invalid sequence becomes
 * U+FFFD), then escaped as cJSON does (", \, \b \f \n \r \t, other controls as \u00xx;
 * everything else as is). NULL is null. */
static void buf_string(struct line_buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!s) {
		buf_put(b, "null", 4);
		return;
	}
	/* Worst case 6 bytes out per byte in (\u00xx); U+FFFD is 3 per byte. */
	buf_reserve(b, strlen(s) * 6 + 2);
	if (b->failed)
		return;
	b->s[b->len++] = '"';
	while (*p) {
		size_t n = cl_utf8_decode((const char *)p, NULL);
		char *o = b->s + b->len;

		if (n == 0) {
			memcpy(o, "\xef\xbf\xbd", 3);
			b->len += 3;
			p++;
			continue;
		}
		if (n > 1) {
			memcpy(o, p, n);
			b->len += n;
			p += n;
			continue;
		}
		switch (*p) {
		case '"':
		case '\\':
			o[0] = '\\';
			o[1] = (char)*p;
			b->len += 2;
			break;
		case '\b':
			memcpy(o, "\\b", 2);
			b->len += 2;
			break;
		case '\f':
			memcpy(o, "\\f", 2);
			b->len += 2;
			break;
		case '\n':
			memcpy(o, "\\n", 2);
			b->len += 2;
			break;
		case '\r':
			memcpy(o, "\\r", 2);
			b->len += 2;
			break;
		case '\t':
			memcpy(o, "\\t", 2);
			b->len += 2;
			break;
		default:
			if (*p < 32) {
				static const char hex[] = "0123456789abcdef";

				memcpy(o, "\\u00", 4);
				o[4] = hex[*p >> 4];
				o[5] = hex[*p & 0xf];
				b->len += 6;
			} else {
				o[0] = (char)*p;
				b->len += 1;
			}
		}
		p++;
	}
	b->s[b->len++] = '"';
	b->s[b->len] = '\0';
}

/* A number as cJSON prints a double holding it; < 0 is null. */
static void buf_int(struct line_buf *b, int64_t v)
{
	char num[32];

	if (v < 0) {
		buf_put(b, "null", 4);
		return;
	}
	if (v < 1000000000000000LL) { /* %1.15g of such an integer is its digits */
		snprintf(num, sizeof(num), "%" PRId64, v);
	} else {
		double d = (double)v, back;

		/* cJSON's rule: 15 digits unless they do not read back within DBL_EPSILON. */
		snprintf(num, sizeof(num), "%1.15g", d);
		back = strtod(num, NULL);
		if ((back > d ? back - d : d - back) > (back > d ? back : d) * DBL_EPSILON)
			snprintf(num, sizeof(num), "%1.17g", d);
	}
	buf_puts(b, num);
}

static void buf_key(struct line_buf *b, const char *key)
{
	buf_puts(b, b->len > 1 ? ",\"" : "\"");
	buf_puts(b, key);
	buf_put(b, "\":", 2);
}

int audit_format_line(const struct audit_record *rec, char **ret_line)
{
	struct line_buf b = {0};
	const char *verdict = audit_verdict_to_string(rec->verdict);
	char when[32];

	if (!verdict)
		return -EINVAL;
	audit_format_time(rec->time_ms, when);

	buf_put(&b, "{", 1);
	buf_key(&b, "time");
	buf_string(&b, when);
	buf_key(&b, "id");
	buf_string(&b, rec->id);
	buf_key(&b, "sandbox");
	buf_string(&b, rec->sandbox);
	buf_key(&b, "project");
	buf_string(&b, rec->project);
	buf_key(&b, "kind");
	buf_string(&b, rec->kind);
	buf_key(&b, "pid");
	buf_int(&b, rec->pid);
	buf_key(&b, "uid");
	buf_int(&b, rec->uid);
	buf_key(&b, "exe");
	buf_string(&b, rec->exe);
	buf_key(&b, "argv");
	if (rec->argv) {
		buf_put(&b, "[", 1);
		for (size_t i = 0; i < rec->argc; i++) {
			if (i > 0)
				buf_put(&b, ",", 1);
			buf_string(&b, rec->argv[i] ? rec->argv[i] : "");
		}
		buf_put(&b, "]", 1);
	} else {
		buf_put(&b, "null", 4);
	}
	buf_key(&b, "cwd");
	buf_string(&b, rec->cwd);
	buf_key(&b, "interpreter");
	buf_string(&b, rec->interpreter);
	buf_key(&b, "summary");
	buf_string(&b, rec->summary);
	buf_key(&b, "verdict");
	buf_string(&b, verdict);
	buf_key(&b, "rule");
	buf_string(&b, rec->rule);
	buf_key(&b, "decided_by");
	buf_string(&b, rec->decided_by);
	buf_key(&b, "scope");
	buf_string(&b, rec->scope);
	buf_key(&b, "latency_ms");
	buf_int(&b, rec->latency_ms);
	buf_key(&b, "reason");
	buf_string(&b, rec->reason);
	if (rec->connection) {
		buf_key(&b, "bytes_up");
		buf_int(&b, rec->bytes_up);
		buf_key(&b, "bytes_down");
		buf_int(&b, rec->bytes_down);
		buf_key(&b, "duration_ms");
		buf_int(&b, rec->duration_ms);
	}
	buf_put(&b, "}\n", 2);
	if (b.failed) {
		free(b.s);
		return -ENOMEM;
	}
	*ret_line = b.s;
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

int audit_log_open(const char *path, int *ret_fd)
{
	_cleanup_close_ int fd = -EBADF;
	struct stat st;
	int r;

	if (!path || path[0] != '/')
		return -EINVAL;
	r = dirs_make_parent(path, 0700);
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
