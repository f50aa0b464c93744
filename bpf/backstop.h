/* The exec backstop: a BPF program that checks every exec of a task in a registered sandbox
 * cgroup (or any descendant cgroup of one) against the set of files approved for that sandbox,
 * and stops any other. It closes the TOCTOU of seccomp CONTINUE: the kernel may execute another
 * file than the one whose path the supervisor read.
 *
 *   backstop_open()            probe and load: BPF LSM (deny before the exec) where the kernel
 *                              allows it, else tp_btf + SIGKILL (kill before the new image runs
 *                              a single user-space instruction)
 *   backstop_add_sandbox()     start checking a cgroup (and its descendants)
 *   backstop_allow()           approve a file (as given by stat) for a sandbox
 *   backstop_events_fd()       epoll on it; then backstop_consume_events()
 *   backstop_remove_sandbox()  stop checking, forget its approvals
 *   backstop_free()            detach and unload everything
 *
 * Besides the file, the arguments: the supervisor says, per exec it lets through, what the
 * new image's arguments must be (backstop_expect_args); the kernel side checks them where the
 * old image's threads cannot reach them any more, and stops the exec on a mismatch. In LSM
 * mode that check is the tp_btf program's (the LSM hook runs before the new image exists).
 *
 * What must be approved: the file the exec names, and for a #! script its interpreter (each
 * one of a chain). In tp_btf mode only the final binary (the interpreter) is checked; in LSM
 * mode every stage is. Approvals are by (device, inode) and by what changes with the content
 * (ctime, size): a file replaced under its name is a new inode, a file rewritten in place a
 * new ctime, and either needs a new approval.
 *
 * libbpf's printing is silenced while probing (a failed probe is expected); the caller's
 * libbpf_set_print setting is restored afterwards. The process needs CAP_BPF/CAP_PERFMON
 * (root) for backstop_open. */
#ifndef CLOISTER_BACKSTOP_H
#define CLOISTER_BACKSTOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "base/error.h"

struct backstop;

enum backstop_mode {
	BACKSTOP_MODE_LSM = 1,    /* lsm/bprm_check_security returns -EPERM */
	BACKSTOP_MODE_TP_BTF = 2, /* tp_btf/sched_process_exec + bpf_send_signal(SIGKILL) */
};

enum backstop_action {
	BACKSTOP_DENIED = 1, /* LSM mode: the exec failed with EPERM */
	BACKSTOP_KILLED = 2, /* tp_btf mode: the process was killed before its first instruction */
	BACKSTOP_KILL_FAILED =
	        3, /* tp_btf mode: bpf_send_signal failed (error); the image may run */
};

/* What changes when a file is rewritten in place (its inode does not): the ctime, which
 * every write sets to the kernel's clock (a user cannot set it back), in ns since the epoch,
 * and the size. From statx/stat: backstop_stat_version(). */
struct backstop_version {
	uint64_t ctime_ns;
	uint64_t size;
};

static inline struct backstop_version backstop_stat_version(const struct stat *st)
{
	return (struct backstop_version){.ctime_ns = (uint64_t)st->st_ctim.tv_sec * 1000000000u +
	                                             (uint64_t)st->st_ctim.tv_nsec,
	                                 .size = (uint64_t)st->st_size};
}

/* What an approved exec's arguments must be in its new image (see
 * supervisor/exec/args_digest.h): a keyed hash of LEN bytes of mm->arg_start..arg_end, which
 * ones by MODE. */
enum backstop_args_mode {
	BACKSTOP_ARGS_FULL = 1,   /* the whole area */
	BACKSTOP_ARGS_PREFIX = 2, /* its first len bytes */
	BACKSTOP_ARGS_SUFFIX = 3, /* its last len bytes, from a string's start (#! scripts) */
	BACKSTOP_ARGS_ANY = 4,    /* nothing to compare (a script's argv the notifier cut) */
};

struct backstop_args {
	uint64_t hash;
	uint32_t len;
	uint32_t mode; /* enum backstop_args_mode */
};

/* Why an exec was stopped. */
enum backstop_why {
	BACKSTOP_WHY_FILE = 0,    /* the file executed was not approved (as it is now) */
	BACKSTOP_WHY_ARGS = 1,    /* its arguments are not those approved */
	BACKSTOP_WHY_NO_ARGS = 2, /* nothing approved this exec's arguments (no decision) */
};

#define BACKSTOP_EVENT_COMM_LEN     16
#define BACKSTOP_EVENT_FILENAME_LEN 128

struct backstop_event {
	pid_t pid;
	uint64_t sandbox_cgroup_id; /* the registered sandbox that had not approved the file */
	uint64_t cgroup_id;         /* the task's own cgroup: the sandbox or a descendant */
	dev_t st_dev;               /* user-space encoding, comparable with struct stat */
	ino_t st_ino;
	uint64_t ctime_ns; /* the file as it was executed (struct backstop_version) */
	uint64_t size;
	enum backstop_action action;
	enum backstop_why why;
	int error; /* BACKSTOP_KILL_FAILED: the negative errno of bpf_send_signal */
	char comm[BACKSTOP_EVENT_COMM_LEN];
	char filename[BACKSTOP_EVENT_FILENAME_LEN]; /* the name exec was given (may be truncated) */
};

/* Called once per event; a negative return stops consuming and is returned by
 * backstop_consume_events. */
typedef int (*backstop_event_fn)(const struct backstop_event *ev, void *userdata);

/* Load and attach the backstop, LSM first, then tp_btf. On success *ret is owned by the caller
 * (backstop_free). Fails (-errno, err says why for both modes) when neither loads. */
int backstop_open(struct backstop **ret, struct cl_error *err);

/* Detach every link, unload, free. Accepts NULL. */
void backstop_free(struct backstop *b);

enum backstop_mode backstop_mode(const struct backstop *b);
/* "lsm (deny before exec)" or "tp_btf + SIGKILL (kill before first instruction)". */
const char *backstop_mode_name(const struct backstop *b);

/* Start checking the execs of every task in cgroup_id (a cgroup2 id, see backstop_cgroup_id)
 * and in its descendants. The cgroup must sit at most 32 levels below the cgroup2 root.
 * Idempotent. -EINVAL for id 0, -E2BIG when 64 sandboxes are registered. */
int backstop_add_sandbox(struct backstop *b, uint64_t cgroup_id);
/* The same, checking the files only when !ARGS (for a test of the file check alone: nobody
 * then decides on arguments, backstop_expect_args). */
int backstop_add_sandbox_checks(struct backstop *b, uint64_t cgroup_id, bool args);

/* Stop checking cgroup_id and drop all its approvals. -ENOENT if it was not registered
 * (its approvals, if any, are dropped anyway). */
int backstop_remove_sandbox(struct backstop *b, uint64_t cgroup_id);

/* Approve the file (st_dev, st_ino: from backstop_file_id, or from struct stat where the file
 * system is neither overlayfs nor btrfs) with its content's version V for the sandbox. Idempotent;
 * approving again what is already approved costs no system call (the approvals are remembered in
 * this process: only backstop_allow/revoke/remove_sandbox may write the map). -E2BIG when the
 * approved set is full (65536 files in all sandboxes): the caller must then deny the exec.
 * -EOVERFLOW when st_dev has no kernel encoding (major >= 4096). */
int backstop_allow(struct backstop *b, uint64_t cgroup_id, dev_t st_dev, ino_t st_ino,
                   const struct backstop_version *v);

/* The identity of the file open at fd (O_PATH is enough) as the BPF program sees it: the device
 * of its superblock and its inode number. Use it instead of stat(): on overlayfs and btrfs,
 * st_dev is a per-layer / per-subvolume pseudo device, not the superblock's (measured: an
 * overlay file stats as 0:42 while the kernel executes it from 0:40), so a stat-based approval
 * would never match and every exec would be stopped. The device comes from the mountinfo of
 * mount_ns_pid (a process in the mount namespace fd was opened through, e.g. the agent when fd
 * was opened via /proc/PID/root; 0 for this process). -ENOENT if the mount is not listed there. */
int backstop_file_id(int fd, pid_t mount_ns_pid, dev_t *ret_dev, ino_t *ret_ino);

/* The arguments the exec of thread TID (a global thread id: the seccomp notification's pid
 * as root sees it) must have in its new image; an exec of a registered sandbox's task with
 * no such expectation is stopped too (fail closed: every exec is decided). Consumed by that
 * exec; a newer one for the same thread replaces it. No system call: a store into a table this
 * process shares with the program (1024 slots; a thread's expectation goes to one of the 8 of
 * its window, and when all 8 hold others' the oldest is dropped, its exec then stopped).
 * -EBUSY when the window stayed held by the program's own reads (then deny the exec). */
int backstop_expect_args(struct backstop *b, pid_t tid, const struct backstop_args *a);

/* The key of the argument hashes (random per backstop_open, never leaves this process and
 * the kernel). */
void backstop_args_key(const struct backstop *b, uint64_t ret_key[2]);

/* Withdraw one approval. -ENOENT if it was not approved. */
int backstop_revoke(struct backstop *b, uint64_t cgroup_id, dev_t st_dev, ino_t st_ino,
                    const struct backstop_version *v);

/* An fd that becomes readable (EPOLLIN) when events are waiting. Owned by b. */
int backstop_events_fd(const struct backstop *b);

/* Hand every waiting event to fn without blocking. Returns the number of events consumed, or
 * a negative errno (fn's, or the ring buffer's). */
int backstop_consume_events(struct backstop *b, backstop_event_fn fn, void *userdata);

/* Events lost since open because the ring buffer was full. */
uint64_t backstop_events_dropped(const struct backstop *b);

/* Run-time statistics of the attached program: total ns spent in it and number of runs. The
 * kernel counts only while statistics are enabled (sysctl kernel.bpf_stats_enabled, or an fd
 * from bpf_enable_stats(BPF_STATS_RUN_TIME) held open); otherwise both stay 0. */
int backstop_prog_stats(const struct backstop *b, uint64_t *ret_run_ns, uint64_t *ret_run_cnt);

/* Instructions the kernel's verifier walked to load the programs in use (what their load costs
 * every run's start: ~100 ns each here). -EOPNOTSUPP where the kernel does not say (< 5.16). */
int backstop_verified_insns(const struct backstop *b, uint64_t *ret_insns);

/* The kernel's internal dev_t encoding (MAJOR<<20 | MINOR, what the BPF program reads from
 * i_sb->s_dev) from user space's st_dev, and back. -EOVERFLOW if not representable. */
int backstop_dev_to_kernel(dev_t st_dev, uint32_t *ret_kdev);
dev_t backstop_dev_from_kernel(uint32_t kdev);

/* The cgroup2 id (what bpf_get_current_cgroup_id returns) of the cgroup directory at path.
 * -EMEDIUMTYPE if path is not on a cgroup2 file system. */
int backstop_cgroup_id(const char *path, uint64_t *ret_id);

/* The mount point of the cgroup2 hierarchy, from /proc/self/mountinfo (never assumed).
 * *ret_path is malloc'd. -ENOENT if cgroup2 is not mounted. */
int backstop_cgroup2_mount(char **ret_path);

#endif
