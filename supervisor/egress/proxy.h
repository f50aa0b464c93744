/* The egress proxy: every connection of a sandbox comes here, is named, decided by the owner
 * (policy, approval queue) and then relayed (relay.h) or refused.
 *
 * Two front-ends share one decision interface:
 *   - transparent (proxy_add_transparent): listeners netfilter made in the sandbox netns, or
 *     the host-side ones the eBPF redirect sends to. The original destination comes from
 *     ops->original_dst. The name is found in the first bytes the client sends (read with a
 *     deadline into a bounded buffer; sniff.h): the TLS ClientHello's SNI, else an HTTP Host
 *     header, else the name the sandbox's resolver gave out for that address (a fake IP),
 *     else the bare IP. Those fallbacks are used at once when the client ends its sending
 *     (EOF, even before any byte), and at the deadline (peek_named_ms / peek_ms) when it sends
 *     nothing and waits for the server to speak first (ssh, smtp); its EOF is relayed then
 *     like any half-close. When the connection is denied it is reset (RST): the agent fails
 *     fast.
 *   - CONNECT (proxy_add_connect; guardian-api.md "Proxy Endpoint"): Proxy-Authorization
 *     Basic with a registered cloister token as the password (else 407), `CONNECT host:port`
 *     (other methods: 405), then 200 and the tunnel, 403 {"error": "domain not in allowlist",
 *     "domain": …} when denied, 403 with the owner's reason for a pending ask that was
 *     refused (e.g. "Request timed out waiting for approval"), 502 when upstream cannot be
 *     resolved or reached, 504 when connecting to it timed out.
 *
 * Where it goes. Upstream is dialled from the proxy's own (host) netns, and always to what was
 * decided: a connection named by SNI, Host or the resolver goes to the host-side resolution of
 * that name (never to an address the agent chose: an SNI of an allowed name in a connection
 * to another address would otherwise be a way out); only an unnamed connection goes to its
 * original address, and is decided as that address. Loopback, unspecified, link-local and
 * cloud-metadata destinations (169.254.169.254, fd00:ec2::254), and every address of this host
 * (local_route.h: any interface's, IPv4 and IPv6, asked of the kernel at the dial, so an
 * address added a moment ago counts) are refused — as the original destination and as a
 * resolved one — unless ops->allow_restricted says the policy names that exact host. A fake
 * address the resolver handed out is not judged as an original destination: it stands for its
 * name, and only that name's resolution is dialled.
 *
 * Bounds: max_conns connections (more are reset at once), peek_bytes per connection while it
 * is named, head bytes of HTTP_HEAD_MAX_BYTES, timeouts for every phase. Every fd is
 * O_CLOEXEC|O_NONBLOCK. The listener fds stay the caller's. */
#ifndef CLOISTER_PROXY_H
#define CLOISTER_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "supervisor/policy/domain.h"
#include "base/loop.h"

struct resolver;
struct tokens;

enum proxy_source {
	PROXY_SOURCE_TRANSPARENT,
	PROXY_SOURCE_CONNECT,
};

enum proxy_verdict {
	PROXY_ALLOW,
	PROXY_DENY,
	PROXY_PENDING, /* the owner answers later with proxy_conn_decide() */
};

enum proxy_outcome {
	PROXY_OUTCOME_RELAYED,     /* allowed and relayed until it ended (see stats.end_reason) */
	PROXY_OUTCOME_DENIED,      /* the owner said no */
	PROXY_OUTCOME_REFUSED,     /* a restricted destination (loopback, link-local, metadata,
	                            * an address of this host) */
	PROXY_OUTCOME_UNREACHABLE, /* allowed, but not resolved or not reached upstream */
	PROXY_OUTCOME_CANCELLED,   /* the client left before it was decided, or proxy_free() */
	PROXY_OUTCOME_REJECTED,    /* no destination to be had: bad request, no auth, 405, over a
	                            * bound, no original destination */
};

/* What the owner decides on. Strings are valid during the callback only. */
struct proxy_conn_info {
	enum proxy_source source;
	const char *sandbox; /* transparent: the listener's; CONNECT: the token's cloister
	                      * (NULL in closed() for a client that never authenticated) */
	const char *project; /* may be NULL */
	const char *host;    /* normalised name, or an IP literal ("" before it is known) */
	uint16_t port;
	struct sockaddr_storage original_dst; /* transparent; AF_UNSPEC for CONNECT */
	struct sockaddr_storage peer;         /* the client's address */
	const char *name_source;              /* "sni", "http-host", "resolver", "connect", "ip" */
	pid_t pid; /* 0: unknown (the proxy itself never knows it; the peer address lets
	            * the owner attribute the connection, e.g. from a seccomp connect event) */
};

struct proxy_stats {
	uint64_t bytes_up;   /* client → upstream, what was read before the decision included */
	uint64_t bytes_down; /* upstream → client */
	uint64_t duration_ms;
	enum proxy_outcome outcome;
	const char *reason; /* a short text for the log ("idle timeout", "connection refused") */
};

struct proxy_conn;

struct proxy_ops {
	/* Decide INFO. PROXY_PENDING holds the connection (the client's bytes wait in its socket)
	 * until proxy_conn_decide(). Required. */
	enum proxy_verdict (*decide)(void *userdata, struct proxy_conn *conn,
	                             const struct proxy_conn_info *info);
	/* Every accepted connection ends here exactly once, for the audit line; CONN is freed
	 * after it returns. Optional. */
	void (*closed)(void *userdata, struct proxy_conn *conn, const struct proxy_conn_info *info,
	               const struct proxy_stats *stats);
	/* Transparent: the destination of the accepted FD (peer: its client end), e.g.
	 * netfilter_original_dst() or redirect_lookup(). Required for proxy_add_transparent(). */
	int (*original_dst)(void *userdata, int fd, const struct sockaddr *peer, socklen_t peer_len,
	                    struct sockaddr_storage *ret);
	/* Does the policy explicitly allow INFO's exact host although it is (or resolves to) a
	 * restricted address? NULL: never. */
	bool (*allow_restricted)(void *userdata, const struct proxy_conn_info *info);
};

struct proxy_config {
	struct resolver *resolver;   /* names of addresses, host-side lookups (required) */
	const struct tokens *tokens; /* CONNECT credentials (required for proxy_add_connect) */
	size_t max_conns;            /* default 4096 */
	size_t peek_bytes;           /* default 16 KiB (at most 64 KiB) */
	uint64_t peek_ms;            /* wait for first bytes; default 1500 */
	uint64_t peek_named_ms;      /* the same when the resolver knows the name; default 300 */
	uint64_t head_ms;            /* CONNECT: the request head; default 10000 */
	uint64_t connect_ms;         /* upstream connect, per address; default 10000 */
	uint64_t pending_max_ms;     /* a pending ask nobody answers is denied; default 15 min */
	uint64_t idle_ms;            /* relay idle timeout; default 1 hour; 0: none */
	size_t pipe_size;            /* relay pipes; 0: relay.h's default */
};

void proxy_config_init(struct proxy_config *cfg);

struct proxy;

/* -EINVAL without a resolver or ops->decide; -errno when the route-lookup socket
 * (local_route.h) cannot be opened. Call it in the network namespace upstream is dialled
 * from. */
int proxy_new(struct loop *loop, const struct proxy_config *cfg, const struct proxy_ops *ops,
              void *userdata, struct proxy **ret);
/* Resets every connection (ops->closed is called with PROXY_OUTCOME_CANCELLED for those not
 * yet relayed and RELAYED for the others) and frees. NULL is fine. */
void proxy_free(struct proxy *p);

/* Accept transparent connections of SANDBOX (PROJECT may be NULL; both copied) on the
 * listening socket FD. */
int proxy_add_transparent(struct proxy *p, int fd, const char *sandbox, const char *project);
/* Accept CONNECT-proxy clients on the listening socket FD. */
int proxy_add_connect(struct proxy *p, int fd);

/* Stop accepting on listening socket FD (still the caller's to close); its connections go
 * on. -ENOENT when FD is not one of ours. */
int proxy_remove_listener(struct proxy *p, int fd);

/* Answer a connection decide() left pending. REASON (may be NULL) is the 403's error text for
 * a CONNECT client when ALLOW is false ("domain not in allowlist" when NULL). May call
 * ops->closed before it returns. -EALREADY when CONN is not pending (it was answered). CONN
 * must be one whose closed() has not been called yet; proxy_conn_id() gives a number to
 * remember it by (e.g. as the queue waiter's cookie). */
int proxy_conn_decide(struct proxy_conn *conn, bool allow, const char *reason);
uint64_t proxy_conn_id(const struct proxy_conn *conn);

const char *proxy_outcome_to_string(enum proxy_outcome outcome);

/* Is ADDR (sockaddr_in/in6) loopback, unspecified, link-local or a cloud-metadata address?
 * IPv4-mapped IPv6 is judged as IPv4. */
bool proxy_addr_restricted(const struct sockaddr *addr);

#endif
