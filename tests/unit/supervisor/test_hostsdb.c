/* The host's name sources: nsswitch.conf's `hosts:` order as the C library reads it, the
 * hosts files, and their re-reading when they change. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "supervisor/egress/hostsdb.h"

/* "files dns/N" for an order: each source, with "/" and the stop bits when there are any. */
static void order_text(const struct hostsdb_order *o, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < o->n; i++) {
		len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? " " : "",
		                        o->source[i] == HOSTSDB_FILES ? "files" : "dns");
		if (o->stop_on[i])
			len += (size_t)snprintf(buf + len, size - len, "/%s%s%s",
			                        o->stop_on[i] & HOSTSDB_NOTFOUND ? "N" : "",
			                        o->stop_on[i] & HOSTSDB_UNAVAIL ? "U" : "",
			                        o->stop_on[i] & HOSTSDB_TRYAGAIN ? "T" : "");
	}
}

static void test_nsswitch_hosts_line_gives_the_order_of_files_and_dns(void **state)
{
	static const struct {
		const char *conf;
		int r;
		const char *order, *skipped;
	} cases[] = {
	        /* Debian's default */
	        {"passwd: files\nhosts:          files dns\nnetworks: files\n", 0, "files dns", ""},
	        /* Ubuntu's: mdns4_minimal and its action are skipped together */
	        {"hosts: files mdns4_minimal [NOTFOUND=return] dns myhostname\n", 0, "files dns",
	         "mdns4_minimal myhostname"},
	        /* Fedora's: resolve is DNS; its action applies; the later dns is the same */
	        {"hosts: files myhostname resolve [!UNAVAIL=return] dns\n", 0, "files dns/NT",
	         "myhostname"},
	        {"hosts: dns files\n", 0, "dns files", ""},
	        {"hosts: files [NOTFOUND=return] dns\n", 0, "files/N dns", ""},
	        {"hosts: files [ notfound=RETURN TRYAGAIN=return ] dns\n", 0, "files/NT dns", ""},
	        {"hosts: files [NOTFOUND=return NOTFOUND=continue] dns\n", 0, "files dns", ""},
	        {"hosts: dns [UNAVAIL=return !UNAVAIL=continue] files\n", 0, "dns/U files", ""},
	        {"hosts: dns [SUCCESS=continue UNKNOWN=return NOTFOUND=jump] files\n", 0,
	         "dns files", ""},
	        {"hosts:files dns", 0, "files dns", ""},
	        {"  hosts :\tdns\t# files are not read\n", 0, "dns", ""},
	        {"hosts: files\n", 0, "files", ""},
	        {"hosts: mdns4 wins\n", 0, "", "mdns4 wins"},
	        {"hosts: files files dns dns\n", 0, "files dns", ""},
	        {"# hosts: dns\nhostsx: dns\n#\nhosts: dns files\nhosts: files\n", 0, "dns files",
	         ""},
	        /* none: the default */
	        {"", -ENOENT, "files dns", ""},
	        {"passwd: files\n# hosts: dns\n", -ENOENT, "files dns", ""},
	        {"hosts dns\n", -ENOENT, "files dns", ""},
	        {"hosts: [NOTFOUND=return\n", 0, "", ""},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct hostsdb_order o;
		char got[64];
		int r = hostsdb_order_parse(cases[i].conf, strlen(cases[i].conf), &o);

		order_text(&o, got, sizeof(got));
		if (r != cases[i].r || strcmp(got, cases[i].order) != 0 ||
		    strcmp(o.skipped, cases[i].skipped) != 0)
			fail_msg("case %zu: got %d \"%s\" skipped \"%s\", want %d \"%s\" \"%s\"", i,
			         r, got, o.skipped, cases[i].r, cases[i].order, cases[i].skipped);
	}
}

static void test_lookup_statuses_name_resolver_errors(void **state)
{
	assert_int_equal(hostsdb_status_of(-ENOENT), HOSTSDB_NOTFOUND);
	assert_int_equal(hostsdb_status_of(-ENODATA), HOSTSDB_NOTFOUND);
	assert_int_equal(hostsdb_status_of(-ENXIO), HOSTSDB_UNAVAIL);
	assert_int_equal(hostsdb_status_of(-ETIMEDOUT), HOSTSDB_TRYAGAIN);
	assert_int_equal(hostsdb_status_of(-EIO), HOSTSDB_TRYAGAIN);
}

static char dir[] = "/tmp/cloister-test-hostsdb-XXXXXX";

static void put(const char *name, const char *text)
{
	char path[128], tmp[140];
	FILE *f;

	/* A new file renamed into place, as editors and package managers write /etc. */
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	f = fopen(tmp, "we");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(rename(tmp, path), 0);
}

static const char *path_of(const char *name)
{
	static char paths[4][128];
	static int next;
	char *p = paths[next++ % 4];

	snprintf(p, 128, "%s/%s", dir, name);
	return p;
}

static const char *addr_of(const struct dns_addrs *a)
{
	static char buf[INET6_ADDRSTRLEN];

	inet_ntop(a->addrs[0].family, &a->addrs[0].v6, buf, sizeof(buf));
	return buf;
}

static void test_files_are_read_again_when_they_change_at_most_once_a_second(void **state)
{
	_cleanup_(hostsdb_freep) struct hostsdb *db = NULL;
	struct hostsdb_config cfg;
	struct dns_addrs a;
	struct cl_error err = {""};
	char text[256];

	assert_non_null(mkdtemp(dir));
	put("hosts", "192.0.2.1 corp.test\n");
	put("extra", "192.0.2.9 extra.test\n");
	put("nsswitch.conf", "hosts: files dns\n");
	cfg = (struct hostsdb_config){
	        .extra = path_of("extra"),
	        .hosts = path_of("hosts"),
	        .nsswitch = path_of("nsswitch.conf"),
	};
	assert_int_equal(hostsdb_new(&cfg, &db, &err), 0);
	assert_int_equal(hostsdb_find_files(db, "corp.test", &a), 0);
	assert_string_equal(addr_of(&a), "192.0.2.1");
	assert_int_equal(hostsdb_find_extra(db, "extra.test", &a), 0);
	assert_int_equal(hostsdb_find_extra(db, "corp.test", &a), -ENOENT);
	hostsdb_refresh(db, 10000);

	/* Changed: seen at the next check, not before a second has passed. */
	put("hosts", "192.0.2.2 corp.test\n192.0.2.3 new.test\n");
	put("nsswitch.conf", "hosts: dns [NOTFOUND=return] files\n");
	hostsdb_refresh(db, 10500);
	assert_int_equal(hostsdb_find_files(db, "new.test", &a), -ENOENT);
	assert_int_equal(hostsdb_order(db)->source[0], HOSTSDB_FILES);
	hostsdb_refresh(db, 11000);
	assert_int_equal(hostsdb_find_files(db, "new.test", &a), 0);
	assert_int_equal(hostsdb_find_files(db, "corp.test", &a), 0);
	assert_string_equal(addr_of(&a), "192.0.2.2");
	assert_int_equal(hostsdb_order(db)->source[0], HOSTSDB_DNS);
	assert_int_equal(hostsdb_order(db)->stop_on[0], HOSTSDB_NOTFOUND);
	hostsdb_describe(db, text, sizeof(text));
	assert_non_null(strstr(text, "/extra, then dns, files ("));

	/* Gone: the hosts file is unavailable, nsswitch.conf's default order holds. */
	assert_int_equal(unlink(path_of("hosts")), 0);
	assert_int_equal(unlink(path_of("nsswitch.conf")), 0);
	hostsdb_refresh(db, 12000);
	assert_int_equal(hostsdb_find_files(db, "corp.test", &a), -ENXIO);
	assert_int_equal(hostsdb_order(db)->n, 2);
	assert_int_equal(hostsdb_order(db)->source[0], HOSTSDB_FILES);

	/* The file the user named keeps its last good text while it cannot be read. */
	assert_int_equal(unlink(path_of("extra")), 0);
	hostsdb_refresh(db, 13000);
	assert_int_equal(hostsdb_find_extra(db, "extra.test", &a), 0);
	put("extra", "192.0.2.10 extra.test\n");
	hostsdb_refresh(db, 14000);
	assert_int_equal(hostsdb_find_extra(db, "extra.test", &a), 0);
	assert_string_equal(addr_of(&a), "192.0.2.10");

	/* Bounded: a hosts file over the limit is not read (its names are not used). */
	{
		_cleanup_free_ char *big = malloc(HOSTSDB_MAX_BYTES + 100);

		assert_non_null(big);
		memset(big, '#', HOSTSDB_MAX_BYTES + 99);
		memcpy(big, "192.0.2.4 big.test\n", 19);
		big[HOSTSDB_MAX_BYTES + 99] = '\0';
		put("hosts", big);
		hostsdb_refresh(db, 15000);
		assert_int_equal(hostsdb_find_files(db, "big.test", &a), -ENXIO);
	}
	unlink(path_of("hosts"));
	unlink(path_of("extra"));
	rmdir(dir);
}

static void test_an_extra_file_that_cannot_be_read_is_an_error(void **state)
{
	struct hostsdb_config cfg = {.extra = "/nonexistent/cloister-hosts"};
	struct hostsdb *db = NULL;
	struct cl_error err = {""};

	assert_int_equal(hostsdb_new(&cfg, &db, &err), -EINVAL);
	assert_null(db);
	assert_non_null(strstr(err.msg, "hosts file /nonexistent/cloister-hosts"));
	/* The system's files may be missing: they are looked at again later. */
	cfg = (struct hostsdb_config){.hosts = "/nonexistent/hosts", .nsswitch = "/nonexistent/n"};
	assert_int_equal(hostsdb_new(&cfg, &db, &err), 0);
	hostsdb_free(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_nsswitch_hosts_line_gives_the_order_of_files_and_dns),
	        cmocka_unit_test(test_lookup_statuses_name_resolver_errors),
	        cmocka_unit_test(test_files_are_read_again_when_they_change_at_most_once_a_second),
	        cmocka_unit_test(test_an_extra_file_that_cannot_be_read_is_an_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
