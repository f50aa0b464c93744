/* The audit log's per-sandbox rate limit, with the clock passed in: a burst, the count of what
 * was left out and when it is reported, a sustained flood, sandboxes apart, the end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>

#include "supervisor/approval/audit_limit.h"

static struct audit_limit *new_limit(uint32_t rate, uint32_t burst)
{
	struct audit_limit_config cfg = {.rate = rate, .burst = burst};
	struct audit_limit *l = NULL;

	assert_int_equal(audit_limit_new(&cfg, &l), 0);
	return l;
}

static void test_a_burst_is_written_then_counted_and_reported_when_the_limit_lifts(void **state)
{
	struct audit_limit *l = new_limit(10, 5); /* a line every 100 ms */
	struct audit_limit_report rep;
	int written = 0;

	for (int i = 0; i < 50; i++)
		written += audit_limit_take(l, "sb", 1000);
	assert_int_equal(written, 5);
	/* The bucket holds a line again 100 ms later: not one millisecond before. */
	assert_int_equal(audit_limit_next_due(l), 1100);
	assert_int_equal(audit_limit_pop_due(l, 1099, false, &rep), 0);
	assert_int_equal(audit_limit_pop_due(l, 1100, false, &rep), 1);
	assert_string_equal(rep.sandbox, "sb");
	assert_int_equal(rep.count, 45);
	assert_int_equal(rep.first_ms, 1000);
	assert_int_equal(rep.last_ms, 1000);
	assert_int_equal(audit_limit_pop_due(l, 1100, true, &rep), 0); /* reported once */
	assert_int_equal(audit_limit_next_due(l), UINT64_MAX);
	/* And the next line is written. */
	assert_true(audit_limit_take(l, "sb", 1100));
	assert_false(audit_limit_take(l, "sb", 1100));
	audit_limit_free(l);
}

/* A flood of 1000 lines a second for 10 s at 10 lines a second, burst 20: every line is
 * either written or counted, about 20 + 10 × 10 are written, and the counts come at the
 * lifts, interleaved with the lines. */
static void test_a_sustained_flood_is_bounded_and_every_line_is_counted(void **state)
{
	struct audit_limit *l = new_limit(10, 20);
	struct audit_limit_report rep;
	uint64_t written = 0, counted = 0, reports = 0;

	for (uint64_t t = 0; t < 10000; t++) {
		while (audit_limit_pop_due(l, t, false, &rep) == 1) {
			counted += rep.count;
			reports++;
		}
		written += audit_limit_take(l, "flood", t);
	}
	while (audit_limit_pop_due(l, 10000, true, &rep) == 1) {
		counted += rep.count;
		reports++;
	}
	assert_int_equal(written + counted, 10000);
	assert_true(written >= 20 + 99 && written <= 20 + 100);
	assert_true(reports >= 99 && reports <= 101);
	audit_limit_free(l);
}

static void test_sandboxes_have_their_own_buckets(void **state)
{
	struct audit_limit *l = new_limit(1, 2);
	struct audit_limit_report rep;

	assert_true(audit_limit_take(l, "a", 0));
	assert_true(audit_limit_take(l, "a", 0));
	assert_false(audit_limit_take(l, "a", 0));
	assert_true(audit_limit_take(l, "b", 0));
	assert_true(audit_limit_take(l, NULL, 0));
	assert_true(audit_limit_take(l, NULL, 0));
	assert_false(audit_limit_take(l, NULL, 0));
	assert_false(audit_limit_take(l, NULL, 0));
	/* At the end, every count whatever its time. */
	assert_int_equal(audit_limit_pop_due(l, 1, true, &rep), 1);
	assert_string_equal(rep.sandbox, "a");
	assert_int_equal(rep.count, 1);
	assert_int_equal(audit_limit_pop_due(l, 1, true, &rep), 1);
	assert_null(rep.sandbox);
	assert_int_equal(rep.count, 2);
	assert_int_equal(audit_limit_pop_due(l, 1, true, &rep), 0);
	audit_limit_free(l);
}

/* Asking whether a line would be written takes nothing and counts nothing. */
static void test_would_take_only_looks(void **state)
{
	struct audit_limit *l = new_limit(10, 2);
	struct audit_limit_report rep;

	(void)state;
	for (int i = 0; i < 10; i++)
		assert_true(audit_limit_would_take(l, "sb", 1000));
	assert_true(audit_limit_take(l, "sb", 1000));
	assert_true(audit_limit_would_take(l, "sb", 1000));
	assert_true(audit_limit_take(l, "sb", 1000));
	assert_false(audit_limit_would_take(l, "sb", 1000));
	assert_false(audit_limit_would_take(l, "sb", 1050));
	assert_int_equal(audit_limit_pop_due(l, UINT64_MAX, true, &rep), 0); /* none counted */
	assert_true(audit_limit_would_take(l, "sb", 1100));
	assert_true(audit_limit_would_take(l, "other", 1000)); /* its own bucket */
	audit_limit_free(l);
}

static void test_rate_zero_writes_everything(void **state)
{
	struct audit_limit *l = new_limit(0, 0);
	struct audit_limit_report rep;

	for (int i = 0; i < 100000; i++)
		assert_true(audit_limit_take(l, "sb", 0));
	assert_int_equal(audit_limit_pop_due(l, 0, true, &rep), 0);
	assert_int_equal(audit_limit_next_due(l), UINT64_MAX);
	audit_limit_free(l);

	struct audit_limit_config bad = {.rate = 5, .burst = 0};
	assert_int_equal(audit_limit_new(&bad, &l), -EINVAL);
}

/* A long idle time refills the bucket to its size, never beyond (and never overflows). */
static void test_refill_is_capped_at_the_burst(void **state)
{
	struct audit_limit *l = new_limit(4000000000u, 3);
	int written = 0;

	for (int i = 0; i < 10; i++)
		written += audit_limit_take(l, "sb", 0);
	assert_int_equal(written, 3);
	written = 0;
	for (int i = 0; i < 10; i++)
		written += audit_limit_take(l, "sb", UINT64_MAX / 2);
	assert_int_equal(written, 3);
	audit_limit_free(l);
}

/* More sandboxes than buckets: an idle bucket is reused; when every one is busy (counting),
 * the rest share one bucket, reported without a sandbox. */
static void test_too_many_sandboxes_share_a_bucket(void **state)
{
	struct audit_limit *l = new_limit(1, 1);
	struct audit_limit_report rep;
	char name[32];
	uint64_t counted = 0;

	for (int i = 0; i < AUDIT_LIMIT_MAX_SANDBOXES; i++) {
		snprintf(name, sizeof(name), "sb%d", i);
		assert_true(audit_limit_take(l, name, 0));
		assert_false(audit_limit_take(l, name, 0)); /* busy: one counted */
	}
	assert_true(audit_limit_take(l, "late", 0)); /* the shared bucket's one line */
	assert_false(audit_limit_take(l, "later", 0));
	for (int i = 0; i <= AUDIT_LIMIT_MAX_SANDBOXES; i++) {
		assert_int_equal(audit_limit_pop_due(l, 1000, false, &rep), 1);
		counted += rep.count;
		if (i == AUDIT_LIMIT_MAX_SANDBOXES)
			assert_null(rep.sandbox);
	}
	assert_int_equal(counted, AUDIT_LIMIT_MAX_SANDBOXES + 1);
	/* Reported and refilled: an idle bucket goes to a new sandbox. */
	assert_true(audit_limit_take(l, "new", 5000));
	assert_false(audit_limit_take(l, "new", 5000));
	assert_int_equal(audit_limit_pop_due(l, 6000, false, &rep), 1);
	assert_string_equal(rep.sandbox, "new");
	audit_limit_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(
	                test_a_burst_is_written_then_counted_and_reported_when_the_limit_lifts),
	        cmocka_unit_test(test_a_sustained_flood_is_bounded_and_every_line_is_counted),
	        cmocka_unit_test(test_sandboxes_have_their_own_buckets),
	        cmocka_unit_test(test_would_take_only_looks),
	        cmocka_unit_test(test_rate_zero_writes_everything),
	        cmocka_unit_test(test_refill_is_capped_at_the_burst),
	        cmocka_unit_test(test_too_many_sandboxes_share_a_bucket),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
