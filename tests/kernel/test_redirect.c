/* The --net=host egress redirect (bpf/redirect.h) against the real kernel (root): each test
 * gets a cgroup2 cgroup of its own with the programs attached, and runs its "agent" as a child
 * process moved into that cgroup. Teardown detaches every link and removes the cgroup, even
 * after a failure.
 *
 * The whole test process first moves to a network namespace of its own with only lo up: that
 * is the "host" network here. So the documentation addresses (203.0.113.7, 192.0.2.53,
 * 2001:db8::7) are unreachable: a connection the programs did not redirect fails at once with
 * ENETUNREACH instead of going anywhere, and nothing is left behind when the process exits. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <linux/bpf.h>
#include <bpf/bpf.h>

#include "bpf/backstop.h" /* backstop_cgroup2_mount */
#include "bpf/inet_addr.h"
#include "bpf/redirect.h"
#include "netfilter/listen.h"
#include "base/cleanup.h"

#define WAIT_MS 2000

static const char *global_skip;
static unsigned cgroup_counter;

struct fixture {
	const char *skip_reason;
	char cgroup[PATH_MAX];
	int cgroup_fd;
	struct redirect *r;
	struct netfilter_listeners l;
};

static int teardown(void **state);

/* cmocka skips the teardown when the setup fails: undo everything here then. */
static int setup_failed(void **state)
{
	teardown(state);
	*state = NULL;
	return -1;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	_cleanup_free_ char *mount = NULL;
	_cleanup_close_ int netns = -EBADF;
	struct cl_error err = {{0}};
	struct redirect_config cfg;
	int r;

	if (!f)
		return -1;
	*state = f;
	f->cgroup_fd = -EBADF;
	f->l = (struct netfilter_listeners)NETFILTER_LISTENERS_INIT;
	if (global_skip) {
		f->skip_reason = global_skip;
		return 0;
	}
	if (backstop_cgroup2_mount(&mount) < 0) {
		f->skip_reason = "no cgroup2 hierarchy in /proc/self/mountinfo";
		return 0;
	}
	snprintf(f->cgroup, sizeof(f->cgroup), "%s/cloister-test-redirect-%d-%u", mount,
	         (int)getpid(), cgroup_counter++);
	if (mkdir(f->cgroup, 0755) < 0) {
		fprintf(stderr, "test_redirect: mkdir %s: %m\n", f->cgroup);
		f->cgroup[0] = '\0';
		return setup_failed(state);
	}
	f->cgroup_fd = open(f->cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->cgroup_fd < 0)
		return setup_failed(state);

	/* The supervisor's listeners live in its own ("host") netns in this mode. */
	netns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (netns < 0)
		return setup_failed(state);
	r = netfilter_listeners_open(netns, 0, 0, &f->l, &err);
	if (r >= 0) {
		cfg = (struct redirect_config){.proxy_port = f->l.proxy_port,
		                               .dns_port = f->l.dns_port};
		r = redirect_open(&cfg, &f->r, &err);
	}
	if (r >= 0)
		r = redirect_attach(f->r, f->cgroup_fd, &err);
	if (r < 0) {
		fprintf(stderr, "test_redirect: set-up: %s\n", err.msg);
		return setup_failed(state);
	}
	return 0;
}

static void remove_cgroup(const char *path)
{
	char file[PATH_MAX];
	int fd;

	snprintf(file, sizeof(file), "%s/cgroup.kill", path);
	fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)!write(fd, "1", 1);
		close(fd);
	}
	for (int i = 0; i < 200; i++) {
		if (rmdir(path) == 0 || errno == ENOENT)
			return;
		usleep(5000);
	}
	fprintf(stderr, "test_redirect: could not remove cgroup %s: %m\n", path);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (!f)
		return 0;
	redirect_free(f->r);
	netfilter_listeners_close(&f->l);
	if (f->cgroup_fd >= 0)
		close(f->cgroup_fd);
	if (f->cgroup[0])
		remove_cgroup(f->cgroup);
	free(f);
	return 0;
}

static struct fixture *fixture_or_skip(void **state)
{
	struct fixture *f = *state;

	if (f->skip_reason) {
		print_message("skipped: %s\n", f->skip_reason);
		skip();
	}
	return f;
}

/* ---- helpers --------------------------------------------------------------------------- */

static socklen_t make_addr(struct sockaddr_storage *ss, const char *ip, uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(ip, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		if (inet_pton(AF_INET6, ip, &s6->sin6_addr) != 1)
			abort();
		return sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		if (inet_pton(AF_INET, ip, &s4->sin_addr) != 1)
			abort();
		return sizeof(*s4);
	}
}

static void format_addr(const struct sockaddr_storage *ss, char *buf, size_t size)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)ss;

		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
		snprintf(buf, size, "%s:%u", ip, ntohs(s4->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, size, "[%s]:%u", ip, ntohs(s6->sin6_port));
	} else {
		snprintf(buf, size, "(family %d)", ss->ss_family);
	}
}

static bool wait_readable(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* The agent's side, in a child process inside the cgroup. It says what went wrong on stderr
 * and exits non-zero. */
#define AGENT_CHECK(cond)                                                                    \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			fprintf(stderr, "agent: %s:%d: %s (errno %s)\n", __FILE__, __LINE__, \
			        #cond, strerror(errno));                                     \
			_exit(1);                                                            \
		}                                                                            \
	} while (0)

typedef void (*agent_fn)(const void *arg);

static pid_t start_agent(struct fixture *f, agent_fn fn, const void *arg)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int fd;

		fd = openat(f->cgroup_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
		AGENT_CHECK(fd >= 0);
		AGENT_CHECK(write(fd, "0", 1) == 1); /* 0: the writer itself */
		close(fd);
		alarm(10);
		fn(arg);
		_exit(0);
	}
	return pid;
}

static void assert_agent_succeeded(pid_t pid)
{
	int status = 0;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- TCP ------------------------------------------------------------------------------- */

struct tcp_agent {
	const char *ip;
	uint16_t port;
};

/* Connect, tell the other end what getpeername() says, wait for it to close. */
static void tcp_agent(const void *arg)
{
	const struct tcp_agent *a = arg;
	struct sockaddr_storage dst, peer;
	socklen_t len = make_addr(&dst, a->ip, a->port), plen = sizeof(peer);
	char buf[80];
	int fd = socket(dst.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	AGENT_CHECK(fd >= 0);
	AGENT_CHECK(connect(fd, (struct sockaddr *)&dst, len) == 0);
	AGENT_CHECK(getpeername(fd, (struct sockaddr *)&peer, &plen) == 0);
	format_addr(&peer, buf, sizeof(buf));
	AGENT_CHECK(write(fd, buf, strlen(buf) + 1) == (ssize_t)strlen(buf) + 1);
	AGENT_CHECK(read(fd, buf, sizeof(buf)) == 0);
}

static void check_tcp_redirect(struct fixture *f, int listener, const char *ip, uint16_t port,
                               const char *want)
{
	struct tcp_agent a = {.ip = ip, .port = port};
	struct sockaddr_storage peer, orig;
	socklen_t plen = sizeof(peer);
	char got[80], seen[80] = "";
	pid_t pid = start_agent(f, tcp_agent, &a);
	int conn;

	assert_true(wait_readable(listener, WAIT_MS));
	conn = accept4(listener, (struct sockaddr *)&peer, &plen, SOCK_CLOEXEC);
	assert_true(conn >= 0);
	assert_int_equal(redirect_lookup(f->r, (struct sockaddr *)&peer, plen, &orig), 0);
	format_addr(&orig, got, sizeof(got));
	assert_string_equal(got, want);
	/* Consumed: a second lookup finds nothing. */
	assert_int_equal(redirect_lookup(f->r, (struct sockaddr *)&peer, plen, &orig), -ENOENT);
	/* The agent's getpeername shows where it meant to go, not our listener. */
	assert_true(wait_readable(conn, WAIT_MS));
	assert_true(read(conn, seen, sizeof(seen) - 1) > 0);
	assert_string_equal(seen, want);
	close(conn);
	assert_agent_succeeded(pid);
}

static void test_tcp4_connect_lands_on_host_listener_and_lookup_finds_original(void **state)
{
	struct fixture *f = fixture_or_skip(state);

	check_tcp_redirect(f, f->l.proxy4, "203.0.113.7", 443, "203.0.113.7:443");
}

static void test_tcp6_connect_lands_on_host_listener_and_lookup_finds_original(void **state)
{
	struct fixture *f = fixture_or_skip(state);

	assert_true(f->l.proxy6 >= 0);
	check_tcp_redirect(f, f->l.proxy6, "2001:db8::7", 80, "[2001:db8::7]:80");
}

static void test_tcp4_through_dual_stack_socket_is_redirected_too(void **state)
{
	struct fixture *f = fixture_or_skip(state);

	/* An IPv6 socket dialing a v4-mapped address reaches the IPv6 listener. */
	check_tcp_redirect(f, f->l.proxy6, "::ffff:203.0.113.7", 443, "[::ffff:203.0.113.7]:443");
}

static void tcp_loopback_agent(const void *arg)
{
	const uint16_t *port = arg;
	struct sockaddr_storage dst;
	socklen_t len = make_addr(&dst, "127.0.0.1", *port);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	char c;

	AGENT_CHECK(fd >= 0);
	AGENT_CHECK(connect(fd, (struct sockaddr *)&dst, len) == 0);
	AGENT_CHECK(read(fd, &c, 1) == 0);
}

static void test_tcp_to_loopback_is_not_redirected(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	struct sockaddr_storage ss;
	socklen_t len = make_addr(&ss, "127.0.0.1", 0);
	int srv = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), conn;
	uint16_t port;
	pid_t pid;

	assert_true(srv >= 0);
	assert_int_equal(bind(srv, (struct sockaddr *)&ss, len), 0);
	assert_int_equal(listen(srv, 4), 0);
	len = sizeof(ss);
	assert_int_equal(getsockname(srv, (struct sockaddr *)&ss, &len), 0);
	port = ntohs(((struct sockaddr_in *)&ss)->sin_port);

	pid = start_agent(f, tcp_loopback_agent, &port);
	assert_true(wait_readable(srv, WAIT_MS));
	conn = accept4(srv, NULL, NULL, SOCK_CLOEXEC);
	assert_true(conn >= 0);
	assert_false(wait_readable(f->l.proxy4, 0));
	close(conn);
	close(srv);
	assert_agent_succeeded(pid);
}

/* Dialing our listener itself is not a redirect: the agent is refused, nothing arrives. */
static void direct_to_listener_agent(const void *arg)
{
	const uint16_t *port = arg;
	struct sockaddr_storage dst;
	socklen_t len = make_addr(&dst, "127.0.0.1", *port);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	AGENT_CHECK(fd >= 0);
	AGENT_CHECK(connect(fd, (struct sockaddr *)&dst, len) < 0 && errno == EPERM);
}

static void test_direct_connection_to_listener_is_refused(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	uint16_t port = f->l.proxy_port;

	assert_agent_succeeded(start_agent(f, direct_to_listener_agent, &port));
	port = f->l.dns_port; /* the resolver's TCP side */
	assert_agent_succeeded(start_agent(f, direct_to_listener_agent, &port));
	assert_false(wait_readable(f->l.proxy4, 0));
	assert_false(wait_readable(f->l.dns_tcp4, 0));
}

/* ---- refused ports: the supervisors' own APIs on loopback ------------------------------ */

/* Every way of spelling "this host's loopback" to a connect() or a datagram. */
static const char *const this_host[] = {
        "127.0.0.1", "127.1.2.3",        "0.0.0.0",          "::1",
        "::",        "::ffff:127.0.0.1", "::ffff:127.9.8.7", "::ffff:0.0.0.0",
};

struct refused_agent {
	uint16_t refused; /* a listener on every address, refused */
	uint16_t open;    /* the same, not refused */
};

static void refused_agent(const void *arg)
{
	const struct refused_agent *a = arg;

	for (size_t i = 0; i < ELEMENTSOF(this_host); i++) {
		struct sockaddr_storage dst;
		socklen_t len = make_addr(&dst, this_host[i], a->refused);
		int fd = socket(dst.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

		AGENT_CHECK(fd >= 0);
		if (connect(fd, (struct sockaddr *)&dst, len) == 0 || errno != EPERM) {
			fprintf(stderr, "agent: connect to %s: %s\n", this_host[i],
			        strerror(errno));
			_exit(1);
		}
		close(fd);
		/* TCP Fast Open: no connect() call, the SYN leaves from sendto(). */
		fd = socket(dst.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		AGENT_CHECK(fd >= 0);
		if (sendto(fd, "GET /", 5, MSG_FASTOPEN, (struct sockaddr *)&dst, len) >= 0 ||
		    errno != EPERM) {
			fprintf(stderr, "agent: fast open to %s: %s\n", this_host[i],
			        strerror(errno));
			_exit(1);
		}
		close(fd);
		fd = socket(dst.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		AGENT_CHECK(fd >= 0);
		if (sendto(fd, "x", 1, 0, (struct sockaddr *)&dst, len) >= 0 || errno != EPERM) {
			fprintf(stderr, "agent: datagram to %s: %s\n", this_host[i],
			        strerror(errno));
			_exit(1);
		}
		close(fd);
	}
	/* Loopback services on other ports stay reachable (0.0.0.0 and :: go to the proxy). */
	for (size_t i = 0; i < ELEMENTSOF(this_host); i++) {
		struct sockaddr_storage dst;
		socklen_t len = make_addr(&dst, this_host[i], a->open);
		int fd = socket(dst.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

		AGENT_CHECK(fd >= 0);
		if (connect(fd, (struct sockaddr *)&dst, len) < 0) {
			fprintf(stderr, "agent: connect to %s port %u: %s\n", this_host[i], a->open,
			        strerror(errno));
			_exit(1);
		}
		close(fd);
	}
}

/* A dual-stack listener on every address; its port in *ret_port. */
static int any_listener(uint16_t *ret_port)
{
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
	socklen_t len = sizeof(s6);
	int off = 0, fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	assert_true(fd >= 0);
	assert_int_equal(setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)), 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&s6, sizeof(s6)), 0);
	assert_int_equal(listen(fd, 64), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&s6, &len), 0);
	*ret_port = ntohs(s6.sin6_port);
	return fd;
}

static int count_accepted(int fd)
{
	int n = 0, c;

	while ((c = accept4(fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		close(c);
		n++;
	}
	return n;
}

static void test_refused_port_fails_with_eperm_at_every_loopback_address(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	struct refused_agent a;
	int refused = any_listener(&a.refused), open = any_listener(&a.open);

	assert_int_equal(redirect_refuse_port(f->r, a.refused), 0);
	assert_int_equal(redirect_refuse_port(f->r, a.refused), 0); /* twice is fine */
	assert_agent_succeeded(start_agent(f, refused_agent, &a));
	assert_int_equal(count_accepted(refused), 0);
	/* 127.0.0.1, 127.1.2.3, ::1 and the two mapped loopback ones came in; 0.0.0.0, :: and
	 * ::ffff:0.0.0.0 are not loopback to the redirect, so they went to the proxy. */
	assert_int_equal(count_accepted(open), (int)ELEMENTSOF(this_host) - 3);
	close(refused);
	close(open);
}

static void test_refuse_port_checks_its_arguments(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	unsigned ok = 0;

	assert_int_equal(redirect_refuse_port(f->r, 0), -EINVAL);
	for (unsigned port = 1; port <= 300; port++)
		if (redirect_refuse_port(f->r, (uint16_t)(40000 + port)) == 0)
			ok++;
	assert_int_equal(ok, 256);
	assert_int_equal(redirect_refuse_port(f->r, 40301), -E2BIG);
}

/* ---- supervisors that start later ----------------------------------------------------- */

/* A "supervisor" started after the sandbox: this test program, exec'd under NAME (a copy of
 * it, so that its executable is named that), listening on every address (IPv6 socket, dual
 * stack: post_bind6) and on 127.0.0.1 (post_bind4) until *ret_sock is closed. Its ports in
 * ret_ports, its pid in *ret_pid. */
static void start_listener_named(const char *dir, const char *name, uint16_t ret_ports[2],
                                 int *ret_sock, pid_t *ret_pid)
{
	char exe[PATH_MAX], fdarg[16];
	int sv[2];
	pid_t pid;

	snprintf(exe, sizeof(exe), "%s/%s", dir, name);
	if (access(exe, X_OK) < 0) {
		char cmd[PATH_MAX + 64];

		snprintf(cmd, sizeof(cmd), "cp /proc/%d/exe '%s'", (int)getpid(), exe);
		assert_int_equal(system(cmd), 0);
	}
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *argv[] = {exe, "--listen-until-closed", fdarg, NULL};

		close(sv[0]);
		if (fcntl(sv[1], F_SETFD, 0) < 0)
			_exit(1);
		snprintf(fdarg, sizeof(fdarg), "%d", sv[1]);
		execv(exe, argv);
		_exit(127);
	}
	close(sv[1]);
	assert_true(wait_readable(sv[0], WAIT_MS));
	assert_int_equal(read(sv[0], ret_ports, 2 * sizeof(uint16_t)), 2 * sizeof(uint16_t));
	*ret_sock = sv[0];
	*ret_pid = pid;
}

/* The other side of start_listener_named, in its own process. */
static int listen_until_closed(int sock)
{
	struct sockaddr_in s4 = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
	socklen_t len4 = sizeof(s4), len6 = sizeof(s6);
	int off = 0, fd6 = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int fd4 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	uint16_t ports[2];
	char c;

	if (fd6 < 0 || fd4 < 0 ||
	    setsockopt(fd6, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) < 0 ||
	    bind(fd6, (struct sockaddr *)&s6, sizeof(s6)) < 0 || listen(fd6, 64) < 0 ||
	    getsockname(fd6, (struct sockaddr *)&s6, &len6) < 0 ||
	    bind(fd4, (struct sockaddr *)&s4, sizeof(s4)) < 0 || listen(fd4, 64) < 0 ||
	    getsockname(fd4, (struct sockaddr *)&s4, &len4) < 0) {
		perror("listener");
		return 1;
	}
	ports[0] = ntohs(s6.sin6_port);
	ports[1] = ntohs(s4.sin_port);
	if (write(sock, ports, sizeof(ports)) != sizeof(ports))
		return 1;
	while (read(sock, &c, 1) > 0)
		;
	return 0;
}

static void stop_listener(int sock, pid_t pid)
{
	int status;

	close(sock);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A supervisor that binds after the sandbox started is refused to it too, its IPv6 and IPv4
 * ports alike, at every loopback address; a program of another name that does the same is
 * not (the agent's dev tools on loopback stay reachable). */
static void test_ports_a_later_supervisor_binds_are_refused(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	struct cl_error err = {{0}};
	char dir[] = "/tmp/cloister-test-redirect-XXXXXX", cmd[64];
	uint16_t peer[2], other[2];
	int peer_sock, other_sock;
	pid_t peer_pid, other_pid;
	struct refused_agent a;

	assert_int_equal(redirect_watch_peers(f->r, &err), 0);
	assert_int_equal(redirect_watch_peers(f->r, &err), -EBUSY);
	assert_non_null(mkdtemp(dir));
	start_listener_named(dir, "cloister-supervisor", peer, &peer_sock, &peer_pid);
	start_listener_named(dir, "not-cloister", other, &other_sock, &other_pid);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);

	a = (struct refused_agent){.refused = peer[0], .open = other[0]};
	assert_agent_succeeded(start_agent(f, refused_agent, &a));
	a = (struct refused_agent){.refused = peer[1], .open = other[0]};
	assert_agent_succeeded(start_agent(f, refused_agent, &a));
	stop_listener(peer_sock, peer_pid);
	stop_listener(other_sock, other_pid);
}

/* Connects to 127.0.0.1:*arg. */
static void connects_agent(const void *arg)
{
	const uint16_t *port = arg;
	struct sockaddr_storage dst;
	socklen_t len = make_addr(&dst, "127.0.0.1", *port);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	AGENT_CHECK(fd >= 0);
	AGENT_CHECK(connect(fd, (struct sockaddr *)&dst, len) == 0);
	close(fd);
}

/* Without the watch, the same later supervisor is reachable: what the test above sees is
 * the watch's doing. */
static void test_without_the_watch_a_later_supervisor_is_reachable(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	char dir[] = "/tmp/cloister-test-redirect-XXXXXX", cmd[64];
	uint16_t peer[2];
	int peer_sock;
	pid_t peer_pid;

	assert_non_null(mkdtemp(dir));
	start_listener_named(dir, "cloister-supervisor", peer, &peer_sock, &peer_pid);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	assert_agent_succeeded(start_agent(f, connects_agent, &peer[1]));
	stop_listener(peer_sock, peer_pid);
}

/* ---- UDP ------------------------------------------------------------------------------- */

struct udp_agent {
	const char *ip;
	bool connected;
	const char *want_src;
};

static void udp_dns_agent(const void *arg)
{
	const struct udp_agent *a = arg;
	struct sockaddr_storage dst, from;
	socklen_t len = make_addr(&dst, a->ip, 53), flen = sizeof(from);
	struct timeval tv = {.tv_sec = 2};
	char buf[64], src[80];
	int fd = socket(dst.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ssize_t n;

	AGENT_CHECK(fd >= 0);
	AGENT_CHECK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0);
	if (a->connected) {
		AGENT_CHECK(connect(fd, (struct sockaddr *)&dst, len) == 0);
		AGENT_CHECK(send(fd, "query", 5, 0) == 5);
	} else {
		AGENT_CHECK(sendto(fd, "query", 5, 0, (struct sockaddr *)&dst, len) == 5);
	}
	n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen);
	AGENT_CHECK(n == 6 && memcmp(buf, "answer", 6) == 0);
	format_addr(&from, src, sizeof(src));
	if (strcmp(src, a->want_src) != 0) {
		fprintf(stderr, "agent: answer from %s, want %s\n", src, a->want_src);
		_exit(1);
	}
}

static void check_udp_dns(struct fixture *f, int resolver, const struct udp_agent *a)
{
	pid_t pid = start_agent(f, udp_dns_agent, a);
	struct sockaddr_storage client;
	socklen_t clen = sizeof(client);
	char buf[64];

	assert_true(wait_readable(resolver, WAIT_MS));
	assert_int_equal(recvfrom(resolver, buf, sizeof(buf), 0, (struct sockaddr *)&client, &clen),
	                 5);
	assert_memory_equal(buf, "query", 5);
	assert_int_equal(sendto(resolver, "answer", 6, 0, (struct sockaddr *)&client, clen), 6);
	assert_agent_succeeded(pid);
}

static void test_udp_dns_reaches_resolver_and_answer_shows_original_source(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	const struct udp_agent unconnected4 = {"192.0.2.53", false, "192.0.2.53:53"};
	const struct udp_agent connected4 = {"192.0.2.53", true, "192.0.2.53:53"};
	const struct udp_agent unconnected6 = {"2001:db8::53", false, "[2001:db8::53]:53"};

	check_udp_dns(f, f->l.dns_udp4, &unconnected4);
	check_udp_dns(f, f->l.dns_udp4, &connected4);
	check_udp_dns(f, f->l.dns_udp6, &unconnected6);
}

static void udp_refused_agent(const void *arg)
{
	struct sockaddr_storage dst;
	socklen_t len;
	int fd;

	(void)arg;
	len = make_addr(&dst, "192.0.2.1", 9);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	AGENT_CHECK(fd >= 0);
	AGENT_CHECK(sendto(fd, "x", 1, 0, (struct sockaddr *)&dst, len) < 0 && errno == EPERM);
	AGENT_CHECK(connect(fd, (struct sockaddr *)&dst, len) < 0 && errno == EPERM);
	close(fd);

	len = make_addr(&dst, "2001:db8::1", 443); /* QUIC */
	fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	AGENT_CHECK(fd >= 0);
	AGENT_CHECK(sendto(fd, "x", 1, 0, (struct sockaddr *)&dst, len) < 0 && errno == EPERM);
	close(fd);
}

static void test_udp_to_other_ports_fails_with_eperm(void **state)
{
	struct fixture *f = fixture_or_skip(state);

	assert_agent_succeeded(start_agent(f, udp_refused_agent, NULL));
	assert_false(wait_readable(f->l.dns_udp4, 0));
}

static void other_sockets_agent(const void *arg)
{
	(void)arg;
	errno = 0;
	AGENT_CHECK(socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP) < 0 && errno == EPERM);
	AGENT_CHECK(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_ICMP) < 0 &&
	            errno == EPERM); /* ping socket */
	AGENT_CHECK(socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMPV6) < 0 &&
	            errno == EPERM);
	AGENT_CHECK(socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, 253) < 0 && errno == EPERM);
	/* TCP and UDP remain possible. */
	AGENT_CHECK(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0) >= 0);
	AGENT_CHECK(socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0) >= 0);
}

static void test_raw_and_icmp_sockets_are_refused(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	int fd;

	/* Outside the cgroup the same sockets are allowed: the refusal is the programs'. */
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_ICMP);
	assert_true(fd >= 0);
	close(fd);
	fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
	assert_true(fd >= 0);
	close(fd);
	assert_agent_succeeded(start_agent(f, other_sockets_agent, NULL));
}

/* ---- scope and clean-up ---------------------------------------------------------------- */

static void test_processes_outside_the_cgroup_are_not_redirected(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	struct sockaddr_storage dst;
	socklen_t len = make_addr(&dst, "203.0.113.7", 443);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&dst, len), -1);
	assert_int_equal(errno, ENETUNREACH);
	assert_false(wait_readable(f->l.proxy4, 0));
	close(fd);
}

static void unredirected_agent(const void *arg)
{
	struct sockaddr_storage dst;
	socklen_t len = make_addr(&dst, "203.0.113.7", 443);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	(void)arg;
	AGENT_CHECK(fd >= 0);
	AGENT_CHECK(connect(fd, (struct sockaddr *)&dst, len) < 0 && errno == ENETUNREACH);
	fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
	AGENT_CHECK(fd >= 0);
}

static unsigned attached_count(int cgroup_fd, enum bpf_attach_type type)
{
	__u32 count = 0;

	assert_int_equal(bpf_prog_query(cgroup_fd, type, 0, NULL, NULL, &count), 0);
	return count;
}

static void test_detach_removes_every_program(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	static const enum bpf_attach_type types[] = {
	        BPF_CGROUP_INET_SOCK_CREATE,  BPF_CGROUP_INET4_CONNECT,
	        BPF_CGROUP_INET6_CONNECT,     BPF_CGROUP_UDP4_SENDMSG,
	        BPF_CGROUP_UDP6_SENDMSG,      BPF_CGROUP_UDP4_RECVMSG,
	        BPF_CGROUP_UDP6_RECVMSG,      BPF_CGROUP_INET4_GETPEERNAME,
	        BPF_CGROUP_INET6_GETPEERNAME, BPF_CGROUP_SOCK_OPS,
	};
	struct cl_error err = {{0}};

	for (size_t i = 0; i < ELEMENTSOF(types); i++)
		assert_int_equal(attached_count(f->cgroup_fd, types[i]), 1);
	assert_int_equal(redirect_attach(f->r, f->cgroup_fd, &err), -EBUSY);

	redirect_detach(f->r);
	for (size_t i = 0; i < ELEMENTSOF(types); i++)
		assert_int_equal(attached_count(f->cgroup_fd, types[i]), 0);
	assert_agent_succeeded(start_agent(f, unredirected_agent, NULL));
	redirect_detach(f->r); /* idempotent */
}

static void test_open_rejects_port_zero(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	struct redirect_config cfg = {.proxy_port = 0, .dns_port = 53};
	struct redirect *r = NULL;
	struct cl_error err = {{0}};

	(void)f;
	assert_int_equal(redirect_open(&cfg, &r, &err), -EINVAL);
	assert_null(r);
	assert_non_null(strstr(err.msg, "port"));
}

/* The test's own "host" network: a netns with lo up and nothing else. */
static const char *enter_private_netns(void)
{
	struct ifreq ifr = {0};
	int fd;

	if (geteuid() != 0)
		return "needs root (BPF programs, cgroups, network namespaces)";
	if (unshare(CLONE_NEWNET) < 0)
		return "cannot create a network namespace";
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return "no IPv4 socket";
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		abort();
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		abort();
	close(fd);
	/* Allow ping sockets in this netns (the default range allows no one), so that only the
	 * programs can be what refuses them. */
	fd = open("/proc/sys/net/ipv4/ping_group_range", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "0 2147483647", 12) != 12)
		abort();
	close(fd);
	return NULL;
}

/* The key the loaders look a connection up by (redirect_lookup, connattr_lookup) must be, byte
 * for byte, what the sockops programs filed: family, port and address in network order, the
 * rest zero. Pure: no kernel needed. */
static void test_lookup_key_is_the_peer_byte_for_byte_and_bad_peers_are_refused(void **state)
{
	struct sockaddr_in s4 = {.sin_family = AF_INET, .sin_port = htons(40001)};
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6, .sin6_port = htons(40002)};
	struct sockaddr_un su = {.sun_family = AF_UNIX};
	struct inet_addr_abi key, want;

	(void)state;
	assert_int_equal(inet_pton(AF_INET, "127.0.0.5", &s4.sin_addr), 1);
	assert_int_equal(inet_pton(AF_INET6, "2001:db8::7", &s6.sin6_addr), 1);

	memset(&key, 0xa5, sizeof(key));
	assert_int_equal(inet_addr_from_sockaddr((struct sockaddr *)&s4, sizeof(s4), &key), 0);
	memset(&want, 0, sizeof(want));
	want.family = AF_INET;
	want.port = htons(40001);
	want.addr[0] = htonl(0x7f000005);
	assert_memory_equal(&key, &want, sizeof(key));

	memset(&key, 0xa5, sizeof(key));
	assert_int_equal(inet_addr_from_sockaddr((struct sockaddr *)&s6, sizeof(s6), &key), 0);
	memset(&want, 0, sizeof(want));
	want.family = AF_INET6;
	want.port = htons(40002);
	memcpy(want.addr, &s6.sin6_addr, sizeof(want.addr));
	assert_memory_equal(&key, &want, sizeof(key));

	/* Refused, and the key is left as it was. */
	memset(&key, 0xa5, sizeof(key));
	want = key;
	assert_int_equal(inet_addr_from_sockaddr(NULL, sizeof(s4), &key), -EINVAL);
	assert_int_equal(inet_addr_from_sockaddr((struct sockaddr *)&s4, sizeof(s4) - 1, &key),
	                 -EINVAL);
	assert_int_equal(inet_addr_from_sockaddr((struct sockaddr *)&s6, sizeof(s6) - 1, &key),
	                 -EINVAL);
	assert_int_equal(inet_addr_from_sockaddr((struct sockaddr *)&su, sizeof(su), &key),
	                 -EAFNOSUPPORT);
	assert_memory_equal(&key, &want, sizeof(key));
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--listen-until-closed") == 0)
		return listen_until_closed(atoi(argv[2]));
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	        T(test_tcp4_connect_lands_on_host_listener_and_lookup_finds_original),
	        T(test_tcp6_connect_lands_on_host_listener_and_lookup_finds_original),
	        T(test_tcp4_through_dual_stack_socket_is_redirected_too),
	        T(test_tcp_to_loopback_is_not_redirected),
	        T(test_direct_connection_to_listener_is_refused),
	        T(test_refused_port_fails_with_eperm_at_every_loopback_address),
	        T(test_refuse_port_checks_its_arguments),
	        T(test_ports_a_later_supervisor_binds_are_refused),
	        T(test_without_the_watch_a_later_supervisor_is_reachable),
	        T(test_udp_dns_reaches_resolver_and_answer_shows_original_source),
	        T(test_udp_to_other_ports_fails_with_eperm),
	        T(test_raw_and_icmp_sockets_are_refused),
	        T(test_processes_outside_the_cgroup_are_not_redirected),
	        T(test_detach_removes_every_program),
	        T(test_open_rejects_port_zero),
#undef T
	        cmocka_unit_test(
	                test_lookup_key_is_the_peer_byte_for_byte_and_bad_peers_are_refused),
	};

	global_skip = enter_private_netns();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
