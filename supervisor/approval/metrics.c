/* Prometheus text rendering; see metrics.h. */
#include "supervisor/approval/metrics.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Upper bounds in seconds; the last bucket is +Inf. */
static const double bucket_le[METRICS_BUCKETS - 1] = {0.001, 0.01, 0.1, 0.5, 1,  5,
                                                      10,    30,   60,  120, 300};

static void copy_label(char *dst, size_t size, const char *src)
{
	size_t j = 0;

	/* Our label values are identifiers; anything else is replaced so the output stays valid. */
	for (size_t i = 0; src && src[i] && j + 1 < size; i++) {
		char c = src[i];

		dst[j++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		                           (c >= '0' && c <= '9') || c == '_' || c == '-'
		                   ? c
		                   : '_';
	}
	dst[j] = '\0';
}

void metrics_count_decision(struct metrics *m, const char *kind, const char *verdict,
                            const char *source)
{
	struct metrics_series key = {0};

	copy_label(key.kind, sizeof(key.kind), kind);
	copy_label(key.verdict, sizeof(key.verdict), verdict);
	copy_label(key.source, sizeof(key.source), source);
	for (size_t i = 0; i < m->n_series; i++) {
		struct metrics_series *s = &m->series[i];

		if (!strcmp(s->kind, key.kind) && !strcmp(s->verdict, key.verdict) &&
		    !strcmp(s->source, key.source)) {
			s->count++;
			return;
		}
	}
	if (m->n_series == METRICS_MAX_SERIES - 1) {
		/* Full: the last slot is "other" and counts every new pair from now on. */
		strcpy(key.kind, "other");
		strcpy(key.verdict, "other");
		strcpy(key.source, "other");
		key.count = 0;
		m->series[m->n_series++] = key;
	}
	if (m->n_series == METRICS_MAX_SERIES) {
		m->series[METRICS_MAX_SERIES - 1].count++;
		return;
	}
	key.count = 1;
	m->series[m->n_series++] = key;
}

void metrics_observe_latency(struct metrics *m, double seconds)
{
	size_t i = 0;

	if (seconds < 0)
		seconds = 0;
	while (i < METRICS_BUCKETS - 1 && seconds > bucket_le[i])
		i++;
	m->latency_bucket[i]++;
	m->latency_count++;
	m->latency_sum_s += seconds;
}

struct out {
	char *buf;
	size_t len, cap;
	int err;
};

static void emit(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void emit(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->err)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			o->err = -EINVAL;
			return;
		}
		if ((size_t)n < o->cap - o->len) {
			o->len += (size_t)n;
			return;
		}
		size_t cap = o->cap * 2 + (size_t)n;
		char *b = realloc(o->buf, cap);

		if (!b) {
			o->err = -ENOMEM;
			return;
		}
		o->buf = b;
		o->cap = cap;
	}
}

int metrics_render(const struct metrics *m, const struct metrics_gauges *g, char **ret_text)
{
	static const char *const kinds[4] = {"exec", "domain", "hostexec", "shim"};
	struct out o = {.cap = 4096};
	uint64_t cumulative = 0;

	o.buf = malloc(o.cap);
	if (!o.buf)
		return -ENOMEM;
	o.buf[0] = '\0';
	emit(&o, "# HELP cloister_pending_requests Asks waiting for a decision.\n"
	         "# TYPE cloister_pending_requests gauge\n");
	for (size_t i = 0; i < 4; i++)
		emit(&o, "cloister_pending_requests{kind=\"%s\"} %zu\n", kinds[i], g->pending[i]);
	emit(&o, "# HELP cloister_decisions_total Decisions by kind, verdict and source.\n"
	         "# TYPE cloister_decisions_total counter\n");
	for (size_t i = 0; i < m->n_series; i++)
		emit(&o,
		     "cloister_decisions_total{kind=\"%s\",verdict=\"%s\",source=\"%s\"} %llu\n",
		     m->series[i].kind, m->series[i].verdict, m->series[i].source,
		     (unsigned long long)m->series[i].count);
	emit(&o, "# HELP cloister_decision_latency_seconds Time from an ask to its decision.\n"
	         "# TYPE cloister_decision_latency_seconds histogram\n");
	for (size_t i = 0; i < METRICS_BUCKETS; i++) {
		cumulative += m->latency_bucket[i];
		if (i < METRICS_BUCKETS - 1)
			emit(&o, "cloister_decision_latency_seconds_bucket{le=\"%g\"} %llu\n",
			     bucket_le[i], (unsigned long long)cumulative);
		else
			emit(&o, "cloister_decision_latency_seconds_bucket{le=\"+Inf\"} %llu\n",
			     (unsigned long long)cumulative);
	}
	emit(&o, "cloister_decision_latency_seconds_sum %.6f\n", m->latency_sum_s);
	emit(&o, "cloister_decision_latency_seconds_count %llu\n",
	     (unsigned long long)m->latency_count);
	emit(&o,
	     "# HELP cloister_notifications_total seccomp notifications handled.\n"
	     "# TYPE cloister_notifications_total counter\n"
	     "cloister_notifications_total %llu\n",
	     (unsigned long long)m->notifications);
	emit(&o,
	     "# HELP cloister_approvers Attached approvers (terminal, dashboards).\n"
	     "# TYPE cloister_approvers gauge\ncloister_approvers %u\n",
	     g->approvers);
	emit(&o,
	     "# HELP cloister_event_stream_clients Connected /events clients.\n"
	     "# TYPE cloister_event_stream_clients gauge\ncloister_event_stream_clients %u\n",
	     g->sse_clients);
	emit(&o,
	     "# HELP cloister_sandboxes Running sandboxes.\n"
	     "# TYPE cloister_sandboxes gauge\ncloister_sandboxes %u\n",
	     g->sandboxes);
	if (o.err) {
		free(o.buf);
		return o.err;
	}
	*ret_text = o.buf;
	return (int)o.len;
}
