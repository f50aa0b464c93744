/* Domain entries and queries: normalisation, wildcard semantics, ports, IP literals. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "supervisor/policy/domain.h"

static bool matches(const char *rule_text, const char *query_text)
{
	struct domain_spec rule, query;
	struct cl_error err = {{0}};

	if (domain_spec_parse(rule_text, true, &rule, &err) < 0)
		fail_msg("rule %s: %s", rule_text, err.msg);
	if (domain_spec_parse(query_text, false, &query, &err) < 0)
		fail_msg("query %s: %s", query_text, err.msg);
	return domain_spec_matches(&rule, &query);
}

static void test_exact_entry_matches_only_that_name(void **state)
{
	static const struct {
		const char *rule, *query;
		bool want;
	} cases[] = {
	        {"example.com", "example.com", true},
	        {"example.com", "api.example.com", false},
	        {"api.example.com", "example.com", false},
	        {"example.com", "example.co", false},
	        {"example.com", "notexample.com", false},
	        {"example.com", "example.com.evil.net", false},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (matches(cases[i].rule, cases[i].query) != cases[i].want)
			fail_msg("%s vs %s: expected %d", cases[i].rule, cases[i].query,
			         cases[i].want);
	}
}

static void test_wildcard_matches_apex_and_one_level_but_not_two(void **state)
{
	assert_true(matches("*.example.com", "api.example.com"));
	assert_true(matches("*.example.com", "example.com"));
	assert_false(matches("*.example.com", "a.b.example.com"));
	assert_false(matches("*.example.com", "api.v2.example.com"));
	assert_false(matches("*.example.com", "badexample.com"));
	assert_false(matches("*.example.com", "example.com.evil.net"));
	assert_false(matches("*.example.com", "com"));
	assert_true(matches("*.cdn.example.com", "assets.cdn.example.com"));
	assert_false(matches("*.cdn.example.com", "assets.example.com"));
}

static bool denies(const char *rule_text, const char *query_text)
{
	struct domain_spec rule, query;
	struct cl_error err = {{0}};

	if (domain_spec_parse(rule_text, true, &rule, &err) < 0)
		fail_msg("rule %s: %s", rule_text, err.msg);
	if (domain_spec_parse(query_text, false, &query, &err) < 0)
		fail_msg("query %s: %s", query_text, err.msg);
	return domain_spec_matches_deny(&rule, &query);
}

/* Cloister's DomainSet pattern cases as rows, with the two answers this project gives: an
 * allow pattern keeps one level and the apex (as the approval API documents), a deny pattern
 * covers every depth and the apex ("blocks all subdomains and apex"). */
static void test_deny_pattern_covers_every_depth_allow_pattern_one_level(void **state)
{
	static const struct {
		const char *rule, *query;
		bool allow, deny;
	} cases[] = {
	        {"*.example.com", "api.example.com", true, true},
	        {"*.example.com", "a.b.example.com", false, true},
	        {"*.example.com", "x.y.z.example.com", false, true},
	        {"*.example.com", "example.com", true, true},
	        {"*.example.com", "api.other.com", false, false},
	        {"*.example.com", "badexample.com", false, false},
	        {"*.example.com", "example.com.evil.net", false, false},
	        {"*.example.com", "api.example.com:443", true, true},
	        {"*.example.com:443", "a.b.example.com:443", false, true},
	        {"*.example.com:443", "a.b.example.com:80", false, false},
	        {"example.com", "api.example.com", false, false},
	        {"example.com", "example.com:8443", true, true},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (matches(cases[i].rule, cases[i].query) != cases[i].allow)
			fail_msg("allow %s vs %s: expected %d", cases[i].rule, cases[i].query,
			         cases[i].allow);
		if (denies(cases[i].rule, cases[i].query) != cases[i].deny)
			fail_msg("deny %s vs %s: expected %d", cases[i].rule, cases[i].query,
			         cases[i].deny);
	}
}

static void test_matching_ignores_case_and_one_trailing_dot(void **state)
{
	assert_true(matches("Example.COM", "example.com"));
	assert_true(matches("example.com", "EXAMPLE.com."));
	assert_true(matches("*.Example.com.", "API.example.COM"));
	assert_true(matches("example.com.", "example.com"));
}

static void test_port_in_rule_limits_it_to_that_port(void **state)
{
	assert_true(matches("example.com", "example.com:443"));
	assert_true(matches("example.com:443", "example.com:443"));
	assert_false(matches("example.com:443", "example.com:8443"));
	assert_false(matches("example.com:443", "example.com"));
	assert_true(matches("*.example.com:443", "api.example.com:443"));
	assert_false(matches("*.example.com:443", "api.example.com:80"));
}

static void test_ip_literals_are_matched_in_canonical_form(void **state)
{
	assert_true(matches("10.0.0.1", "10.0.0.1:80"));
	assert_false(matches("10.0.0.1", "10.0.0.2"));
	assert_true(matches("[::1]", "[0:0::1]:443"));
	assert_true(matches("::1", "[::1]"));
	assert_true(matches("[2001:db8::1]:443", "[2001:DB8:0::1]:443"));
	assert_false(matches("[2001:db8::1]:443", "[2001:db8::1]:80"));
}

static void test_every_ipv4_form_a_resolver_takes_matches_the_dotted_quad(void **state)
{
	/* getaddrinfo() reaches 127.0.0.1 through each of these: an entry for 127.0.0.1 (a
	 * deny, say) must see them all. */
	static const char *const forms[] = {
	        "127.0.0.1",     "2130706433",      "127.1",      "0x7f.0.0.1",
	        "0177.0.0.1",    "0x7F000001",      "127.0.0.1.", "[::ffff:127.0.0.1]",
	        "::ffff:7f00:1", "[::FFFF:7F00:1]", "127.0.1",
	};
	struct domain_spec spec;
	struct cl_error err = {{0}};

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		if (!matches("127.0.0.1", forms[i]))
			fail_msg("%s does not match 127.0.0.1", forms[i]);
		assert_false(matches("127.0.0.2", forms[i]));
	}
	assert_true(matches("2130706433:443", "[::ffff:127.0.0.1]:443"));
	assert_int_equal(domain_spec_parse("0x7f.1:8080", false, &spec, &err), 0);
	assert_string_equal(spec.host, "127.0.0.1");
	assert_int_equal(spec.port, 8080);
	/* a name ending in a number that is no address is refused, not looked up as a name */
	static const char *const bad[] = {"1.2.3.4.5", "999.1.1.1", "abc.123", "0x1g.1.1.1",
	                                  "4294967296"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (domain_spec_parse(bad[i], false, &spec, &err) != -EINVAL)
			fail_msg("%s accepted as %s", bad[i], spec.host);
	assert_non_null(strstr(err.msg, "not an IPv4 address"));
	assert_int_equal(domain_spec_parse("*.0.1", true, &spec, &err), -EINVAL);
	/* names that merely contain digits stay names */
	assert_true(matches("1e3.example.com", "1E3.example.com"));
	assert_true(matches("*.123.example", "a.123.example"));
}

static void test_invalid_entries_are_rejected_with_a_message(void **state)
{
	static const struct {
		const char *text;
		bool wildcard_ok;
		const char *msg_part;
	} cases[] = {
	        {"", true, "empty"},
	        {".", true, "empty domain"},
	        {"example..com", true, "empty label"},
	        {".example.com", true, "empty label"},
	        {"exa mple.com", true, "not allowed"},
	        {"example.com/path", true, "not allowed"},
	        {"example.com:", true, "empty port"},
	        {"example.com:0", true, "port 0"},
	        {"example.com:65536", true, "above 65535"},
	        {"example.com:8a", true, "number"},
	        {"*.example.com", false, "pattern entry"},
	        {"*example.com", true, "leading"},
	        {"api.*.example.com", true, "first label"},
	        {"*.*.example.com", true, "first label"},
	        {"*.10.0.0.1", true, "IP address"},
	        {"[::1", true, "missing ']'"},
	        {"[::1]x", true, "after ']'"},
	        {"[nothex]", true, "IPv6"},
	        {"1:2:3", true, "IPv6"},
	        {"a\xc3\xa9.com", true, "not allowed"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct domain_spec spec;
		struct cl_error err = {{0}};
		int r = domain_spec_parse(cases[i].text, cases[i].wildcard_ok, &spec, &err);

		if (r != -EINVAL)
			fail_msg("\"%s\": expected -EINVAL, got %d", cases[i].text, r);
		if (!strstr(err.msg, cases[i].msg_part))
			fail_msg("\"%s\": message \"%s\" lacks \"%s\"", cases[i].text, err.msg,
			         cases[i].msg_part);
	}
}

static void test_overlong_names_and_labels_are_rejected(void **state)
{
	char name[400];
	struct domain_spec spec;
	struct cl_error err = {{0}};

	memset(name, 'a', 64);
	strcpy(name + 64, ".com");
	assert_int_equal(domain_spec_parse(name, false, &spec, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "label is longer"));

	/* 4 × 63-character labels plus dots: 255 characters, above the 253 limit. */
	name[0] = '\0';
	for (int i = 0; i < 4; i++) {
		strncat(name, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
		        sizeof(name) - strlen(name) - 1);
		if (i < 3)
			strcat(name, ".");
	}
	assert_int_equal(domain_spec_parse(name, false, &spec, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "longer than 253"));

	memset(name, 'c', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	assert_int_equal(domain_spec_parse(name, false, &spec, &err), -EINVAL);
}

static void test_failed_parse_leaves_output_untouched(void **state)
{
	struct domain_spec spec;

	memset(&spec, 0x5a, sizeof(spec));
	assert_int_equal(domain_spec_parse("bad host", false, &spec, NULL), -EINVAL);
	assert_int_equal((unsigned char)spec.host[0], 0x5a);
}

static void test_format_writes_entries_back_in_config_syntax(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	        {"*.Example.com.", "*.example.com"},
	        {"API.example.com:8443", "api.example.com:8443"},
	        {"[0:0::1]:443", "[::1]:443"},
	        {"::1", "[::1]"},
	        {"10.0.0.1", "10.0.0.1"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct domain_spec spec, again;
		char buf[300];

		assert_int_equal(domain_spec_parse(cases[i].in, true, &spec, NULL), 0);
		assert_true(domain_spec_format(&spec, buf, sizeof(buf)) > 0);
		assert_string_equal(buf, cases[i].out);
		/* What we write parses back to the same entry. */
		assert_int_equal(domain_spec_parse(buf, true, &again, NULL), 0);
		assert_memory_equal(&spec, &again, sizeof(spec));
	}
}

static void test_format_reports_a_short_buffer(void **state)
{
	struct domain_spec spec;
	char buf[5];

	assert_int_equal(domain_spec_parse("example.com", false, &spec, NULL), 0);
	assert_int_equal(domain_spec_format(&spec, buf, sizeof(buf)), -ENOSPC);
}

static void test_wire_names_are_validated_as_ldh_and_lowercased(void **state)
{
	static const struct {
		const char *in;
		unsigned flags;
		const char *want; /* NULL: refused */
	} cases[] = {
	        {"Example.COM", 0, "example.com"},
	        {"example.com.", 0, "example.com"},
	        {"xn--bcher-kva.example", 0, "xn--bcher-kva.example"},
	        {"a-b.c0", 0, "a-b.c0"},
	        {"localhost", 0, "localhost"},
	        {"1e3.example.com", 0, "1e3.example.com"},
	        {"4.3.2.1.in-addr.arpa", 0, "4.3.2.1.in-addr.arpa"},
	        {"_dmarc.example.com", DOMAIN_NAME_UNDERSCORE, "_dmarc.example.com"},
	        {"_dmarc.example.com", 0, NULL},
	        {"", 0, NULL},
	        {".", 0, NULL},
	        {"example.com..", 0, NULL},
	        {".example.com", 0, NULL},
	        {"a..b", 0, NULL},
	        {"-a.com", 0, NULL},
	        {"a-.com", 0, NULL},
	        {"a.-b", 0, NULL},
	        {"exa mple.com", 0, NULL},
	        {"example.com:443", 0, NULL},
	        {"*.example.com", 0, NULL},
	        {"10.0.0.1", 0, NULL},
	        {"example.123", 0, NULL},
	        {"2130706433", 0, NULL},
	        {"a\xc3\xa9.com", 0, NULL},
	        {"[::1]", 0, NULL},
	};
	char out[DOMAIN_HOST_MAX + 1];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r;

		strcpy(out, "untouched");
		r = domain_name_normalise(cases[i].in, strlen(cases[i].in), cases[i].flags, out);
		if (cases[i].want && (r != 0 || strcmp(out, cases[i].want) != 0))
			fail_msg("\"%s\": expected \"%s\", got %d \"%s\"", cases[i].in,
			         cases[i].want, r, out);
		if (!cases[i].want && (r != -EINVAL || strcmp(out, "untouched") != 0))
			fail_msg("\"%s\": expected a refusal, got %d \"%s\"", cases[i].in, r, out);
	}
	/* A NUL inside the given length is a byte like any other: refused. */
	assert_int_equal(domain_name_normalise("a\0b.com", 7, 0, out), -EINVAL);
}

static void test_wire_names_respect_length_limits(void **state)
{
	char name[300], out[DOMAIN_HOST_MAX + 1];

	memset(name, 'a', 63);
	memcpy(name + 63, ".com", 4);
	assert_int_equal(domain_name_normalise(name, 67, 0, out), 0);
	memset(name, 'a', 64);
	memcpy(name + 64, ".com", 4);
	assert_int_equal(domain_name_normalise(name, 68, 0, out), -EINVAL);
	/* 253 characters are fine (254 with the trailing dot); 254 are not. */
	for (size_t i = 0; i < sizeof(name); i++)
		name[i] = (i % 2) ? '.' : 'b';
	assert_int_equal(domain_name_normalise(name, 253, 0, out), 0);
	assert_int_equal(strlen(out), 253);
	name[253] = '.';
	assert_int_equal(domain_name_normalise(name, 254, 0, out), 0);
	name[253] = 'b';
	name[254] = '.';
	assert_int_equal(domain_name_normalise(name, 255, 0, out), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_exact_entry_matches_only_that_name),
	        cmocka_unit_test(test_wildcard_matches_apex_and_one_level_but_not_two),
	        cmocka_unit_test(test_deny_pattern_covers_every_depth_allow_pattern_one_level),
	        cmocka_unit_test(test_matching_ignores_case_and_one_trailing_dot),
	        cmocka_unit_test(test_port_in_rule_limits_it_to_that_port),
	        cmocka_unit_test(test_ip_literals_are_matched_in_canonical_form),
	        cmocka_unit_test(test_every_ipv4_form_a_resolver_takes_matches_the_dotted_quad),
	        cmocka_unit_test(test_invalid_entries_are_rejected_with_a_message),
	        cmocka_unit_test(test_overlong_names_and_labels_are_rejected),
	        cmocka_unit_test(test_failed_parse_leaves_output_untouched),
	        cmocka_unit_test(test_format_writes_entries_back_in_config_syntax),
	        cmocka_unit_test(test_format_reports_a_short_buffer),
	        cmocka_unit_test(test_wire_names_are_validated_as_ldh_and_lowercased),
	        cmocka_unit_test(test_wire_names_respect_length_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
