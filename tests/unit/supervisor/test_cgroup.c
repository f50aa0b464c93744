/* The pure parsers of the cgroup module: mountinfo, /proc/PID/stat, /proc/PID/cgroup,
 * cgroup.events, sandbox leaf names and the staleness rule; and enabling the pids controller,
 * on plain files. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "supervisor/sandbox/cgroup.h"

/* This machine's mountinfo (hybrid: v1 controllers plus cgroup2 at /sys/fs/cgroup/unified). */
static const char hybrid_mountinfo[] =
        "23 1 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
        "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
        "37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
        "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

static void test_mountinfo_line_fields_and_escapes(void **state)
{
	char line[] = "36 35 98:0 /mnt\\0401 /my\\040mnt rw,noatime master:1 shared:2 - ext3 "
	              "/dev/root\\134x rw,errors=continue";
	struct mountinfo_entry e;

	assert_int_equal(mountinfo_parse_line(line, &e), 0);
	assert_int_equal(e.mount_id, 36);
	assert_int_equal(e.parent_id, 35);
	assert_string_equal(e.root, "/mnt 1");
	assert_string_equal(e.mount_point, "/my mnt");
	assert_string_equal(e.fstype, "ext3");
	assert_string_equal(e.source, "/dev/root\\x");
	assert_string_equal(e.super_options, "rw,errors=continue");
}

/* A hybrid hierarchy keeps pids in cgroup v1: found by its super option, not by a name. */
static void test_v1_hierarchy_found_by_controller(void **state)
{
	static const char text[] =
	        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
	        "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
	        "90 31 0:36 /sub /mnt/pidsbind rw,relatime - cgroup cgroup rw,pids\n"
	        "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
	        "38 31 0:35 / /sys/fs/cgroup/x rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
	        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
	char mount[64];

	(void)state;
	assert_int_equal(cgroup_find_v1_in_mountinfo(text, "pids", mount, sizeof(mount)), 0);
	assert_string_equal(mount, "/sys/fs/cgroup/pids");
	assert_int_equal(cgroup_find_v1_in_mountinfo(text, "cpuacct", mount, sizeof(mount)), 0);
	assert_string_equal(mount, "/sys/fs/cgroup/x");
	/* "cpu" is a whole option, not a prefix of "cpuacct" or a part of "rw". */
	assert_int_equal(cgroup_find_v1_in_mountinfo(text, "cpu", mount, sizeof(mount)), 0);
	assert_int_equal(cgroup_find_v1_in_mountinfo(text, "r", mount, sizeof(mount)), -ENOENT);
	assert_int_equal(cgroup_find_v1_in_mountinfo(text, "hugetlb", mount, sizeof(mount)),
	                 -ENOENT);
	/* The cgroup2 mount is not a v1 hierarchy. */
	assert_int_equal(
	        cgroup_find_v1_in_mountinfo(hybrid_mountinfo, "pids", mount, sizeof(mount)),
	        -ENOENT);
	assert_int_equal(cgroup_find_v1_in_mountinfo(text, "pids", mount, 8), -ENAMETOOLONG);
	assert_int_equal(cgroup_find_v1_in_mountinfo("garbage\n", "pids", mount, sizeof(mount)),
	                 -EINVAL);
}

static void test_controllers_list_words(void **state)
{
	(void)state;
	assert_true(cgroup_controllers_has("cpuset cpu io memory pids\n", "pids"));
	assert_true(cgroup_controllers_has("pids", "pids"));
	assert_true(cgroup_controllers_has("pids memory", "pids"));
	assert_false(cgroup_controllers_has("hugetlb\n", "pids"));
	assert_false(cgroup_controllers_has("pidsx cpu", "pids"));
	assert_false(cgroup_controllers_has("xpids", "pids"));
	assert_false(cgroup_controllers_has("", "pids"));
}

static void put_file(const char *dir, const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "we");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void get_file(const char *dir, const char *name, char *buf, size_t size)
{
	char path[256];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "re");
	assert_non_null(f);
	n = fread(buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* The cgroup2 half of the task limit, on plain files standing in for cgroupfs (this machine's
 * cgroup2 has no pids controller to enable): "+pids" written at every level above the leaf
 * that lacks it and nowhere else; refused, naming the level, where one does not have it. */
static void test_pids_enabled_from_the_root_down_to_the_leafs_parent(void **state)
{
	char root[] = "/tmp/test-cgroup-XXXXXX", mid[64], leaf[80], text[64];
	struct cl_error err = {""};

	(void)state;
	assert_non_null(mkdtemp(root));
	snprintf(mid, sizeof(mid), "%s/cloister", root);
	snprintf(leaf, sizeof(leaf), "%s/sandbox-1-2-3", mid);
	assert_int_equal(mkdir(mid, 0700), 0);
	assert_int_equal(mkdir(leaf, 0700), 0);
	put_file(root, "cgroup.controllers", "cpu io memory pids\n");
	put_file(root, "cgroup.subtree_control", "cpu memory\n");
	put_file(mid, "cgroup.controllers", "cpu memory pids\n");
	put_file(mid, "cgroup.subtree_control", "memory pids\n");
	put_file(leaf, "cgroup.controllers", "memory pids\n");
	put_file(leaf, "cgroup.subtree_control", "\n");

	assert_int_equal(cgroup_enable_pids_above(root, leaf, &err), 0);
	get_file(root, "cgroup.subtree_control", text, sizeof(text));
	assert_true(strncmp(text, "+pids", 5) == 0); /* cgroupfs takes "+pids" as a command */
	get_file(mid, "cgroup.subtree_control", text, sizeof(text));
	assert_string_equal(text, "memory pids\n"); /* there already: not written */
	get_file(leaf, "cgroup.subtree_control", text, sizeof(text));
	assert_string_equal(text, "\n"); /* the leaf's own children are not ours to limit */

	put_file(mid, "cgroup.controllers", "cpu memory\n");
	assert_int_equal(cgroup_enable_pids_above(root, leaf, &err), -EOPNOTSUPP);
	assert_non_null(strstr(err.msg, "no pids controller at "));
	assert_non_null(strstr(err.msg, "/cloister"));
	assert_int_equal(cgroup_enable_pids_above(root, "/elsewhere/leaf", &err), -EINVAL);
	assert_int_equal(cgroup_enable_pids_above(mid, root, &err), -EINVAL);

	for (const char *d = leaf; d; d = d == leaf ? mid : d == mid ? root : NULL) {
		char path[128];

		snprintf(path, sizeof(path), "%s/cgroup.controllers", d);
		unlink(path);
		snprintf(path, sizeof(path), "%s/cgroup.subtree_control", d);
		unlink(path);
		assert_int_equal(rmdir(d), 0);
	}
}

static void test_mountinfo_line_rejects_malformed(void **state)
{
	static const char *bad[] = {
	        "",
	        "36 35 98:0 / /mnt rw",                 /* no separator */
	        "36 35 98:0 / /mnt rw shared:1 -",      /* no fstype */
	        "x 35 98:0 / /mnt rw - ext3 /dev/x rw", /* bad id */
	        "36 35 98:0 / /mnt rw - ext3",          /* no source */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char line[256];
		struct mountinfo_entry e;

		strcpy(line, bad[i]);
		assert_int_equal(mountinfo_parse_line(line, &e), -EINVAL);
	}
}

static void test_finds_cgroup2_in_a_hybrid_hierarchy(void **state)
{
	char mount[256], root[256];

	assert_int_equal(cgroup_find_cgroup2_in_mountinfo(hybrid_mountinfo, mount, sizeof(mount),
	                                                  root, sizeof(root)),
	                 0);
	assert_string_equal(mount, "/sys/fs/cgroup/unified");
	assert_string_equal(root, "/");
}

static void test_prefers_the_hierarchy_root_over_a_bind_mounted_subtree(void **state)
{
	static const char text[] =
	        "50 1 0:40 /some/subtree /srv/cg rw - cgroup2 cgroup2 rw\n"
	        "51 1 0:40 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
	char mount[256], root[256];

	assert_int_equal(
	        cgroup_find_cgroup2_in_mountinfo(text, mount, sizeof(mount), root, sizeof(root)),
	        0);
	assert_string_equal(mount, "/sys/fs/cgroup");
	assert_string_equal(root, "/");
}

static void test_no_cgroup2_mount_is_enoent_and_small_buffer_is_reported(void **state)
{
	static const char v1_only[] = "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n";
	char mount[8], root[8];

	assert_int_equal(
	        cgroup_find_cgroup2_in_mountinfo(v1_only, mount, sizeof(mount), root, sizeof(root)),
	        -ENOENT);
	assert_int_equal(cgroup_find_cgroup2_in_mountinfo(hybrid_mountinfo, mount, sizeof(mount),
	                                                  root, sizeof(root)),
	                 -ENAMETOOLONG);
	assert_int_equal(cgroup_find_cgroup2_in_mountinfo("garbage\n", mount, sizeof(mount), root,
	                                                  sizeof(root)),
	                 -EINVAL);
}

static void test_stat_start_time_survives_hostile_comm(void **state)
{
	/* comm may hold spaces and ')' — the agent names its processes */
	static const char stat[] =
	        "4242 (evil) 1 2 3 (x) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 "
	        "987654321 1000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
	uint64_t t = 0;

	assert_int_equal(proc_stat_parse_start_time(stat, &t), 0);
	assert_int_equal(t, 987654321ULL);
	assert_int_equal(proc_stat_parse_start_time("4242 (x) S 1 2", &t), -EINVAL);
	assert_int_equal(proc_stat_parse_start_time("no paren", &t), -EINVAL);
	assert_int_equal(proc_stat_parse_start_time(
	                         "1 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12ab 0\n", &t),
	                 -EINVAL);
}

static void test_proc_cgroup_unified_line(void **state)
{
	char path[64];

	assert_int_equal(proc_cgroup_parse_unified("9:name=systemd:/\n4:memory:/x\n0::/a/b c\n",
	                                           path, sizeof(path)),
	                 0);
	assert_string_equal(path, "/a/b c");
	assert_int_equal(proc_cgroup_parse_unified("0::/\n", path, sizeof(path)), 0);
	assert_string_equal(path, "/");
	assert_int_equal(proc_cgroup_parse_unified("4:memory:/x\n", path, sizeof(path)), -ENOENT);
	assert_int_equal(proc_cgroup_parse_unified("0::/0123456789\n", path, 5), -ENAMETOOLONG);
}

static void test_cgroup_events_values(void **state)
{
	int v = -1;

	assert_int_equal(cgroup_events_parse("populated 1\nfrozen 0\n", "frozen", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(cgroup_events_parse("populated 1\nfrozen 0\n", "populated", &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(cgroup_events_parse("populatedx 1\n", "populated", &v), -ENOENT);
	assert_int_equal(cgroup_events_parse("", "frozen", &v), -ENOENT);
	/* pids.events: the refused forks, not a key that starts alike. */
	assert_int_equal(cgroup_events_parse("max.imposed 7\nmax 3\n", "max", &v), 0);
	assert_int_equal(v, 3);
	assert_int_equal(cgroup_events_parse("frozen x\n", "frozen", &v), -EINVAL);
}

static void test_leaf_names_round_trip_and_are_sanitized(void **state)
{
	struct cgroup_owner o = {.pidns_ino = 4026531836ULL, .pid = 1234, .start_time = 98765};
	struct cgroup_owner back;
	char name[256];

	assert_int_equal(cgroup_leaf_name_format("agent", &o, name, sizeof(name)), 0);
	assert_string_equal(name, "agent-4026531836-1234-98765");
	assert_int_equal(cgroup_leaf_name_parse(name, &back), 0);
	assert_int_equal(back.pidns_ino, o.pidns_ino);
	assert_int_equal(back.pid, o.pid);
	assert_int_equal(back.start_time, o.start_time);

	/* slashes, dashes, dots at the start and odd bytes cannot escape or confuse the parse */
	assert_int_equal(cgroup_leaf_name_format("../a-b/c\n", &o, name, sizeof(name)), 0);
	assert_string_equal(name, "_._a_b_c_-4026531836-1234-98765");
	assert_int_equal(cgroup_leaf_name_parse(name, &back), 0);
	assert_int_equal(back.pid, 1234);
	assert_int_equal(cgroup_leaf_name_format("", &o, name, sizeof(name)), 0);
	assert_string_equal(name, "_-4026531836-1234-98765");
	assert_int_equal(cgroup_leaf_name_format("agent", &o, name, 10), -ENAMETOOLONG);
}

static void test_foreign_directories_are_not_ours(void **state)
{
	static const char *bad[] = {"cloister",          "docker-1234", "a-1-2",
	                            "a-x-1234-5",        "a-1-0-5",     "-1-2-3",
	                            "a-1-99999999999-5", "a-1-2-3x"};
	struct cgroup_owner o;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(cgroup_leaf_name_parse(bad[i], &o), -EINVAL);
}

static void test_staleness_rule(void **state)
{
	struct cgroup_owner o = {.pidns_ino = 7, .pid = 100, .start_time = 555};

	assert_false(cgroup_owner_is_stale(&o, 7, true, 555)); /* alive, same process */
	assert_true(cgroup_owner_is_stale(&o, 7, false, 0));   /* dead */
	assert_true(cgroup_owner_is_stale(&o, 7, true, 556));  /* pid reused */
	assert_false(cgroup_owner_is_stale(&o, 8, false, 0));  /* other pid ns: cannot judge */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_mountinfo_line_fields_and_escapes),
	        cmocka_unit_test(test_v1_hierarchy_found_by_controller),
	        cmocka_unit_test(test_controllers_list_words),
	        cmocka_unit_test(test_pids_enabled_from_the_root_down_to_the_leafs_parent),
	        cmocka_unit_test(test_mountinfo_line_rejects_malformed),
	        cmocka_unit_test(test_finds_cgroup2_in_a_hybrid_hierarchy),
	        cmocka_unit_test(test_prefers_the_hierarchy_root_over_a_bind_mounted_subtree),
	        cmocka_unit_test(test_no_cgroup2_mount_is_enoent_and_small_buffer_is_reported),
	        cmocka_unit_test(test_stat_start_time_survives_hostile_comm),
	        cmocka_unit_test(test_proc_cgroup_unified_line),
	        cmocka_unit_test(test_cgroup_events_values),
	        cmocka_unit_test(test_leaf_names_round_trip_and_are_sanitized),
	        cmocka_unit_test(test_foreign_directories_are_not_ours),
	        cmocka_unit_test(test_staleness_rule),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
