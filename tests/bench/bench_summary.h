/* The figures of the exec fast path and its neighbours (issue 16's table), each beside its goal:
 * the sections record what they measured, the driver prints one table at the end of the run, in
 * Markdown so that it can be quoted as it is. Timings never fail the bench: a figure over its
 * goal gets a ✗, nothing else. */
#ifndef CLOISTER_BENCH_SUMMARY_H
#define CLOISTER_BENCH_SUMMARY_H

enum bench_row {
	BENCH_ROW_EXEC_LOOP, /* 2000 fork+exec+wait of /bin/true, supervised / native (run) */
	BENCH_ROW_CONFIGURE, /* ./configure of a generated autotools project (programs) */
	BENCH_ROW_EXEC_CPU,  /* the supervisor's CPU per auto-allowed exec, µs (run) */
	BENCH_ROW_NOTIFY,  /* notification round trip, SYNC_WAKE_UP, thread in RECV, µs (notify) */
	BENCH_ROW_COMPILE, /* make -j2 of this project's sources, supervised / native (programs) */
	BENCH_ROW_RSS,     /* the supervisor's RSS while the agent idles, MB (run) */
	BENCH_ROW_PROXY_SETUP, /* connect set-up, transparent proxy minus direct, µs (proxy) */
	BENCH_ROW_COMPILE_ASK, /* the same compile with fs.ask: on-write, supervised / native */
	BENCH_ROW_COMPILE_FS,  /* make -j2, supervised with the fs confinement / without (programs)
	                        */
	BENCH_ROWS,
};

/* Record ROW's figure (the last call wins). The ratios have two: by the wall clock, as the goal
 * is set, and by CPU time (the agent's and the supervisor's), which the machine's load moves
 * less; the goal is met when both are within it. CPU < 0: none. Two rows name their second
 * figure otherwise and judge only the first: the supervisor's time per exec (the phases' sum,
 * and the process CPU clock beside it; NOW < 0 when the phases were not measured) and its
 * memory (RSS, and PSS beside it). */
void bench_summary_set(enum bench_row row, double now, double cpu);

/* Record ROW's floor on this machine: the same figure with none of the supervisor's code in
 * it, only the kernel's mechanism the design rests on (WHAT says which, briefly). A goal under
 * its floor cannot be met by any work of ours, and the table says so. */
void bench_summary_floor(enum bench_row row, double floor, const char *what);

/* The table on stdout: every row, "not measured" for those no section recorded, its floor
 * where a section recorded one. LOAD is the
 * machine's load average before the run (< 0: unknown), CPUS its processor count: from half
 * the processors busy on, the wall-clock ratios say more about the others' work than about ours
 * (supervised runs came out faster than native ones), so the ✓/✗ of a ratio follows its CPU
 * time alone, and the table says so. */
void bench_summary_print(double load, int cpus);

#endif
