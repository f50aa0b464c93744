/* The audit log's rate limit, per sandbox (pure: no clock, NOW is passed in; no I/O).
 *
 * An agent that loops over auto-allowed execs or connections would otherwise write lines as
 * fast as it can run them. Automatic lines (audit_record.automatic: the policy or the fallback
 * decided, a connection ended) of each sandbox draw from a token bucket of BURST lines,
 * refilled at RATE lines a second. A line over it is not written but counted; the count comes
 * out as one "suppressed" record when the limit lifts — the moment the bucket holds a line
 * again — or at the end (audit_limit_pop_due with ALL). Under a sustained flood that is one
 * written line and one count per 1/RATE seconds. Nothing a person decided or was asked, and
 * no security event, goes through here: the caller writes those whatever the bucket holds.
 *
 * At most AUDIT_LIMIT_MAX_SANDBOXES buckets: beyond that an idle one (full, nothing counted)
 * is reused, and when there is none the rest share one bucket (reported with no sandbox). */
#ifndef CLOISTER_AUDIT_LIMIT_H
#define CLOISTER_AUDIT_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

#define AUDIT_LIMIT_RATE          100  /* default lines a second per sandbox */
#define AUDIT_LIMIT_BURST         1000 /* default lines at once */
#define AUDIT_LIMIT_MAX_SANDBOXES 1024

struct audit_limit_config {
	uint32_t rate;  /* lines a second; 0: no limit (every line is written) */
	uint32_t burst; /* bucket size in lines (at least 1) */
};

struct audit_limit_report {
	const char *sandbox; /* NULL: lines of no sandbox, or of the shared bucket */
	uint64_t count;      /* lines not written */
	uint64_t first_ms;   /* NOW of the first and the last of them */
	uint64_t last_ms;
};

struct audit_limit;

/* -ENOMEM, or -EINVAL for a burst of 0 with a rate. */
int audit_limit_new(const struct audit_limit_config *cfg, struct audit_limit **ret);
void audit_limit_free(struct audit_limit *l);

/* May an automatic line of SANDBOX (NULL: none) be written at NOW_MS? true: yes, and one line
 * is taken from its bucket; false: it is counted instead. Pop the reports due at NOW_MS first,
 * so that a count comes before the lines written after it. A bucket that cannot be had (out of
 * memory) counts as the shared one. */
bool audit_limit_take(struct audit_limit *l, const char *sandbox, uint64_t now_ms);
/* Would audit_limit_take() at NOW_MS say yes? Takes nothing, counts nothing. */
bool audit_limit_would_take(struct audit_limit *l, const char *sandbox, uint64_t now_ms);

/* One report due at NOW_MS (with ALL: every pending one, e.g. at exit): 1 with *ret (its
 * sandbox valid until the next call on L), 0 when none is due. The bucket's count starts
 * again from 0. */
int audit_limit_pop_due(struct audit_limit *l, uint64_t now_ms, bool all,
                        struct audit_limit_report *ret);

/* When the next report is due (the earliest lift), UINT64_MAX when nothing is counted. */
uint64_t audit_limit_next_due(const struct audit_limit *l);

/* TEXT as --audit-rate and --audit-burst take it: a number of lines from 1 to 1000000, or
 * "off" (no limit, *ret = -1) when OFF_OK. -EINVAL for anything else. */
int audit_limit_parse(const char *text, bool off_ok, int64_t *ret);

#endif
