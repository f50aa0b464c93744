/* Egress interception in a real network namespace (root): the netns set-up, the nftables
 * redirect and the listeners, driven from clients inside the netns.
 *
 * Each test creates its own netns (netfilter_netns_create: held only by an fd) and its
 * teardown closes everything, so nothing is left behind even after a failed assertion. Only
 * sockets are created inside the netns (netfilter_run_in_netns); the test's own thread stays
 * in its netns and drives every socket from there, as the supervisor will. The addresses are
 * documentation prefixes (203.0.113.0/24, 192.0.2.0/24, 2001:db8::/32) that exist only inside
 * the test's netns, where nothing leaves the egress device anyway. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <netinet/ip_icmp.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/netlink.h>
#include <cmocka.h>

#include <nftables/libnftables.h>

#include "netfilter/listen.h"
#include "netfilter/netns.h"
#include "netfilter/nft_egress.h"
#include "base/cleanup.h"

#define WAIT_MS 2000

struct fixture {
	const char *skip_reason;
	int netns_fd;
	struct nft_egress *rules;
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
	struct cl_error err = {{0}};
	struct nft_egress_config cfg;
	int r;

	if (!f)
		return -1;
	*state = f;
	f->netns_fd = -EBADF;
	f->l = (struct netfilter_listeners)NETFILTER_LISTENERS_INIT;
	if (geteuid() != 0) {
		f->skip_reason = "needs root (network namespaces, nftables)";
		return 0;
	}
	r = netfilter_netns_create(&f->netns_fd);
	if (r < 0) {
		fprintf(stderr, "test_netfilter: netns: %s\n", strerror(-r));
		return setup_failed(state);
	}
	r = netfilter_netns_setup(f->netns_fd, &err);
	if (r >= 0)
		r = netfilter_listeners_open(f->netns_fd, 0, 0, &f->l, &err);
	if (r >= 0) {
		cfg = (struct nft_egress_config){.proxy_port = f->l.proxy_port,
		                                 .dns_port = f->l.dns_port};
		r = nft_egress_install(f->netns_fd, &cfg, &f->rules, &err);
	}
	if (r < 0) {
		fprintf(stderr, "test_netfilter: set-up: %s\n", err.msg);
		return setup_failed(state);
	}
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (!f)
		return 0;
	nft_egress_free(f->rules);
	netfilter_listeners_close(&f->l);
	if (f->netns_fd >= 0)
		close(f->netns_fd);
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

struct socket_args {
	int family, type, protocol;
	int fd;
};

static int make_socket(void *userdata)
{
	struct socket_args *a = userdata;

	a->fd = socket(a->family, a->type | SOCK_CLOEXEC, a->protocol);
	return a->fd < 0 ? -errno : 0;
}

/* A socket that belongs to the test's sandbox netns. */
static int ns_socket(struct fixture *f, int family, int type, int protocol)
{
	struct socket_args a = {.family = family, .type = type, .protocol = protocol, .fd = -1};
	int r = netfilter_run_in_netns(f->netns_fd, make_socket, &a);

	if (r < 0)
		fail_msg("socket(%d, %d, %d) in the netns: %s", family, type, protocol,
		         strerror(-r));
	return a.fd;
}

static socklen_t make_addr(struct sockaddr_storage *ss, const char *ip, uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(ip, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		assert_int_equal(inet_pton(AF_INET6, ip, &s6->sin6_addr), 1);
		return sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		assert_int_equal(inet_pton(AF_INET, ip, &s4->sin_addr), 1);
		return sizeof(*s4);
	}
}

static void format_addr(const struct sockaddr_storage *ss, char *buf, size_t size)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)ss;

		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
		port = ntohs(s4->sin_port);
		snprintf(buf, size, "%s:%u", ip, port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
		port = ntohs(s6->sin6_port);
		snprintf(buf, size, "[%s]:%u", ip, port);
	} else {
		snprintf(buf, size, "(family %d)", ss->ss_family);
	}
}

static void assert_addr(const struct sockaddr_storage *ss, const char *want)
{
	char got[80];

	format_addr(ss, got, sizeof(got));
	assert_string_equal(got, want);
}

static bool wait_readable(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* Non-blocking connect from inside the netns, completed within WAIT_MS; returns the fd or
 * -errno (-ETIMEDOUT if the handshake did not complete). */
static int ns_connect(struct fixture *f, int type, const char *ip, uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(&ss, ip, port);
	int fd = ns_socket(f, ss.ss_family, type, 0);
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int soerr = 0;
	socklen_t elen = sizeof(soerr);

	assert_int_equal(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	if (connect(fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS) {
		int r = -errno;

		close(fd);
		return r;
	}
	if (poll(&p, 1, WAIT_MS) != 1) {
		close(fd);
		return -ETIMEDOUT;
	}
	assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &elen), 0);
	if (soerr) {
		close(fd);
		return -soerr;
	}
	return fd;
}

static int accept_within(int listen_fd, int ms)
{
	if (!wait_readable(listen_fd, ms))
		return -ETIMEDOUT;
	return accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
}

/* The connection is really one: bytes go both ways. */
static void assert_connected(int a, int b)
{
	char buf[8] = {0};

	assert_int_equal(write(a, "ping", 4), 4);
	assert_true(wait_readable(b, WAIT_MS));
	assert_int_equal(read(b, buf, sizeof(buf)), 4);
	assert_memory_equal(buf, "ping", 4);
	assert_int_equal(write(b, "pong", 4), 4);
	assert_true(wait_readable(a, WAIT_MS));
	assert_int_equal(read(a, buf, sizeof(buf)), 4);
	assert_memory_equal(buf, "pong", 4);
}

static void check_tcp_redirect(struct fixture *f, int listener, const char *ip, uint16_t port,
                               const char *want)
{
	struct sockaddr_storage orig;
	int client, server;

	client = ns_connect(f, SOCK_STREAM, ip, port);
	if (client < 0)
		fail_msg("connect to %s: %s", want, strerror(-client));
	server = accept_within(listener, WAIT_MS);
	assert_true(server >= 0);
	assert_int_equal(netfilter_original_dst(server, &orig), 0);
	assert_addr(&orig, want);
	assert_connected(client, server);
	close(client);
	close(server);
}

/* ---- TCP ------------------------------------------------------------------------------- */

static void test_tcp4_connect_lands_on_proxy_with_original_destination(void **state)
{
	struct fixture *f = fixture_or_skip(state);

	check_tcp_redirect(f, f->l.proxy4, "203.0.113.7", 443, "203.0.113.7:443");
}

static void test_tcp6_connect_lands_on_proxy_with_original_destination(void **state)
{
	struct fixture *f = fixture_or_skip(state);

	assert_true(f->l.proxy6 >= 0);
	check_tcp_redirect(f, f->l.proxy6, "2001:db8::7", 80, "[2001:db8::7]:80");
}

/* A dev server inside the sandbox is reached directly; the proxy never hears of it. */
static void check_loopback_stays_local(struct fixture *f, int family, const char *ip, int proxy_fd)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(&ss, ip, 0);
	int srv = ns_socket(f, family, SOCK_STREAM, 0);
	int client, server;
	uint16_t port;

	assert_int_equal(bind(srv, (struct sockaddr *)&ss, len), 0);
	assert_int_equal(listen(srv, 4), 0);
	len = sizeof(ss);
	assert_int_equal(getsockname(srv, (struct sockaddr *)&ss, &len), 0);
	port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
	                               : ((struct sockaddr_in6 *)&ss)->sin6_port);

	client = ns_connect(f, SOCK_STREAM, ip, port);
	assert_true(client >= 0);
	server = accept_within(srv, WAIT_MS);
	assert_true(server >= 0);
	assert_connected(client, server);
	assert_false(wait_readable(proxy_fd, 0));
	close(client);
	close(server);
	close(srv);
}

static void test_tcp_to_own_loopback_stays_local(void **state)
{
	struct fixture *f = fixture_or_skip(state);

	check_loopback_stays_local(f, AF_INET, "127.0.0.1", f->l.proxy4);
	check_loopback_stays_local(f, AF_INET6, "::1", f->l.proxy6);
}

/* A client that dials the listener's own address was not redirected: no original
 * destination, so the proxy cannot be made to dial itself. */
static void test_direct_connection_to_listener_has_no_original_destination(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	struct sockaddr_storage orig;
	int client, server;

	client = ns_connect(f, SOCK_STREAM, "127.0.0.1", f->l.proxy_port);
	assert_true(client >= 0);
	server = accept_within(f->l.proxy4, WAIT_MS);
	assert_true(server >= 0);
	assert_int_equal(netfilter_original_dst(server, &orig), -ENOENT);
	close(client);
	close(server);
}

/* A redirected connection keeps the MSS of the route it was first sent by (the egress
 * device's): with a 1500-byte MTU there, bulk transfers through the redirect lost 40 %. */
static void test_redirected_connection_gets_loopback_sized_segments(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	int client = ns_connect(f, SOCK_STREAM, "203.0.113.7", 443), server, mss = 0;
	socklen_t len = sizeof(mss);

	assert_true(client >= 0);
	server = accept_within(f->l.proxy4, WAIT_MS);
	assert_true(server >= 0);
	assert_int_equal(getsockopt(client, IPPROTO_TCP, TCP_MAXSEG, &mss, &len), 0);
	if (mss < 16384) /* 1448 through a 1500-byte device */
		fail_msg("MSS %d: the egress device's MTU is not lo's", mss);
	close(client);
	close(server);
}

/* ---- DNS ------------------------------------------------------------------------------- */

static void check_udp_dns(struct fixture *f, int resolver, const char *ip, const char *want_src)
{
	struct sockaddr_storage dst, from, client_addr;
	socklen_t len = make_addr(&dst, ip, 53), flen;
	int client = ns_socket(f, dst.ss_family, SOCK_DGRAM, 0);
	char buf[64];
	ssize_t n;

	assert_int_equal(sendto(client, "query", 5, 0, (struct sockaddr *)&dst, len), 5);
	assert_true(wait_readable(resolver, WAIT_MS));
	flen = sizeof(client_addr);
	n = recvfrom(resolver, buf, sizeof(buf), 0, (struct sockaddr *)&client_addr, &flen);
	assert_int_equal(n, 5);
	assert_memory_equal(buf, "query", 5);

	/* The answer goes back to whoever asked, and arrives from the address it asked. */
	assert_int_equal(sendto(resolver, "answer", 6, 0, (struct sockaddr *)&client_addr, flen),
	                 6);
	assert_true(wait_readable(client, WAIT_MS));
	flen = sizeof(from);
	n = recvfrom(client, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen);
	assert_int_equal(n, 6);
	assert_memory_equal(buf, "answer", 6);
	assert_addr(&from, want_src);
	close(client);
}

static void test_udp4_dns_reaches_resolver_and_answer_comes_from_original(void **state)
{
	struct fixture *f = fixture_or_skip(state);

	check_udp_dns(f, f->l.dns_udp4, "192.0.2.53", "192.0.2.53:53");
}

static void test_udp6_dns_reaches_resolver_and_answer_comes_from_original(void **state)
{
	struct fixture *f = fixture_or_skip(state);

	assert_true(f->l.dns_udp6 >= 0);
	check_udp_dns(f, f->l.dns_udp6, "2001:db8::53", "[2001:db8::53]:53");
}

static void test_tcp_dns_reaches_resolver(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	int client, server;

	client = ns_connect(f, SOCK_STREAM, "192.0.2.53", 53);
	assert_true(client >= 0);
	server = accept_within(f->l.dns_tcp4, WAIT_MS);
	assert_true(server >= 0);
	assert_connected(client, server);
	/* Not the proxy's business. */
	assert_false(wait_readable(f->l.proxy4, 0));
	close(client);
	close(server);

	client = ns_connect(f, SOCK_STREAM, "2001:db8::53", 53);
	assert_true(client >= 0);
	server = accept_within(f->l.dns_tcp6, WAIT_MS);
	assert_true(server >= 0);
	assert_connected(client, server);
	close(client);
	close(server);
}

/* ---- dropped --------------------------------------------------------------------------- */

/* sendto from a socket of the netns to ip fails with EPERM: the packet was dropped on output. */
static void assert_send_dropped(struct fixture *f, int type, int protocol, const char *ip,
                                uint16_t port, const void *payload, size_t size)
{
	struct sockaddr_storage dst;
	socklen_t len = make_addr(&dst, ip, port);
	int fd = ns_socket(f, dst.ss_family, type, protocol);
	ssize_t n;

	n = sendto(fd, payload, size, 0, (struct sockaddr *)&dst, len);
	if (n >= 0)
		fail_msg("sendto %s (type %d, protocol %d) was sent", ip, type, protocol);
	assert_int_equal(errno, EPERM);
	close(fd);
}

static void test_udp_to_other_ports_is_dropped(void **state)
{
	struct fixture *f = fixture_or_skip(state);

	assert_send_dropped(f, SOCK_DGRAM, 0, "192.0.2.1", 9, "x", 1);
	assert_send_dropped(f, SOCK_DGRAM, 0, "203.0.113.7", 443, "x", 1); /* QUIC */
	assert_send_dropped(f, SOCK_DGRAM, 0, "2001:db8::1", 9, "x", 1);
	assert_false(wait_readable(f->l.dns_udp4, 0));
	assert_false(wait_readable(f->l.dns_udp6, 0));
}

static void test_icmp_echo_is_dropped(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	struct icmphdr echo = {.type = ICMP_ECHO};
	struct icmp6_hdr echo6 = {.icmp6_type = ICMP6_ECHO_REQUEST};

	assert_send_dropped(f, SOCK_RAW, IPPROTO_ICMP, "203.0.113.7", 0, &echo, sizeof(echo));
	assert_send_dropped(f, SOCK_RAW, IPPROTO_ICMPV6, "2001:db8::7", 0, &echo6, sizeof(echo6));
}

/* The agent may still ping itself: local traffic is not egress. */
static void test_icmp_echo_to_own_loopback_is_answered(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	struct icmphdr echo = {.type = ICMP_ECHO, .un.echo.id = htons(7)};
	struct sockaddr_storage dst;
	socklen_t len = make_addr(&dst, "127.0.0.1", 0);
	int fd = ns_socket(f, AF_INET, SOCK_RAW, IPPROTO_ICMP);
	unsigned char buf[256];
	uint32_t sum = 0;
	bool got_reply = false;

	/* The checksum over the 8-byte header (the kernel does not fill it on raw ICMP). */
	for (size_t i = 0; i < sizeof(echo); i += 2)
		sum += (uint32_t)((const unsigned char *)&echo)[i] << 8 |
		       ((const unsigned char *)&echo)[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	echo.checksum = htons((uint16_t)~sum);
	assert_int_equal(sendto(fd, &echo, sizeof(echo), 0, (struct sockaddr *)&dst, len),
	                 sizeof(echo));
	/* A raw ICMP socket sees both our request and the reply (after the IP header). */
	for (int i = 0; i < 4 && wait_readable(fd, WAIT_MS); i++) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		size_t ihl;

		assert_true(n > 20);
		ihl = (size_t)(buf[0] & 0x0f) * 4;
		if ((size_t)n >= ihl + sizeof(echo) && buf[ihl] == ICMP_ECHOREPLY) {
			got_reply = true;
			break;
		}
	}
	assert_true(got_reply);
	close(fd);
}

static void test_raw_socket_of_other_protocol_is_dropped(void **state)
{
	struct fixture *f = fixture_or_skip(state);

	/* 253: reserved for experiments (RFC 3692): no one's real traffic. */
	assert_send_dropped(f, SOCK_RAW, 253, "203.0.113.7", 0, "raw", 3);
	assert_send_dropped(f, SOCK_RAW, 253, "2001:db8::7", 0, "raw", 3);
	/* A crafted UDP datagram on a raw socket is UDP to the rules all the same. */
	assert_send_dropped(f, SOCK_RAW, IPPROTO_UDP, "192.0.2.1", 0,
	                    "\x30\x39\x00\x09\x00\x09\0\0x", 9);
}

/* ---- ownership and removal ------------------------------------------------------------- */

struct nft_cmd {
	const char *cmd;
	int result;
};

static int run_nft(void *userdata)
{
	struct nft_cmd *c = userdata;
	struct nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);

	if (!ctx)
		return -ENOMEM;
	nft_ctx_buffer_output(ctx);
	nft_ctx_buffer_error(ctx);
	c->result = nft_run_cmd_from_buffer(ctx, c->cmd);
	nft_ctx_free(ctx);
	return 0;
}

/* nft's result (0 or -1) for cmd run by another process's socket inside the netns. */
static int nft_in_netns(struct fixture *f, const char *cmd)
{
	struct nft_cmd c = {.cmd = cmd, .result = -2};

	assert_int_equal(netfilter_run_in_netns(f->netns_fd, run_nft, &c), 0);
	return c.result;
}

static void test_table_is_owned_and_cannot_be_deleted_by_others(void **state)
{
	struct fixture *f = fixture_or_skip(state);

	assert_int_equal(nft_in_netns(f, "list table inet " NFT_EGRESS_TABLE), 0);
	assert_int_equal(nft_in_netns(f, "delete table inet " NFT_EGRESS_TABLE), -1);
	assert_int_equal(nft_in_netns(f, "flush chain inet " NFT_EGRESS_TABLE " filter_output"),
	                 -1);
	/* Still redirecting. */
	check_tcp_redirect(f, f->l.proxy4, "203.0.113.7", 443, "203.0.113.7:443");
}

/* Without the rules (removed, or the supervisor died) nothing gets out either: the egress
 * device discards it. */
static void assert_fails_closed(struct fixture *f)
{
	int client;

	assert_int_equal(nft_in_netns(f, "list table inet " NFT_EGRESS_TABLE), -1);
	client = ns_connect(f, SOCK_STREAM, "203.0.113.7", 443);
	assert_int_equal(client, -ETIMEDOUT);
	assert_false(wait_readable(f->l.proxy4, 0));
}

static void test_remove_deletes_table_and_netns_fails_closed(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	struct cl_error err = {{0}};

	assert_int_equal(nft_egress_remove(TAKE_PTR(f->rules), &err), 0);
	assert_fails_closed(f);
}

static void test_free_closes_owner_socket_and_kernel_deletes_table(void **state)
{
	struct fixture *f = fixture_or_skip(state);

	nft_egress_free(TAKE_PTR(f->rules));
	assert_fails_closed(f);
}

/* libnftables opens its netlink socket without O_CLOEXEC; ours must not leak into the agent. */
static void test_owner_socket_is_close_on_exec(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	int found = 0;

	assert_non_null(f->rules);
	for (int fd = 0; fd < 1024; fd++) {
		int domain = 0, proto = 0;
		socklen_t len = sizeof(int);

		if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 ||
		    domain != AF_NETLINK)
			continue;
		len = sizeof(int);
		if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len) < 0 ||
		    proto != NETLINK_NETFILTER)
			continue;
		found++;
		assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	}
	assert_true(found >= 1);
}

/* A persist table (run's: its netns dies with the sandbox) in place of the fixture's. */
static void reinstall_persist(struct fixture *f)
{
	struct nft_egress_config cfg = {
	        .proxy_port = f->l.proxy_port, .dns_port = f->l.dns_port, .persist = true};
	struct cl_error err = {{0}};

	nft_egress_free(TAKE_PTR(f->rules));
	assert_int_equal(nft_in_netns(f, "list table inet " NFT_EGRESS_TABLE), -1);
	assert_int_equal(nft_egress_install(f->netns_fd, &cfg, &f->rules, &err), 0);
}

static void test_persist_table_is_owned_while_its_socket_is_open(void **state)
{
	struct fixture *f = fixture_or_skip(state);

	reinstall_persist(f);
	assert_int_equal(nft_in_netns(f, "delete table inet " NFT_EGRESS_TABLE), -1);
	assert_int_equal(nft_in_netns(f, "flush chain inet " NFT_EGRESS_TABLE " filter_output"),
	                 -1);
	assert_int_equal(nft_in_netns(f, "add rule inet " NFT_EGRESS_TABLE " filter_output accept"),
	                 -1);
	check_tcp_redirect(f, f->l.proxy4, "203.0.113.7", 443, "203.0.113.7:443");
	check_tcp_redirect(f, f->l.proxy6, "2001:db8::7", 443, "[2001:db8::7]:443");
}

/* Closing the socket costs no deletion: the rules stay until the netns goes. */
static void test_persist_table_keeps_its_rules_after_free(void **state)
{
	struct fixture *f = fixture_or_skip(state);

	reinstall_persist(f);
	nft_egress_free(TAKE_PTR(f->rules));
	assert_int_equal(nft_in_netns(f, "list table inet " NFT_EGRESS_TABLE), 0);
	check_tcp_redirect(f, f->l.proxy4, "203.0.113.7", 443, "203.0.113.7:443");
	/* Still nothing else gets out. */
	assert_int_equal(nft_in_netns(f, "list chain inet " NFT_EGRESS_TABLE " filter_output"), 0);
}

static void test_persist_table_is_deleted_by_remove(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	struct cl_error err = {{0}};

	reinstall_persist(f);
	assert_int_equal(nft_egress_remove(TAKE_PTR(f->rules), &err), 0);
	assert_fails_closed(f);
}

/* Without CAP_NET_ADMIN the kernel refuses the whole batch (its error carries the batch's
 * sequence number, not the table's): install says so instead of waiting for an answer that
 * never comes. Run in a child that drops the capability; bounded by an alarm. */
static void test_persist_install_without_net_admin_fails_at_once(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	pid_t pid;
	int status;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
		struct __user_cap_data_struct d[2];
		struct nft_egress_config cfg = {
		        .proxy_port = f->l.proxy_port, .dns_port = f->l.dns_port, .persist = true};
		struct nft_egress *e = NULL;
		struct cl_error err = {{0}};
		int r;

		alarm(10);
		nft_egress_free(TAKE_PTR(f->rules));
		if (syscall(SYS_capget, &h, d) < 0)
			_exit(3);
		d[CAP_TO_INDEX(CAP_NET_ADMIN)].effective &= ~CAP_TO_MASK(CAP_NET_ADMIN);
		d[CAP_TO_INDEX(CAP_NET_ADMIN)].permitted &= ~CAP_TO_MASK(CAP_NET_ADMIN);
		if (syscall(SYS_capset, &h, d) < 0)
			_exit(4);
		r = nft_egress_install(f->netns_fd, &cfg, &e, &err);
		_exit(r == -EPERM ? 0 : r < 0 ? 5 : 6);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		fail_msg("install hung without CAP_NET_ADMIN (signal %d)", WTERMSIG(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_setup_is_idempotent(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	struct cl_error err = {{0}};

	assert_int_equal(netfilter_netns_setup(f->netns_fd, &err), 0);
	check_tcp_redirect(f, f->l.proxy4, "203.0.113.7", 443, "203.0.113.7:443");
}

static void test_install_rejects_port_zero_and_changes_nothing(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	struct nft_egress_config cfg = {.proxy_port = 0, .dns_port = 53};
	struct nft_egress *e = NULL;
	struct cl_error err = {{0}};

	assert_int_equal(nft_egress_install(f->netns_fd, &cfg, &e, &err), -EINVAL);
	assert_null(e);
	assert_non_null(strstr(err.msg, "port"));
	check_tcp_redirect(f, f->l.proxy4, "203.0.113.7", 443, "203.0.113.7:443");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	        T(test_tcp4_connect_lands_on_proxy_with_original_destination),
	        T(test_tcp6_connect_lands_on_proxy_with_original_destination),
	        T(test_tcp_to_own_loopback_stays_local),
	        T(test_direct_connection_to_listener_has_no_original_destination),
	        T(test_redirected_connection_gets_loopback_sized_segments),
	        T(test_udp4_dns_reaches_resolver_and_answer_comes_from_original),
	        T(test_udp6_dns_reaches_resolver_and_answer_comes_from_original),
	        T(test_tcp_dns_reaches_resolver),
	        T(test_udp_to_other_ports_is_dropped),
	        T(test_icmp_echo_is_dropped),
	        T(test_icmp_echo_to_own_loopback_is_answered),
	        T(test_raw_socket_of_other_protocol_is_dropped),
	        T(test_table_is_owned_and_cannot_be_deleted_by_others),
	        T(test_remove_deletes_table_and_netns_fails_closed),
	        T(test_free_closes_owner_socket_and_kernel_deletes_table),
	        T(test_owner_socket_is_close_on_exec),
	        T(test_persist_install_without_net_admin_fails_at_once),
	        T(test_persist_table_is_owned_while_its_socket_is_open),
	        T(test_persist_table_keeps_its_rules_after_free),
	        T(test_persist_table_is_deleted_by_remove),
	        T(test_setup_is_idempotent),
	        T(test_install_rejects_port_zero_and_changes_nothing),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
