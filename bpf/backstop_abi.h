/* Structures and limits shared by backstop.bpf.c (the kernel side) and backstop.c (its loader).
 * Both sides include this file: keep it free of libc and of vmlinux.h, fixed-width types only.
 * Not part of the public API: callers use bpf/backstop.h. */
#ifndef CLOISTER_BACKSTOP_ABI_H
#define CLOISTER_BACKSTOP_ABI_H

/* Bounds of the maps. A full map is an error the loader returns; the supervisor then denies
 * the exec it was about to allow. */
#define BACKSTOP_MAX_SANDBOXES 64
#define BACKSTOP_MAX_APPROVALS 65536
/* cgroup2 levels scanned from the root for registered sandbox cgroups: a sandbox cgroup must
 * sit at most this deep; its descendants may sit at any depth (the scan is from the top). */
#define BACKSTOP_MAX_LEVELS    32
#define BACKSTOP_RINGBUF_BYTES (256 * 1024)
/* Execs let through, by thread, waiting for their new image: a table in memory the loader and
 * the program share (the program's .bss, mapped by the loader), so that recording one costs the
 * supervisor no system call. A thread's entry sits in one of BACKSTOP_EXPECT_WINDOW slots from
 * its home slot; when all are taken the oldest is reused (an exec that failed after the
 * supervisor let it through leaves its entry behind). 1024 slots (a power of 2): an entry lives
 * from the supervisor's answer to the exec's end, so few are in flight at once; and the table
 * is mapped in the supervisor (32 KiB of its resident memory). */
#define BACKSTOP_EXPECT_BITS   10
#define BACKSTOP_MAX_EXPECTED  (1u << BACKSTOP_EXPECT_BITS)
#define BACKSTOP_EXPECT_WINDOW 8
/* A slot's tid while one side holds it (writing it, or the program taking it): no thread has
 * this id (pid_max is at most 2^22). */
#define BACKSTOP_EXPECT_BUSY 0xffffffffffffffffull
/* Bytes of arguments hashed at most: the notifier reads 1 MiB at most (EXEC_MAX_ARGV_BYTES). */
#define BACKSTOP_ARGS_MAX (1024 * 1024)
/* Bytes of arguments read at once onto the BPF stack (a power of 2, at least 8). */
#define BACKSTOP_ARGS_CHUNK   256
#define BACKSTOP_COMM_LEN     16
#define BACKSTOP_FILENAME_LEN 128

/* What the kernel side did about an exec of a file not approved for its sandbox. */
enum backstop_abi_action {
	BACKSTOP_ABI_DENIED = 1,      /* lsm: execve failed with EPERM, nothing ran */
	BACKSTOP_ABI_KILLED = 2,      /* tp_btf: SIGKILL queued before the first instruction */
	BACKSTOP_ABI_KILL_FAILED = 3, /* tp_btf: bpf_send_signal failed (error says why) */
};

/* What a registered sandbox's execs are checked for (the sandboxes map's value). */
#define BACKSTOP_ABI_SANDBOX_FILES 1
#define BACKSTOP_ABI_SANDBOX_ARGS  2

/* Key of the approved set: a file (kernel dev encoding MAJOR<<20|MINOR, inode number) as it
 * was when approved (its ctime in ns, its size: what a rewrite in place changes) for one
 * sandbox cgroup. */
struct backstop_abi_key {
	__u64 cgroup_id;
	__u64 ino;
	__u64 ctime_ns;
	__u64 size;
	__u32 dev;
	__u32 pad; /* always 0: the key is hashed byte for byte */
};

/* What the exec of a thread must find as its new image's arguments (struct backstop_args). */
struct backstop_abi_args {
	__u64 hash;
	__u32 len;
	__u32 mode;
};

/* One slot of the table of expected arguments. tid is the lock: 0 free, a thread id (its
 * expectation is complete), or BACKSTOP_EXPECT_BUSY; each side takes a slot by
 * compare-and-swap of tid and gives it back with an atomic store, so the fields are only ever
 * read or written by the side holding the slot. */
struct backstop_abi_expect {
	__u64 tid;   /* 64 bits: BPF's compare-and-swap of 32 bits needs a newer -mcpu */
	__u64 stamp; /* when it was written (a counter of the writer's): the oldest is reused */
	struct backstop_abi_args args;
};

/* The first slot of thread TID's window (Fibonacci hashing: nearby thread ids spread). */
static inline __u32 backstop_abi_expect_home(__u32 tid)
{
	return (tid * 2654435761u) >> (32 - BACKSTOP_EXPECT_BITS);
}

#define BACKSTOP_ABI_ARGS_FULL   1
#define BACKSTOP_ABI_ARGS_PREFIX 2
#define BACKSTOP_ABI_ARGS_SUFFIX 3
#define BACKSTOP_ABI_ARGS_ANY    4

#define BACKSTOP_ABI_WHY_FILE    0
#define BACKSTOP_ABI_WHY_ARGS    1
#define BACKSTOP_ABI_WHY_NO_ARGS 2

struct backstop_abi_event {
	__u64 sandbox_cgroup_id; /* the registered sandbox whose approved set missed */
	__u64 cgroup_id;         /* the task's own cgroup (the sandbox or a descendant) */
	__u64 ino;
	__u64 ctime_ns;
	__u64 size;
	__u32 dev; /* kernel encoding */
	__u32 pid; /* thread group id */
	__u32 action;
	__s32 error;
	__u32 why; /* enum backstop_why */
	__u32 pad;
	char comm[BACKSTOP_COMM_LEN];
	char filename[BACKSTOP_FILENAME_LEN]; /* bprm->filename: the name exec was given */
};

#endif
