/* The output cap: live head, kept tail, the marker, any chunking, and its queries. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/hostexec/output_cap.h"

/* Feed n bytes of a counting pattern in chunks of chunk; return what a reader would see. */
static size_t run(size_t max, size_t tail, size_t n, size_t chunk, uint8_t *seen, size_t size)
{
	struct output_cap c;
	uint8_t *in = malloc(n + 1), *rest = NULL;
	size_t have = 0, rest_len = 0;

	assert_non_null(in);
	for (size_t i = 0; i < n; i++)
		in[i] = (uint8_t)('a' + i % 26);
	assert_int_equal(output_cap_init(&c, max, tail), 0);
	for (size_t off = 0; off < n; off += chunk) {
		size_t len = n - off < chunk ? n - off : chunk;
		int64_t live = output_cap_feed(&c, in + off, len);

		assert_true(live >= 0 && (size_t)live <= len);
		assert_true(have + (size_t)live <= size);
		memcpy(seen + have, in + off, (size_t)live);
		have += (size_t)live;
	}
	assert_int_equal(output_cap_finish(&c, &rest, &rest_len), 0);
	assert_true(have + rest_len <= size);
	if (rest_len)
		memcpy(seen + have, rest, rest_len);
	free(rest);
	free(in);
	output_cap_done(&c);
	return have + rest_len;
}

static void test_small_output_passes_through_unchanged(void **state)
{
	uint8_t seen[64];

	assert_int_equal(run(100, 10, 50, 7, seen, sizeof(seen)), 50);
	assert_memory_equal(seen, "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwx", 50);
}

static void test_output_reaching_into_the_tail_arrives_whole_without_marker(void **state)
{
	uint8_t seen[128];

	assert_int_equal(run(100, 10, 95, 1, seen, sizeof(seen)), 95);
	for (size_t i = 0; i < 95; i++)
		assert_int_equal(seen[i], 'a' + i % 26);
}

static void test_exactly_max_bytes_has_no_marker(void **state)
{
	uint8_t seen[200];
	size_t n = run(100, 10, 100, 33, seen, sizeof(seen));

	assert_int_equal(n, 100);
	assert_null(memchr(seen, '[', n));
}

static void test_overflow_keeps_head_and_tail_with_the_count(void **state)
{
	static const size_t chunks[] = {1, 3, 10, 64 * 1024, 1000000};
	const size_t total = 250000;
	char want_marker[64];
	size_t mlen = (size_t)snprintf(want_marker, sizeof(want_marker),
	                               "\n[... %zu bytes truncated ...]\n", total - 200000);

	for (size_t k = 0; k < sizeof(chunks) / sizeof(chunks[0]); k++) {
		uint8_t *seen = malloc(300000);
		size_t n = run(0, 0, total, chunks[k], seen, 300000);

		assert_int_equal(n, 180000 + mlen + 20000);
		for (size_t i = 0; i < 180000; i++)
			assert_int_equal(seen[i], 'a' + i % 26);
		assert_memory_equal(seen + 180000, want_marker, mlen);
		for (size_t i = 0; i < 20000; i++)
			assert_int_equal(seen[180000 + mlen + i], 'a' + (total - 20000 + i) % 26);
		free(seen);
	}
}

static void test_live_room_and_truncated_follow_the_limits(void **state)
{
	struct output_cap c;
	uint8_t *rest = NULL;
	size_t len = 0;

	assert_int_equal(output_cap_init(&c, 10, 4), 0);
	assert_int_equal(output_cap_live_room(&c), 6);
	assert_int_equal(output_cap_feed(&c, "abcd", 4), 4);
	assert_int_equal(output_cap_live_room(&c), 2);
	assert_int_equal(output_cap_feed(&c, "efghij", 6), 2); /* 10 bytes: all kept */
	assert_int_equal(output_cap_live_room(&c), 0);
	assert_false(output_cap_truncated(&c));
	assert_int_equal(output_cap_finish(&c, &rest, &len), 0);
	assert_int_equal(len, 4);
	assert_string_equal((char *)rest, "ghij");
	free(rest);
	assert_int_equal(output_cap_feed(&c, "k", 1), 0);
	assert_true(output_cap_truncated(&c));
	/* Finishing does not change the cap: twice gives the same. */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(output_cap_finish(&c, &rest, &len), 0);
		assert_string_equal((char *)rest, "\n[... 1 bytes truncated ...]\nhijk");
		assert_int_equal(len, strlen((char *)rest));
		free(rest);
	}
	output_cap_done(&c);
}

static void test_zero_tail_sends_only_the_marker_at_the_end(void **state)
{
	struct output_cap c;
	uint8_t *rest = NULL;
	size_t len = 0;

	assert_int_equal(output_cap_init(&c, 4, 0), 0);
	assert_int_equal(output_cap_feed(&c, "abcdefg", 7), 4);
	assert_int_equal(output_cap_finish(&c, &rest, &len), 0);
	assert_string_equal((char *)rest, "\n[... 3 bytes truncated ...]\n");
	free(rest);
	output_cap_done(&c);
}

static void test_bad_limits_are_refused(void **state)
{
	struct output_cap c;

	assert_int_equal(output_cap_init(&c, 10, 11), -EINVAL);
	assert_int_equal(output_cap_init(&c, 10, 10), 0);
	output_cap_done(&c);
	output_cap_done(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_small_output_passes_through_unchanged),
	        cmocka_unit_test(test_output_reaching_into_the_tail_arrives_whole_without_marker),
	        cmocka_unit_test(test_exactly_max_bytes_has_no_marker),
	        cmocka_unit_test(test_overflow_keeps_head_and_tail_with_the_count),
	        cmocka_unit_test(test_live_room_and_truncated_follow_the_limits),
	        cmocka_unit_test(test_zero_tail_sends_only_the_marker_at_the_end),
	        cmocka_unit_test(test_bad_limits_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
