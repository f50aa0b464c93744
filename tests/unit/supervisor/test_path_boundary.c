/* The lexical path boundary: normalisation and inside/outside, table-driven. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "supervisor/policy/path_boundary.h"

static void test_normalize_collapses_dots_slashes_and_never_climbs_above_root(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	        {"/", "/"},
	        {"//", "/"},
	        {"/app/", "/app"},
	        {"/app//src/./x", "/app/src/x"},
	        {"/app/src/../lib", "/app/lib"},
	        {"/app/..", "/"},
	        {"/../../etc", "/etc"},
	        {"/app/...", "/app/..."},
	        {"/app/..x/.y", "/app/..x/.y"},
	        {"/a/b/c/../../d/", "/a/d"},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_free_ char *out = NULL;
		struct cl_error err = {""};

		assert_int_equal(path_normalize(cases[i].in, &err, &out), 0);
		assert_string_equal(out, cases[i].out);
	}
}

static void test_normalize_rejects_relative_empty_and_overlong(void **state)
{
	_cleanup_free_ char *big = malloc(PATH_MAX + 1);
	char *out = NULL;
	struct cl_error err = {""};

	assert_int_equal(path_normalize("app", &err, &out), -EINVAL);
	assert_string_equal(err.msg, "expected an absolute path");
	assert_int_equal(path_normalize("", &err, &out), -EINVAL);
	assert_int_equal(path_normalize(NULL, &err, &out), -EINVAL);
	memset(big, 'a', PATH_MAX);
	big[0] = '/';
	big[PATH_MAX] = '\0';
	assert_int_equal(path_normalize(big, &err, &out), -ENAMETOOLONG);
	assert_null(out);
}

static void test_boundary_inside_outside_and_relative_part(void **state)
{
	static const struct {
		const char *root, *cwd;
		int code;
		const char *rel;
	} cases[] = {
	        {"/app", "/app", 0, "."},
	        {"/app/", "/app/src/", 0, "src"},
	        {"/app", "/app/a/../b/./c", 0, "b/c"},
	        {"/app", "/app2", -EPERM, NULL},
	        {"/app", "/ap", -EPERM, NULL},
	        {"/app", "/app/../etc", -EPERM, NULL},
	        {"/app", "/", -EPERM, NULL},
	        {"/", "/etc/x", 0, "etc/x"},
	        {"/", "/", 0, "."},
	        {"/app", "src", -EINVAL, NULL},
	        {"app", "/app", -EINVAL, NULL},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_free_ char *rel = NULL;
		struct cl_error err = {""};
		int r = path_boundary_check(cases[i].root, cases[i].cwd, &err, &rel);

		if (r != cases[i].code)
			fail_msg("%s in %s: %d, want %d (%s)", cases[i].cwd, cases[i].root, r,
			         cases[i].code, err.msg);
		if (r == 0)
			assert_string_equal(rel, cases[i].rel);
		else
			assert_null(rel);
	}
}

static void test_boundary_messages_name_the_paths(void **state)
{
	char *rel = NULL;
	struct cl_error err = {""};

	assert_int_equal(path_boundary_check("/app/", "/app/../etc", &err, &rel), -EPERM);
	assert_string_equal(err.msg, "cwd /etc is outside the worktree /app");
	assert_int_equal(path_boundary_check("/app", "rel", &err, &rel), -EINVAL);
	assert_string_equal(err.msg, "cwd: expected an absolute path");
	assert_int_equal(path_boundary_check("app", "/app", &err, &rel), -EINVAL);
	assert_string_equal(err.msg, "worktree: expected an absolute path");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_normalize_collapses_dots_slashes_and_never_climbs_above_root),
	        cmocka_unit_test(test_normalize_rejects_relative_empty_and_overlong),
	        cmocka_unit_test(test_boundary_inside_outside_and_relative_part),
	        cmocka_unit_test(test_boundary_messages_name_the_paths),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
