/* The audit log's lines (see audit.h): a pure formatter. */
#include "supervisor/approval/audit.h"

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

#include "base/cleanup.h"
#include "base/utf8.h"
#include "supervisor/approval/sha256.h"

static const char *const verdict_names[] = {
        [AUDIT_ALLOW] = "allow",
        [AUDIT_DENY] = "deny",
        [AUDIT_ASK] = "ask",
        [AUDIT_APPROVED] = "approved",
        [AUDIT_DENIED] = "denied",
        [AUDIT_TIMED_OUT] = "timed_out",
        [AUDIT_CANCELLED] = "cancelled",
        [AUDIT_SUPPRESSED] = "suppressed",
        [AUDIT_LOST] = "lost",
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
	        /* The item as it is now: an ask the fallback decided at once was never pending
	         * for anybody, whether this is its ADDED or its REMOVED record. */
	        .automatic =
	                it->state != QUEUE_STATE_PENDING && !strcmp(it->decided_by, "fallback"),
	};
	ret->unanswered_ask =
	        !ret->automatic &&
	        (added || (it->state != QUEUE_STATE_APPROVED && it->state != QUEUE_STATE_DENIED));
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

/* One character of a JSON string at P as written: made valid UTF-8 (each byte of an invalid
 * sequence becomes U+FFFD), then escaped as cJSON does (", \\, \\b \\f \\n \\r \\t, other
 * controls as \\u00xx; everything else as is). Returns the bytes written to OUT (at most 6),
 * *ret_in the bytes of P it stands for. */
static size_t json_char(const unsigned char *p, char out[static 6], size_t *ret_in)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = cl_utf8_decode((const char *)p, NULL);

	*ret_in = n ? n : 1;
	if (n == 0) {
		memcpy(out, "\xef\xbf\xbd", 3);
		return 3;
	}
	if (n > 1) {
		memcpy(out, p, n);
		return n;
	}
	switch (*p) {
	case '"':
	case '\\':
		out[0] = '\\', out[1] = (char)*p;
		return 2;
	case '\b':
		memcpy(out, "\\b", 2);
		return 2;
	case '\f':
		memcpy(out, "\\f", 2);
		return 2;
	case '\n':
		memcpy(out, "\\n", 2);
		return 2;
	case '\r':
		memcpy(out, "\\r", 2);
		return 2;
	case '\t':
		memcpy(out, "\\t", 2);
		return 2;
	}
	if (*p < 32) {
		memcpy(out, "\\u00", 4);
		out[4] = hex[*p >> 4];
		out[5] = hex[*p & 0xf];
		return 6;
	}
	out[0] = (char)*p;
	return 1;
}

/* Does S, quotes included, fit in MAX bytes as written? Stops reading once it does not. */
static bool json_fits(const char *s, size_t len, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t total = 2;
	char out[6];

	if (len * 6 + 2 <= max)
		return true;
	while (*p && total <= max) {
		size_t in;

		total += json_char(p, out, &in);
		p += in;
	}
	return total <= max;
}

/* Printable ASCII that JSON takes as it is: most of every line, copied in runs. */
static bool json_plain(unsigned char c)
{
	return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/* S as a JSON string (json_char), NULL as null, in at most MAX bytes: a longer one is cut at
 * a character and ends in "…". Returns whether it was cut. */
static bool buf_string_max(struct line_buf *b, const char *s, size_t max)
{
	static const char ellipsis[] = "\xe2\x80\xa6"; /* U+2026 */
	const unsigned char *p = (const unsigned char *)s;
	size_t start, len, limit;
	bool cut;

	if (!s) {
		buf_put(b, "null", 4);
		return false;
	}
	len = strlen(s);
	cut = !json_fits(s, len, max);
	/* Cut: what is written before "…" and the closing quote, the opening quote included. */
	limit = cut ? max - (sizeof(ellipsis) - 1) - 1 : SIZE_MAX;
	buf_reserve(b, (len * 6 + 2 < max ? len * 6 + 2 : max) + sizeof(ellipsis));
	if (b->failed)
		return false;
	start = b->len;
	b->s[b->len++] = '"';
	while (*p) {
		size_t used = b->len - start, n;

		if (json_plain(*p)) {
			const unsigned char *q = p + 1;

			while (json_plain(*q))
				q++;
			n = (size_t)(q - p);
			if (n > limit - used)
				n = limit - used;
			memcpy(b->s + b->len, p, n);
			b->len += n;
			if (p + n != q)
				break;
			p = q;
		} else {
			char out[6];
			size_t in;

			n = json_char(p, out, &in);
			if (n > limit - used)
				break;
			memcpy(b->s + b->len, out, n);
			b->len += n;
			p += in;
		}
	}
	if (cut) {
		memcpy(b->s + b->len, ellipsis, sizeof(ellipsis) - 1);
		b->len += sizeof(ellipsis) - 1;
	}
	b->s[b->len++] = '"';
	b->s[b->len] = '\0';
	return cut;
}

static void buf_string(struct line_buf *b, const char *s)
{
	(void)buf_string_max(b, s, AUDIT_FIELD_MAX);
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

/* ARGV as a JSON array, and when it does not fit the bounds (or is INCOMPLETE), the
 * "argv_summary" of the whole list after it (see audit.h). */
static void buf_argv(struct line_buf *b, const char *const *argv, size_t argc, bool incomplete)
{
	size_t start = b->len, shown = 0;
	bool last_cut = false, summarise = incomplete;

	buf_put(b, "[", 1);
	for (; shown < argc; shown++) {
		size_t used = b->len - start, room;

		if (shown == AUDIT_ARGV_MAX_ARGS || used + 8 > AUDIT_ARGV_MAX) {
			summarise = true;
			break;
		}
		room = AUDIT_ARGV_MAX - used - (shown > 0);
		if (shown > 0)
			buf_put(b, ",", 1);
		if (buf_string_max(b, argv[shown] ? argv[shown] : "", room)) {
			last_cut = summarise = true;
			shown++;
			break;
		}
	}
	buf_put(b, "]", 1);
	if (!summarise || b->failed)
		return;

	struct sha256 ctx;
	uint8_t digest[SHA256_DIGEST_SIZE];
	char hex[2 * SHA256_DIGEST_SIZE + 1];
	uint64_t bytes = 0;

	sha256_init(&ctx);
	for (size_t i = 0; i < argc; i++) {
		const char *a = argv[i] ? argv[i] : "";
		size_t n = strlen(a) + 1; /* with its NUL, as in the process's memory */

		sha256_update(&ctx, a, n);
		bytes += n;
	}
	sha256_final(&ctx, digest);
	sha256_hex(digest, hex);
	buf_key(b, "argv_summary");
	buf_put(b, "{\"argc\":", 8);
	buf_int(b, (int64_t)argc);
	buf_puts(b, ",\"bytes\":");
	buf_int(b, (int64_t)bytes);
	buf_puts(b, ",\"sha256\":\"");
	buf_puts(b, hex);
	buf_puts(b, last_cut ? "\",\"last_cut\":true" : "\",\"last_cut\":false");
	buf_puts(b, incomplete ? ",\"complete\":false}" : ",\"complete\":true}");
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
	if (rec->argv)
		buf_argv(&b, rec->argv, rec->argc, rec->argv_incomplete);
	else
		buf_put(&b, "null", 4);
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
	if (rec->suppressed > 0) {
		buf_key(&b, "suppressed");
		buf_int(&b, rec->suppressed);
	}
	if (rec->lost > 0) {
		buf_key(&b, "lost");
		buf_int(&b, rec->lost);
	}
	buf_put(&b, "}\n", 2);
	if (b.failed) {
		free(b.s);
		return -ENOMEM;
	}
	*ret_line = b.s;
	return 0;
}
