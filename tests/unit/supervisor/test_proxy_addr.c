/* Which destinations the proxy refuses whatever the name: loopback, link-local, the clouds'
 * metadata services, and the same addresses spelled in IPv6. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "supervisor/egress/proxy.h"

static bool restricted(const char *text)
{
	struct sockaddr_storage ss = {0};

	if (inet_pton(AF_INET, text, &((struct sockaddr_in *)&ss)->sin_addr) == 1)
		ss.ss_family = AF_INET;
	else if (inet_pton(AF_INET6, text, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1)
		ss.ss_family = AF_INET6;
	else
		fail_msg("not an address: %s", text);
	return proxy_addr_restricted((const struct sockaddr *)&ss);
}

static void test_restricted_addresses_in_every_spelling(void **state)
{
	static const struct {
		const char *addr;
		bool restricted;
	} cases[] = {
	        {"127.0.0.1", true},
	        {"127.255.0.9", true},
	        {"0.0.0.0", true},
	        {"169.254.169.254", true},
	        {"100.100.100.200", true},
	        {"168.63.129.16", true},
	        {"192.0.0.192", true},
	        {"10.0.0.1", false},
	        {"8.8.8.8", false},
	        {"100.100.100.201", false},
	        {"::1", true},
	        {"::", true},
	        {"fe80::1", true},
	        {"fd00:ec2::254", true},
	        {"::ffff:127.0.0.1", true},
	        {"::ffff:169.254.169.254", true},
	        {"64:ff9b::a9fe:a9fe", true},
	        {"64:ff9b::7f00:1", true},
	        {"64:ff9b::808:808", false},
	        {"2002:a9fe:a9fe::1", true},
	        {"2002:7f00:1::", true},
	        {"2002:808:808::1", false},
	        {"2001:db8::1", false},
	        {"::ffff:8.8.8.8", false},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (restricted(cases[i].addr) != cases[i].restricted)
			fail_msg("%s: expected %s", cases[i].addr,
			         cases[i].restricted ? "restricted" : "allowed");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_restricted_addresses_in_every_spelling),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
