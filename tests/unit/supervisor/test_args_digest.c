/* What an approved exec's arguments must be: the keyed hash and its modes (full, prefix, a
 * script's suffix), against argument areas laid out as the kernel lays them out. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "supervisor/exec/args_digest.h"

static const uint64_t KEY[2] = {0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};

/* The authors' test vector: key 00..0f, message 00..0e (15 bytes). Byte by byte and at once
 * give the same. */
static void test_siphash_matches_the_reference_vector(void **state)
{
	uint8_t msg[15];
	struct args_sip s, t;

	for (int i = 0; i < 15; i++)
		msg[i] = (uint8_t)i;
	args_sip_init(&s, KEY);
	args_sip_update(&s, msg, sizeof(msg));
	assert_true(args_sip_final(&s) == 0xa129ca6149be45e5ULL);
	args_sip_init(&t, KEY);
	for (int i = 0; i < 15; i++)
		args_sip_update(&t, msg + i, 1);
	assert_true(args_sip_final(&t) == args_sip_final(&s));
}

static const char AREA_LS[] = "ls\0-l\0/tmp"; /* the kernel's layout, with the last NUL */

/* Full: the area is the argv, byte for byte; a rewritten, added or dropped argument is not. */
static void test_full_mode_is_the_whole_area(void **state)
{
	static const char *const argv[] = {"ls", "-l", "/tmp"};
	struct backstop_args a;

	args_digest_of_exec(KEY, argv, 3, false, false, &a);
	assert_int_equal(a.mode, BACKSTOP_ARGS_FULL);
	assert_int_equal(a.len, sizeof(AREA_LS));
	assert_true(args_digest_matches(KEY, &a, AREA_LS, sizeof(AREA_LS)));
	assert_false(args_digest_matches(KEY, &a, "ls\0-l\0/tmq", sizeof(AREA_LS)));
	assert_false(args_digest_matches(KEY, &a, "ls\0-l\0/tmp\0x", sizeof(AREA_LS) + 2));
	assert_false(args_digest_matches(KEY, &a, "ls\0-l", 6));
	/* Another key, another hash: a hash is worth nothing without the key. */
	{
		static const uint64_t other[2] = {1, 2};
		struct backstop_args b;

		args_digest_of_exec(other, argv, 3, false, false, &b);
		assert_true(a.hash != b.hash);
	}
}

/* No arguments: the kernel gives the program one empty argv[0]. */
static void test_no_arguments_are_one_empty_string(void **state)
{
	struct backstop_args a;

	args_digest_of_exec(KEY, NULL, 0, false, false, &a);
	assert_int_equal(a.len, 1);
	assert_true(args_digest_matches(KEY, &a, "", 1));
}

/* Cut by the notifier: what was read is the start of the area. */
static void test_prefix_mode_is_the_start(void **state)
{
	static const char *const argv[] = {"ls", "-l"};
	struct backstop_args a;

	args_digest_of_exec(KEY, argv, 2, false, true, &a);
	assert_int_equal(a.mode, BACKSTOP_ARGS_PREFIX);
	assert_true(args_digest_matches(KEY, &a, AREA_LS, sizeof(AREA_LS)));
	assert_false(args_digest_matches(KEY, &a, "ls\0-x\0/tmp", sizeof(AREA_LS)));
	assert_false(args_digest_matches(KEY, &a, "ls", 3));
}

/* A script: the kernel puts the interpreter, its argument and the script's name where argv[0]
 * was; the rest must be argv[1..] from a string's start. */
static void test_suffix_mode_is_a_scripts_arguments(void **state)
{
	static const char *const argv[] = {"./s.sh", "a", "b"};
	static const char area[] = "/bin/sh\0-e\0./s.sh\0a\0b";
	static const char shifted[] = "/bin/sh\0./s.sh\0xa\0b"; /* "xa": not at a boundary */
	struct backstop_args a;

	args_digest_of_exec(KEY, argv, 3, true, false, &a);
	assert_int_equal(a.mode, BACKSTOP_ARGS_SUFFIX);
	assert_int_equal(a.len, 4);
	assert_true(args_digest_matches(KEY, &a, area, sizeof(area)));
	assert_false(args_digest_matches(KEY, &a, shifted, sizeof(shifted)));
	assert_false(args_digest_matches(KEY, &a, "/bin/sh\0./s.sh\0a\0c", 19));
	/* A script's cut argv: nothing certain to compare. */
	args_digest_of_exec(KEY, argv, 3, true, true, &a);
	assert_int_equal(a.mode, BACKSTOP_ARGS_ANY);
	assert_true(args_digest_matches(KEY, &a, "whatever", 9));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_siphash_matches_the_reference_vector),
	        cmocka_unit_test(test_full_mode_is_the_whole_area),
	        cmocka_unit_test(test_no_arguments_are_one_empty_string),
	        cmocka_unit_test(test_prefix_mode_is_the_start),
	        cmocka_unit_test(test_suffix_mode_is_a_scripts_arguments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
