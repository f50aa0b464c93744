/* host:port parsing for CLOISTER_SUPERVISOR and the TCP shim listener. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "protocol/address.h"

static void test_numeric_ipv4_ipv6_and_localhost_parse(void **state)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
	struct cl_error err = {""};
	socklen_t len = 0;
	char text[INET6_ADDRSTRLEN];

	assert_int_equal(cl_address_parse("127.0.0.1:7788", &err, &ss, &len), 0);
	assert_int_equal(a4->sin_family, AF_INET);
	assert_int_equal(ntohs(a4->sin_port), 7788);
	assert_int_equal(ntohl(a4->sin_addr.s_addr), INADDR_LOOPBACK);
	assert_int_equal(len, sizeof(struct sockaddr_in));

	assert_int_equal(cl_address_parse("localhost:1", &err, &ss, &len), 0);
	assert_int_equal(ntohl(a4->sin_addr.s_addr), INADDR_LOOPBACK);
	assert_int_equal(ntohs(a4->sin_port), 1);

	assert_int_equal(cl_address_parse("[::1]:65535", &err, &ss, &len), 0);
	assert_int_equal(a6->sin6_family, AF_INET6);
	assert_int_equal(ntohs(a6->sin6_port), 65535);
	assert_non_null(inet_ntop(AF_INET6, &a6->sin6_addr, text, sizeof(text)));
	assert_string_equal(text, "::1");
	assert_int_equal(len, sizeof(struct sockaddr_in6));
}

static void test_names_missing_ports_and_garbage_are_refused(void **state)
{
	static const char *const bad[] = {
	        "",
	        "127.0.0.1",
	        "127.0.0.1:",
	        "127.0.0.1:0",
	        "127.0.0.1:65536",
	        "127.0.0.1:80x",
	        "example.com:80",
	        "::1:80",
	        "[::1]80",
	        "[::1]:",
	        "[nope]:80",
	        "1.2.3:80",
	        "127.0.0.1:+80",
	        "127.0.0.1: 80",
	        "[0000:0000:0000:0000:0000:0000:0000:0000:0000:0000:0000:0001]:80",
	};
	struct sockaddr_storage ss;
	struct cl_error err = {""};
	socklen_t len = 12345;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err.msg[0] = '\0';
		assert_int_equal(cl_address_parse(bad[i], &err, &ss, &len), -EINVAL);
		assert_non_null(strstr(err.msg, "expected host:port"));
		assert_int_equal(len, 12345);
	}
	assert_int_equal(cl_address_parse(NULL, &err, &ss, &len), -EINVAL);
	assert_int_equal(cl_address_parse("example.com:80", &err, &ss, &len), -EINVAL);
	assert_non_null(strstr(err.msg, "names are not resolved"));
}

static void test_a_listener_may_ask_for_any_port(void **state)
{
	struct sockaddr_storage ss;
	struct cl_error err = {""};
	socklen_t len = 0;

	assert_int_equal(cl_address_parse_listen("127.0.0.1:0", &err, &ss, &len), 0);
	assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), 0);
	assert_int_equal(cl_address_parse_listen("[::1]:0", &err, &ss, &len), 0);
	assert_int_equal(cl_address_parse_listen("127.0.0.1:65536", &err, &ss, &len), -EINVAL);
	assert_int_equal(cl_address_parse("127.0.0.1:0", &err, &ss, &len), -EINVAL);
}

/* The supervisor's own listeners: an address left out stays on loopback. */
static void test_a_local_listener_without_an_address_stays_on_loopback(void **state)
{
	static const struct {
		const char *text;
		const char *want; /* cl_address_format's, or NULL: refused */
	} cases[] = {
	        {"127.0.0.1:9999", "127.0.0.1:9999"},
	        {":9998", "127.0.0.1:9998"},
	        {"9997", "127.0.0.1:9997"},
	        {"0", "127.0.0.1:0"},
	        {"0.0.0.0:80", "0.0.0.0:80"},
	        {"[::1]:0", "[::1]:0"},
	        {"localhost:3128", "127.0.0.1:3128"},
	        {"example.com:80", NULL},
	        {"::1:80", NULL},
	        {"", NULL},
	        {":", NULL},
	        {"99999", NULL},
	        {"80x", NULL},
	};
	struct sockaddr_storage ss;
	struct cl_error err = {""};
	socklen_t len;
	char text[CL_ADDRESS_MAX];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = cl_address_parse_local(cases[i].text, &err, &ss, &len);

		if (!cases[i].want) {
			assert_int_equal(r, -EINVAL);
			continue;
		}
		assert_int_equal(r, 0);
		cl_address_format(&ss, text, sizeof(text));
		assert_string_equal(text, cases[i].want);
	}
}

/* HOST:PORT of another process (the executor): names are kept for the caller to resolve. */
static void test_host_and_port_split(void **state)
{
	static const struct {
		const char *text;
		const char *host; /* NULL: refused */
		uint16_t port;
	} cases[] = {
	        {"executor.internal:7777", "executor.internal", 7777},
	        {"127.0.0.1:1", "127.0.0.1", 1},
	        {"[::1]:65535", "::1", 65535},
	        {"host:0", NULL, 0},
	        {"host:65536", NULL, 0},
	        {"host", NULL, 0},
	        {":80", NULL, 0},
	        {"[]:80", NULL, 0},
	        {"[::1:80", NULL, 0},
	        {"", NULL, 0},
	};
	struct cl_error err = {""};
	char host[24];
	uint16_t port;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = cl_address_split(cases[i].text, &err, host, sizeof(host), &port);

		if (!cases[i].host) {
			assert_int_equal(r, -EINVAL);
			assert_non_null(strstr(err.msg, "expected"));
			continue;
		}
		assert_int_equal(r, 0);
		assert_string_equal(host, cases[i].host);
		assert_int_equal(port, cases[i].port);
	}
	assert_int_equal(cl_address_split("a-name-longer-than-the-host-buffer:80", &err, host,
	                                  sizeof(host), &port),
	                 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_numeric_ipv4_ipv6_and_localhost_parse),
	        cmocka_unit_test(test_names_missing_ports_and_garbage_are_refused),
	        cmocka_unit_test(test_a_listener_may_ask_for_any_port),
	        cmocka_unit_test(test_a_local_listener_without_an_address_stays_on_loopback),
	        cmocka_unit_test(test_host_and_port_split),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
