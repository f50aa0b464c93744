/* The resolver's fake-IP map and real-IP record. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "supervisor/fakeip.h"

static const uint8_t prefix[8] = {0xfd, 0x12, 0x34, 0x56, 0x78, 0x9a, 0, 1};

static const char *text4(const struct in_addr *a)
{
	static char buf[INET_ADDRSTRLEN];
	return inet_ntop(AF_INET, a, buf, sizeof(buf));
}

static const char *text6(const struct in6_addr *a)
{
	static char buf[INET6_ADDRSTRLEN];
	return inet_ntop(AF_INET6, a, buf, sizeof(buf));
}

static void test_names_get_stable_addresses_in_both_pools(void **state)
{
	_cleanup_(fakeip_map_freep) struct fakeip_map *m = NULL;
	struct in_addr a4, b4, again4;
	struct in6_addr a6, again6;
	const char *name;

	assert_int_equal(fakeip_map_new(prefix, 100, &m), 0);
	assert_int_equal(fakeip_map_assign(m, "api.example.com", &a4, &a6), 0);
	assert_string_equal(text4(&a4), "198.18.0.1");
	assert_string_equal(text6(&a6), "fd12:3456:789a:1::c612:1");
	assert_int_equal(fakeip_map_assign(m, "cdn.example.com", &b4, NULL), 0);
	assert_string_equal(text4(&b4), "198.18.0.2");
	assert_int_equal(fakeip_map_assign(m, "api.example.com", &again4, &again6), 0);
	assert_memory_equal(&a4, &again4, sizeof(a4));
	assert_memory_equal(&a6, &again6, sizeof(a6));
	assert_int_equal(fakeip_map_size(m), 2);

	assert_int_equal(fakeip_map_lookup(m, AF_INET, &a4, &name), 0);
	assert_string_equal(name, "api.example.com");
	assert_int_equal(fakeip_map_lookup(m, AF_INET6, &a6, &name), 0);
	assert_string_equal(name, "api.example.com");
	assert_int_equal(fakeip_map_lookup(m, AF_INET, &b4, &name), 0);
	assert_string_equal(name, "cdn.example.com");
}

static void test_addresses_outside_the_pools_or_unheld_are_unknown(void **state)
{
	_cleanup_(fakeip_map_freep) struct fakeip_map *m = NULL;
	static const char *const v4[] = {"198.18.0.0", "198.18.0.9", "198.19.255.255", "198.20.0.1",
	                                 "10.0.0.1"};
	static const char *const v6[] = {"fd12:3456:789a:1::c612:9", "fd12:3456:789a:2::c612:1",
	                                 "fd12:3456:789a:1:1::c612:1", "::ffff:198.18.0.1"};
	struct in_addr a4;
	struct in6_addr a6;
	const char *name = "untouched";

	assert_int_equal(fakeip_map_new(prefix, 10, &m), 0);
	assert_int_equal(fakeip_map_assign(m, "a.example", NULL, NULL), 0);
	for (size_t i = 0; i < sizeof(v4) / sizeof(v4[0]); i++) {
		inet_pton(AF_INET, v4[i], &a4);
		if (fakeip_map_lookup(m, AF_INET, &a4, &name) != -ENOENT)
			fail_msg("%s has a name", v4[i]);
	}
	for (size_t i = 0; i < sizeof(v6) / sizeof(v6[0]); i++) {
		inet_pton(AF_INET6, v6[i], &a6);
		if (fakeip_map_lookup(m, AF_INET6, &a6, &name) != -ENOENT)
			fail_msg("%s has a name", v6[i]);
	}
	assert_string_equal(name, "untouched");
	assert_int_equal(fakeip_map_lookup(m, AF_UNIX, &a6, &name), -ENOENT);
	inet_pton(AF_INET, "198.19.1.1", &a4);
	assert_true(fakeip_map_is_fake(m, AF_INET, &a4));
	inet_pton(AF_INET, "198.20.1.1", &a4);
	assert_false(fakeip_map_is_fake(m, AF_INET, &a4));
}

static void
test_least_recently_used_name_is_evicted_and_its_address_not_reused_at_once(void **state)
{
	_cleanup_(fakeip_map_freep) struct fakeip_map *m = NULL;
	struct in_addr a, b, c, d;
	const char *name;

	assert_int_equal(fakeip_map_new(prefix, 3, &m), 0);
	assert_int_equal(fakeip_map_assign(m, "a.example", &a, NULL), 0);
	assert_int_equal(fakeip_map_assign(m, "b.example", &b, NULL), 0);
	assert_int_equal(fakeip_map_assign(m, "c.example", &c, NULL), 0);
	/* Using a (by lookup) and c (by assign) leaves b the least recently used. */
	assert_int_equal(fakeip_map_lookup(m, AF_INET, &a, &name), 0);
	assert_int_equal(fakeip_map_assign(m, "c.example", &c, NULL), 0);
	assert_int_equal(fakeip_map_assign(m, "d.example", &d, NULL), 0);
	assert_int_equal(fakeip_map_size(m), 3);
	assert_int_equal(fakeip_map_lookup(m, AF_INET, &b, &name), -ENOENT);
	assert_string_equal(text4(&d), "198.18.0.4"); /* not b's freed .2 */
	assert_int_equal(fakeip_map_lookup(m, AF_INET, &a, &name), 0);
	assert_string_equal(name, "a.example");
	/* b comes back with a new address. */
	assert_int_equal(fakeip_map_assign(m, "b.example", &b, NULL), 0);
	assert_string_equal(text4(&b), "198.18.0.5");
}

static void test_the_pool_wraps_round_and_skips_held_addresses(void **state)
{
	_cleanup_(fakeip_map_freep) struct fakeip_map *m = NULL;
	struct in_addr first, a;
	char name[64];
	const char *got;

	assert_int_equal(fakeip_map_new(prefix, 2, &m), 0);
	assert_int_equal(fakeip_map_assign(m, "keep.example", &first, NULL), 0);
	/* Churn through the whole pool with one other slot, using keep.example now and then so
	 * that it is never the one evicted. */
	for (uint32_t i = 0; i < FAKEIP_POOL_SIZE + 10; i++) {
		snprintf(name, sizeof(name), "n%u.example", i);
		assert_int_equal(fakeip_map_assign(m, name, &a, NULL), 0);
		assert_int_equal(fakeip_map_lookup(m, AF_INET, &first, &got), 0);
		assert_int_not_equal(a.s_addr, first.s_addr);
		uint32_t h = ntohl(a.s_addr);
		assert_true(h > FAKEIP_V4_NET && h < FAKEIP_V4_NET + FAKEIP_POOL_SIZE - 1);
	}
	assert_int_equal(fakeip_map_lookup(m, AF_INET, &first, &got), 0);
	assert_string_equal(got, "keep.example");
}

static void test_bad_arguments_are_refused(void **state)
{
	struct fakeip_map *m = NULL;
	static const uint8_t not_ula[8] = {0x20, 1, 0xd, 0xb8};
	char long_name[300];

	assert_int_equal(fakeip_map_new(not_ula, 10, &m), -EINVAL);
	assert_int_equal(fakeip_map_new(prefix, 0, &m), -EINVAL);
	assert_int_equal(fakeip_map_new(prefix, FAKEIP_MAX_CAPACITY + 1, &m), -EINVAL);
	assert_null(m);
	assert_int_equal(fakeip_map_new(prefix, 1, &m), 0);
	assert_int_equal(fakeip_map_assign(m, "", NULL, NULL), -EINVAL);
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	assert_int_equal(fakeip_map_assign(m, long_name, NULL, NULL), -EINVAL);
	assert_int_equal(fakeip_map_size(m), 0);
	fakeip_map_free(m);
}

static void test_real_addresses_remember_their_names_until_expiry(void **state)
{
	_cleanup_(realip_map_freep) struct realip_map *m = NULL;
	struct in_addr a;
	struct in6_addr b;
	const char *names[8];
	size_t n;

	inet_pton(AF_INET, "93.184.216.34", &a);
	inet_pton(AF_INET6, "2001:db8::1", &b);
	assert_int_equal(realip_map_new(16, &m), 0);
	assert_int_equal(realip_map_record(m, AF_INET, &a, "example.com", 1000, 300000), 0);
	assert_int_equal(realip_map_record(m, AF_INET, &a, "www.example.com", 2000, 60000), 0);
	assert_int_equal(realip_map_record(m, AF_INET6, &b, "example.com", 1000, 60000), 0);
	assert_int_equal(realip_map_size(m), 2);

	assert_int_equal(realip_map_lookup(m, AF_INET, &a, 3000, names, 8, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(names[0], "example.com");
	assert_string_equal(names[1], "www.example.com");
	/* www.example.com expires at 62000, example.com at 301000. */
	assert_int_equal(realip_map_lookup(m, AF_INET, &a, 62000, names, 8, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(names[0], "example.com");
	/* A new resolution extends, never shortens. */
	assert_int_equal(realip_map_record(m, AF_INET, &a, "example.com", 5000, 1), 0);
	assert_int_equal(realip_map_lookup(m, AF_INET, &a, 300000, names, 8, &n), 0);
	assert_int_equal(realip_map_lookup(m, AF_INET, &a, 301000, names, 8, &n), -ENOENT);
	/* Expiry drops the address entirely once nothing is left. */
	realip_map_expire(m, 301000);
	assert_int_equal(realip_map_size(m), 0);
	assert_int_equal(realip_map_lookup(m, AF_INET6, &b, 0, names, 8, &n), -ENOENT);
}

static void test_real_record_is_bounded(void **state)
{
	_cleanup_(realip_map_freep) struct realip_map *m = NULL;
	struct in_addr a;
	const char *names[8];
	char name[64];
	size_t n;

	assert_int_equal(realip_map_new(4, &m), 0);
	/* Five names for one address: the one expiring first makes room. */
	inet_pton(AF_INET, "10.0.0.1", &a);
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "n%d.example", i);
		assert_int_equal(realip_map_record(m, AF_INET, &a, name, 0, 1000 + (uint64_t)i), 0);
	}
	assert_int_equal(realip_map_lookup(m, AF_INET, &a, 0, names, 8, &n), 0);
	assert_int_equal(n, REALIP_NAMES_PER_ADDR);
	for (size_t i = 0; i < n; i++)
		assert_string_not_equal(names[i], "n0.example");

	/* Five addresses in a map of four: the one whose names expire first goes. */
	for (uint32_t i = 2; i <= 5; i++) {
		a.s_addr = htonl(0x0a000000 + i);
		assert_int_equal(realip_map_record(m, AF_INET, &a, "x.example", 0, 10000 * i), 0);
	}
	assert_int_equal(realip_map_size(m), 4);
	a.s_addr = htonl(0x0a000001); /* expires at ~1004: the first to go */
	assert_int_equal(realip_map_lookup(m, AF_INET, &a, 0, names, 8, &n), -ENOENT);
	a.s_addr = htonl(0x0a000005);
	assert_int_equal(realip_map_lookup(m, AF_INET, &a, 0, names, 8, &n), 0);
	/* Expired entries are dropped before anything live is evicted. */
	a.s_addr = htonl(0x0a000009);
	assert_int_equal(realip_map_record(m, AF_INET, &a, "y.example", 25000, 1000), 0);
	assert_int_equal(realip_map_size(m), 4);
	a.s_addr = htonl(0x0a000002); /* expired at 20000: it made room */
	assert_int_equal(realip_map_lookup(m, AF_INET, &a, 0, names, 8, &n), -ENOENT);
	a.s_addr = htonl(0x0a000003); /* live, the soonest to expire: kept */
	assert_int_equal(realip_map_lookup(m, AF_INET, &a, 25000, names, 8, &n), 0);
	assert_int_equal(realip_map_record(m, AF_UNIX, &a, "z", 0, 1), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_names_get_stable_addresses_in_both_pools),
	        cmocka_unit_test(test_addresses_outside_the_pools_or_unheld_are_unknown),
	        cmocka_unit_test(
	                test_least_recently_used_name_is_evicted_and_its_address_not_reused_at_once),
	        cmocka_unit_test(test_the_pool_wraps_round_and_skips_held_addresses),
	        cmocka_unit_test(test_bad_arguments_are_refused),
	        cmocka_unit_test(test_real_addresses_remember_their_names_until_expiry),
	        cmocka_unit_test(test_real_record_is_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
