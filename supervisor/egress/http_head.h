/* HTTP/1.x request heads as the proxy receives them, and the proxy's own answers (pure).
 *
 * The proxy keeps what a client sends in a buffer and calls http_head_parse() on all of it
 * after each read: 0 means "not complete yet", a positive value is the length of the head, so
 * the bytes after it (a body, or TLS after CONNECT) are forwarded as they are. The parser is
 * strict, because the head may be forwarded to a server that reads it differently:
 *   - lines end in CRLF; a bare CR or LF, a NUL or another control byte is an error;
 *   - no obs-fold (a header line starting with SP/HTAB), no space before the colon;
 *   - at most HTTP_HEAD_MAX_BYTES in all, HTTP_HEAD_MAX_HEADERS headers;
 *   - HTTP/1.0 and HTTP/1.1 only; an HTTP/1.1 request other than CONNECT needs a Host;
 *   - one Host, one Proxy-Authorization; Content-Length values that all agree; never both
 *     Transfer-Encoding and Content-Length; Transfer-Encoding only in HTTP/1.1, ending in
 *     "chunked".
 * The parsed head points into the caller's buffer, which must outlive it. */
#ifndef CLOISTER_HTTP_HEAD_H
#define CLOISTER_HTTP_HEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "supervisor/policy/domain.h"

#define HTTP_HEAD_MAX_BYTES   (16 * 1024)
#define HTTP_HEAD_MAX_HEADERS 100
#define HTTP_AUTH_MAX         512 /* decoded user:password bytes of a Basic credential */

struct http_header {
	const char *name; /* as written; compare case-insensitively */
	size_t name_len;
	const char *value; /* without surrounding spaces and tabs */
	size_t value_len;
};

struct http_request_head {
	size_t head_len; /* bytes up to and including the empty line */
	const char *method;
	size_t method_len;
	const char *target;
	size_t target_len;
	unsigned version_minor; /* HTTP/1.<minor>: 0 or 1 */
	bool connect;           /* method is CONNECT */
	struct http_header headers[HTTP_HEAD_MAX_HEADERS];
	size_t n_headers;
	const struct http_header *host;       /* the Host header, or NULL */
	const struct http_header *proxy_auth; /* Proxy-Authorization, or NULL */
	int64_t content_length;               /* -1: none */
	bool chunked;                         /* Transfer-Encoding ends in chunked */
};

/* Parse the request head at the start of BUF[0..LEN-1]. Returns the head's length (> 0) and
 * fills *ret; 0 when more bytes are needed (and LEN is still below the limit); -EMSGSIZE when
 * the head exceeds HTTP_HEAD_MAX_BYTES or HTTP_HEAD_MAX_HEADERS (answer 431); -EPROTONOSUPPORT
 * for an HTTP version other than 1.0/1.1 (505); -EINVAL for anything malformed (400). ERR (may
 * be NULL) says what. *ret is written only on success. */
int http_head_parse(const char *buf, size_t len, struct http_request_head *ret,
                    struct cl_error *err);

/* The first header named NAME (case-insensitive), or NULL. */
const struct http_header *http_head_find(const struct http_request_head *head, const char *name);

/* host:port as a proxy sees it (CONNECT target, Host header, absolute-form URL). */
struct http_authority {
	char host[DOMAIN_HOST_MAX + 1]; /* normalised by domain_spec_parse(): a name in lower case,
	                                   an IPv4 dotted quad, an IPv6 address without [] */
	uint16_t port;
	bool ip; /* host is an IP address literal */
};

/* Split "host:port", "[v6]:port" (and without DEFAULT_PORT = 0 also a bare "host" or "[v6]",
 * which get DEFAULT_PORT). The port is 1..65535, decimal digits only. The host is a name
 * (letters, digits, '-', '_'), an IPv4 address in any form a resolver takes, or a bracketed
 * IPv6 address; no userinfo, no wildcard. -EINVAL otherwise; *ret only on success. */
int http_authority_parse(const char *text, size_t len, uint16_t default_port,
                         struct http_authority *ret, struct cl_error *err);

/* The Host header of HEAD as an authority (port 80 when absent from it). -ENOENT when the head
 * has no Host header, -EINVAL when it is malformed. */
int http_head_host(const struct http_request_head *head, struct http_authority *ret,
                   struct cl_error *err);

/* An absolute-form target "http://host[:port][/path][?query]" split into the authority
 * (port 80 by default) and the origin-form path to send upstream: PATH points into TARGET
 * (PATH_LEN 0 means "/"; a path starting with '?' needs a '/' in front). Only the http scheme
 * (any case); userinfo ("user@host") and fragments are refused with -EINVAL. */
int http_target_absolute(const char *target, size_t len, struct http_authority *ret_authority,
                         const char **ret_path, size_t *ret_path_len, struct cl_error *err);

/* Decode a Proxy-Authorization value "Basic <base64 of user:password>" into RET_USER and
 * RET_PASSWORD (NUL-terminated; each HTTP_AUTH_MAX + 1 bytes). -EINVAL for another scheme,
 * bad base64, no ':', or a control byte in the decoded text; -EMSGSIZE when longer than
 * HTTP_AUTH_MAX decoded bytes. The outputs are written only on success. Messages never
 * contain the credential. */
int http_basic_auth_decode(const char *value, size_t len, char *ret_user, char *ret_password,
                           struct cl_error *err);

/* The proxy's own answers. */
enum http_answer {
	HTTP_ANSWER_ESTABLISHED,         /* 200 Connection established (CONNECT; no body) */
	HTTP_ANSWER_BAD_REQUEST,         /* 400 */
	HTTP_ANSWER_FORBIDDEN,           /* 403 {"error": …, "domain": …} */
	HTTP_ANSWER_AUTH_REQUIRED,       /* 407 with Proxy-Authenticate: Basic realm="cloister" */
	HTTP_ANSWER_HEAD_TOO_LARGE,      /* 431 */
	HTTP_ANSWER_BAD_GATEWAY,         /* 502 */
	HTTP_ANSWER_GATEWAY_TIMEOUT,     /* 504 */
	HTTP_ANSWER_VERSION_UNSUPPORTED, /* 505 */
};

/* Write the answer WHAT into BUF (SIZE bytes; a complete response with "Connection: close"
 * and a JSON body {"error": ERROR[, "domain": DOMAIN]}, except 200 which has neither).
 * ERROR NULL: the usual text for WHAT ("domain not in allowlist" for 403); DOMAIN NULL: no
 * domain field. Both are JSON-escaped. Returns the length, or -ENOSPC. */
int http_answer_build(enum http_answer what, const char *error, const char *domain, char *buf,
                      size_t size);

#endif
