/* Prometheus text rendering: the output parses as exposition format 0.0.4 (HELP and TYPE before
 * each family's samples, valid names and labels), the histogram's buckets are cumulative with
 * +Inf equal to _count, series are bounded and label values sanitised. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/approval/metrics.h"

#define MAX_FAMILIES 32

struct family {
	char name[96];
	char type[16];
	bool help;
};

struct parsed {
	struct family fam[MAX_FAMILIES];
	size_t n_fam;
	unsigned samples;
};

static struct family *family_of(struct parsed *p, const char *sample_name)
{
	for (size_t i = 0; i < p->n_fam; i++) {
		size_t n = strlen(p->fam[i].name);

		if (strncmp(sample_name, p->fam[i].name, n))
			continue;
		if (!sample_name[n])
			return &p->fam[i];
		if (!strcmp(p->fam[i].type, "histogram") &&
		    (!strcmp(sample_name + n, "_bucket") || !strcmp(sample_name + n, "_sum") ||
		     !strcmp(sample_name + n, "_count")))
			return &p->fam[i];
	}
	return NULL;
}

static bool name_ok(const char *s, size_t n)
{
	if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_' || s[0] == ':'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == ':'))
			return false;
	return true;
}

/* Labels `{a="x",b="y"}`: names valid, values quoted with no raw quote, backslash or newline. */
static bool labels_ok(const char *s, const char **ret_end)
{
	const char *p = s + 1;

	for (;;) {
		const char *eq = strchr(p, '=');

		if (!eq || !name_ok(p, (size_t)(eq - p)) || eq[1] != '"')
			return false;
		p = eq + 2;
		while (*p && *p != '"') {
			if (*p == '\\' || *p == '\n')
				return false;
			p++;
		}
		if (*p != '"')
			return false;
		p++;
		if (*p == '}') {
			*ret_end = p + 1;
			return true;
		}
		if (*p != ',')
			return false;
		p++;
	}
}

/* Parse TEXT; fail the test on anything outside the format. */
static void parse_exposition(const char *text, struct parsed *p)
{
	char *copy = strdup(text), *save = NULL;

	memset(p, 0, sizeof(*p));
	assert_non_null(copy);
	assert_true(strlen(text) > 0 && text[strlen(text) - 1] == '\n');
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "# HELP ", 7)) {
			char *name = line + 7, *sp = strchr(name, ' ');

			assert_non_null(sp);
			assert_true(name_ok(name, (size_t)(sp - name)));
			assert_true(p->n_fam < MAX_FAMILIES);
			snprintf(p->fam[p->n_fam].name, sizeof(p->fam[0].name), "%.*s",
			         (int)(sp - name), name);
			p->fam[p->n_fam].help = true;
			p->n_fam++;
		} else if (!strncmp(line, "# TYPE ", 7)) {
			char *name = line + 7, *sp = strchr(name, ' ');
			struct family *f;

			assert_non_null(sp);
			assert_true(p->n_fam > 0);
			f = &p->fam[p->n_fam - 1];
			/* TYPE follows its HELP, for the same name, once. */
			assert_int_equal(strlen(f->name), (size_t)(sp - name));
			assert_memory_equal(f->name, name, (size_t)(sp - name));
			assert_string_equal(f->type, "");
			assert_true(!strcmp(sp + 1, "counter") || !strcmp(sp + 1, "gauge") ||
			            !strcmp(sp + 1, "histogram"));
			snprintf(f->type, sizeof(f->type), "%s", sp + 1);
		} else {
			size_t n = strcspn(line, "{ ");
			const char *rest = line + n;
			char name[96];
			char *end;
			struct family *f;

			assert_true(line[0] != '#');
			assert_true(name_ok(line, n));
			snprintf(name, sizeof(name), "%.*s", (int)n, line);
			f = family_of(p, name);
			if (!f)
				fail_msg("sample %s before its HELP/TYPE", name);
			assert_string_not_equal(f->type, "");
			if (*rest == '{')
				assert_true(labels_ok(rest, &rest));
			assert_int_equal(*rest, ' ');
			strtod(rest + 1, &end);
			assert_true(end > rest + 1);
			assert_int_equal(*end, '\0');
			p->samples++;
		}
	}
	free(copy);
}

static double sample(const char *text, const char *series)
{
	const char *p = text;
	size_t n = strlen(series);

	while ((p = strstr(p, series))) {
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return strtod(p + n + 1, NULL);
		p += n;
	}
	fail_msg("no sample %s", series);
	return NAN;
}

static void test_empty_render_parses(void **state)
{
	struct metrics m = {0};
	struct metrics_gauges g = {0};
	struct parsed p;
	char *text = NULL;
	int n = metrics_render(&m, &g, &text);

	assert_true(n > 0);
	assert_int_equal((size_t)n, strlen(text));
	parse_exposition(text, &p);
	assert_true(p.n_fam >= 7);
	for (size_t i = 0; i < p.n_fam; i++) {
		assert_true(p.fam[i].help);
		assert_string_not_equal(p.fam[i].type, "");
		assert_true(!strncmp(p.fam[i].name, "cloister_", 9));
	}
	assert_int_equal(sample(text, "cloister_decision_latency_seconds_bucket{le=\"+Inf\"}"), 0);
	assert_int_equal(sample(text, "cloister_decision_latency_seconds_count"), 0);
	free(text);
}

static void test_counts_gauges_histogram(void **state)
{
	struct metrics m = {0};
	struct metrics_gauges g = {
	        .pending = {1, 2, 3, 4}, .approvers = 5, .sse_clients = 6, .sandboxes = 7};
	static const double obs[] = {0, 0.0005, 0.001, 0.05, 0.7, 2, 2, 45, 299, 300, 301, 1e6, -3};
	struct parsed p;
	char *text = NULL;
	const char *line;
	double prev_le = -1, prev = 0, sum = 0;
	unsigned buckets = 0;

	m.notifications = 42;
	metrics_count_decision(&m, "exec", "allow", "policy");
	metrics_count_decision(&m, "exec", "allow", "policy");
	metrics_count_decision(&m, "exec", "approved", "web");
	metrics_count_decision(&m, "hostexec", "timed_out", "timeout");
	for (size_t i = 0; i < sizeof(obs) / sizeof(obs[0]); i++) {
		metrics_observe_latency(&m, obs[i]);
		sum += obs[i] < 0 ? 0 : obs[i];
	}
	assert_true(metrics_render(&m, &g, &text) > 0);
	parse_exposition(text, &p);

	assert_int_equal(sample(text, "cloister_decisions_total{kind=\"exec\",verdict=\"allow\","
	                              "source=\"policy\"}"),
	                 2);
	assert_int_equal(sample(text, "cloister_decisions_total{kind=\"exec\",verdict=\"approved\","
	                              "source=\"web\"}"),
	                 1);
	assert_int_equal(sample(text, "cloister_decisions_total{kind=\"hostexec\",verdict=\"timed_"
	                              "out\",source=\"timeout\"}"),
	                 1);
	assert_int_equal(sample(text, "cloister_pending_requests{kind=\"exec\"}"), 1);
	assert_int_equal(sample(text, "cloister_pending_requests{kind=\"domain\"}"), 2);
	assert_int_equal(sample(text, "cloister_pending_requests{kind=\"hostexec\"}"), 3);
	assert_int_equal(sample(text, "cloister_pending_requests{kind=\"shim\"}"), 4);
	assert_int_equal(sample(text, "cloister_approvers"), 5);
	assert_int_equal(sample(text, "cloister_event_stream_clients"), 6);
	assert_int_equal(sample(text, "cloister_sandboxes"), 7);
	assert_int_equal(sample(text, "cloister_notifications_total"), 42);

	/* Buckets: le ascending, counts cumulative (never decreasing), +Inf last == _count. */
	for (line = strstr(text, "cloister_decision_latency_seconds_bucket{le=\""); line;
	     line = strstr(line + 1, "\ncloister_decision_latency_seconds_bucket{le=\"")) {
		const char *le = strchr(line, '"') + 1;
		double count = strtod(strstr(le, "} ") + 2, NULL);

		if (!strncmp(le, "+Inf\"", 5)) {
			assert_int_equal(count,
			                 sample(text, "cloister_decision_latency_seconds_count"));
			assert_int_equal(count, sizeof(obs) / sizeof(obs[0]));
			prev_le = INFINITY;
		} else {
			double v = strtod(le, NULL);

			assert_true(prev_le < v);
			prev_le = v;
		}
		assert_true(count >= prev);
		prev = count;
		buckets++;
	}
	assert_int_equal(buckets, METRICS_BUCKETS);
	assert_true(isinf(prev_le));
	/* le="0.001" holds 0, -3 (as 0), 0.0005 and 0.001 (le is inclusive). */
	assert_int_equal(sample(text, "cloister_decision_latency_seconds_bucket{le=\"0.001\"}"), 4);
	assert_int_equal(sample(text, "cloister_decision_latency_seconds_bucket{le=\"300\"}"), 11);
	assert_true(fabs(sample(text, "cloister_decision_latency_seconds_sum") - sum) < 0.01);
	free(text);
}

static void test_series_bounded_and_labels_sanitised(void **state)
{
	struct metrics m = {0};
	struct metrics_gauges g = {0};
	struct parsed p;
	char *text = NULL;
	char src[32];

	metrics_count_decision(&m, "ex\"ec", "al\nlow", "a\\b c");
	for (unsigned i = 0; i < METRICS_MAX_SERIES + 9; i++) {
		snprintf(src, sizeof(src), "src%u", i);
		metrics_count_decision(&m, "exec", "allow", src);
	}
	assert_int_equal(m.n_series, METRICS_MAX_SERIES);
	assert_true(metrics_render(&m, &g, &text) > 0);
	parse_exposition(text, &p);
	assert_int_equal(sample(text, "cloister_decisions_total{kind=\"ex_ec\",verdict=\"al_low\","
	                              "source=\"a_b_c\"}"),
	                 1);
	/* What did not fit is counted, not dropped. */
	assert_int_equal(sample(text, "cloister_decisions_total{kind=\"other\",verdict=\"other\","
	                              "source=\"other\"}"),
	                 11);
	assert_null(strstr(text, "source=\"src72\""));
	/* The last series that fit keeps its own line. */
	assert_int_equal(sample(text, "cloister_decisions_total{kind=\"exec\",verdict=\"allow\","
	                              "source=\"src61\"}"),
	                 1);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_empty_render_parses),
	        cmocka_unit_test(test_counts_gauges_histogram),
	        cmocka_unit_test(test_series_bounded_and_labels_sanitised),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
