/* Canonical command strings: guardian quoting rules, NUL rejection, limits. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/cleanup.h"
#include "protocol/quote.h"

/* Quote a NULL-terminated argv and compare with the expected canonical string. */
static void assert_quotes_to(const char *const *argv, const char *expected)
{
	_cleanup_free_ char *out = NULL;
	struct cl_error err = {""};
	size_t argc = 0;

	while (argv[argc])
		argc++;
	assert_int_equal(cl_quote_strv(argv, argc, &err, &out), 0);
	assert_string_equal(out, expected);
}

static void test_single_arguments_follow_guardian_rules(void **state)
{
	static const struct {
		const char *arg;
		const char *quoted;
	} cases[] = {
	        {"ls", "ls"},
	        {"", "''"},
	        {"a b", "'a b'"},
	        {"it's", "'it'\\''s'"},
	        {"'", "''\\'''"},
	        {"line1\nline2", "'line1\nline2'"},
	        {"tab\there", "'tab\there'"},
	        {"*.c", "'*.c'"},
	        {"file?", "'file?'"},
	        {"[ab]", "'[ab]'"},
	        {"a;b", "'a;b'"},
	        {"a|b", "'a|b'"},
	        {"a&b", "'a&b'"},
	        {"$HOME", "'$HOME'"},
	        {"$(id)", "'$(id)'"},
	        {"<in", "'<in'"},
	        {">out", "'>out'"},
	        {"`id`", "'`id`'"},
	        {"!x", "'!x'"},
	        {"a\\b", "'a\\b'"},
	        {"~root", "'~root'"},
	        {"#c", "'#c'"},
	        {"\"dq\"", "'\"dq\"'"},
	        {"h\xc3\xa9llo", "'h\xc3\xa9llo'"},
	        {"a,b", "'a,b'"},
	        {"%s", "'%s'"},
	        {"ABCxyz019-_./:@+=", "ABCxyz019-_./:@+="},
	        {"user@host:/path/to-file_1.2+x=y", "user@host:/path/to-file_1.2+x=y"},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		const char *argv[] = {cases[i].arg, NULL};
		char buf[64];

		assert_quotes_to(argv, cases[i].quoted);
		assert_int_equal(cl_quote_arg(cases[i].arg, strlen(cases[i].arg), buf, sizeof(buf)),
		                 (int)strlen(cases[i].quoted));
		assert_string_equal(buf, cases[i].quoted);
		assert_int_equal(cl_quote_arg_length(cases[i].arg, strlen(cases[i].arg)),
		                 strlen(cases[i].quoted));
	}
}

static void test_every_safe_byte_is_kept_and_every_other_byte_quoted(void **state)
{
	const char *safe = "-_./:@+=";

	for (int c = 1; c < 256; c++) {
		char arg[2] = {(char)c, 0};
		bool want = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		            (c >= '0' && c <= '9') || strchr(safe, c);

		assert_int_equal(cl_quote_arg_is_simple(arg, 1), want);
	}
	assert_false(cl_quote_arg_is_simple("", 0));
}

static void test_guardian_example_is_reproduced(void **state)
{
	const char *argv[] = {"gh", "pr", "create", "--title", "Add auth", NULL};

	assert_quotes_to(argv, "gh pr create --title 'Add auth'");
}

static void test_arguments_are_joined_by_one_space_and_empty_ones_kept(void **state)
{
	const char *argv[] = {"echo", "", "a  b", "", NULL};

	assert_quotes_to(argv, "echo '' 'a  b' ''");
}

static void test_nul_byte_is_rejected_naming_the_index(void **state)
{
	struct cl_arg args[] = {{"rm", 2}, {"-rf", 3}, {"safe\0/", 6}};
	struct cl_error err = {""};
	char *out = (char *)0x1;
	char buf[32];

	assert_int_equal(cl_quote_args(args, ELEMENTSOF(args), &err, &out), -EINVAL);
	assert_string_equal(err.msg, "args[2]: contains a NUL byte");
	assert_ptr_equal(out, (char *)0x1); /* untouched on failure */
	assert_int_equal(cl_quote_arg("a\0b", 3, buf, sizeof(buf)), -EINVAL);
}

static void test_explicit_lengths_are_used_not_strlen(void **state)
{
	struct cl_arg args[] = {{"echoXXX", 4}, {"a b-not-this", 3}};
	_cleanup_free_ char *out = NULL;

	assert_int_equal(cl_quote_args(args, ELEMENTSOF(args), NULL, &out), 0);
	assert_string_equal(out, "echo 'a b'");
}

static void test_no_arguments_is_an_error(void **state)
{
	struct cl_error err = {""};
	char *out = NULL;

	assert_int_equal(cl_quote_args(NULL, 0, &err, &out), -EINVAL);
	assert_string_equal(err.msg, "args: no arguments");
	assert_null(out);
}

static void test_output_at_the_limit_passes_and_one_byte_more_fails(void **state)
{
	_cleanup_free_ char *big = malloc(CL_QUOTE_MAX_OUTPUT + 1);
	_cleanup_free_ char *out = NULL;
	struct cl_arg args[2];
	struct cl_error err = {""};

	assert_non_null(big);
	memset(big, 'a', CL_QUOTE_MAX_OUTPUT + 1);
	/* "x " + (limit - 2) bytes = exactly the limit. */
	args[0] = (struct cl_arg){"x", 1};
	args[1] = (struct cl_arg){big, CL_QUOTE_MAX_OUTPUT - 2};
	assert_int_equal(cl_quote_args(args, 2, &err, &out), 0);
	assert_int_equal(strlen(out), CL_QUOTE_MAX_OUTPUT);

	args[1].len++;
	free(TAKE_PTR(out));
	assert_int_equal(cl_quote_args(args, 2, &err, &out), -E2BIG);
	assert_string_equal(err.msg,
	                    "args: the command string exceeds the 262144-byte limit (at args[1])");

	/* Quoting expands: 100 000 quotes become 400 002 bytes. */
	memset(big, '\'', 100000);
	args[1].len = 100000;
	assert_int_equal(cl_quote_args(args, 2, &err, &out), -E2BIG);
}

static void test_too_many_arguments_fail(void **state)
{
	size_t n = CL_QUOTE_MAX_ARGC + 1;
	_cleanup_free_ struct cl_arg *args = calloc(n, sizeof(*args));
	_cleanup_free_ char *out = NULL;
	struct cl_error err = {""};

	assert_non_null(args);
	for (size_t i = 0; i < n; i++)
		args[i] = (struct cl_arg){"a", 1};
	assert_int_equal(cl_quote_args(args, n - 1, &err, &out), 0);
	assert_int_equal(strlen(out), 2 * (n - 1) - 1);
	free(TAKE_PTR(out));
	assert_int_equal(cl_quote_args(args, n, &err, &out), -E2BIG);
	assert_string_equal(err.msg, "args: 16385 arguments exceed the limit of 16384");
	assert_null(out);
}

static void test_single_argument_buffer_too_small_fails(void **state)
{
	char buf[6];

	/* 'a b' needs 5 bytes plus the NUL. */
	assert_int_equal(cl_quote_arg("a b", 3, buf, 6), 5);
	assert_int_equal(cl_quote_arg("a b", 3, buf, 5), -ENOBUFS);
	assert_int_equal(cl_quote_arg("", 0, buf, 3), 2);
	assert_string_equal(buf, "''");
	assert_int_equal(cl_quote_arg("", 0, buf, 2), -ENOBUFS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_single_arguments_follow_guardian_rules),
	        cmocka_unit_test(test_every_safe_byte_is_kept_and_every_other_byte_quoted),
	        cmocka_unit_test(test_guardian_example_is_reproduced),
	        cmocka_unit_test(test_arguments_are_joined_by_one_space_and_empty_ones_kept),
	        cmocka_unit_test(test_nul_byte_is_rejected_naming_the_index),
	        cmocka_unit_test(test_explicit_lengths_are_used_not_strlen),
	        cmocka_unit_test(test_no_arguments_is_an_error),
	        cmocka_unit_test(test_output_at_the_limit_passes_and_one_byte_more_fails),
	        cmocka_unit_test(test_too_many_arguments_fail),
	        cmocka_unit_test(test_single_argument_buffer_too_small_fails),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
