/* Per-phase timing on stderr, see trace_timing.h. */
#include "base/trace_timing.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static bool enabled;
static uint64_t exec_ns; /* the process's start, CLOCK_BOOTTIME */
static uint64_t last_ns;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The process's start time (field 22 of /proc/self/stat, clock ticks since boot): coarse
 * (10 ms with HZ=100), but it shows what happened before main. 0 when unknown. */
static uint64_t start_ns(void)
{
	char buf[1024];
	const char *p;
	ssize_t n;
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	long hz = sysconf(_SC_CLK_TCK);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0 || hz <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return 0;
	return strtoull(p + 1, NULL, 10) * (1000000000u / (uint64_t)hz);
}

void trace_timing_init(void)
{
	const char *v = getenv("CLOISTER_TRACE_TIMING");

	enabled = v && strcmp(v, "1") == 0;
	if (!enabled)
		return;
	exec_ns = start_ns();
	last_ns = now_ns(CLOCK_BOOTTIME);
	if (exec_ns)
		fprintf(stderr, "cloister: timing: %-36s +%7.2f ms\n", "exec to main (coarse)",
		        (double)(last_ns - exec_ns) / 1e6);
	else
		exec_ns = last_ns;
}

void trace_timing_mark(const char *phase)
{
	uint64_t now;

	if (!enabled)
		return;
	pthread_mutex_lock(&lock);
	now = now_ns(CLOCK_BOOTTIME);
	fprintf(stderr, "cloister: timing: %-36s +%7.2f ms  (%7.2f ms since exec)\n", phase,
	        (double)(now - last_ns) / 1e6, (double)(now - exec_ns) / 1e6);
	last_ns = now;
	pthread_mutex_unlock(&lock);
}

static const char *const exec_phase_names[TRACE_EXEC_PHASES] = {
        [TRACE_EXEC_RECEIVE] = "receive", [TRACE_EXEC_READ] = "read target",
        [TRACE_EXEC_DECIDE] = "decide",   [TRACE_EXEC_ANSWER] = "answer",
        [TRACE_EXEC_AUDIT] = "audit",
};
/* Wall clock, and the thread's CPU clock beside it: the answer's wall time holds the woken
 * target running on this CPU, its CPU time only ours. */
static struct {
	uint64_t last_ns, last_cpu_ns, more_ns, more_cpu_ns;
	uint64_t sum_ns[TRACE_EXEC_PHASES], cpu_ns[TRACE_EXEC_PHASES];
	uint64_t n[TRACE_EXEC_PHASES];
} exec_phases;

void trace_exec_begin(void)
{
	if (!enabled)
		return;
	exec_phases.last_ns = now_ns(CLOCK_MONOTONIC);
	exec_phases.last_cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID);
}

void trace_exec_more_begin(void)
{
	if (!enabled)
		return;
	exec_phases.more_ns = now_ns(CLOCK_MONOTONIC);
	exec_phases.more_cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID);
}

void trace_exec_more_end(enum trace_exec_phase phase)
{
	if (!enabled || (unsigned)phase >= TRACE_EXEC_PHASES || !exec_phases.more_ns)
		return;
	exec_phases.sum_ns[phase] += now_ns(CLOCK_MONOTONIC) - exec_phases.more_ns;
	exec_phases.cpu_ns[phase] += now_ns(CLOCK_THREAD_CPUTIME_ID) - exec_phases.more_cpu_ns;
	exec_phases.more_ns = 0;
}

void trace_exec_span_begin(struct trace_exec_span *span)
{
	if (!enabled)
		return;
	span->start_ns = now_ns(CLOCK_MONOTONIC);
	span->start_cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID);
}

void trace_exec_span_end(struct trace_exec_span *span)
{
	if (!enabled)
		return;
	span->ns = now_ns(CLOCK_MONOTONIC) - span->start_ns;
	span->cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID) - span->start_cpu_ns;
}

void trace_exec_span_add(enum trace_exec_phase phase, const struct trace_exec_span *span)
{
	if (!enabled || (unsigned)phase >= TRACE_EXEC_PHASES)
		return;
	exec_phases.sum_ns[phase] += span->ns;
	exec_phases.cpu_ns[phase] += span->cpu_ns;
	exec_phases.n[phase]++;
}

void trace_exec_phase(enum trace_exec_phase phase)
{
	uint64_t now;

	if (!enabled || (unsigned)phase >= TRACE_EXEC_PHASES)
		return;
	now = now_ns(CLOCK_MONOTONIC);
	exec_phases.sum_ns[phase] += now - exec_phases.last_ns;
	exec_phases.n[phase]++;
	exec_phases.last_ns = now;
	now = now_ns(CLOCK_THREAD_CPUTIME_ID);
	exec_phases.cpu_ns[phase] += now - exec_phases.last_cpu_ns;
	exec_phases.last_cpu_ns = now;
}

void trace_exec_report(void)
{
	if (!enabled)
		return;
	for (unsigned i = 0; i < TRACE_EXEC_PHASES; i++)
		if (exec_phases.n[i])
			fprintf(stderr, "cloister: timing: exec %-31s %8.2f us  (mean of %llu)\n",
			        exec_phase_names[i],
			        (double)exec_phases.sum_ns[i] / 1e3 / (double)exec_phases.n[i],
			        (unsigned long long)exec_phases.n[i]);
	for (unsigned i = 0; i < TRACE_EXEC_PHASES; i++)
		if (exec_phases.n[i])
			fprintf(stderr,
			        "cloister: timing: exec-cpu %-27s %8.2f us  (mean of %llu)\n",
			        exec_phase_names[i],
			        (double)exec_phases.cpu_ns[i] / 1e3 / (double)exec_phases.n[i],
			        (unsigned long long)exec_phases.n[i]);
}
