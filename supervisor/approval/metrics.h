/* Counters for GET /metrics, rendered in the Prometheus text format (version 0.0.4).
 *
 * Pure: the caller records what happened and passes the gauges it knows (queue depth, clients)
 * when rendering. Label values come from our own fixed vocabularies ("approved", "web", …); at
 * most METRICS_MAX_SERIES verdict/source pairs are kept, later pairs are counted as "other". */
#ifndef CLOISTER_METRICS_H
#define CLOISTER_METRICS_H

#include <stddef.h>
#include <stdint.h>

#define METRICS_MAX_SERIES 64
#define METRICS_BUCKETS    12

struct metrics_series {
	char kind[16];
	char verdict[16];
	char source[32];
	uint64_t count;
};

struct metrics {
	uint64_t notifications; /* seccomp notifications handled */
	struct metrics_series series[METRICS_MAX_SERIES];
	size_t n_series;
	uint64_t
	        latency_bucket[METRICS_BUCKETS]; /* cumulative counts are computed when rendering */
	uint64_t latency_count;
	double latency_sum_s;
};

struct metrics_gauges {
	size_t pending[4]; /* by queue kind: exec, domain, hostexec, shim */
	unsigned approvers;
	unsigned sse_clients;
	unsigned sandboxes;
};

/* A decision: KIND ("exec", "domain", …), VERDICT ("allow", "deny", "approved", "denied",
 * "timed_out", …), SOURCE ("policy", "web", "cli", "tty", "fallback", "timeout", …). */
void metrics_count_decision(struct metrics *m, const char *kind, const char *verdict,
                            const char *source);
/* The time a human (or a timeout) took to decide an ask. */
void metrics_observe_latency(struct metrics *m, double seconds);

/* Render; *ret_text is malloc'd. Returns its length or -ENOMEM. */
int metrics_render(const struct metrics *m, const struct metrics_gauges *g, char **ret_text);

#endif
