/* Egress for the supervisor's sandboxes: the proxy (proxy.h), its resolver (resolver.h) and
 * the kernel side (netfilter/), deciding every connection by name through the domain policy
 * and the approvals service (approvals.h), where egress is the source of domain asks.
 *
 *   - a sandbox netns (run): egress_attach_netns() gives it a route, the nftables ruleset and
 *     listeners inside it, before the agent starts; every TCP connection lands on the
 *     transparent proxy and every DNS query on the resolver (fake IPs by default);
 *   - the CONNECT proxy (guardian-api.md, default 127.0.0.1:3128) for clients outside a
 *     sandbox and the shim fallback, authenticated by a registered cloister token.
 *
 * A connection the policy allows is relayed; one it denies is reset (transparent) or gets 403
 * (CONNECT); an unlisted one with unlisted_domain_behavior request_approval becomes a domain
 * card and is held until a person decides or proxy.approval_timeout (60 s) passes. A person's
 * decision of scope session, project or global on the dashboard applies to later connections
 * at once, and a project or global one is written to the decisions files (decisions.h);
 * denials win. Those files (global, and DECISIONS_DIR's PROJECT) count as they are now: what
 * another run adds or `decisions rm` removes holds here within a second, and at once for a
 * connection about to be asked (decisions_watch.h); held connections it decides are answered.
 * Every verdict and every connection's end is one audit line with its bytes. */
#ifndef CLOISTER_EGRESS_H
#define CLOISTER_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

struct loop;
struct approvals;
struct config;
struct tokens;
struct egress;

struct connect_target;
struct sockaddr_storage;

struct egress_config {
	const struct config *config;
	/* Which process made the transparent connection from PEER to DST, for domain cards
	 * (asked only when a card is shown); NULL: unknown. */
	int (*who)(void *userdata, const struct sockaddr_storage *peer,
	           const struct sockaddr_storage *dst, struct connect_target *ret);
	void *who_userdata;
	/* The config of PROJECT in *RET when it is not CONFIG (a container of another project);
	 * *RET NULL, or no callback: CONFIG. A negative errno (with ERR set) denies. */
	int (*project_config)(void *userdata, const char *project, const struct config **ret,
	                      struct cl_error *err);
	void *project_config_userdata;
	struct tokens *tokens; /* who may use the CONNECT proxy */
	/* This supervisor's dashboard and token API, never dialled whatever the policy says
	 * (0: none). */
	uint16_t api_ports[2];
	const char *decisions_dir;  /* the config directory project and global decisions go to */
	const char *project;        /* the decisions file of an ask of no project; NULL: none */
	const char *connect_listen; /* "ADDR:PORT" of the CONNECT proxy; NULL: none */
	const char *hosts_file;     /* consulted before DNS for upstream names; NULL: none */
	bool real_ip;               /* answer the agent's DNS with real addresses, not fake ones */
	bool verbose;
};

int egress_new(struct loop *loop, struct approvals *approvals, const struct egress_config *config,
               struct cl_error *err, struct egress **ret);
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

/* The ports a `run --net host` agent may not reach on this host's loopback (the supervisors'
 * own APIs), at most MAX of them into PORTS; *ret_n is how many. Negative errno: the attach
 * fails. */
typedef int (*egress_refused_fn)(void *userdata, uint16_t *ports, size_t max, size_t *ret_n);

/* For a sandbox that shares the host's network (`run --net host`): cgroup eBPF programs on
 * CGROUP_FD (not taken over) send its TCP connects and DNS to listeners in our own netns,
 * and refuse other UDP and raw sockets (bpf/redirect.h). It may not reach the ports REFUSED
 * lists (called once the ports other supervisors bind from then on are refused too, so that
 * none starts unseen in between) nor our proxy and resolver listeners on any address of
 * this host's loopback. */
int egress_attach_cgroup(struct egress *eg, int cgroup_fd, const char *sandbox, const char *project,
                         egress_refused_fn refused, void *userdata, struct cl_error *err);

/* The port of the CONNECT proxy (0: none). */
unsigned egress_connect_port(const struct egress *eg);

#endif
