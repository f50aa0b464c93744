/* The approvals service; see approvals.h. */
#include "supervisor/approval/approvals.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/cleanup.h"
#include "base/loop.h"
#include "supervisor/approval/audit.h"
#include "supervisor/approval/audit_log.h"
#include "supervisor/approval/metrics.h"

struct approval_source {
	struct approvals *ap;
	const struct approval_source_ops *ops;
	void *userdata;
	uint32_t owner; /* its waiters' owner in the queue; never reused */
	bool unregistered;
	struct approval_source *next;
};

struct observer {
	const struct approvals_observer_ops *ops;
	void *userdata;
};

struct approvals {
	struct loop *loop;
	struct queue *queue;
	struct audit_log *audit;
	struct metrics metrics;
	struct approval_source *sources;
	uint32_t next_owner;
	struct observer observers[APPROVALS_MAX_OBSERVERS];
	unsigned approvers[APPROVER_KINDS];
	struct loop_timer *tick;
	struct loop_timer *soon; /* a drain from the loop, for deferred sources */
	bool draining;
	bool drain_again;
	unsigned unregistered; /* sources to unlink once no drain walks the list */
	bool freeing;
};

/* ---- draining ------------------------------------------------------------------------------ */

static void schedule(struct approvals *ap);

/* Hand RES to every source with waiters on it, each with its own cookies only. */
static void deliver(struct approvals *ap, const struct queue_resolution *res)
{
	uint64_t cookies[APPROVALS_MAX_WAITERS];

	for (struct approval_source *s = ap->sources; s && res->n_waiters; s = s->next) {
		size_t n = 0;

		if (s->unregistered)
			continue;
		for (size_t i = 0; i < res->n_waiters; i++)
			if (res->waiters[i].owner == s->owner)
				cookies[n++] = res->waiters[i].cookie;
		if (n)
			s->ops->resolved(s->userdata, res->item, cookies, n);
	}
}

/* Sources unregistered while a drain walked the list go now. */
static void unlink_unregistered(struct approvals *ap)
{
	for (struct approval_source **p = &ap->sources; *p && ap->unregistered;) {
		struct approval_source *s = *p;

		if (!s->unregistered) {
			p = &s->next;
			continue;
		}
		*p = s->next;
		ap->unregistered--;
		free(s);
	}
}

/* The queue's events: their audit lines and the observers. */
static void drain_events(struct approvals *ap)
{
	struct queue_event ev;

	while (queue_pop_event(ap->queue, &ev) == 1) {
		struct audit_record rec;

		audit_record_from_queue_event(&ev, audit_log_now_ms(), &rec);
		audit_log_record(ap->audit, &rec);
		if (ev.type == QUEUE_EVENT_REMOVED) {
			metrics_count_decision(&ap->metrics, queue_kind_to_string(ev.item->kind),
			                       queue_state_to_string(ev.state),
			                       ev.item->decided_by);
			if (ev.state != QUEUE_STATE_CANCELLED)
				metrics_observe_latency(
				        &ap->metrics,
				        (double)(ev.item->decided_ms - ev.item->created_ms) /
				                1000.0);
		}
		for (size_t i = 0; i < APPROVALS_MAX_OBSERVERS; i++)
			if (ap->observers[i].ops && ap->observers[i].ops->event)
				ap->observers[i].ops->event(ap->observers[i].userdata, &ev);
		queue_event_release(&ev);
	}
}

static void drain(struct approvals *ap)
{
	struct queue_resolution res;

	/* A source may decide more (a fallback): run the loop again rather than recursing. */
	if (ap->draining) {
		ap->drain_again = true;
		return;
	}
	ap->draining = true;
	do {
		ap->drain_again = false;
		/* The lines first: a person's decision is in the audit log before the process it
		 * lets go runs (a crash in between cannot lose it); then what delivering made. */
		drain_events(ap);
		while (queue_pop_resolution(ap->queue, &res) == 1) {
			deliver(ap, &res);
			queue_resolution_release(&res);
		}
		drain_events(ap);
	} while (ap->drain_again);
	ap->draining = false;
	unlink_unregistered(ap);
	if (ap->freeing)
		return;
	for (size_t i = 0; i < APPROVALS_MAX_OBSERVERS; i++)
		if (ap->observers[i].ops && ap->observers[i].ops->drained)
			ap->observers[i].ops->drained(ap->observers[i].userdata);
	schedule(ap);
}

static int on_soon(struct loop *loop, void *userdata)
{
	struct approvals *ap = userdata;

	ap->soon = NULL;
	drain(ap);
	return 0;
}

/* After a change made by SRC: drain now, or from the loop for a deferred source. */
static void changed_by(struct approval_source *src)
{
	struct approvals *ap = src->ap;

	if (!src->ops->deferred) {
		drain(ap);
		return;
	}
	if (ap->soon || ap->freeing)
		return;
	if (loop_add_timer(ap->loop, 0, on_soon, ap, &ap->soon) < 0) {
		/* No timer to be had: the resolution waits for the next drain, or the deadline's
		 * tick, rather than reaching the source inside its own call. */
		ap->soon = NULL;
		schedule(ap);
	}
}

/* ---- the timer ----------------------------------------------------------------------------- */

static int on_tick(struct loop *loop, void *userdata)
{
	struct approvals *ap = userdata;
	uint64_t now = loop_now_ms();

	ap->tick = NULL;
	/* What the sources change here is drained once, below, with what expires. */
	ap->draining = true;
	for (struct approval_source *s = ap->sources; s; s = s->next)
		if (!s->unregistered && s->ops->tick)
			s->ops->tick(s->userdata, now);
	ap->draining = false;
	queue_tick(ap->queue, now);
	drain(ap);
	return 0;
}

static void schedule(struct approvals *ap)
{
	uint64_t now, next;

	if (ap->freeing)
		return;
	now = loop_now_ms();
	next = queue_next_deadline(ap->queue);
	for (struct approval_source *s = ap->sources; s; s = s->next)
		if (!s->unregistered && s->ops->tick) {
			uint64_t want = s->ops->tick(s->userdata, UINT64_MAX);

			if (want < next)
				next = want;
		}
	if (next < now)
		next = now;
	if (ap->tick) {
		loop_cancel_timer(ap->loop, ap->tick);
		ap->tick = NULL;
	}
	/* Without a timer the next change or decision re-arms it; deadlines are only late. */
	if (next != UINT64_MAX && loop_add_timer(ap->loop, next, on_tick, ap, &ap->tick) < 0)
		ap->tick = NULL;
}

void approvals_schedule(struct approval_source *src)
{
	schedule(src->ap);
}

/* ---- life cycle ---------------------------------------------------------------------------- */

int approvals_new(struct loop *loop, const struct approvals_config *config,
                  struct approvals **ret_approvals)
{
	struct approvals *ap;
	struct queue_config qc = config->queue;
	int r;

	if (qc.max_waiters_per_item > APPROVALS_MAX_WAITERS)
		return -EINVAL;
	if (getrandom(qc.id_key, sizeof(qc.id_key), 0) != sizeof(qc.id_key))
		return -EIO;
	ap = calloc(1, sizeof(*ap));
	if (!ap)
		return -ENOMEM;
	ap->loop = loop;
	ap->audit = config->audit;
	ap->next_owner = 1;
	r = queue_new(&qc, &ap->queue);
	explicit_bzero(qc.id_key, sizeof(qc.id_key));
	if (r < 0) {
		free(ap);
		return r;
	}
	*ret_approvals = ap;
	return 0;
}

void approvals_free(struct approvals *ap)
{
	if (!ap)
		return;
	ap->freeing = true;
	if (ap->tick)
		loop_cancel_timer(ap->loop, ap->tick);
	if (ap->soon)
		loop_cancel_timer(ap->loop, ap->soon);
	while (ap->sources) {
		struct approval_source *s = ap->sources;

		ap->sources = s->next;
		free(s);
	}
	queue_free(ap->queue);
	free(ap);
}

int approvals_register(struct approvals *ap, const struct approval_source_ops *ops, void *userdata,
                       struct approval_source **ret_source)
{
	struct approval_source *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->ap = ap;
	s->ops = ops;
	s->userdata = userdata;
	s->owner = ap->next_owner++;
	s->next = ap->sources;
	ap->sources = s;
	*ret_source = s;
	return 0;
}

void approvals_unregister(struct approval_source *src)
{
	struct approvals *ap;
	uint32_t owner;

	if (!src)
		return;
	ap = src->ap;
	owner = src->owner; /* SRC may be freed below */
	/* Unheard from now on; unlinked (freed) at once unless a drain walks the list. */
	src->unregistered = true;
	ap->unregistered++;
	if (!ap->draining)
		unlink_unregistered(ap);
	if (queue_cancel_owner(ap->queue, owner, loop_now_ms()) > 0 && !ap->freeing)
		drain(ap);
}

/* ---- asking ------------------------------------------------------------------------------- */

int approvals_ask(struct approval_source *src, const struct queue_request *req, char *ret_id)
{
	struct queue_request qr = *req;
	int r;

	qr.owner = src->owner;
	r = queue_add(src->ap->queue, &qr, loop_now_ms(), ret_id);
	if (r >= 0)
		changed_by(src);
	return r;
}

int approvals_withdraw(struct approval_source *src, uint64_t cookie)
{
	int r = queue_cancel_waiter(src->ap->queue, src->owner, cookie, loop_now_ms());

	if (r >= 0)
		changed_by(src);
	return r < 0 ? r : 0;
}

void approvals_verdict(struct approval_source *src, const struct audit_record *rec)
{
	struct approvals *ap = src->ap;

	if (rec->decided_by && !strcmp(rec->decided_by, "policy") &&
	    (rec->verdict == AUDIT_ALLOW || rec->verdict == AUDIT_DENY))
		metrics_count_decision(&ap->metrics, rec->kind,
		                       audit_verdict_to_string(rec->verdict), "policy");
	audit_log_record(ap->audit, rec);
}

bool approvals_verdict_written(struct approval_source *src, const char *sandbox)
{
	return audit_log_would_write(src->ap->audit, sandbox);
}

void approvals_audit(struct approvals *ap, const struct audit_record *rec)
{
	audit_log_record(ap->audit, rec);
}

/* ---- deciding ----------------------------------------------------------------------------- */

int approvals_decide(struct approvals *ap, const char *id, const struct approval_decision *d,
                     struct cl_error *err)
{
	const struct queue_item *item = queue_find(ap->queue, id);
	char idcopy[QUEUE_ID_LEN + 1];
	bool kept = true;
	int r;

	if (!item)
		return queue_lookup(ap->queue, id) ? -EALREADY : -ENOENT;
	/* ID may point into the item, which a source's hook or the decision may free. */
	snprintf(idcopy, sizeof(idcopy), "%s", item->id);
	/* Any source that waits on it may refuse what the decision would mean: nothing decided. */
	for (struct approval_source *s = ap->sources; s; s = s->next) {
		if (s->unregistered || !s->ops->validate || !queue_item_waits(item, s->owner))
			continue;
		r = s->ops->validate(s->userdata, item, d, err);
		if (r < 0)
			return r;
	}
	/* The sources that wait on it, each once; their hooks see the item still pending. */
	for (struct approval_source *s = ap->sources; s; s = s->next) {
		const struct queue_item *it = queue_find(ap->queue, idcopy);
		struct cl_error why = {""};

		if (!it)
			break;
		if (s->unregistered || !s->ops->decided)
			continue;
		if (!queue_item_waits(it, s->owner))
			continue;
		r = s->ops->decided(s->userdata, it, d, &why);
		if (r < 0 && kept) {
			kept = false;
			if (err) {
				if (!why.msg[0])
					cl_error_set(&why, r, "%s", strerror(-r));
				*err = why;
			}
		}
	}
	r = queue_decide(ap->queue, idcopy, d->allow, d->scope, d->by, d->reason, loop_now_ms());
	if (r < 0)
		return r;
	drain(ap);
	return kept ? 0 : 1;
}

int approvals_cancel_sandbox(struct approvals *ap, const char *sandbox, const char *reason)
{
	int n = queue_cancel_sandbox(ap->queue, sandbox, reason, loop_now_ms());

	if (n > 0)
		drain(ap);
	return n;
}

/* ---- who answers, who watches ------------------------------------------------------------- */

void approvals_set_approvers(struct approvals *ap, enum approvals_approver who, unsigned count)
{
	unsigned n = 0;

	if ((unsigned)who >= APPROVER_KINDS)
		return;
	ap->approvers[who] = count;
	for (size_t i = 0; i < APPROVER_KINDS; i++)
		n += ap->approvers[i];
	if (n != queue_approvers(ap->queue)) {
		queue_set_approvers(ap->queue, n, loop_now_ms());
		drain(ap);
	}
}

int approvals_observe(struct approvals *ap, const struct approvals_observer_ops *ops,
                      void *userdata)
{
	for (size_t i = 0; i < APPROVALS_MAX_OBSERVERS; i++)
		if (!ap->observers[i].ops) {
			ap->observers[i] = (struct observer){.ops = ops, .userdata = userdata};
			return 0;
		}
	return -ENOSPC;
}

void approvals_unobserve(struct approvals *ap, const struct approvals_observer_ops *ops,
                         void *userdata)
{
	for (size_t i = 0; i < APPROVALS_MAX_OBSERVERS; i++)
		if (ap->observers[i].ops == ops && ap->observers[i].userdata == userdata)
			ap->observers[i] = (struct observer){0};
}

const struct queue *approvals_queue(const struct approvals *ap)
{
	return ap->queue;
}

struct metrics *approvals_metrics(struct approvals *ap)
{
	return &ap->metrics;
}
