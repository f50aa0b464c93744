/* Exec overhead of the exec backstop: 2000 fork+exec+wait of /bin/true in each of
 *   - no backstop loaded (baseline),
 *   - backstop attached, in a cgroup that is not a sandbox (what every other process pays),
 *   - a registered sandbox with /bin/true approved (what the agent pays), each exec's
 *     arguments expected as the supervisor expects them (one store into the table shared with
 *     the program, from the exec'ing child, then the kernel side's hash of the new image's
 *     arguments).
 * The 2000 are run as 10 interleaved blocks of 200 (baseline, attached, sandbox, baseline…) so
 * that load from other processes drifting over the run hits the three alike; wall and CPU time
 * are printed per exec and as ratios to the baseline. The program's own run time per exec, from
 * the kernel's BPF statistics, is printed too: on a busy machine it is the precise figure. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "bpf/backstop.h"
#include "supervisor/exec/args_digest.h"
#include "tests/bench/bench.h"

#define BENCH_EXECS  2000
#define BENCH_BLOCKS 10

struct timing {
	double wall, cpu; /* seconds; cpu: user+system of the loop and of the execs */
};

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_seconds(void)
{
	struct rusage self, children;

	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &children);
	return (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec + children.ru_utime.tv_sec +
	                children.ru_stime.tv_sec) +
	       (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec + children.ru_utime.tv_usec +
	                children.ru_stime.tv_usec) /
	               1e6;
}

/* The backstop's shared mappings (its ring buffer, its maps' data) are inherited by every
 * fork, and the kernel copies their page table entries at each one (they are mapped page by
 * page, VM_MIXEDMAP): ~200 pages that the agent's forks never carry (the supervisor forks the
 * agent once, and it execs). So that the timed forks of the runner do not pay for them, the
 * runner keeps only what the exec'ing child writes (KEEP_WRITABLE: the table of expected
 * arguments, and the ring buffer's consumer page, one mapping of one page). Best effort. */
static void runner_drops_bpf_mappings(bool keep_writable)
{
	char line[512];
	FILE *maps = fopen("/proc/self/maps", "re");

	if (!maps)
		return;
	while (fgets(line, sizeof(line), maps)) {
		unsigned long lo, hi;
		char perms[8];

		if (!strstr(line, "anon_inode:bpf-map") ||
		    sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3)
			continue;
		if (keep_writable && perms[1] == 'w')
			continue;
		madvise((void *)lo, hi - lo, MADV_DONTFORK);
	}
	fclose(maps);
}

/* Run n fork+exec+wait of /bin/true from a child moved into cgroup and add the time taken to
 * *total; with EXPECT, each exec's arguments are expected there first. Returns 0, or -1 on any
 * failure. */
static int time_execs_in(const char *cgroup, int n, struct backstop *expect, struct timing *total)
{
	static const char *const argv[] = {"true"};
	struct backstop_args args;
	uint64_t key[2];

	char procs[PATH_MAX];
	int pipefd[2], status, r = 0;
	struct timing t;
	pid_t runner;

	if (snprintf(procs, sizeof(procs), "%s/cgroup.procs", cgroup) >= (int)sizeof(procs))
		return -1;
	if (expect) {
		backstop_args_key(expect, key);
		args_digest_of_exec(key, argv, 1, false, false, &args);
	}
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -1;
	runner = fork();
	if (runner < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return -1;
	}
	if (runner == 0) {
		int fd = open(procs, O_WRONLY | O_CLOEXEC);
		double start, start_cpu;

		if (fd < 0 || write(fd, "0", 1) != 1)
			_exit(1);
		close(fd);
		runner_drops_bpf_mappings(expect != NULL);
		start = now_seconds();
		start_cpu = cpu_seconds();
		for (int i = 0; i < n; i++) {
			pid_t pid = fork();

			if (pid < 0)
				_exit(1);
			if (pid == 0) {
				if (expect && backstop_expect_args(expect, getpid(), &args) < 0)
					_exit(126);
				execl("/bin/true", "true", (char *)NULL);
				_exit(127);
			}
			if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
			    WEXITSTATUS(status) != 0)
				_exit(1);
		}
		t.wall = now_seconds() - start;
		t.cpu = cpu_seconds() - start_cpu;
		_exit(write(pipefd[1], &t, sizeof(t)) == sizeof(t) ? 0 : 1);
	}
	close(pipefd[1]);
	if (read(pipefd[0], &t, sizeof(t)) != sizeof(t))
		r = -1;
	close(pipefd[0]);
	if (waitpid(runner, &status, 0) != runner || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		r = -1;
	if (r == 0) {
		total->wall += t.wall;
		total->cpu += t.cpu;
	}
	return r;
}

static void print_row(const char *name, struct timing t, struct timing base)
{
	printf("bench_backstop:   %-24s %8.1f %7.3f %8.1f %7.3f\n", name,
	       t.wall / BENCH_EXECS * 1e6, t.wall / base.wall, t.cpu / BENCH_EXECS * 1e6,
	       t.cpu / base.cpu);
}

/* What the supervisor pays per exec it lets through to tell the backstop the arguments. The
 * thread ids are made up (none runs): 512 of them, half the table's slots in use. */
static void time_expect_args(struct backstop *b)
{
	const struct backstop_args a = {.hash = 1, .len = 5, .mode = BACKSTOP_ARGS_FULL};
	const int n = 200000;
	double start = now_seconds();

	for (int i = 0; i < n; i++)
		if (backstop_expect_args(b, 4000000 + (i % 512), &a) < 0) {
			printf("bench_backstop: recording expected arguments failed\n");
			return;
		}
	printf("bench_backstop: the supervisor recording an exec's expected arguments: %.3f us\n",
	       (now_seconds() - start) / n * 1e6);
}

/* One block of each variant; loads and frees its own backstop. */
static int run_block(const char *plain, const char *sandbox, uint64_t sandbox_id,
                     const struct stat *truebin, struct timing t[3], bool first)
{
	const int n = BENCH_EXECS / BENCH_BLOCKS;
	struct cl_error err = {{0}};
	struct backstop *b = NULL;
	int r;

	if (time_execs_in(plain, n, NULL, &t[0]) < 0)
		return -1;
	r = backstop_open(&b, &err);
	if (r < 0) {
		printf("bench_backstop: skipped: %s\n", err.msg);
		return -1;
	}
	if (first)
		printf("bench_backstop: mode %s\n", backstop_mode_name(b));
	r = -1;
	if (time_execs_in(plain, n, NULL, &t[1]) < 0)
		goto out;
	if (backstop_add_sandbox(b, sandbox_id) < 0 ||
	    backstop_allow(b, sandbox_id, truebin->st_dev, truebin->st_ino,
	                   &(struct backstop_version){truebin->st_ctim.tv_sec * 1000000000ull +
	                                                      truebin->st_ctim.tv_nsec,
	                                              truebin->st_size}) < 0) {
		printf("bench_backstop: skipped: cannot register the sandbox\n");
		goto out;
	}
	if (time_execs_in(sandbox, n, b, &t[2]) < 0)
		goto out;
	if (first) {
		/* Statistics cost a little themselves: taken in a loop of their own. */
		struct timing unused = {0, 0};
		uint64_t run_ns = 0, run_cnt = 0, insns = 0;
		int stats_fd;

		if (backstop_verified_insns(b, &insns) == 0)
			printf("bench_backstop: verifier walked %llu instructions to load it\n",
			       (unsigned long long)insns);
		/* Per exec of a task of no sandbox (what every other process pays), then of the
		 * registered sandbox's (the file and the arguments checked). Other processes'
		 * execs of these moments are counted too: the runs are printed. */
		stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		for (int k = 0; k < 2; k++) {
			uint64_t ns0 = 0, cnt0 = 0;

			if (stats_fd >= 0 && backstop_prog_stats(b, &ns0, &cnt0) == 0 &&
			    time_execs_in(k ? sandbox : plain, n, k ? b : NULL, &unused) == 0 &&
			    backstop_prog_stats(b, &run_ns, &run_cnt) == 0 && run_cnt > cnt0)
				printf("bench_backstop: program run time %.3f us per exec %s (%llu "
				       "runs)\n",
				       (double)(run_ns - ns0) / (double)(run_cnt - cnt0) / 1e3,
				       k ? "in the registered sandbox" : "of no sandbox",
				       (unsigned long long)(run_cnt - cnt0));
			else
				printf("bench_backstop: program run time: BPF statistics "
				       "unavailable\n");
		}
		if (stats_fd >= 0)
			close(stats_fd);
		time_expect_args(b);
	}
	r = 0;
out:
	backstop_free(b);
	return r;
}

void bench_backstop(void)
{
	struct timing t[3] = {{0, 0}, {0, 0}, {0, 0}};
	char plain[PATH_MAX], sandbox[PATH_MAX];
	char *mount = NULL;
	uint64_t sandbox_id;
	struct stat st;
	int r;

	if (geteuid() != 0) {
		printf("bench_backstop: skipped: needs root (BPF programs, cgroups)\n");
		return;
	}
	r = backstop_cgroup2_mount(&mount);
	if (r < 0) {
		printf("bench_backstop: skipped: no cgroup2 mount: %s\n", strerror(-r));
		return;
	}
	r = snprintf(plain, sizeof(plain), "%s/cloister-bench-backstop-%d-plain", mount,
	             (int)getpid());
	if (r > 0 && r < (int)sizeof(plain))
		r = snprintf(sandbox, sizeof(sandbox), "%s/cloister-bench-backstop-%d-sandbox",
		             mount, (int)getpid());
	free(mount);
	if (r <= 0 || r >= (int)sizeof(sandbox)) {
		printf("bench_backstop: skipped: cgroup2 mount path too long\n");
		return;
	}
	if (mkdir(plain, 0755) < 0 || mkdir(sandbox, 0755) < 0) {
		printf("bench_backstop: skipped: cannot create cgroups: %s\n", strerror(errno));
		goto out;
	}
	if (backstop_cgroup_id(sandbox, &sandbox_id) < 0 || stat("/bin/true", &st) < 0) {
		printf("bench_backstop: skipped: cgroup id or stat /bin/true failed\n");
		goto out;
	}
	for (int block = 0; block < BENCH_BLOCKS; block++) {
		if (run_block(plain, sandbox, sandbox_id, &st, t, block == 0) < 0) {
			printf("bench_backstop: failed: an exec loop failed\n");
			goto out;
		}
	}
	printf("bench_backstop: %d fork+exec+wait of /bin/true each, %d interleaved blocks\n",
	       BENCH_EXECS, BENCH_BLOCKS);
	printf("bench_backstop:   %-24s %8s %7s %8s %7s\n", "", "wall us", "ratio", "cpu us",
	       "ratio");
	print_row("no backstop", t[0], t[0]);
	print_row("attached, unregistered", t[1], t[0]);
	print_row("registered sandbox", t[2], t[0]);
out:
	rmdir(sandbox);
	rmdir(plain);
}
