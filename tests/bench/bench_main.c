/* make bench: every benchmark in one run, so the ratios compare like with like, and at the end
 * the summary of the exec fast path's figures against their goals (bench_summary.h).
 * `make bench ONLY=web` runs only the sections whose name contains "web". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/bench/bench.h"
#include "tests/bench/bench_summary.h"

static const struct {
	const char *name;
	const char *title;
	void (*fn)(void);
} sections[] = {
        {"core", "core (pure code, per operation)", bench_core},
        {"loop", "supervisor loop: fd and timer registration at scale", bench_loop},
        {"notify", "exec interception (seccomp user notification)", bench_notify},
        {"sched", "exec answer's delay and the scheduler (preemption, exec balancing)",
         bench_sched},
        {"backstop", "exec backstop (eBPF)", bench_backstop},
        {"netfilter", "egress: nftables redirect in the sandbox netns (no proxy)", bench_netfilter},
        {"proxy", "egress proxy: transparent and CONNECT vs direct and tinyproxy", bench_proxy},
        {"run", "end to end: native vs cloister-supervisor run", bench_run},
        {"pty", "the agent's terminal: native pty vs run's relay", bench_pty},
        {"web", "dashboard and approval API", bench_web},
        {"executor", "host executor: /bin/true round trip", bench_executor},
        {"shim", "shim fallback: shimmed true vs direct", bench_shim},
        {"programs", "exec-heavy programs: ./configure and a compile, native vs supervised",
         bench_programs},
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The 1-minute load average, -1 when unknown. */
static double load_average(void)
{
	double load = -1;
	FILE *f = fopen("/proc/loadavg", "re");

	if (f) {
		if (fscanf(f, "%lf", &load) != 1)
			load = -1;
		fclose(f);
	}
	return load;
}

int main(void)
{
	const char *only = getenv("BENCH_ONLY");
	/* What the rest of the machine runs, before this run adds its own. */
	double load = load_average(), t0 = now_s(), took[sizeof(sections) / sizeof(sections[0])];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int printed = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		double t = now_s();

		took[i] = -1;
		if (only && *only && !strstr(sections[i].name, only))
			continue;
		printf("%s== %s\n", printed++ ? "\n" : "", sections[i].title);
		sections[i].fn();
		took[i] = now_s() - t;
	}
	printf("\n== summary: issue 16's figures from this run (a shared machine's timings are "
	       "noisy; a bench never fails on them)\n");
	bench_summary_print(load, cpus > 0 ? (int)cpus : 1);
	printf("(make bench took %.0f s:", now_s() - t0);
	for (size_t i = 0, n = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
		if (took[i] >= 0)
			printf("%s %s %.0f s", n++ ? "," : "", sections[i].name, took[i]);
	printf(")\n");
	return 0;
}
