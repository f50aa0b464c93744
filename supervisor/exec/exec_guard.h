/* One sandbox's exec interception, for `run` (its own sandbox) and `serve` (containers):
 *
 * For each exec its seccomp listener reports:
 *   read it (notifier/target) → a candidate that does not resolve or cannot be executed is
 *   failed at once with the errno the kernel would give (ENOENT, ENOTDIR, EACCES, ELOOP…),
 *   silently (execvp probes every PATH entry), never let through for the kernel to look again →
 *   the policy decides (a file that is a `path:` deny rule's file under another name is denied
 *   by that rule, deny_ids.h) → a file that is not the file at its name in the sandbox's own
 *   view (reached through another mount namespace, view.h) is refused:
 *     allow → approve the file's (dev, ino) in the backstop(s), then CONTINUE
 *     deny  → EACCES, logged with the rule
 *     ask   → the approvals service (approvals.h), where the guard is a source of its own;
 *             the syscall stays blocked until a decision, the timeout, or the death of the
 *             process (watched on the service's ticks).
 * A refusal the person did not make silently (a deny rule, a person's denial, a timeout) also
 * leaves one line on the refused process's stderr unless quiet_to_agent (agent_note.h): an
 * agent that knows why asks its user instead of trying stranger ways.
 * Every verdict and decision is one audit-log line. "Always" answers (scope session) and a
 * denial of a moment ago settle a repeated ask without asking again. Several guards (a
 * container's exec sessions) may share one service: each hears its own waiters only. */
#ifndef CLOISTER_EXEC_GUARD_H
#define CLOISTER_EXEC_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "notifier/agent_note.h"
#include "supervisor/approval/queue.h"

struct loop;
struct approvals;
struct config;
struct backstop;
struct ptrace_backstop;
struct deny_ids;
struct exec_view;
struct notifier;
struct exec_guard;

struct exec_guard_config {
	const char *name;    /* the sandbox, as asks and the audit log show it */
	const char *project; /* may be NULL */
	const struct config *config;
	struct backstop *backstop;               /* may be NULL: no backstop */
	uint64_t cgroup_id;                      /* the sandbox's cgroup in the backstop; 0: none */
	struct ptrace_backstop *ptrace_backstop; /* may be NULL */
	struct exec_view *view; /* the sandbox's own view; NULL: no identity check */
	/* Every process under the filter has the view's root: it refuses chroot, pivot_root,
	 * setns and new mount namespaces (not --allow-nested-sandbox). Exec reads then skip
	 * opening each target's root (notifier_set_fixed_root). */
	bool fixed_root;
	struct deny_ids *deny_ids; /* deny rules' files by identity; may be NULL */
	bool verbose;              /* say what is allowed too */
	/* A refused exec gets no line on its stderr (run --quiet-to-agent; notifier/agent_note.h)
	 */
	bool quiet_to_agent;
	/* The terminals the supervisor owns (the sandbox's pty), where such a line may go. */
	struct agent_note_ttys ttys;
	/* Where project and global decisions are written (exec_decisions.h); NULL: nowhere. */
	const char *decisions_dir;
	/* Every process under the filter is gone (the listener hung up). May free the guard. */
	void (*gone)(void *userdata, struct exec_guard *eg);
	void *gone_userdata;
};

/* Serve the seccomp LISTENER_FD (taken over, closed on failure too) on LOOP; its asks go to
 * APPROVALS. A thread of the guard's own blocks in the listener's RECV and runs the handlers
 * under the loop's lock (loop.h, "other threads"; the loop polls the listener when the thread
 * cannot start); the hang-up is heard on the loop. */
int exec_guard_new(struct loop *loop, struct approvals *approvals, int listener_fd,
                   const struct exec_guard_config *config, struct exec_guard **ret);
/* Stops the guard's thread (with the loop's lock held: on the loop's thread or in a handler,
 * never in one of this guard's own), cancels its waiting asks (the queue's resolutions have
 * no waiter left to answer) and closes the listener, which fails the syscalls still blocked.
 * NULL is fine. True when the thread did not stop in time and was left to end by itself:
 * it may still be in a read made without the lock, so what that read uses (the open ops'
 * USERDATA and what it rests on, the notifier's view) must then be kept, never freed. */
bool exec_guard_free(struct exec_guard *eg);

/* From now on asks are denied without asking (the agent is being terminated). */
void exec_guard_set_terminating(struct exec_guard *eg, bool terminating);

/* The process that most recently connected to DST (address and port) in the last seconds, as
 * its connect notifications told (attribution of a proxied connection; filters installed
 * with notify_connect). 0 and *ret, or -ENOENT. */
struct connect_target;
struct sockaddr_storage;
int exec_guard_who_connected(const struct exec_guard *eg, const struct sockaddr_storage *dst,
                             struct connect_target *ret);

/* Open notifications (filters installed with notify_open_write) go to OPS, which answer them
 * (the ask for writes, files/write_ask.h); without them they fail with ENOSYS. Set once. */
struct seccomp_notif;
struct exec_guard_open_ops {
	/* What REQ's process tells, read WITHOUT the loop's lock on the receiving thread (it may
	 * wait on the agent: only its sandbox waits meanwhile), or with it on the loop's: 0 and
	 * *RET, or -errno (ANSWER then gets NULL). It may use only what stays unchanged while
	 * the guard lives, and what it opens itself. */
	int (*read)(void *userdata, const struct seccomp_notif *req, void **ret);
	/* Under the lock: answer REQ by READ (taken, freed here; NULL when the read failed). */
	void (*answer)(void *userdata, const struct seccomp_notif *req, void *read);
	/* A read never answered (the guard is being freed). */
	void (*read_free)(void *read);
};
void exec_guard_set_open_handler(struct exec_guard *eg, const struct exec_guard_open_ops *ops,
                                 void *userdata);

struct notifier *exec_guard_notifier(const struct exec_guard *eg);
uint64_t exec_guard_notifications(const struct exec_guard *eg);

#endif
