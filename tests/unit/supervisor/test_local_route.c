/* The route lookup that tells the proxy whether a destination is this host: the request it
 * sends and how it reads the kernel's answers (local, elsewhere, no route, stale, malformed).
 * The lookup itself against the kernel is in tests/kernel/test_proxy.c. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "supervisor/egress/local_route.h"

static void test_request_is_a_getroute_for_the_whole_address(void **state)
{
	uint8_t buf[128], addr6[16];
	struct in_addr a4;
	struct nlmsghdr nh;
	struct rtmsg rt;
	struct rtattr ra;
	size_t n;

	inet_pton(AF_INET, "192.0.2.7", &a4);
	n = local_route_request(AF_INET, &a4, 42, buf, sizeof(buf));
	assert_int_equal(n, NLMSG_ALIGN(NLMSG_LENGTH(sizeof(rt))) + RTA_SPACE(4));
	memcpy(&nh, buf, sizeof(nh));
	assert_int_equal(nh.nlmsg_len, n);
	assert_int_equal(nh.nlmsg_type, RTM_GETROUTE);
	assert_int_equal(nh.nlmsg_flags, NLM_F_REQUEST); /* one route, not a dump */
	assert_int_equal(nh.nlmsg_seq, 42);
	memcpy(&rt, buf + NLMSG_HDRLEN, sizeof(rt));
	assert_int_equal(rt.rtm_family, AF_INET);
	assert_int_equal(rt.rtm_dst_len, 32);
	memcpy(&ra, buf + NLMSG_ALIGN(NLMSG_LENGTH(sizeof(rt))), sizeof(ra));
	assert_int_equal(ra.rta_type, RTA_DST);
	assert_int_equal(ra.rta_len, RTA_LENGTH(4));
	assert_memory_equal(buf + NLMSG_ALIGN(NLMSG_LENGTH(sizeof(rt))) + RTA_LENGTH(0), &a4, 4);

	inet_pton(AF_INET6, "2001:db8::fe", addr6);
	n = local_route_request(AF_INET6, addr6, 7, buf, sizeof(buf));
	assert_int_equal(n, NLMSG_ALIGN(NLMSG_LENGTH(sizeof(rt))) + RTA_SPACE(16));
	memcpy(&rt, buf + NLMSG_HDRLEN, sizeof(rt));
	assert_int_equal(rt.rtm_family, AF_INET6);
	assert_int_equal(rt.rtm_dst_len, 128);
	assert_memory_equal(buf + NLMSG_ALIGN(NLMSG_LENGTH(sizeof(rt))) + RTA_LENGTH(0), addr6, 16);

	/* Too small a buffer, or another family: nothing. */
	assert_int_equal(local_route_request(AF_INET6, addr6, 7, buf, 40), 0);
	assert_int_equal(local_route_request(AF_UNIX, addr6, 7, buf, sizeof(buf)), 0);
}

/* A reply as the kernel writes it: an RTM_NEWROUTE of TYPE, or an NLMSG_ERROR of ERROR. */
static size_t route_reply(uint8_t *buf, uint32_t seq, unsigned char type)
{
	struct nlmsghdr nh = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg)),
	                      .nlmsg_type = RTM_NEWROUTE,
	                      .nlmsg_seq = seq};
	struct rtmsg rt = {.rtm_family = AF_INET, .rtm_dst_len = 32, .rtm_type = type};

	memset(buf, 0, NLMSG_SPACE(sizeof(rt)));
	memcpy(buf, &nh, sizeof(nh));
	memcpy(buf + NLMSG_HDRLEN, &rt, sizeof(rt));
	return nh.nlmsg_len;
}

static size_t error_reply(uint8_t *buf, uint32_t seq, int error)
{
	struct nlmsghdr nh = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct nlmsgerr)),
	                      .nlmsg_type = NLMSG_ERROR,
	                      .nlmsg_seq = seq};
	struct nlmsgerr e = {.error = error};

	memset(buf, 0, NLMSG_SPACE(sizeof(e)));
	memcpy(buf, &nh, sizeof(nh));
	memcpy(buf + NLMSG_HDRLEN, &e, sizeof(e));
	return nh.nlmsg_len;
}

static void test_reply_says_whether_the_route_stays_on_this_host(void **state)
{
	static const struct {
		unsigned char type;
		bool local;
	} cases[] = {
	        {RTN_LOCAL, true},        {RTN_ANYCAST, true},    {RTN_BROADCAST, true},
	        {RTN_UNICAST, false},     {RTN_MULTICAST, false}, {RTN_BLACKHOLE, false},
	        {RTN_UNREACHABLE, false},
	};
	uint8_t buf[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool local = !cases[i].local;
		size_t n = route_reply(buf, 9, cases[i].type);

		assert_int_equal(local_route_parse_reply(buf, n, 9, &local), 1);
		if (local != cases[i].local)
			fail_msg("route type %u: local=%d", cases[i].type, local);
	}
}

static void test_reply_errors_stale_replies_and_garbage(void **state)
{
	uint8_t buf[256];
	bool local = false;
	size_t n;

	/* The lookup's own error: no route, and whatever else the kernel says. */
	n = error_reply(buf, 3, -ENETUNREACH);
	assert_int_equal(local_route_parse_reply(buf, n, 3, &local), -ENETUNREACH);
	n = error_reply(buf, 3, -ENOBUFS);
	assert_int_equal(local_route_parse_reply(buf, n, 3, &local), -ENOBUFS);
	/* An acknowledgement is no answer to a lookup. */
	n = error_reply(buf, 3, 0);
	assert_int_equal(local_route_parse_reply(buf, n, 3, &local), -EBADMSG);

	/* Another request's answer (left over by an earlier failure): skipped. */
	n = route_reply(buf, 2, RTN_LOCAL);
	assert_int_equal(local_route_parse_reply(buf, n, 3, &local), 0);
	n = error_reply(buf, 2, -ENETUNREACH);
	assert_int_equal(local_route_parse_reply(buf, n, 3, &local), 0);

	/* Cut short, lying about its length, or of another type. */
	n = route_reply(buf, 3, RTN_LOCAL);
	assert_int_equal(local_route_parse_reply(buf, 8, 3, &local), -EBADMSG);
	assert_int_equal(local_route_parse_reply(buf, n - 1, 3, &local), -EBADMSG);
	{
		struct nlmsghdr nh;

		memcpy(&nh, buf, sizeof(nh));
		nh.nlmsg_type = RTM_NEWADDR;
		memcpy(buf, &nh, sizeof(nh));
		assert_int_equal(local_route_parse_reply(buf, n, 3, &local), -EBADMSG);
		nh.nlmsg_type = RTM_NEWROUTE;
		nh.nlmsg_len = NLMSG_HDRLEN + 2; /* no room for the rtmsg */
		memcpy(buf, &nh, sizeof(nh));
		assert_int_equal(local_route_parse_reply(buf, n, 3, &local), -EBADMSG);
	}
	n = error_reply(buf, 3, -ENETUNREACH);
	assert_int_equal(local_route_parse_reply(buf, NLMSG_HDRLEN + 2, 3, &local), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_request_is_a_getroute_for_the_whole_address),
	        cmocka_unit_test(test_reply_says_whether_the_route_stays_on_this_host),
	        cmocka_unit_test(test_reply_errors_stale_replies_and_garbage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
