/* Output capture: everything up to the limit, head + marker + tail past it, UTF-8 clean-up. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/hostexec/capture.h"

static char *finish_raw(struct capture *c, size_t *len)
{
	char *buf = NULL;

	assert_int_equal(capture_finish_raw(c, &buf, len), 0);
	return buf;
}

static void test_short_output_is_kept_whole(void **state)
{
	struct capture *c;
	size_t len;
	char *out;

	assert_int_equal(capture_new(10, 4, &c), 0);
	assert_int_equal(capture_append(c, "hello", 5), 0);
	assert_int_equal(capture_append(c, "", 0), 0);
	assert_int_equal(capture_append(c, "abcde", 5), 0);
	assert_false(capture_truncated(c));
	assert_int_equal(capture_total(c), 10);
	out = finish_raw(c, &len);
	assert_int_equal(len, 10);
	assert_string_equal(out, "helloabcde");
	free(out);
	capture_free(c);
}

static void test_empty_capture_finishes_as_empty_string(void **state)
{
	struct capture *c;
	size_t len = 99;
	char *out;

	assert_int_equal(capture_new(0, 0, &c), 0);
	out = finish_raw(c, &len);
	assert_int_equal(len, 0);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(capture_finish_text(c, &out, &len), 0);
	assert_string_equal(out, "");
	free(out);
	capture_free(c);
}

static void test_overflow_keeps_head_and_tail_with_marker(void **state)
{
	struct capture *c;
	char *out;
	size_t len;

	/* max 10, tail 4: head is 6 bytes. 26 letters in chunks of various sizes. */
	assert_int_equal(capture_new(10, 4, &c), 0);
	assert_int_equal(capture_append(c, "abc", 3), 0);
	assert_int_equal(capture_append(c, "defghij", 7), 0); /* exactly at the limit */
	assert_false(capture_truncated(c));
	assert_int_equal(capture_append(c, "k", 1), 0);
	assert_true(capture_truncated(c));
	assert_int_equal(capture_append(c, "lmnopqrstuvwxy", 14), 0);
	assert_int_equal(capture_append(c, "z", 1), 0);
	assert_int_equal(capture_total(c), 26);
	out = finish_raw(c, &len);
	assert_string_equal(out, "abcdef\n[... 16 bytes truncated ...]\nwxyz");
	assert_int_equal(len, strlen(out));
	free(out);
	capture_free(c);
}

static void test_ring_wraps_in_every_chunking(void **state)
{
	/* The same 1000 bytes fed in chunks of 1..37 bytes always give the same result. */
	char data[1000], *want = NULL;
	size_t want_len = 0;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)('A' + i % 26);
	for (size_t step = 1; step <= 37; step++) {
		struct capture *c;
		size_t len;
		char *out;

		assert_int_equal(capture_new(100, 30, &c), 0);
		for (size_t i = 0; i < sizeof(data); i += step) {
			size_t n = sizeof(data) - i < step ? sizeof(data) - i : step;
			assert_int_equal(capture_append(c, data + i, n), 0);
		}
		out = finish_raw(c, &len);
		if (!want) {
			want = out;
			want_len = len;
			/* head 70, marker, last 30 */
			assert_memory_equal(out, data, 70);
			assert_memory_equal(out + len - 30, data + 970, 30);
			assert_non_null(strstr(out, "\n[... 900 bytes truncated ...]\n"));
		} else {
			assert_int_equal(len, want_len);
			assert_memory_equal(out, want, len);
			free(out);
		}
		capture_free(c);
	}
	free(want);
}

static void test_default_limits_bound_a_huge_output(void **state)
{
	static char chunk[65536];
	struct capture *c;
	size_t len;
	char *out;

	memset(chunk, 'x', sizeof(chunk));
	chunk[sizeof(chunk) - 1] = '\n';
	assert_int_equal(capture_new(0, 0, &c), 0);
	for (int i = 0; i < 80; i++) /* ~5 MiB */
		assert_int_equal(capture_append(c, chunk, sizeof(chunk)), 0);
	assert_int_equal(capture_total(c), 80 * 65536);
	assert_int_equal(capture_finish_text(c, &out, &len), 0);
	assert_true(len <= CAPTURE_MAX_DEFAULT + 64);
	assert_true(len >= CAPTURE_MAX_DEFAULT);
	assert_non_null(strstr(out, "bytes truncated ...]\n"));
	assert_int_equal(out[len - 1], '\n'); /* the tail is the real end of the output */
	free(out);
	capture_free(c);
}

static void test_zero_tail_keeps_only_the_head(void **state)
{
	struct capture *c;
	size_t len;
	char *out;

	assert_int_equal(capture_new(4, 0, &c), 0);
	assert_int_equal(capture_append(c, "abcdefg", 7), 0);
	assert_true(capture_truncated(c));
	out = finish_raw(c, &len);
	assert_string_equal(out, "abcd\n[... 3 bytes truncated ...]\n");
	free(out);
	capture_free(c);
}

static void test_tail_larger_than_max_is_refused(void **state)
{
	struct capture *c = NULL;

	assert_int_equal(capture_new(4, 5, &c), -EINVAL);
	assert_null(c);
}

static void test_text_replaces_nul_and_invalid_utf8(void **state)
{
	static const struct {
		const char *in;
		size_t len;
		const char *want;
	} cases[] = {
	        {"plain", 5, "plain"},
	        {"a\0b", 3,
	         "a\xef\xbf\xbd"
	         "b"},
	        {"caf\xc3\xa9", 5, "caf\xc3\xa9"},           /* valid 2-byte */
	        {"\xf0\x9f\x98\x80", 4, "\xf0\x9f\x98\x80"}, /* valid 4-byte at the end */
	        {"x\xff", 2, "x\xef\xbf\xbd"},               /* never valid */
	        {"\xc3", 1, "\xef\xbf\xbd"},                 /* cut at the end */
	        {"\xe2\x82", 2, "\xef\xbf\xbd\xef\xbf\xbd"}, /* cut 3-byte */
	        {"\xe2\x00\xac", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
	        {"\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd"},                 /* overlong */
	        {"\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* surrogate */
	        {"\t\r\n\x1b[0m", 7, "\t\r\n\x1b[0m"}, /* controls stay (JSON escapes) */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out;
		size_t len;

		assert_int_equal(capture_sanitize_utf8(cases[i].in, cases[i].len, &out, &len), 0);
		assert_string_equal(out, cases[i].want);
		assert_int_equal(len, strlen(cases[i].want));
		free(out);
	}
}

static void test_truncation_inside_a_sequence_gives_replacement_not_garbage(void **state)
{
	struct capture *c;
	char *out;

	/* "é" is cut by the head limit: its first byte ends the head, the second is dropped. */
	assert_int_equal(capture_new(5, 2, &c), 0);
	assert_int_equal(capture_append(c, "ab\xc3\xa9xyzw", 8), 0);
	assert_int_equal(capture_finish_text(c, &out, NULL), 0);
	assert_string_equal(out, "ab\xef\xbf\xbd\n[... 3 bytes truncated ...]\nzw");
	free(out);
	capture_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_short_output_is_kept_whole),
	        cmocka_unit_test(test_empty_capture_finishes_as_empty_string),
	        cmocka_unit_test(test_overflow_keeps_head_and_tail_with_marker),
	        cmocka_unit_test(test_ring_wraps_in_every_chunking),
	        cmocka_unit_test(test_default_limits_bound_a_huge_output),
	        cmocka_unit_test(test_zero_tail_keeps_only_the_head),
	        cmocka_unit_test(test_tail_larger_than_max_is_refused),
	        cmocka_unit_test(test_text_replaces_nul_and_invalid_utf8),
	        cmocka_unit_test(test_truncation_inside_a_sequence_gives_replacement_not_garbage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
