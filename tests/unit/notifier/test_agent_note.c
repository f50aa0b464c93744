/* agent_note_format: the reason line a refused process reads on its stderr. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "notifier/agent_note.h"

#define TAIL " \xe2\x80\x94 ask the user to allow it\n"

static void test_line_names_what_why_and_what_to_do(void **state)
{
	char buf[AGENT_NOTE_MAX];
	size_t n = agent_note_format(buf, sizeof(buf), "write to", "/home/u/.bashrc",
	                             "fs.protect (built-in)");

	(void)state;
	assert_string_equal(
	        buf, "cloister: write to /home/u/.bashrc refused: fs.protect (built-in)" TAIL);
	assert_int_equal(n, strlen(buf));
}

static void test_control_characters_of_the_agent_are_escaped(void **state)
{
	char buf[AGENT_NOTE_MAX];

	(void)state;
	agent_note_format(buf, sizeof(buf), "exec of", "/tmp/x\x1b]0;owned\a\n", "r\x9bule");
	assert_string_equal(
	        buf, "cloister: exec of /tmp/x\\x1b]0;owned\\x07\\n refused: r\\x9bule" TAIL);
	assert_null(strchr(buf, '\x1b'));
}

static void test_a_long_subject_is_cut_and_the_line_still_ends_with_the_advice(void **state)
{
	char subject[4096], buf[AGENT_NOTE_MAX];
	size_t n;

	(void)state;
	memset(subject, 'a', sizeof(subject) - 1);
	subject[sizeof(subject) - 1] = '\0';
	n = agent_note_format(buf, sizeof(buf), "exec of", subject, "why");
	assert_true(n < sizeof(buf));
	assert_int_equal(n, strlen(buf));
	assert_true(n > strlen(TAIL));
	assert_string_equal(buf + n - strlen(TAIL), TAIL);
	assert_non_null(strstr(buf, "\xe2\x80\xa6 refused: why"));
}

static void test_a_small_buffer_still_gets_whole_characters_and_the_advice(void **state)
{
	char buf[80];
	size_t n;

	(void)state;
	/* "é" is two bytes: a cut never leaves half of one. */
	n = agent_note_format(buf, sizeof(buf), "exec of",
	                      "/\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	                      "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9",
	                      "why");
	assert_int_equal(n, strlen(buf));
	assert_true(n < sizeof(buf));
	assert_string_equal(buf + n - strlen(TAIL), TAIL);
	for (size_t i = 0; i + strlen(TAIL) < n; i++)
		if ((unsigned char)buf[i] == 0xc3)
			assert_int_equal((unsigned char)buf[i + 1], 0xa9);
	assert_int_equal(agent_note_format(buf, 10, "exec of", "/x", "y"), 0);
	assert_string_equal(buf, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_line_names_what_why_and_what_to_do),
	        cmocka_unit_test(test_control_characters_of_the_agent_are_escaped),
	        cmocka_unit_test(
	                test_a_long_subject_is_cut_and_the_line_still_ends_with_the_advice),
	        cmocka_unit_test(test_a_small_buffer_still_gets_whole_characters_and_the_advice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
