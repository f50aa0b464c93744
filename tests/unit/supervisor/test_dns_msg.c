/* The resolver's DNS messages: queries from glibc's res_mkquery() and hand-built ones,
 * answers checked byte by byte and with glibc's dn_expand(), upstream answers with CNAMEs. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <errno.h>
#include <resolv.h>
#include <string.h>

#include "supervisor/egress/dns_msg.h"

struct msg {
	uint8_t d[4096];
	size_t n;
};

static void put(struct msg *m, const void *p, size_t n)
{
	assert_true(m->n + n <= sizeof(m->d));
	memcpy(m->d + m->n, p, n);
	m->n += n;
}

static void put8(struct msg *m, unsigned v)
{
	uint8_t b = (uint8_t)v;
	put(m, &b, 1);
}

static void put16(struct msg *m, unsigned v)
{
	put8(m, v >> 8);
	put8(m, v);
}

static void put32(struct msg *m, uint32_t v)
{
	put16(m, v >> 16);
	put16(m, v & 0xffff);
}

/* "a.b.c" as wire labels. */
static void put_name(struct msg *m, const char *name)
{
	while (*name) {
		const char *dot = strchr(name, '.');
		size_t len = dot ? (size_t)(dot - name) : strlen(name);
		put8(m, (unsigned)len);
		put(m, name, len);
		name += len + (dot ? 1 : 0);
	}
	put8(m, 0);
}

static void put_header(struct msg *m, unsigned id, unsigned flags, unsigned qd, unsigned an,
                       unsigned ns, unsigned ar)
{
	m->n = 0;
	put16(m, id);
	put16(m, flags);
	put16(m, qd);
	put16(m, an);
	put16(m, ns);
	put16(m, ar);
}

static void query_for(struct msg *m, const char *name, unsigned qtype, bool edns, unsigned udp_size,
                      unsigned version)
{
	put_header(m, 0x1234, 0x0100, 1, 0, 0, edns ? 1 : 0);
	put_name(m, name);
	put16(m, qtype);
	put16(m, DNS_CLASS_IN);
	if (edns) {
		put8(m, 0);
		put16(m, DNS_TYPE_OPT);
		put16(m, udp_size);
		put8(m, 0);
		put8(m, version);
		put16(m, 0x8000); /* DO */
		put16(m, 4);      /* one option: a cookie-like 0-length pair */
		put16(m, 10);
		put16(m, 0);
	}
}

static void test_glibc_query_is_parsed(void **state)
{
	uint8_t buf[512];
	struct dns_query q;
	int n;

	res_init();
	n = res_mkquery(ns_o_query, "WwW.Example.COM", ns_c_in, ns_t_aaaa, NULL, 0, NULL, buf,
	                sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(dns_query_parse(buf, (size_t)n, &q, NULL), 0);
	assert_int_equal(q.id, buf[0] << 8 | buf[1]);
	assert_true(q.name_valid);
	assert_string_equal(q.name, "www.example.com");
	assert_int_equal(q.qtype, DNS_TYPE_AAAA);
	assert_int_equal(q.qclass, DNS_CLASS_IN);
	assert_true(q.rd);
	assert_false(q.edns);
	/* The wire form keeps the client's case, for the echo. */
	assert_int_equal(q.qname_wire_len, 17);
	assert_memory_equal(q.qname_wire, "\3WwW\7Example\3COM", 17);
	assert_int_equal(dns_query_udp_limit(&q), 512);
}

static void test_edns_is_tolerated_and_sets_the_udp_limit(void **state)
{
	struct msg m;
	struct dns_query q;

	query_for(&m, "example.com", DNS_TYPE_A, true, 4096, 0);
	assert_int_equal(dns_query_parse(m.d, m.n, &q, NULL), 0);
	assert_true(q.edns);
	assert_int_equal(q.edns_udp_size, 4096);
	assert_int_equal(dns_query_udp_limit(&q), DNS_UDP_OURS);
	query_for(&m, "example.com", DNS_TYPE_A, true, 100, 0);
	assert_int_equal(dns_query_parse(m.d, m.n, &q, NULL), 0);
	assert_int_equal(dns_query_udp_limit(&q), 512);
}

static void test_names_are_validated(void **state)
{
	static const struct {
		const char *name;
		const char *want; /* NULL: not a host name */
	} cases[] = {
	        {"Example.COM", "example.com"},
	        {"_dmarc.example.com", "_dmarc.example.com"},
	        {"4.3.2.1.in-addr.arpa", "4.3.2.1.in-addr.arpa"},
	        {"", NULL},
	        {"*.example.com", NULL},
	        {"exa mple.com", NULL},
	        {"10.0.0.1", NULL},
	        {"-x.example.com", NULL},
	};
	struct msg m;
	struct dns_query q;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		query_for(&m, cases[i].name, DNS_TYPE_A, false, 0, 0);
		assert_int_equal(dns_query_parse(m.d, m.n, &q, NULL), 0);
		if (cases[i].want) {
			assert_true(q.name_valid);
			assert_string_equal(q.name, cases[i].want);
		} else if (q.name_valid || q.name[0]) {
			fail_msg("\"%s\" taken as a host name \"%s\"", cases[i].name, q.name);
		}
	}
	/* A label holding a dot ("a.b" as one label) is no host name, though "a.b" would be. */
	put_header(&m, 1, 0, 1, 0, 0, 0);
	put8(&m, 3);
	put(&m, "a.b", 3);
	put8(&m, 0);
	put16(&m, 1);
	put16(&m, 1);
	assert_int_equal(dns_query_parse(m.d, m.n, &q, NULL), 0);
	assert_false(q.name_valid);
}

/* Build a query with a bad part: what says which. */
static void check_refused(const char *what, const struct msg *m, const char *msg_part)
{
	struct dns_query q;
	struct cl_error err = {{0}};

	memset(&q, 0x5a, sizeof(q));
	if (dns_query_parse(m->d, m->n, &q, &err) != -EINVAL)
		fail_msg("%s: accepted", what);
	if (!strstr(err.msg, msg_part))
		fail_msg("%s: message \"%s\" lacks \"%s\"", what, err.msg, msg_part);
	assert_int_equal(q.id, 0x5a5a);
}

static void test_malformed_queries_are_refused(void **state)
{
	struct msg m;

	query_for(&m, "example.com", 1, false, 0, 0);
	m.n = 11;
	check_refused("short header", &m, "header");
	query_for(&m, "example.com", 1, false, 0, 0);
	m.d[2] |= 0x80;
	check_refused("a response", &m, "response");
	query_for(&m, "example.com", 1, false, 0, 0);
	m.d[2] |= 0x28; /* opcode 5, UPDATE */
	check_refused("update", &m, "opcode");
	query_for(&m, "example.com", 1, false, 0, 0);
	m.d[5] = 2;
	check_refused("two questions", &m, "one question");
	query_for(&m, "example.com", 1, false, 0, 0);
	m.d[5] = 0;
	check_refused("no question", &m, "one question");
	query_for(&m, "example.com", 1, false, 0, 0);
	m.d[7] = 1;
	check_refused("an answer", &m, "answer or authority");
	query_for(&m, "example.com", 1, true, 512, 0);
	m.d[11] = 2;
	check_refused("two additional", &m, "more than one additional");
	query_for(&m, "example.com", 1, false, 0, 0);
	m.n -= 1;
	check_refused("cut question", &m, "past the message");
	query_for(&m, "example.com", 1, false, 0, 0);
	put8(&m, 0);
	check_refused("trailing byte", &m, "after the last record");
	query_for(&m, "example.com", 1, true, 512, 0);
	m.d[m.n - 15 + 2] = 1; /* OPT's type becomes 1 */
	check_refused("additional not OPT", &m, "not an EDNS OPT");
	query_for(&m, "example.com", 1, true, 512, 0);
	m.d[m.n - 5]++; /* OPT rdlen */
	check_refused("OPT data too long", &m, "OPT data");

	/* A pointer to itself, and forward. */
	put_header(&m, 1, 0, 1, 0, 0, 0);
	put16(&m, 0xc000 | 12);
	put16(&m, 1);
	put16(&m, 1);
	check_refused("pointer to itself", &m, "point back");
	put_header(&m, 1, 0, 1, 0, 0, 0);
	put16(&m, 0xc000 | 20);
	put16(&m, 1);
	put16(&m, 1);
	put_name(&m, "x");
	check_refused("forward pointer", &m, "point back");
	/* A loop through backward pointers: label at 12, then a pointer back to 12. */
	put_header(&m, 1, 0, 1, 0, 0, 0);
	put8(&m, 1);
	put8(&m, 'a');
	put16(&m, 0xc000 | 12);
	put16(&m, 1);
	put16(&m, 1);
	check_refused("pointer loop", &m, "");
	/* Label types 01 and 10 (extended, obsolete). */
	put_header(&m, 1, 0, 1, 0, 0, 0);
	put8(&m, 0x41);
	put8(&m, 'a');
	put8(&m, 0);
	put16(&m, 1);
	put16(&m, 1);
	check_refused("label type 01", &m, "label type");
	/* A name of 256 wire bytes: 4 labels of 63 and one of 1 (4*64 + 2 + 1 = 259). */
	put_header(&m, 1, 0, 1, 0, 0, 0);
	for (int i = 0; i < 4; i++) {
		char label[63];
		memset(label, 'a', sizeof(label));
		put8(&m, 63);
		put(&m, label, 63);
	}
	put8(&m, 1);
	put8(&m, 'b');
	put8(&m, 0);
	put16(&m, 1);
	put16(&m, 1);
	check_refused("name over 255", &m, "longer than 255");
}

static struct dns_addr v4(const char *text)
{
	struct dns_addr a = {.family = AF_INET};
	assert_int_equal(inet_pton(AF_INET, text, &a.v4), 1);
	return a;
}

static struct dns_addr v6(const char *text)
{
	struct dns_addr a = {.family = AF_INET6};
	assert_int_equal(inet_pton(AF_INET6, text, &a.v6), 1);
	return a;
}

static void test_a_answer_echoes_the_question_and_carries_the_addresses(void **state)
{
	struct dns_addr addrs[] = {v4("198.18.0.7"), v6("fd00::7"), v4("198.18.0.8")};
	struct msg m;
	struct dns_query q;
	uint8_t out[512];
	char expanded[256];
	int n;

	query_for(&m, "Api.Example.com", DNS_TYPE_A, false, 0, 0);
	assert_int_equal(dns_query_parse(m.d, m.n, &q, NULL), 0);
	n = dns_answer_build(&q, DNS_RCODE_NOERROR, addrs, 3, 60, out, sizeof(out),
	                     dns_query_udp_limit(&q));
	assert_int_equal(n, 12 + 17 + 4 + 2 * 16);
	assert_int_equal(out[0] << 8 | out[1], 0x1234);
	assert_int_equal(out[2], 0x81); /* QR, RD copied */
	assert_int_equal(out[3], 0x80); /* RA, NOERROR */
	assert_memory_equal(out + 4, "\0\1\0\2\0\0\0\0", 8);
	assert_memory_equal(out + 12, m.d + 12, 17 + 4); /* question as sent */
	/* First record: a pointer to the question's name, A, IN, TTL 60, 4 bytes. */
	assert_memory_equal(out + 33, "\xc0\x0c\0\1\0\1\0\0\0\x3c\0\4\xc6\x12\0\x07", 16);
	assert_memory_equal(out + 49 + 12, "\xc6\x12\0\x08", 4);
	/* glibc reads the record's name back as the question's. */
	assert_true(dn_expand(out, out + n, out + 33, expanded, sizeof(expanded)) == 2);
	assert_string_equal(expanded, "Api.Example.com");
}

static void test_error_answers_and_nodata_carry_no_records(void **state)
{
	static const enum dns_rcode rcodes[] = {DNS_RCODE_NXDOMAIN, DNS_RCODE_REFUSED,
	                                        DNS_RCODE_SERVFAIL, DNS_RCODE_FORMERR};
	struct dns_addr addrs[] = {v4("198.18.0.7")};
	struct msg m;
	struct dns_query q;
	uint8_t out[512];
	int n;

	query_for(&m, "example.com", DNS_TYPE_A, false, 0, 0);
	assert_int_equal(dns_query_parse(m.d, m.n, &q, NULL), 0);
	for (size_t i = 0; i < sizeof(rcodes) / sizeof(rcodes[0]); i++) {
		n = dns_answer_build(&q, rcodes[i], addrs, 1, 60, out, sizeof(out), 512);
		assert_int_equal(n, 12 + 13 + 4);
		assert_int_equal(out[3] & 0x0f, rcodes[i]);
		assert_int_equal(out[7], 0);
	}
	/* NODATA: an AAAA question when only IPv4 addresses exist; MX and non-IN the same. */
	query_for(&m, "example.com", DNS_TYPE_AAAA, false, 0, 0);
	assert_int_equal(dns_query_parse(m.d, m.n, &q, NULL), 0);
	n = dns_answer_build(&q, DNS_RCODE_NOERROR, addrs, 1, 60, out, sizeof(out), 512);
	assert_int_equal(n, 29);
	assert_int_equal(out[3] & 0x0f, 0);
	assert_int_equal(out[7], 0);
	q.qtype = 15;
	assert_int_equal(
	        dns_answer_build(&q, DNS_RCODE_NOERROR, addrs, 1, 60, out, sizeof(out), 512), 29);
	q.qtype = DNS_TYPE_A;
	q.qclass = 3; /* CHAOS */
	assert_int_equal(
	        dns_answer_build(&q, DNS_RCODE_NOERROR, addrs, 1, 60, out, sizeof(out), 512), 29);
	assert_int_equal(dns_answer_build(&q, (enum dns_rcode)9, NULL, 0, 0, out, sizeof(out), 512),
	                 -EINVAL);
}

static void test_edns_answers_carry_an_opt_and_refuse_unknown_versions(void **state)
{
	struct dns_addr addrs[] = {v4("198.18.0.7")};
	struct msg m;
	struct dns_query q;
	uint8_t out[512];
	int n;

	query_for(&m, "example.com", DNS_TYPE_A, true, 1232, 0);
	assert_int_equal(dns_query_parse(m.d, m.n, &q, NULL), 0);
	n = dns_answer_build(&q, DNS_RCODE_NOERROR, addrs, 1, 60, out, sizeof(out), 512);
	assert_int_equal(n, 29 + 16 + 11);
	assert_int_equal(out[11], 1);
	assert_memory_equal(out + n - 11, "\0\0\x29\x04\xd0\0\0\0\0\0\0", 11);

	query_for(&m, "example.com", DNS_TYPE_A, true, 1232, 1);
	assert_int_equal(dns_query_parse(m.d, m.n, &q, NULL), 0);
	n = dns_answer_build(&q, DNS_RCODE_NOERROR, addrs, 1, 60, out, sizeof(out), 512);
	assert_int_equal(n, 29 + 11);
	assert_int_equal(out[7], 0);
	assert_int_equal(out[n - 11 + 5], 1); /* extended rcode: BADVERS = 16 */
}

static void test_answers_too_big_for_udp_are_truncated(void **state)
{
	struct dns_addr addrs[40];
	struct msg m;
	struct dns_query q;
	uint8_t out[2048];
	int n;

	for (size_t i = 0; i < 40; i++) {
		addrs[i] = v6("fd00::1");
		addrs[i].v6.s6_addr[15] = (uint8_t)i;
	}
	query_for(&m, "example.com", DNS_TYPE_AAAA, false, 0, 0);
	assert_int_equal(dns_query_parse(m.d, m.n, &q, NULL), 0);
	n = dns_answer_build(&q, DNS_RCODE_NOERROR, addrs, 40, 60, out, sizeof(out),
	                     dns_query_udp_limit(&q));
	assert_int_equal(n, 29);
	assert_true(out[2] & 0x02); /* TC */
	assert_int_equal(out[7], 0);
	n = dns_answer_build(&q, DNS_RCODE_NOERROR, addrs, 40, 60, out, sizeof(out), DNS_MAX_MSG);
	assert_int_equal(n, 29 + 40 * 28);
	assert_false(out[2] & 0x02);
	assert_int_equal(out[7], 40);
	assert_int_equal(dns_answer_build(&q, DNS_RCODE_NOERROR, addrs, 40, 60, out, 20, 512),
	                 -ENOSPC);
}

static void test_forwarded_query_parses_back(void **state)
{
	struct msg m;
	struct dns_query q, back;
	uint8_t out[512];
	int n;

	query_for(&m, "Example.com", DNS_TYPE_AAAA, true, 4096, 0);
	assert_int_equal(dns_query_parse(m.d, m.n, &q, NULL), 0);
	n = dns_query_build(&q, 0xbeef, out, sizeof(out));
	assert_true(n > 0);
	assert_int_equal(dns_query_parse(out, (size_t)n, &back, NULL), 0);
	assert_int_equal(back.id, 0xbeef);
	assert_true(back.rd);
	assert_false(back.edns);
	assert_string_equal(back.name, "example.com");
	assert_int_equal(back.qtype, DNS_TYPE_AAAA);
	assert_int_equal(dns_query_build(&q, 1, out, 20), -ENOSPC);
}

/* An upstream answer for www.example.com A: CNAME to cdn.example.net (compressed), its two
 * A records, an A record of an unrelated name, and an AAAA of the target. */
static void upstream_answer(struct msg *m, struct dns_query *q)
{
	struct msg qm;

	query_for(&qm, "www.example.com", DNS_TYPE_A, false, 0, 0);
	assert_int_equal(dns_query_parse(qm.d, qm.n, q, NULL), 0);
	put_header(m, 0x4242, 0x8180, 1, 5, 0, 0);
	put_name(m, "WWW.example.com"); /* the upstream may change the case */
	put16(m, DNS_TYPE_A);
	put16(m, DNS_CLASS_IN);
	/* A record of cdn first: the CNAME comes later in the message. */
	put8(m, 3);
	put(m, "cdn", 3);
	put8(m, 7);
	put(m, "example", 7);
	put8(m, 3);
	put(m, "net", 3);
	put8(m, 0); /* at offset 33 */
	put16(m, DNS_TYPE_A);
	put16(m, DNS_CLASS_IN);
	put32(m, 300);
	put16(m, 4);
	put(m, "\x5d\xb8\xd8\x22", 4);
	/* www.example.com CNAME cdn.example.net */
	put16(m, 0xc000 | 12);
	put16(m, DNS_TYPE_CNAME);
	put16(m, DNS_CLASS_IN);
	put32(m, 60);
	put16(m, 2);
	put16(m, 0xc000 | 33);
	/* cdn.example.net A (second) */
	put16(m, 0xc000 | 33);
	put16(m, DNS_TYPE_A);
	put16(m, DNS_CLASS_IN);
	put32(m, 0x80000000u); /* "negative": taken as 0 */
	put16(m, 4);
	put(m, "\x5d\xb8\xd8\x23", 4);
	/* other.example A: not on the chain */
	put_name(m, "other.example");
	put16(m, DNS_TYPE_A);
	put16(m, DNS_CLASS_IN);
	put32(m, 60);
	put16(m, 4);
	put(m, "\x01\x02\x03\x04", 4);
	/* cdn.example.net AAAA */
	put16(m, 0xc000 | 33);
	put16(m, DNS_TYPE_AAAA);
	put16(m, DNS_CLASS_IN);
	put32(m, 30);
	put16(m, 16);
	put(m, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01", 16);
}

static void test_upstream_answer_addresses_follow_the_cname_chain(void **state)
{
	struct msg m;
	struct dns_query q;
	struct dns_addrs out;
	char text[INET6_ADDRSTRLEN];

	upstream_answer(&m, &q);
	assert_int_equal(dns_response_addrs(m.d, m.n, &q, 0x4242, &out, NULL), 0);
	assert_int_equal(out.rcode, DNS_RCODE_NOERROR);
	assert_false(out.truncated);
	assert_int_equal(out.n, 3);
	inet_ntop(AF_INET, &out.addrs[0].v4, text, sizeof(text));
	assert_string_equal(text, "93.184.216.34");
	assert_int_equal(out.addrs[0].ttl, 300);
	inet_ntop(AF_INET, &out.addrs[1].v4, text, sizeof(text));
	assert_string_equal(text, "93.184.216.35");
	assert_int_equal(out.addrs[1].ttl, 0);
	assert_int_equal(out.addrs[2].family, AF_INET6);
	inet_ntop(AF_INET6, &out.addrs[2].v6, text, sizeof(text));
	assert_string_equal(text, "2001:db8::1");
}

static void test_mismatched_or_broken_upstream_answers_are_refused(void **state)
{
	struct msg m;
	struct dns_query q, other;
	struct dns_addrs out;
	struct msg om;

	upstream_answer(&m, &q);
	assert_int_equal(dns_response_addrs(m.d, m.n, &q, 0x4243, &out, NULL), -EINVAL);
	query_for(&om, "www.example.org", DNS_TYPE_A, false, 0, 0);
	assert_int_equal(dns_query_parse(om.d, om.n, &other, NULL), 0);
	assert_int_equal(dns_response_addrs(m.d, m.n, &other, 0x4242, &out, NULL), -EINVAL);
	other = q;
	other.qtype = DNS_TYPE_AAAA;
	assert_int_equal(dns_response_addrs(m.d, m.n, &other, 0x4242, &out, NULL), -EINVAL);
	/* Every cut of the message is refused, never read past. */
	for (size_t cut = 0; cut < m.n; cut++)
		if (dns_response_addrs(m.d, cut, &q, 0x4242, &out, NULL) != -EINVAL)
			fail_msg("cut at %zu accepted", cut);
	/* An A record with 5 bytes of data. */
	upstream_answer(&m, &q);
	m.d[33 + 17 + 9] = 5; /* the first record's rdlength */
	assert_int_equal(dns_response_addrs(m.d, m.n, &q, 0x4242, &out, NULL), -EINVAL);
	/* A query is no answer. */
	assert_int_equal(dns_response_addrs(om.d, om.n, &other, 0x1234, &out, NULL), -EINVAL);
}

static void test_our_own_answer_reads_back_as_upstream(void **state)
{
	struct dns_addr addrs[] = {v4("10.1.2.3"), v4("10.1.2.4")};
	struct msg m;
	struct dns_query q;
	struct dns_addrs out;
	uint8_t buf[512];
	int n;

	query_for(&m, "example.com", DNS_TYPE_A, true, 1232, 0);
	assert_int_equal(dns_query_parse(m.d, m.n, &q, NULL), 0);
	n = dns_answer_build(&q, DNS_RCODE_NOERROR, addrs, 2, 77, buf, sizeof(buf), 512);
	assert_int_equal(dns_response_addrs(buf, (size_t)n, &q, q.id, &out, NULL), 0);
	assert_int_equal(out.n, 2);
	assert_memory_equal(&out.addrs[1].v4, &addrs[1].v4, 4);
	assert_int_equal(out.addrs[1].ttl, 77);
	n = dns_answer_build(&q, DNS_RCODE_NXDOMAIN, NULL, 0, 0, buf, sizeof(buf), 512);
	assert_int_equal(dns_response_addrs(buf, (size_t)n, &q, q.id, &out, NULL), 0);
	assert_int_equal(out.rcode, DNS_RCODE_NXDOMAIN);
	assert_int_equal(out.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_glibc_query_is_parsed),
	        cmocka_unit_test(test_edns_is_tolerated_and_sets_the_udp_limit),
	        cmocka_unit_test(test_names_are_validated),
	        cmocka_unit_test(test_malformed_queries_are_refused),
	        cmocka_unit_test(test_a_answer_echoes_the_question_and_carries_the_addresses),
	        cmocka_unit_test(test_error_answers_and_nodata_carry_no_records),
	        cmocka_unit_test(test_edns_answers_carry_an_opt_and_refuse_unknown_versions),
	        cmocka_unit_test(test_answers_too_big_for_udp_are_truncated),
	        cmocka_unit_test(test_forwarded_query_parses_back),
	        cmocka_unit_test(test_upstream_answer_addresses_follow_the_cname_chain),
	        cmocka_unit_test(test_mismatched_or_broken_upstream_answers_are_refused),
	        cmocka_unit_test(test_our_own_answer_reads_back_as_upstream),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
