/* Blocking HTTP/1.1 client; see http_client.h. */
#include "supervisor/web/http_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "http://127.0.0.1:9999/x" → address, port, and the path prefix ("/x" or ""). */
static int parse_url(const char *url, struct sockaddr_storage *ss, socklen_t *len, char *host_hdr,
                     size_t host_size, const char **ret_prefix)
{
	const char *p, *end, *colon;
	char host[64];
	unsigned long port;
	char *pe;

	if (strncmp(url, "http://", 7))
		return -EINVAL;
	p = url + 7;
	end = strchr(p, '/');
	if (!end)
		end = p + strlen(p);
	if (*p == '[') {
		const char *rb = memchr(p, ']', (size_t)(end - p));

		if (!rb || rb[1] != ':' || (size_t)(rb - p - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, p + 1, (size_t)(rb - p - 1));
		host[rb - p - 1] = '\0';
		colon = rb + 1;
	} else {
		colon = memchr(p, ':', (size_t)(end - p));
		if (!colon || (size_t)(colon - p) >= sizeof(host))
			return -EINVAL;
		memcpy(host, p, (size_t)(colon - p));
		host[colon - p] = '\0';
	}
	errno = 0;
	port = strtoul(colon + 1, &pe, 10);
	if (errno || pe != end || port == 0 || port > 65535)
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
		((struct sockaddr_in *)ss)->sin_family = AF_INET;
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
		*len = sizeof(struct sockaddr_in);
	} else if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		((struct sockaddr_in6 *)ss)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
		*len = sizeof(struct sockaddr_in6);
	} else {
		return -EINVAL;
	}
	snprintf(host_hdr, host_size, "%.*s", (int)(end - p), p);
	*ret_prefix = end;
	return 0;
}

static int wait_fd(int fd, short events, long long deadline)
{
	struct pollfd pfd = {.fd = fd, .events = events};
	long long left = deadline - now_ms();
	int r;

	if (left <= 0)
		return -ETIMEDOUT;
	r = poll(&pfd, 1, (int)left);
	if (r < 0)
		return -errno;
	return r == 0 ? -ETIMEDOUT : 0;
}

static int send_all(int fd, const char *buf, size_t len, long long deadline)
{
	while (len > 0) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			int r = wait_fd(fd, POLLOUT, deadline);

			if (r < 0)
				return r;
			continue;
		}
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Decode a chunked body in place. Returns the decoded length or -EBADMSG. */
static ssize_t dechunk(char *body, size_t len)
{
	size_t in = 0, out = 0;

	for (;;) {
		char *end;
		unsigned long n;
		char *crlf = memmem(body + in, len - in, "\r\n", 2);

		if (!crlf)
			return -EBADMSG;
		errno = 0;
		n = strtoul(body + in, &end, 16);
		if (errno || end == body + in)
			return -EBADMSG;
		in = (size_t)(crlf - body) + 2;
		if (n == 0)
			return (ssize_t)out;
		if (n > len - in || len - in - n < 2)
			return -EBADMSG;
		memmove(body + out, body + in, n);
		out += n;
		in += n + 2;
	}
}

int http_client_request(const char *url, const char *method, const char *path,
                        const char *extra_headers, const char *body, size_t body_len,
                        int timeout_ms, struct http_response *ret)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	char host[128];
	const char *prefix;
	_cleanup_close_ int fd = -EBADF;
	_cleanup_free_ char *req = NULL, *buf = NULL;
	size_t len = 0, cap = 0;
	long long deadline = now_ms() + timeout_ms;
	char *head_end, *p;
	int status, r, n;
	bool chunked = false;
	long long clen = -1;

	r = parse_url(url, &ss, &sslen, host, sizeof(host), &prefix);
	if (r < 0)
		return r;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&ss, sslen) < 0) {
		int so = 0;
		socklen_t sl = sizeof(so);

		if (errno != EINPROGRESS)
			return -errno;
		r = wait_fd(fd, POLLOUT, deadline);
		if (r < 0)
			return r;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl) < 0)
			return -errno;
		if (so)
			return -so;
	}
	n = asprintf(&req,
	             "%s %.*s%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n"
	             "User-Agent: cloister-cli\r\n%s%s%zu\r\n\r\n",
	             method, (int)strcspn(prefix, "?"), prefix, path, host,
	             extra_headers ? extra_headers : "",
	             body ? "Content-Type: application/json\r\nContent-Length: "
	                  : "Content-Length: ",
	             body ? body_len : 0);
	if (n < 0)
		return -ENOMEM;
	r = send_all(fd, req, (size_t)n, deadline);
	if (r >= 0 && body)
		r = send_all(fd, body, body_len, deadline);
	if (r < 0)
		return r;
	for (;;) {
		ssize_t got;

		if (len + 4096 + 1 > cap) {
			size_t c = cap ? cap * 2 : 16384;
			char *b;

			if (c > HTTP_CLIENT_MAX_RESPONSE + 8192)
				return -EFBIG;
			b = realloc(buf, c);
			if (!b)
				return -ENOMEM;
			buf = b;
			cap = c;
		}
		got = recv(fd, buf + len, cap - len - 1, 0);
		if (got < 0 && (errno == EAGAIN || errno == EINTR)) {
			r = wait_fd(fd, POLLIN, deadline);
			if (r < 0)
				return r;
			continue;
		}
		if (got < 0)
			return -errno;
		if (got == 0)
			break;
		len += (size_t)got;
		buf[len] = '\0';
		/* With a Content-Length, stop as soon as the body is complete. */
		head_end = strstr(buf, "\r\n\r\n");
		if (head_end && clen < 0 && !chunked) {
			p = strcasestr(buf, "\r\ncontent-length:");
			if (p && p < head_end)
				clen = strtoll(p + 17, NULL, 10);
			p = strcasestr(buf, "\r\ntransfer-encoding: chunked");
			chunked = p && p < head_end;
		}
		if (head_end && clen >= 0 && (size_t)(head_end + 4 - buf) + (size_t)clen <= len)
			break;
	}
	if (!buf)
		return -EBADMSG;
	buf[len] = '\0';
	if (sscanf(buf, "HTTP/1.%*1[01] %3d", &status) != 1)
		return -EBADMSG;
	head_end = strstr(buf, "\r\n\r\n");
	if (!head_end)
		return -EBADMSG;
	{
		size_t off = (size_t)(head_end + 4 - buf);
		size_t blen = len - off;
		char *b;

		if (!chunked) {
			p = strcasestr(buf, "\r\ntransfer-encoding: chunked");
			chunked = p && p < head_end;
		}
		b = malloc(blen + 1);
		if (!b)
			return -ENOMEM;
		memcpy(b, buf + off, blen);
		if (chunked) {
			ssize_t d = dechunk(b, blen);

			if (d < 0) {
				free(b);
				return (int)d;
			}
			blen = (size_t)d;
		} else if (clen >= 0 && (size_t)clen < blen) {
			blen = (size_t)clen;
		}
		b[blen] = '\0';
		ret->status = status;
		ret->body = b;
		ret->body_len = blen;
	}
	return 0;
}

void http_response_free(struct http_response *resp)
{
	if (!resp)
		return;
	free(resp->body);
	resp->body = NULL;
}
