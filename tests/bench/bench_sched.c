/* bench_sched: why a microsecond spent before the answer to an exec can cost the agent several,
 * and when it does not (issue 16).
 *
 * A child runs fork+exec+wait of /bin/true under a seccomp execve notifier (SYNC_WAKE_UP, as the
 * supervisor sets it) while this process answers in a poll → receive → continue loop, holding
 * each answer back by a pure user-space spin of 0, 13 or 30 µs (what reading and deciding take
 * in the supervisor). Two layouts of the target:
 *
 *   - in the answerer's session (as bench_notify and the standalone experiments run it): the
 *     answerer and the target share one scheduling group;
 *   - in a session of its own (setsid, as `run` starts the agent): with autogroup
 *     (kernel.sched_autogroup_enabled, on by default) the target's processes form a group of
 *     their own, and the scheduler weighs the two groups, not the two threads.
 *
 * What happens in the first layout (seen with sched_switch/sched_migrate_task/csd traces on a
 * 2-vCPU guest): SYNC_WAKE_UP wakes the answerer on the target's CPU, and its SEND wakes the
 * target there too. Once the answerer has run ~10 µs since its wake-up it has used up its lag,
 * so at SEND the target preempts it (EEVDF) and the answerer is left runnable on that CPU. The
 * target's execve then reaches exec balancing (sched_exec), which sees its CPU busy and the
 * other one idle and moves it there through the stopper thread; the parent follows at the next
 * wake-up, and the TLB shootdowns of the exec and of the next fork must wait for the vCPU that
 * still holds the old mm lazily. On a guest whose idle vCPUs halt, each of those costs tens of
 * µs. In the second layout the answerer's group is not behind at SEND, the target rarely
 * preempts it, and the delay costs about itself; but then the target waits, on the same CPU,
 * for whatever the answerer does after the answer until it sleeps: work moved behind the answer
 * is not free there (the last row of each layout).
 *
 * Figures per exec, medians over the rounds (ranges beside): the 25th percentile of the loop's
 * own iteration times (the quantile that another process's work disturbs least on a shared
 * machine), the answering thread's involuntary context switches (the target preempting it at
 * SEND), and the migrations of the agent's processes (a software perf counter, inherited). The
 * last row raises the answerer's weight (nice -10, when allowed) in the first layout: the
 * remedy there, which the second layout does not need and on which it has no effect. Needs
 * root. */
#include "tests/bench/bench.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "notifier/fdpass.h"
#include "notifier/filter.h"
#include "notifier/notify.h"

#define EXECS  600
#define ROUNDS 3

static char *const sched_envp[] = {"PATH=/usr/bin:/bin", NULL};

struct sched_case {
	const char *label;
	bool own_session; /* the target setsid()s, as run's agent does */
	int delay_us;     /* the answer held back by a spin */
	bool nice;        /* the answerer at nice -10 */
	int after_us;     /* a spin after the answer (work moved behind it, e.g. the audit) */
};

static const struct sched_case cases[] = {
        {"in the answerer's session, answer at once", false, 0, false, 0},
        {"in the answerer's session, answer 13 µs later", false, 13, false, 0},
        {"in the answerer's session, answer 30 µs later", false, 30, false, 0},
        {"in the answerer's session, 30 µs later, answerer at nice -10", false, 30, true, 0},
        {"in the answerer's session, answer at once, then 13 µs of work", false, 0, false, 13},
        {"in a session of its own (as run), answer at once", true, 0, false, 0},
        {"in a session of its own (as run), answer 13 µs later", true, 13, false, 0},
        {"in a session of its own (as run), answer 30 µs later", true, 30, false, 0},
        {"in a session of its own (as run), answer at once, then 13 µs of work", true, 0, false,
         13},
};
#define CASES (sizeof(cases) / sizeof(cases[0]))

/* What the loop reports: its iteration times' quartile and median, and its processes'
 * migrations (< 0: no counter). */
struct loop_result {
	double p25_us, p50_us, migrations;
};

/* One round's figures of a case; ok false when it could not be measured. */
struct sched_figures {
	bool ok;
	double p25_us, p50_us, migrations, preempted;
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* A counter of the CPU migrations of this process and of the children it forks from now on;
 * -errno when perf events are not available. */
static int migrations_counter(void)
{
	struct perf_event_attr attr = {
	        .type = PERF_TYPE_SOFTWARE,
	        .size = sizeof(attr),
	        .config = PERF_COUNT_SW_CPU_MIGRATIONS,
	        .inherit = 1,
	};
	long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : (int)fd;
}

/* In the child, once the answerer is ready: the loop. */
static int run_loop(struct loop_result *ret)
{
	static double t[EXECS];
	int counter = migrations_counter();
	uint64_t count = 0;

	for (int i = 0; i < EXECS; i++) {
		double t0 = now_us();
		pid_t pid = fork();
		int status;

		if (pid < 0)
			return -errno;
		if (pid == 0) {
			char *argv[] = {"true", NULL};

			execve("/bin/true", argv, sched_envp);
			_exit(127);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			return -ECHILD;
		t[i] = now_us() - t0;
	}
	qsort(t, EXECS, sizeof(t[0]), cmp_double);
	ret->p25_us = t[EXECS / 4];
	ret->p50_us = t[EXECS / 2];
	ret->migrations = -1;
	if (counter >= 0 && read(counter, &count, sizeof(count)) == sizeof(count))
		ret->migrations = (double)count / EXECS;
	return 0;
}

static void spin_us(int us)
{
	double end = now_us() + us;

	while (now_us() < end)
		;
}

static long involuntary_switches(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nivcsw : 0;
}

/* Run case C once. Returns its figures (ok false on any failure, or when C wants nice -10 and
 * this process may not have it). */
static struct sched_figures measure(const struct sched_case *c)
{
	struct sched_figures fig = {0};
	struct notifier *n = NULL;
	int sv[2], res[2], go[2], lfd = -1, nice0 = 0;
	bool reniced = false;
	long sw0 = 0, answered = 0;
	struct loop_result r;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return fig;
	if (pipe2(res, O_CLOEXEC) < 0) {
		close(sv[0]);
		close(sv[1]);
		return fig;
	}
	if (pipe2(go, O_CLOEXEC) < 0) {
		close(sv[0]);
		close(sv[1]);
		close(res[0]);
		close(res[1]);
		return fig;
	}
	pid = fork();
	if (pid == 0) {
		char ch;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (c->own_session && setsid() < 0)
			_exit(1);
		if (notifier_filter_install(NULL, NULL, &lfd) < 0 ||
		    fdpass_send(sv[1], lfd, NULL, 0) < 0)
			_exit(1);
		close(lfd);
		if (read(go[0], &ch, 1) != 1 || run_loop(&r) < 0)
			_exit(1);
		_exit(write(res[1], &r, sizeof(r)) == sizeof(r) ? 0 : 1);
	}
	close(sv[1]);
	close(res[1]);
	close(go[0]);
	if (pid < 0)
		goto out;
	if (fdpass_recv(sv[0], NULL, 0, NULL, &lfd) < 0 || notifier_new(lfd, &n) < 0 ||
	    notifier_set_sync_wake_up(n, true) < 0)
		goto out;
	if (c->nice) {
		/* This thread only (setpriority on our tid); the target, forked before, keeps its
		 * own. */
		errno = 0;
		nice0 = getpriority(PRIO_PROCESS, 0);
		if (errno || setpriority(PRIO_PROCESS, 0, -10) < 0)
			goto out;
		reniced = true;
	}
	sw0 = involuntary_switches();
	if (write(go[1], "g", 1) != 1)
		goto out;
	for (;;) {
		struct pollfd p[2] = {{.fd = res[0], .events = POLLIN},
		                      {.fd = notifier_fd(n), .events = POLLIN}};
		struct seccomp_notif req;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents & POLLIN) {
			if (notifier_receive(n, &req) < 0)
				continue;
			spin_us(c->delay_us);
			notifier_continue(n, req.id);
			spin_us(c->after_us);
			answered++;
			continue;
		}
		if (p[0].revents & (POLLIN | POLLHUP)) {
			if (read(res[0], &r, sizeof(r)) == sizeof(r) && answered >= EXECS) {
				fig.ok = true;
				fig.p25_us = r.p25_us;
				fig.p50_us = r.p50_us;
				fig.migrations = r.migrations;
				fig.preempted =
				        (double)(involuntary_switches() - sw0) / (double)answered;
			}
			break;
		}
	}
out:
	if (reniced)
		setpriority(PRIO_PROCESS, 0, nice0);
	if (pid > 0) {
		kill(pid, SIGKILL); /* no-op when it already finished; never leave it blocked */
		waitpid(pid, NULL, 0);
	}
	notifier_free(n);
	close(sv[0]);
	close(res[0]);
	close(go[1]);
	return fig;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Median and range of field F over the rounds that measured case C. */
#define FIELD_STATS(all, c, f, ret_med, ret_min, ret_max)  \
	do {                                               \
		double v_[ROUNDS];                         \
		int n_ = 0;                                \
		for (int r_ = 0; r_ < ROUNDS; r_++)        \
			if ((all)[r_][c].ok)               \
				v_[n_++] = (all)[r_][c].f; \
		*(ret_med) = n_ ? median(v_, n_) : -1;     \
		*(ret_min) = n_ ? v_[0] : -1;              \
		*(ret_max) = n_ ? v_[n_ - 1] : -1;         \
	} while (0)

void bench_sched(void)
{
	static struct sched_figures all[ROUNDS][CASES];
	double base_p25[2] = {-1, -1};

	if (geteuid() != 0) {
		printf("exec answer's delay and the scheduler: skipped (needs root)\n");
		return;
	}
	/* Cases take turns, round after round, so the machine's load falls on all alike. */
	for (int r = 0; r < ROUNDS; r++)
		for (size_t c = 0; c < CASES; c++)
			all[r][c] = measure(&cases[c]);
	printf("%d fork+exec+wait of /bin/true under an execve notifier (SYNC_WAKE_UP), per exec: "
	       "the "
	       "loop's p25 iteration, the answerer's involuntary switches, the loop's migrations "
	       "(medians of %d rounds taking turns; ranges). The target…\n",
	       EXECS, ROUNDS);
	for (size_t c = 0; c < CASES; c++) {
		double p25, p25_lo, p25_hi, p50, lo, hi, pre, pre_lo, pre_hi, mig, mig_lo, mig_hi;
		int layout = cases[c].own_session;
		char delta[48] = "";

		FIELD_STATS(all, c, p25_us, &p25, &p25_lo, &p25_hi);
		if (p25 < 0) {
			printf("  %s: %s\n", cases[c].label,
			       cases[c].nice ? "not measured (nice -10 refused, or failed)"
			                     : "failed to measure");
			continue;
		}
		FIELD_STATS(all, c, p50_us, &p50, &lo, &hi);
		FIELD_STATS(all, c, preempted, &pre, &pre_lo, &pre_hi);
		FIELD_STATS(all, c, migrations, &mig, &mig_lo, &mig_hi);
		if (cases[c].delay_us == 0 && !cases[c].nice && !cases[c].after_us)
			base_p25[layout] = p25;
		else if (base_p25[layout] > 0)
			snprintf(delta, sizeof(delta), ", %+.0f µs over answering at once",
			         p25 - base_p25[layout]);
		printf("  %s: p25 %.0f µs (%.0f to %.0f)%s, median %.0f µs; answerer preempted "
		       "%.2f (%.2f to %.2f), migrations ",
		       cases[c].label, p25, p25_lo, p25_hi, delta, p50, pre, pre_lo, pre_hi);
		if (mig < 0)
			printf("n/a (no perf counter)\n");
		else
			printf("%.2f (%.2f to %.2f)\n", mig, mig_lo, mig_hi);
	}
}
