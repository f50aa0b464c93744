#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "supervisor/policy/path_glob.h"

static void expect(const char *glob, const char *path, bool want)
{
	if (path_glob_match(glob, path) != want)
		fail_msg("%s ~ %s: want %s", glob, path, want ? "match" : "no match");
}

static void test_two_stars_match_any_number_of_whole_components(void **state)
{
	/* In the middle: zero or more components. */
	expect("/a/**/b", "/a/b", true);
	expect("/a/**/b", "/a/x/b", true);
	expect("/a/**/b", "/a/x/y/z/b", true);
	expect("/a/**/b", "/a/x/y/c", false);
	expect("/a/**/b", "/a/xb", false);
	expect("/a/**/b", "/ab", false);
	/* At the end: everything under, never the directory itself. */
	expect("/a/**", "/a/x", true);
	expect("/a/**", "/a/x/y", true);
	expect("/a/**", "/a", false);
	expect("/a/**", "/ab/x", false);
	/* With the one-component wildcards around it. */
	expect("/home/*/.nvm/**/bin/*", "/home/u/.nvm/versions/node/v20/bin/node", true);
	expect("/home/*/.nvm/**/bin/*", "/home/u/v/.nvm/versions/bin/node", false);
	expect("/opt/**/*.sh", "/opt/x/y/run.sh", true);
	expect("/opt/**/*.sh", "/opt/run.sh", true);
	expect("/opt/**/*.sh", "/opt/x/run.py", false);
	/* Several, backtracking. */
	expect("/**/a/**/b", "/x/a/y/a/z/b", true);
	expect("/**/a/**/b", "/x/a/y/a/z/c", false);
	expect("/**", "/usr/bin/ls", true);
	/* '*' alone still never crosses '/'. */
	expect("/a/*/b", "/a/x/y/b", false);
	/* Leading dots are matched, as fnmatch without FNM_PERIOD. */
	expect("/a/**/b", "/a/.hidden/b", true);
	/* Relative paths never match. */
	expect("/a/**", "a/x", false);
}

static void test_without_two_stars_it_is_fnmatch_with_pathname(void **state)
{
	expect("/usr/bin/nc*", "/usr/bin/nc.openbsd", true);
	expect("/usr/bin/*", "/usr/bin/x/y", false);
	expect("/usr/bin/[a-c]at", "/usr/bin/cat", true);
	expect("/usr/bin/\\*", "/usr/bin/*", true);
	expect("/usr/bin/\\*", "/usr/bin/x", false);
}

static void test_two_stars_must_be_a_whole_component(void **state)
{
	const char *why = NULL;

	assert_int_equal(path_glob_check("/a/**/b", &why), 0);
	assert_int_equal(path_glob_check("/a/**", &why), 0);
	assert_int_equal(path_glob_check("/a/x**", &why), -EINVAL);
	assert_non_null(strstr(why, "whole path component"));
	assert_int_equal(path_glob_check("/a/**x/b", &why), -EINVAL);
	assert_int_equal(path_glob_check("/a/***/b", &why), -EINVAL);
	assert_int_equal(path_glob_check("/**/**/**/**/**/**/**/**/**", &why), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_two_stars_match_any_number_of_whole_components),
	        cmocka_unit_test(test_without_two_stars_it_is_fnmatch_with_pathname),
	        cmocka_unit_test(test_two_stars_must_be_a_whole_component),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
