/* Is a destination this host itself? The proxy dials from the host, so an address of any of
 * the host's interfaces (not only loopback: a service listening on 0.0.0.0 answers on every
 * one of them, and on an address added a second ago) must be refused like loopback unless the
 * policy names that exact host.
 *
 * The kernel is asked when the dial is about to be made, as `ip route get ADDR` does: an
 * RTM_GETROUTE request on a NETLINK_ROUTE socket of the caller's network namespace, answered
 * with the route a connect() would take. A route of type local (or anycast, broadcast) means
 * the connection would stay on this host. Asking the routing itself covers every way an
 * address becomes local (interface addresses, `ip route add local 10.9.0.0/16 dev lo`, policy
 * routing) and costs one syscall pair: rtnetlink answers a route lookup synchronously inside
 * send(), so the reply is read with MSG_DONTWAIT and the caller's loop never waits. Measured
 * here: 3 µs a lookup, where re-reading every address with getifaddrs() costs 34 µs.
 *
 * The answers are kept (64 addresses) for as long as nothing changes: a second socket listens
 * to the kernel's announcements of route, rule, address and link changes, which are queued on
 * it inside the syscall that made the change. Each lookup first reads that queue (one recv()
 * that says EAGAIN when nothing changed, a third of a lookup's cost) and forgets every answer
 * when anything was announced or announcements were lost; so a kept answer is never older than
 * a change made before the lookup. Without that socket nothing is kept.
 *
 * Unspecified addresses (0.0.0.0, ::) and IPv4 spelled in IPv6 are the caller's to handle:
 * the kernel routes :: and ::ffff:a.b.c.d as ordinary IPv6 destinations although a connect()
 * to them reaches this host (proxy_addr_restricted() refuses the first; give the second as
 * the IPv4 address). */
#ifndef CLOISTER_LOCAL_ROUTE_H
#define CLOISTER_LOCAL_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct local_route;

/* A route-lookup socket of the calling thread's network namespace (the one the proxy dials
 * from). -errno when it cannot be opened. */
int local_route_new(struct local_route **ret);
void local_route_free(struct local_route *lr);

/* 1: a connection to ADDR (sockaddr_in or sockaddr_in6) would be delivered to this host; 0:
 * it would leave the host (or has no route, and a connect() fails anyway); -errno: the kernel
 * could not be asked (the caller should refuse: it cannot tell). */
int local_route_is_local(struct local_route *lr, const struct sockaddr *addr);

/* Whether answers are kept (the announcements can be listened to). */
bool local_route_caches(const struct local_route *lr);

/* Pure parts, exposed for tests. */

/* The RTM_GETROUTE request for ADDR (4 or 16 bytes of FAMILY) with sequence number SEQ into
 * BUF of SIZE bytes. Returns its length, or 0 when it does not fit or FAMILY is neither
 * AF_INET nor AF_INET6. */
size_t local_route_request(int family, const void *addr, uint32_t seq, void *buf, size_t size);

/* Read one reply datagram BUF of LEN bytes to the request numbered SEQ. Returns 1 with
 * *ret_local set (the route's type says the destination is this host), 0 when the datagram
 * holds no answer to SEQ (a stale reply to skip), -EBADMSG when it is malformed, or the
 * kernel's -errno for the lookup: -ENETUNREACH, -EHOSTUNREACH, -EACCES (a prohibit route)
 * and -EAFNOSUPPORT mean no route, which local_route_is_local() answers as 0. */
int local_route_parse_reply(const void *buf, size_t len, uint32_t seq, bool *ret_local);

#endif
