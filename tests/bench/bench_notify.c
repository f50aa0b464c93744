/* bench_notify: what seccomp exec interception costs per exec.
 *
 * A child installs the filter and hands us the listener; it then times its own notified
 * syscalls (so the numbers are what the agent feels) while this process answers them in a
 * receive → (read) → continue loop. */
#include "tests/bench/bench.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/loop.h"
#include "notifier/fdpass.h"
#include "notifier/filter.h"
#include "notifier/notify.h"
#include "notifier/target.h"
#include "notifier/view.h"
#include "tests/bench/bench_summary.h"

#define ROUND_TRIPS 20000
#define FORK_EXECS  2000

static char *const bench_envp[] = {"PATH=/usr/bin:/bin", NULL};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

enum workload { NOTIFIED_ENOENT, FORK_EXEC_TRUE };

/* What the answering side does between receive and continue. */
enum reading {
	READ_NOTHING,
	/* The kernel's minimum for an exec's verdict: one process_vm_readv of the path's and the
	 * argv array's pages, openat2(RESOLVE_IN_ROOT) of the path from a fixed root, statx of
	 * the fd, NOTIF_ID_VALID; the fd closed after the answer. */
	READ_FLOOR,
	/* notifier_read_exec(): everything, names included, from /proc/PID/root (no fixed
	 * root, no view). */
	READ_FULL,
	/* As the supervisor reads an exec whose line is written: a view and a fixed root set, the
	 * cwd and ids, the names (a readlink only with a symlink on the way); the free after the
	 * answer. */
	READ_SUPERVISOR,
	/* The same over the audit rate (no line to write): no cwd, no ids. */
	READ_SUPERVISOR_LEAN,
};

/* In the child: run the workload, return the median (ENOENT loop) or total (fork/exec) ns. */
static uint64_t run_workload(enum workload w)
{
	if (w == NOTIFIED_ENOENT) {
		static uint64_t t[ROUND_TRIPS];
		char *argv[] = {"cloister-bench", NULL};

		for (int i = 0; i < ROUND_TRIPS; i++) {
			uint64_t t0 = now_ns();

			syscall(SYS_execve, "/nonexistent/cloister-bench", argv, bench_envp);
			t[i] = now_ns() - t0;
		}
		qsort(t, ROUND_TRIPS, sizeof(t[0]), cmp_u64);
		return t[ROUND_TRIPS / 2];
	} else {
		uint64_t t0 = now_ns();

		for (int i = 0; i < FORK_EXECS; i++) {
			pid_t pid = fork();
			int status;

			if (pid < 0)
				return 0;
			if (pid == 0) {
				char *argv[] = {"true", NULL};

				execve("/bin/true", argv, bench_envp);
				_exit(127);
			}
			if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
			    WEXITSTATUS(status) != 0)
				return 0;
		}
		return now_ns() - t0;
	}
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Run workload w in a child, filtered or not; the parent answers notifications (optionally
 * reading each exec first) with SYNC_WAKE_UP on or off. Returns the child's figure, 0 on
 * failure; the answering side's CPU time meanwhile in *RET_CPU_NS when not NULL. */
/* READ_FLOOR's reads; the fd of the file, to close after the answer. */
static int read_floor(struct notifier *n, const struct seccomp_notif *req, int root)
{
	enum { PAGE = 4096 };
	char path[PAGE], ptrs[PAGE];
	uint64_t pa = req->data.args[0], aa = req->data.args[1];
	struct iovec local[2] = {{path, PAGE - pa % PAGE}, {ptrs, PAGE - aa % PAGE}};
	struct iovec remote[2] = {{(void *)(uintptr_t)pa, PAGE - pa % PAGE},
	                          {(void *)(uintptr_t)aa, PAGE - aa % PAGE}};
	struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT};
	struct statx x;
	long fd;

	if (process_vm_readv((pid_t)req->pid, local, 2, remote, 2, 0) <= 0 ||
	    !memchr(path, '\0', local[0].iov_len))
		return -1;
	fd = syscall(SYS_openat2, root, path, &how, sizeof(how));
	if (fd < 0)
		return -1;
	if (statx((int)fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_MNT_ID, &x) < 0 ||
	    notifier_id_valid(n, req->id) != 1) {
		close((int)fd);
		return -1;
	}
	return (int)fd;
}

/* A view of our own namespace with a fixed root, as run sets one on the sandbox's notifier. */
static int set_own_view(struct notifier *n, struct exec_view **ret)
{
	int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int mi = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);

	if (root < 0 || mi < 0) {
		if (root >= 0)
			close(root);
		if (mi >= 0)
			close(mi);
		return -1;
	}
	if (exec_view_new(root, mi, ret) < 0)
		return -1;
	notifier_set_view(n, *ret);
	return notifier_set_fixed_root(n, true);
}

/* The workload's child: W in its own process (filtered: under a notifier whose listener it
 * passes back), started by a byte on go, its figure written to res. */
struct workload_child {
	pid_t pid;
	int sv, res, go; /* our ends: the listener's socket, the figure, the start */
};

static int start_workload(enum workload w, bool filtered, struct workload_child *ret)
{
	int sv[2], res[2], go[2], lfd = -1;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	if (pipe2(res, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0)
		return -1;
	ret->pid = fork();
	if (ret->pid < 0)
		return -1;
	if (ret->pid == 0) {
		uint64_t r;
		char c;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* Its own session, as `run` gives the agent: with autogroups, the answering thread
		 * and the workload are then weighed as two groups, and a woken target rarely
		 * preempts the answerer (bench_sched shows both layouts). */
		(void)setsid();
		if (filtered) {
			if (notifier_filter_install(NULL, NULL, &lfd) < 0 ||
			    fdpass_send(sv[1], lfd, NULL, 0) < 0)
				_exit(1);
			close(lfd);
		}
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		r = run_workload(w);
		_exit(write(res[1], &r, sizeof(r)) == sizeof(r) ? 0 : 1);
	}
	close(sv[1]);
	close(res[1]);
	close(go[0]);
	ret->sv = sv[0];
	ret->res = res[0];
	ret->go = go[1];
	return 0;
}

static void stop_workload(const struct workload_child *c)
{
	kill(c->pid, SIGKILL); /* no-op when it already finished; never leave it blocked */
	waitpid(c->pid, NULL, 0);
}

static void close_workload(const struct workload_child *c)
{
	close(c->sv);
	close(c->res);
	close(c->go);
}

static uint64_t measure_cpu(enum workload w, bool filtered, bool sync_wake_up, enum reading reading,
                            bool poll_loop, uint64_t *ret_cpu_ns)
{
	uint64_t cpu0 = 0;
	struct notifier *n = NULL;
	struct exec_view *view = NULL;
	int root = -1;
	struct workload_child child;
	int lfd = -1;
	uint64_t result = 0;

	if (start_workload(w, filtered, &child) < 0)
		return 0;
	if (filtered) {
		if (fdpass_recv(child.sv, NULL, 0, NULL, &lfd) < 0 || notifier_new(lfd, &n) < 0)
			goto out;
		if (notifier_set_sync_wake_up(n, sync_wake_up) < 0 && sync_wake_up)
			goto out;
		if ((reading == READ_SUPERVISOR || reading == READ_SUPERVISOR_LEAN) &&
		    set_own_view(n, &view) < 0)
			goto out;
		if (reading == READ_FLOOR &&
		    (root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			goto out;
	}
	cpu0 = thread_cpu_ns();
	if (write(child.go, "g", 1) != 1)
		goto out;
	/* The bare round trip: a blocking receive → continue loop, nothing else in between. */
	for (int i = 0; !poll_loop && i < ROUND_TRIPS; i++) {
		struct seccomp_notif req;

		if (notifier_receive(n, &req) < 0 || notifier_continue(n, req.id) < 0)
			goto out;
	}
	/* As in the supervisor: wait in poll(2) for the listener, then receive. */
	for (;;) {
		struct pollfd p[2] = {{.fd = child.res, .events = POLLIN},
		                      {.fd = n ? notifier_fd(n) : -1, .events = POLLIN}};
		struct seccomp_notif req;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents & POLLIN) {
			if (notifier_receive(n, &req) < 0)
				continue;
			if (reading == READ_FLOOR) {
				int fd = read_floor(n, &req, root);

				notifier_continue(n, req.id);
				if (fd >= 0)
					close(fd);
			} else if (reading == READ_SUPERVISOR || reading == READ_SUPERVISOR_LEAN) {
				bool record = reading == READ_SUPERVISOR;
				struct exec_target *t = NULL;
				int r = notifier_read_exec_some(
				        n, &req, record ? EXEC_READ_RECORD : 0, &t, NULL);

				if (r == 0)
					(void)notifier_read_exec_names(n, t, true);
				notifier_continue(n, req.id);
				exec_target_free(t);
			} else {
				struct exec_target *t = NULL;

				if (reading == READ_FULL &&
				    notifier_read_exec(n, &req, &t, NULL) == 0)
					exec_target_free(t);
				notifier_continue(n, req.id);
			}
			continue;
		}
		if (p[0].revents & (POLLIN | POLLHUP)) {
			if (read(child.res, &result, sizeof(result)) != sizeof(result))
				result = 0;
			if (ret_cpu_ns)
				*ret_cpu_ns = thread_cpu_ns() - cpu0;
			break;
		}
	}
out:
	stop_workload(&child);
	notifier_free(n);
	exec_view_free(view);
	if (root >= 0)
		close(root);
	close_workload(&child);
	return result;
}

static uint64_t measure(enum workload w, bool filtered, bool sync_wake_up, enum reading reading,
                        bool poll_loop)
{
	return measure_cpu(w, filtered, sync_wake_up, reading, poll_loop, NULL);
}

/* The identity check of an exec's file against the sandbox's own view (notifier/view.h), per
 * file: the fast path (its mount is one of the view's: a poll(2) on the mount table and a
 * binary search) and the slow one (reached through another mount namespace: its name looked
 * up in the view and compared). Here the view is our own namespace. */
static void bench_view(void)
{
	enum { FAST = 200000, SLOW = 20000 };
	struct exec_view *v = NULL;
	struct statx x;
	uint32_t kdev;
	uint64_t t0, fast_ns, slow_ns;
	int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int mi = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);

	if (root < 0 || mi < 0 || exec_view_new(root, mi, &v) < 0 ||
	    statx(AT_FDCWD, "/bin/true", 0, STATX_MNT_ID, &x) < 0) {
		printf("identity check: failed to set up\n");
		exec_view_free(v);
		return;
	}
	t0 = now_ns();
	for (int i = 0; i < FAST; i++)
		if (exec_view_find_mount(v, x.stx_mnt_id, &kdev) != 1) {
			printf("identity check: /bin/true's mount is not in our own view?\n");
			exec_view_free(v);
			return;
		}
	fast_ns = now_ns() - t0;
	t0 = now_ns();
	for (int i = 0; i < SLOW; i++) {
		int fd = exec_view_open(v, "/usr/bin/true");
		struct statx y;

		if (fd < 0 || statx(fd, "", AT_EMPTY_PATH, STATX_INO | STATX_MNT_ID, &y) < 0) {
			printf("identity check: /usr/bin/true not found in the view\n");
			exec_view_free(v);
			return;
		}
		(void)exec_view_find_mount(v, y.stx_mnt_id, &kdev);
		close(fd);
	}
	slow_ns = now_ns() - t0;
	exec_view_free(v);
	printf("identity check per file: %.2f µs in the sandbox's own namespace (poll + search), "
	       "%.2f µs for a file of another namespace (lookup by name in the view)\n",
	       fast_ns / 1e3 / FAST, slow_ns / 1e3 / SLOW);
}

/* ---- as the supervisor answers: a thread blocked in RECV, under the loop's lock ---------
 * The exec guard's thread (supervisor/exec/exec_guard.c): RECV blocking, the loop's lock
 * (loop.h) taken and let go around the answer, while the loop's own thread sleeps in
 * epoll_wait on the workload's result. Nothing else (no read, no decision). */

struct lock_answerer {
	struct loop *loop;
	struct notifier *n;
	bool cancel;
	uint64_t cpu_ns; /* the answering thread's CPU, RECV to the listener's hang-up */
	uint64_t answered;
};

static void *lock_answerer_main(void *userdata)
{
	struct lock_answerer *a = userdata;
	uint64_t cpu0 = thread_cpu_ns();

	for (;;) {
		struct seccomp_notif req;
		int r = notifier_receive(a->n, &req);

		if (r == -EINTR)
			continue;
		if (r == -ENOENT) {
			struct pollfd p = {.fd = notifier_fd(a->n), .events = POLLIN};

			if (poll(&p, 1, 0) == 1 && (p.revents & POLLHUP))
				break; /* every filtered process is gone */
			continue;
		}
		if (r < 0 || loop_thread_lock(a->loop, &a->cancel) < 0)
			break;
		notifier_continue(a->n, req.id);
		a->answered++;
		loop_thread_unlock(a->loop);
	}
	a->cpu_ns = thread_cpu_ns() - cpu0;
	return NULL;
}

struct lock_result {
	uint64_t value;
	bool got;
};

static int on_result(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct lock_result *res = userdata;

	res->got = read(fd, &res->value, sizeof(res->value)) == sizeof(res->value);
	loop_exit(loop, 0);
	return 0;
}

/* Workload W in a filtered child, answered by a lock_answerer; the child's figure (0 on
 * failure), the thread's CPU in *RET_CPU_NS and the loop's wake-ups in *RET_WAKEUPS. */
static uint64_t measure_thread(enum workload w, uint64_t *ret_cpu_ns, uint64_t *ret_wakeups)
{
	struct lock_answerer a = {0};
	struct lock_result result = {0};
	struct workload_child child;
	int lfd = -1;
	pthread_t th;
	bool started = false;

	if (start_workload(w, true, &child) < 0)
		return 0;
	if (fdpass_recv(child.sv, NULL, 0, NULL, &lfd) < 0 || notifier_new(lfd, &a.n) < 0 ||
	    notifier_set_sync_wake_up(a.n, true) < 0 || loop_new(&a.loop) < 0 ||
	    loop_add_fd(a.loop, child.res, EPOLLIN, on_result, &result) < 0)
		goto out;
	if (pthread_create(&th, NULL, lock_answerer_main, &a) != 0)
		goto out;
	started = true;
	if (write(child.go, "g", 1) != 1 || loop_run(a.loop) < 0)
		result.got = false;
	if (ret_wakeups)
		*ret_wakeups = loop_wakeups(a.loop);
out:
	stop_workload(&child);
	/* Its last process gone, the listener hangs up and the thread's RECV fails: it leaves. */
	if (started) {
		loop_thread_cancel(a.loop, &a.cancel);
		pthread_join(th, NULL);
	}
	if (ret_cpu_ns)
		*ret_cpu_ns = a.cpu_ns;
	loop_free(a.loop);
	notifier_free(a.n);
	close_workload(&child);
	return result.got ? result.value : 0;
}

/* The round trip and the fork+exec loop answered as the supervisor answers them, beside the
 * poll loop's figures of bench_notify(). */
static void bench_notify_thread(uint64_t poll_round_trip_ns, uint64_t native_ns,
                                uint64_t poll_bare_ns, uint64_t poll_bare_cpu_ns)
{
	uint64_t rt_ns, fe_ns, fe_cpu_ns = 0, fe_wakeups = 0;

	rt_ns = measure_thread(NOTIFIED_ENOENT, NULL, NULL);
	fe_ns = measure_thread(FORK_EXEC_TRUE, &fe_cpu_ns, &fe_wakeups);
	if (!rt_ns || !fe_ns) {
		printf("thread blocked in RECV: failed to measure\n");
		return;
	}
	/* Issue 16's figure: the round trip as the supervisor answers it. */
	bench_summary_set(BENCH_ROW_NOTIFY, rt_ns / 1e3, -1);
	bench_summary_floor(BENCH_ROW_NOTIFY, rt_ns / 1e3,
	                    "the row itself: the kernel's round trip, no supervisor code in it");
	printf("notify round trip, a thread blocked in RECV taking the loop's lock (as the "
	       "supervisor answers): %.1f µs (poll loop: %.1f µs; medians of %d)\n",
	       rt_ns / 1e3, poll_round_trip_ns / 1e3, ROUND_TRIPS);
	if (native_ns && poll_bare_ns && poll_bare_cpu_ns)
		printf("fork+exec+wait /bin/true x%d, notified + continue only: thread in RECV "
		       "%.1f µs "
		       "per exec (%.3fx native), poll loop %.1f µs (%.3fx); the answering thread's "
		       "CPU %.1f µs vs %.1f µs; the loop's thread woke %llu times\n",
		       FORK_EXECS, fe_ns / 1e3 / FORK_EXECS, (double)fe_ns / (double)native_ns,
		       poll_bare_ns / 1e3 / FORK_EXECS, (double)poll_bare_ns / (double)native_ns,
		       fe_cpu_ns / 1e3 / FORK_EXECS, poll_bare_cpu_ns / 1e3 / FORK_EXECS,
		       (unsigned long long)fe_wakeups);
}

void bench_notify(void)
{
	uint64_t sync_ns, nosync_ns, poll_sync_ns, poll_nosync_ns, read_ns, native_ns;

	if (geteuid() != 0) {
		printf("notify round trip: skipped (needs root)\n");
		return;
	}
	sync_ns = measure(NOTIFIED_ENOENT, true, true, READ_NOTHING, false);
	nosync_ns = measure(NOTIFIED_ENOENT, true, false, READ_NOTHING, false);
	poll_sync_ns = measure(NOTIFIED_ENOENT, true, true, READ_NOTHING, true);
	poll_nosync_ns = measure(NOTIFIED_ENOENT, true, false, READ_NOTHING, true);
	read_ns = measure(NOTIFIED_ENOENT, true, true, READ_FULL, true);
	if (!nosync_ns || !poll_nosync_ns || !read_ns) {
		printf("notify round trip: failed to measure\n");
		return;
	}
	/* Issue 16's figure: the round trip as the supervisor's loop answers it. */
	bench_summary_set(BENCH_ROW_NOTIFY, (poll_sync_ns ? poll_sync_ns : poll_nosync_ns) / 1e3,
	                  -1);
	/* Medians of ROUND_TRIPS notified execve("/nonexistent/…") answered CONTINUE, as the
	 * filtered process sees them (syscall entry to return, the kernel's ENOENT included). */
	if (sync_ns && poll_sync_ns)
		printf("notify round trip: %.1f µs with SYNC_WAKE_UP, %.1f µs without (%.1fx); "
		       "in a poll loop %.1f µs with, %.1f µs without (%.1fx); poll loop + reading "
		       "path, argv, cwd and stat %.1f µs (medians of %d)\n",
		       sync_ns / 1e3, nosync_ns / 1e3, (double)nosync_ns / (double)sync_ns,
		       poll_sync_ns / 1e3, poll_nosync_ns / 1e3,
		       (double)poll_nosync_ns / (double)poll_sync_ns, read_ns / 1e3, ROUND_TRIPS);
	else
		printf("notify round trip: %.1f µs without SYNC_WAKE_UP (kernel lacks it, < 6.6); "
		       "in a poll loop %.1f µs; poll loop + reading path, argv, cwd and stat %.1f "
		       "µs "
		       "(medians of %d)\n",
		       nosync_ns / 1e3, poll_nosync_ns / 1e3, read_ns / 1e3, ROUND_TRIPS);

	/* The fork+exec loop, taking turns (the machine is shared): native; the mechanism's own
	 * floor (receive and continue, nothing else); the kernel's floor for reading an exec;
	 * the read as the supervisor does it; the full read. Medians of the rounds. */
	enum { KINDS = 6, ROUNDS = 3 };
	static const char *const kind_name[KINDS] = {
	        "native",
	        "notified + continue only (the mechanism's floor)",
	        "notified + the kernel's floor for reading an exec (one process_vm_readv, openat2 "
	        "RESOLVE_IN_ROOT, statx, ID_VALID) + continue",
	        "notified + the supervisor's read (fixed root, cwd, ids and names) + continue",
	        "notified + the supervisor's read over the audit rate (names, no cwd or ids) + "
	        "continue",
	        "notified + notifier_read_exec (everything, names included) + continue",
	};
	static const enum reading kind_reading[KINDS] = {READ_NOTHING,         READ_NOTHING,
	                                                 READ_FLOOR,           READ_SUPERVISOR,
	                                                 READ_SUPERVISOR_LEAN, READ_FULL};
	uint64_t wall[KINDS][ROUNDS], cpu[KINDS][ROUNDS];

	for (int r = 0; r < ROUNDS; r++)
		for (int k = 0; k < KINDS; k++) {
			cpu[k][r] = 0;
			wall[k][r] = measure_cpu(FORK_EXEC_TRUE, k > 0, true, kind_reading[k], true,
			                         &cpu[k][r]);
			if (!wall[k][r]) {
				printf("fork+exec+wait /bin/true: failed to measure (%s)\n",
				       kind_name[k]);
				return;
			}
		}
	bench_view();
	for (int k = 0; k < KINDS; k++) {
		qsort(wall[k], ROUNDS, sizeof(wall[k][0]), cmp_u64);
		qsort(cpu[k], ROUNDS, sizeof(cpu[k][0]), cmp_u64);
	}
	native_ns = wall[0][ROUNDS / 2];
	printf("fork+exec+wait /bin/true x%d, %d rounds taking turns (medians; the answering "
	       "thread's CPU per exec, poll loop, SYNC_WAKE_UP):\n",
	       FORK_EXECS, ROUNDS);
	for (int k = 0; k < KINDS; k++) {
		uint64_t ns = wall[k][ROUNDS / 2];

		if (k == 0)
			printf("  %s: %.1f µs per exec\n", kind_name[k], ns / 1e3 / FORK_EXECS);
		else
			printf("  %s: %.1f µs per exec (%.3fx native, %.3f to %.3f), CPU %.1f µs\n",
			       kind_name[k], ns / 1e3 / FORK_EXECS, (double)ns / (double)native_ns,
			       (double)wall[k][0] / (double)native_ns,
			       (double)wall[k][ROUNDS - 1] / (double)native_ns,
			       cpu[k][ROUNDS / 2] / 1e3 / FORK_EXECS);
	}
	/* What no work of ours can go under: an exec notified, read as little as a decision on
	 * its file needs, and continued (the run's loop also pays the backstop, bench_backstop).
	 */
	bench_summary_floor(BENCH_ROW_EXEC_LOOP, (double)wall[2][ROUNDS / 2] / (double)native_ns,
	                    "notified, the kernel's reads of an exec, continued; no backstop");
	bench_summary_floor(BENCH_ROW_EXEC_CPU, cpu[2][ROUNDS / 2] / 1e3 / FORK_EXECS,
	                    "the answering thread's CPU: receive, the kernel's reads of an exec, "
	                    "continue");
	bench_notify_thread(poll_sync_ns ? poll_sync_ns : poll_nosync_ns, native_ns,
	                    wall[1][ROUNDS / 2], cpu[1][ROUNDS / 2]);
}
