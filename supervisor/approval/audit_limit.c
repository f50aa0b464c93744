/* Token buckets for the audit log's automatic lines; see audit_limit.h. */
#include "supervisor/approval/audit_limit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Tokens in thousandths of a line: RATE lines a second is RATE thousandths a millisecond, so
 * the refill is exact in integers. */
#define MILLI 1000

struct bucket {
	char *sandbox; /* NULL: no sandbox, or the shared bucket */
	bool shared;
	uint64_t tokens; /* thousandths of a line */
	uint64_t refilled_ms;
	uint64_t count; /* lines not written since the last report */
	uint64_t first_ms, last_ms;
	uint64_t due_ms; /* when the bucket holds a line again (count > 0) */
};

struct audit_limit {
	struct audit_limit_config cfg;
	struct bucket *b;
	size_t n;
	struct bucket shared; /* when the table is full of busy buckets */
	char *popped;         /* the last report's sandbox */
};

int audit_limit_new(const struct audit_limit_config *cfg, struct audit_limit **ret)
{
	struct audit_limit *l;

	if (cfg->rate && !cfg->burst)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->cfg = *cfg;
	l->shared.shared = true;
	l->shared.tokens = (uint64_t)cfg->burst * MILLI;
	*ret = l;
	return 0;
}

void audit_limit_free(struct audit_limit *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->b[i].sandbox);
	free(l->b);
	free(l->popped);
	free(l);
}

static void refill(const struct audit_limit *l, struct bucket *b, uint64_t now_ms)
{
	uint64_t full = (uint64_t)l->cfg.burst * MILLI;

	if (now_ms <= b->refilled_ms)
		return;
	/* Capped before it could overflow: a bucket idle for long is simply full. */
	if (now_ms - b->refilled_ms >= full / l->cfg.rate + 1)
		b->tokens = full;
	else
		b->tokens += (now_ms - b->refilled_ms) * l->cfg.rate;
	if (b->tokens > full)
		b->tokens = full;
	b->refilled_ms = now_ms;
}

static bool same(const char *a, const char *b)
{
	return a && b ? !strcmp(a, b) : a == b;
}

static struct bucket *bucket_of(struct audit_limit *l, const char *sandbox, uint64_t now_ms)
{
	struct bucket *b = NULL;

	for (size_t i = 0; i < l->n; i++)
		if (same(l->b[i].sandbox, sandbox))
			return &l->b[i];
	if (l->n < AUDIT_LIMIT_MAX_SANDBOXES) {
		struct bucket *grown = realloc(l->b, (l->n + 1) * sizeof(*grown));

		if (!grown)
			return &l->shared;
		l->b = grown;
		b = &l->b[l->n];
		*b = (struct bucket){0};
	} else {
		/* Reuse one that remembers nothing: full, with nothing counted. */
		for (size_t i = 0; i < l->n && !b; i++) {
			refill(l, &l->b[i], now_ms);
			if (!l->b[i].count && l->b[i].tokens == (uint64_t)l->cfg.burst * MILLI)
				b = &l->b[i];
		}
		if (!b)
			return &l->shared;
		free(b->sandbox);
		*b = (struct bucket){0};
	}
	if (sandbox && !(b->sandbox = strdup(sandbox)))
		return &l->shared;
	if (b == &l->b[l->n])
		l->n++;
	b->tokens = (uint64_t)l->cfg.burst * MILLI;
	b->refilled_ms = now_ms;
	return b;
}

bool audit_limit_take(struct audit_limit *l, const char *sandbox, uint64_t now_ms)
{
	struct bucket *b;

	if (!l->cfg.rate)
		return true;
	b = bucket_of(l, sandbox, now_ms);
	refill(l, b, now_ms);
	if (b->tokens >= MILLI) {
		b->tokens -= MILLI;
		return true;
	}
	if (b->count++ == 0) {
		b->first_ms = now_ms;
		b->due_ms = now_ms + (MILLI - b->tokens + l->cfg.rate - 1) / l->cfg.rate;
	}
	b->last_ms = now_ms;
	return false;
}

bool audit_limit_would_take(struct audit_limit *l, const char *sandbox, uint64_t now_ms)
{
	struct bucket *b;

	if (!l->cfg.rate)
		return true;
	b = bucket_of(l, sandbox, now_ms);
	refill(l, b, now_ms);
	return b->tokens >= MILLI;
}

static bool due(const struct bucket *b, uint64_t now_ms, bool all)
{
	return b->count && (all || b->due_ms <= now_ms);
}

int audit_limit_pop_due(struct audit_limit *l, uint64_t now_ms, bool all,
                        struct audit_limit_report *ret)
{
	struct bucket *b = NULL;

	for (size_t i = 0; i < l->n && !b; i++)
		if (due(&l->b[i], now_ms, all))
			b = &l->b[i];
	if (!b && due(&l->shared, now_ms, all))
		b = &l->shared;
	if (!b)
		return 0;
	free(l->popped);
	l->popped = b->sandbox && !b->shared ? strdup(b->sandbox) : NULL;
	*ret = (struct audit_limit_report){
	        .sandbox = l->popped,
	        .count = b->count,
	        .first_ms = b->first_ms,
	        .last_ms = b->last_ms,
	};
	b->count = 0;
	return 1;
}

int audit_limit_parse(const char *text, bool off_ok, int64_t *ret)
{
	unsigned long v;
	char *end;

	if (off_ok && !strcmp(text, "off")) {
		*ret = -1;
		return 0;
	}
	if (text[0] < '0' || text[0] > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(text, &end, 10);
	if (errno || *end || v < 1 || v > 1000000)
		return -EINVAL;
	*ret = (int64_t)v;
	return 0;
}

uint64_t audit_limit_next_due(const struct audit_limit *l)
{
	uint64_t next = l->shared.count ? l->shared.due_ms : UINT64_MAX;

	for (size_t i = 0; i < l->n; i++)
		if (l->b[i].count && l->b[i].due_ms < next)
			next = l->b[i].due_ms;
	return next;
}
