/* The exec backstop without root: a tracer process; see ptrace_backstop.h. */
#include "supervisor/exec/ptrace_backstop.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/child_setup.h"
#include "supervisor/exec/args_digest.h"

/* Open addressing at most half full: short probes, always ending at an empty slot. */
#define SLOTS         (2 * PTRACE_BACKSTOP_MAX_APPROVALS)
#define SEIZE_WAIT_MS 5000
#define TRACER_SOCK   3

#define TRACE_OPTIONS                                                                          \
	(PTRACE_O_TRACEEXEC | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | \
	 PTRACE_O_EXITKILL)

/* One approved file. `used` is set last (release) and read first (acquire): the tracer never
 * sees a half-written slot. Slots are never emptied, so a probe chain never breaks. */
struct slot {
	uint64_t dev;
	uint64_t ino;
	uint64_t ctime_ns; /* the content's version (struct backstop_version) */
	uint64_t size;
	_Atomic uint32_t used;
	uint32_t pad;
};

/* What the exec of thread tid must find as its new image's arguments, in the slot of
 * tid % EXPECT_SLOTS (a newer exec of a colliding thread takes the slot: the older one then
 * finds another tid there and is killed, fail closed). Written by the supervisor under a
 * sequence count (odd while it writes), read by the tracer after the exec it let through. */
#define EXPECT_SLOTS 16384
struct expect_slot {
	_Atomic uint32_t seq;
	_Atomic uint32_t tid;
	_Atomic uint64_t hash;
	_Atomic uint32_t len;
	_Atomic uint32_t mode;
};

struct shared {
	struct slot slots[SLOTS];
	struct expect_slot expect[EXPECT_SLOTS];
};

/* The largest argument area the tracer reads (the kernel's is bounded by the stack limit: 6
 * MiB at most with an unlimited stack); a larger one is killed. */
#define ARGS_AREA_MAX (8u << 20)

enum msg_type {
	MSG_SEIZE = 1, /* supervisor → tracer: value = pid */
	MSG_SEIZED,    /* tracer → supervisor: value = 0 or an errno */
	MSG_KILLED,    /* tracer → supervisor: an exec it stopped */
};

struct msg {
	uint32_t type;
	int32_t value; /* MSG_KILLED: the pid */
	int32_t error; /* MSG_KILLED: 0, or why the file could not be inspected */
	uint32_t pad;
	uint64_t dev, ino, ctime_ns, size;
	uint32_t why; /* enum backstop_why */
	uint32_t pad2;
	char comm[BACKSTOP_EVENT_COMM_LEN];
	char filename[BACKSTOP_EVENT_FILENAME_LEN];
};

struct ptrace_backstop {
	pid_t tracer;
	int sock;
	struct shared *shm;
	uint64_t args_key[2]; /* the tracer has its copy (fork) */
	size_t n;
	backstop_event_fn fn;
	void *userdata;
};

static size_t slot_of(uint64_t dev, uint64_t ino, const struct backstop_version *v)
{
	uint64_t h =
	        ino * 0x9e3779b97f4a7c15ULL ^ (dev + 0x7f4a7c159e3779b9ULL) * 0xc2b2ae3d27d4eb4fULL;

	h ^= (v->ctime_ns ^ v->size * 0x9e3779b97f4a7c15ULL) * 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 31;
	return (size_t)h & (SLOTS - 1);
}

static bool slot_is(const struct slot *s, uint64_t dev, uint64_t ino,
                    const struct backstop_version *v)
{
	return s->dev == dev && s->ino == ino && s->ctime_ns == v->ctime_ns && s->size == v->size;
}

static bool shared_has(const struct shared *shm, uint64_t dev, uint64_t ino,
                       const struct backstop_version *v)
{
	for (size_t i = slot_of(dev, ino, v);; i = (i + 1) & (SLOTS - 1)) {
		const struct slot *s = &shm->slots[i];

		if (!atomic_load_explicit(&s->used, memory_order_acquire))
			return false;
		if (slot_is(s, dev, ino, v))
			return true;
	}
}

/* ---- the tracer ---------------------------------------------------------------------------- */

static void tracer_send(const struct msg *m)
{
	while (send(TRACER_SOCK, m, sizeof(*m), MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno == EINTR)
		;
}

static void read_small(int dirfd, const char *name, char *buf, size_t size, bool link)
{
	ssize_t n;

	if (link) {
		n = readlinkat(dirfd, name, buf, size - 1);
	} else {
		int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);

		n = fd < 0 ? -1 : read(fd, buf, size - 1);
		if (fd >= 0)
			close(fd);
	}
	if (n < 0)
		n = 0;
	buf[n] = '\0';
	if (!link)
		buf[strcspn(buf, "\n")] = '\0';
}

/* What the supervisor expected of the exec of thread TID: 0 and *ret, or -ENOENT. */
static int expect_find(const struct shared *shm, pid_t tid, struct backstop_args *ret)
{
	const struct expect_slot *e = &shm->expect[(uint32_t)tid % EXPECT_SLOTS];

	for (int tries = 0; tries < 100; tries++) {
		uint32_t s1 = atomic_load_explicit(&e->seq, memory_order_acquire), s2;
		/* Acquire, not a fence before the second look at SEQ: it comes after them all the
		 * same, and ThreadSanitizer knows no fences (x86 makes the same code of both). */
		uint32_t t = atomic_load_explicit(&e->tid, memory_order_acquire);

		ret->hash = atomic_load_explicit(&e->hash, memory_order_acquire);
		ret->len = atomic_load_explicit(&e->len, memory_order_acquire);
		ret->mode = atomic_load_explicit(&e->mode, memory_order_acquire);
		s2 = atomic_load_explicit(&e->seq, memory_order_relaxed);
		if (s1 % 2 == 0 && s1 == s2)
			return t == (uint32_t)tid && t != 0 ? 0 : -ENOENT;
	}
	return -ENOENT; /* written all the time: someone else's */
}

/* The new image's arguments, mm->arg_start..arg_end (fields 48 and 49 of /proc/PID/stat,
 * which only a tracer sees), read through /proc/PID/mem into BUF. Returns the length or
 * -errno. */
static ssize_t read_args(int dirfd, uint8_t *buf, size_t size)
{
	char stat[2048], *p;
	unsigned long long start = 0, end = 0;
	size_t len, got = 0;
	int fd;

	read_small(dirfd, "stat", stat, sizeof(stat), false);
	p = strrchr(stat, ')'); /* the name may hold anything but ends here */
	if (!p)
		return -EIO;
	/* The k-th space after ')' precedes field k + 2: arg_start is field 48. */
	for (int k = 0; k < 46 && p; k++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu %llu", &start, &end) != 2 || end < start)
		return -EIO;
	len = (size_t)(end - start);
	if (len > size)
		return -E2BIG;
	fd = openat(dirfd, "mem", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)(start + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			return n < 0 ? -errno : -EIO;
		}
		got += (size_t)n;
	}
	close(fd);
	return (ssize_t)len;
}

/* The exec event stop of PID (FORMER: the thread that called exec): the new image is in place,
 * not one instruction of it has run. */
static void tracer_check_exec(const struct shared *shm, const uint64_t key[2], uint8_t *area,
                              pid_t pid, pid_t former)
{
	struct msg m = {.type = MSG_KILLED, .value = pid, .why = BACKSTOP_WHY_FILE};
	struct backstop_args want;
	char dir[32];
	struct stat st;
	int dirfd;

	snprintf(dir, sizeof(dir), "/proc/%d", (int)pid);
	dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd >= 0 && fstatat(dirfd, "exe", &st, 0) == 0) {
		struct backstop_version v = backstop_stat_version(&st);

		m.dev = st.st_dev;
		m.ino = st.st_ino;
		m.ctime_ns = v.ctime_ns;
		m.size = v.size;
		if (shared_has(shm, st.st_dev, st.st_ino, &v)) {
			ssize_t n = 0;

			/* The file is approved; the arguments must be those decided on. */
			if (expect_find(shm, former, &want) < 0) {
				m.why = BACKSTOP_WHY_NO_ARGS;
			} else if (want.mode == BACKSTOP_ARGS_ANY ||
			           ((n = read_args(dirfd, area, ARGS_AREA_MAX)) >= 0 &&
			            args_digest_matches(key, &want, area, (size_t)n))) {
				close(dirfd);
				ptrace(PTRACE_CONT, pid, 0, 0);
				return;
			} else {
				m.why = BACKSTOP_WHY_ARGS;
				m.error = n < 0 ? (int32_t)-n : 0;
			}
		}
	} else {
		m.error = errno; /* fail closed: what cannot be checked does not run */
	}
	kill(pid, SIGKILL);
	if (dirfd >= 0) {
		read_small(dirfd, "comm", m.comm, sizeof(m.comm), false);
		read_small(dirfd, "exe", m.filename, sizeof(m.filename), true);
		close(dirfd);
	}
	tracer_send(&m);
}

static bool is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

__attribute__((noreturn)) static void tracer_main(const struct shared *shm, const uint64_t key[2])
{
	struct msg m = {0}, reply = {.type = MSG_SEIZED};
	uint8_t *area;
	ssize_t n;

	/* Only tracees and this socket: nothing else of the supervisor's. */
	close_range(TRACER_SOCK + 1, ~0U, 0);
	do
		n = recv(TRACER_SOCK, &m, sizeof(m), 0);
	while (n < 0 && errno == EINTR);
	if (n != sizeof(m) || m.type != MSG_SEIZE || m.value <= 0)
		_exit(1);
	/* Where the arguments of each exec are read: reserved, touched only as far as used. */
	area = mmap(NULL, ARGS_AREA_MAX, PROT_READ | PROT_WRITE,
	            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (area == MAP_FAILED)
		reply.value = errno;
	else if (ptrace(PTRACE_SEIZE, (pid_t)m.value, 0, TRACE_OPTIONS) < 0)
		reply.value = errno;
	tracer_send(&reply);
	if (reply.value)
		_exit(1);

	for (;;) {
		unsigned event;
		int status, sig;
		pid_t pid = waitpid(-1, &status, __WALL);

		if (pid < 0) {
			if (errno == EINTR)
				continue;
			_exit(errno == ECHILD ? 0 : 2); /* ECHILD: every tracee is gone */
		}
		if (!WIFSTOPPED(status))
			continue; /* exited or killed: its real parent reaps it */
		sig = WSTOPSIG(status);
		event = (unsigned)status >> 16;
		switch (event) {
		case PTRACE_EVENT_EXEC: {
			unsigned long former = 0;

			/* The thread that called exec (the event's pid is the leader's). */
			if (ptrace(PTRACE_GETEVENTMSG, pid, 0, &former) < 0)
				former = 0;
			tracer_check_exec(shm, key, area, pid, (pid_t)former);
			break;
		}
		case PTRACE_EVENT_STOP:
			/* A group stop (Ctrl-Z, SIGSTOP): stay stopped, but let SIGCONT through
			 * and the real parent see the stop. Otherwise a new child's first stop. */
			if (is_stop_signal(sig))
				ptrace(PTRACE_LISTEN, pid, 0, 0);
			else
				ptrace(PTRACE_CONT, pid, 0, 0);
			break;
		case 0:
			/* A signal on its way: deliver it (exec's SIGTRAP is an event here). */
			ptrace(PTRACE_CONT, pid, 0, sig);
			break;
		default: /* fork, vfork, clone: the new one is traced already */
			ptrace(PTRACE_CONT, pid, 0, 0);
			break;
		}
	}
}

/* ---- the supervisor's side ----------------------------------------------------------------- */

int ptrace_backstop_start(struct ptrace_backstop **ret, struct cl_error *err)
{
	struct ptrace_backstop *pb = calloc(1, sizeof(*pb));
	pid_t parent = getpid();
	int sv[2];

	if (!pb)
		return cl_error_set(err, -ENOMEM, "out of memory");
	pb->sock = -1;
	pb->tracer = -1;
	if (getrandom(pb->args_key, sizeof(pb->args_key), 0) != sizeof(pb->args_key)) {
		free(pb);
		return cl_error_set(err, -EIO, "ptrace backstop: getrandom failed");
	}
	pb->shm = mmap(NULL, sizeof(*pb->shm), PROT_READ | PROT_WRITE,
	               MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (pb->shm == MAP_FAILED) {
		pb->shm = NULL;
		ptrace_backstop_free(pb);
		return cl_error_set(err, -errno, "ptrace backstop: shared memory: %m");
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		ptrace_backstop_free(pb);
		return cl_error_set(err, -errno, "ptrace backstop: socketpair: %m");
	}
	pb->tracer = fork();
	if (pb->tracer < 0) {
		int r = -errno;

		close(sv[0]);
		close(sv[1]);
		pb->tracer = -1;
		ptrace_backstop_free(pb);
		return cl_error_set(err, r, "ptrace backstop: fork: %s", strerror(-r));
	}
	if (pb->tracer == 0) {
		/* Dies with the supervisor, and its tracees with it (EXITKILL). */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(1);
		(void)prctl(PR_SET_NAME, "cloister-trace");
		child_setup_reset_signals();
		if (sv[1] != TRACER_SOCK && dup3(sv[1], TRACER_SOCK, 0) < 0)
			_exit(1);
		tracer_main(pb->shm, pb->args_key);
	}
	close(sv[1]);
	pb->sock = sv[0];
	*ret = pb;
	return 0;
}

int ptrace_backstop_seize(struct ptrace_backstop *pb, pid_t pid, struct cl_error *err)
{
	struct msg m = {.type = MSG_SEIZE, .value = pid};
	struct pollfd p = {.fd = pb->sock, .events = POLLIN};
	ssize_t n;
	int r;

	if (send(pb->sock, &m, sizeof(m), MSG_NOSIGNAL) < 0)
		return cl_error_set(err, -errno, "ptrace backstop: the tracer is gone: %m");
	do
		r = poll(&p, 1, SEIZE_WAIT_MS);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return cl_error_set(err, r < 0 ? -errno : -ETIMEDOUT,
		                    "ptrace backstop: the tracer did not answer");
	n = recv(pb->sock, &m, sizeof(m), MSG_DONTWAIT);
	if (n != sizeof(m) || m.type != MSG_SEIZED)
		return cl_error_set(err, -EPROTO, "ptrace backstop: the tracer is gone");
	if (m.value)
		return cl_error_set(err, -m.value, "ptrace backstop: cannot trace the agent: %s",
		                    strerror(m.value));
	return 0;
}

int ptrace_backstop_allow(struct ptrace_backstop *pb, dev_t st_dev, ino_t st_ino,
                          const struct backstop_version *v)
{
	uint64_t dev = st_dev, ino = st_ino;

	for (size_t i = slot_of(dev, ino, v);; i = (i + 1) & (SLOTS - 1)) {
		struct slot *s = &pb->shm->slots[i];

		if (atomic_load_explicit(&s->used, memory_order_relaxed)) {
			if (slot_is(s, dev, ino, v))
				return 0;
			continue;
		}
		if (pb->n >= PTRACE_BACKSTOP_MAX_APPROVALS)
			return -E2BIG;
		s->dev = dev;
		s->ino = ino;
		s->ctime_ns = v->ctime_ns;
		s->size = v->size;
		atomic_store_explicit(&s->used, 1, memory_order_release);
		pb->n++;
		return 0;
	}
}

int ptrace_backstop_expect_args(struct ptrace_backstop *pb, pid_t tid,
                                const struct backstop_args *a)
{
	struct expect_slot *e;
	uint32_t seq;

	if (tid <= 0 || a->mode < BACKSTOP_ARGS_FULL || a->mode > BACKSTOP_ARGS_ANY)
		return -EINVAL;
	e = &pb->shm->expect[(uint32_t)tid % EXPECT_SLOTS];
	seq = atomic_load_explicit(&e->seq, memory_order_relaxed);
	atomic_store_explicit(&e->seq, seq + 1, memory_order_relaxed);
	/* Release, not a fence after the odd SEQ: a reader that sees any of them sees the odd
	 * SEQ too (expect_find reads them with acquire), and ThreadSanitizer knows no fences. */
	atomic_store_explicit(&e->tid, (uint32_t)tid, memory_order_release);
	atomic_store_explicit(&e->hash, a->hash, memory_order_release);
	atomic_store_explicit(&e->len, a->len, memory_order_release);
	atomic_store_explicit(&e->mode, a->mode, memory_order_release);
	atomic_store_explicit(&e->seq, seq + 2, memory_order_release);
	return 0;
}

void ptrace_backstop_args_key(const struct ptrace_backstop *pb, uint64_t ret_key[2])
{
	ret_key[0] = pb->args_key[0];
	ret_key[1] = pb->args_key[1];
}

int ptrace_backstop_events_fd(const struct ptrace_backstop *pb)
{
	return pb->sock;
}

int ptrace_backstop_consume_events(struct ptrace_backstop *pb, backstop_event_fn fn, void *userdata)
{
	int count = 0;

	for (;;) {
		struct backstop_event ev = {0};
		struct msg m;
		ssize_t n = recv(pb->sock, &m, sizeof(m), MSG_DONTWAIT);
		int r;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? count : -errno;
		if (n == 0)
			return count; /* the tracer is gone (its tracees with it) */
		if (n != sizeof(m) || m.type != MSG_KILLED)
			continue;
		ev.pid = (pid_t)m.value;
		ev.st_dev = (dev_t)m.dev;
		ev.st_ino = (ino_t)m.ino;
		ev.ctime_ns = m.ctime_ns;
		ev.size = m.size;
		/* Killed either way; error says the file could not be inspected. */
		ev.action = BACKSTOP_KILLED;
		ev.why = (enum backstop_why)m.why;
		ev.error = -m.error;
		memcpy(ev.comm, m.comm, sizeof(ev.comm));
		ev.comm[sizeof(ev.comm) - 1] = '\0';
		memcpy(ev.filename, m.filename, sizeof(ev.filename));
		ev.filename[sizeof(ev.filename) - 1] = '\0';
		r = fn(&ev, userdata);
		if (r < 0)
			return r;
		count++;
	}
}

const char *ptrace_backstop_mode_name(void)
{
	return "ptrace (kill at the exec stop, before the first instruction)";
}

void ptrace_backstop_free(struct ptrace_backstop *pb)
{
	if (!pb)
		return;
	if (pb->tracer > 0) {
		kill(pb->tracer, SIGKILL);
		while (waitpid(pb->tracer, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (pb->sock >= 0)
		close(pb->sock);
	if (pb->shm)
		munmap(pb->shm, sizeof(*pb->shm));
	free(pb);
}
