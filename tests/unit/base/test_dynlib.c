/* base/dynlib: an optional library is loaded when used, says clearly why it cannot be, and is
 * unloaded by its last release. zlib stands for a library the program does not link. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>
#include <zlib.h>

#include "base/dynlib.h"

#define Z_FUNCS(X) X(zlibVersion) X(crc32)
DYNLIB_DEFINE(z, Z_FUNCS, "libz.so.1", "the test's checksums");

#define MISSING_FUNCS(X) X(zlibVersion) X(cl_no_such_function)
void cl_no_such_function(void); /* declared, defined nowhere */
DYNLIB_DEFINE(missing, MISSING_FUNCS, "libz.so.1", "the test");

#define ABSENT_FUNCS(X) X(zlibVersion)
DYNLIB_DEFINE(absent, ABSENT_FUNCS, "libcloister-absent.so.0", "the sandbox's frobnication");

static int mapped(const char *soname)
{
	void *h = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);

	if (h)
		dlclose(h);
	return h != NULL;
}

static void test_a_library_is_mapped_from_first_use_to_last_release(void **state)
{
	struct cl_error err = {""};

	if (mapped("libz.so.1")) {
		print_message(
		        "skipped: libz.so.1 is linked into this test: its unloading cannot be "
		        "seen\n");
		skip();
	}
	assert_int_equal(dynlib_use(&z_lib, &err), 0);
	assert_true(mapped("libz.so.1"));
	assert_string_equal(z.zlibVersion(), ZLIB_VERSION);
	assert_int_equal(z.crc32(0, (const unsigned char *)"cloister", 8), 2518922783UL);
	assert_int_equal(dynlib_use(&z_lib, &err), 0);
	dynlib_release(&z_lib);
	assert_true(mapped("libz.so.1"));
	assert_non_null(z.zlibVersion);
	dynlib_release(&z_lib);
	assert_false(mapped("libz.so.1"));
	/* A call after the release faults at 0, not in unmapped code. */
	assert_null(z.zlibVersion);
	assert_null(z.crc32);
	dynlib_release(&z_lib); /* one too many: nothing happens */
	assert_int_equal(dynlib_use(&z_lib, &err), 0);
	assert_string_equal(z.zlibVersion(), ZLIB_VERSION);
	dynlib_release(&z_lib);
}

static void test_a_library_that_cannot_be_loaded_is_named_with_what_needs_it(void **state)
{
	struct cl_error err = {""};

	assert_int_equal(dynlib_use(&absent_lib, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "cannot load libcloister-absent.so.0, needed for the "
	                                "sandbox's frobnication: "));
	assert_null(absent.zlibVersion);
}

static void test_a_library_without_a_listed_function_is_refused_whole(void **state)
{
	struct cl_error err = {""};

	assert_int_equal(dynlib_use(&missing_lib, &err), -ENOENT);
	assert_string_equal(err.msg, "cannot use libz.so.1, needed for the test: it has no "
	                             "cl_no_such_function");
	assert_null(missing.zlibVersion); /* found, but not kept */
	assert_null(missing_lib.handle);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_a_library_is_mapped_from_first_use_to_last_release),
	        cmocka_unit_test(test_a_library_that_cannot_be_loaded_is_named_with_what_needs_it),
	        cmocka_unit_test(test_a_library_without_a_listed_function_is_refused_whole),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
