/* Benchmarks, each a function that prints its figures (ratios where there is a baseline);
 * the driver (main, written by the lead) calls them in one run. */
#ifndef CLOISTER_BENCH_H
#define CLOISTER_BENCH_H

/* The exec backstop's cost on fork+exec+wait of /bin/true (tests/bench/bench_backstop.c). */
void bench_backstop(void);

/* Seccomp notification round trip with and without SYNC_WAKE_UP, the cost of reading an exec
 * event, and native vs notified fork+exec+wait of /bin/true (tests/bench/bench_notify.c).
 * Needs root; prints a skip line otherwise. */
void bench_notify(void);

/* Why time spent before an exec's answer can cost the agent several times itself: a fork+exec
 * loop under a notifier answered after 0, 13 or 30 µs, the target in the answerer's session or
 * in its own (as run's agent), with the answerer's preemptions and the loop's migrations per
 * exec (tests/bench/bench_sched.c). Needs root; prints a skip line otherwise. */
void bench_sched(void);

/* Per-operation cost of the pure core: canonical quoting, exec and domain policy, frame
 * decoding against memcpy (tests/bench/bench_core.c). */
void bench_core(void);

/* The supervisor loop: registering, modifying and deleting N fds, adding and cancelling N
 * timers and firing N due ones, for N = 100, 1000, 10000 (tests/bench/bench_loop.c). */
void bench_loop(void);

/* End to end: `run -- true` latency; native vs under `cloister-supervisor run` for 2000
 * fork+exec+wait of /bin/true, with the supervisor's CPU, syscalls and context switches per exec,
 * its phases and its RSS; as root and as an unprivileged user (tests/bench/bench_run.c). Needs
 * $SUPERVISOR and $HELPERS (set by `make bench`). */
void bench_run(void);

/* The agent's terminal: 64 MiB of text natively to a pty vs through `run`'s pty relay
 * (tests/bench/bench_pty.c). Needs $SUPERVISOR and root. */
void bench_pty(void);

/* The dashboard: POST /approve until the held exec resumes, GET /pending with 1000 asks,
 * SSE fan-out to 100 clients (tests/bench/bench_web.c). */
void bench_web(void);

/* The nat redirect alone, in a netns of ours: connect set-up and bulk throughput to a plain
 * accept + echo server, direct vs redirected (tests/bench/bench_netfilter.c). Needs root. */
void bench_netfilter(void);

/* The round trip of /bin/true through the local executor and through a `cloister-supervisor
 * executor` process over TCP ($SUPERVISOR; an in-process server without it), against plain
 * fork+exec+wait (tests/bench/bench_executor.c). */
void bench_executor(void);

/* A shimmed `true` (cloister-shim -> shim listener, host strategy, allowed) against `true`
 * run directly (tests/bench/bench_shim.c). Needs $SHIM and $HELPERS (set by `make bench`). */
void bench_shim(void);

/* The egress proxy: connect set-up and bulk throughput direct, through the transparent proxy
 * (relay.c, from a netns with the rules), through the CONNECT proxy and through tinyproxy;
 * the proxy's RSS with 1000 tunnels open (tests/bench/bench_proxy.c). Needs root. */
void bench_proxy(void);

/* Exec-heavy real programs native vs under `cloister-supervisor run`: `./configure` of a
 * generated autotools project, `make -j2` of a copy of this project's sources
 * (tests/bench/bench_programs.c). Needs $SUPERVISOR, $HELPERS, $BENCH_SOURCES, $BENCH_CFLAGS. */
void bench_programs(void);

#endif
