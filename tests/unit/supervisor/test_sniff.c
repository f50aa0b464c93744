/* Naming a transparent connection from its first bytes: what names it, when to read on, and
 * when the proxy must fall back to the address (no byte before EOF, the deadline, another
 * protocol). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "supervisor/egress/sniff.h"

/* A minimal TLS 1.2 ClientHello naming NAME in one record; returns its length. */
static size_t client_hello(const char *name, uint8_t *out)
{
	uint8_t body[512];
	size_t n = 0, nlen = strlen(name), b = 0;

	body[n++] = 3, body[n++] = 3; /* client_version */
	memset(body + n, 0x5a, 32), n += 32;
	body[n++] = 0;                                                    /* session id */
	body[n++] = 0, body[n++] = 2, body[n++] = 0x13, body[n++] = 0x01; /* one suite */
	body[n++] = 1, body[n++] = 0;                                     /* null compression */
	body[n++] = (uint8_t)((nlen + 9) >> 8), body[n++] = (uint8_t)(nlen + 9);
	body[n++] = 0, body[n++] = 0; /* extension server_name */
	body[n++] = (uint8_t)((nlen + 5) >> 8), body[n++] = (uint8_t)(nlen + 5);
	body[n++] = (uint8_t)((nlen + 3) >> 8), body[n++] = (uint8_t)(nlen + 3);
	body[n++] = 0; /* host_name */
	body[n++] = (uint8_t)(nlen >> 8), body[n++] = (uint8_t)nlen;
	memcpy(body + n, name, nlen), n += nlen;
	out[b++] = 22, out[b++] = 3, out[b++] = 1; /* handshake record */
	out[b++] = (uint8_t)((n + 4) >> 8), out[b++] = (uint8_t)(n + 4);
	out[b++] = 1, out[b++] = 0, out[b++] = (uint8_t)(n >> 8), out[b++] = (uint8_t)n;
	memcpy(out + b, body, n);
	return b + n;
}

static enum sniff_verdict sniff_text(const char *text, bool final, struct sniff_name *ret)
{
	return sniff_name((const uint8_t *)text, strlen(text), final, ret);
}

static void test_no_byte_yet_waits_and_eof_before_any_byte_falls_back(void **state)
{
	struct sniff_name n = {.source = "untouched"};
	uint8_t none[1] = {0};

	assert_int_equal(sniff_name(none, 0, false, &n), SNIFF_WAIT);
	/* EOF (or the deadline) before the client sent anything: decide on the address now. */
	assert_int_equal(sniff_name(none, 0, true, &n), SNIFF_FALLBACK);
	assert_string_equal(n.source, "untouched");
}

static void test_http_host_names_the_connection(void **state)
{
	struct sniff_name n;

	assert_int_equal(sniff_text("GET /x HTTP/1.1\r\nHost: Web.Test:8080\r\nAccept: */*\r\n\r\n",
	                            false, &n),
	                 SNIFF_NAMED);
	assert_string_equal(n.host, "web.test");
	assert_string_equal(n.source, "http-host");
}

static void test_partial_http_head_waits_until_final(void **state)
{
	static const char part[] = "GET / HTTP/1.1\r\nHost: web.te";
	struct sniff_name n;

	assert_int_equal(sniff_text(part, false, &n), SNIFF_WAIT);
	/* The client half-closed (or the deadline passed) mid-head: no name will come. */
	assert_int_equal(sniff_text(part, true, &n), SNIFF_FALLBACK);
}

static void test_http_without_a_host_name_falls_back_at_once(void **state)
{
	struct sniff_name n;

	assert_int_equal(sniff_text("GET / HTTP/1.1\r\nHost: 10.1.2.3\r\n\r\n", false, &n),
	                 SNIFF_FALLBACK);
	assert_int_equal(sniff_text("GET / HTTP/1.0\r\n\r\n", false, &n), SNIFF_FALLBACK);
}

static void test_tls_sni_names_it_and_a_partial_hello_waits(void **state)
{
	uint8_t hello[600];
	size_t len = client_hello("Api.Example.test", hello);
	struct sniff_name n;

	assert_int_equal(sniff_name(hello, len, false, &n), SNIFF_NAMED);
	assert_string_equal(n.host, "api.example.test");
	assert_string_equal(n.source, "sni");
	for (size_t cut = 1; cut < len; cut += 7) {
		assert_int_equal(sniff_name(hello, cut, false, &n), SNIFF_WAIT);
		assert_int_equal(sniff_name(hello, cut, true, &n), SNIFF_FALLBACK);
	}
}

static void test_other_protocols_fall_back(void **state)
{
	/* A postgres StartupMessage and raw binary: no name, decided on the address at once. */
	static const uint8_t pg[] = {0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f};
	static const uint8_t raw[] = {0x00, 0x01, 0xfe, 'S', 'S', 'H', '?', 0x00};
	struct sniff_name n;

	assert_int_equal(sniff_name(pg, sizeof(pg), false, &n), SNIFF_FALLBACK);
	assert_int_equal(sniff_name(raw, sizeof(raw), false, &n), SNIFF_FALLBACK);
	/* A client that speaks a line protocol first: never waits past FINAL. */
	assert_int_equal(sniff_text("EHLO me\r\n", true, &n), SNIFF_FALLBACK);
	assert_int_equal(sniff_text("SSH-2.0-OpenSSH_9.2\r\n", true, &n), SNIFF_FALLBACK);
}

static void test_final_never_waits(void **state)
{
	static const char *const inputs[] = {
	        "G", "GET", "GET / HTTP/1.1\r\n", "\x16", "\x16\x03\x01\x00", "SSH-2.0-x", "\r\n",
	};
	struct sniff_name n;

	for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++)
		assert_int_not_equal(sniff_text(inputs[i], true, &n), SNIFF_WAIT);
	assert_string_equal(sniff_verdict_to_string(SNIFF_FALLBACK), "fallback");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_no_byte_yet_waits_and_eof_before_any_byte_falls_back),
	        cmocka_unit_test(test_http_host_names_the_connection),
	        cmocka_unit_test(test_partial_http_head_waits_until_final),
	        cmocka_unit_test(test_http_without_a_host_name_falls_back_at_once),
	        cmocka_unit_test(test_tls_sni_names_it_and_a_partial_hello_waits),
	        cmocka_unit_test(test_other_protocols_fall_back),
	        cmocka_unit_test(test_final_never_waits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
