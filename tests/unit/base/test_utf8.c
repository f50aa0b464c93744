/* UTF-8 decoding: what is valid by RFC 3629 and what must be refused. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "base/utf8.h"

static void test_valid_sequences_decode_to_their_code_points(void **state)
{
	static const struct {
		const char *s;
		size_t len;
		uint32_t cp;
	} cases[] = {
	        {"A", 1, 0x41},
	        {"\x7f", 1, 0x7f},
	        {"\xc2\x80", 2, 0x80},
	        {"\xc3\xa9", 2, 0xe9},
	        {"\xe2\x80\xae", 3, 0x202e}, /* right-to-left override: valid, shown escaped */
	        {"\xef\xbf\xbd", 3, 0xfffd},
	        {"\xf0\x90\x80\x80", 4, 0x10000},
	        {"\xf4\x8f\xbf\xbf", 4, 0x10ffff},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t cp = 0;

		assert_int_equal(cl_utf8_decode(cases[i].s, &cp), cases[i].len);
		assert_int_equal(cp, cases[i].cp);
		assert_int_equal(cl_utf8_decode(cases[i].s, NULL), cases[i].len);
	}
}

static void test_invalid_sequences_are_refused(void **state)
{
	static const char *const cases[] = {
	        "\x80",             /* lone continuation byte */
	        "\xc0\xaf",         /* overlong '/' */
	        "\xc1\xbf",         /* overlong */
	        "\xe0\x80\xaf",     /* overlong */
	        "\xed\xa0\x80",     /* surrogate U+D800 */
	        "\xf0\x80\x80\xaf", /* overlong */
	        "\xf4\x90\x80\x80", /* above U+10FFFF */
	        "\xf5\x80\x80\x80", /* no such lead byte */
	        "\xff",
	        "\xc3",         /* truncated at the terminator */
	        "\xe2\x80",     /* truncated */
	        "\xe2\x28\xa1", /* bad continuation */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (cl_utf8_decode(cases[i], NULL) != 0)
			fail_msg("case %zu was accepted", i);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_valid_sequences_decode_to_their_code_points),
	        cmocka_unit_test(test_invalid_sequences_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
