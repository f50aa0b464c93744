/* Start-up and exit latency, measured phase by phase: with CLOISTER_TRACE_TIMING=1 in the
 * environment, every trace_timing_mark() prints one line on stderr,
 *
 *   cloister: timing: backstop loaded            +21.40 ms  (38.12 ms since exec)
 *
 * the time since the previous mark and since the process was executed. Without the variable
 * nothing is printed and a mark costs one branch. */
#ifndef CLOISTER_TRACE_TIMING_H
#define CLOISTER_TRACE_TIMING_H

#include <stdbool.h>
#include <stdint.h>

/* Read CLOISTER_TRACE_TIMING once; later marks print only when it was "1". */
void trace_timing_init(void);

/* "PHASE ended": the time since the previous mark (or since init). Thread-safe. */
void trace_timing_mark(const char *phase);

/* The supervisor's phases of one intercepted exec, summed over the run and reported as means:
 * trace_exec_begin() when the listener polls readable, trace_exec_phase() as each phase ends,
 * trace_exec_report() once at the end. For the holder of the event loop's lock only (loop.h:
 * the loop's thread or the exec guard's); off, each call costs one branch. */
enum trace_exec_phase {
	TRACE_EXEC_RECEIVE, /* the RECV ioctl */
	TRACE_EXEC_READ,    /* notifier_read_exec: /proc, the target's memory, the file */
	TRACE_EXEC_DECIDE,  /* the policy, session answers */
	TRACE_EXEC_ANSWER,  /* backstop approval and CONTINUE or deny (an allowed target woken on
	                     * this CPU may run before the supervisor resumes: that is in here) */
	TRACE_EXEC_AUDIT,   /* the audit line, metrics, web fan-out */
	TRACE_EXEC_PHASES,
};

void trace_exec_begin(void);
void trace_exec_phase(enum trace_exec_phase phase);
/* Time spent for the execs outside their own call (the audit lines written once a round of the
 * loop), added to PHASE between the two calls without counting an exec. */
void trace_exec_more_begin(void);
void trace_exec_more_end(enum trace_exec_phase phase);
/* A phase timed by a thread that does not hold the lock yet (the exec guard's read of a
 * notification, made before it takes the lock): begin and end on that thread, then add it to
 * PHASE, counting an exec, with the lock held. */
struct trace_exec_span {
	uint64_t start_ns, start_cpu_ns, ns, cpu_ns;
};
void trace_exec_span_begin(struct trace_exec_span *span);
void trace_exec_span_end(struct trace_exec_span *span);
void trace_exec_span_add(enum trace_exec_phase phase, const struct trace_exec_span *span);
/* One line per phase on stderr: its mean and how many execs went through it ("exec PHASE"),
 * then the same for the thread's CPU time ("exec-cpu PHASE"). Nothing when off or when no
 * exec was seen. */
void trace_exec_report(void);

#endif
