/* Text for a terminal: every control character, C1 control, line-reordering character and
 * invalid UTF-8 byte becomes a visible escape; ordinary text and valid UTF-8 pass unchanged;
 * the JSON variant keeps the document's meaning. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "base/term_escape.h"

static void test_controls_become_visible_escapes(void **state)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
	        {"plain /usr/bin/ls -l", "plain /usr/bin/ls -l"},
	        {"", ""},
	        {"caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x90\x8d",
	         "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x90\x8d"},
	        {"a\nb\tc", "a\\nb\\tc"},
	        {"\r\x1b[2K\x1b]0;pwned\x07", "\\x0d\\x1b[2K\\x1b]0;pwned\\x07"},
	        {"bs\x08 del\x7f nul-free\x01", "bs\\x08 del\\x7f nul-free\\x01"},
	        /* C1 CSI and OSC, UTF-8 encoded */
	        {"\xc2\x9b"
	         "2J \xc2\x9d"
	         "0;x",
	         "\\u{009b}2J \\u{009d}0;x"},
	        /* right-to-left override, isolates, line separator, BOM */
	        {"\xe2\x80\xae"
	         "fdp \xe2\x81\xa6x\xe2\x81\xa9 \xe2\x80\xa8 \xef\xbb\xbf",
	         "\\u{202e}fdp \\u{2066}x\\u{2069} \\u{2028} \\u{feff}"},
	        /* invalid UTF-8: a lone byte, an overlong, a surrogate, a cut sequence */
	        {"\xff \xe0\x80\xaf \xed\xa0\x80 \xe2\x82",
	         "\\xff \\xe0\\x80\\xaf \\xed\\xa0\\x80 \\xe2\\x82"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = term_escape_dup(cases[i].in);

		assert_non_null(got);
		if (strcmp(got, cases[i].want) != 0)
			fail_msg("case %zu: got '%s', want '%s'", i, got, cases[i].want);
		free(got);
	}
	char *got = term_escape_dup(NULL);
	assert_string_equal(got, "");
	free(got);
}

static void test_nothing_a_terminal_obeys_survives(void **state)
{
	/* Every single byte and every two-byte sequence: no C0, DEL or C1 in the output. */
	for (unsigned a = 1; a < 256; a++)
		for (unsigned b = 0; b < 256; b++) {
			char in[3] = {(char)a, (char)b, 0};
			char *got = term_escape_dup(in);

			assert_non_null(got);
			for (const char *p = got; *p;) {
				uint32_t cp;
				size_t n = cl_utf8_decode(p, &cp);

				if (n == 0)
					fail_msg("%02x %02x: invalid UTF-8 kept", a, b);
				if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f))
					fail_msg("%02x %02x: control U+%04x kept", a, b,
					         (unsigned)cp);
				p += n;
			}
			free(got);
		}
}

static void test_long_text_is_cut_with_an_ellipsis(void **state)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	assert_non_null(f);
	term_escape_put(f, "abcdefgh", 3);
	fputc('|', f);
	term_escape_put(f, "abc", 3);
	fputc('|', f);
	term_escape_put(f, "\x1b\x1b\x1b", 2); /* the limit counts input bytes */
	fclose(f);
	assert_string_equal(text, "abc\xe2\x80\xa6|abc|\\x1b\\x1b\xe2\x80\xa6");
	free(text);
}

static void test_json_keeps_its_meaning_and_loses_its_controls(void **state)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
	        {"{\n\t\"cmd\":\t\"ls -l\"\r\n}", "{\n\t\"cmd\":\t\"ls -l\"\r\n}"},
	        {"[\"\\u001b[2J\"]", "[\"\\u001b[2J\"]"},
	        {"[\"a\x7f\xc2\x9b"
	         "b\"]",
	         "[\"a\\u007f\\u009bb\"]"},
	        {"[\"\xe2\x80\xae"
	         "x\", \"\xff\"]",
	         "[\"\\u202ex\", \"\\ufffd\"]"},
	        {"[\"\x1b\"]", "[\"\\u001b\"]"},
	        {"[\"caf\xc3\xa9\"]", "[\"caf\xc3\xa9\"]"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = term_escape_json(cases[i].in);

		assert_non_null(got);
		if (strcmp(got, cases[i].want) != 0)
			fail_msg("case %zu: got '%s', want '%s'", i, got, cases[i].want);
		free(got);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_controls_become_visible_escapes),
	        cmocka_unit_test(test_nothing_a_terminal_obeys_survives),
	        cmocka_unit_test(test_long_text_is_cut_with_an_ellipsis),
	        cmocka_unit_test(test_json_keeps_its_meaning_and_loses_its_controls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
