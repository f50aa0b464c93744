/* The pure half of the sandbox's confinement: path containment, outermost kept paths,
 * ancestors to pin, the host's socket table, the capabilities kept; Landlock's scopes by ABI. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "supervisor/sandbox/confine_plan.h"
#include "supervisor/sandbox/landlock.h"

static void test_within_compares_whole_components(void **state)
{
	static const struct {
		const char *path, *dir;
		bool within;
	} cases[] = {
	        {"/tmp", "/tmp", true},
	        {"/tmp/a", "/tmp", true},
	        {"/tmp/a/b", "/tmp/a", true},
	        {"/tmpx", "/tmp", false},
	        {"/tm", "/tmp", false},
	        {"/", "/tmp", false},
	        {"/anything", "/", true},
	        {"/", "/", true},
	        {"/home/u/.config", "/home/u", true},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++)
		if (confine_path_within(cases[i].path, cases[i].dir) != cases[i].within)
			fail_msg("%s within %s: expected %d", cases[i].path, cases[i].dir,
			         cases[i].within);
}

static void test_paths_are_added_once(void **state)
{
	_cleanup_(confine_paths_free) struct confine_paths p = {0};

	assert_int_equal(confine_paths_add(&p, "/a"), 0);
	assert_int_equal(confine_paths_add(&p, "/b"), 0);
	assert_int_equal(confine_paths_add(&p, "/a"), 0);
	assert_int_equal(p.n, 2);
	assert_null(p.v[2]);
	assert_true(confine_paths_contains(&p, "/b"));
	assert_false(confine_paths_contains(&p, "/c"));
}

static void test_outermost_drops_what_another_entry_contains(void **state)
{
	_cleanup_(confine_paths_free) struct confine_paths p = {0};
	static const char *const in[] = {"/tmp/w/cfg", "/tmp/w", "/tmp/x", "/tmp/w/state/c",
	                                 "/tmp/wx"};

	for (size_t i = 0; i < ELEMENTSOF(in); i++)
		assert_int_equal(confine_paths_add(&p, in[i]), 0);
	confine_paths_outermost(&p);
	assert_int_equal(p.n, 3);
	assert_string_equal(p.v[0], "/tmp/w");
	assert_string_equal(p.v[1], "/tmp/x");
	assert_string_equal(p.v[2], "/tmp/wx");
	assert_null(p.v[3]);
}

static void test_ancestors_are_every_parent_below_the_root_outermost_first(void **state)
{
	_cleanup_(confine_paths_free) struct confine_paths p = {0};

	assert_int_equal(confine_paths_add_ancestors(&p, "/home/u/.config/cloister"), 0);
	assert_int_equal(confine_paths_add_ancestors(&p, "/home/u/.local/share/cloister"), 0);
	assert_int_equal(p.n, 5);
	assert_string_equal(p.v[0], "/home");
	assert_string_equal(p.v[1], "/home/u");
	assert_string_equal(p.v[2], "/home/u/.config");
	assert_string_equal(p.v[3], "/home/u/.local");
	assert_string_equal(p.v[4], "/home/u/.local/share");
	assert_int_equal(confine_paths_add_ancestors(&p, "relative/path"), -EINVAL);
	assert_int_equal(confine_paths_add_ancestors(&p, "/top"), 0);
	assert_int_equal(p.n, 5); /* "/" itself is never pinned */
}

#define HEADER "Num       RefCount Protocol Flags    Type St Inode Path\n"

static void test_the_socket_table_gives_each_absolute_path_once(void **state)
{
	_cleanup_(confine_paths_free) struct confine_paths p = {0};
	const char *text = HEADER
	        "0000000000000000: 00000002 00000000 00010000 0001 01 12345 /run/user/1000/bus\n"
	        "0000000000000000: 00000003 00000000 00000000 0001 03 12346 /run/user/1000/bus\n"
	        "0000000000000000: 00000002 00000000 00010000 0001 01  9999 @/tmp/.X11-unix/X0\n"
	        "0000000000000000: 00000002 00000000 00000000 0002 01 12347\n"
	        "0000000000000000: 00000002 00000000 00010000 0001 01 12348 relative.sock\n"
	        "0000000000000000: 00000002 00000000 00010000 0001 01 12349 /tmp/with space.sock\n"
	        "0000000000000000: 00000002 00000000 00010000 0005 01 12350 /run/seq";

	assert_int_equal(confine_parse_proc_net_unix(text, 100, &p), 0);
	assert_int_equal(p.n, 3);
	assert_string_equal(p.v[0], "/run/user/1000/bus");
	assert_string_equal(p.v[1], "/tmp/with space.sock");
	assert_string_equal(p.v[2], "/run/seq");
}

static void test_the_socket_table_is_bounded_and_checked(void **state)
{
	_cleanup_(confine_paths_free) struct confine_paths p = {0};
	const char *three = HEADER "0000000000000000: 00000002 00000000 00010000 0001 01 1 /a\n"
	                           "0000000000000000: 00000002 00000000 00010000 0001 01 2 /b\n"
	                           "0000000000000000: 00000002 00000000 00010000 0001 01 3 /a\n"
	                           "0000000000000000: 00000002 00000000 00010000 0001 01 4 /c\n";

	assert_int_equal(confine_parse_proc_net_unix(three, 3, &p), 0);
	assert_int_equal(p.n, 3);
	confine_paths_free(&p);
	assert_int_equal(confine_parse_proc_net_unix(three, 2, &p), -E2BIG);
	confine_paths_free(&p);
	assert_int_equal(confine_parse_proc_net_unix("garbage\n", 10, &p), -EINVAL);
	assert_int_equal(confine_parse_proc_net_unix("", 10, &p), -EINVAL);
	assert_int_equal(confine_parse_proc_net_unix(HEADER, 10, &p), 0);
	assert_int_equal(p.n, 0);
}

#define CAP(c) (1ULL << (c))

static void test_capabilities_kept_leave_out_the_dangerous_ones(void **state)
{
	static const int never[] = {CAP_SYS_ADMIN,    CAP_NET_ADMIN,       CAP_NET_RAW,
	                            CAP_SYS_PTRACE,   CAP_SYS_MODULE,      CAP_BPF,
	                            CAP_PERFMON,      CAP_DAC_READ_SEARCH, CAP_SYS_RAWIO,
	                            CAP_MKNOD,        CAP_SYSLOG,          CAP_SYS_TIME,
	                            CAP_SYS_BOOT,     CAP_LINUX_IMMUTABLE, CAP_MAC_ADMIN,
	                            CAP_MAC_OVERRIDE, CAP_AUDIT_CONTROL,   CAP_SYS_RESOURCE,
	                            CAP_SYS_CHROOT,   CAP_SYS_TTY_CONFIG,  CAP_CHECKPOINT_RESTORE,
	                            CAP_IPC_OWNER};
	uint64_t netns = confine_kept_capabilities(false), host = confine_kept_capabilities(true);

	for (size_t i = 0; i < ELEMENTSOF(never); i++) {
		if (netns & CAP(never[i]))
			fail_msg("capability %d kept", never[i]);
	}
	assert_true(netns & CAP(CAP_CHOWN));
	assert_true(netns & CAP(CAP_DAC_OVERRIDE));
	assert_true(netns & CAP(CAP_SETUID));
	assert_true(netns & CAP(CAP_NET_BIND_SERVICE));
	/* On the host's network the host's privileged ports stay the host's. */
	assert_false(host & CAP(CAP_NET_BIND_SERVICE));
	assert_int_equal(host | CAP(CAP_NET_BIND_SERVICE), netns);
}

static void test_landlock_scopes_come_with_abi_6(void **state)
{
	assert_int_equal(landlock_scopes_supported(0), 0);
	assert_int_equal(landlock_scopes_supported(5), 0);
	assert_int_equal(landlock_scopes_supported(6),
	                 CL_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | CL_LANDLOCK_SCOPE_SIGNAL);
	assert_int_equal(landlock_scopes_supported(7),
	                 CL_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | CL_LANDLOCK_SCOPE_SIGNAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_within_compares_whole_components),
	        cmocka_unit_test(test_paths_are_added_once),
	        cmocka_unit_test(test_outermost_drops_what_another_entry_contains),
	        cmocka_unit_test(test_ancestors_are_every_parent_below_the_root_outermost_first),
	        cmocka_unit_test(test_the_socket_table_gives_each_absolute_path_once),
	        cmocka_unit_test(test_the_socket_table_is_bounded_and_checked),
	        cmocka_unit_test(test_capabilities_kept_leave_out_the_dangerous_ones),
	        cmocka_unit_test(test_landlock_scopes_come_with_abi_6),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
