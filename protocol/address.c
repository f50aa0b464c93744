#include "protocol/address.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int bad(struct cl_error *err, const char *why)
{
	return cl_error_set(err, -EINVAL,
	                    "expected host:port with a numeric address (127.0.0.1:7788, "
	                    "[::1]:7788) or localhost: %s",
	                    why);
}

/* 1..65535 (0.. when zero_ok), decimal digits only. */
static int parse_port(const char *s, bool zero_ok, unsigned *ret)
{
	unsigned v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(*s - '0');
		if (v > 65535)
			return -EINVAL;
	}
	if (v == 0 && !zero_ok)
		return -EINVAL;
	*ret = v;
	return 0;
}

static int parse(const char *s, bool zero_ok, struct cl_error *err,
                 struct sockaddr_storage *ret_addr, socklen_t *ret_len)
{
	char host[CL_ADDRESS_MAX + 1];
	const char *colon;
	size_t hlen;
	unsigned port;
	struct sockaddr_storage ss;

	if (!s || !*s)
		return bad(err, "empty");
	if (strnlen(s, CL_ADDRESS_MAX + 1) > CL_ADDRESS_MAX)
		return bad(err, "too long");
	memset(&ss, 0, sizeof(ss));

	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;

		if (!close || close[1] != ':')
			return bad(err, "no ']:' after an IPv6 address");
		hlen = (size_t)(close - s - 1);
		memcpy(host, s + 1, hlen);
		host[hlen] = '\0';
		if (parse_port(close + 2, zero_ok, &port) < 0)
			return bad(err, "port not in 1..65535");
		if (inet_pton(AF_INET6, host, &a6->sin6_addr) != 1)
			return bad(err, "not an IPv6 address");
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		*ret_addr = ss;
		*ret_len = sizeof(*a6);
		return 0;
	}

	colon = strrchr(s, ':');
	if (!colon)
		return bad(err, "no port");
	hlen = (size_t)(colon - s);
	memcpy(host, s, hlen);
	host[hlen] = '\0';
	if (strchr(host, ':'))
		return bad(err, "an IPv6 address needs brackets");
	if (parse_port(colon + 1, zero_ok, &port) < 0)
		return bad(err, "port not in 1..65535");
	{
		struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;

		if (strcmp(host, "localhost") == 0)
			a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		else if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
			return bad(err, "not an IPv4 address (names are not resolved)");
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		*ret_addr = ss;
		*ret_len = sizeof(*a4);
	}
	return 0;
}

int cl_address_parse(const char *s, struct cl_error *err, struct sockaddr_storage *ret_addr,
                     socklen_t *ret_len)
{
	return parse(s, false, err, ret_addr, ret_len);
}

int cl_address_parse_listen(const char *s, struct cl_error *err, struct sockaddr_storage *ret_addr,
                            socklen_t *ret_len)
{
	return parse(s, true, err, ret_addr, ret_len);
}

int cl_address_parse_local(const char *s, struct cl_error *err, struct sockaddr_storage *ret_addr,
                           socklen_t *ret_len)
{
	char full[CL_ADDRESS_MAX + 16];

	/* Without an address: loopback. */
	if (s && (s[0] == ':' || (s[0] && strspn(s, "0123456789") == strlen(s)))) {
		snprintf(full, sizeof(full), "127.0.0.1%s%.*s", s[0] == ':' ? "" : ":",
		         CL_ADDRESS_MAX, s);
		s = full;
	}
	return parse(s, true, err, ret_addr, ret_len);
}

int cl_address_split(const char *s, struct cl_error *err, char *ret_host, size_t size,
                     uint16_t *ret_port)
{
	const char *host = s, *colon;
	size_t hlen;
	unsigned port;

	if (!s || !*s)
		return cl_error_set(err, -EINVAL, "expected HOST:PORT: empty");
	colon = strrchr(s, ':');
	if (!colon)
		return cl_error_set(err, -EINVAL, "expected HOST:PORT: no port");
	hlen = (size_t)(colon - s);
	if (s[0] == '[') {
		if (hlen < 2 || s[hlen - 1] != ']')
			return cl_error_set(err, -EINVAL, "expected [V6]:PORT");
		host++;
		hlen -= 2;
	}
	if (hlen == 0 || hlen >= size)
		return cl_error_set(err, -EINVAL, "expected HOST:PORT: %s host",
		                    hlen ? "too long a" : "no");
	if (parse_port(colon + 1, false, &port) < 0)
		return cl_error_set(err, -EINVAL, "expected HOST:PORT: port not in 1..65535");
	memcpy(ret_host, host, hlen);
	ret_host[hlen] = '\0';
	*ret_port = (uint16_t)port;
	return 0;
}

uint16_t cl_address_port(const struct sockaddr_storage *addr)
{
	if (addr->ss_family == AF_INET6) {
		struct sockaddr_in6 a6;

		memcpy(&a6, addr, sizeof(a6));
		return ntohs(a6.sin6_port);
	}
	struct sockaddr_in a4;

	memcpy(&a4, addr, sizeof(a4));
	return ntohs(a4.sin_port);
}

void cl_address_set_port(struct sockaddr_storage *addr, uint16_t port)
{
	if (addr->ss_family == AF_INET6) {
		struct sockaddr_in6 a6;

		memcpy(&a6, addr, sizeof(a6));
		a6.sin6_port = htons(port);
		memcpy(addr, &a6, sizeof(a6));
	} else {
		struct sockaddr_in a4;

		memcpy(&a4, addr, sizeof(a4));
		a4.sin_port = htons(port);
		memcpy(addr, &a4, sizeof(a4));
	}
}

void cl_address_format(const struct sockaddr_storage *addr, char *buf, size_t size)
{
	char text[INET6_ADDRSTRLEN] = "?";

	if (addr->ss_family == AF_INET6) {
		struct sockaddr_in6 a6;

		memcpy(&a6, addr, sizeof(a6));
		inet_ntop(AF_INET6, &a6.sin6_addr, text, sizeof(text));
		snprintf(buf, size, "[%s]:%u", text, (unsigned)ntohs(a6.sin6_port));
		return;
	}
	struct sockaddr_in a4;

	memcpy(&a4, addr, sizeof(a4));
	inet_ntop(AF_INET, &a4.sin_addr, text, sizeof(text));
	snprintf(buf, size, "%s:%u", text, (unsigned)ntohs(a4.sin_port));
}
