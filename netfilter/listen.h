/* The supervisor's sockets inside the sandbox netns: the transparent proxy's TCP listeners and
 * the resolver's UDP and TCP sockets, on the loopback addresses where nft_egress.h redirects.
 *
 * They are created inside the netns (SO_ORIGINAL_DST looks the connection up in the
 * conntrack table of the socket's own netns, so a listener in the host netns would never find
 * it) and returned to the caller, who accepts / receives on them from the host netns: a socket
 * keeps its netns whatever thread uses it. Every fd is non-blocking and O_CLOEXEC; accepted
 * sockets should be taken with accept4(SOCK_NONBLOCK | SOCK_CLOEXEC).
 *
 * A UDP reply sent with sendto() to the address recvfrom() gave reaches the client from the
 * address it asked (conntrack undoes the redirect), so the resolver needs no original
 * destination. */
#ifndef CLOISTER_NETFILTER_LISTEN_H
#define CLOISTER_NETFILTER_LISTEN_H

#include <errno.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/error.h"

struct netfilter_listeners {
	int proxy4;   /* TCP, listening on 127.0.0.1:proxy_port */
	int proxy6;   /* TCP, listening on [::1]:proxy_port (IPV6_V6ONLY); -EBADF without IPv6 */
	int dns_udp4; /* UDP, bound to 127.0.0.1:dns_port */
	int dns_udp6; /* UDP, bound to [::1]:dns_port; -EBADF without IPv6 */
	int dns_tcp4; /* TCP, listening on 127.0.0.1:dns_port */
	int dns_tcp6; /* TCP, listening on [::1]:dns_port; -EBADF without IPv6 */
	uint16_t proxy_port;
	uint16_t dns_port;
};

#define NETFILTER_LISTENERS_INIT                                                            \
	{                                                                                   \
		.proxy4 = -EBADF, .proxy6 = -EBADF, .dns_udp4 = -EBADF, .dns_udp6 = -EBADF, \
		.dns_tcp4 = -EBADF, .dns_tcp6 = -EBADF,                                     \
	}

/* Create every socket in the netns of netns_fd. A port 0 lets the kernel choose one (the same
 * for both families and, for DNS, for UDP and TCP). On success *ret holds the fds (the
 * caller's: netfilter_listeners_close) and the ports; on failure nothing is left open. */
int netfilter_listeners_open(int netns_fd, uint16_t proxy_port, uint16_t dns_port,
                             struct netfilter_listeners *ret, struct cl_error *err);

/* Close every fd that is open and reset them to -EBADF. */
void netfilter_listeners_close(struct netfilter_listeners *l);

/* The destination the client of accepted_fd (accepted on a proxy listener) connected to,
 * before the redirect: struct sockaddr_in or sockaddr_in6 (family of the listener) in *ret.
 * -ENOENT when the connection was not redirected (addressed to the listener itself: the proxy
 * must not dial itself) or conntrack does not know it; -errno otherwise. */
int netfilter_original_dst(int accepted_fd, struct sockaddr_storage *ret);

#endif
