/* path_join: the absolute, tidied name of an exec path in the sandbox's view. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "notifier/path.h"

static void test_join_table(void **state)
{
	static const struct {
		const char *base, *rel, *want;
	} cases[] = {
	        {"/home/u", "bin/tool", "/home/u/bin/tool"},
	        {"/home/u", "./tool", "/home/u/tool"},
	        {"/home/u", "../v/tool", "/home/v/tool"},
	        {"/home/u", "../../../../tool", "/tool"},
	        {"/", "tool", "/tool"},
	        {"/", "..", "/"},
	        {"/home/u", "/usr/bin/env", "/usr/bin/env"},
	        {"/ignored/for/absolute", "/usr//bin///env", "/usr/bin/env"},
	        {"/home/u/", "a//b/./c", "/home/u/a/b/c"},
	        {"//home//u//", "x", "/home/u/x"},
	        {"/a/b", "c/..", "/a/b"},
	        {"/a/b", "c/../..", "/a"},
	        {"/a/b", "bin/", "/a/b/bin/"},
	        {"/", "/./usr/./bin/../sbin/x", "/usr/sbin/x"},
	        {"/a", ".", "/a"},
	        {"/a", "...", "/a/..."},
	        {"/a", "..x/y", "/a/..x/y"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = NULL;
		int r = path_join(cases[i].base, cases[i].rel, &got);

		if (r != 0)
			fail_msg("%s + %s: error %d", cases[i].base, cases[i].rel, r);
		if (strcmp(got, cases[i].want) != 0)
			fail_msg("%s + %s: got %s, want %s", cases[i].base, cases[i].rel, got,
			         cases[i].want);
		free(got);
	}
}

static void test_empty_or_baseless_relative_path_is_refused(void **state)
{
	char *got = NULL;

	assert_int_equal(path_join("/a", "", &got), -EINVAL);
	assert_int_equal(path_join(NULL, "x", &got), -EINVAL);
	assert_int_equal(path_join("relative/base", "x", &got), -EINVAL);
	assert_null(got);
	assert_int_equal(path_join(NULL, "/x", &got), 0);
	assert_string_equal(got, "/x");
	free(got);
}

static void test_result_longer_than_path_max_is_refused(void **state)
{
	char *base = malloc(PATH_MAX), *got = NULL;

	memset(base, 'a', PATH_MAX - 1);
	base[0] = '/';
	base[PATH_MAX - 1] = '\0';
	assert_int_equal(path_join(base, "x", &got), -ENAMETOOLONG);
	/* ".." can bring a long name back under the limit. */
	assert_int_equal(path_join(base, "../x", &got), 0);
	assert_string_equal(got, "/x");
	free(got);
	free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_join_table),
	        cmocka_unit_test(test_empty_or_baseless_relative_path_is_refused),
	        cmocka_unit_test(test_result_longer_than_path_max_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
