/* The summary table, see bench_summary.h. */
#include "tests/bench/bench_summary.h"

#include <stdbool.h>
#include <stdio.h>

enum unit { RATIO, MICROSECONDS, MICROSECONDS_MORE, MEGABYTES };

/* A row's two figures: the ratios' by the wall clock and by CPU time, both held to the goal;
 * elsewhere the first is the one the goal is about and the second is shown beside it. */
struct labels {
	const char *first, *second;
	bool second_judged;
};
static const struct labels ratio_labels = {"wall", "CPU", true};

static const struct {
	const char *figure;
	enum unit unit;  /* of the figure and of the goal */
	double goal;     /* met when the figure is at most this */
	const char *aim; /* said after the goal, or NULL */
	struct labels labels;
} rows[BENCH_ROWS] = {
        [BENCH_ROW_EXEC_LOOP] = {"2000 × fork+exec+wait of /bin/true (the loop alone), "
                                 "supervised / native",
                                 RATIO, 1.05, "aim 1.02×", ratio_labels},
        [BENCH_ROW_CONFIGURE] = {"`./configure` of a generated autotools project, "
                                 "supervised / native",
                                 RATIO, 1.05, NULL, ratio_labels},
        /* The figure is the sum of the supervisor's phases of one exec by the wall
         * clock (receive + read target + decide + audit); the process CPU clock also counts
         * the answer, the context switches and epoll_wait, which that sum leaves out. */
        [BENCH_ROW_EXEC_CPU] = {"supervisor time per auto-allowed exec",
                                MICROSECONDS,
                                10,
                                NULL,
                                {"phases' sum (receive + read + decide + audit, the issue's "
                                 "definition)",
                                 "process CPU clock (idle baseline subtracted)", false}},
        [BENCH_ROW_NOTIFY] = {"notification round trip (SYNC_WAKE_UP, thread in RECV)",
                              MICROSECONDS, 5, NULL, ratio_labels},
        [BENCH_ROW_COMPILE] = {"a real compile (`make -j2` of protocol/, notifier/, "
                               "netfilter/, clean), supervised / native",
                               RATIO, 1.01, NULL, ratio_labels},
        /* The figure is RSS, every page the supervisor maps, libc's and the other
         * shared libraries' included; PSS, its share of those (what it costs the machine),
         * is shown beside it. */
        [BENCH_ROW_RSS] =
                {"supervisor RSS while the agent idles", MEGABYTES, 8, NULL, {"RSS", "PSS", false}},
        [BENCH_ROW_PROXY_SETUP] = {"`connect` set-up through the transparent proxy, over "
                                   "direct",
                                   MICROSECONDS_MORE, 60, NULL, ratio_labels},
        [BENCH_ROW_COMPILE_ASK] = {"the same compile with `fs.ask: on-write` (every open that "
                                   "writes notified), supervised / native",
                                   RATIO, 1.03, NULL, ratio_labels},
        [BENCH_ROW_COMPILE_FS] = {"the same compile, supervised with the file system's "
                                  "confinement (mounts, Landlock) / without",
                                  RATIO, 1.03, NULL, ratio_labels},
};

static double values[BENCH_ROWS], cpu_values[BENCH_ROWS], floors[BENCH_ROWS];
static const char *floor_what[BENCH_ROWS];
static bool measured[BENCH_ROWS], floor_measured[BENCH_ROWS];

void bench_summary_set(enum bench_row row, double now, double cpu)
{
	if ((unsigned)row >= BENCH_ROWS)
		return;
	values[row] = now;
	cpu_values[row] = cpu;
	measured[row] = true;
}

void bench_summary_floor(enum bench_row row, double floor, const char *what)
{
	if ((unsigned)row >= BENCH_ROWS)
		return;
	floors[row] = floor;
	floor_what[row] = what;
	floor_measured[row] = true;
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
	printf("| figure | now | goal | floor here | |\n|---|---|---|---|---|\n");
	for (int i = 0; i < BENCH_ROWS; i++) {
		const struct labels *l = &rows[i].labels;
		bool has_cpu = cpu_values[i] >= 0 && l->second_judged;
		/* values[i] < 0: only the second figure was measured. */
		bool has_first = values[i] >= 0;
		bool met = has_cpu && loaded ? cpu_values[i] <= rows[i].goal
		           : has_first       ? values[i] <= rows[i].goal &&
		                                 (!has_cpu || cpu_values[i] <= rows[i].goal)
		                       : false;

		printf("| %s | ", rows[i].figure);
		if (!measured[i])
			printf("not measured");
		if (measured[i] && (has_first || cpu_values[i] < 0)) {
			if (cpu_values[i] >= 0)
				printf("%s ", l->first);
			print_value(rows[i].unit, values[i], false);
		}
		if (measured[i] && cpu_values[i] >= 0) {
			printf("%s%s ", has_first ? ", " : "", l->second);
			print_value(rows[i].unit, cpu_values[i], false);
		}
		printf(" | ≤ ");
		print_value(rows[i].unit, rows[i].goal, true);
		if (rows[i].aim)
			printf(", %s", rows[i].aim);
		printf(" | ");
		if (floor_measured[i]) {
			print_value(rows[i].unit, floors[i], false);
			/* A loaded machine raises the floor as much as the figure. */
			printf(" (%s)%s", floor_what[i],
			       loaded                     ? ""
			       : floors[i] > rows[i].goal ? ": the goal is under it"
			                                  : "");
		} else {
			printf("–");
		}
		printf(" | %s |\n", !measured[i] ? "–" : met ? "✓" : "✗");
	}
}
