/* Loader of the exec backstop (backstop.bpf.c): probes the two implementations, owns the maps
 * and the ring buffer of events. See backstop.h. */
#include "bpf/backstop.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/types.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf/backstop_abi.h"
#include "bpf/backstop.skel.h"
#include "base/cleanup.h"

_Static_assert(BACKSTOP_EVENT_COMM_LEN == BACKSTOP_COMM_LEN, "comm length");
_Static_assert(BACKSTOP_EVENT_FILENAME_LEN == BACKSTOP_FILENAME_LEN, "filename length");
_Static_assert(BACKSTOP_ARGS_FULL == BACKSTOP_ABI_ARGS_FULL &&
                       BACKSTOP_ARGS_PREFIX == BACKSTOP_ABI_ARGS_PREFIX &&
                       BACKSTOP_ARGS_SUFFIX == BACKSTOP_ABI_ARGS_SUFFIX &&
                       BACKSTOP_ARGS_ANY == BACKSTOP_ABI_ARGS_ANY,
               "argument modes");
_Static_assert(BACKSTOP_WHY_FILE == BACKSTOP_ABI_WHY_FILE &&
                       BACKSTOP_WHY_ARGS == BACKSTOP_ABI_WHY_ARGS &&
                       BACKSTOP_WHY_NO_ARGS == BACKSTOP_ABI_WHY_NO_ARGS,
               "reasons");

struct backstop {
	struct backstop_bpf *skel;
	struct ring_buffer *rb;
	enum backstop_mode mode;
	/* The callback of the backstop_consume_events call in progress. */
	backstop_event_fn fn;
	void *userdata;
	/* The approvals known to be in the map (open addressing, cgroup_id 0 = empty slot), so
	 * that approving an already approved file costs no bpf(2) call: an exec-heavy agent runs
	 * the same few binaries over and over. Only this process writes the map; entries are
	 * added after the map update succeeded and the whole cache is dropped whenever an
	 * approval is taken back, so the cache never claims more than the map holds. */
	struct backstop_abi_key *cache;
	size_t cache_cap; /* a power of two, or 0 */
	size_t cache_used;
	uint64_t args_key[2];  /* also in the program's rodata */
	uint64_t expect_clock; /* stamps the expectations written (backstop_expect_args) */
};

static void cache_clear(struct backstop *b);

/* libbpf has one global print callback without user data: while probing, keep one warning so
 * that an error message can say why a mode did not load — the first one about a program if
 * there is one (the others are mostly libbpf's generic hints). */
static char probe_msg[256];
static bool probe_msg_names_prog;

static int probe_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char msg[sizeof(probe_msg)];
	bool names_prog;

	if (level != LIBBPF_WARN || probe_msg_names_prog)
		return 0;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	names_prog = strstr(msg, "prog '") != NULL;
	if (probe_msg[0] == '\0' || names_prog) {
		memcpy(probe_msg, msg, sizeof(probe_msg));
		probe_msg_names_prog = names_prog;
	}
	return 0;
}

static const char *mode_names[] = {
        [BACKSTOP_MODE_LSM] = "lsm (deny before exec)",
        [BACKSTOP_MODE_TP_BTF] = "tp_btf + SIGKILL (kill before first instruction)",
};

/* Load only the program of mode and attach it. On failure, why says what failed. */
static int backstop_try_mode(enum backstop_mode mode, const uint64_t key[2],
                             struct backstop_bpf **ret_skel, char *why, size_t why_len)
{
	struct backstop_bpf *skel;
	struct bpf_program *prog;
	struct bpf_link *link;
	int r;

	probe_msg[0] = '\0';
	probe_msg_names_prog = false;
	skel = backstop_bpf__open();
	if (!skel) {
		r = -errno;
		snprintf(why, why_len, "open: %s", strerror(-r));
		return r;
	}
	bpf_program__set_autoload(skel->progs.backstop_lsm, mode == BACKSTOP_MODE_LSM);
	/* Loaded in both modes: in LSM mode it checks the arguments only. */
	skel->rodata->tp_checks_file = mode == BACKSTOP_MODE_TP_BTF;
	skel->rodata->args_key[0] = key[0];
	skel->rodata->args_key[1] = key[1];
	r = backstop_bpf__load(skel);
	if (r < 0) {
		snprintf(why, why_len, "load: %s%s%s", strerror(-r), probe_msg[0] ? " — " : "",
		         probe_msg);
		backstop_bpf__destroy(skel);
		return r;
	}
	prog = mode == BACKSTOP_MODE_LSM ? skel->progs.backstop_lsm : skel->progs.backstop_exec;
	link = bpf_program__attach(prog);
	if (!link) {
		r = -errno;
		snprintf(why, why_len, "attach: %s%s%s", strerror(-r), probe_msg[0] ? " — " : "",
		         probe_msg);
		backstop_bpf__destroy(skel);
		return r;
	}
	/* Owned by the skeleton from here: __destroy detaches it. */
	if (mode == BACKSTOP_MODE_LSM)
		skel->links.backstop_lsm = link;
	else
		skel->links.backstop_exec = link;
	if (mode == BACKSTOP_MODE_LSM) {
		link = bpf_program__attach(skel->progs.backstop_exec);
		if (!link) {
			r = -errno;
			snprintf(why, why_len, "attach (arguments): %s", strerror(-r));
			backstop_bpf__destroy(skel);
			return r;
		}
		skel->links.backstop_exec = link;
	}
	*ret_skel = skel;
	return 0;
}

/* The kernel's own BTF, straight from the kernel (one bpf(2) copy, where reading
 * /sys/kernel/btf/vmlinux takes a thousand 4 KiB reads). NULL when there is none. */
static struct btf *kernel_vmlinux_btf(void)
{
	__u32 id = 0;

	while (bpf_btf_get_next_id(id, &id) == 0) {
		struct bpf_btf_info info;
		char name[16] = "";
		__u32 len = sizeof(info);
		int fd = bpf_btf_get_fd_by_id(id);
		bool vmlinux;

		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		info.name = (__u64)(uintptr_t)name;
		info.name_len = sizeof(name);
		vmlinux = bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && info.kernel_btf &&
		          strcmp(name, "vmlinux") == 0;
		close(fd);
		if (vmlinux)
			return btf__load_from_kernel_by_id(id);
	}
	return NULL;
}

/* Whether the kernel takes an LSM program on bprm_check_security: a two-instruction one
 * ("return 0"), never attached. Loading the skeleton to find out costs a full parse of the
 * kernel's BTF by libbpf, which the tp_btf attempt would then repeat (measured here: LSM
 * programs fail with EPERM, ~15 ms wasted per run). 0 when it loads, else a negative errno;
 * -ENOENT when the hook cannot be found (then the skeleton attempt decides). */
static int probe_lsm(void)
{
	const struct bpf_insn insns[] = {
	        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
	        {.code = BPF_JMP | BPF_EXIT},
	};
	struct btf *btf = kernel_vmlinux_btf();
	int id, fd, r;

	if (!btf)
		return -ENOENT;
	id = btf__find_by_name_kind(btf, "bpf_lsm_bprm_check_security", BTF_KIND_FUNC);
	btf__free(btf);
	if (id <= 0)
		return -ENOENT;
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_LSM_MAC,
	            .attach_btf_id = (__u32)id);
	fd = bpf_prog_load(BPF_PROG_TYPE_LSM, "backstop_probe", "GPL", insns, ELEMENTSOF(insns),
	                   &opts);
	if (fd < 0)
		return -errno;
	r = 0;
	close(fd);
	return r;
}

static int on_ringbuf_event(void *ctx, void *data, size_t size)
{
	struct backstop *b = ctx;
	const struct backstop_abi_event *e = data;
	struct backstop_event ev = {0};

	if (size < sizeof(*e) || !b->fn)
		return 0;
	ev.pid = (pid_t)e->pid;
	ev.sandbox_cgroup_id = e->sandbox_cgroup_id;
	ev.cgroup_id = e->cgroup_id;
	ev.st_dev = backstop_dev_from_kernel(e->dev);
	ev.st_ino = (ino_t)e->ino;
	ev.ctime_ns = e->ctime_ns;
	ev.size = e->size;
	ev.action = (enum backstop_action)e->action;
	ev.why = (enum backstop_why)e->why;
	ev.error = e->error;
	memcpy(ev.comm, e->comm, sizeof(ev.comm));
	ev.comm[sizeof(ev.comm) - 1] = '\0';
	memcpy(ev.filename, e->filename, sizeof(ev.filename));
	ev.filename[sizeof(ev.filename) - 1] = '\0';
	return b->fn(&ev, b->userdata);
}

int backstop_open(struct backstop **ret, struct cl_error *err)
{
	static const enum backstop_mode order[] = {BACKSTOP_MODE_LSM, BACKSTOP_MODE_TP_BTF};
	char why[ELEMENTSOF(order)][384];
	struct backstop_bpf *skel = NULL;
	libbpf_print_fn_t saved_print;
	enum backstop_mode mode = 0;
	struct backstop *b;
	uint64_t key[2];
	int r = -ENOSYS;

	if (getrandom(key, sizeof(key), 0) != sizeof(key))
		return cl_error_set(err, -EIO, "exec backstop: getrandom failed");
	saved_print = libbpf_set_print(probe_print);
	/* A kernel that refuses even the smallest LSM program: tp_btf first, and the LSM
	 * skeleton only if tp_btf fails too (the probe is a hint, never the last word). */
	int lsm = probe_lsm();
	/* Only a refusal counts, not a passing failure (ENOMEM): that would downgrade us. */
	bool lsm_refused = lsm == -EPERM || lsm == -EINVAL || lsm == -EOPNOTSUPP;

	for (size_t i = 0; i < ELEMENTSOF(order); i++)
		why[i][0] = '\0';
	if (lsm_refused)
		snprintf(why[0], sizeof(why[0]), "probe: %s (not tried)", strerror(-lsm));
	for (size_t k = 0; k < ELEMENTSOF(order) + 1; k++) {
		/* k: LSM, tp_btf, then LSM again only after a refused probe. */
		size_t i = k % ELEMENTSOF(order);

		if (k == ELEMENTSOF(order) && !lsm_refused)
			break;
		if (k == 0 && lsm_refused)
			continue;
		r = backstop_try_mode(order[i], key, &skel, why[i], sizeof(why[i]));
		if (r >= 0) {
			mode = order[i];
			break;
		}
	}
	libbpf_set_print(saved_print);
	if (r == -EPERM && geteuid() != 0)
		return cl_error_set(err, r,
		                    "exec backstop unavailable: loading BPF programs needs root "
		                    "(CAP_BPF and CAP_PERFMON)");
	if (r < 0)
		return cl_error_set(err, r, "exec backstop unavailable: lsm: %s; tp_btf: %s",
		                    why[0], why[1]);

	b = calloc(1, sizeof(*b));
	if (!b) {
		backstop_bpf__destroy(skel);
		return cl_error_set(err, -ENOMEM, "exec backstop: out of memory");
	}
	b->skel = skel;
	b->mode = mode;
	b->args_key[0] = key[0];
	b->args_key[1] = key[1];
	b->rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_ringbuf_event, b, NULL);
	if (!b->rb) {
		r = -errno;
		backstop_free(b);
		return cl_error_set(err, r, "exec backstop: ring buffer: %s", strerror(-r));
	}
	*ret = b;
	return 0;
}

void backstop_free(struct backstop *b)
{
	if (!b)
		return;
	ring_buffer__free(b->rb);
	backstop_bpf__destroy(b->skel);
	cache_clear(b);
	free(b);
}

enum backstop_mode backstop_mode(const struct backstop *b)
{
	return b->mode;
}

const char *backstop_mode_name(const struct backstop *b)
{
	return mode_names[b->mode];
}

int backstop_add_sandbox_checks(struct backstop *b, uint64_t cgroup_id, bool args)
{
	__u64 key = cgroup_id;
	__u32 checks = BACKSTOP_ABI_SANDBOX_FILES | (args ? BACKSTOP_ABI_SANDBOX_ARGS : 0);

	if (cgroup_id == 0)
		return -EINVAL;
	return bpf_map_update_elem(bpf_map__fd(b->skel->maps.sandboxes), &key, &checks, BPF_ANY);
}

int backstop_add_sandbox(struct backstop *b, uint64_t cgroup_id)
{
	return backstop_add_sandbox_checks(b, cgroup_id, true);
}

int backstop_remove_sandbox(struct backstop *b, uint64_t cgroup_id)
{
	int approved_fd = bpf_map__fd(b->skel->maps.approved);
	struct backstop_abi_key cur, next;
	__u64 key = cgroup_id;
	bool have;
	int r, removed;

	cache_clear(b);
	/* Stop the checks first, so that no exec is killed for an approval already dropped. */
	removed = bpf_map_delete_elem(bpf_map__fd(b->skel->maps.sandboxes), &key);
	if (removed < 0 && removed != -ENOENT)
		return removed;

	/* Fetch the next key before deleting the current one: iteration stays valid. */
	have = bpf_map_get_next_key(approved_fd, NULL, &cur) == 0;
	while (have) {
		have = bpf_map_get_next_key(approved_fd, &cur, &next) == 0;
		if (cur.cgroup_id == cgroup_id) {
			r = bpf_map_delete_elem(approved_fd, &cur);
			if (r < 0 && r != -ENOENT)
				return r;
		}
		cur = next;
	}
	return removed;
}

static size_t cache_slot(const struct backstop_abi_key *key, size_t cap)
{
	uint64_t h = key->cgroup_id * 0x9e3779b97f4a7c15ULL;

	h ^= key->ino + 0x7f4a7c159e3779b9ULL + (h << 6) + (h >> 2);
	h ^= (uint64_t)key->dev * 0xc2b2ae3d27d4eb4fULL;
	h ^= (key->ctime_ns ^ key->size * 0x9e3779b97f4a7c15ULL) * 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 29;
	return (size_t)h & (cap - 1);
}

static bool cache_has(const struct backstop *b, const struct backstop_abi_key *key)
{
	if (b->cache_cap == 0)
		return false;
	for (size_t i = cache_slot(key, b->cache_cap);; i = (i + 1) & (b->cache_cap - 1)) {
		const struct backstop_abi_key *k = &b->cache[i];

		if (k->cgroup_id == 0)
			return false;
		if (k->cgroup_id == key->cgroup_id && k->ino == key->ino && k->dev == key->dev &&
		    k->ctime_ns == key->ctime_ns && k->size == key->size)
			return true;
	}
}

static void cache_insert(struct backstop_abi_key *cache, size_t cap,
                         const struct backstop_abi_key *key)
{
	size_t i = cache_slot(key, cap);

	while (cache[i].cgroup_id != 0)
		i = (i + 1) & (cap - 1);
	cache[i] = *key;
}

/* Best effort: without memory the next approval of this file just updates the map again. */
static void cache_add(struct backstop *b, const struct backstop_abi_key *key)
{
	/* At most half full, so that probes stay short and always end at an empty slot. */
	if ((b->cache_used + 1) * 2 > b->cache_cap) {
		size_t cap = b->cache_cap ? b->cache_cap * 2 : 64;
		struct backstop_abi_key *grown;

		/* The map holds at most BACKSTOP_MAX_APPROVALS: never more in the cache. */
		if (b->cache_used >= BACKSTOP_MAX_APPROVALS)
			return;
		grown = calloc(cap, sizeof(*grown));
		if (!grown)
			return;
		for (size_t i = 0; i < b->cache_cap; i++)
			if (b->cache[i].cgroup_id != 0)
				cache_insert(grown, cap, &b->cache[i]);
		free(b->cache);
		b->cache = grown;
		b->cache_cap = cap;
	}
	cache_insert(b->cache, b->cache_cap, key);
	b->cache_used++;
}

static void cache_clear(struct backstop *b)
{
	free(b->cache);
	b->cache = NULL;
	b->cache_cap = 0;
	b->cache_used = 0;
}

static int approval_key(uint64_t cgroup_id, dev_t st_dev, ino_t st_ino,
                        const struct backstop_version *v, struct backstop_abi_key *ret_key)
{
	uint32_t kdev;
	int r;

	if (cgroup_id == 0)
		return -EINVAL;
	r = backstop_dev_to_kernel(st_dev, &kdev);
	if (r < 0)
		return r;
	/* Padding included: the kernel hashes the key byte for byte. */
	memset(ret_key, 0, sizeof(*ret_key));
	ret_key->cgroup_id = cgroup_id;
	ret_key->dev = kdev;
	ret_key->ino = st_ino;
	ret_key->ctime_ns = v->ctime_ns;
	ret_key->size = v->size;
	return 0;
}

int backstop_allow(struct backstop *b, uint64_t cgroup_id, dev_t st_dev, ino_t st_ino,
                   const struct backstop_version *v)
{
	struct backstop_abi_key key;
	__u32 one = 1;
	int r;

	r = approval_key(cgroup_id, st_dev, st_ino, v, &key);
	if (r < 0)
		return r;
	if (cache_has(b, &key))
		return 0;
	r = bpf_map_update_elem(bpf_map__fd(b->skel->maps.approved), &key, &one, BPF_ANY);
	if (r < 0)
		return r;
	cache_add(b, &key);
	return 0;
}

int backstop_revoke(struct backstop *b, uint64_t cgroup_id, dev_t st_dev, ino_t st_ino,
                    const struct backstop_version *v)
{
	struct backstop_abi_key key;
	int r;

	r = approval_key(cgroup_id, st_dev, st_ino, v, &key);
	if (r < 0)
		return r;
	cache_clear(b);
	return bpf_map_delete_elem(bpf_map__fd(b->skel->maps.approved), &key);
}

/* Take slot E from the value SEEN for this writer (compare-and-swap of its tid: the program may
 * be taking it at the same moment). */
static bool expect_claim(struct backstop_abi_expect *e, uint64_t seen)
{
	return seen != BACKSTOP_EXPECT_BUSY &&
	       __atomic_compare_exchange_n(&e->tid, &seen, BACKSTOP_EXPECT_BUSY, false,
	                                   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* A plain store into the table the program reads (no bpf(2) call: this runs once per exec the
 * supervisor lets through). The slot: the thread's own (a newer expectation replaces an older
 * one), else a free one, else the oldest of the window. */
int backstop_expect_args(struct backstop *b, pid_t tid, const struct backstop_args *a)
{
	struct backstop_abi_expect *slots = b->skel->bss->expect_slots, *e = NULL;
	uint64_t t = (uint64_t)tid;
	uint32_t home;

	if (tid <= 0 || a->mode < BACKSTOP_ARGS_FULL || a->mode > BACKSTOP_ARGS_ANY ||
	    a->len > BACKSTOP_ARGS_MAX)
		return -EINVAL;
	home = backstop_abi_expect_home((uint32_t)tid);
	/* A few tries: each loses only to the program taking a slot, or to another thread of
	 * this process claiming it, both brief. */
	for (int attempt = 0; attempt < 4 && !e; attempt++) {
		struct backstop_abi_expect *own = NULL, *free_slot = NULL, *oldest = NULL;
		uint64_t oldest_age = 0;

		for (uint32_t k = 0; k < BACKSTOP_EXPECT_WINDOW; k++) {
			struct backstop_abi_expect *s =
			        &slots[(home + k) & (BACKSTOP_MAX_EXPECTED - 1)];
			uint64_t v = __atomic_load_n(&s->tid, __ATOMIC_RELAXED);
			uint64_t age = b->expect_clock - s->stamp;

			if (v == t)
				own = s;
			else if (v == 0 && !free_slot)
				free_slot = s;
			else if (v != BACKSTOP_EXPECT_BUSY && (!oldest || age > oldest_age)) {
				oldest = s;
				oldest_age = age;
			}
		}
		if (own && expect_claim(own, t))
			e = own;
		else if (!own && free_slot && expect_claim(free_slot, 0))
			e = free_slot;
		else if (!own && !free_slot && oldest)
			if (expect_claim(oldest, __atomic_load_n(&oldest->tid, __ATOMIC_RELAXED)))
				e = oldest;
	}
	if (!e)
		return -EBUSY;
	e->args = (struct backstop_abi_args){.hash = a->hash, .len = a->len, .mode = a->mode};
	e->stamp = __atomic_fetch_add(&b->expect_clock, 1, __ATOMIC_RELAXED);
	/* Release: the program that sees the tid sees the fields. */
	__atomic_store_n(&e->tid, t, __ATOMIC_RELEASE);
	return 0;
}

void backstop_args_key(const struct backstop *b, uint64_t ret_key[2])
{
	ret_key[0] = b->args_key[0];
	ret_key[1] = b->args_key[1];
}

int backstop_events_fd(const struct backstop *b)
{
	return ring_buffer__epoll_fd(b->rb);
}

int backstop_consume_events(struct backstop *b, backstop_event_fn fn, void *userdata)
{
	int r;

	b->fn = fn;
	b->userdata = userdata;
	r = ring_buffer__consume(b->rb);
	b->fn = NULL;
	b->userdata = NULL;
	return r;
}

uint64_t backstop_events_dropped(const struct backstop *b)
{
	return __atomic_load_n(&b->skel->bss->events_dropped, __ATOMIC_RELAXED);
}

int backstop_prog_stats(const struct backstop *b, uint64_t *ret_run_ns, uint64_t *ret_run_cnt)
{
	const struct bpf_program *prog = b->mode == BACKSTOP_MODE_LSM
	                                         ? b->skel->progs.backstop_lsm
	                                         : b->skel->progs.backstop_exec;
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	int r;

	memset(&info, 0, sizeof(info));
	r = bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len);
	if (r < 0)
		return r;
	*ret_run_ns = info.run_time_ns;
	*ret_run_cnt = info.run_cnt;
	return 0;
}

int backstop_verified_insns(const struct backstop *b, uint64_t *ret_insns)
{
	const struct bpf_program *progs[] = {b->skel->progs.backstop_exec,
	                                     b->skel->progs.backstop_lsm};
	uint64_t sum = 0;

	for (size_t i = 0; i < ELEMENTSOF(progs); i++) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(progs[i]), r;

		if (fd < 0) /* not loaded in this mode */
			continue;
		memset(&info, 0, sizeof(info));
		r = bpf_obj_get_info_by_fd(fd, &info, &len);
		if (r < 0)
			return r;
		if (info.verified_insns == 0)
			return -EOPNOTSUPP;
		sum += info.verified_insns;
	}
	*ret_insns = sum;
	return 0;
}

int backstop_dev_to_kernel(dev_t st_dev, uint32_t *ret_kdev)
{
	unsigned int maj = major(st_dev), min = minor(st_dev);

	/* The kernel's dev_t: 12 bits of major, 20 of minor. */
	if (maj >= (1U << 12) || min >= (1U << 20))
		return -EOVERFLOW;
	*ret_kdev = (maj << 20) | min;
	return 0;
}

dev_t backstop_dev_from_kernel(uint32_t kdev)
{
	return makedev(kdev >> 20, kdev & ((1U << 20) - 1));
}

int backstop_cgroup_id(const char *path, uint64_t *ret_id)
{
	union {
		struct file_handle fh;
		char buf[sizeof(struct file_handle) + 64];
	} h;
	struct statfs sfs;
	uint64_t id;
	int mount_id;

	if (statfs(path, &sfs) < 0)
		return -errno;
	if (sfs.f_type != CGROUP2_SUPER_MAGIC)
		return -EMEDIUMTYPE;
	/* On cgroup2 (kernfs) the file handle is the 64-bit cgroup id, the same id that
	 * bpf_get_current_cgroup_id returns. */
	h.fh.handle_bytes = sizeof(h.buf) - sizeof(struct file_handle);
	if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0) < 0)
		return -errno;
	if (h.fh.handle_bytes != sizeof(id))
		return -EPROTO;
	memcpy(&id, h.fh.f_handle, sizeof(id));
	*ret_id = id;
	return 0;
}

int backstop_file_id(int fd, pid_t mount_ns_pid, dev_t *ret_dev, ino_t *ret_ino)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	char path[64];
	struct statx stx;
	size_t cap = 0;

	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_INO | STATX_MNT_ID, &stx) <
	    0)
		return -errno;
	if (!(stx.stx_mask & STATX_MNT_ID))
		return -EOPNOTSUPP; /* kernel < 5.8 */
	if (mount_ns_pid > 0)
		snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)mount_ns_pid);
	else
		snprintf(path, sizeof(path), "/proc/self/mountinfo");
	f = fopen(path, "re");
	if (!f)
		return -errno;
	/* The fd pins its mount, so the id cannot be reused while we look; mountinfo's major:minor
	 * is the superblock's s_dev. */
	while (getline(&line, &cap, f) >= 0) {
		unsigned int id, maj, min;

		if (sscanf(line, "%u %*u %u:%u", &id, &maj, &min) != 3 || id != stx.stx_mnt_id)
			continue;
		*ret_dev = makedev(maj, min);
		*ret_ino = (ino_t)stx.stx_ino;
		return 0;
	}
	return -ENOENT;
}

/* Undo mountinfo's octal escapes (\040 for a space) in place. */
static void unescape_mountinfo(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

int backstop_cgroup2_mount(char **ret_path)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) >= 0) {
		/* id parent maj:min root mount-point options [optional…] - fstype source super */
		char *sep = strstr(line, " - ");
		char *fields[5], *save = NULL, *tok, *p;
		size_t n = 0;

		if (!sep)
			continue;
		if (strncmp(sep + 3, "cgroup2 ", 8) != 0)
			continue;
		*sep = '\0';
		for (tok = strtok_r(line, " ", &save); tok && n < ELEMENTSOF(fields);
		     tok = strtok_r(NULL, " ", &save))
			fields[n++] = tok;
		if (n < 5)
			continue;
		unescape_mountinfo(fields[4]);
		p = strdup(fields[4]);
		if (!p)
			return -ENOMEM;
		*ret_path = p;
		return 0;
	}
	return -ENOENT;
}
