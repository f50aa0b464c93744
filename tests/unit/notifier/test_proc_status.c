/* proc_status_parse and proc_status_may_exec. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "notifier/proc_status.h"

static const char real_status[] = "Name:\tbash\n"
                                  "Umask:\t0022\n"
                                  "State:\tS (sleeping)\n"
                                  "Tgid:\t4242\n"
                                  "Ngid:\t0\n"
                                  "Pid:\t4242\n"
                                  "PPid:\t4000\n"
                                  "TracerPid:\t0\n"
                                  "Uid:\t1000\t1001\t1002\t1003\n"
                                  "Gid:\t100\t101\t102\t103\n"
                                  "FDSize:\t256\n"
                                  "Groups:\t4 24 27 100 \n"
                                  "NStgid:\t4242\t7\n"
                                  "NSpid:\t4242\t7\n"
                                  "VmPeak:\t   10000 kB\n";

static void test_parses_ids_groups_and_pids(void **state)
{
	struct proc_status st;

	assert_int_equal(proc_status_parse(real_status, sizeof(real_status) - 1, &st), 0);
	assert_string_equal(st.name, "bash");
	assert_int_equal(st.tgid, 4242);
	assert_int_equal(st.ppid, 4000);
	assert_int_equal(st.nspid, 7);
	assert_int_equal(st.ruid, 1000);
	assert_int_equal(st.euid, 1001);
	assert_int_equal(st.suid, 1002);
	assert_int_equal(st.fsuid, 1003);
	assert_int_equal(st.rgid, 100);
	assert_int_equal(st.fsgid, 103);
	assert_int_equal(st.ngroups, 4);
	assert_int_equal(st.groups[0], 4);
	assert_int_equal(st.groups[3], 100);
	assert_false(st.groups_truncated);
	assert_int_equal(st.ns_levels, 2);
	assert_int_equal(st.ns_tgid[0], 4242);
	assert_int_equal(st.ns_pid[1], 7);
}

static void test_thread_ids_per_namespace_level(void **state)
{
	/* A thread (tid 9 in its own namespace) of thread group 7, three levels deep. */
	static const char s[] = "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n"
	                        "NStgid:\t500\t40\t7\nNSpid:\t502\t42\t9\n";
	static const char *const bad[] = {
	        /* one list without the other, or of another length */
	        "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nNSpid:\t5\t1\n",
	        "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nNStgid:\t5\nNSpid:\t5\t1\n",
	        "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nNStgid:\t5\t2147483648\n"
	        "NSpid:\t5\t1\n",
	};
	struct proc_status st;

	assert_int_equal(proc_status_parse(s, sizeof(s) - 1, &st), 0);
	assert_int_equal(st.ns_levels, 3);
	assert_int_equal(st.ns_tgid[0], 500);
	assert_int_equal(st.ns_tgid[2], 7);
	assert_int_equal(st.ns_pid[1], 42);
	assert_int_equal(st.nspid, 9);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (proc_status_parse(bad[i], strlen(bad[i]), &st) != -EBADMSG)
			fail_msg("accepted: %s", bad[i]);
}

static void test_no_trailing_newline_and_empty_groups(void **state)
{
	static const char s[] = "Uid:\t0\t0\t0\t0\nGroups:\t\nGid:\t0\t0\t0\t0";
	struct proc_status st;

	assert_int_equal(proc_status_parse(s, sizeof(s) - 1, &st), 0);
	assert_int_equal(st.ngroups, 0);
	assert_int_equal(st.fsgid, 0);
	assert_int_equal(st.nspid, 0);
}

static void test_missing_or_malformed_ids_are_refused(void **state)
{
	static const char *const bad[] = {
	        "Name:\tx\n",
	        "Uid:\t0\t0\t0\t0\n",
	        "Uid:\t0\t0\t0\nGid:\t0\t0\t0\t0\n",
	        "Uid:\t0\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n",
	        "Uid:\t0\t-1\t0\t0\nGid:\t0\t0\t0\t0\n",
	        "Uid:\t0\t0x1\t0\t0\nGid:\t0\t0\t0\t0\n",
	        "Uid:\t0\t4294967296\t0\t0\nGid:\t0\t0\t0\t0\n",
	        "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t1 x\n",
	};
	struct proc_status st;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (proc_status_parse(bad[i], strlen(bad[i]), &st) != -EBADMSG)
			fail_msg("accepted: %s", bad[i]);
}

static void test_many_groups_are_truncated_not_refused(void **state)
{
	char s[2048] = "Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nGroups:\t";
	struct proc_status st;

	for (int i = 0; i < 100; i++)
		snprintf(s + strlen(s), sizeof(s) - strlen(s), "%d ", 1000 + i);
	strcat(s, "\n");
	assert_int_equal(proc_status_parse(s, strlen(s), &st), 0);
	assert_int_equal(st.ngroups, PROC_STATUS_MAX_GROUPS);
	assert_true(st.groups_truncated);
	assert_int_equal(st.groups[PROC_STATUS_MAX_GROUPS - 1], 1000 + PROC_STATUS_MAX_GROUPS - 1);
}

static void test_exec_permission_follows_owner_group_other(void **state)
{
	struct proc_status st = {.fsuid = 1000, .fsgid = 100, .ngroups = 1, .groups = {27}};
	struct proc_status root = {0};

	assert_true(proc_status_may_exec(&st, 0100, 1000, 0));
	assert_false(proc_status_may_exec(&st, 0011, 1000, 100)); /* owner bits decide */
	assert_true(proc_status_may_exec(&st, 0010, 0, 100));
	assert_true(proc_status_may_exec(&st, 0010, 0, 27)); /* supplementary group */
	assert_false(proc_status_may_exec(&st, 0101, 0, 27));
	assert_true(proc_status_may_exec(&st, 0001, 0, 0));
	assert_false(proc_status_may_exec(&st, 0644, 0, 0));
	assert_true(proc_status_may_exec(&root, 0001, 5, 5));
	assert_false(proc_status_may_exec(&root, 0666, 5, 5));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_parses_ids_groups_and_pids),
	        cmocka_unit_test(test_thread_ids_per_namespace_level),
	        cmocka_unit_test(test_no_trailing_newline_and_empty_groups),
	        cmocka_unit_test(test_missing_or_malformed_ids_are_refused),
	        cmocka_unit_test(test_many_groups_are_truncated_not_refused),
	        cmocka_unit_test(test_exec_permission_follows_owner_group_other),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
