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
 *
 * The arguments: the supervisor decided on the argv it read, which another thread of the agent
 * can rewrite before the kernel copies it. At sched_process_exec the new image's arguments are
 * in its own memory (mm->arg_start..arg_end), out of the old threads' reach: backstop_exec
 * hashes them (SipHash-2-4 under a key only the supervisor and this program know) and stops
 * the exec unless they are what the supervisor expected for the thread that called exec
 * (expect_slots, written before it let the exec through; consumed here). In LSM mode
 * backstop_exec is attached too, for this check only.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "bpf/backstop_abi.h"

#define EPERM   1
#define SIGKILL 9

char LICENSE[] SEC("license") = "GPL";

/* Registered sandbox cgroup ids → what is checked (BACKSTOP_ABI_SANDBOX_*). */
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

/* Set by the loader before load: the key of the argument hashes, and whether backstop_exec
 * checks the file too (tp_btf mode) or only the arguments (LSM mode). */
const volatile __u64 args_key[2] = {0, 0};
const volatile bool tp_checks_file = true;

/* Execs the supervisor let through → what their arguments must be: a table the loader maps
 * and writes without a system call (see struct backstop_abi_expect). */
struct backstop_abi_expect expect_slots[BACKSTOP_MAX_EXPECTED] = {};

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
                                   const struct file_id *f, __u32 action, __s32 error, __u32 why)
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
	ev->why = why;
	ev->pad = 0;
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
	filename = BPF_CORE_READ(bprm, filename);
	if (bpf_probe_read_kernel_str(ev->filename, sizeof(ev->filename), filename) < 0)
		ev->filename[0] = '\0';
	bpf_ringbuf_submit(ev, 0);
}

/* What the walks from the root down over the task's cgroup and its ancestors found. */
struct sandbox_walk {
	__u64 unapproved;   /* the first registered sandbox that has not approved the file, or 0 */
	__u64 args_sandbox; /* the first registered sandbox whose execs' arguments are checked */
	bool registered;    /* any registered sandbox at all */
	struct backstop_abi_key key;
};

/* bpf_loop callbacks, level LEVEL - 1 of the walks (0 goes on, 1 stops): callbacks, not loops,
 * because the verifier walks a callback once, where it walked a loop's body once per level and
 * what follows once per way the loop could end. */
static long find_registered(__u64 i, void *data)
{
	struct sandbox_walk *w = data;
	__u64 id = bpf_get_current_ancestor_cgroup_id((int)i + 1);
	__u32 *checks;

	if (id == 0) /* deeper than the task's own cgroup */
		return 1;
	checks = bpf_map_lookup_elem(&sandboxes, &id);
	if (!checks)
		return 0;
	w->registered = true;
	if (!(*checks & BACKSTOP_ABI_SANDBOX_ARGS))
		return 0;
	w->args_sandbox = id;
	return 1;
}

static long find_unapproved(__u64 i, void *data)
{
	struct sandbox_walk *w = data;
	__u64 id = bpf_get_current_ancestor_cgroup_id((int)i + 1);

	if (id == 0)
		return 1;
	if (!bpf_map_lookup_elem(&sandboxes, &id))
		return 0;
	w->key.cgroup_id = id;
	if (bpf_map_lookup_elem(&approved, &w->key))
		return 0;
	w->unapproved = id;
	return 1;
}

static __always_inline void file_id(struct file *file, struct file_id *f);

/* The first walk finds whether any ancestor is a registered sandbox: a task of no sandbox
 * (every other process of the machine) costs those few lookups and nothing more. Only then is
 * the file read and, with CHECK_FILE, checked against every registered ancestor (a sandbox
 * nested in a sandbox answers to both). */
static __always_inline void walk_sandboxes(struct file *file, bool check_file,
                                           struct sandbox_walk *w, struct file_id *f)
{
	bpf_loop(BACKSTOP_MAX_LEVELS, find_registered, w, 0);
	if (!w->registered)
		return;
	file_id(file, f);
	if (!check_file)
		return;
	w->key.ino = f->ino;
	w->key.ctime_ns = f->ctime_ns;
	w->key.size = f->size;
	w->key.dev = f->dev;
	bpf_loop(BACKSTOP_MAX_LEVELS, find_unapproved, w, 0);
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

/* Direct loads through the kernel's pointers (the verifier turns them into loads that cannot
 * fault), not bpf_probe_read_kernel calls: this runs on every exec of every sandboxed task. */
static __always_inline void file_id(struct file *file, struct file_id *f)
{
	struct inode *inode = file->f_inode;
	__u64 sec, nsec;

	f->ino = inode->i_ino;
	f->dev = inode->i_sb->s_dev;
	f->size = inode->i_size;
	if (bpf_core_field_exists(inode->i_ctime_sec)) {
		sec = inode->i_ctime_sec;
		nsec = inode->i_ctime_nsec & CTIME_NSEC_MASK;
	} else if (bpf_core_field_exists(((struct inode___ts *)inode)->__i_ctime)) {
		sec = ((struct inode___ts *)inode)->__i_ctime.tv_sec;
		nsec = ((struct inode___ts *)inode)->__i_ctime.tv_nsec;
	} else {
		sec = ((struct inode___old *)inode)->i_ctime.tv_sec;
		nsec = ((struct inode___old *)inode)->i_ctime.tv_nsec;
	}
	f->ctime_ns = sec * 1000000000ull + nsec;
}

SEC("lsm/bprm_check_security")
int BPF_PROG(backstop_lsm, struct linux_binprm *bprm, int ret)
{
	struct sandbox_walk w = {};
	struct file_id f = {};

	if (ret)
		return ret;
	walk_sandboxes(bprm->file, true, &w, &f);
	if (!w.unapproved)
		return 0;
	report(bprm, w.unapproved, &f, BACKSTOP_ABI_DENIED, -EPERM, BACKSTOP_ABI_WHY_FILE);
	return -EPERM;
}

/* ---- the arguments: SipHash-2-4, word by word (see supervisor/exec/args_digest.h) --------- */

struct sip {
	__u64 v0, v1, v2, v3;
};

#define ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

static __always_inline void sipround(struct sip *s)
{
	s->v0 += s->v1, s->v1 = ROTL(s->v1, 13), s->v1 ^= s->v0, s->v0 = ROTL(s->v0, 32);
	s->v2 += s->v3, s->v3 = ROTL(s->v3, 16), s->v3 ^= s->v2;
	s->v0 += s->v3, s->v3 = ROTL(s->v3, 21), s->v3 ^= s->v0;
	s->v2 += s->v1, s->v1 = ROTL(s->v1, 17), s->v1 ^= s->v2, s->v2 = ROTL(s->v2, 32);
}

static __always_inline void sip_block(struct sip *s, __u64 m)
{
	s->v3 ^= m;
	sipround(s);
	sipround(s);
	s->v0 ^= m;
}

#define CHUNK_WORDS (BACKSTOP_ARGS_CHUNK / 8)

struct hash_ctx {
	struct sip s;
	__u64 start; /* user address of the first byte */
	__u64 len;   /* bytes to hash */
	__u64 tail;  /* the last len % 8 bytes, little-endian */
	__u32 done;  /* words seen */
	__u32 failed;
	/* The chunk being hashed, read from the new image. On this program's stack, not in a
	 * per-CPU map that another exec preempting this one on the same CPU could overwrite
	 * between the read and the hashing. */
	__u64 buf[CHUNK_WORDS];
};

/* bpf_loop callback: word I of the arguments (the chunk holding it is read at its first word).
 * 0 goes on, 1 stops.
 *
 * One word per step and no loop inside: the verifier walks a callback until its states
 * converge, and walked a loop inside it once per word (a 4096-byte chunk cost ~690 000
 * instructions to verify, ~0.5 s of every run's start). */
static long hash_word(__u64 i, void *data)
{
	struct hash_ctx *c = data;
	__u64 off = i * 8, n, w;

	if (off >= c->len) {
		c->failed = 1;
		return 1;
	}
	if (i % CHUNK_WORDS == 0) {
		n = c->len - off;
		if (n > BACKSTOP_ARGS_CHUNK)
			n = BACKSTOP_ARGS_CHUNK;
		if (bpf_probe_read_user(c->buf, n, (const void *)(c->start + off)) < 0) {
			c->failed = 1;
			return 1;
		}
	}
	w = c->buf[i % CHUNK_WORDS];
	n = c->len - off;
	if (n >= 8)
		sip_block(&c->s, w);
	else
		c->tail = w & ((1ull << (8 * n)) - 1);
	c->done++;
	return 0;
}

/* Take (and so consume: one exec, one check) what the supervisor expects of thread TID's exec.
 * False when there is nothing, or when the supervisor is rewriting its slot this very moment
 * (then the exec is stopped: fail closed). */
static __always_inline bool take_expected(__u32 tid, struct backstop_abi_args *ret)
{
	__u32 home = backstop_abi_expect_home(tid), found = BACKSTOP_MAX_EXPECTED;
	struct backstop_abi_expect *e;

	/* Every slot of the window, no early exit: the verifier then walks what follows once for
	 * "found" and once for "not found", not once per slot it could be found at. */
	for (__u32 k = 0; k < BACKSTOP_EXPECT_WINDOW; k++) {
		__u32 slot = (home + k) & (BACKSTOP_MAX_EXPECTED - 1);

		if (*(volatile __u64 *)&expect_slots[slot].tid == tid)
			found = slot;
	}
	if (found >= BACKSTOP_MAX_EXPECTED)
		return false;
	e = &expect_slots[found];
	/* Held: the supervisor cannot reuse the slot while we copy it. */
	if (__sync_val_compare_and_swap(&e->tid, (__u64)tid, BACKSTOP_EXPECT_BUSY) != tid)
		return false;
	*ret = e->args;
	__sync_lock_test_and_set(&e->tid, 0);
	return true;
}

/* BACKSTOP_ABI_WHY_* when the new image's arguments are not what the supervisor expected for
 * the thread OLD_PID that called exec, -1 when they are. */
static __always_inline int args_mismatch(struct task_struct *p, pid_t old_pid)
{
	struct hash_ctx c = {};
	struct backstop_abi_args want;
	__u64 a, z, h;
	__u32 words;
	struct mm_struct *mm;

	if (!take_expected((__u32)old_pid, &want))
		return BACKSTOP_ABI_WHY_NO_ARGS;
	if (want.mode == BACKSTOP_ABI_ARGS_ANY)
		return -1;
	mm = p->mm;
	a = mm->arg_start;
	z = mm->arg_end;
	if (z < a || want.len > BACKSTOP_ARGS_MAX)
		return BACKSTOP_ABI_WHY_ARGS;
	c.start = a;
	switch (want.mode) {
	case BACKSTOP_ABI_ARGS_FULL:
		if (z - a != want.len)
			return BACKSTOP_ABI_WHY_ARGS;
		break;
	case BACKSTOP_ABI_ARGS_PREFIX:
		if (z - a < want.len)
			return BACKSTOP_ABI_WHY_ARGS;
		break;
	case BACKSTOP_ABI_ARGS_SUFFIX: {
		char before = 0;

		if (z - a < want.len)
			return BACKSTOP_ABI_WHY_ARGS;
		c.start = z - want.len;
		/* At a string boundary: the suffix's first string is a whole one. */
		if (z - a > want.len &&
		    (bpf_probe_read_user(&before, 1, (const void *)(c.start - 1)) < 0 || before))
			return BACKSTOP_ABI_WHY_ARGS;
		break;
	}
	default:
		return BACKSTOP_ABI_WHY_ARGS;
	}
	c.len = want.len;
	c.s.v0 = args_key[0] ^ 0x736f6d6570736575ULL;
	c.s.v1 = args_key[1] ^ 0x646f72616e646f6dULL;
	c.s.v2 = args_key[0] ^ 0x6c7967656e657261ULL;
	c.s.v3 = args_key[1] ^ 0x7465646279746573ULL;
	words = (c.len + 7) / 8;
	/* Every word or no match: a loop that stopped early hashed only part of the arguments. */
	if (bpf_loop(words, hash_word, &c, 0) != words || c.failed || c.done != words)
		return BACKSTOP_ABI_WHY_ARGS;
	sip_block(&c.s, (c.len << 56) | c.tail);
	c.s.v2 ^= 0xff;
	sipround(&c.s);
	sipround(&c.s);
	sipround(&c.s);
	sipround(&c.s);
	h = c.s.v0 ^ c.s.v1 ^ c.s.v2 ^ c.s.v3;
	return h == want.hash ? -1 : BACKSTOP_ABI_WHY_ARGS;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(backstop_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct sandbox_walk w = {};
	struct file_id f = {};
	__u64 sandbox;
	int why;
	long err;

	walk_sandboxes(bprm->file, tp_checks_file, &w, &f);
	if (!w.registered)
		return 0;
	if (w.unapproved) {
		sandbox = w.unapproved;
		why = BACKSTOP_ABI_WHY_FILE;
	} else {
		sandbox = w.args_sandbox;
		if (!sandbox)
			return 0;
		why = args_mismatch(p, old_pid);
		if (why < 0)
			return 0;
	}
	err = bpf_send_signal(SIGKILL);
	report(bprm, sandbox, &f, err ? BACKSTOP_ABI_KILL_FAILED : BACKSTOP_ABI_KILLED, (__s32)err,
	       (__u32)why);
	return 0;
}
