/* The seccomp filter a sandboxed process installs on itself just before it execs the agent.
 *
 *   execve, execveat              → USER_NOTIF (the supervisor decides)
 *   connect                       → USER_NOTIF only with opts.notify_connect (attribution)
 *   open, openat with a flag that writes (O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_TMPFILE), creat
 *                                 → USER_NOTIF only with opts.notify_open_write (the ask for
 *                                   writes outside fs.write); reads never reach the supervisor
 *                                   (an O_PATH open with a write bit does: the bits are tested
 *                                   one at a time, and the supervisor continues it)
 *                                   openat2 → ENOSYS then: its flags sit in memory a filter
 *                                   cannot read, and libc's open never uses it (callers that do
 *                                   fall back to openat); not with opts.open_write_tell_only
 *   io_uring_setup/enter/register → ENOSYS (io_uring runs syscalls that seccomp never sees)
 *   userfaultfd, ioctl(USERFAULTFD_IOC_NEW) → ENOSYS (it would let the agent stall our reads
 *                                   of its memory)
 *   ioctl(TIOCSTI), ioctl(TIOCLINUX) → EPERM (typing into a terminal's input)
 *   (ioctl requests are compared on their low 32 bits, as the kernel reads them)
 *   seccomp(SET_MODE_FILTER) with NEW_LISTENER → EPERM (a nested listener would receive the
 *                                   agent's execs in our place: the newest filter wins a tie)
 *   unshare, clone with a CLONE_NEW* flag; mount, umount2, move_mount, open_tree, fsopen,
 *   fsconfig, fsmount, fspick, mount_setattr, pivot_root, chroot, setns → EPERM (a private
 *                                   mount or user namespace would let the agent change what a
 *                                   path means to the policy, or undo the sandbox's mounts);
 *                                   opts.allow_nested_sandbox lifts these for agents that
 *                                   sandbox their own tools (bubblewrap)
 *   clone3                        → ENOSYS (its flags sit in memory a filter cannot read; libc
 *                                   falls back to clone, whose flags are a register)
 *   open_by_handle_at             → EPERM (opens files by handle, past every mount)
 *   keyctl, add_key, request_key  → EPERM (the kernel keyrings are not namespaced: the user's
 *                                   own keys would be readable)
 *   socket(AF_PACKET)             → EPERM (link-layer frames bypass every egress rule)
 *   socket, socketpair in any family but AF_UNIX, AF_INET, AF_INET6, AF_NETLINK → EAFNOSUPPORT
 *                                   (an allow-list: AF_VSOCK reaches a VM's host past the
 *                                   proxy, and no agent needs the rest)
 *   any foreign syscall ABI (i386 via int 0x80, x32) → KILL_PROCESS
 *   with opts.refuse_untraced: clone(CLONE_UNTRACED) → EPERM (clone3 is refused above; libc falls
 *                                   back to clone): a process the ptrace exec backstop would
 *                                   not follow
 *
 * libseccomp compiles the program; we load it ourselves with seccomp(2) so that flags libseccomp
 * 2.5.4 does not know (WAIT_KILLABLE_RECV) can be used where the kernel has them. */
#ifndef CLOISTER_NOTIFIER_FILTER_H
#define CLOISTER_NOTIFIER_FILTER_H

#include <stdbool.h>

/* Debian 12's <linux/seccomp.h> predates some of these. */
#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_FILTER_FLAG_TSYNC_ESRCH
#define SECCOMP_FILTER_FLAG_TSYNC_ESRCH (1UL << 4)
#endif
#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif

struct notifier_filter_opts {
	bool notify_connect;        /* also notify connect(2); off by default */
	bool notify_open_write;     /* also notify opens that ask for writing (see above) */
	bool open_write_tell_only;  /* with it: the supervisor only tells why the kernel refused
	                             * (fs.ask: off), so openat2 stays allowed: it would be
	                             * unseen, not unchecked */
	bool no_wait_killable;      /* do not use WAIT_KILLABLE_RECV even where the kernel has it */
	bool allow_nested_listener; /* do not refuse seccomp(NEW_LISTENER) to the agent */
	bool tsync;                /* apply to all threads (TSYNC|TSYNC_ESRCH); the launcher's child
	                            * is single-threaded and does not need it */
	bool refuse_untraced;      /* the ptrace backstop is on: no child may escape it */
	bool allow_nested_sandbox; /* the agent may make user and mount namespaces of its own and
	                            * mount (run --allow-nested-sandbox; see above); the identity
	                            * check then holds alone */
};

struct notifier_filter_info {
	unsigned long flags;     /* SECCOMP_FILTER_FLAG_* passed to the kernel */
	bool wait_killable_recv; /* WAIT_KILLABLE_RECV is among them */
	bool no_new_privs;       /* we set NO_NEW_PRIVS (the process lacked CAP_SYS_ADMIN) */
};

/* Does this kernel accept these seccomp filter flags? 1 yes, 0 no, -errno when unknowable.
 * Has no effect on the calling process. */
int notifier_filter_flags_supported(unsigned long flags);

/* Install the filter on the calling process (opts may be NULL for the defaults). Sets
 * NO_NEW_PRIVS first when the process lacks CAP_SYS_ADMIN in its user namespace (the kernel
 * requires one of them). Returns 0, the new listener fd (O_CLOEXEC) in *ret_listener_fd and
 * what was used in *ret_info (may be NULL); -errno on failure, with no filter installed
 * (NO_NEW_PRIVS may have been set). */
int notifier_filter_install(const struct notifier_filter_opts *opts,
                            struct notifier_filter_info *ret_info, int *ret_listener_fd);

#endif
