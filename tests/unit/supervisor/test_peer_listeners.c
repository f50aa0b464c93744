/* Finding Cloister's own listening ports (peer_listeners.h): the /proc/net/tcp line parser, the
 * executable's name, a scan over a fake /proc tree, and one over the real /proc that must find
 * a listener this test opens. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "supervisor/egress/peer_listeners.h"

static void test_parse_line_takes_listening_sockets_only(void **state)
{
	static const struct {
		const char *line;
		int want;
		uint16_t port;
		uint64_t inode;
	} cases[] = {
	        {"   0: 0100007F:270F 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0"
	         "        0 4465624 1 00000000f5ba3097 100 0 0 10 0\n",
	         1, 9999, 4465624},
	        {"   1: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0"
	         "        0 1125 1 000000007241772b 100 0 0 10 0\n",
	         1, 2024, 1125},
	        /* tcp6: 32 hex digits of address */
	        {"   0: 00000000000000000000000001000000:270D "
	         "00000000000000000000000000000000:0000 0A"
	         " 00000000:00000000 00:00000000 00000000     0        0 77 1 0000000000000000 100 "
	         "0 0 10 0\n",
	         1, 9997, 77},
	        /* established: a client socket, not a listener */
	        {"   2: 0100007F:270F 0100007F:A2B4 01 00000000:00000000 00:00000000 00000000     0"
	         "        0 4465625 1 0000000000000000 20 4 30 10 -1\n",
	         0, 0, 0},
	        /* TIME_WAIT sockets have inode 0 */
	        {"   3: 0100007F:270F 0100007F:A2B4 0A 00000000:00000000 00:00000000 00000000     0"
	         "        0 0 1 0000000000000000 20 4 30 10 -1\n",
	         0, 0, 0},
	        {"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid"
	         "  timeout inode\n",
	         0, 0, 0},
	        {"   4: 0100007F:1270F 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 "
	         "9\n",
	         0, 0, 0},
	        {"", 0, 0, 0},
	        {"garbage", 0, 0, 0},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint16_t port = 0;
		uint64_t inode = 0;

		assert_int_equal(peer_listeners_parse_line(cases[i].line, &port, &inode),
		                 cases[i].want);
		if (cases[i].want) {
			assert_int_equal(port, cases[i].port);
			assert_int_equal(inode, cases[i].inode);
		}
	}
}

static void test_exe_name_matches_last_component_even_deleted(void **state)
{
	(void)state;
	assert_true(peer_listeners_exe_is("/usr/bin/cloister-supervisor", PEER_LISTENERS_EXE));
	assert_true(peer_listeners_exe_is("/w/build/bin/cloister-supervisor (deleted)",
	                                  PEER_LISTENERS_EXE));
	assert_true(peer_listeners_exe_is("cloister-supervisor", PEER_LISTENERS_EXE));
	assert_false(peer_listeners_exe_is("/usr/bin/cloister-supervisor-old", PEER_LISTENERS_EXE));
	assert_false(peer_listeners_exe_is("/usr/bin/my-cloister-supervisor", PEER_LISTENERS_EXE));
	assert_false(peer_listeners_exe_is("/cloister-supervisor/bin/sh", PEER_LISTENERS_EXE));
	assert_false(peer_listeners_exe_is("/usr/bin/cloister-supervisor (deleted) x",
	                                   PEER_LISTENERS_EXE));
}

/* ---- a fake /proc ------------------------------------------------------------------------- */

static void put(const char *root, const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "we");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void sub(const char *root, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

static void link_to(const char *root, const char *rel, const char *target)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(symlink(target, path), 0);
}

static void process(const char *root, const char *pid, const char *exe, const char *const *fds)
{
	char rel[64];

	sub(root, pid);
	snprintf(rel, sizeof(rel), "%s/fd", pid);
	sub(root, rel);
	snprintf(rel, sizeof(rel), "%s/exe", pid);
	link_to(root, rel, exe);
	for (unsigned i = 0; fds[i]; i++) {
		snprintf(rel, sizeof(rel), "%s/fd/%u", pid, i + 3);
		link_to(root, rel, fds[i]);
	}
}

static void test_scan_finds_the_ports_of_cloister_processes_only(void **state)
{
	char root[] = "/tmp/test-peer-listeners-XXXXXX";
	const char *const sup[] = {"socket:[11]", "socket:[12]", "socket:[13]",
	                           "/dev/null",   "pipe:[11]",   NULL};
	const char *const other[] = {"socket:[15]", NULL};
	const char *const old[] = {"socket:[16]", NULL};
	uint16_t ports[8];
	size_t n = 99, dropped = 99;
	char cmd[PATH_MAX + 16];

	(void)state;
	assert_non_null(mkdtemp(root));
	sub(root, "net");
	put(root, "net/tcp",
	    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
	    "timeout inode\n"
	    "   0: 0100007F:270F 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 11 1 "
	    "0 100 0 0 10 0\n"
	    "   1: 0100007F:270F 0100007F:9000 01 00000000:00000000 00:00000000 00000000 0 0 13 1 "
	    "0 100 0 0 10 0\n"
	    "   2: 00000000:1538 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 15 1 "
	    "0 100 0 0 10 0\n"
	    "   3: 0100007F:270D 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 16 1 "
	    "0 100 0 0 10 0\n");
	put(root, "net/tcp6",
	    "  sl  local_address remote_address st\n"
	    "   0: 00000000000000000000000001000000:270F 00000000000000000000000000000000:0000 0A "
	    "00000000:00000000 00:00000000 00000000 0 0 12 1 0 100 0 0 10 0\n");
	process(root, "100", "/usr/bin/cloister-supervisor", sup);
	process(root, "200", "/usr/sbin/postgres", other);
	process(root, "300", "/old/cloister-supervisor (deleted)", old);
	sub(root, "self"); /* not a pid: ignored */

	assert_int_equal(peer_listeners_scan(root, PEER_LISTENERS_EXE, 0, ports, 8, &n, &dropped),
	                 0);
	assert_int_equal(n, 2); /* 9999 once, though it listens on IPv4 and IPv6 */
	assert_int_equal(dropped, 0);
	assert_int_equal(ports[0], 9997);
	assert_int_equal(ports[1], 9999);

	/* Root's own ports that do not fit: an error, never a partial list. */
	assert_int_equal(peer_listeners_scan(root, PEER_LISTENERS_EXE, 0, ports, 1, &n, &dropped),
	                 -E2BIG);

	assert_int_equal(peer_listeners_scan(root, "postgres", 0, ports, 8, &n, &dropped), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ports[0], 5432);

	/* A stranger's process of that name (owned by nobody) comes after ours: with room for
	 * one port, ours wins and the stranger's is dropped, not an error. */
	const char *const stranger[] = {"socket:[15]", NULL};
	char rel[PATH_MAX];

	process(root, "50", "/tmp/x/cloister-supervisor", stranger);
	snprintf(rel, sizeof(rel), "chown -R -h 65534:65534 '%s/50'", root);
	assert_int_equal(system(rel), 0);
	uint16_t one[1];
	/* Our side with one port (9997) to fit in a room of one. */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/100' '%s/300'", root, root);
	assert_int_equal(system(cmd), 0);
	const char *const one_port[] = {"socket:[16]", NULL};
	process(root, "300", "/usr/bin/cloister-supervisor", one_port);
	assert_int_equal(peer_listeners_scan(root, PEER_LISTENERS_EXE, 1000, one, 1, &n, &dropped),
	                 0);
	assert_int_equal(n, 1);
	assert_int_equal(one[0], 9997);
	assert_int_equal(dropped, 1);
	/* With room, the stranger's port is refused too. */
	assert_int_equal(
	        peer_listeners_scan(root, PEER_LISTENERS_EXE, 1000, ports, 8, &n, &dropped), 0);
	assert_int_equal(n, 2);
	assert_int_equal(ports[0], 5432);
	assert_int_equal(ports[1], 9997);
	assert_int_equal(dropped, 0);
	/* The stranger is trusted when it is the caller's own uid. */
	assert_int_equal(peer_listeners_scan(root, PEER_LISTENERS_EXE, 65534, one, 1, &n, &dropped),
	                 -E2BIG);

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(peer_listeners_scan(root, PEER_LISTENERS_EXE, 0, ports, 8, &n, &dropped),
	                 -ENOENT);
}

/* The real /proc: this very process, by its executable's name, with a listener it opens. */
static void test_scan_of_real_proc_finds_our_own_listener(void **state)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sin);
	char exe[PATH_MAX];
	const char *name;
	uint16_t ports[256];
	size_t n = 0, dropped = 0;
	bool found = false;
	ssize_t l;
	int fd;

	(void)state;
	l = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(l > 0);
	exe[l] = '\0';
	name = strrchr(exe, '/') + 1;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(fd, 1), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);

	assert_int_equal(peer_listeners_scan("/proc", name, geteuid(), ports, 256, &n, &dropped),
	                 0);
	for (size_t i = 0; i < n; i++)
		found = found || ports[i] == ntohs(sin.sin_port);
	assert_true(found);
	close(fd);

	/* Closed: no longer listed. */
	assert_int_equal(peer_listeners_scan("/proc", name, geteuid(), ports, 256, &n, &dropped),
	                 0);
	for (size_t i = 0; i < n; i++)
		assert_int_not_equal(ports[i], ntohs(sin.sin_port));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_parse_line_takes_listening_sockets_only),
	        cmocka_unit_test(test_exe_name_matches_last_component_even_deleted),
	        cmocka_unit_test(test_scan_finds_the_ports_of_cloister_processes_only),
	        cmocka_unit_test(test_scan_of_real_proc_finds_our_own_listener),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
