/* Fake-IP and real-IP name tables: addresses in the ranges, stable per name, reverse lookups,
 * eviction of the least recently used name, and the recording of real answers. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "supervisor/egress/fakeip.h"

static const uint8_t key[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static struct sockaddr_in sin4(struct in_addr a)
{
	return (struct sockaddr_in){.sin_family = AF_INET, .sin_addr = a, .sin_port = htons(443)};
}

static struct sockaddr_in6 sin6(struct in6_addr a)
{
	return (struct sockaddr_in6){.sin6_family = AF_INET6, .sin6_addr = a};
}

static void test_names_get_stable_addresses_in_the_fake_ranges(void **state)
{
	struct fakeip *f;
	struct in_addr a4, b4, again4;
	struct in6_addr a6, b6;
	char buf[INET6_ADDRSTRLEN];

	assert_int_equal(fakeip_new(100, 0, key, &f), 0);
	assert_int_equal(fakeip_assign(f, "example.com", &a4, &a6), 0);
	assert_int_equal(fakeip_assign(f, "api.example.com", &b4, &b6), 0);
	assert_int_equal(fakeip_assign(f, "example.com", &again4, NULL), 0);
	assert_memory_equal(&a4, &again4, 4);
	assert_memory_not_equal(&a4, &b4, 4);
	assert_memory_not_equal(&a6, &b6, 16);
	inet_ntop(AF_INET, &a4, buf, sizeof(buf));
	assert_true(strncmp(buf, "198.18.", 7) == 0 || strncmp(buf, "198.19.", 7) == 0);
	inet_ntop(AF_INET6, &a6, buf, sizeof(buf));
	assert_true(strncmp(buf, "fd63:6c6f:6973:fa6b:", 20) == 0);
	assert_int_equal(fakeip_count(f), 2);
	fakeip_free(f);
}

static void test_fake_addresses_name_their_owner_in_both_families(void **state)
{
	struct fakeip *f;
	struct in_addr a4;
	struct in6_addr a6, mapped = {{{0}}};
	char name[DOMAIN_HOST_MAX + 1];
	struct sockaddr_in s4;
	struct sockaddr_in6 s6;

	assert_int_equal(fakeip_new(100, 0, key, &f), 0);
	assert_int_equal(fakeip_assign(f, "github.com", &a4, &a6), 0);
	s4 = sin4(a4);
	s6 = sin6(a6);
	assert_true(fakeip_is_fake((struct sockaddr *)&s4));
	assert_int_equal(fakeip_lookup(f, (struct sockaddr *)&s4, name), 0);
	assert_string_equal(name, "github.com");
	assert_int_equal(fakeip_lookup(f, (struct sockaddr *)&s6, name), 0);
	assert_string_equal(name, "github.com");
	/* ::ffff:198.18.x.y, as an IPv6 socket sees an IPv4 peer */
	mapped.s6_addr[10] = mapped.s6_addr[11] = 0xff;
	memcpy(&mapped.s6_addr[12], &a4, 4);
	s6 = sin6(mapped);
	assert_int_equal(fakeip_lookup(f, (struct sockaddr *)&s6, name), 0);
	assert_string_equal(name, "github.com");
	fakeip_free(f);
}

static void test_addresses_outside_or_unassigned_are_not_names(void **state)
{
	struct fakeip *f;
	struct in_addr a;
	char name[DOMAIN_HOST_MAX + 1];
	struct sockaddr_in s;

	assert_int_equal(fakeip_new(10, 0, key, &f), 0);
	inet_pton(AF_INET, "8.8.8.8", &a);
	s = sin4(a);
	assert_false(fakeip_is_fake((struct sockaddr *)&s));
	assert_int_equal(fakeip_lookup(f, (struct sockaddr *)&s, name), -EINVAL);
	inet_pton(AF_INET, "198.18.0.5", &a); /* in range, never handed out */
	s = sin4(a);
	assert_true(fakeip_is_fake((struct sockaddr *)&s));
	assert_int_equal(fakeip_lookup(f, (struct sockaddr *)&s, name), -ENOENT);
	inet_pton(AF_INET, "198.19.200.1", &a); /* in range, beyond the capacity */
	s = sin4(a);
	assert_int_equal(fakeip_lookup(f, (struct sockaddr *)&s, name), -ENOENT);
	assert_int_equal(fakeip_assign(f, "", &a, NULL), -EINVAL);
	fakeip_free(f);
}

static void test_a_full_table_evicts_the_least_recently_used_name(void **state)
{
	struct fakeip *f;
	struct in_addr a, b, c, d;
	char name[DOMAIN_HOST_MAX + 1];
	struct sockaddr_in s;

	assert_int_equal(fakeip_new(3, 0, key, &f), 0);
	assert_int_equal(fakeip_assign(f, "a.test", &a, NULL), 0);
	assert_int_equal(fakeip_assign(f, "b.test", &b, NULL), 0);
	assert_int_equal(fakeip_assign(f, "c.test", &c, NULL), 0);
	/* a.test is used again (a connection to it), so b.test is the oldest now. */
	s = sin4(a);
	assert_int_equal(fakeip_lookup(f, (struct sockaddr *)&s, name), 0);
	assert_int_equal(fakeip_assign(f, "d.test", &d, NULL), 0);
	assert_memory_equal(&d, &b, 4); /* b.test's address went to d.test */
	assert_int_equal(fakeip_count(f), 3);
	s = sin4(d);
	assert_int_equal(fakeip_lookup(f, (struct sockaddr *)&s, name), 0);
	assert_string_equal(name, "d.test");
	s = sin4(a);
	assert_int_equal(fakeip_lookup(f, (struct sockaddr *)&s, name), 0);
	assert_string_equal(name, "a.test");
	/* b.test comes back with a new address: c.test was the least recently used. */
	assert_int_equal(fakeip_assign(f, "b.test", &b, NULL), 0);
	assert_memory_equal(&b, &c, 4);
	fakeip_free(f);
}

static void test_many_names_stay_consistent(void **state)
{
	struct fakeip *f;
	char name[DOMAIN_HOST_MAX + 1], want[64];

	assert_int_equal(fakeip_new(5000, 0, key, &f), 0);
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 8000; i++) {
			struct in_addr a;
			struct sockaddr_in s;

			snprintf(want, sizeof(want), "host%d.example.org", i);
			assert_int_equal(fakeip_assign(f, want, &a, NULL), 0);
			s = sin4(a);
			assert_int_equal(fakeip_lookup(f, (struct sockaddr *)&s, name), 0);
			assert_string_equal(name, want);
		}
	assert_int_equal(fakeip_count(f), 5000);
	fakeip_free(f);
}

static void test_real_answers_are_recorded_and_the_latest_wins(void **state)
{
	struct fakeip *f;
	struct in_addr a;
	struct in6_addr a6;
	char name[DOMAIN_HOST_MAX + 1];
	struct sockaddr_in s;
	struct sockaddr_in6 s6;

	assert_int_equal(fakeip_new(1, 2, key, &f), 0);
	inet_pton(AF_INET, "140.82.121.4", &a);
	inet_pton(AF_INET6, "2606:50c0:8000::154", &a6);
	s = sin4(a);
	s6 = sin6(a6);
	assert_int_equal(fakeip_lookup_real(f, (struct sockaddr *)&s, name), -ENOENT);
	assert_int_equal(fakeip_record_real(f, AF_INET, &a, "github.com"), 0);
	assert_int_equal(fakeip_record_real(f, AF_INET6, &a6, "github.com"), 0);
	assert_int_equal(fakeip_lookup_real(f, (struct sockaddr *)&s, name), 0);
	assert_string_equal(name, "github.com");
	assert_int_equal(fakeip_lookup_real(f, (struct sockaddr *)&s6, name), 0);
	assert_string_equal(name, "github.com");
	assert_int_equal(fakeip_record_real(f, AF_INET, &a, "api.github.com"), 0);
	assert_int_equal(fakeip_lookup_real(f, (struct sockaddr *)&s, name), 0);
	assert_string_equal(name, "api.github.com");
	assert_int_equal(fakeip_record_real(f, AF_UNIX, &a, "x.test"), -EINVAL);
	fakeip_free(f);
	assert_int_equal(fakeip_new(1, 0, key, &f), 0);
	assert_int_equal(fakeip_record_real(f, AF_INET, &a, "github.com"), -ENOSPC);
	fakeip_free(f);
}

static void test_bad_capacities_are_refused(void **state)
{
	struct fakeip *f;

	assert_int_equal(fakeip_new(0, 0, key, &f), -EINVAL);
	assert_int_equal(fakeip_new(FAKEIP_MAX_NAMES + 1, 0, key, &f), -EINVAL);
	assert_int_equal(fakeip_new(FAKEIP_MAX_NAMES, 0, key, &f), 0);
	fakeip_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_names_get_stable_addresses_in_the_fake_ranges),
	        cmocka_unit_test(test_fake_addresses_name_their_owner_in_both_families),
	        cmocka_unit_test(test_addresses_outside_or_unassigned_are_not_names),
	        cmocka_unit_test(test_a_full_table_evicts_the_least_recently_used_name),
	        cmocka_unit_test(test_many_names_stay_consistent),
	        cmocka_unit_test(test_real_answers_are_recorded_and_the_latest_wins),
	        cmocka_unit_test(test_bad_capacities_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
