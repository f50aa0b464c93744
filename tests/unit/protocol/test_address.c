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

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_numeric_ipv4_ipv6_and_localhost_parse),
	        cmocka_unit_test(test_names_missing_ports_and_garbage_are_refused),
	        cmocka_unit_test(test_a_listener_may_ask_for_any_port),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
