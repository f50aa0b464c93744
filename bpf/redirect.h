/* Egress redirect for sandboxes that share the host's network (--net=host): eBPF cgroup hooks
 * (redirect.bpf.c) attached to the sandbox's cgroup send every TCP connection to the
 * supervisor's transparent listener and every DNS datagram to its resolver, in the host netns,
 * and refuse the rest.
 *
 *   TCP or UDP to a refused port on this host (redirect_refuse_port: the supervisors' own
 *   APIs; those other supervisors bind later, redirect_watch_peers; always our proxy_port and
 *   dns_port) at any address that reaches its loopback
 *   listeners — 127.0.0.0/8, 0.0.0.0/8, ::1, ::, ::ffff:127.x.y.z, ::ffff:0.x.y.z → EPERM
 *   TCP connect to anything but loopback  → 127.0.0.1:proxy_port / [::1]:proxy_port
 *   UDP to port 53 (connect or sendmsg)   → 127.0.0.1:dns_port / [::1]:dns_port
 *   other UDP to anything but loopback    → EPERM
 *   sockets other than TCP and UDP (raw, ICMP ping, SCTP, MPTCP…) → socket() fails with EPERM
 *   the agent's getpeername() and a resolver answer's source show the original address
 *   bind to 0.0.0.0 / :: / ::ffff:0.0.0.0 → made to loopback; to another non-loopback
 *   address → EPERM; and the sandbox's sockets receive only what came in on loopback (what
 *   listen() or an unbound UDP socket binds to the wildcard by itself): nobody on the network
 *   reaches the agent's listeners
 *
 * How the proxy finds where a connection was going: connect4/6 keep the original destination
 * in the socket's local storage; a sockops program, when the client's local port is bound and
 * before the SYN leaves, files it under the client's (local address, port), which is exactly
 * the peer the proxy's accept() returns; redirect_lookup() takes it from there. A connection
 * from the sandbox that was not redirected clears the entry of its (address, port), so an entry
 * is always the latest connection's from that client end.
 *
 * Limits (what the netns mode does not have): loopback stays reachable — TCP and UDP to the
 * host's own 127.0.0.0/8 and ::1 services are not intercepted (only DNS is), except the
 * refused ports; unix sockets are not inet sockets, none of this applies to them; a socket created
 * before its process entered the cgroup is not affected (attach before the agent starts); a
 * socket bound to a non-loopback device (SO_BINDTODEVICE) or to an IPv4-mapped address on an
 * IPv6 socket cannot reach the loopback listener and fails to connect; an unconnected UDP
 * socket that queries several servers sees every answer as coming from the last one it asked;
 * AF_PACKET sockets are outside these hooks (they need CAP_NET_RAW in the host netns, which an
 * agent must not have). The listeners must be bound before attach. A port a later supervisor
 * bound stays refused until this sandbox's programs go, after that supervisor is gone too; the
 * watch sees the processes of the cgroup2 hierarchy as mounted here (in a cgroup namespace,
 * those below its root).
 *
 * Needs root (CAP_BPF, CAP_NET_ADMIN). */
#ifndef CLOISTER_REDIRECT_H
#define CLOISTER_REDIRECT_H

#include <stdint.h>
#include <sys/socket.h>

#include "base/error.h"

/* Ports redirect_refuse_port() takes at most. */
#define REDIRECT_REFUSED_MAX 256

struct redirect_config {
	uint16_t proxy_port; /* the transparent TCP listener on 127.0.0.1 and [::1] */
	uint16_t dns_port;   /* the resolver (UDP, TCP) on 127.0.0.1 and [::1] */
};

struct redirect;

/* Load the programs for these ports (not attached yet). -EINVAL for a port 0. */
int redirect_open(const struct redirect_config *cfg, struct redirect **ret, struct cl_error *err);

/* Attach every program to the cgroup (an O_DIRECTORY fd of a cgroup2 directory; the programs
 * then apply to its descendants too). All or nothing: on failure no link stays. -EBUSY if
 * already attached. */
int redirect_attach(struct redirect *r, int cgroup_fd, struct cl_error *err);

/* Refuse the sandbox's connects and datagrams to PORT (host byte order) at every address that
 * reaches this host's loopback (see above); other destinations with that port keep their
 * treatment. Applies to connects after the call: call it before attach. -EINVAL for port 0,
 * -E2BIG when REDIRECT_REFUSED_MAX ports are refused already; a port refused twice is
 * fine. */
int redirect_refuse_port(struct redirect *r, uint16_t port);

/* From now on, refuse the sandbox every port that another Cloister supervisor (a process whose
 * executable is named cloister-supervisor, of any user; not this one) binds in this network
 * namespace, also after attach: cgroup post_bind programs at the root of the cgroup2
 * hierarchy see every process's binds, before the listen() that would make them reachable.
 * Call it before listing the supervisors already listening, so that none falls between the
 * two. -EBUSY when already watching. */
int redirect_watch_peers(struct redirect *r, struct cl_error *err);

/* Destroy every link (the watch's too). Idempotent. */
void redirect_detach(struct redirect *r);

/* The original destination of the redirected TCP connection whose client end is peer (what
 * accept() or getpeername() on the proxy's side returned), as a sockaddr_in or sockaddr_in6
 * in *ret_orig. The entry is consumed: a second lookup gives -ENOENT. -ENOENT when the
 * connection was not redirected; -EAFNOSUPPORT / -EINVAL for a bad peer. */
int redirect_lookup(struct redirect *r, const struct sockaddr *peer, socklen_t peer_len,
                    struct sockaddr_storage *ret_orig);

/* Detach and unload. NULL is accepted. */
void redirect_free(struct redirect *r);

#endif
