/* The approval queue: asks that wait for a human, as a pure state machine.
 *
 * No fds, no clock reads, no globals, no randomness: every call that can change state takes
 * `now_ms` (a monotonic clock in milliseconds, chosen by the caller) and first expires what is
 * due at that time, so the outcome depends only on the sequence of calls. Ids are 12 lowercase
 * hex characters, SipHash-2-4 of a counter under the caller's 16-byte key (config.id_key): fill
 * the key from getrandom() and ids cannot be guessed from each other.
 *
 * Life of an item: pending → approved | denied | timed_out | cancelled, exactly once.
 *   - queue_decide: a human (or the CLI, the dashboard …) approves or denies.
 *   - deadline: created_ms + config.timeout_ms[kind]; at now_ms >= deadline_ms (not before)
 *     the item is timed_out, decided_by "timeout". A timeout never applies ask_fallback.
 *   - cancelled: its last waiter went away (queue_cancel_waiter), or queue_cancel_sandbox.
 *
 * Waiters. Whoever asks waits as a waiter: (owner, cookie), where the owner names who asks
 * (an approvals source, approvals.h: an exec guard, egress, …) and the cookie is that owner's
 * own 64-bit name of the waiter (a seccomp notification id, a connection's id …). A waiter is
 * unique in the whole queue; owners need not coordinate their cookies.
 *
 * Merging. Asks are identical when everything a person would be shown is identical: kind,
 * sandbox, project, summary, exe, argv, cwd, interpreter and uid (the pid may differ), and
 * so is what the decision stands for beyond that (identity: an exec's file as it was read,
 * so a file renamed or rewritten under the same name is a card of its own). An
 * identical ask from the same sandbox joins the pending item as one more waiter (of any
 * owner) instead of making a new item; a decision answers every waiter.
 *
 * ask_fallback, when nobody can answer. The caller keeps the number of attached approvers
 * (tty, dashboard clients, CLI …) up to date with queue_set_approvers(). The queue is
 * "orphaned" while that number is 0; it starts orphaned. The fallback of the item's kind
 * (config.fallback[kind]) decides, with decided_by "fallback":
 *   deny      → denied;
 *   allowlist → approved if the request said an allow rule matched (allowlist_matched),
 *               else denied;
 *   full      → approved;
 * and it applies
 *   - at queue_add, when the queue has been orphaned for at least config.orphan_grace_ms:
 *     the item is created and decided at once (queue_add returns QUEUE_ADD_DECIDED);
 *   - to every pending item, once the queue has been orphaned for orphan_grace_ms, i.e. when
 *     the last approver detaches (grace 0, the default: at once, inside queue_set_approvers)
 *     or at the end of the grace (queue_tick; queue_next_deadline includes that moment).
 *     A grace lets a dashboard reload without losing the pending asks; an approver that
 *     attaches within it keeps them pending.
 *
 * Output. Transitions are reported twice, to be drained after every call:
 *   - resolutions (queue_pop_resolution): a final state and the waiters to answer;
 *     also for cancelled items (with no cookies), so every removal has one;
 *   - events (queue_pop_event): ADDED (state pending) and REMOVED (final state), in the order
 *     they happened, for the audit log and the dashboard's SSE stream.
 * Both hold a reference on the item, which stays readable until released, even after it left
 * the queue. Every transition has its nodes allocated when the item is created, so deciding,
 * expiring and cancelling never fail.
 *
 * Bounds (the agent is hostile and can flood): pending items per sandbox and in total,
 * waiters per item, bytes per item. Over a bound queue_add fails with a distinct code and
 * changes nothing; queue_strerror() gives the reason to show ("too many pending approvals"). */
#ifndef CLOISTER_QUEUE_H
#define CLOISTER_QUEUE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QUEUE_ID_LEN     12   /* hex characters */
#define QUEUE_BY_MAX     32   /* bytes of decided_by, NUL included; longer names are truncated */
#define QUEUE_REASON_MAX 1024 /* bytes of a reason, NUL included; longer ones are truncated */

/* queue_add failures beyond -EINVAL / -ENOMEM, each with its own queue_strerror() text. */
#define QUEUE_E_SANDBOX_FULL (-EDQUOT) /* max_pending_per_sandbox reached */
#define QUEUE_E_FULL         (-ENOSPC) /* max_pending_total reached */
#define QUEUE_E_WAITERS      (-EMLINK) /* max_waiters_per_item reached on the merged item */
#define QUEUE_E_TOO_BIG      (-E2BIG)  /* the request's strings exceed max_item_bytes */
#define QUEUE_E_COOKIE       (-EEXIST) /* the waiter already waits on an item */

enum queue_kind {
	QUEUE_KIND_EXEC,     /* kernel-intercepted execve */
	QUEUE_KIND_DOMAIN,   /* a connection through the proxy */
	QUEUE_KIND_HOSTEXEC, /* POST /request */
	QUEUE_KIND_SHIM,     /* a call forwarded by cloister-shim */
	QUEUE_KIND_FILE,     /* a write outside fs.write (fs.ask: on-write) */
	QUEUE_KIND_COUNT,
};

enum queue_state {
	QUEUE_STATE_PENDING,
	QUEUE_STATE_APPROVED,
	QUEUE_STATE_DENIED,
	QUEUE_STATE_TIMED_OUT,
	QUEUE_STATE_CANCELLED,
};

enum queue_scope {
	QUEUE_SCOPE_ONCE,
	QUEUE_SCOPE_SESSION,
	QUEUE_SCOPE_PROJECT,
	QUEUE_SCOPE_GLOBAL,
};

enum queue_fallback {
	QUEUE_FALLBACK_DENY,
	QUEUE_FALLBACK_ALLOWLIST,
	QUEUE_FALLBACK_FULL,
};

struct queue_config {
	uint64_t timeout_ms[QUEUE_KIND_COUNT]; /* 0: no timeout */
	enum queue_fallback fallback[QUEUE_KIND_COUNT];
	uint64_t orphan_grace_ms;
	size_t max_pending_per_sandbox;
	size_t max_pending_total;
	size_t max_waiters_per_item;
	size_t max_item_bytes; /* sum of the request's string lengths */
	size_t recent_max;     /* decided items remembered for -EALREADY and queue_recent() */
	uint8_t id_key[16];
};

/* Defaults: exec, hostexec and shim time out after 5 min, domain after 60 s; every fallback
 * deny; grace 0; 64 pending per sandbox, 1024 in total, 256 waiters per item, 1 MiB per item,
 * 64 recent. The id key is zero: set it. */
void queue_config_init(struct queue_config *config);

/* An ask as queue_add receives it. Strings are copied; optional ones may be NULL. */
struct queue_request {
	enum queue_kind kind;
	const char *sandbox;     /* required */
	const char *project;     /* optional */
	const char *summary;     /* required: canonical command, or the domain */
	const char *exe;         /* optional: resolved executable path */
	const char *const *argv; /* optional: argc strings */
	size_t argc;
	const char *cwd;         /* optional */
	const char *interpreter; /* optional: a script's #! line */
	const char *identity;    /* optional: what else must match to merge (see Merging) */
	const char *note; /* optional: the supervisor's word on why it asks (not the agent's) */
	int64_t pid;      /* -1: unknown */
	int64_t uid;      /* -1: unknown */
	bool allowlist_matched; /* an allow rule matched: what ask_fallback=allowlist needs */
	uint32_t owner;         /* the waiter: its owner … */
	uint64_t cookie;        /* … and the owner's name for it */
};

/* One waiter of an item (see "Waiters" above). */
struct queue_waiter {
	uint32_t owner;
	uint64_t cookie;
};

/* A queue item, read-only for callers. Request fields never change; the outcome fields are
 * set once, when state leaves pending (an ADDED event's item may already show an outcome:
 * read the event's state). */
struct queue_item {
	char id[QUEUE_ID_LEN + 1];
	enum queue_kind kind;
	char *sandbox;
	char *project; /* NULL when not given; likewise exe, cwd, interpreter */
	char *summary;
	char *exe;
	char **argv; /* argc strings and a NULL; never NULL itself */
	size_t argc;
	char *cwd;
	char *interpreter;
	char *identity;
	char *note;
	int64_t pid; /* of the first asker */
	int64_t uid;
	bool allowlist_matched;
	uint64_t created_ms;
	uint64_t deadline_ms; /* UINT64_MAX: none */
	size_t n_waiters;     /* while pending; at resolution, the waiters answered */

	enum queue_state state;
	uint64_t decided_ms;
	char decided_by[QUEUE_BY_MAX]; /* "tty", "web", "cli", "fallback", "timeout", "cancel" */
	const char *reason;            /* never NULL once decided */
	enum queue_scope scope;
};

struct queue;

/* -EINVAL for a config with a zero bound; *ret_queue on success. */
int queue_new(const struct queue_config *config, struct queue **ret_queue);
/* Frees the queue and whatever was not drained. Items still referenced by events or
 * resolutions the caller holds stay valid until those are released. Accepts NULL. */
void queue_free(struct queue *q);

enum {
	QUEUE_ADD_NEW = 0,     /* a new pending item */
	QUEUE_ADD_MERGED = 1,  /* joined an identical pending item as one more waiter */
	QUEUE_ADD_DECIDED = 2, /* nobody can answer: decided by the fallback at once, and the
	                        * resolution (with this cookie) is ready to pop */
};

/* Add an ask. Returns QUEUE_ADD_* and copies the item's id to ret_id (QUEUE_ID_LEN + 1 bytes,
 * may be NULL); or -EINVAL (no sandbox/summary, kind out of range, argc without argv),
 * -ENOMEM, or one of the QUEUE_E_* bounds, with no change. */
int queue_add(struct queue *q, const struct queue_request *req, uint64_t now_ms, char *ret_id);

/* Decide pending item ID: approved when allow, else denied. BY names the approver ("tty",
 * "web", "cli"); REASON may be NULL (a default is used). Returns 0; -ENOENT for an unknown
 * id; -EALREADY for an item already decided, timed out or cancelled (still remembered among
 * the recent ones) — both harmless. -ENOMEM leaves the item pending. */
int queue_decide(struct queue *q, const char *id, bool allow, enum queue_scope scope,
                 const char *by, const char *reason, uint64_t now_ms);

/* The waiter (OWNER, COOKIE) went away (its process died, its client disconnected). Returns 0
 * when its item stays pending for other waiters, 1 when it was the last and the item is now
 * cancelled, -ENOENT when no pending item has that waiter. */
int queue_cancel_waiter(struct queue *q, uint32_t owner, uint64_t cookie, uint64_t now_ms);

/* Every waiter of OWNER went away (it stopped asking): as queue_cancel_waiter for each. Never
 * fails; returns how many items were cancelled. */
int queue_cancel_owner(struct queue *q, uint32_t owner, uint64_t now_ms);

/* Cancel every pending item of SANDBOX (it stopped); their waiters appear in the
 * resolutions. REASON (NULL: "the sandbox stopped") is cut at 127 bytes, so this never fails.
 * Returns how many were cancelled. */
int queue_cancel_sandbox(struct queue *q, const char *sandbox, const char *reason, uint64_t now_ms);

/* Set the number of attached approvers; see ask_fallback above. Also expires what is due at
 * now_ms, as queue_tick. Returns how many items were decided (by the fallback or a timeout). */
int queue_set_approvers(struct queue *q, unsigned count, uint64_t now_ms);
unsigned queue_approvers(const struct queue *q);

/* Expire what is due at now_ms: items whose deadline is <= now_ms, and the orphan grace.
 * Returns how many items were decided. */
int queue_tick(struct queue *q, uint64_t now_ms);

/* The earliest time at which queue_tick has something to do, UINT64_MAX when nothing. */
uint64_t queue_next_deadline(const struct queue *q);

/* Pending items, oldest first (queue_first/queue_next) or newest first (queue_last/
 * queue_prev). Pointers are valid until the next call that changes the queue. */
const struct queue_item *queue_first(const struct queue *q);
const struct queue_item *queue_next(const struct queue *q, const struct queue_item *item);
const struct queue_item *queue_last(const struct queue *q);
const struct queue_item *queue_prev(const struct queue *q, const struct queue_item *item);
size_t queue_count(const struct queue *q);
size_t queue_count_sandbox(const struct queue *q, const char *sandbox);

/* Does pending ITEM (of queue_find, queue_first …) have a waiter of OWNER? */
bool queue_item_waits(const struct queue_item *item, uint32_t owner);

/* The pending item ID, or NULL. */
const struct queue_item *queue_find(const struct queue *q, const char *id);
/* The pending or recently decided item ID, or NULL. */
const struct queue_item *queue_lookup(const struct queue *q, const char *id);
/* Recently decided items, I = 0 the newest; NULL past the end. */
const struct queue_item *queue_recent(const struct queue *q, size_t i);

struct queue_resolution {
	const struct queue_item *item;      /* final state, decided_by, reason, scope */
	const struct queue_waiter *waiters; /* the waiters to answer */
	size_t n_waiters;
};

enum queue_event_type {
	QUEUE_EVENT_ADDED,
	QUEUE_EVENT_REMOVED,
};

struct queue_event {
	enum queue_event_type type;
	enum queue_state state; /* at the time of the event */
	uint64_t time_ms;
	const struct queue_item *item;
};

/* Pop the oldest resolution / event into *ret: 1, or 0 when there is none. Release each
 * popped one with queue_resolution_release / queue_event_release (they accept a zeroed
 * struct); releasing may free the item, even after queue_free. */
int queue_pop_resolution(struct queue *q, struct queue_resolution *ret);
void queue_resolution_release(struct queue_resolution *res);
int queue_pop_event(struct queue *q, struct queue_event *ret);
void queue_event_release(struct queue_event *ev);

const char *queue_kind_to_string(enum queue_kind kind);    /* "exec", "domain", … */
const char *queue_state_to_string(enum queue_state state); /* "pending", "timed_out", … */
const char *queue_scope_to_string(enum queue_scope scope); /* "once", "session", … */
const char *queue_fallback_to_string(enum queue_fallback fallback);
int queue_scope_from_string(const char *s, enum queue_scope *ret_scope);
/* A person-readable reason for a queue_add failure ("too many pending approvals …"). */
const char *queue_strerror(int code);

#endif
