/* The supervisor's side of a seccomp listener: receive notifications and answer them.
 *
 * For an epoll loop: the listener fd (notifier_fd) polls readable when a notification waits;
 * then notifier_receive() does not block. Every notification must be answered exactly once
 * (notifier_continue or notifier_deny) or its process stays blocked until it dies. A target
 * that died meanwhile shows up as -ENOENT from any call here: that is normal, not a failure. */
#ifndef CLOISTER_NOTIFIER_NOTIFY_H
#define CLOISTER_NOTIFIER_NOTIFY_H

#include <linux/seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/cleanup.h"

/* Kernel ≥ 6.6; Debian 12's headers lack them. */
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

struct notifier;

/* Wrap a listener fd. Asks the kernel for its notification sizes and allocates the buffers
 * once, then turns on SYNC_WAKE_UP where the kernel has it (the answered process is woken on
 * this CPU: ~3.6 µs instead of ~83 µs per round trip on our VMs).
 * Returns 0 and *ret, which owns listener_fd from then on; -errno, and the caller still owns
 * listener_fd. */
int notifier_new(int listener_fd, struct notifier **ret);

/* Close the listener (every pending and future notified syscall of the target then fails with
 * ENOSYS: fail closed) and free. Accepts NULL. */
void notifier_free(struct notifier *n);
CL_DEFINE_TRIVIAL_CLEANUP(struct notifier *, notifier_free)

int notifier_fd(const struct notifier *n);

/* What exec reads need of the supervisor itself, looked up once by notifier_new instead of on
 * every exec: its /proc/self/fd as a directory fd (reading an fd's link or reopening an fd
 * through it skips walking "/proc/self/fd") and the identity of its root directory (the
 * supervisor never changes its root). */
struct notifier_own {
	int fd_dir; /* owned by the notifier: do not close; -EBADF when unknown */
	bool root_known;
	dev_t root_dev;
	ino_t root_ino;
};

/* Fill *ret for the calling process (our pid is known once, and again after a fork). In a process
 * forked after notifier_new nothing is known (fd_dir -EBADF, root_known false): the directory shows
 * its creator's fd table, and the caller must look things up itself. */
void notifier_own(const struct notifier *n, struct notifier_own *ret);

/* The hint resolve_exec_path_hinted() keeps for PATH: whether its last lookup went through a
 * symlink. A small table overwritten on collision; a wrong hint costs a syscall (and the
 * name's readlink), never a wrong answer. */
bool *notifier_resolve_hint(struct notifier *n, const char *path);

/* The facts of files recently executed (file_facts.h), owned by the notifier; NULL when it
 * could not be allocated (then nothing is kept). */
struct file_facts_table;
struct file_facts_table *notifier_file_facts(struct notifier *n);

/* The sandbox's own view (view.h) an exec's file is checked against, or NULL (the default): no
 * check. Not owned: it must outlive the notifier's reads. */
struct exec_view;
void notifier_set_view(struct notifier *n, struct exec_view *view);
struct exec_view *notifier_view(const struct notifier *n);

/* Declare that every target's root directory is the view's root, so that exec reads resolve
 * under it instead of opening /proc/PID/root for each exec (an openat, a fstat and a close).
 * True only when the filter refuses chroot, pivot_root, setns and new mount namespaces (no
 * --allow-nested-sandbox) and the view's root was opened by the sandbox's init after its filter
 * was in place and before any other process of the sandbox ran: then no target can have
 * another root. Needs a view (notifier_set_view): -EINVAL without one. FIXED false goes back
 * to opening each target's root. */
int notifier_set_fixed_root(struct notifier *n, bool fixed);

/* The fixed root, when one is set: true with its fd (not owned: do not close) and, when it is
 * not the supervisor's own root, its name as /proc shows it from our root (NULL when it is our
 * root). */
bool notifier_fixed_root(const struct notifier *n, int *ret_fd, const char **ret_link);

/* Is SYNC_WAKE_UP on? */
bool notifier_sync_wake_up(const struct notifier *n);

/* Turn SYNC_WAKE_UP on or off. Returns 0; -EINVAL or -ENOTTY when the kernel lacks it. */
int notifier_set_sync_wake_up(struct notifier *n, bool on);

/* Receive one notification into *ret_req. Blocks when none is pending, so call it when the fd
 * polls readable. Returns 0; -ENOENT when the target died between the poll and now (nothing
 * to answer); -EINTR; other -errno. */
int notifier_receive(struct notifier *n, struct seccomp_notif *ret_req);

/* Is notification id still pending (its process alive and still in that syscall)?
 * 1 yes, 0 no, -errno on failure. */
int notifier_id_valid(const struct notifier *n, uint64_t id);

/* Let the syscall run (the kernel then does it as if unfiltered, re-reading its arguments).
 * Returns 0; -ENOENT when the target is gone (normal); other -errno. */
int notifier_continue(struct notifier *n, uint64_t id);

/* Fail the syscall with error (a positive errno, e.g. EACCES). Returns as notifier_continue. */
int notifier_deny(struct notifier *n, uint64_t id, int error);

/* Answer the syscall with a copy of our FD installed in the target (SECCOMP_IOCTL_NOTIF_ADDFD
 * with SECCOMP_ADDFD_FLAG_SEND, kernel ≥ 5.14): the syscall returns the new fd's number, as if
 * the target had opened it itself, atomically. CLOEXEC sets O_CLOEXEC on the target's fd.
 * Returns the target's fd number; -ENOENT when the target is gone; other -errno (the syscall
 * is then still pending: answer it otherwise). */
int notifier_answer_fd(struct notifier *n, uint64_t id, int fd, bool cloexec);

#endif
