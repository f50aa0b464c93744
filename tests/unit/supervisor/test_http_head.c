/* The proxy's HTTP head parser, its helpers and its own answers. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "supervisor/egress/http_head.h"

static struct http_request_head head;

static int parse(const char *text)
{
	return http_head_parse(text, strlen(text), &head, NULL);
}

static void test_connect_head_is_parsed_and_its_length_returned(void **state)
{
	const char *req = "CONNECT api.example.com:443 HTTP/1.1\r\n"
	                  "Host: api.example.com:443\r\n"
	                  "Proxy-Authorization: Basic Y2xvaXN0ZXI6c2VjcmV0\r\n"
	                  "User-Agent: curl/7.88.1\r\n"
	                  "\r\n"
	                  "\x16\x03\x01 tls follows";
	int n = parse(req);

	assert_int_equal(n, strstr(req, "\x16") - req);
	assert_int_equal(head.head_len, (size_t)n);
	assert_true(head.connect);
	assert_int_equal(head.method_len, 7);
	assert_memory_equal(head.target, "api.example.com:443", head.target_len);
	assert_int_equal(head.version_minor, 1);
	assert_int_equal(head.n_headers, 3);
	assert_non_null(head.host);
	assert_memory_equal(head.host->value, "api.example.com:443", head.host->value_len);
	assert_non_null(head.proxy_auth);
	assert_ptr_equal(head.proxy_auth, http_head_find(&head, "proxy-AUTHORIZATION"));
	assert_int_equal(head.content_length, -1);
	assert_false(head.chunked);
	assert_null(http_head_find(&head, "Cookie"));
}

static void test_every_prefix_of_a_head_asks_for_more(void **state)
{
	const char *req = "GET http://example.com/a?b HTTP/1.1\r\nHost: example.com\r\n"
	                  "Content-Length: 5\r\n\r\nhello";
	size_t head_len = strlen(req) - 5;

	for (size_t i = 0; i < head_len; i++)
		if (http_head_parse(req, i, &head, NULL) != 0)
			fail_msg("prefix of %zu bytes decided", i);
	assert_int_equal(http_head_parse(req, head_len, &head, NULL), (int)head_len);
	assert_int_equal(head.content_length, 5);
	assert_false(head.connect);
}

static void test_values_are_trimmed_and_names_compared_without_case(void **state)
{
	assert_true(parse("GET / HTTP/1.0\r\nhOsT: \t example.com \t\r\nX-Empty:\r\n\r\n") > 0);
	assert_int_equal(head.version_minor, 0);
	assert_memory_equal(head.host->value, "example.com", head.host->value_len);
	assert_int_equal(head.host->value_len, 11);
	assert_int_equal(http_head_find(&head, "x-empty")->value_len, 0);
	/* obs-text in a value is kept (latin-1 from old clients), not a control byte */
	assert_true(parse("GET / HTTP/1.1\r\nHost: a\r\nX: caf\xe9\r\n\r\n") > 0);
}

static void test_framing_headers_are_checked(void **state)
{
	static const struct {
		const char *headers;
		int want;       /* > 0: accepted */
		int64_t length; /* when accepted */
		bool chunked;
	} cases[] = {
	        {"Content-Length: 10\r\n", 1, 10, false},
	        {"Content-Length: 10\r\nContent-Length: 10\r\n", 1, 10, false},
	        {"Content-Length: 10, 10\r\n", 1, 10, false},
	        {"Content-Length: 10\r\nContent-Length: 11\r\n", -EINVAL, 0, false},
	        {"Content-Length: 10, 11\r\n", -EINVAL, 0, false},
	        {"Content-Length: -1\r\n", -EINVAL, 0, false},
	        {"Content-Length: +1\r\n", -EINVAL, 0, false},
	        {"Content-Length: 1 0\r\n", -EINVAL, 0, false},
	        {"Content-Length: 0x10\r\n", -EINVAL, 0, false},
	        {"Content-Length: \r\n", -EINVAL, 0, false},
	        {"Content-Length: 10,\r\n", -EINVAL, 0, false},
	        {"Content-Length: 99999999999999999999\r\n", -EINVAL, 0, false},
	        {"Transfer-Encoding: chunked\r\n", 1, -1, true},
	        {"Transfer-Encoding: gzip, Chunked\r\n", 1, -1, true},
	        {"Transfer-Encoding: chunked, gzip\r\n", -EINVAL, 0, false},
	        {"Transfer-Encoding: gzip\r\n", -EINVAL, 0, false},
	        {"Transfer-Encoding: \r\n", -EINVAL, 0, false},
	        {"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n", -EINVAL, 0, false},
	        {"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n", -EINVAL, 0, false},
	        {"Host: b\r\n", -EINVAL, 0, false},
	        {"Proxy-Authorization: Basic YTpi\r\nProxy-Authorization: Basic YTpj\r\n", -EINVAL,
	         0, false},
	};
	char req[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r;

		snprintf(req, sizeof(req), "POST /x HTTP/1.1\r\nHost: a\r\n%s\r\n",
		         cases[i].headers);
		r = parse(req);
		if (cases[i].want > 0) {
			if (r <= 0)
				fail_msg("%s: refused (%d)", cases[i].headers, r);
			assert_int_equal(head.content_length, cases[i].length);
			assert_int_equal(head.chunked, cases[i].chunked);
		} else if (r != cases[i].want) {
			fail_msg("%s: expected %d, got %d", cases[i].headers, cases[i].want, r);
		}
	}
	/* Transfer-Encoding means nothing to an HTTP/1.0 peer: refused. */
	assert_int_equal(parse("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"), -EINVAL);
}

static void test_malformed_heads_are_refused_with_a_reason(void **state)
{
	static const struct {
		const char *req;
		int want;
		const char *msg_part;
	} cases[] = {
	        {"GET / HTTP/1.1\r\nHost: a\nX: y\r\n\r\n", -EINVAL, "bare CR or LF"},
	        {"GET / HTTP/1.1\r\nHost: a\rX: y\r\n\r\n", -EINVAL, "bare CR or LF"},
	        {"GET / HTTP/1.1\nHost: a\r\n\r\n", -EINVAL, "bare CR or LF"},
	        {"GET / HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n", -EINVAL, "NUL"},
	        {"GET / HTTP/1.1\r\nHost: a\r\nX: a\x01\r\n\r\n", -EINVAL, "control byte"},
	        {"GET / HTTP/1.1\r\nHost: a\r\nX: a\x7f\r\n\r\n", -EINVAL, "control byte"},
	        {"GET / HTTP/1.1\r\nHost: a\r\nX: y\r\n z\r\n\r\n", -EINVAL, "obs-fold"},
	        {"GET / HTTP/1.1\r\nHost: a\r\nX : y\r\n\r\n", -EINVAL, "bad name"},
	        {"GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", -EINVAL, "missing ':'"},
	        {"GET / HTTP/1.1\r\nHost: a\r\n: y\r\n\r\n", -EINVAL, "bad name"},
	        {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", -EINVAL, "more than one Host"},
	        {"GET / HTTP/1.1\r\n\r\n", -EINVAL, "without a Host"},
	        {"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", -EINVAL, "bad target"},
	        {"GET / HTTP/1.1 \r\nHost: a\r\n\r\n", -EINVAL, "version"},
	        {"GET /\r\nHost: a\r\n\r\n", -EINVAL, "bad target"},
	        {"GET / HTTP/1.2\r\nHost: a\r\n\r\n", -EPROTONOSUPPORT, "not supported"},
	        {"GET / HTTP/2.0\r\nHost: a\r\n\r\n", -EPROTONOSUPPORT, "not supported"},
	        {"GET / http/1.1\r\nHost: a\r\n\r\n", -EINVAL, "version"},
	        {"GET / HTTP/1.10\r\nHost: a\r\n\r\n", -EINVAL, "version"},
	        {"G(T / HTTP/1.1\r\nHost: a\r\n\r\n", -EINVAL, "bad method"},
	        {"\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", -EINVAL, "bad method"},
	        {"GET /\x7f HTTP/1.1\r\nHost: a\r\n\r\n", -EINVAL, "bad target"},
	        {"GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", -EINVAL, "version"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cl_error err = {{0}};
		size_t len = strlen(cases[i].req);
		int r;

		/* The NUL case carries its NUL inside the text. */
		if (strstr(cases[i].msg_part, "NUL"))
			len = sizeof("GET / HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n") - 1;
		r = http_head_parse(cases[i].req, len, &head, &err);
		if (r != cases[i].want)
			fail_msg("case %zu: expected %d, got %d (%s)", i, cases[i].want, r,
			         err.msg);
		if (!strstr(err.msg, cases[i].msg_part))
			fail_msg("case %zu: message \"%s\" lacks \"%s\"", i, err.msg,
			         cases[i].msg_part);
	}
}

static void test_garbage_is_refused_before_the_head_ends(void **state)
{
	/* A TLS hello or binary sent to the proxy port need not wait for 16 KiB. */
	assert_int_equal(http_head_parse("\x16\x03\x01\x02", 4, &head, NULL), -EINVAL);
	assert_int_equal(http_head_parse("GET \0", 5, &head, NULL), -EINVAL);
	assert_int_equal(http_head_parse("GE", 2, &head, NULL), 0);
}

static void test_limits_on_size_and_header_count(void **state)
{
	static char req[HTTP_HEAD_MAX_BYTES + 200];
	size_t len;
	int r;

	/* 100 headers pass, 101 do not. */
	for (int n = 100; n <= 101; n++) {
		len = (size_t)snprintf(req, sizeof(req), "GET / HTTP/1.1\r\n");
		for (int i = 0; i < n - 1; i++)
			len += (size_t)snprintf(req + len, sizeof(req) - len, "X-%d: v\r\n", i);
		len += (size_t)snprintf(req + len, sizeof(req) - len, "Host: a\r\n\r\n");
		r = http_head_parse(req, len, &head, NULL);
		if (n == 100)
			assert_int_equal(r, (int)len);
		else
			assert_int_equal(r, -EMSGSIZE);
	}
	/* A head of exactly the limit passes; one byte more is refused, complete or not. */
	len = (size_t)snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: a\r\nX: ");
	memset(req + len, 'v', HTTP_HEAD_MAX_BYTES - len - 4);
	memcpy(req + HTTP_HEAD_MAX_BYTES - 4, "\r\n\r\n", 4);
	assert_int_equal(http_head_parse(req, HTTP_HEAD_MAX_BYTES, &head, NULL),
	                 HTTP_HEAD_MAX_BYTES);
	memmove(req + len + 1, req + len, HTTP_HEAD_MAX_BYTES - len);
	assert_int_equal(http_head_parse(req, HTTP_HEAD_MAX_BYTES + 1, &head, NULL), -EMSGSIZE);
	assert_int_equal(http_head_parse(req, HTTP_HEAD_MAX_BYTES, &head, NULL), 0);
	memset(req, 'a', sizeof(req));
	memcpy(req, "GET /", 5);
	assert_int_equal(http_head_parse(req, sizeof(req), &head, NULL), -EMSGSIZE);
}

static void test_authorities_split_host_and_port(void **state)
{
	static const struct {
		const char *text;
		uint16_t default_port;
		const char *host; /* NULL: refused */
		uint16_t port;
		bool ip;
	} cases[] = {
	        {"example.com:443", 0, "example.com", 443, false},
	        {"Example.COM.:8443", 0, "example.com", 8443, false},
	        {"10.0.0.1:80", 0, "10.0.0.1", 80, true},
	        {"127.1:22", 0, "127.0.0.1", 22, true},
	        {"[::1]:443", 0, "::1", 443, true},
	        {"[2001:DB8::1]:1", 0, "2001:db8::1", 1, true},
	        {"[::ffff:127.0.0.1]:443", 0, "127.0.0.1", 443, true},
	        {"example.com", 80, "example.com", 80, false},
	        {"[::1]", 80, "::1", 80, true},
	        {"example.com", 0, NULL, 0, false},
	        {"example.com:", 0, NULL, 0, false},
	        {"example.com:0", 0, NULL, 0, false},
	        {"example.com:65536", 0, NULL, 0, false},
	        {"example.com:008080", 0, NULL, 0, false},
	        {"example.com:+443", 0, NULL, 0, false},
	        {"example.com:44 3", 0, NULL, 0, false},
	        {"::1:443", 0, NULL, 0, false},
	        {"[::1]443", 0, NULL, 0, false},
	        {"[::1", 0, NULL, 0, false},
	        {"[notv6]:443", 0, NULL, 0, false},
	        {"user@example.com:443", 0, NULL, 0, false},
	        {"*.example.com:443", 0, NULL, 0, false},
	        {":443", 0, NULL, 0, false},
	        {"exa mple.com:443", 0, NULL, 0, false},
	        {"1.2.3.4.5:443", 0, NULL, 0, false},
	        {"", 80, NULL, 0, false},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct http_authority a = {.port = 7};
		struct cl_error err = {{0}};
		int r = http_authority_parse(cases[i].text, strlen(cases[i].text),
		                             cases[i].default_port, &a, &err);

		if (!cases[i].host) {
			if (r != -EINVAL || a.port != 7)
				fail_msg("\"%s\": accepted as %s:%u", cases[i].text, a.host,
				         a.port);
			assert_true(err.msg[0] != '\0');
			continue;
		}
		if (r < 0)
			fail_msg("\"%s\": %s", cases[i].text, err.msg);
		assert_string_equal(a.host, cases[i].host);
		assert_int_equal(a.port, cases[i].port);
		assert_int_equal(a.ip, cases[i].ip);
	}
	/* A NUL inside the given length is refused, not cut at. */
	struct http_authority a;
	assert_int_equal(http_authority_parse("evil.com\0.good.com:443", 22, 0, &a, NULL), -EINVAL);
}

static void test_host_header_gives_the_authority(void **state)
{
	struct http_authority a;

	assert_true(parse("GET / HTTP/1.1\r\nHost: Example.com:8080\r\n\r\n") > 0);
	assert_int_equal(http_head_host(&head, &a, NULL), 0);
	assert_string_equal(a.host, "example.com");
	assert_int_equal(a.port, 8080);
	assert_true(parse("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n") > 0);
	assert_int_equal(http_head_host(&head, &a, NULL), 0);
	assert_int_equal(a.port, 80);
	assert_true(parse("GET / HTTP/1.0\r\n\r\n") > 0);
	assert_int_equal(http_head_host(&head, &a, NULL), -ENOENT);
	assert_true(parse("GET / HTTP/1.1\r\nHost: a@b\r\n\r\n") > 0);
	assert_int_equal(http_head_host(&head, &a, NULL), -EINVAL);
}

static void test_absolute_targets_give_authority_and_path(void **state)
{
	static const struct {
		const char *target;
		const char *host; /* NULL: refused */
		uint16_t port;
		const char *path;
	} cases[] = {
	        {"http://example.com/a/b?c=d", "example.com", 80, "/a/b?c=d"},
	        {"HTTP://Example.com:8080", "example.com", 8080, ""},
	        {"http://example.com?q", "example.com", 80, "?q"},
	        {"http://[::1]:8080/x", "::1", 8080, "/x"},
	        {"http://10.0.0.1/", "10.0.0.1", 80, "/"},
	        {"https://example.com/", NULL, 0, NULL},
	        {"ftp://example.com/", NULL, 0, NULL},
	        {"/relative", NULL, 0, NULL},
	        {"http://user:pw@example.com/", NULL, 0, NULL},
	        {"http://example.com/#frag", NULL, 0, NULL},
	        {"http:///path", NULL, 0, NULL},
	        {"http://example.com:0/", NULL, 0, NULL},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct http_authority a;
		const char *path = NULL;
		size_t path_len = 99;
		int r = http_target_absolute(cases[i].target, strlen(cases[i].target), &a, &path,
		                             &path_len, NULL);

		if (!cases[i].host) {
			if (r != -EINVAL || path)
				fail_msg("\"%s\": accepted", cases[i].target);
			continue;
		}
		if (r < 0)
			fail_msg("\"%s\": refused", cases[i].target);
		assert_string_equal(a.host, cases[i].host);
		assert_int_equal(a.port, cases[i].port);
		assert_int_equal(path_len, strlen(cases[i].path));
		assert_memory_equal(path, cases[i].path, path_len);
	}
}

static void test_basic_credentials_are_decoded(void **state)
{
	static const struct {
		const char *value;
		int want;
		const char *user, *password;
	} cases[] = {
	        /* cloister:af3b… as curl sends it for http://cloister:TOKEN@proxy */
	        {"Basic Y2xvaXN0ZXI6YWYzYjJjMWQ=", 0, "cloister", "af3b2c1d"},
	        {"basic   Y2xvaXN0ZXI6YWYzYjJjMWQ=", 0, "cloister", "af3b2c1d"},
	        {"Basic OnB3", 0, "", "pw"},             /* ":pw" */
	        {"Basic dTo=", 0, "u", ""},              /* "u:" */
	        {"Basic dTpwOnc=", 0, "u", "p:w"},       /* password keeps later colons */
	        {"Basic dXNlcg==", -EINVAL, NULL, NULL}, /* "user": no colon */
	        {"Bearer Y2xvaXN0ZXI6eA==", -EINVAL, NULL, NULL},
	        {"Basic", -EINVAL, NULL, NULL},
	        {"Basic ", -EINVAL, NULL, NULL},
	        {"BasicY2xvaXN0ZXI6eA==", -EINVAL, NULL, NULL},
	        {"Basic Y2xvaXN0ZXI6eA", -EINVAL, NULL, NULL},   /* unpadded */
	        {"Basic Y2xv=XN0ZXI6eA==", -EINVAL, NULL, NULL}, /* '=' inside */
	        {"Basic Y2xvaXN0ZXI6e===", -EINVAL, NULL, NULL},
	        {"Basic Y2xvaXN0ZXI6eA==\t", -EINVAL, NULL, NULL},
	        {"Basic dTpwAHg=", -EINVAL, NULL, NULL}, /* "u:p\0x" */
	        {"Basic dTpwCng=", -EINVAL, NULL, NULL}, /* "u:p\nx" */
	};
	char user[HTTP_AUTH_MAX + 1], password[HTTP_AUTH_MAX + 1];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r;

		strcpy(user, "-");
		strcpy(password, "-");
		r = http_basic_auth_decode(cases[i].value, strlen(cases[i].value), user, password,
		                           NULL);
		if (r != cases[i].want)
			fail_msg("\"%s\": expected %d, got %d", cases[i].value, cases[i].want, r);
		if (r == 0) {
			assert_string_equal(user, cases[i].user);
			assert_string_equal(password, cases[i].password);
		} else {
			assert_string_equal(user, "-");
		}
	}
}

static size_t base64(const char *in, size_t len, char *out)
{
	static const char abc[] =
	        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;

	for (size_t i = 0; i < len; i += 3) {
		unsigned v = (unsigned char)in[i] << 16;
		if (i + 1 < len)
			v |= (unsigned char)in[i + 1] << 8;
		if (i + 2 < len)
			v |= (unsigned char)in[i + 2];
		out[o++] = abc[v >> 18 & 63];
		out[o++] = abc[v >> 12 & 63];
		out[o++] = i + 1 < len ? abc[v >> 6 & 63] : '=';
		out[o++] = i + 2 < len ? abc[v & 63] : '=';
	}
	return o;
}

static void test_overlong_credentials_are_refused(void **state)
{
	char plain[HTTP_AUTH_MAX + 8], value[2000], user[HTTP_AUTH_MAX + 1],
	        password[HTTP_AUTH_MAX + 1];

	/* "u:aaa…" of 510..514 bytes: up to HTTP_AUTH_MAX decoded bytes pass. */
	for (size_t decoded = HTTP_AUTH_MAX - 2; decoded <= HTTP_AUTH_MAX + 2; decoded++) {
		size_t n;
		int r;

		memset(plain, 'a', decoded);
		memcpy(plain, "u:", 2);
		n = (size_t)snprintf(value, sizeof(value), "Basic ");
		n += base64(plain, decoded, value + n);
		r = http_basic_auth_decode(value, n, user, password, NULL);
		if (decoded <= HTTP_AUTH_MAX) {
			assert_int_equal(r, 0);
			assert_int_equal(strlen(password), decoded - 2);
		} else {
			assert_int_equal(r, -EMSGSIZE);
		}
	}
}

static void test_answers_are_complete_responses(void **state)
{
	char buf[1024];
	int n;

	n = http_answer_build(HTTP_ANSWER_FORBIDDEN, NULL, "evil.com", buf, sizeof(buf));
	assert_int_equal(n, strlen(buf));
	assert_string_equal(buf,
	                    "HTTP/1.1 403 Forbidden\r\n"
	                    "Content-Type: application/json\r\n"
	                    "Content-Length: 58\r\n"
	                    "Connection: close\r\n"
	                    "\r\n"
	                    "{\"error\": \"domain not in allowlist\", \"domain\": \"evil.com\"}");
	/* The head it builds parses back as a response would: its Content-Length is the body. */
	assert_int_equal(strlen(strstr(buf, "\r\n\r\n") + 4), 58);

	n = http_answer_build(HTTP_ANSWER_AUTH_REQUIRED, NULL, NULL, buf, sizeof(buf));
	assert_true(n > 0);
	assert_non_null(strstr(buf, "HTTP/1.1 407 Proxy Authentication Required\r\n"));
	assert_non_null(strstr(buf, "\r\nProxy-Authenticate: Basic realm=\"cloister\"\r\n"));
	assert_non_null(strstr(buf, "\r\n\r\n{\"error\": \"proxy authentication required\"}"));

	n = http_answer_build(HTTP_ANSWER_ESTABLISHED, NULL, NULL, buf, sizeof(buf));
	assert_string_equal(buf, "HTTP/1.1 200 Connection established\r\n\r\n");
	assert_int_equal(n, strlen(buf));

	assert_true(http_answer_build(HTTP_ANSWER_BAD_GATEWAY, NULL, NULL, buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf, "HTTP/1.1 502 Bad Gateway\r\n"));
	assert_true(http_answer_build(HTTP_ANSWER_GATEWAY_TIMEOUT, NULL, NULL, buf, sizeof(buf)) >
	            0);
	assert_non_null(strstr(buf, "HTTP/1.1 504 Gateway Timeout\r\n"));
	assert_true(http_answer_build(HTTP_ANSWER_HEAD_TOO_LARGE, NULL, NULL, buf, sizeof(buf)) >
	            0);
	assert_non_null(strstr(buf, "HTTP/1.1 431 "));

	/* A caller's text is escaped, never able to break the JSON or the head. */
	http_answer_build(HTTP_ANSWER_FORBIDDEN, "Request timed out waiting for approval",
	                  "a\"b\\c\r\n", buf, sizeof(buf));
	assert_non_null(strstr(buf, "{\"error\": \"Request timed out waiting for approval\", "
	                            "\"domain\": \"a\\\"b\\\\c\\u000d\\u000a\"}"));
	assert_int_equal(http_answer_build(HTTP_ANSWER_FORBIDDEN, NULL, "evil.com", buf, 40),
	                 -ENOSPC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_connect_head_is_parsed_and_its_length_returned),
	        cmocka_unit_test(test_every_prefix_of_a_head_asks_for_more),
	        cmocka_unit_test(test_values_are_trimmed_and_names_compared_without_case),
	        cmocka_unit_test(test_framing_headers_are_checked),
	        cmocka_unit_test(test_malformed_heads_are_refused_with_a_reason),
	        cmocka_unit_test(test_garbage_is_refused_before_the_head_ends),
	        cmocka_unit_test(test_limits_on_size_and_header_count),
	        cmocka_unit_test(test_authorities_split_host_and_port),
	        cmocka_unit_test(test_host_header_gives_the_authority),
	        cmocka_unit_test(test_absolute_targets_give_authority_and_path),
	        cmocka_unit_test(test_basic_credentials_are_decoded),
	        cmocka_unit_test(test_overlong_credentials_are_refused),
	        cmocka_unit_test(test_answers_are_complete_responses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
