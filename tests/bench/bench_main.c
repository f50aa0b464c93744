/* make bench: every benchmark in one run, so the ratios compare like with like, and at the end
 * the summary of the exec fast path's figures against their goals (bench_summary.h).
 * `make bench ONLY=web` runs only the sections whose name contains "web". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
        {"backstop", "exec backstop (eBPF)", bench_backstop},
        {"netfilter", "egress: nftables redirect in the sandbox netns (no proxy)", bench_netfilter},
        {"proxy", "egress proxy: transparent and CONNECT vs direct and tinyproxy", bench_proxy},
        {"run", "end to end: native vs cloister-supervisor run", bench_run},
        {"web", "dashboard and approval API", bench_web},
        {"executor", "host executor: /bin/true round trip", bench_executor},
        {"shim", "shim fallback: shimmed true vs direct", bench_shim},
        {"programs", "exec-heavy programs: ./configure and a compile, native vs supervised",
         bench_programs},
};

int main(void)
{
	const char *only = getenv("BENCH_ONLY");
	int printed = 0;
	struct timespec t0, t1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		if (only && *only && !strstr(sections[i].name, only))
			continue;
		printf("%s== %s\n", printed++ ? "\n" : "", sections[i].title);
		sections[i].fn();
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("\n== summary: issue 16's figures from this run (a shared machine's timings are "
	       "noisy; a bench never fails on them)\n");
	bench_summary_print();
	printf("(make bench took %.0f s)\n",
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
