/* The summary table, see bench_summary.h. */
#include "tests/bench/bench_summary.h"

#include <stdbool.h>
#include <stdio.h>

enum unit { RATIO, MICROSECONDS, MICROSECONDS_MORE, MEGABYTES };

static const struct {
	const char *figure;
	enum unit unit;  /* of the figure and of the goal */
	double goal;     /* met when the figure is at most this */
	const char *aim; /* said after the goal, or NULL */
} rows[BENCH_ROWS] = {
        [BENCH_ROW_EXEC_LOOP] = {"2000 × fork+exec+wait of /bin/true (the loop alone), "
                                 "supervised / native",
                                 RATIO, 1.05, "aim 1.02×"},
        [BENCH_ROW_CONFIGURE] = {"`./configure` of a generated autotools project, "
                                 "supervised / native",
                                 RATIO, 1.05, NULL},
        [BENCH_ROW_EXEC_CPU] = {"supervisor CPU per auto-allowed exec (idle baseline "
                                "subtracted)",
                                MICROSECONDS, 10, NULL},
        [BENCH_ROW_NOTIFY] = {"notification round trip (SYNC_WAKE_UP, poll loop)", MICROSECONDS, 5,
                              NULL},
        [BENCH_ROW_COMPILE] = {"a real compile (`make -j2` of protocol/, notifier/, "
                               "netfilter/, clean), supervised / native",
                               RATIO, 1.01, NULL},
        [BENCH_ROW_RSS] = {"supervisor RSS while the agent idles", MEGABYTES, 8, NULL},
        [BENCH_ROW_PROXY_SETUP] = {"`connect` set-up through the transparent proxy, over "
                                   "direct",
                                   MICROSECONDS_MORE, 60, NULL},
        [BENCH_ROW_COMPILE_ASK] = {"the same compile with `fs.ask: on-write` (every open that "
                                   "writes notified), supervised / native",
                                   RATIO, 1.03, NULL},
        [BENCH_ROW_COMPILE_FS] = {"the same compile, supervised with the file system's "
                                  "confinement (mounts, Landlock) / without",
                                  RATIO, 1.03, NULL},
};

static double values[BENCH_ROWS], cpu_values[BENCH_ROWS];
static bool measured[BENCH_ROWS];

void bench_summary_set(enum bench_row row, double now, double cpu)
{
	if ((unsigned)row >= BENCH_ROWS)
		return;
	values[row] = now;
	cpu_values[row] = cpu;
	measured[row] = true;
}

/* A figure as measured, or a goal as the issue sets it (fewer digits). */
static void print_value(enum unit unit, double v, bool goal)
{
	switch (unit) {
	case RATIO:
		printf(goal ? "%.2f×" : "%.3f×", v);
		break;
	case MICROSECONDS:
		printf(goal ? "%.0f µs" : "%.1f µs", v);
		break;
	case MICROSECONDS_MORE:
		printf("%+.0f µs", v);
		break;
	case MEGABYTES:
		printf(goal ? "%.0f MB" : "%.1f MB", v);
		break;
	}
}

void bench_summary_print(double load, int cpus)
{
	bool loaded = load >= cpus / 2.0;

	if (load >= 0)
		printf("load average before the run: %.2f on %d CPUs%s\n", load, cpus,
		       loaded ? ": the wall clock is unreliable, ✓/✗ of a ratio by its CPU time"
		              : "");
	printf("| figure | now | goal | |\n|---|---|---|---|\n");
	for (int i = 0; i < BENCH_ROWS; i++) {
		bool has_cpu = cpu_values[i] >= 0;
		bool met = has_cpu && loaded ? cpu_values[i] <= rows[i].goal
		                             : values[i] <= rows[i].goal &&
		                                       (!has_cpu || cpu_values[i] <= rows[i].goal);

		printf("| %s | ", rows[i].figure);
		if (!measured[i])
			printf("not measured");
		else if (cpu_values[i] >= 0)
			printf("wall ");
		if (measured[i])
			print_value(rows[i].unit, values[i], false);
		if (measured[i] && cpu_values[i] >= 0) {
			printf(", CPU ");
			print_value(rows[i].unit, cpu_values[i], false);
		}
		printf(" | ≤ ");
		print_value(rows[i].unit, rows[i].goal, true);
		if (rows[i].aim)
			printf(", %s", rows[i].aim);
		printf(" | %s |\n", !measured[i] ? "–" : met ? "✓" : "✗");
	}
}
