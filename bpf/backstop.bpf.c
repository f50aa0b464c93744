/* The exec backstop: closes the TOCTOU window of seccomp CONTINUE.
 *
 * The supervisor reads an exec's path from the agent's memory and answers CONTINUE; a second
 * thread of the agent can rewrite the path before the kernel reads it. So the supervisor also
 * records, per sandbox cgroup, the (device, inode) of every file it allowed, and this program
 * checks the file the kernel really executes against that set, for every task whose cgroup is a
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

static __always_inline void report(struct linux_binprm *bprm, __u64 sandbox, __u32 dev, __u64 ino,
                                   __u32 action, __s32 error)
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
	ev->ino = ino;
	ev->dev = dev;
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
static __always_inline __u64 unapproved_sandbox(__u32 dev, __u64 ino)
{
	struct backstop_abi_key key = {.ino = ino, .dev = dev};

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

static __always_inline void file_id(struct file *file, __u32 *dev, __u64 *ino)
{
	struct inode *inode = BPF_CORE_READ(file, f_inode);

	*ino = BPF_CORE_READ(inode, i_ino);
	*dev = BPF_CORE_READ(inode, i_sb, s_dev);
}

SEC("lsm/bprm_check_security")
int BPF_PROG(backstop_lsm, struct linux_binprm *bprm, int ret)
{
	__u64 sandbox, ino;
	__u32 dev;

	if (ret)
		return ret;
	file_id(BPF_CORE_READ(bprm, file), &dev, &ino);
	sandbox = unapproved_sandbox(dev, ino);
	if (!sandbox)
		return 0;
	report(bprm, sandbox, dev, ino, BACKSTOP_ABI_DENIED, -EPERM);
	return -EPERM;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(backstop_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u64 sandbox, ino;
	__u32 dev;
	long err;

	file_id(BPF_CORE_READ(bprm, file), &dev, &ino);
	sandbox = unapproved_sandbox(dev, ino);
	if (!sandbox)
		return 0;
	err = bpf_send_signal(SIGKILL);
	report(bprm, sandbox, dev, ino, err ? BACKSTOP_ABI_KILL_FAILED : BACKSTOP_ABI_KILLED,
	       (__s32)err);
	return 0;
}
