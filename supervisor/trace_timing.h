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

/* Read CLOISTER_TRACE_TIMING once; later marks print only when it was "1". */
void trace_timing_init(void);

bool trace_timing_enabled(void);

/* "PHASE ended": the time since the previous mark (or since init). Thread-safe. */
void trace_timing_mark(const char *phase);

#endif
