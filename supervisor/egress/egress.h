/* Egress for the supervisor's sandboxes: the proxy (proxy.h), its resolver (resolver.h) and
 * the kernel side (netfilter/), deciding every connection by name through the domain policy
 * and the one approval queue (hub.h).
 *
 *   - a sandbox netns (run): egress_attach_netns() gives it a route, the nftables ruleset and
 *     listeners inside it, before the agent starts; every TCP connection lands on the
 *     transparent proxy and every DNS query on the resolver (fake IPs by default);
 *   - the CONNECT proxy (guardian-api.md, default 127.0.0.1:3128) for clients outside a
 *     sandbox and the shim fallback, authenticated by a registered cloister token.
 *
 * A connection the policy allows is relayed; one it denies is reset (transparent) or gets 403
 * (CONNECT); an unlisted one with unlisted_domain_behavior request_approval becomes a domain
 * card and is held until a person decides or proxy.approval_timeout (60 s) passes. Decisions
 * of scope session, project and global apply to later connections at once (egress_add_rule);
 * denials win. Every connection's end is one audit line with its bytes. */
#ifndef CLOISTER_EGRESS_H
#define CLOISTER_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "supervisor/approval/queue.h"

struct loop;
struct hub;
struct config;
struct egress;

struct connect_target;
struct sockaddr_storage;

struct egress_config {
	const struct config *config;
	/* Which process connected to DST (exec_guard_who_connected), for domain cards and the
	 * audit log; NULL: unknown. */
	int (*who)(void *userdata, const struct sockaddr_storage *dst, struct connect_target *ret);
	void *who_userdata;
	/* The config of PROJECT in *RET when it is not CONFIG (a container of another project);
	 * *RET NULL, or no callback: CONFIG. A negative errno (with ERR set) denies. */
	int (*project_config)(void *userdata, const char *project, const struct config **ret,
	                      struct cl_error *err);
	void *project_config_userdata;
	const char *connect_listen; /* "ADDR:PORT" of the CONNECT proxy; NULL: none */
	const char *hosts_file;     /* consulted before DNS for upstream names; NULL: none */
	bool real_ip;               /* answer the agent's DNS with real addresses, not fake ones */
	bool verbose;
};

int egress_new(struct loop *loop, struct hub *hub, const struct egress_config *config,
               struct egress **ret, struct cl_error *err);
/* Resets every connection and removes what it installed. NULL is fine. */
void egress_free(struct egress *eg);

/* Give the sandbox netns NETNS_FD (not taken over) its route, rules and listeners; its
 * connections are SANDBOX's (PROJECT may be NULL). */
int egress_attach_netns(struct egress *eg, int netns_fd, const char *sandbox, const char *project,
                        struct cl_error *err);
/* The same, remembered under KEY (a container's id) for egress_detach(). */
int egress_attach_netns_key(struct egress *eg, int netns_fd, const char *key, const char *sandbox,
                            const char *project, struct cl_error *err);
/* The netns or cgroup attached under KEY is gone: stop serving its listeners, close them and
 * drop its rules. Its open connections go on. -ENOENT when KEY is unknown. */
int egress_detach(struct egress *eg, const char *key);

/* For a sandbox that shares the host's network (`run --net host`): cgroup eBPF programs on
 * CGROUP_FD (not taken over) send its TCP connects and DNS to listeners in our own netns,
 * and refuse other UDP and raw sockets (bpf/redirect.h). It may not reach the N_REFUSED ports
 * REFUSED (the supervisors' own APIs) nor our proxy and resolver listeners on any address of
 * this host's loopback. */
int egress_attach_cgroup(struct egress *eg, int cgroup_fd, const char *sandbox, const char *project,
                         const uint16_t *refused, size_t n_refused, struct cl_error *err);

/* The queue decided domain items: release or refuse their held connections. */
void egress_on_resolution(struct egress *eg, const struct queue_resolution *res);
/* A person's decision with scope session (for SANDBOX's connections), project (PROJECT's) or
 * global (everyone's): VALUE (a domain, or a pattern when IS_PATTERN) is allowed or denied for
 * later connections from now on. */
void egress_add_rule(struct egress *eg, const char *sandbox, const char *project,
                     enum queue_scope scope, bool allow, const char *value, bool is_pattern);

/* The port of the CONNECT proxy (0: none). */
unsigned egress_connect_port(const struct egress *eg);

#endif
