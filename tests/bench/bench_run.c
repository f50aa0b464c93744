/* bench_run: what an exec costs under `cloister-supervisor run`, native vs supervised.
 *
 *   - `run -- true` end to end (start-up and teardown), with the task limit and without; and
 *     in a project of 10,100
 *     directories, against an empty one: the end-of-run walk for .git (fs_confine.h);
 *   - 2000 fork+exec+wait of /bin/true (the worst case: nothing but execs), timed by the agent
 *     itself (tests/helpers/execloop -s), so run's start-up and teardown stay out of the ratio;
 *     native and supervised runs take turns, the ratio is the median of the rounds' ratios;
 *   - in the same supervised runs, the supervisor's own CPU time (its process CPU clock, all its
 *     threads) over the loop, less what it spends idle over as long: the cost of an auto-allowed
 *     exec to the supervisor; and its RSS while the agent idles, before and after the loop;
 *   - one more supervised loop with CLOISTER_TRACE_TIMING=1: where the supervisor's time goes,
 *     phase by phase (wall clock, as the supervisor reports it); and one with strace -c attached
 *     to the supervisor over the loop alone: its syscalls per exec, a count no load can move.
 *   - 2000 connect+accept rounds of the agent on its own loopback listener
 *     (tests/helpers/connloop, timed by itself): what egress's attribution of connections
 *     costs a connect (as root the cgroup programs, as nobody a seccomp notification each);
 * The start-up and the loop run as root (with the eBPF backstop) and again as an unprivileged
 * user (nobody: the ptrace backstop, and --no-backstop to show what it costs), whose figures
 * stay out of the summary. Every exec is auto-allowed by a path
 * rule; the audit log is written as in real use. */
#include "tests/bench/bench.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "tests/bench/bench_agent.h"
#include "tests/bench/bench_summary.h"

#define STARTUPS      7
#define USER_STARTUPS 5
#define ROUNDS        5
#define USER_ROUNDS   3
#define EXECS         2000
#define TRACE_EXECS   500
#define IDLE_MS       100
#define STRACE_EXECS  500
#define NOBODY        65534
#define CONNECTS      2000

static struct bench_agent agent;
/* The supervisor's process CPU clock per exec (bench_exec_loop), for the summary's row beside
 * the phases' sum (bench_exec_phases); < 0 until measured. */
static double exec_cpu_us = -1;

/* run -- true, and plain /bin/true, end to end, N times each. */
static void bench_startup(struct bench_agent *a, const char *who, int n)
{
	char *argv[] = {"/bin/true", NULL};
	double nat[STARTUPS], sup[STARTUPS];

	for (int i = 0; i < n; i++) {
		nat[i] = bench_agent_time(a, false, NULL, argv);
		sup[i] = bench_agent_time(a, true, NULL, argv);
		if (nat[i] < 0 || sup[i] < 0) {
			char why[200];

			bench_agent_last_error(a, why, sizeof(why));
			printf("run -- true, %s: failed to measure%s%s\n", who, why[0] ? ": " : "",
			       why);
			return;
		}
	}
	printf("run -- true end to end, %s: %.1f ms (native /bin/true %.2f ms; medians of %d)\n",
	       who, bench_median(sup, n) * 1e3, bench_median(nat, n) * 1e3, n);
}

/* What the task limit costs a start and an end (pids.max written, on a hybrid hierarchy a v1
 * companion leaf made, joined and removed): `run -- true` with the default limit and with
 * --pids-max=off, taking turns. */
static void bench_startup_pids(struct bench_agent *a)
{
	char *argv[] = {"/bin/true", NULL};
	double on[STARTUPS], off[STARTUPS];

	for (int i = 0; i < STARTUPS; i++) {
		a->run_option = NULL;
		on[i] = bench_agent_time(a, true, NULL, argv);
		a->run_option = "--pids-max=off";
		off[i] = bench_agent_time(a, true, NULL, argv);
		a->run_option = NULL;
		if (on[i] < 0 || off[i] < 0) {
			printf("run -- true with the task limit: failed to measure\n");
			return;
		}
	}
	printf("run -- true, root, with the task limit (4096): %.1f ms, --pids-max off: %.1f ms "
	       "(%+.1f ms; medians of %d)\n",
	       bench_median(on, STARTUPS) * 1e3, bench_median(off, STARTUPS) * 1e3,
	       (bench_median(on, STARTUPS) - bench_median(off, STARTUPS)) * 1e3, STARTUPS);
}

/* The end-of-run walk for .git (fs_confine.h): `run -- true` in a project of PROJECT_DIRS
 * directories of 5 empty files each, against an empty project; the cache is warm. */
#define PROJECT_FANOUT 100 /* PROJECT_FANOUT² directories */
static void bench_project_walk(struct bench_agent *a)
{
	char *argv[] = {"/bin/true", NULL};
	char empty[128], big[128], path[256];
	double e[STARTUPS], b[STARTUPS];

	snprintf(empty, sizeof(empty), "%s/empty-project", a->root);
	snprintf(big, sizeof(big), "%s/big-project", a->root);
	if (mkdir(empty, 0755) < 0 || mkdir(big, 0755) < 0)
		goto fail;
	for (int i = 0; i < PROJECT_FANOUT; i++) {
		snprintf(path, sizeof(path), "%s/d%d", big, i);
		if (mkdir(path, 0755) < 0)
			goto fail;
		for (int j = 0; j < PROJECT_FANOUT; j++) {
			snprintf(path, sizeof(path), "%s/d%d/e%d", big, i, j);
			if (mkdir(path, 0755) < 0)
				goto fail;
			for (int k = 0; k < 5; k++) {
				int fd;

				snprintf(path, sizeof(path), "%s/d%d/e%d/f%d", big, i, j, k);
				fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
				if (fd < 0)
					goto fail;
				close(fd);
			}
		}
	}
	for (int i = 0; i < STARTUPS; i++) {
		e[i] = bench_agent_time(a, true, empty, argv);
		b[i] = bench_agent_time(a, true, big, argv);
		if (e[i] < 0 || b[i] < 0)
			goto fail;
	}
	printf("run -- true in a project of %d directories, %d files (the end-of-run .git walk): "
	       "%.1f ms, in an empty one %.1f ms (+%.1f ms; medians of %d)\n",
	       PROJECT_FANOUT * PROJECT_FANOUT + PROJECT_FANOUT,
	       5 * PROJECT_FANOUT * PROJECT_FANOUT, bench_median(b, STARTUPS) * 1e3,
	       bench_median(e, STARTUPS) * 1e3,
	       (bench_median(b, STARTUPS) - bench_median(e, STARTUPS)) * 1e3, STARTUPS);
	return;
fail:
	printf("run -- true in a large project: failed to measure: %s\n", strerror(errno));
}

/* The supervisor's phases of one exec, from the report CLOISTER_TRACE_TIMING=1 makes it print
 * at exit ("cloister: timing: exec PHASE  X us  (mean of N)"). */
static void bench_exec_phases(void)
{
	char loop[256], count[32], line[256], phases[512] = "", cpu[512] = "";
	size_t cpu_len = 0;
	double cpu_sum = 0;
	char *argv[] = {loop, count, "/bin/true", NULL};
	_cleanup_fclose_ FILE *f = NULL;
	unsigned long long n_max = 0;
	size_t len = 0;
	double sum = 0;
	int summed = 0;
	pid_t pid;

	snprintf(loop, sizeof(loop), "%s/execloop", agent.helpers);
	snprintf(count, sizeof(count), "%d", TRACE_EXECS);
	if (bench_agent_spawn(&agent,
	                      &(struct bench_spawn){.supervised = true,
	                                            .argv = argv,
	                                            .stdin_fd = -1,
	                                            .stdout_fd = -1,
	                                            .extra_env = "CLOISTER_TRACE_TIMING=1"},
	                      &pid) < 0 ||
	    bench_agent_wait(pid, 120000) < 0) {
		printf("exec phases: failed to measure\n");
		return;
	}
	f = fopen(agent.stderr_path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		char name[64];
		double us;
		unsigned long long n;
		int end;

		if (sscanf(line, "cloister: timing: exec-cpu %63[^0-9] %lf us (mean of %llu)", name,
		           &us, &n) == 3) {
			for (end = (int)strlen(name); end > 0 && name[end - 1] == ' '; end--)
				;
			name[end] = '\0';
			cpu_sum += us;
			if (cpu_len < sizeof(cpu))
				cpu_len += (size_t)snprintf(cpu + cpu_len, sizeof(cpu) - cpu_len,
				                            "%s%s %.1f", cpu_len ? ", " : "", name,
				                            us);
			continue;
		}
		if (sscanf(line, "cloister: timing: exec %63[^0-9] %lf us (mean of %llu)", name,
		           &us, &n) != 3)
			continue;
		for (end = (int)strlen(name); end > 0 && name[end - 1] == ' '; end--)
			;
		name[end] = '\0';
		if (n > n_max)
			n_max = n;
		/* The definition: all but the answer, where the woken target may run on
		 * this CPU before the supervisor resumes. */
		if (strcmp(name, "answer") != 0) {
			sum += us;
			summed++;
		}
		len += (size_t)snprintf(phases + len, sizeof(phases) - len, "%s%s %.1f",
		                        len ? ", " : "", name, us);
		if (len >= sizeof(phases))
			break;
	}
	if (!phases[0])
		printf("exec phases: the supervisor printed no CLOISTER_TRACE_TIMING report\n");
	else {
		printf("exec phases in the supervisor (CLOISTER_TRACE_TIMING=1, wall clock, means "
		       "over %llu notifications of %d execs): %s µs; receive + read + decide + "
		       "audit (the issue's definition of the supervisor's time per exec): %.1f "
		       "µs\n",
		       n_max, TRACE_EXECS, phases, sum);
		if (cpu[0])
			printf("  the same phases on the supervisor thread's CPU clock (the "
			       "answer's "
			       "wall time less the woken target's): %s µs; all five: %.1f µs\n",
			       cpu, cpu_sum);
		if (summed == 4)
			bench_summary_set(BENCH_ROW_EXEC_CPU, sum, exec_cpu_us);
	}
}

/* ---- the supervisor's syscalls per exec: strace -c attached over the loop alone ---------- */

struct strace_run {
	char out[160]; /* strace's summary */
	pid_t pid;
	FILE *err; /* its stderr, open until it exits (it writes "detached" there) */
};

static int strace_attach(pid_t supervisor, void *userdata)
{
	struct strace_run *st = userdata;
	char target[16], line[256];
	char *argv[] = {"strace", "-c", "-f", "-o", st->out, "-p", target, NULL};
	int fds[2];

	snprintf(target, sizeof(target), "%d", (int)supervisor);
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	st->pid = fork();
	if (st->pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0 ||
		    dup2(fds[1], STDERR_FILENO) < 0)
			_exit(127);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	st->err = fdopen(fds[0], "re");
	if (!st->err)
		close(fds[0]);
	if (st->pid < 0 || !st->err)
		return -EIO;
	/* Every syscall after "attached" is counted: wait for it (strace exits on failure, and
	 * its stderr ends). */
	while (fgets(line, sizeof(line), st->err))
		if (strstr(line, "attached"))
			return 0;
	return -ESRCH;
}

static int strace_detach(pid_t supervisor, void *userdata)
{
	struct strace_run *st = userdata;

	if (st->pid > 0) {
		kill(st->pid, SIGINT); /* detaches and writes the summary */
		bench_agent_wait(st->pid, 30000);
	}
	if (st->err)
		fclose(st->err);
	st->err = NULL;
	st->pid = -1;
	return 0;
}

/* "syscall calls/N, …" from strace -c's table (% time, seconds, usecs/call, calls, [errors,]
 * syscall), most called first, as strace sorts them. */
static int strace_summary(const char *path, long n, char *buf, size_t size, double *ret_total)
{
	char line[256];
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	size_t len = 0;
	double total = -1;

	buf[0] = '\0';
	while (f && fgets(line, sizeof(line), f)) {
		char *tok[8], *save = NULL;
		int k = 0;
		double calls;

		for (char *t = strtok_r(line, " \t\n", &save); t && k < 8;
		     t = strtok_r(NULL, " \t\n", &save))
			tok[k++] = t;
		if ((k != 5 && k != 6) || sscanf(tok[3], "%lf", &calls) != 1 ||
		    !strchr("0123456789", tok[0][0]))
			continue;
		if (strcmp(tok[k - 1], "total") == 0) {
			total = calls / (double)n;
			continue;
		}
		if (len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s%s %.3g", len ? ", " : "",
			                        tok[k - 1], calls / (double)n);
	}
	if (total < 0)
		return -ENODATA;
	*ret_total = total;
	return 0;
}

static void bench_exec_syscalls(void)
{
	struct strace_run st = {.pid = -1, .err = NULL};
	struct bench_loop_hooks hooks = {
	        .before = strace_attach, .after = strace_detach, .userdata = &st};
	char *argv[] = {"/bin/true", NULL};
	char calls[600];
	struct bench_loop res;
	double total;
	int r;

	if (access("/usr/bin/strace", X_OK) < 0) {
		printf("syscalls per exec: skipped (no strace: scripts/install-deps installs "
		       "it)\n");
		return;
	}
	snprintf(st.out, sizeof(st.out), "%s/strace.txt", agent.root);
	r = bench_agent_loop(&agent, true, NULL, STRACE_EXECS, argv, 0, &hooks, &res);
	strace_detach(0, &st); /* when the loop failed between the hooks; else a no-op */
	if (r >= 0)
		r = strace_summary(st.out, STRACE_EXECS, calls, sizeof(calls), &total);
	if (r < 0) {
		printf("syscalls per exec: failed to measure (%s)\n", strerror(-r));
		return;
	}
	printf("the supervisor's syscalls per auto-allowed exec (strace -c over %d execs): %.3g: "
	       "%s\n",
	       STRACE_EXECS, total, calls);
}

/* ROUNDS pairs of the loop as A's user (WHO says which); issue 16's rows when SUMMARY. */
static void bench_exec_loop(struct bench_agent *a, const char *who, int rounds, bool summary)
{
	char *argv[] = {"/bin/true", NULL};
	double n_wall[ROUNDS], s_wall[ROUNDS], ratio[ROUNDS], n_cpu[ROUNDS], s_cpu[ROUNDS];
	double cpu_ratio[ROUNDS], per_exec_us[ROUNDS], idle_pct[ROUNDS], sup_cpu[ROUNDS];
	double rss_idle[ROUNDS], rss_after[ROUNDS], rss_anon[ROUNDS], rss_file[ROUNDS], pss[ROUNDS];
	double sw[ROUNDS];
	double wall, cpu, rss, pss_median;

	for (int i = 0; i < rounds; i++) {
		struct bench_loop nat, sup;
		/* Each round starts with the other one: a trend in the machine's load hits both. */
		bool native_first = i % 2 == 0;
		int r = bench_agent_loop(a, !native_first, NULL, EXECS, argv, IDLE_MS, NULL,
		                         native_first ? &nat : &sup);

		if (r >= 0)
			r = bench_agent_loop(a, native_first, NULL, EXECS, argv, IDLE_MS, NULL,
			                     native_first ? &sup : &nat);
		if (r < 0) {
			char why[200];

			bench_agent_last_error(a, why, sizeof(why));
			printf("%d fork+exec+wait of /bin/true, %s: failed to measure (%s)%s%s\n",
			       EXECS, who, strerror(-r), why[0] ? ": " : "", why);
			return;
		}
		n_wall[i] = nat.loop_s;
		s_wall[i] = sup.loop_s;
		ratio[i] = sup.loop_s / nat.loop_s;
		n_cpu[i] = nat.agent_cpu_s;
		s_cpu[i] = sup.agent_cpu_s + sup.sup_cpu_s;
		cpu_ratio[i] = s_cpu[i] / n_cpu[i];
		sup_cpu[i] = sup.sup_cpu_s;
		idle_pct[i] = 100 * sup.sup_idle_cpu_s / sup.idle_s;
		per_exec_us[i] = (sup.sup_cpu_s - sup.sup_idle_cpu_s / sup.idle_s * sup.loop_s) /
		                 EXECS * 1e6;
		rss_idle[i] = (double)sup.rss_idle_kib / 1024;
		rss_after[i] = (double)sup.rss_after_kib / 1024;
		rss_anon[i] = (double)sup.rss_anon_idle_kib / 1024;
		rss_file[i] = (double)sup.rss_file_idle_kib / 1024;
		pss[i] = (double)sup.pss_idle_kib / 1024;
		sw[i] = (double)sup.sup_switches / EXECS;
	}
	/* bench_median() sorts: the rounds' extremes are at both ends, to show the noise. */
	wall = bench_median(ratio, rounds);
	cpu = bench_median(cpu_ratio, rounds);
	printf("%d fork+exec+wait of /bin/true, %s, the loop alone (run's start-up and teardown "
	       "left out), %d rounds taking turns: native %.3f s, supervised %.3f s (medians): "
	       "%.3fx (median of the rounds' ratios, %.3f to %.3f)\n",
	       EXECS, who, rounds, bench_median(n_wall, rounds), bench_median(s_wall, rounds), wall,
	       ratio[0], ratio[rounds - 1]);
	printf("  CPU time over the loop, the agent's and its children's (+ the supervisor's): "
	       "native %.3f s, supervised %.3f s: %.3fx (%.3f to %.3f; the machine's load moves it "
	       "less than the wall clock)\n",
	       bench_median(n_cpu, rounds), bench_median(s_cpu, rounds), cpu, cpu_ratio[0],
	       cpu_ratio[rounds - 1]);
	printf("  supervisor CPU per auto-allowed exec: %.1f µs (%.3f s over the loop, less its "
	       "idle baseline of %.2f %% of a CPU); %.2f context switches an exec\n",
	       bench_median(per_exec_us, rounds), bench_median(sup_cpu, rounds),
	       bench_median(idle_pct, rounds), bench_median(sw, rounds));
	/* Sorted by bench_median() before their extremes are read. */
	rss = bench_median(rss_idle, rounds);
	pss_median = bench_median(pss, rounds);
	printf("  supervisor RSS while the agent idles: %.1f MB (%.1f to %.1f): anonymous %.1f MB, "
	       "files %.1f MB (its binary and the shared libraries); PSS %.1f MB (%.1f to %.1f); "
	       "RSS after %d execs: %.1f MB\n",
	       rss, rss_idle[0], rss_idle[rounds - 1], bench_median(rss_anon, rounds),
	       bench_median(rss_file, rounds), pss_median, pss[0], pss[rounds - 1], EXECS,
	       bench_median(rss_after, rounds));
	if (!summary)
		return;
	bench_summary_set(BENCH_ROW_EXEC_LOOP, wall, cpu);
	/* The phases' sum comes with bench_exec_phases(). */
	exec_cpu_us = bench_median(per_exec_us, rounds);
	bench_summary_set(BENCH_ROW_EXEC_CPU, -1, exec_cpu_us);
	bench_summary_set(BENCH_ROW_RSS, rss, pss_median);
}

/* The mean µs of one connect+accept round of tests/helpers/connloop N, or -1. */
static double connloop_us(const struct bench_agent *a, bool supervised)
{
	char n[16], out[128] = "";
	char path[200];
	char *argv[] = {path, n, NULL};
	int fds[2];
	double us = -1;
	ssize_t got;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/connloop", a->helpers);
	snprintf(n, sizeof(n), "%d", CONNECTS);
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	struct bench_spawn sp = {
	        .supervised = supervised, .argv = argv, .stdin_fd = -1, .stdout_fd = fds[1]};
	if (bench_agent_spawn(a, &sp, &pid) < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	close(fds[1]);
	got = read(fds[0], out, sizeof(out) - 1);
	close(fds[0]);
	if (bench_agent_wait(pid, 60000) < 0 || got <= 0)
		return -1;
	out[got] = '\0';
	if (sscanf(out, "connloop-us %lf", &us) != 1)
		return -1;
	return us;
}

/* The agent's connect+accept loop on loopback, native and supervised taking turns. */
static void bench_connect_loop(struct bench_agent *a, const char *who, int rounds)
{
	double nat[ROUNDS], sup[ROUNDS], ratio[ROUNDS];

	for (int i = 0; i < rounds; i++) {
		bool native_first = i % 2 == 0;
		double x = connloop_us(a, !native_first);
		double y = x < 0 ? -1 : connloop_us(a, native_first);

		if (y < 0) {
			char why[200];

			bench_agent_last_error(a, why, sizeof(why));
			printf("%d connect+accept on loopback, %s: failed to measure%s%s\n",
			       CONNECTS, who, why[0] ? ": " : "", why);
			return;
		}
		nat[i] = native_first ? x : y;
		sup[i] = native_first ? y : x;
		ratio[i] = sup[i] / nat[i];
	}
	/* bench_median() sorts: the rounds' extremes are at both ends once it returns. */
	double mid = bench_median(ratio, rounds);

	printf("%d connect+accept of the agent on its own loopback listener, %s, %d rounds "
	       "taking turns: native %.1f µs, supervised %.1f µs a round (medians): %.2fx (%.2f "
	       "to %.2f)\n",
	       CONNECTS, who, rounds, bench_median(nat, rounds), bench_median(sup, rounds), mid,
	       ratio[0], ratio[rounds - 1]);
}

/* Root has the eBPF backstop, an unprivileged user the ptrace one (and --no-backstop shows what
 * that costs). Issue 16's figures are root's. */
void bench_run(void)
{
	struct bench_agent user = {.root = ""};
	int r = bench_agent_setup(&agent, 0, NULL);

	if (r == -ENOENT) {
		printf("end to end: skipped (run through `make bench`: SUPERVISOR and HELPERS "
		       "unset)\n");
		return;
	}
	if (r >= 0 && geteuid() != 0)
		printf("end to end: skipped (needs root for the backstop and cgroups)\n");
	else if (r < 0)
		printf("end to end: could not set up %s: %s\n", agent.root, strerror(-r));
	else {
		bench_startup(&agent, "root", STARTUPS);
		bench_startup_pids(&agent);
		bench_project_walk(&agent);
		bench_exec_loop(&agent, "root (eBPF backstop)", ROUNDS, true);
		bench_connect_loop(&agent, "root (cgroup eBPF attribution)", ROUNDS);
		bench_exec_phases();
		bench_exec_syscalls();
		r = bench_agent_setup(&user, NOBODY, NULL);
		if (r < 0)
			printf("unprivileged: could not set up %s: %s\n", user.root, strerror(-r));
		else {
			bench_startup(&user, "unprivileged", USER_STARTUPS);
			bench_exec_loop(&user, "unprivileged (ptrace backstop)", USER_ROUNDS,
			                false);
			bench_connect_loop(&user, "unprivileged (a connect notification each)",
			                   USER_ROUNDS);
			/* What the ptrace backstop costs. */
			user.run_option = "--no-backstop";
			bench_exec_loop(&user, "unprivileged, --no-backstop", USER_ROUNDS, false);
		}
	}
	bench_agent_cleanup(&user);
	bench_agent_cleanup(&agent);
}
