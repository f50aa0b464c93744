/* exec_view_parse_mountinfo: the mount ids and superblock devices of a mount table. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "notifier/view.h"

static void test_ids_and_devices_sorted_by_id(void **state)
{
	static const char text[] =
	        "631 629 0:40 / / rw,relatime master:1 - overlay overlay rw,lowerdir=/a\n"
	        "25 631 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs sysfs rw\n"
	        "1045 631 254:1 /srv/x /opt\\040x rw - ext4 /dev/vda1 rw\n"
	        "\n";
	struct exec_view_mount *m = NULL;
	size_t n = 0;

	assert_int_equal(exec_view_parse_mountinfo(text, sizeof(text) - 1, &m, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(m[0].id, 25);
	assert_int_equal(m[0].kdev, 23);
	assert_int_equal(m[1].id, 631);
	assert_int_equal(m[1].kdev, 40);
	assert_int_equal(m[2].id, 1045);
	assert_int_equal(m[2].kdev, 254u << 20 | 1);
	free(m);
}

static void test_empty_table(void **state)
{
	struct exec_view_mount *m = (void *)1;
	size_t n = 1;

	assert_int_equal(exec_view_parse_mountinfo("", 0, &m, &n), 0);
	assert_int_equal(n, 0);
	assert_null(m);
}

static void test_malformed_lines_are_refused(void **state)
{
	static const char *const bad[] = {
	        "x 1 0:1 / / rw - a b c\n",
	        "1 1 0-1 / / rw - a b c\n",
	        "1 1 4096:1 / / rw - a b c\n", /* major beyond 12 bits */
	        "1 1 0:1048576 / / rw - a b c\n",
	        "1 1 0:1\n",
	        "18446744073709551616 1 0:1 / / rw - a b c\n",
	};
	struct exec_view_mount *m;
	size_t n;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (exec_view_parse_mountinfo(bad[i], strlen(bad[i]), &m, &n) != -EBADMSG)
			fail_msg("accepted: %s", bad[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_ids_and_devices_sorted_by_id),
	        cmocka_unit_test(test_empty_table),
	        cmocka_unit_test(test_malformed_lines_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
