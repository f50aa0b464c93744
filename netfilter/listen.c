/* Listener sockets created inside the sandbox netns; original destinations from conntrack.
 * See listen.h. */
#include "netfilter/listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "netfilter/netns.h"
#include "base/cleanup.h"

/* From <linux/netfilter_ipv4.h> and <linux/netfilter_ipv6/ip6_tables.h>, which clash with
 * glibc's <netinet/in.h>. */
#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80
#endif
#ifndef IP6T_SO_ORIGINAL_DST
#define IP6T_SO_ORIGINAL_DST 80
#endif

/* Attempts at finding one free port for all the sockets of a group when the kernel chooses. */
#define PORT_ATTEMPTS 16

static void set_loopback(struct sockaddr_storage *ss, socklen_t *len, int family, uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sin->sin_port = htons(port);
		*len = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_addr = in6addr_loopback;
		sin6->sin6_port = htons(port);
		*len = sizeof(*sin6);
	}
}

/* A socket of type on the loopback address of family, port (0: any), listening if TCP. */
static int open_socket(int family, int type, uint16_t port, int *ret_fd, uint16_t *ret_port)
{
	_cleanup_close_ int fd = -EBADF;
	struct sockaddr_storage ss;
	socklen_t len;
	int one = 1;

	fd = socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
		return -errno;
	/* A restarted supervisor must not wait out TIME_WAIT of its predecessor's connections. */
	if (type == SOCK_STREAM && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		return -errno;
	set_loopback(&ss, &len, family, port);
	if (bind(fd, (struct sockaddr *)&ss, len) < 0)
		return -errno;
	if (type == SOCK_STREAM && listen(fd, SOMAXCONN) < 0)
		return -errno;
	len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -errno;
	*ret_port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
	                                    : ((struct sockaddr_in6 *)&ss)->sin6_port);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

struct group_member {
	int family;
	int type;
	int *fd;
};

static void close_group(const struct group_member *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (*m[i].fd >= 0) {
			close(*m[i].fd);
			*m[i].fd = -EBADF;
		}
}

/* Open every member on one port: the first one's (chosen by the kernel when port is 0). IPv6
 * members are left at -EBADF when the netns has no IPv6. */
static int open_group(const struct group_member *m, size_t n, uint16_t port, uint16_t *ret_port)
{
	int r = -EADDRINUSE;

	for (int attempt = 0; attempt < PORT_ATTEMPTS; attempt++) {
		uint16_t chosen = port;

		r = 0;
		for (size_t i = 0; i < n && r >= 0; i++) {
			uint16_t got = 0;

			r = open_socket(m[i].family, m[i].type, chosen, m[i].fd, &got);
			if (r == -EAFNOSUPPORT || (r == -EADDRNOTAVAIL && m[i].family == AF_INET6))
				r = 0; /* no IPv6 here */
			else if (r >= 0)
				chosen = got;
		}
		if (r >= 0) {
			*ret_port = chosen;
			return 0;
		}
		close_group(m, n);
		/* Another socket held the kernel's choice in a later member's family or type. */
		if (r != -EADDRINUSE || port != 0)
			break;
	}
	return r;
}

struct open_ctx {
	uint16_t proxy_port, dns_port;
	struct netfilter_listeners *l;
	struct cl_error *err;
	bool ran;
};

static int open_in_netns(void *userdata)
{
	struct open_ctx *c = userdata;
	struct netfilter_listeners *l = c->l;
	const struct group_member proxy[] = {
	        {AF_INET, SOCK_STREAM, &l->proxy4},
	        {AF_INET6, SOCK_STREAM, &l->proxy6},
	};
	const struct group_member dns[] = {
	        {AF_INET, SOCK_DGRAM, &l->dns_udp4},
	        {AF_INET, SOCK_STREAM, &l->dns_tcp4},
	        {AF_INET6, SOCK_DGRAM, &l->dns_udp6},
	        {AF_INET6, SOCK_STREAM, &l->dns_tcp6},
	};
	int r;

	c->ran = true;
	r = open_group(proxy, ELEMENTSOF(proxy), c->proxy_port, &l->proxy_port);
	if (r < 0)
		return cl_error_set(c->err, r, "proxy listener on loopback port %u: %s",
		                    (unsigned)c->proxy_port, strerror(-r));
	r = open_group(dns, ELEMENTSOF(dns), c->dns_port, &l->dns_port);
	if (r < 0) {
		close_group(proxy, ELEMENTSOF(proxy));
		return cl_error_set(c->err, r, "resolver sockets on loopback port %u: %s",
		                    (unsigned)c->dns_port, strerror(-r));
	}
	return 0;
}

int netfilter_listeners_open(int netns_fd, uint16_t proxy_port, uint16_t dns_port,
                             struct netfilter_listeners *ret, struct cl_error *err)
{
	struct netfilter_listeners l = NETFILTER_LISTENERS_INIT;
	struct open_ctx c = {.proxy_port = proxy_port, .dns_port = dns_port, .l = &l, .err = err};
	int r;

	r = netfilter_run_in_netns(netns_fd, open_in_netns, &c);
	if (r < 0) {
		if (!c.ran)
			cl_error_set(err, r, "joining the sandbox network namespace: %s",
			             strerror(-r));
		return r;
	}
	*ret = l;
	return 0;
}

void netfilter_listeners_close(struct netfilter_listeners *l)
{
	int *fds[] = {&l->proxy4,   &l->proxy6,   &l->dns_udp4,
	              &l->dns_udp6, &l->dns_tcp4, &l->dns_tcp6};

	for (size_t i = 0; i < ELEMENTSOF(fds); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -EBADF;
	}
}

static bool same_address(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;

		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	{
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;

		return x->sin6_port == y->sin6_port &&
		       memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) == 0;
	}
}

int netfilter_original_dst(int accepted_fd, struct sockaddr_storage *ret)
{
	struct sockaddr_storage local, orig;
	socklen_t len = sizeof(local);
	int r;

	if (getsockname(accepted_fd, (struct sockaddr *)&local, &len) < 0)
		return -errno;
	memset(&orig, 0, sizeof(orig));
	if (local.ss_family == AF_INET) {
		len = sizeof(struct sockaddr_in);
		r = getsockopt(accepted_fd, SOL_IP, SO_ORIGINAL_DST, &orig, &len);
	} else if (local.ss_family == AF_INET6) {
		len = sizeof(struct sockaddr_in6);
		r = getsockopt(accepted_fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &orig, &len);
	} else {
		return -EAFNOSUPPORT;
	}
	if (r < 0)
		return -errno;
	/* conntrack knows every connection, redirected or not: one whose original destination
	 * is the listener itself was made to it directly. */
	if (orig.ss_family != local.ss_family || same_address(&orig, &local))
		return -ENOENT;
	*ret = orig;
	return 0;
}
