/* A minimal blocking HTTP/1.1 client for the CLI (`pending`, `approve`, …) and the tests:
 * one request per connection to a numeric loopback address, with a deadline, bounded
 * response size, Content-Length / chunked / read-to-close bodies. Not for the event loop. */
#ifndef CLOISTER_HTTP_CLIENT_H
#define CLOISTER_HTTP_CLIENT_H

#include <stddef.h>

#define HTTP_CLIENT_MAX_RESPONSE (8 * 1024 * 1024)

struct http_response {
	int status;
	char *body; /* NUL-terminated, malloc'd */
	size_t body_len;
};

/* URL is "http://HOST:PORT" (numeric host, IPv6 in brackets) optionally followed by a path
 * that PATH is appended to. EXTRA_HEADERS is NULL or "Name: value\r\n…". Returns 0 and fills
 * *ret (free with http_response_free), -EINVAL for a bad URL, -ETIMEDOUT, -ECONNREFUSED, -EBADMSG
 * for a malformed response, -EFBIG over the limit, or another -errno. */
int http_client_request(const char *url, const char *method, const char *path,
                        const char *extra_headers, const char *body, size_t body_len,
                        int timeout_ms, struct http_response *ret);
void http_response_free(struct http_response *resp);

#endif
