/* What a child does between clone()/fork() and execve(), shared by every place that starts a
 * program (command.c on the host, shim_spawn.c inside a container).
 *
 * Only system calls: no allocation, no stdio, no locks, so these are safe in a CLONE_VM child
 * that shares its parent's memory until it execs. */
#ifndef CLOISTER_CHILD_SETUP_H
#define CLOISTER_CHILD_SETUP_H

/* Hand the program the default signal state: every disposition back to SIG_DFL (ignored ones
 * included, and glibc's internal signals 32 and 33, which its wrappers refuse to touch but a
 * parent may have left ignored: hence raw rt_sigaction), then an empty mask (the supervisor
 * blocks what its signalfd reads, and a mask survives execve). Dispositions go first, so a
 * signal unblocked here never runs one of the parent's handlers in the child. */
void child_setup_reset_signals(void);

/* Open RELATIVE (".", "a/b") below the absolute directory ROOT as an O_PATH | O_CLOEXEC
 * directory fd for fchdir(). It is resolved with RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, so
 * neither ".." nor a symlink (one the agent planted in its worktree, say) leads outside ROOT.
 * Returns the fd or -errno. */
int child_setup_open_beneath(const char *root, const char *relative);

/* clone(2) of a child that shares our memory while we wait for it (FLAGS has CLONE_VM and
 * CLONE_VFORK): FN(ARG) on STACK_TOP; with CLONE_PIDFD the pidfd goes to *PIDFD (else NULL).
 * The pid, or -1 and errno, as clone(). ThreadSanitizer's clone() runs its after-fork reset in
 * the child, which here is our own memory: every later access of ours would look unordered.
 * Under it, glibc's clone is called past the tool: the child runs while we wait, so to the
 * tool its steps are simply ours. */
int child_setup_clone_vm(int (*fn)(void *), void *stack_top, int flags, void *arg, int *pidfd);

#endif
