/* make bench: every benchmark in one run, so the ratios compare like with like.
 * `make bench ONLY=web` runs only the sections whose name contains "web". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/bench/bench.h"

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
        {"pty", "the agent's terminal: native pty vs run's relay", bench_pty},
        {"web", "dashboard and approval API", bench_web},
        {"executor", "host executor: /bin/true round trip", bench_executor},
        {"shim", "shim fallback: shimmed true vs direct", bench_shim},
};

int main(void)
{
	const char *only = getenv("BENCH_ONLY");
	int printed = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		if (only && *only && !strstr(sections[i].name, only))
			continue;
		printf("%s== %s\n", printed++ ? "\n" : "", sections[i].title);
		sections[i].fn();
	}
	return 0;
}
