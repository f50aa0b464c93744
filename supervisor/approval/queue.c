/* The approval queue state machine (see queue.h). Linear scans throughout: the queue holds at
 * most max_pending_total items (1024 by default), and a scan of that many is a few
 * microseconds, cheaper than keeping indexes consistent. */
#include "supervisor/approval/queue.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

#define REASON_BUF 128

struct qevent {
	struct qevent *next;
	struct qitem *owner;
	enum queue_event_type type;
	enum queue_state state;
	uint64_t time_ms;
};

struct qres {
	struct qres *next;
	struct qitem *owner;
};

/* The public item and what only the queue sees. One reference for membership in the pending
 * list or the recent ring (an item is in at most one of them), one per queued event or
 * resolution, one per popped event or resolution not yet released. */
struct qitem {
	struct queue_item pub;
	unsigned refs;
	struct qitem *prev, *next; /* pending list, creation order */
	struct queue_waiter *waiters;
	size_t waiters_cap;
	char *reason_owned;
	char reason_buf[REASON_BUF];
	struct qevent ev_added, ev_removed;
	struct qres res;
};

struct queue {
	struct queue_config cfg;
	struct qitem *head, *tail;
	size_t count;
	struct qevent *ev_head, *ev_tail;
	struct qres *res_head, *res_tail;
	struct qitem **recent; /* ring of cfg.recent_max; recent_pos is the next slot */
	size_t recent_n, recent_pos;
	unsigned approvers;
	bool ever_attached;      /* false: orphaned since forever */
	uint64_t orphaned_since; /* when approvers last dropped to 0 */
	uint64_t id_counter;
};

#define ITEM(p) ((struct qitem *)((char *)(p)-offsetof(struct qitem, pub)))

/* ---- ids: SipHash-2-4 (Aumasson & Bernstein) of a counter ---------------------------------- */

static inline uint64_t rotl64(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

static uint64_t load_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

#define SIPROUND                     \
	do {                         \
		v0 += v1;            \
		v1 = rotl64(v1, 13); \
		v1 ^= v0;            \
		v0 = rotl64(v0, 32); \
		v2 += v3;            \
		v3 = rotl64(v3, 16); \
		v3 ^= v2;            \
		v0 += v3;            \
		v3 = rotl64(v3, 21); \
		v3 ^= v0;            \
		v2 += v1;            \
		v1 = rotl64(v1, 17); \
		v1 ^= v2;            \
		v2 = rotl64(v2, 32); \
	} while (0)

/* SipHash-2-4 of one 8-byte little-endian message. */
static uint64_t siphash_u64(const uint8_t key[16], uint64_t m)
{
	uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
	uint64_t v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
	uint64_t v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
	uint64_t b = (uint64_t)8 << 56;

	v3 ^= m;
	SIPROUND;
	SIPROUND;
	v0 ^= m;
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

static void make_id(struct queue *q, char id[QUEUE_ID_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";

	/* 48 bits of a PRF: a collision among the live ids is possible, if unlikely; skip it. */
	do {
		uint64_t h = siphash_u64(q->cfg.id_key, q->id_counter++);
		for (int i = QUEUE_ID_LEN - 1; i >= 0; i--, h >>= 4)
			id[i] = hex[h & 0xf];
		id[QUEUE_ID_LEN] = '\0';
	} while (queue_lookup(q, id));
}

/* ---- items ----------------------------------------------------------------------------- */

static void item_unref(struct qitem *it)
{
	if (!it || --it->refs > 0)
		return;
	free(it->pub.sandbox);
	free(it->pub.project);
	free(it->pub.summary);
	free(it->pub.exe);
	free(it->pub.cwd);
	free(it->pub.interpreter);
	free(it->pub.identity);
	free(it->pub.note);
	for (size_t i = 0; i < it->pub.argc; i++)
		free(it->pub.argv[i]);
	free(it->pub.argv);
	free(it->waiters);
	free(it->reason_owned);
	free(it);
}

static int dup_opt(const char *s, char **ret)
{
	if (!s) {
		*ret = NULL;
		return 0;
	}
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

static size_t request_bytes(const struct queue_request *req)
{
	size_t n = 0;
	const char *strs[] = {req->sandbox,     req->project, req->summary,  req->exe,
	                      req->interpreter, req->cwd,     req->identity, req->note};

	for (size_t i = 0; i < ELEMENTSOF(strs); i++)
		n += strs[i] ? strlen(strs[i]) + 1 : 0;
	for (size_t i = 0; i < req->argc; i++)
		n += (req->argv[i] ? strlen(req->argv[i]) : 0) + 1 + sizeof(char *);
	return n;
}

static int item_new(const struct queue_request *req, struct qitem **ret)
{
	struct qitem *it = calloc(1, sizeof(*it));

	if (!it)
		return -ENOMEM;
	it->refs = 1;
	it->pub.argv = calloc(req->argc + 1, sizeof(char *));
	it->waiters = malloc(sizeof(*it->waiters));
	if (!it->pub.argv || !it->waiters)
		goto nomem;
	it->waiters_cap = 1;
	for (size_t i = 0; i < req->argc; i++, it->pub.argc++)
		if (dup_opt(req->argv[i] ? req->argv[i] : "", &it->pub.argv[i]) < 0)
			goto nomem;
	if (dup_opt(req->sandbox, &it->pub.sandbox) < 0 ||
	    dup_opt(req->project, &it->pub.project) < 0 ||
	    dup_opt(req->summary, &it->pub.summary) < 0 || dup_opt(req->exe, &it->pub.exe) < 0 ||
	    dup_opt(req->cwd, &it->pub.cwd) < 0 ||
	    dup_opt(req->interpreter, &it->pub.interpreter) < 0 ||
	    dup_opt(req->identity, &it->pub.identity) < 0 || dup_opt(req->note, &it->pub.note) < 0)
		goto nomem;
	it->pub.kind = req->kind;
	it->pub.pid = req->pid;
	it->pub.uid = req->uid;
	it->pub.allowlist_matched = req->allowlist_matched;
	it->pub.state = QUEUE_STATE_PENDING;
	it->waiters[0] = (struct queue_waiter){.owner = req->owner, .cookie = req->cookie};
	it->pub.n_waiters = 1;
	it->ev_added = (struct qevent){.owner = it, .type = QUEUE_EVENT_ADDED};
	it->ev_removed = (struct qevent){.owner = it, .type = QUEUE_EVENT_REMOVED};
	it->res = (struct qres){.owner = it};
	*ret = it;
	return 0;
nomem:
	item_unref(it);
	return -ENOMEM;
}

static bool str_eq(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* Identical: everything shown to a person is the same (see queue.h). */
static bool item_matches(const struct qitem *it, const struct queue_request *req)
{
	const struct queue_item *p = &it->pub;

	if (p->kind != req->kind || p->uid != req->uid || p->argc != req->argc ||
	    !str_eq(p->sandbox, req->sandbox) || !str_eq(p->summary, req->summary) ||
	    !str_eq(p->project, req->project) || !str_eq(p->exe, req->exe) ||
	    !str_eq(p->cwd, req->cwd) || !str_eq(p->interpreter, req->interpreter) ||
	    !str_eq(p->identity, req->identity) || !str_eq(p->note, req->note))
		return false;
	for (size_t i = 0; i < req->argc; i++)
		if (!str_eq(p->argv[i], req->argv[i] ? req->argv[i] : ""))
			return false;
	return true;
}

/* ---- transitions ----------------------------------------------------------------------- */

static void push_event(struct queue *q, struct qevent *ev, enum queue_state state, uint64_t now)
{
	ev->state = state;
	ev->time_ms = now;
	ev->next = NULL;
	ev->owner->refs++;
	if (q->ev_tail)
		q->ev_tail->next = ev;
	else
		q->ev_head = ev;
	q->ev_tail = ev;
}

static void unlink_pending(struct queue *q, struct qitem *it)
{
	if (it->prev)
		it->prev->next = it->next;
	else
		q->head = it->next;
	if (it->next)
		it->next->prev = it->prev;
	else
		q->tail = it->prev;
	it->prev = it->next = NULL;
	q->count--;
}

static void set_reason(struct qitem *it, const char *reason)
{
	snprintf(it->reason_buf, sizeof(it->reason_buf), "%s", reason);
	it->pub.reason = it->reason_buf;
}

/* Give IT its final state. It is on the pending list when LINKED; either way the reference
 * of that membership moves to the recent ring. Cannot fail. The reason must be set already. */
static void resolve(struct queue *q, struct qitem *it, bool linked, enum queue_state state,
                    const char *by, enum queue_scope scope, uint64_t now)
{
	if (linked)
		unlink_pending(q, it);
	it->pub.state = state;
	it->pub.decided_ms = now;
	it->pub.scope = scope;
	snprintf(it->pub.decided_by, sizeof(it->pub.decided_by), "%s", by ? by : "");

	push_event(q, &it->ev_removed, state, now);
	it->res.next = NULL;
	it->refs++;
	if (q->res_tail)
		q->res_tail->next = &it->res;
	else
		q->res_head = &it->res;
	q->res_tail = &it->res;

	if (q->recent_n == q->cfg.recent_max)
		item_unref(q->recent[q->recent_pos]);
	else
		q->recent_n++;
	q->recent[q->recent_pos] = it;
	q->recent_pos = (q->recent_pos + 1) % q->cfg.recent_max;
}

static void resolve_by_fallback(struct queue *q, struct qitem *it, bool linked, uint64_t now)
{
	enum queue_fallback fb = q->cfg.fallback[it->pub.kind];
	bool allow = fb == QUEUE_FALLBACK_FULL ||
	             (fb == QUEUE_FALLBACK_ALLOWLIST && it->pub.allowlist_matched);
	const char *why;

	switch (fb) {
	case QUEUE_FALLBACK_FULL:
		why = "nobody can answer: ask_fallback=full allows";
		break;
	case QUEUE_FALLBACK_ALLOWLIST:
		why = allow ? "nobody can answer: ask_fallback=allowlist and an allow rule matched"
		            : "nobody can answer: ask_fallback=allowlist and no allow rule matched";
		break;
	default:
		why = "nobody can answer: ask_fallback=deny";
		break;
	}
	set_reason(it, why);
	resolve(q, it, linked, allow ? QUEUE_STATE_APPROVED : QUEUE_STATE_DENIED, "fallback",
	        QUEUE_SCOPE_ONCE, now);
}

/* "5m0s", "1m0s", "30s", "1h0m0s" as Go prints a time.Duration (Cloister's wording),
 * milliseconds when not whole seconds. */
static void format_duration(uint64_t ms, char *buf, size_t size)
{
	uint64_t s = ms / 1000;

	if (ms % 1000)
		snprintf(buf, size, "%" PRIu64 "ms", ms);
	else if (s >= 3600)
		snprintf(buf, size, "%" PRIu64 "h%" PRIu64 "m%" PRIu64 "s", s / 3600, s % 3600 / 60,
		         s % 60);
	else if (s >= 60)
		snprintf(buf, size, "%" PRIu64 "m%" PRIu64 "s", s / 60, s % 60);
	else
		snprintf(buf, size, "%" PRIu64 "s", s);
}

static void resolve_by_timeout(struct queue *q, struct qitem *it, uint64_t now)
{
	char d[48];

	format_duration(it->pub.deadline_ms - it->pub.created_ms, d, sizeof(d));
	snprintf(it->reason_buf, sizeof(it->reason_buf), "No approval within %s", d);
	it->pub.reason = it->reason_buf;
	resolve(q, it, true, QUEUE_STATE_TIMED_OUT, "timeout", QUEUE_SCOPE_ONCE, now);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* When the orphan grace ends (UINT64_MAX while an approver is attached; 0 before any
 * approver ever attached). */
static uint64_t orphan_deadline(const struct queue *q)
{
	if (q->approvers > 0)
		return UINT64_MAX;
	if (!q->ever_attached)
		return 0;
	return sat_add(q->orphaned_since, q->cfg.orphan_grace_ms);
}

int queue_tick(struct queue *q, uint64_t now_ms)
{
	uint64_t fb = orphan_deadline(q);
	int n = 0;

	/* Resolve in the order things fell due, so events come out in time order. */
	for (;;) {
		struct qitem *first = NULL;

		for (struct qitem *it = q->head; it; it = it->next)
			if (!first || it->pub.deadline_ms < first->pub.deadline_ms)
				first = it;
		if (!first)
			break;
		if (first->pub.deadline_ms <= now_ms && first->pub.deadline_ms <= fb)
			resolve_by_timeout(q, first, now_ms);
		else if (fb <= now_ms)
			resolve_by_fallback(q, first, true, now_ms);
		else
			break;
		n++;
	}
	return n;
}

uint64_t queue_next_deadline(const struct queue *q)
{
	uint64_t next = UINT64_MAX;

	for (const struct qitem *it = q->head; it; it = it->next)
		if (it->pub.deadline_ms < next)
			next = it->pub.deadline_ms;
	if (q->head) {
		uint64_t fb = orphan_deadline(q);
		if (fb < next)
			next = fb;
	}
	return next;
}

/* ---- public ---------------------------------------------------------------------------- */

void queue_config_init(struct queue_config *config)
{
	*config = (struct queue_config){
	        .timeout_ms =
	                {
	                        [QUEUE_KIND_EXEC] = 5 * 60 * 1000,
	                        [QUEUE_KIND_DOMAIN] = 60 * 1000,
	                        [QUEUE_KIND_HOSTEXEC] = 5 * 60 * 1000,
	                        [QUEUE_KIND_SHIM] = 5 * 60 * 1000,
	                        [QUEUE_KIND_FILE] = 5 * 60 * 1000,
	                },
	        .orphan_grace_ms = 0,
	        .max_pending_per_sandbox = 64,
	        .max_pending_total = 1024,
	        .max_waiters_per_item = 256,
	        .max_item_bytes = 1024 * 1024,
	        .recent_max = 64,
	};
}

int queue_new(const struct queue_config *config, struct queue **ret_queue)
{
	struct queue *q;

	if (!config->max_pending_per_sandbox || !config->max_pending_total ||
	    !config->max_waiters_per_item || !config->max_item_bytes || !config->recent_max)
		return -EINVAL;
	for (int k = 0; k < QUEUE_KIND_COUNT; k++)
		if ((unsigned)config->fallback[k] > QUEUE_FALLBACK_FULL)
			return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->cfg = *config;
	q->recent = calloc(config->recent_max, sizeof(*q->recent));
	if (!q->recent) {
		free(q);
		return -ENOMEM;
	}
	*ret_queue = q;
	return 0;
}

void queue_free(struct queue *q)
{
	if (!q)
		return;
	while (q->head) {
		struct qitem *it = q->head;
		unlink_pending(q, it);
		item_unref(it);
	}
	for (struct qevent *ev = q->ev_head, *next; ev; ev = next) {
		next = ev->next;
		item_unref(ev->owner);
	}
	for (struct qres *r = q->res_head, *next; r; r = next) {
		next = r->next;
		item_unref(r->owner);
	}
	for (size_t i = 0; i < q->recent_n; i++)
		item_unref(q->recent[i]);
	free(q->recent);
	free(q);
}

static struct qitem *find_waiter(const struct queue *q, uint32_t owner, uint64_t cookie,
                                 size_t *ret_index)
{
	for (struct qitem *it = q->head; it; it = it->next)
		for (size_t i = 0; i < it->pub.n_waiters; i++)
			if (it->waiters[i].cookie == cookie && it->waiters[i].owner == owner) {
				if (ret_index)
					*ret_index = i;
				return it;
			}
	return NULL;
}

int queue_add(struct queue *q, const struct queue_request *req, uint64_t now_ms, char *ret_id)
{
	struct qitem *it;
	int r;

	if (!req->sandbox || !req->summary || (unsigned)req->kind >= QUEUE_KIND_COUNT ||
	    (req->argc > 0 && !req->argv))
		return -EINVAL;
	if (request_bytes(req) > q->cfg.max_item_bytes)
		return QUEUE_E_TOO_BIG;

	queue_tick(q, now_ms);
	if (find_waiter(q, req->owner, req->cookie, NULL))
		return QUEUE_E_COOKIE;

	/* Past the orphan grace tick() has emptied the list, so nothing merges then. */
	for (it = q->head; it; it = it->next) {
		if (!item_matches(it, req))
			continue;
		if (it->pub.n_waiters >= q->cfg.max_waiters_per_item)
			return QUEUE_E_WAITERS;
		if (it->pub.n_waiters == it->waiters_cap) {
			size_t cap = it->waiters_cap * 2;
			struct queue_waiter *w;
			if (cap > q->cfg.max_waiters_per_item)
				cap = q->cfg.max_waiters_per_item;
			w = realloc(it->waiters, cap * sizeof(*w));
			if (!w)
				return -ENOMEM;
			it->waiters = w;
			it->waiters_cap = cap;
		}
		it->waiters[it->pub.n_waiters++] =
		        (struct queue_waiter){.owner = req->owner, .cookie = req->cookie};
		if (ret_id)
			memcpy(ret_id, it->pub.id, QUEUE_ID_LEN + 1);
		return QUEUE_ADD_MERGED;
	}

	bool orphaned = orphan_deadline(q) <= now_ms;
	if (!orphaned) {
		if (q->count >= q->cfg.max_pending_total)
			return QUEUE_E_FULL;
		if (queue_count_sandbox(q, req->sandbox) >= q->cfg.max_pending_per_sandbox)
			return QUEUE_E_SANDBOX_FULL;
	}

	r = item_new(req, &it);
	if (r < 0)
		return r;
	make_id(q, it->pub.id);
	it->pub.created_ms = now_ms;
	it->pub.deadline_ms = q->cfg.timeout_ms[req->kind]
	                              ? sat_add(now_ms, q->cfg.timeout_ms[req->kind])
	                              : UINT64_MAX;
	push_event(q, &it->ev_added, QUEUE_STATE_PENDING, now_ms);
	if (ret_id)
		memcpy(ret_id, it->pub.id, QUEUE_ID_LEN + 1);

	if (orphaned) {
		resolve_by_fallback(q, it, false, now_ms);
		return QUEUE_ADD_DECIDED;
	}
	it->prev = q->tail;
	if (q->tail)
		q->tail->next = it;
	else
		q->head = it;
	q->tail = it;
	q->count++;
	return QUEUE_ADD_NEW;
}

static const struct queue_item *find_recent(const struct queue *q, const char *id)
{
	for (size_t i = 0; i < q->recent_n; i++)
		if (strcmp(q->recent[i]->pub.id, id) == 0)
			return &q->recent[i]->pub;
	return NULL;
}

bool queue_item_waits(const struct queue_item *item, uint32_t owner)
{
	const struct qitem *it = ITEM(item);

	for (size_t i = 0; i < item->n_waiters; i++)
		if (it->waiters[i].owner == owner)
			return true;
	return false;
}

const struct queue_item *queue_find(const struct queue *q, const char *id)
{
	if (!id)
		return NULL;
	for (const struct qitem *it = q->head; it; it = it->next)
		if (strcmp(it->pub.id, id) == 0)
			return &it->pub;
	return NULL;
}

const struct queue_item *queue_lookup(const struct queue *q, const char *id)
{
	const struct queue_item *p = queue_find(q, id);

	return p || !id ? p : find_recent(q, id);
}

int queue_decide(struct queue *q, const char *id, bool allow, enum queue_scope scope,
                 const char *by, const char *reason, uint64_t now_ms)
{
	const struct queue_item *p;
	struct qitem *it;

	if ((unsigned)scope > QUEUE_SCOPE_GLOBAL)
		return -EINVAL;
	queue_tick(q, now_ms);
	p = queue_find(q, id);
	if (!p)
		return id && find_recent(q, id) ? -EALREADY : -ENOENT;
	it = ITEM(p);

	if (!reason || !*reason)
		reason = allow ? "Command approved by user" : "Command denied by user";
	if (strlen(reason) < sizeof(it->reason_buf)) {
		set_reason(it, reason);
	} else {
		it->reason_owned = strndup(reason, QUEUE_REASON_MAX - 1);
		if (!it->reason_owned)
			return -ENOMEM;
		it->pub.reason = it->reason_owned;
	}
	resolve(q, it, true, allow ? QUEUE_STATE_APPROVED : QUEUE_STATE_DENIED, by ? by : "", scope,
	        now_ms);
	return 0;
}

/* Take waiter I off IT; the last one gone cancels IT. Returns 1 then, else 0. */
static int drop_waiter(struct queue *q, struct qitem *it, size_t i, uint64_t now_ms)
{
	memmove(&it->waiters[i], &it->waiters[i + 1],
	        (it->pub.n_waiters - i - 1) * sizeof(*it->waiters));
	if (--it->pub.n_waiters > 0)
		return 0;
	set_reason(it, "the asker went away");
	resolve(q, it, true, QUEUE_STATE_CANCELLED, "cancel", QUEUE_SCOPE_ONCE, now_ms);
	return 1;
}

int queue_cancel_waiter(struct queue *q, uint32_t owner, uint64_t cookie, uint64_t now_ms)
{
	struct qitem *it;
	size_t i;

	queue_tick(q, now_ms);
	it = find_waiter(q, owner, cookie, &i);
	if (!it)
		return -ENOENT;
	return drop_waiter(q, it, i, now_ms);
}

int queue_cancel_owner(struct queue *q, uint32_t owner, uint64_t now_ms)
{
	int n = 0;

	queue_tick(q, now_ms);
	for (struct qitem *it = q->head, *next; it; it = next) {
		next = it->next;
		for (size_t i = it->pub.n_waiters; i-- > 0;)
			if (it->waiters[i].owner == owner && drop_waiter(q, it, i, now_ms) == 1) {
				n++;
				break; /* cancelled: no waiter left */
			}
	}
	return n;
}

int queue_cancel_sandbox(struct queue *q, const char *sandbox, const char *reason, uint64_t now_ms)
{
	int n = 0;

	queue_tick(q, now_ms);
	for (struct qitem *it = q->head, *next; it; it = next) {
		next = it->next;
		if (!str_eq(it->pub.sandbox, sandbox))
			continue;
		/* Bounded by the internal buffer: this path must not fail. */
		set_reason(it, reason && *reason ? reason : "the sandbox stopped");
		resolve(q, it, true, QUEUE_STATE_CANCELLED, "cancel", QUEUE_SCOPE_ONCE, now_ms);
		n++;
	}
	return n;
}

int queue_set_approvers(struct queue *q, unsigned count, uint64_t now_ms)
{
	if (count > 0)
		q->ever_attached = true;
	else if (q->approvers > 0)
		q->orphaned_since = now_ms;
	q->approvers = count;
	return queue_tick(q, now_ms);
}

unsigned queue_approvers(const struct queue *q)
{
	return q->approvers;
}

const struct queue_item *queue_first(const struct queue *q)
{
	return q->head ? &q->head->pub : NULL;
}

const struct queue_item *queue_next(const struct queue *q, const struct queue_item *item)
{
	struct qitem *n = item ? ITEM(item)->next : NULL;

	return n ? &n->pub : NULL;
}

const struct queue_item *queue_last(const struct queue *q)
{
	return q->tail ? &q->tail->pub : NULL;
}

const struct queue_item *queue_prev(const struct queue *q, const struct queue_item *item)
{
	struct qitem *p = item ? ITEM(item)->prev : NULL;

	return p ? &p->pub : NULL;
}

size_t queue_count(const struct queue *q)
{
	return q->count;
}

size_t queue_count_sandbox(const struct queue *q, const char *sandbox)
{
	size_t n = 0;

	for (const struct qitem *it = q->head; it; it = it->next)
		n += str_eq(it->pub.sandbox, sandbox);
	return n;
}

const struct queue_item *queue_recent(const struct queue *q, size_t i)
{
	if (i >= q->recent_n)
		return NULL;
	/* recent_pos - 1 is the newest. */
	size_t slot = (q->recent_pos + q->cfg.recent_max - 1 - i) % q->cfg.recent_max;
	return &q->recent[slot]->pub;
}

int queue_pop_resolution(struct queue *q, struct queue_resolution *ret)
{
	struct qres *r = q->res_head;

	if (!r)
		return 0;
	q->res_head = r->next;
	if (!q->res_head)
		q->res_tail = NULL;
	*ret = (struct queue_resolution){
	        .item = &r->owner->pub,
	        .waiters = r->owner->waiters,
	        .n_waiters = r->owner->pub.n_waiters,
	};
	return 1;
}

void queue_resolution_release(struct queue_resolution *res)
{
	if (res && res->item)
		item_unref(ITEM(res->item));
	if (res)
		*res = (struct queue_resolution){0};
}

int queue_pop_event(struct queue *q, struct queue_event *ret)
{
	struct qevent *ev = q->ev_head;

	if (!ev)
		return 0;
	q->ev_head = ev->next;
	if (!q->ev_head)
		q->ev_tail = NULL;
	*ret = (struct queue_event){
	        .type = ev->type,
	        .state = ev->state,
	        .time_ms = ev->time_ms,
	        .item = &ev->owner->pub,
	};
	return 1;
}

void queue_event_release(struct queue_event *ev)
{
	if (ev && ev->item)
		item_unref(ITEM(ev->item));
	if (ev)
		*ev = (struct queue_event){0};
}

const char *queue_kind_to_string(enum queue_kind kind)
{
	static const char *const names[] = {"exec", "domain", "hostexec", "shim", "file"};

	return (unsigned)kind < ELEMENTSOF(names) ? names[kind] : "unknown";
}

const char *queue_state_to_string(enum queue_state state)
{
	static const char *const names[] = {"pending", "approved", "denied", "timed_out",
	                                    "cancelled"};

	return (unsigned)state < ELEMENTSOF(names) ? names[state] : "unknown";
}

static const char *const scope_names[] = {"once", "session", "project", "global"};

const char *queue_scope_to_string(enum queue_scope scope)
{
	return (unsigned)scope < ELEMENTSOF(scope_names) ? scope_names[scope] : "unknown";
}

int queue_scope_from_string(const char *s, enum queue_scope *ret_scope)
{
	for (size_t i = 0; s && i < ELEMENTSOF(scope_names); i++)
		if (strcmp(s, scope_names[i]) == 0) {
			*ret_scope = (enum queue_scope)i;
			return 0;
		}
	return -EINVAL;
}

const char *queue_fallback_to_string(enum queue_fallback fallback)
{
	static const char *const names[] = {"deny", "allowlist", "full"};

	return (unsigned)fallback < ELEMENTSOF(names) ? names[fallback] : "unknown";
}

const char *queue_strerror(int code)
{
	switch (code) {
	case QUEUE_E_SANDBOX_FULL:
		return "too many pending approvals for this sandbox";
	case QUEUE_E_FULL:
		return "too many pending approvals";
	case QUEUE_E_WAITERS:
		return "too many identical requests waiting for one approval";
	case QUEUE_E_TOO_BIG:
		return "request too large to queue for approval";
	case QUEUE_E_COOKIE:
		return "request already waiting for approval";
	case -ENOMEM:
		return "out of memory";
	case -EINVAL:
		return "invalid approval request";
	default:
		return "approval queue error";
	}
}
