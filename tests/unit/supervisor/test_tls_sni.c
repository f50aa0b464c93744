/* The ClientHello reader: real hellos captured from openssl s_client and curl on this machine,
 * fed whole, byte by byte and re-cut into records, and hand-built hellos for every refusal. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "supervisor/egress/tls_sni.h"

extern char **environ;

/* ---- capturing real hellos ---------------------------------------------------------------- */

struct capture {
	uint8_t data[8192];
	size_t len;
};

/* Bytes of the records that carry the first handshake message, judged from the record and
 * handshake headers only (independently of the code under test): 0 while incomplete. */
static size_t hello_records_end(const uint8_t *d, size_t len)
{
	size_t pos = 0, payload = 0, need = 0;

	while (pos + 5 <= len) {
		size_t rlen = (size_t)d[pos + 3] << 8 | d[pos + 4];

		if (pos + 5 + rlen > len)
			return 0;
		if (pos == 0 && rlen >= 4)
			need = 4 + ((size_t)d[6] << 16 | (size_t)d[7] << 8 | d[8]);
		payload += rlen;
		pos += 5 + rlen;
		if (need && payload >= need)
			return pos;
	}
	return 0;
}

/* Copy ARG with every "%u" replaced by PORT. */
static void substitute_port(const char *arg, unsigned port, char *out, size_t size)
{
	size_t o = 0;

	for (const char *p = arg; *p && o + 8 < size; p++) {
		if (p[0] == '%' && p[1] == 'u') {
			o += (size_t)snprintf(out + o, size - o, "%u", port);
			p++;
		} else {
			out[o++] = *p;
		}
	}
	out[o] = '\0';
}

/* Run ARGV (each "%u" in an argument replaced by the port) against a listener on 127.0.0.1
 * and keep what it sends until its ClientHello is complete. false: could not run or capture. */
static bool capture_hello(const char *const *argv, struct capture *ret)
{
	_cleanup_close_ int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	_cleanup_close_ int cfd = -EBADF;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t salen = sizeof(sa);
	char args[16][256];
	char *av[17];
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status;
	bool ok = false;

	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 1) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &salen) < 0)
		return false;
	for (size_t i = 0; i < 16; i++) {
		if (!argv[i]) {
			av[i] = NULL;
			break;
		}
		substitute_port(argv[i], ntohs(sa.sin_port), args[i], sizeof(args[i]));
		av[i] = args[i];
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	if (posix_spawnp(&pid, av[0], &fa, NULL, av, environ) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		return false;
	}
	posix_spawn_file_actions_destroy(&fa);

	struct pollfd pfd = {.fd = lfd, .events = POLLIN};
	if (poll(&pfd, 1, 10000) == 1)
		cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	ret->len = 0;
	while (cfd >= 0 && ret->len < sizeof(ret->data)) {
		ssize_t n;

		pfd = (struct pollfd){.fd = cfd, .events = POLLIN};
		if (poll(&pfd, 1, 10000) != 1)
			break;
		n = read(cfd, ret->data + ret->len, sizeof(ret->data) - ret->len);
		if (n <= 0)
			break;
		ret->len += (size_t)n;
		if (hello_records_end(ret->data, ret->len)) {
			ret->len = hello_records_end(ret->data, ret->len);
			ok = true;
			break;
		}
	}
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	return ok;
}

static void capture_or_fail(const char *const *argv, struct capture *c)
{
	if (!capture_hello(argv, c))
		fail_msg("could not capture a ClientHello from %s (is it installed? "
		         "scripts/install-deps adds it)",
		         argv[0]);
}

/* ---- feeding ------------------------------------------------------------------------------ */

/* Every proper prefix must ask for more; the whole must give WANT (and HOST when found). */
static void check_every_prefix(const uint8_t *d, size_t len, enum tls_sni_status want,
                               const char *host)
{
	char got[DOMAIN_HOST_MAX + 1];

	for (size_t i = 0; i < len; i++) {
		enum tls_sni_status s = tls_sni_parse(d, i, got, NULL);
		if (s != TLS_SNI_NEED_MORE)
			fail_msg("prefix of %zu/%zu bytes: %s", i, len,
			         tls_sni_status_to_string(s));
	}
	strcpy(got, "-");
	enum tls_sni_status s = tls_sni_parse(d, len, got, NULL);
	if (s != want)
		fail_msg("%zu bytes: expected %s, got %s", len, tls_sni_status_to_string(want),
		         tls_sni_status_to_string(s));
	if (want == TLS_SNI_FOUND)
		assert_string_equal(got, host);
	else
		assert_string_equal(got, "-");
}

/* Re-cut the handshake message carried by the records in IN into records of at most CHUNK
 * bytes of payload; returns the new length. */
static size_t recut(const uint8_t *in, size_t len, size_t chunk, uint8_t *out, size_t out_size)
{
	static uint8_t msg[40000];
	size_t mlen = 0, pos = 0, o = 0;

	while (pos + 5 <= len) {
		size_t rlen = (size_t)in[pos + 3] << 8 | in[pos + 4];
		assert_true(mlen + rlen <= sizeof(msg) && pos + 5 + rlen <= len);
		memcpy(msg + mlen, in + pos + 5, rlen);
		mlen += rlen;
		pos += 5 + rlen;
	}
	for (size_t off = 0; off < mlen; off += chunk) {
		size_t n = mlen - off < chunk ? mlen - off : chunk;
		assert_true(o + 5 + n <= out_size);
		out[o++] = 22;
		out[o++] = 3;
		out[o++] = 1;
		out[o++] = (uint8_t)(n >> 8);
		out[o++] = (uint8_t)n;
		memcpy(out + o, msg + off, n);
		o += n;
	}
	return o;
}

static void check_real_hello(const char *const *argv, enum tls_sni_status want, const char *host)
{
	struct capture c;
	uint8_t cut[16384];
	size_t n;

	capture_or_fail(argv, &c);
	check_every_prefix(c.data, c.len, want, host);
	/* The same hello spread over records of 100 and of 7 bytes. */
	n = recut(c.data, c.len, 100, cut, sizeof(cut));
	check_every_prefix(cut, n, want, host);
	if (c.len < 32 * 7) /* with 7-byte records, a small hello still fits in 32 records */
		return;
	n = recut(c.data, c.len, 7, cut, sizeof(cut));
	assert_int_equal(tls_sni_parse(cut, n, NULL, NULL), TLS_SNI_MALFORMED);
}

static void test_openssl_tls13_hello_names_the_server(void **state)
{
	const char *const argv[] = {"openssl",     "s_client",         "-connect", "127.0.0.1:%u",
	                            "-servername", "Api.Example.TEST", NULL};
	check_real_hello(argv, TLS_SNI_FOUND, "api.example.test");
}

static void test_openssl_tls12_hello_names_the_server(void **state)
{
	const char *const argv[] = {
	        "openssl",     "s_client",           "-tls1_2", "-connect", "127.0.0.1:%u",
	        "-servername", "tls12.example.test", NULL};
	check_real_hello(argv, TLS_SNI_FOUND, "tls12.example.test");
}

static void test_openssl_hello_without_servername_has_none(void **state)
{
	const char *const argv[] = {"openssl",      "s_client",      "-connect",
	                            "127.0.0.1:%u", "-noservername", NULL};
	check_real_hello(argv, TLS_SNI_ABSENT, NULL);
}

static void test_curl_hello_names_the_server(void **state)
{
	const char *const argv[] = {"curl",
	                            "-sk",
	                            "--max-time",
	                            "5",
	                            "--resolve",
	                            "curl.example.test:%u:127.0.0.1",
	                            "https://curl.example.test:%u/",
	                            NULL};
	check_real_hello(argv, TLS_SNI_FOUND, "curl.example.test");
}

/* ---- hand-built hellos -------------------------------------------------------------------- */

struct buf {
	uint8_t d[40000];
	size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
	assert_true(b->n + n <= sizeof(b->d));
	memcpy(b->d + b->n, p, n);
	b->n += n;
}

static void put8(struct buf *b, unsigned v)
{
	uint8_t x = (uint8_t)v;
	put(b, &x, 1);
}

static void put16(struct buf *b, unsigned v)
{
	put8(b, v >> 8);
	put8(b, v);
}

/* server_name extension with one entry per name (type 0). */
static void put_sni(struct buf *b, const char *const *names, size_t n_names)
{
	size_t list = 0;

	for (size_t i = 0; i < n_names; i++)
		list += 3 + strlen(names[i]);
	put16(b, 0);
	put16(b, (unsigned)list + 2);
	put16(b, (unsigned)list);
	for (size_t i = 0; i < n_names; i++) {
		put8(b, 0);
		put16(b, (unsigned)strlen(names[i]));
		put(b, names[i], strlen(names[i]));
	}
}

/* A ClientHello body with extension block EXTS (NULL: no extension block at all). */
static void put_hello_body(struct buf *b, const struct buf *exts, unsigned session_id_len)
{
	uint8_t random[32] = {0};

	put16(b, 0x0303);
	put(b, random, sizeof(random));
	put8(b, session_id_len);
	for (unsigned i = 0; i < session_id_len; i++)
		put8(b, 0xaa);
	put16(b, 4);
	put16(b, 0x1301);
	put16(b, 0xc02f);
	put8(b, 1);
	put8(b, 0);
	if (exts) {
		put16(b, (unsigned)exts->n);
		put(b, exts->d, exts->n);
	}
}

/* Wrap BODY as a handshake message of TYPE in one record. */
static void wrap(struct buf *out, unsigned type, const struct buf *body)
{
	out->n = 0;
	put8(out, 22);
	put16(out, 0x0301);
	put16(out, (unsigned)body->n + 4);
	put8(out, type);
	put8(out, (unsigned)(body->n >> 16));
	put16(out, (unsigned)body->n);
	put(out, body->d, body->n);
}

static enum tls_sni_status hello_with_names(const char *const *names, size_t n, char *host)
{
	static struct buf exts, body, rec;

	exts.n = body.n = 0;
	put16(&exts, 0x002b); /* supported_versions, so the name is not the only extension */
	put16(&exts, 3);
	put8(&exts, 2);
	put16(&exts, 0x0304);
	put_sni(&exts, names, n);
	put_hello_body(&body, &exts, 32);
	wrap(&rec, 1, &body);
	return tls_sni_parse(rec.d, rec.n, host, NULL);
}

static void test_server_names_are_validated_and_normalised(void **state)
{
	static const struct {
		const char *name;
		const char *want; /* NULL: malformed */
	} cases[] = {
	        {"example.com", "example.com"},
	        {"WWW.Example.Com", "www.example.com"},
	        {"example.com.", "example.com"},
	        {"xn--nxasmq6b.example", "xn--nxasmq6b.example"},
	        {"10.0.0.1", NULL},
	        {"::1", NULL},
	        {"*.example.com", NULL},
	        {"bad_name.example.com", NULL},
	        {"a..b", NULL},
	        {"", NULL},
	        {"example.com:443", NULL},
	        {"exa mple.com", NULL},
	        {"-lead.example.com", NULL},
	};
	char host[DOMAIN_HOST_MAX + 1];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *names[] = {cases[i].name};
		enum tls_sni_status s;

		strcpy(host, "-");
		s = hello_with_names(names, 1, host);
		if (cases[i].want && (s != TLS_SNI_FOUND || strcmp(host, cases[i].want) != 0))
			fail_msg("\"%s\": got %s \"%s\"", cases[i].name,
			         tls_sni_status_to_string(s), host);
		if (!cases[i].want && (s != TLS_SNI_MALFORMED || strcmp(host, "-") != 0))
			fail_msg("\"%s\": accepted as %s \"%s\"", cases[i].name,
			         tls_sni_status_to_string(s), host);
	}
}

static void test_a_name_with_a_nul_byte_is_malformed(void **state)
{
	const char *names[] = {"evil.com\0.good.com"};
	struct buf exts = {.n = 0}, body = {.n = 0}, rec;
	const char name[] = "evil.com\0.good.com";

	(void)names;
	put16(&exts, 0);
	put16(&exts, (unsigned)sizeof(name) - 1 + 5);
	put16(&exts, (unsigned)sizeof(name) - 1 + 3);
	put8(&exts, 0);
	put16(&exts, (unsigned)sizeof(name) - 1);
	put(&exts, name, sizeof(name) - 1);
	put_hello_body(&body, &exts, 0);
	wrap(&rec, 1, &body);
	assert_int_equal(tls_sni_parse(rec.d, rec.n, NULL, NULL), TLS_SNI_MALFORMED);
}

static void test_longest_name_is_accepted_and_one_more_is_not(void **state)
{
	char name[300], host[DOMAIN_HOST_MAX + 1];
	const char *names[] = {name};

	for (size_t i = 0; i < 253; i++)
		name[i] = (i % 4 == 3) ? '.' : 'a';
	name[253] = '\0';
	assert_int_equal(hello_with_names(names, 1, host), TLS_SNI_FOUND);
	assert_string_equal(host, name);
	name[253] = 'a';
	name[254] = '\0';
	assert_int_equal(hello_with_names(names, 1, host), TLS_SNI_MALFORMED);
}

static void test_two_host_names_or_two_sni_extensions_are_malformed(void **state)
{
	const char *two[] = {"a.example", "b.example"};
	const char *one[] = {"a.example"};
	struct buf exts = {.n = 0}, body = {.n = 0}, rec;

	assert_int_equal(hello_with_names(two, 2, NULL), TLS_SNI_MALFORMED);
	put_sni(&exts, one, 1);
	put_sni(&exts, one, 1);
	put_hello_body(&body, &exts, 0);
	wrap(&rec, 1, &body);
	assert_int_equal(tls_sni_parse(rec.d, rec.n, NULL, NULL), TLS_SNI_MALFORMED);
}

static void test_hello_without_extensions_has_no_name(void **state)
{
	struct buf body = {.n = 0}, rec;
	struct buf exts = {.n = 0};

	put_hello_body(&body, NULL, 0);
	wrap(&rec, 1, &body);
	check_every_prefix(rec.d, rec.n, TLS_SNI_ABSENT, NULL);
	/* An empty extension block is no name either. */
	body.n = 0;
	put_hello_body(&body, &exts, 0);
	wrap(&rec, 1, &body);
	assert_int_equal(tls_sni_parse(rec.d, rec.n, NULL, NULL), TLS_SNI_ABSENT);
}

static void test_other_protocols_are_not_tls(void **state)
{
	static const char *const inputs[] = {
	        "GET / HTTP/1.1\r\n",
	        "CONNECT example.com:443 HTTP/1.1\r\n",
	        "SSH-2.0-OpenSSH_9.2\r\n",
	        "\x80\x2e\x01\x00\x02", /* SSLv2-style hello */
	        "\x16\x02\x00",
	        "\x16\x03\x05",
	};
	struct cl_error err = {{0}};

	for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
		enum tls_sni_status s = tls_sni_parse(inputs[i], strlen(inputs[i]), NULL, &err);
		if (s != TLS_SNI_NOT_TLS)
			fail_msg("input %zu: %s", i, tls_sni_status_to_string(s));
	}
	assert_non_null(strstr(err.msg, "TLS"));
	/* One byte of a handshake record, or none at all, cannot be judged yet. */
	assert_int_equal(tls_sni_parse("\x16", 1, NULL, NULL), TLS_SNI_NEED_MORE);
	assert_int_equal(tls_sni_parse("", 0, NULL, NULL), TLS_SNI_NEED_MORE);
}

/* Apply EDIT to a good one-record hello and expect MALFORMED. */
static void check_broken(const char *what, void (*edit)(struct buf *rec))
{
	const char *names[] = {"ok.example"};
	struct buf exts = {.n = 0}, body = {.n = 0}, rec;
	struct cl_error err = {{0}};
	enum tls_sni_status s;

	put_sni(&exts, names, 1);
	put_hello_body(&body, &exts, 0);
	wrap(&rec, 1, &body);
	edit(&rec);
	s = tls_sni_parse(rec.d, rec.n, NULL, &err);
	if (s != TLS_SNI_MALFORMED)
		fail_msg("%s: got %s", what, tls_sni_status_to_string(s));
	if (!strstr(err.msg, "malformed"))
		fail_msg("%s: message \"%s\"", what, err.msg);
}

/* Offsets in the one-record hello built by check_broken(): record header 5, handshake header
 * 4, version 2, random 32, session id length at 43 (0), cipher suites length at 44 (4), four
 * bytes of suites, compression at 50 (1, 0), extensions length at 52, SNI extension at 54. */
static void edit_record_len_zero(struct buf *r)
{
	r->d[3] = 0;
	r->d[4] = 0;
}
static void edit_record_too_long(struct buf *r)
{
	r->d[3] = 0x40;
	r->d[4] = 0x01;
}
static void edit_not_client_hello(struct buf *r)
{
	r->d[5] = 2;
}
static void edit_hello_over_16k(struct buf *r)
{
	r->d[6] = 0;
	r->d[7] = 0x40;
	r->d[8] = 0x01;
}
static void edit_session_id_33(struct buf *r)
{
	r->d[43] = 33;
}
static void edit_odd_cipher_list(struct buf *r)
{
	r->d[45] = 3;
}
static void edit_no_compression(struct buf *r)
{
	r->d[50] = 0;
}
static void edit_extensions_too_long(struct buf *r)
{
	r->d[53]++;
}
static void edit_extensions_too_short(struct buf *r)
{
	r->d[53]--;
}
static void edit_sni_list_len(struct buf *r)
{
	r->d[59]++;
}
static void edit_sni_name_len(struct buf *r)
{
	r->d[62] = 200;
}
static void edit_sni_empty_list(struct buf *r)
{
	/* extension of 2 bytes holding an empty list */
	r->d[56] = 0;
	r->d[57] = 2;
	r->d[58] = 0;
	r->d[59] = 0;
	r->n = 60;
	r->d[52] = 0;
	r->d[53] = 6;
	size_t body = r->n - 9;
	r->d[6] = 0;
	r->d[7] = (uint8_t)(body >> 8);
	r->d[8] = (uint8_t)body;
	r->d[3] = (uint8_t)((body + 4) >> 8);
	r->d[4] = (uint8_t)(body + 4);
}
static void edit_alert_in_between(struct buf *r)
{
	/* The hello claims more than its record holds, and the next record is an alert. */
	size_t body = (size_t)r->d[7] << 8 | r->d[8];
	body += 10;
	r->d[7] = (uint8_t)(body >> 8);
	r->d[8] = (uint8_t)body;
	put8(r, 21);
	put16(r, 0x0303);
	put16(r, 2);
	put16(r, 0x0228);
}

static void test_broken_length_fields_are_malformed(void **state)
{
	check_broken("record length 0", edit_record_len_zero);
	check_broken("record above 16384", edit_record_too_long);
	check_broken("not a ClientHello", edit_not_client_hello);
	check_broken("hello above 16 KiB", edit_hello_over_16k);
	check_broken("session id of 33", edit_session_id_33);
	check_broken("odd cipher suite list", edit_odd_cipher_list);
	check_broken("no compression method", edit_no_compression);
	check_broken("extensions longer than the message", edit_extensions_too_long);
	check_broken("extensions shorter than the message", edit_extensions_too_short);
	check_broken("server_name list length", edit_sni_list_len);
	check_broken("server name length", edit_sni_name_len);
	check_broken("empty server_name list", edit_sni_empty_list);
	check_broken("alert before the hello ended", edit_alert_in_between);
}

static void test_a_hello_of_16k_is_read_and_more_records_than_the_limit_are_not(void **state)
{
	const char *names[] = {"big.example"};
	static struct buf exts, body, rec, out;
	char host[DOMAIN_HOST_MAX + 1];
	size_t pad;

	/* A padding extension (21) that brings the body to exactly 16 KiB, over two records. */
	exts.n = body.n = out.n = 0;
	put_sni(&exts, names, 1);
	put_hello_body(&body, &exts, 0);
	pad = TLS_SNI_MAX_HELLO - body.n - 4;
	exts.n = 0;
	put_sni(&exts, names, 1);
	put16(&exts, 21);
	put16(&exts, (unsigned)pad);
	for (size_t i = 0; i < pad; i++)
		put8(&exts, 0);
	body.n = 0;
	put_hello_body(&body, &exts, 0);
	assert_int_equal(body.n, TLS_SNI_MAX_HELLO);
	wrap(&rec, 1, &body); /* one "record" of 16388 bytes: too long for one, so re-cut */
	out.n = recut(rec.d, rec.n, 16384, out.d, sizeof(out.d));
	assert_int_equal(tls_sni_parse(out.d, out.n, host, NULL), TLS_SNI_FOUND);
	assert_string_equal(host, "big.example");
	assert_true(out.n <= TLS_SNI_MAX_INPUT);

	/* 33 records of one byte each before the hello completes: refused. */
	exts.n = body.n = 0;
	put_sni(&exts, names, 1);
	put_hello_body(&body, &exts, 0);
	wrap(&rec, 1, &body);
	out.n = recut(rec.d, rec.n, 1, out.d, sizeof(out.d));
	assert_int_equal(tls_sni_parse(out.d, 32 * 6, NULL, NULL), TLS_SNI_NEED_MORE);
	assert_int_equal(tls_sni_parse(out.d, 33 * 6, NULL, NULL), TLS_SNI_MALFORMED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_openssl_tls13_hello_names_the_server),
	        cmocka_unit_test(test_openssl_tls12_hello_names_the_server),
	        cmocka_unit_test(test_openssl_hello_without_servername_has_none),
	        cmocka_unit_test(test_curl_hello_names_the_server),
	        cmocka_unit_test(test_server_names_are_validated_and_normalised),
	        cmocka_unit_test(test_a_name_with_a_nul_byte_is_malformed),
	        cmocka_unit_test(test_longest_name_is_accepted_and_one_more_is_not),
	        cmocka_unit_test(test_two_host_names_or_two_sni_extensions_are_malformed),
	        cmocka_unit_test(test_hello_without_extensions_has_no_name),
	        cmocka_unit_test(test_other_protocols_are_not_tls),
	        cmocka_unit_test(test_broken_length_fields_are_malformed),
	        cmocka_unit_test(
	                test_a_hello_of_16k_is_read_and_more_records_than_the_limit_are_not),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
