/* Name resolution, both ways, on the loop.
 *
 * For the agent: its DNS server, on the UDP and TCP sockets netfilter made in its netns
 * (every query to port 53 lands there). Queries are parsed with dns_msg.h; a malformed one is
 * answered REFUSED, a name the policy denies NXDOMAIN (fail fast), and an A/AAAA question for
 * any other name
 *   - fake-IP mode (default): an address from fakeip.h, so that whatever protocol a TCP
 *     connection speaks, the proxy knows the name it was for and decides on it; nothing
 *     about the name leaves the machine before a connection to it is allowed. For a name
 *     the policy allows (name_allowed says RESOLVER_NAME_LOOKUP) the host-side lookup
 *     starts at once in the background, as real-IP mode's would: the proxy's dial then
 *     finds the answer in the cache;
 *   - real-IP mode: for a name the policy allows, the host-side lookup below, answered with
 *     the real addresses, each recorded as belonging to the name (so connections to it are
 *     named too); a name it does not list (an ask at connect) gets a fake address as in
 *     fake-IP mode, so it is looked up only once a connection to it is allowed: a name is
 *     never sent to the host's DNS before the policy or a person allowed it.
 * Other question types get an empty answer (NODATA): no TXT, no MX, nothing to tunnel through.
 *
 * For the proxy: host-side lookups that never block, from the host's own sources in the
 * host's order (hostsdb.h): an extra hosts file first when one is given (`--hosts`), then
 * `files` (/etc/hosts) and `dns` as /etc/nsswitch.conf's `hosts:` line orders them. DNS is a
 * cache kept for the answer's TTL, then the host's resolver (the first nameserver of
 * /etc/resolv.conf, or a configured address) over UDP: A and AAAA at once, random ids from a
 * socket of their own, one resend, a timeout. Identical lookups in flight share one query.
 *
 * Bounds: cache entries, lookups in flight, TCP clients, pending agent queries; over a bound
 * a lookup fails with -EBUSY and an agent's query gets SERVFAIL. */
#ifndef CLOISTER_RESOLVER_H
#define CLOISTER_RESOLVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/error.h"
#include "supervisor/egress/dns_msg.h"
#include "base/loop.h"

struct resolver_config {
	bool fake_ip;                     /* default true */
	struct sockaddr_storage upstream; /* AF_UNSPEC (default): from resolv_conf */
	const char *resolv_conf;          /* default "/etc/resolv.conf" */
	const char *hosts_file;           /* --hosts: consulted first; default NULL: none */
	const char *system_hosts;         /* `files`; default "/etc/hosts"; NULL: none */
	const char *nsswitch_conf;        /* default "/etc/nsswitch.conf"; NULL: "files dns" */
	size_t fake_names;                /* default 65536 */
	size_t real_records;              /* default 16384 */
	size_t cache_max;                 /* default 1024 names */
	size_t max_lookups;               /* in flight; default 256 */
	size_t max_tcp_clients;           /* default 64 */
	uint32_t fake_ttl;                /* seconds; default 30 */
	uint32_t max_ttl;                 /* cap on cached and forwarded TTLs; default 300 */
	uint64_t timeout_ms;              /* per lookup; default 3000 (one resend at a third) */
};

void resolver_config_init(struct resolver_config *cfg);

/* What the agent's DNS server does with a name. */
enum resolver_name {
	RESOLVER_NAME_DENY,   /* NXDOMAIN */
	RESOLVER_NAME_LOOKUP, /* allowed: real-IP mode may look it up on the host */
	RESOLVER_NAME_LOCAL,  /* neither (an ask at connect): answered from here, never upstream */
};

struct resolver_ops {
	/* What may the agent learn of NAME (normalised)? TAG is the one the query's socket was
	 * served with. A NULL callback looks up every name. */
	enum resolver_name (*name_allowed)(void *userdata, const void *tag, const char *name);
};

struct resolver;

/* -EINVAL (err says why) when the hosts file cannot be read or is over 256 KiB, or no
 * upstream is configured and resolv.conf names none (lookups then fail with -ENXIO instead:
 * that is not an error here). */
int resolver_new(struct loop *loop, const struct resolver_config *cfg,
                 const struct resolver_ops *ops, void *userdata, struct resolver **ret,
                 struct cl_error *err);
/* Stops serving, cancels every lookup (their callbacks are not called) and frees. Does not
 * close the sockets given to resolver_serve_*. NULL is fine. */
void resolver_free(struct resolver *r);

/* Serve the agent's DNS on a bound UDP socket / a listening TCP socket (non-blocking; still
 * the caller's to close, after resolver_free). TAG (anything, may be NULL) is passed to
 * name_allowed for the queries that come through FD: whose sandbox asked. */
int resolver_serve_udp(struct resolver *r, int fd, const void *tag);
int resolver_serve_tcp(struct resolver *r, int fd, const void *tag);

/* Stop serving FD (still the caller's to close). -ENOENT when it is not served. */
int resolver_unserve(struct resolver *r, int fd);

/* The name the agent resolved to reach ADDR (sockaddr_in/in6), copied to RET_NAME
 * (DOMAIN_HOST_MAX + 1 bytes); *ret_fake tells whether ADDR was one of our fake addresses.
 * -ENOENT when no name is known (for a fake address: the agent used one that was never
 * handed out or was evicted; the connection cannot go anywhere). */
int resolver_name_of(struct resolver *r, const struct sockaddr *addr, char *ret_name,
                     bool *ret_fake);

/* Host-side lookup of NAME (a host name or an IP literal). */
struct resolver_lookup;
/* ERROR 0 with ADDRS (A and AAAA, at least one); or -ENOENT (NXDOMAIN), -ENODATA (no
 * address), -ETIMEDOUT, -EIO (a bad or SERVFAIL answer), -ENXIO (no upstream). */
typedef void (*resolver_done_fn)(void *userdata, int error, const struct dns_addrs *addrs);

/* Returns 1 with *ret_addrs filled when the answer is known at once (a literal, a hosts
 * file, the cache); 0 when FN will be called later from the loop (never from here), with
 * *ret_lookup a handle for resolver_lookup_cancel() until then; -EINVAL for a bad name,
 * -EBUSY over max_lookups, -ENOMEM; -EINVAL too when the answer is not known at once and FN
 * is NULL. */
int resolver_lookup(struct resolver *r, const char *name, struct dns_addrs *ret_addrs,
                    resolver_done_fn fn, void *userdata, struct resolver_lookup **ret_lookup);
/* FN will not be called. */
void resolver_lookup_cancel(struct resolver *r, struct resolver_lookup *lookup);

/* The host-side sources and their order in one line, for `run -v` (hostsdb_describe). */
void resolver_describe_sources(const struct resolver *r, char *buf, size_t size);

/* Pure helpers, exposed for tests. */

/* The addresses TEXT (an /etc/hosts file of LEN bytes) gives NAME (normalised), case
 * insensitively, in file order. -ENOENT when none. */
int resolver_hosts_find(const char *text, size_t len, const char *name, struct dns_addrs *ret);

/* The first "nameserver" of TEXT (resolv.conf), port 53. -ENOENT when none. */
int resolver_conf_nameserver(const char *text, size_t len, struct sockaddr_storage *ret);

/* A question for NAME of type QTYPE (class IN) as dns_query_build() and dns_response_addrs()
 * take it. -EINVAL for a name that is not a valid host name. */
int resolver_question(const char *name, uint16_t qtype, struct dns_query *ret);

#endif
