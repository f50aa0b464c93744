/* The approvals service: the one approval queue (queue.h) on the supervisor's loop, and the
 * only way to it. Sources of asks subscribe; whoever answers decides through it; whoever shows
 * the queue observes it.
 *
 * Sources (an exec guard per seccomp listener, egress, hostexec and shim calls; file access
 * and credentials later) register with approvals_register() and ask with approvals_ask(). A
 * waiter is (the source, its own cookie): cookies need only be unique within their source.
 * Each resolution comes back to the source directly, with that source's cookies only, through
 * ops->resolved — once per resolution and source, whatever other sources wait on the same
 * merged item. A source that goes (approvals_unregister) has its waiters cancelled and hears
 * nothing more. A new kind of ask is a new source registering itself: nothing here changes.
 *
 * A person's decision (the dashboard, the CLI client, the terminal) goes through
 * approvals_decide(). Each source with a waiter on the item hears it first (ops->decided),
 * before the queue applies it: a decision with a wider scope than once (an exec allowed for
 * the session, a domain for the project) is kept by the source that asked, which knows what
 * it means; what it could not keep is reported back to the person.
 *
 * Every change is drained at once: resolutions to their sources, events to the audit log (one
 * line each), the metrics and the observers (ops->event, then ops->drained once per drain).
 * A source with ops->deferred gets its resolutions from the loop, never from inside its own
 * approvals_ask() or approvals_withdraw() (the proxy must not hear a decision on a connection
 * from inside its own callback about it).
 *
 * Automatic verdicts (the policy allowed or denied, no person was asked) do not enter the
 * queue: approvals_verdict() writes their one audit line and counts them, so every verdict of
 * every source is one line and one count, asked or not.
 *
 * Timers: one, at the earliest of the queue's deadlines and the sources' ops->tick wishes.
 * Single-threaded, on the caller's loop; every call may run callbacks of sources and
 * observers, which may call back in (a drain inside a drain runs once more, not nested). */
#ifndef CLOISTER_APPROVALS_H
#define CLOISTER_APPROVALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "supervisor/approval/queue.h"

struct loop;
struct audit_log;
struct audit_record;
struct metrics;
struct approvals;
struct approval_source;

/* At most this many waiters per item (queue_config.max_waiters_per_item). */
#define APPROVALS_MAX_WAITERS 256

struct approvals_config {
	struct queue_config queue; /* timeouts, fallbacks, grace, bounds; the id key is drawn */
	struct audit_log *audit;   /* where every line goes; NULL: nowhere */
};

/* -EINVAL (a bound over APPROVALS_MAX_WAITERS), -ENOMEM, -EIO (no randomness). */
int approvals_new(struct loop *loop, const struct approvals_config *config,
                  struct approvals **ret_approvals);
/* Frees the queue with whatever is still in it; unregister sources and observers first (their
 * waiters are cancelled then, which they no longer hear). NULL is fine. */
void approvals_free(struct approvals *ap);

/* ---- sources ------------------------------------------------------------------------------ */

/* A person's decision on an item. */
struct approval_decision {
	bool allow;
	enum queue_scope scope;
	const char *by;     /* "web", "cli", "tty" */
	const char *reason; /* NULL: the queue's default */
	/* What a scope wider than once covers, when not the item itself: a domain, or a pattern
	 * when IS_PATTERN (the dashboard's wildcard). NULL: the item's summary. */
	const char *value;
	bool is_pattern;
	/* An exec: what a scope wider than once covers (policy/exec_pattern.h): "exact" (NULL
	 * too), "program" or "pattern", and the pattern the person wrote for the last. */
	const char *match;
	const char *pattern;
};

struct approval_source_ops {
	/* ITEM left the queue (approved, denied, timed out, cancelled): answer COOKIES, N of
	 * them, this source's waiters on it. Required. */
	void (*resolved)(void *userdata, const struct queue_item *item, const uint64_t *cookies,
	                 size_t n);
	/* A person decided pending ITEM, on which this source waits; the queue applies D right
	 * after. Keep what a scope wider than once means (see approval_decision.value); 0, or
	 * -errno with ERR set when it could not be kept (the decision stands). May be NULL. */
	int (*decided)(void *userdata, const struct queue_item *item,
	               const struct approval_decision *d, struct cl_error *err);
	/* Before a person's decision D on ITEM (on which this source waits) is applied: 0 when
	 * this source can keep what D's scope and cover mean, or -EINVAL with ERR saying why, and
	 * then nothing is decided (a pattern that cannot be a rule). May be NULL. */
	int (*validate)(void *userdata, const struct queue_item *item,
	                const struct approval_decision *d, struct cl_error *err);
	/* Timer work (e.g. cancelling waiters whose process died), called with NOW_MS before the
	 * queue expires what is due; with NOW_MS = UINT64_MAX only to ask when it next wants to
	 * run. Returns that time (UINT64_MAX: no need). May be NULL. */
	uint64_t (*tick)(void *userdata, uint64_t now_ms);
	/* Resolutions only from the loop (see above). */
	bool deferred;
};

/* OPS must outlive the registration. -ENOMEM. */
int approvals_register(struct approvals *ap, const struct approval_source_ops *ops, void *userdata,
                       struct approval_source **ret_source);
/* Cancels the source's waiters (its callbacks are not called for them) and forgets it. NULL is
 * fine. */
void approvals_unregister(struct approval_source *src);

/* Ask: REQ (its owner is ignored: the waiter is SRC's, named REQ->cookie) joins the queue as a
 * new item or as one more waiter of an identical one. Returns QUEUE_ADD_* (QUEUE_ADD_DECIDED:
 * nobody can answer and the fallback decided; its resolution comes like any other) and the
 * item's id in RET_ID (QUEUE_ID_LEN + 1 bytes, may be NULL); or queue_add()'s errors, with
 * nothing changed (queue_strerror() says why to the asker). */
int approvals_ask(struct approval_source *src, const struct queue_request *req, char *ret_id);
/* SRC's waiter COOKIE went away (its process died, its client hung up). 0, or -ENOENT when it
 * waits on nothing. */
int approvals_withdraw(struct approval_source *src, uint64_t cookie);
/* Re-arm the timer after SRC's tick wishes changed. */
void approvals_schedule(struct approval_source *src);

/* An automatic verdict of SRC: one audit line (rate-limited, as REC->automatic says) and, for
 * the policy's allow and deny, one count in the metrics. */
void approvals_verdict(struct approval_source *src, const struct audit_record *rec);
/* Would an automatic verdict of SANDBOX be written to the audit log now (audit_log.h)? */
bool approvals_verdict_written(struct approval_source *src, const char *sandbox);

/* ---- deciding ---------------------------------------------------------------------------- */

/* A person decides pending item ID (see above). Returns 0; 1 when a source could not keep
 * what the decision's scope means (ERR says why; the decision was applied); -ENOENT for an
 * unknown id, -EALREADY for one decided a moment ago (still among the recent), -EINVAL (ERR
 * says why when a source refused the decision: nothing decided), or -ENOMEM (the item stays
 * pending). */
int approvals_decide(struct approvals *ap, const char *id, const struct approval_decision *d,
                     struct cl_error *err);
/* Cancel every pending ask of SANDBOX (it stopped; REASON may be NULL). Returns how many. */
int approvals_cancel_sandbox(struct approvals *ap, const char *sandbox, const char *reason);

/* ---- who answers, who watches ------------------------------------------------------------- */

/* Those who can answer; while there are none, ask_fallback decides (queue.h). */
enum approvals_approver {
	APPROVER_TTY,       /* a terminal approver */
	APPROVER_DASHBOARD, /* open event streams of the dashboard */
	APPROVER_CLI,       /* `--ask web` and serve: the CLI client counts, asks wait for it */
	APPROVER_KINDS,
};
void approvals_set_approvers(struct approvals *ap, enum approvals_approver who, unsigned count);

struct approvals_observer_ops {
	/* Every queue event, after its audit line. May be NULL. */
	void (*event)(void *userdata, const struct queue_event *ev);
	/* Once at the end of every drain (a prompt follows the queue). May be NULL. */
	void (*drained)(void *userdata);
};

#define APPROVALS_MAX_OBSERVERS 4

/* OPS must outlive the observation. -ENOSPC past APPROVALS_MAX_OBSERVERS. */
int approvals_observe(struct approvals *ap, const struct approvals_observer_ops *ops,
                      void *userdata);
void approvals_unobserve(struct approvals *ap, const struct approvals_observer_ops *ops,
                         void *userdata);

/* One audit line that is not a verdict (the backstop's events), never rate-limited unless
 * REC says so. */
void approvals_audit(struct approvals *ap, const struct audit_record *rec);

/* Read-only views, for those who show the queue; valid until the next change. */
const struct queue *approvals_queue(const struct approvals *ap);
struct metrics *approvals_metrics(struct approvals *ap);

#endif
