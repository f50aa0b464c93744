/* tcp_listen(): a listener on the port asked or any free one, what it does with a taken port
 * (fail, or fall back), IPv6, its fd's flags. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

#include "base/tcp_listen.h"

static socklen_t loopback4(uint16_t port, struct sockaddr_storage *ss)
{
	struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons(port)};

	a4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, &a4, sizeof(a4));
	return sizeof(a4);
}

static void test_any_free_port_and_the_flags(void **state)
{
	struct sockaddr_storage ss;
	socklen_t len = loopback4(0, &ss);
	struct tcp_listen_options o = {.backlog = 8};
	int fd = -1;
	uint16_t port = 0;

	assert_int_equal(tcp_listen(&ss, len, &o, &fd, &port), 0);
	assert_true(fd >= 0);
	assert_true(port > 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	close(fd);
}

static void test_a_taken_port_fails_or_falls_back(void **state)
{
	struct sockaddr_storage ss;
	socklen_t len = loopback4(0, &ss);
	struct tcp_listen_options strict = {0}, fallback = {.port_fallback = true};
	int first = -1, second = -1;
	uint16_t port = 0, got = 0;

	assert_int_equal(tcp_listen(&ss, len, &strict, &first, &port), 0);
	len = loopback4(port, &ss);
	assert_int_equal(tcp_listen(&ss, len, &strict, &second, &got), -EADDRINUSE);
	assert_int_equal(second, -1);
	assert_int_equal(tcp_listen(&ss, len, &fallback, &second, &got), 0);
	assert_true(got != port && got != 0);
	close(first);
	close(second);
}

/* A listener on some port P whose next two ports were free a moment ago (another program may
 * take one meanwhile: the caller tries again). */
static int listener_before_free_ports(int *ret_fd, uint16_t *ret_port)
{
	struct tcp_listen_options strict = {0};

	for (int tries = 0; tries < 50; tries++) {
		struct sockaddr_storage ss;
		socklen_t len = loopback4(0, &ss);
		int fd = -1, probe[2] = {-1, -1};
		uint16_t port = 0, got = 0;
		bool ok;

		assert_int_equal(tcp_listen(&ss, len, &strict, &fd, &port), 0);
		ok = port < UINT16_MAX - 2;
		for (int i = 0; ok && i < 2; i++) {
			len = loopback4((uint16_t)(port + 1 + i), &ss);
			ok = tcp_listen(&ss, len, &strict, &probe[i], &got) == 0;
		}
		for (int i = 0; i < 2; i++)
			if (probe[i] >= 0)
				close(probe[i]);
		if (ok) {
			*ret_fd = fd;
			*ret_port = port;
			return 0;
		}
		close(fd);
	}
	return -1;
}

static void test_the_next_free_port_comes_first(void **state)
{
	struct sockaddr_storage ss;
	struct tcp_listen_options strict = {0}, fallback = {.port_fallback = true};
	int first = -1, second = -1, third = -1;
	uint16_t port = 0, got = 0, got3 = 0;
	socklen_t len;

	if (listener_before_free_ports(&first, &port) < 0) {
		print_message("skipped: no free run of three ports on this machine\n");
		skip();
	}
	len = loopback4(port, &ss);
	assert_int_equal(tcp_listen(&ss, len, &fallback, &second, &got), 0);
	assert_int_equal(got, port + 1);
	/* P and P+1 taken: P+2. */
	assert_int_equal(tcp_listen(&ss, len, &fallback, &third, &got3), 0);
	assert_int_equal(got3, port + 2);
	close(third);
	/* Without fallback a taken port still fails. */
	assert_int_equal(tcp_listen(&ss, len, &strict, &third, &got3), -EADDRINUSE);
	close(first);
	close(second);
}

static void test_ipv6_only_when_asked(void **state)
{
	struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	struct sockaddr_storage ss = {0};
	struct tcp_listen_options o = {.v6only = true};
	int fd = -1, v6only = 0;
	socklen_t ol = sizeof(v6only);
	uint16_t port = 0;

	memcpy(&ss, &a6, sizeof(a6));
	if (tcp_listen(&ss, sizeof(a6), &o, &fd, &port) == -EADDRNOTAVAIL) {
		print_message("skipped: no IPv6 loopback on this machine\n");
		skip();
	}
	assert_true(fd >= 0 && port > 0);
	assert_int_equal(getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &ol), 0);
	assert_int_equal(v6only, 1);
	close(fd);
	ss.ss_family = AF_UNIX;
	assert_int_equal(tcp_listen(&ss, sizeof(a6), &o, &fd, &port), -EAFNOSUPPORT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_any_free_port_and_the_flags),
	        cmocka_unit_test(test_a_taken_port_fails_or_falls_back),
	        cmocka_unit_test(test_the_next_free_port_comes_first),
	        cmocka_unit_test(test_ipv6_only_when_asked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
