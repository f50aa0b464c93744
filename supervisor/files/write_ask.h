/* The ask for writes outside fs.write (fs.ask: on-write), a source of asks of kind "file";
 * with fs.ask: off, the reason line for the writes the kernel layers refuse.
 *
 * The sandbox's seccomp filter notifies opens whose flags write (notifier/filter.h); the exec
 * guard that owns the listener hands them here (exec_guard_set_open_handler). For each:
 *   - a path under fs.write, or a device / kernel file (write_rules.h): CONTINUE at once — the
 *     kernel layers (mounts, Landlock) still enforce, so a race gains nothing;
 *   - fs.hide / fs.protect: EACCES at once, never asked, with the reason line on the process's
 *     stderr (notifier/agent_note.h);
 *   - outside fs.write: the path is resolved as the process sees it (write_target.h: below
 *     its root, from its cwd or dirfd, symlinks followed as the kernel would). Where the
 *     host's view of that directory is not the very same directory (a private mount of the
 *     sandbox, a covered path), the kernel decides: CONTINUE. A file or directory above it
 *     that is shielded (write_shield.h: fs.hide, fs.protect, Cloister's own files, by
 *     identity), or a file with several names: EACCES at once, never asked. The resolved path
 *     is decided again (both its names, the stricter wins) and, still outside, asked: "write
 *     /home/u/.npmrc" with the process's executable, argv, cwd and pid — the path the agent
 *     will write. On allow, the supervisor opens the file itself — from the host's pinned
 *     directory, O_NOFOLLOW, in a child with the process's fsuid, fsgid, groups and umask,
 *     outside the sandbox's Landlock domain and mounts — checks that it is still the file the
 *     agent's view shows there and no shielded one, and hands the fd over with
 *     SECCOMP_IOCTL_NOTIF_ADDFD + SEND: the process never resolves the path again, so no
 *     symlink swapped in meanwhile can redirect the write. Denied, timed out, or the open
 *     failing: EACCES (the open's own errno where it is the kernel's answer: EEXIST for
 *     O_EXCL, EISDIR…), and the reason line.
 * Session answers ("A" on the terminal, scope session on the CLI and the dashboard) allow the
 * path, or the directory the decision names, for the rest of the run. Project and global
 * scopes ("p"/"g", the dashboard's Project/Global) are also written to the decisions files
 * (fs: allow:, policy/decisions.h) and read back as answers at the next run's start: such a
 * write is then opened without an ask, the same checks made. A denial is for this write only:
 * a wider one is refused, as is a wider allowance for a file that became, while the card was
 * up, one no ask may reach (fs.hide, fs.protect, the shield): nothing is decided then.
 *
 * With fs.ask: off the same opens come here only for the reason line: every one is answered
 * CONTINUE (the kernel layers refuse), and the line is written first when the open lands, in
 * the host's view, outside fs.write, on a shielded file, or below an fs.protect/fs.hide entry
 * that existed at start (the mount layer holds only those). Every reason line of either mode
 * is bounded: one per process and path, 10 a second (write_rules.h). */
#ifndef CLOISTER_FILES_WRITE_ASK_H
#define CLOISTER_FILES_WRITE_ASK_H

#include <linux/seccomp.h>
#include <stdbool.h>

#include "base/cleanup.h"
#include "notifier/agent_note.h"

struct loop;
struct approvals;
struct config;
struct notifier;
struct write_ask;

/* One of Cloister's own files or directories: never written through an ask. */
struct write_ask_own {
	const char *path; /* NULL: none */
	const char *what; /* "Cloister's audit log" */
};

struct write_ask_config {
	const char *name;    /* the sandbox */
	const char *project; /* may be NULL */
	const struct config *config;
	const char *home;          /* absolute, normalised; NULL: "~" patterns match nothing */
	const char *worktree;      /* absolute, normalised */
	const char *decisions_dir; /* where project and global decisions go; NULL: nowhere */
	bool verbose;
	bool quiet_to_agent; /* no reason line on a refused process's stderr */
	struct agent_note_ttys ttys;
	const struct write_ask_own *own;
	size_t n_own;
};

/* Answer N's open notifications (N not owned, it must outlive WA); asks go to APPROVALS. */
int write_ask_new(struct loop *loop, struct approvals *approvals, struct notifier *n,
                  const struct write_ask_config *config, struct write_ask **ret);
/* Cancels its waiting asks. NULL is fine. */
void write_ask_free(struct write_ask *wa);

/* One open notification (open, openat, creat), answered now or once decided, in two halves:
 * write_ask_read, then write_ask_answer. The read waits on the agent (the
 * path and /proc/PID/cmdline from its memory, under its mm's lock; the path's lookups in its
 * file systems, a FUSE server of its own) and so runs WITHOUT the loop's lock. It touches only
 * what nothing changes after write_ask_new (the config, home, worktree, the notifier's read
 * functions, the ids' validity) and what it opens itself (/proc/PID, the agent's root, cwd or
 * dirfd, the file's directory in both views); it decides nothing lasting and answers nothing.
 * The answer (the shield, the policy on the resolved names, the session's answers, the asks,
 * the audit and the reason line, the kernel's answer) runs under the lock. WA must outlive a
 * read under way (free the exec guard, which joins its thread, first). */
struct write_ask_read;
/* 0 and *RET (always: what to answer, even "nothing"); -ENOMEM. */
int write_ask_read(const struct write_ask *wa, const struct seccomp_notif *req,
                   struct write_ask_read **ret);
/* Answers REQ by RD (taken and freed; NULL: the read failed, the open fails with ENOMEM). */
void write_ask_answer(struct write_ask *wa, const struct seccomp_notif *req,
                      struct write_ask_read *rd);
void write_ask_read_free(struct write_ask_read *rd);
CL_DEFINE_TRIVIAL_CLEANUP(struct write_ask_read *, write_ask_read_free)

/* From now on asks are refused without asking (the agent is being terminated). */
void write_ask_set_terminating(struct write_ask *wa, bool terminating);

#endif
