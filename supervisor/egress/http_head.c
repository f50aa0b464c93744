#include "supervisor/egress/http_head.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define METHOD_MAX 32

/* RFC 9110 5.6.2 tchar. */
static bool is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* A byte allowed in a field value: VCHAR, obs-text, SP, HTAB. */
static bool is_value_byte(unsigned char c)
{
	return c == ' ' || c == '\t' || (c >= 0x21 && c != 0x7f);
}

static bool name_is(const char *name, size_t len, const char *want)
{
	return strlen(want) == len && strncasecmp(name, want, len) == 0;
}

static bool token_is(const char *p, size_t len, const char *want)
{
	return name_is(p, len, want);
}

/* Position of the CRLF CRLF ending the head (the index after it), or 0. */
static size_t find_head_end(const char *buf, size_t len)
{
	for (size_t i = 3; i < len; i++)
		if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' &&
		    buf[i - 3] == '\r')
			return i + 1;
	return 0;
}

/* Content-Length: "1*DIGIT" or a list of equal ones ("5, 5"), which RFC 9110 8.6 lets a
 * recipient take as one. -1 if malformed. */
static int64_t parse_content_length(const char *v, size_t len)
{
	int64_t value = -1;
	size_t i = 0;

	while (i < len) {
		int64_t n = 0;
		size_t start = i;

		for (; i < len && v[i] >= '0' && v[i] <= '9'; i++) {
			if (n > (INT64_MAX / 4 - 9) / 10)
				return -1;
			n = n * 10 + (v[i] - '0');
		}
		if (i == start || (value >= 0 && n != value))
			return -1;
		value = n;
		while (i < len && (v[i] == ' ' || v[i] == '\t'))
			i++;
		if (i == len)
			break;
		if (v[i] != ',')
			return -1;
		i++;
		while (i < len && (v[i] == ' ' || v[i] == '\t'))
			i++;
		if (i == len)
			return -1;
	}
	return value;
}

/* Does the coding list V end in "chunked"? */
static bool ends_in_chunked(const char *v, size_t len)
{
	const char *last = v;

	for (size_t i = 0; i < len; i++)
		if (v[i] == ',')
			last = v + i + 1;
	while (last < v + len && (*last == ' ' || *last == '\t'))
		last++;
	return token_is(last, (size_t)(v + len - last), "chunked");
}

static int parse_request_line(const char *line, size_t len, struct http_request_head *h,
                              struct cl_error *err)
{
	size_t i = 0, start;

	for (; i < len && is_tchar((unsigned char)line[i]); i++)
		;
	if (i == 0 || i >= len || line[i] != ' ')
		return cl_error_set(err, -EINVAL, "request line: bad method");
	if (i > METHOD_MAX)
		return cl_error_set(err, -EINVAL, "request line: method longer than %d bytes",
		                    METHOD_MAX);
	h->method = line;
	h->method_len = i;
	h->connect = i == 7 && memcmp(line, "CONNECT", 7) == 0; /* methods are case-sensitive */
	start = ++i;
	for (; i < len && (unsigned char)line[i] > 0x20 && (unsigned char)line[i] < 0x7f; i++)
		;
	if (i == start || i >= len || line[i] != ' ')
		return cl_error_set(err, -EINVAL, "request line: bad target");
	h->target = line + start;
	h->target_len = i - start;
	i++;
	if (len - i != 8 || strncmp(line + i, "HTTP/", 5) != 0 || line[i + 5] < '0' ||
	    line[i + 5] > '9' || line[i + 6] != '.' || line[i + 7] < '0' || line[i + 7] > '9')
		return cl_error_set(err, -EINVAL, "request line: bad HTTP version");
	if (line[i + 5] != '1' || line[i + 7] > '1')
		return cl_error_set(err, -EPROTONOSUPPORT, "HTTP version %.8s is not supported",
		                    line + i);
	h->version_minor = (unsigned)(line[i + 7] - '0');
	return 0;
}

static int parse_header_line(const char *line, size_t len, struct http_request_head *h,
                             bool *te_seen, struct cl_error *err)
{
	struct http_header *hd;
	size_t i = 0, vstart, vend;

	if (len > 0 && (line[0] == ' ' || line[0] == '\t'))
		return cl_error_set(err, -EINVAL, "header folded over lines (obs-fold)");
	for (; i < len && is_tchar((unsigned char)line[i]); i++)
		;
	if (i == 0 || i >= len || line[i] != ':')
		return cl_error_set(err, -EINVAL, "header %zu: bad name or missing ':'",
		                    h->n_headers + 1);
	for (size_t k = i + 1; k < len; k++)
		if (!is_value_byte((unsigned char)line[k]))
			return cl_error_set(err, -EINVAL, "header %.*s: control byte in value",
			                    (int)i, line);
	if (h->n_headers == HTTP_HEAD_MAX_HEADERS)
		return cl_error_set(err, -EMSGSIZE, "more than %d headers", HTTP_HEAD_MAX_HEADERS);
	vstart = i + 1;
	vend = len;
	while (vstart < vend && (line[vstart] == ' ' || line[vstart] == '\t'))
		vstart++;
	while (vend > vstart && (line[vend - 1] == ' ' || line[vend - 1] == '\t'))
		vend--;
	hd = &h->headers[h->n_headers++];
	*hd = (struct http_header){line, i, line + vstart, vend - vstart};

	if (name_is(hd->name, hd->name_len, "Host")) {
		if (h->host)
			return cl_error_set(err, -EINVAL, "more than one Host header");
		h->host = hd;
	} else if (name_is(hd->name, hd->name_len, "Proxy-Authorization")) {
		if (h->proxy_auth)
			return cl_error_set(err, -EINVAL,
			                    "more than one Proxy-Authorization header");
		h->proxy_auth = hd;
	} else if (name_is(hd->name, hd->name_len, "Content-Length")) {
		int64_t n = parse_content_length(hd->value, hd->value_len);

		if (n < 0)
			return cl_error_set(err, -EINVAL, "malformed Content-Length");
		if (h->content_length >= 0 && h->content_length != n)
			return cl_error_set(err, -EINVAL, "conflicting Content-Length headers");
		h->content_length = n;
	} else if (name_is(hd->name, hd->name_len, "Transfer-Encoding")) {
		if (hd->value_len == 0)
			return cl_error_set(err, -EINVAL, "empty Transfer-Encoding");
		*te_seen = true;
		h->chunked = ends_in_chunked(hd->value, hd->value_len);
	}
	return 0;
}

int http_head_parse(const char *buf, size_t len, struct http_request_head *ret,
                    struct cl_error *err)
{
	struct http_request_head head = {.content_length = -1};
	size_t end, pos, line_no = 0;
	bool te_seen = false;

	if (len > HTTP_HEAD_MAX_BYTES)
		len = HTTP_HEAD_MAX_BYTES + 1; /* look no further than the limit */
	end = find_head_end(buf, len > HTTP_HEAD_MAX_BYTES ? HTTP_HEAD_MAX_BYTES : len);
	if (end == 0) {
		/* Incomplete: still refuse at once what can never become a request. */
		for (size_t i = 0; i < len; i++) {
			unsigned char c = (unsigned char)buf[i];
			if (c == '\0' || (c < 0x20 && c != '\t' && c != '\r' && c != '\n') ||
			    c == 0x7f)
				return cl_error_set(err, -EINVAL, "control byte in request head");
			if (c == '\r' || c == '\n')
				break; /* only the request line is checked before the head ends */
			if (c != ' ' && !is_tchar(c) && memchr(buf, ' ', i) == NULL)
				return cl_error_set(err, -EINVAL, "request line: bad method");
		}
		if (len > HTTP_HEAD_MAX_BYTES)
			return cl_error_set(err, -EMSGSIZE, "request head longer than %d bytes",
			                    HTTP_HEAD_MAX_BYTES);
		return 0;
	}

	for (pos = 0; pos < end - 2; line_no++) {
		const char *line = buf + pos;
		const char *cr = memchr(line, '\r', end - pos);
		const char *lf = memchr(line, '\n', end - pos);
		size_t llen;
		int r;

		/* Every line ends in CRLF: a bare CR or LF first is an error. */
		if (!cr || !lf || lf != cr + 1)
			return cl_error_set(err, -EINVAL, "line %zu: bare CR or LF", line_no + 1);
		llen = (size_t)(cr - line);
		if (memchr(line, '\0', llen))
			return cl_error_set(err, -EINVAL, "line %zu: NUL byte", line_no + 1);
		if (line_no == 0)
			r = parse_request_line(line, llen, &head, err);
		else
			r = parse_header_line(line, llen, &head, &te_seen, err);
		if (r < 0)
			return r;
		pos += llen + 2;
	}

	if (te_seen && head.content_length >= 0)
		return cl_error_set(err, -EINVAL, "both Transfer-Encoding and Content-Length");
	if (te_seen && head.version_minor == 0)
		return cl_error_set(err, -EINVAL, "Transfer-Encoding in an HTTP/1.0 request");
	if (te_seen && !head.chunked)
		return cl_error_set(err, -EINVAL, "Transfer-Encoding does not end in chunked");
	if (head.version_minor == 1 && !head.connect && !head.host)
		return cl_error_set(err, -EINVAL, "HTTP/1.1 request without a Host header");
	head.head_len = end;
	*ret = head;
	/* The copy moved the headers: point host and proxy_auth into *ret, not into head. */
	if (head.host)
		ret->host = ret->headers + (head.host - head.headers);
	if (head.proxy_auth)
		ret->proxy_auth = ret->headers + (head.proxy_auth - head.headers);
	return (int)end;
}

const struct http_header *http_head_find(const struct http_request_head *head, const char *name)
{
	for (size_t i = 0; i < head->n_headers; i++)
		if (name_is(head->headers[i].name, head->headers[i].name_len, name))
			return &head->headers[i];
	return NULL;
}

static int parse_port(const char *p, size_t len, uint16_t *ret)
{
	unsigned v = 0;

	if (len == 0 || len > 5)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(p[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -EINVAL;
	*ret = (uint16_t)v;
	return 0;
}

int http_authority_parse(const char *text, size_t len, uint16_t default_port,
                         struct http_authority *ret, struct cl_error *err)
{
	char host[DOMAIN_HOST_MAX + 4];
	const char *port = NULL;
	size_t host_len, port_len = 0;
	struct domain_spec spec;
	struct in6_addr a6;
	struct in_addr a4;
	uint16_t p = default_port;

	if (len == 0)
		return cl_error_set(err, -EINVAL, "empty authority");
	if (memchr(text, '\0', len) || memchr(text, '@', len) || memchr(text, '*', len))
		return cl_error_set(err, -EINVAL, "authority: bad character (NUL, '@' or '*')");
	if (text[0] == '[') {
		const char *close = memchr(text, ']', len);

		if (!close)
			return cl_error_set(err, -EINVAL, "authority: missing ']'");
		host_len = (size_t)(close - text) + 1;
		if (host_len < len) {
			if (text[host_len] != ':')
				return cl_error_set(err, -EINVAL, "authority: text after ']'");
			port = text + host_len + 1;
			port_len = len - host_len - 1;
		}
	} else {
		const char *colon = memchr(text, ':', len);

		host_len = colon ? (size_t)(colon - text) : len;
		if (colon) {
			port = colon + 1;
			port_len = len - host_len - 1;
			if (memchr(port, ':', port_len))
				return cl_error_set(err, -EINVAL,
				                    "authority: an IPv6 address needs brackets");
		}
	}
	if (port && parse_port(port, port_len, &p) < 0)
		return cl_error_set(err, -EINVAL, "authority: port must be 1..65535");
	if (!port && default_port == 0)
		return cl_error_set(err, -EINVAL, "authority: a port is required");
	if (host_len == 0 || host_len >= sizeof(host))
		return cl_error_set(err, -EINVAL, "authority: empty or overlong host");
	memcpy(host, text, host_len);
	host[host_len] = '\0';
	if (domain_spec_parse(host, false, &spec, err) < 0) {
		cl_error_prefix(err, "authority");
		return -EINVAL;
	}
	if (spec.port != 0)
		return cl_error_set(err, -EINVAL, "authority: bad port");
	memcpy(ret->host, spec.host, sizeof(ret->host));
	ret->port = p;
	ret->ip =
	        inet_pton(AF_INET, spec.host, &a4) == 1 || inet_pton(AF_INET6, spec.host, &a6) == 1;
	return 0;
}

int http_head_host(const struct http_request_head *head, struct http_authority *ret,
                   struct cl_error *err)
{
	if (!head->host)
		return cl_error_set(err, -ENOENT, "no Host header");
	return http_authority_parse(head->host->value, head->host->value_len, 80, ret, err);
}

int http_target_absolute(const char *target, size_t len, struct http_authority *ret_authority,
                         const char **ret_path, size_t *ret_path_len, struct cl_error *err)
{
	struct http_authority a;
	size_t i;
	int r;

	if (len < 7 || strncasecmp(target, "http://", 7) != 0)
		return cl_error_set(err, -EINVAL, "target is not an http:// URL");
	if (memchr(target, '#', len))
		return cl_error_set(err, -EINVAL, "target has a fragment");
	for (i = 7; i < len && target[i] != '/' && target[i] != '?'; i++)
		;
	if (memchr(target + 7, '@', i - 7))
		return cl_error_set(err, -EINVAL, "target has userinfo (user@host)");
	r = http_authority_parse(target + 7, i - 7, 80, &a, err);
	if (r < 0)
		return r;
	*ret_authority = a;
	*ret_path = target + i;
	*ret_path_len = len - i;
	return 0;
}

static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int http_basic_auth_decode(const char *value, size_t len, char *ret_user, char *ret_password,
                           struct cl_error *err)
{
	unsigned char out[HTTP_AUTH_MAX + 3];
	size_t i = 5, o = 0, b64_len, pad = 0;
	unsigned char *colon;

	if (len < 6 || strncasecmp(value, "Basic", 5) != 0 || value[5] != ' ')
		return cl_error_set(err, -EINVAL, "Proxy-Authorization: not the Basic scheme");
	while (i < len && value[i] == ' ')
		i++;
	b64_len = len - i;
	if (b64_len == 0 || b64_len % 4 != 0)
		return cl_error_set(err, -EINVAL, "Proxy-Authorization: bad base64 length");
	if (b64_len / 4 * 3 > HTTP_AUTH_MAX + 2)
		return cl_error_set(err, -EMSGSIZE, "Proxy-Authorization: credential too long");
	for (size_t q = i; q < len; q += 4) {
		int v[4];
		bool last = q + 4 == len;

		for (int k = 0; k < 4; k++) {
			char c = value[q + (size_t)k];

			v[k] = b64_value(c);
			if (v[k] >= 0)
				continue;
			/* '=' only as the last one or two characters. */
			if (c == '=' && last && k >= 2 && (k == 3 || value[q + 3] == '=')) {
				v[k] = 0;
				pad++;
				continue;
			}
			return cl_error_set(err, -EINVAL, "Proxy-Authorization: bad base64");
		}
		out[o++] = (unsigned char)(v[0] << 2 | v[1] >> 4);
		out[o++] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
		out[o++] = (unsigned char)((v[2] & 3) << 6 | v[3]);
	}
	o -= pad;
	if (o > HTTP_AUTH_MAX)
		return cl_error_set(err, -EMSGSIZE, "Proxy-Authorization: credential too long");
	for (size_t k = 0; k < o; k++)
		if (out[k] < 0x20 || out[k] == 0x7f)
			return cl_error_set(err, -EINVAL,
			                    "Proxy-Authorization: control byte in credential");
	colon = memchr(out, ':', o);
	if (!colon)
		return cl_error_set(err, -EINVAL, "Proxy-Authorization: no ':' in credential");
	memcpy(ret_user, out, (size_t)(colon - out));
	ret_user[colon - out] = '\0';
	memcpy(ret_password, colon + 1, o - (size_t)(colon - out) - 1);
	ret_password[o - (size_t)(colon - out) - 1] = '\0';
	return 0;
}

/* Append S to BUF as JSON string content. */
static void json_escape(const char *s, char *buf, size_t size, size_t *len)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char tmp[8];
		const char *piece = tmp;

		if (c == '"' || c == '\\')
			snprintf(tmp, sizeof(tmp), "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			snprintf(tmp, sizeof(tmp), "\\u%04x", c);
		else
			tmp[0] = (char)c, tmp[1] = '\0';
		for (; *piece; piece++) {
			if (*len + 1 < size)
				buf[*len] = *piece;
			(*len)++;
		}
	}
	if (*len < size)
		buf[*len] = '\0';
}

int http_answer_build(enum http_answer what, const char *error, const char *domain, char *buf,
                      size_t size)
{
	static const struct {
		const char *status;
		const char *error;
	} answers[] = {
	        [HTTP_ANSWER_ESTABLISHED] = {"200 Connection established", NULL},
	        [HTTP_ANSWER_BAD_REQUEST] = {"400 Bad Request", "bad request"},
	        [HTTP_ANSWER_FORBIDDEN] = {"403 Forbidden", "domain not in allowlist"},
	        [HTTP_ANSWER_AUTH_REQUIRED] = {"407 Proxy Authentication Required",
	                                       "proxy authentication required"},
	        [HTTP_ANSWER_HEAD_TOO_LARGE] = {"431 Request Header Fields Too Large",
	                                        "request header fields too large"},
	        [HTTP_ANSWER_BAD_GATEWAY] = {"502 Bad Gateway", "upstream connection failed"},
	        [HTTP_ANSWER_GATEWAY_TIMEOUT] = {"504 Gateway Timeout", "upstream timed out"},
	        [HTTP_ANSWER_VERSION_UNSUPPORTED] = {"505 HTTP Version Not Supported",
	                                             "HTTP version not supported"},
	};
	char body[1024];
	size_t blen = 0;
	int n;

	if ((unsigned)what >= sizeof(answers) / sizeof(answers[0]))
		return -EINVAL;
	if (what == HTTP_ANSWER_ESTABLISHED) {
		n = snprintf(buf, size, "HTTP/1.1 %s\r\n\r\n", answers[what].status);
		return n < 0 || (size_t)n >= size ? -ENOSPC : n;
	}
	body[0] = '\0';
	blen = (size_t)snprintf(body, sizeof(body), "{\"error\": \"");
	json_escape(error ? error : answers[what].error, body, sizeof(body), &blen);
	if (domain) {
		if (blen < sizeof(body))
			blen += (size_t)snprintf(body + blen, sizeof(body) - blen,
			                         "\", \"domain\": \"");
		json_escape(domain, body, sizeof(body), &blen);
	}
	if (blen < sizeof(body))
		blen += (size_t)snprintf(body + blen, sizeof(body) - blen, "\"}");
	if (blen >= sizeof(body))
		return -ENOSPC;
	n = snprintf(buf, size,
	             "HTTP/1.1 %s\r\n"
	             "%s"
	             "Content-Type: application/json\r\n"
	             "Content-Length: %zu\r\n"
	             "Connection: close\r\n"
	             "\r\n"
	             "%s",
	             answers[what].status,
	             what == HTTP_ANSWER_AUTH_REQUIRED ? "Proxy-Authenticate: Basic "
	                                                 "realm=\"cloister\"\r\n"
	                                               : "",
	             blen, body);
	return n < 0 || (size_t)n >= size ? -ENOSPC : n;
}
