/* make bench: every benchmark in one run, so the ratios compare like with like. */
#include <stdio.h>

#include "tests/bench/bench.h"

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("== core (pure code, per operation)\n");
	bench_core();
	printf("\n== exec interception (seccomp user notification)\n");
	bench_notify();
	printf("\n== exec backstop (eBPF)\n");
	bench_backstop();
	printf("\n== end to end: native vs cloister-supervisor run\n");
	bench_run();
	printf("\n== shim fallback: cloister-shim vs the tool directly\n");
	bench_shim();
	return 0;
}
