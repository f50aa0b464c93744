/* The exec backstop: closes the TOCTOU window of seccomp CONTINUE.
 *
 * The supervisor reads an exec's path from the agent's memory and answers CONTINUE; a second
 * thread of the agent can rewrite the path before the kernel reads it. So the supervisor also
 * records, per sandbox cgroup, the (device, inode, ctime, size) of every file it allowed, and
 * this program checks the file the kernel really executes against that set (a file rewritten
 * in place keeps its inode, not its ctime), for every task whose cgroup is a
 * registered sandbox or a descendant of one.
 *
 * Two programs, one loaded (the loader probes in this order):
 *   backstop_lsm   lsm/bprm_check_security: the exec fails with EPERM before anything runs.
 *                  Called for every stage of a #! chain, so scripts and interpreters are checked.
 *   backstop_exec  tp_btf/sched_process_exec: fires after the new image is set up, before the
 *                  return to user space; SIGKILL is then delivered on that return, so the new
 *                  image never runs an instruction. bprm->file is the final binary (the
 *                  interpreter of a #! script: binfmt_script swaps it in).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "bpf/backstop_abi.h"

#define EPERM   1
#define SIGKILL 9

char LICENSE[] SEC("license") = "GPL";

/* Registered sandbox cgroup ids (value unused, 1). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BACKSTOP_MAX_SANDBOXES);
	__type(key, __u64);
	__type(value, __u32);
} sandboxes SEC(".maps");

/* Approved files per sandbox (value unused, 1). Not preallocated: only the supervisor adds
 * entries (bpf(2), where allocating is fine), and preallocating 65536 entries took ~2 ms of
 * every run's start-up and their memory for a set that holds a few dozen files. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, BACKSTOP_MAX_APPROVALS);
	__type(key, struct backstop_abi_key);
	__type(value, __u32);
} approved SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, BACKSTOP_RINGBUF_BYTES);
} events SEC(".maps");

/* Events lost because the ring buffer was full (an exec storm); the supervisor reports it. */
__u64 events_dropped = 0;

/* A file as the approved set knows it: where it is and what it holds (see backstop_abi.h). */
struct file_id {
	__u64 ino;
	__u64 ctime_ns;
	__u64 size;
	__u32 dev;
};

static __always_inline void report(struct linux_binprm *bprm, __u64 sandbox,
                                   const struct file_id *f, __u32 action, __s32 error)
{
	struct backstop_abi_event *ev;
	const char *filename;

	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		__sync_fetch_and_add(&events_dropped, 1);
		return;
	}
	ev->sandbox_cgroup_id = sandbox;
	ev->cgroup_id = bpf_get_current_cgroup_id();
	ev->ino = f->ino;
	ev->ctime_ns = f->ctime_ns;
	ev->size = f->size;
	ev->dev = f->dev;
	ev->pid = bpf_get_current_pid_tgid() >> 32;
	ev->action = action;
	ev->error = error;
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
	filename = BPF_CORE_READ(bprm, filename);
	if (bpf_probe_read_kernel_str(ev->filename, sizeof(ev->filename), filename) < 0)
		ev->filename[0] = '\0';
	bpf_ringbuf_submit(ev, 0);
}

/* Returns the first registered sandbox (scanning from the root down) that has not approved
 * (dev, ino), 0 when every registered ancestor approved it or none is registered. Every
 * registered ancestor must approve: a sandbox nested in a sandbox answers to both. */
static __always_inline __u64 unapproved_sandbox(const struct file_id *f)
{
	struct backstop_abi_key key = {
	        .ino = f->ino, .ctime_ns = f->ctime_ns, .size = f->size, .dev = f->dev};

	for (int level = 1; level <= BACKSTOP_MAX_LEVELS; level++) {
		__u64 id = bpf_get_current_ancestor_cgroup_id(level);

		if (id == 0) /* deeper than the task's own cgroup */
			break;
		if (!bpf_map_lookup_elem(&sandboxes, &id))
			continue;
		key.cgroup_id = id;
		if (!bpf_map_lookup_elem(&approved, &key))
			return id;
	}
	return 0;
}

/* Kernels before 6.11 kept the ctime as one timespec64 (__i_ctime from 6.6, i_ctime before). */
struct inode___ts {
	struct timespec64 __i_ctime;
} __attribute__((preserve_access_index));
struct inode___old {
	struct timespec64 i_ctime;
} __attribute__((preserve_access_index));

/* Multigrain timestamps (6.13) keep a flag in the top bit of i_ctime_nsec (I_CTIME_QUERIED);
 * stat() masks it, so must we. */
#define CTIME_NSEC_MASK 0x7fffffffu

static __always_inline void file_id(struct file *file, struct file_id *f)
{
	struct inode *inode = BPF_CORE_READ(file, f_inode);
	__u64 sec, nsec;

	f->ino = BPF_CORE_READ(inode, i_ino);
	f->dev = BPF_CORE_READ(inode, i_sb, s_dev);
	f->size = BPF_CORE_READ(inode, i_size);
	if (bpf_core_field_exists(inode->i_ctime_sec)) {
		sec = BPF_CORE_READ(inode, i_ctime_sec);
		nsec = BPF_CORE_READ(inode, i_ctime_nsec) & CTIME_NSEC_MASK;
	} else if (bpf_core_field_exists(((struct inode___ts *)inode)->__i_ctime)) {
		sec = BPF_CORE_READ((struct inode___ts *)inode, __i_ctime.tv_sec);
		nsec = BPF_CORE_READ((struct inode___ts *)inode, __i_ctime.tv_nsec);
	} else {
		sec = BPF_CORE_READ((struct inode___old *)inode, i_ctime.tv_sec);
		nsec = BPF_CORE_READ((struct inode___old *)inode, i_ctime.tv_nsec);
	}
	f->ctime_ns = sec * 1000000000ull + nsec;
}

SEC("lsm/bprm_check_security")
int BPF_PROG(backstop_lsm, struct linux_binprm *bprm, int ret)
{
	struct file_id f;
	__u64 sandbox;

	if (ret)
		return ret;
	file_id(BPF_CORE_READ(bprm, file), &f);
	sandbox = unapproved_sandbox(&f);
	if (!sandbox)
		return 0;
	report(bprm, sandbox, &f, BACKSTOP_ABI_DENIED, -EPERM);
	return -EPERM;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(backstop_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct file_id f;
	__u64 sandbox;
	long err;

	file_id(BPF_CORE_READ(bprm, file), &f);
	sandbox = unapproved_sandbox(&f);
	if (!sandbox)
		return 0;
	err = bpf_send_signal(SIGKILL);
	report(bprm, sandbox, &f, err ? BACKSTOP_ABI_KILL_FAILED : BACKSTOP_ABI_KILLED, (__s32)err);
	return 0;
}
