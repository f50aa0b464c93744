/* The exec backstop without root: ptrace exec events.
 *
 * The eBPF backstop (bpf/backstop.h) needs root (kernel.unprivileged_bpf_disabled = 2). Without
 * it, a multi-threaded agent that swaps an exec's path after the check, or a file swapped while
 * a person looks at a card, runs what nobody approved. Any process may ptrace its own uid's
 * dumpable processes (no Yama here), so a tracer of ours follows the agent's whole tree:
 *
 *   PTRACE_SEIZE the agent before its first exec, with TRACEEXEC, TRACEFORK, TRACEVFORK,
 *   TRACECLONE (every new process and thread is traced from its first instruction) and
 *   EXITKILL (the tracer's death kills them all: fail closed). At each exec event stop — the new
 *   image is loaded, not one instruction of it has run — the executed file (/proc/PID/exe: the
 *   binary, or a script's interpreter, the file the tp_btf eBPF backstop checks too) must be in
 *   the set of files the supervisor approved (device, inode, ctime and size: as it was when
 *   approved), or the process is killed; and its arguments (mm->arg_start..arg_end, read through
 *   /proc/PID/mem) must be those the supervisor decided on for the thread that called exec
 *   (ptrace_backstop_expect_args), or the process is killed.
 *
 * The tracer is a process of its own, forked by the supervisor before the sandbox starts (so its
 * waitpid(-1) sees tracees only), dying with it (PDEATHSIG). The approved set is shared memory
 * the supervisor writes and the tracer reads (insert-only, lock-free); kills come back as events
 * on a socket. Auto-attach is defeated by clone(CLONE_UNTRACED) and clone3, which the sandbox's
 * filter therefore refuses (notifier_filter_opts.refuse_untraced).
 *
 * The price: the agent's processes are traced, so its own debuggers cannot attach (strace, gdb,
 * PTRACE_TRACEME fail with EPERM); every fork and exec stops once more for the tracer; an exec
 * of a file the tracer may not inspect (execute-only, not readable by the user) is killed. */
#ifndef CLOISTER_SUPERVISOR_PTRACE_BACKSTOP_H
#define CLOISTER_SUPERVISOR_PTRACE_BACKSTOP_H

#include <sys/types.h>

#include "bpf/backstop.h" /* struct backstop_event, backstop_event_fn */
#include "base/error.h"

/* Approved files at most (the set is never emptied during a run). */
#define PTRACE_BACKSTOP_MAX_APPROVALS 32768

struct ptrace_backstop;

/* Fork the tracer. Call while this process has a single thread (the tracer is a plain fork).
 * On success *ret is owned by the caller (ptrace_backstop_free). */
int ptrace_backstop_start(struct ptrace_backstop **ret, struct cl_error *err);

/* Have the tracer seize PID (ours to trace: same uid, dumpable, not traced) and follow its
 * descendants. Call before PID execs or forks. Blocks until the tracer answers (bounded). */
int ptrace_backstop_seize(struct ptrace_backstop *pb, pid_t pid, struct cl_error *err);

/* Approve the file (ST_DEV, ST_INO as stat gives them) with its content's version V (a file
 * rewritten in place is another version, not approved). Idempotent. -E2BIG when the set is
 * full: the caller must deny the exec. */
int ptrace_backstop_allow(struct ptrace_backstop *pb, dev_t st_dev, ino_t st_ino,
                          const struct backstop_version *v);

/* The arguments the exec of thread TID (as this process's pid namespace numbers it: the
 * seccomp notification's pid) must have in its new image (see backstop_expect_args): an exec
 * of an approved file whose arguments differ, or with no expectation, is killed. Under the
 * key of ptrace_backstop_args_key. -EINVAL for a bad TID or mode. */
int ptrace_backstop_expect_args(struct ptrace_backstop *pb, pid_t tid,
                                const struct backstop_args *a);
void ptrace_backstop_args_key(const struct ptrace_backstop *pb, uint64_t ret_key[2]);

/* Readable (EPOLLIN) when kill reports wait; then ptrace_backstop_consume_events: events of
 * action BACKSTOP_KILLED, with error -errno when the file could not be inspected (killed all the
 * same). Returns the number consumed or -errno. */
int ptrace_backstop_events_fd(const struct ptrace_backstop *pb);
int ptrace_backstop_consume_events(struct ptrace_backstop *pb, backstop_event_fn fn,
                                   void *userdata);

/* "ptrace (kill at the exec stop, before the first instruction)" */
const char *ptrace_backstop_mode_name(void);

/* Kill the tracer (its tracees die with it, EXITKILL), reap it, unmap. NULL is fine. */
void ptrace_backstop_free(struct ptrace_backstop *pb);

#endif
