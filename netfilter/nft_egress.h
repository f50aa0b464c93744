/* The sandbox netns's nftables ruleset (family inet: IPv4 and IPv6 in one table):
 *
 *   - DNS (UDP and TCP to port 53, any destination) is redirected to the resolver's port;
 *   - TCP to an address of the netns itself (127.0.0.0/8, ::1, the egress device's addresses)
 *     stays local: agents run dev servers and talk to them;
 *   - every other TCP connection is redirected to the transparent proxy's port, where
 *     netfilter_original_dst() (listen.h) tells the proxy where it was going;
 *   - every other packet leaving the netns is dropped: ICMP and ICMPv6 (what IPv6 needs on the
 *     loopback is local and passes), other UDP, raw sockets, any other protocol.
 *
 * Redirected packets are rewritten to the loopback address of their family (127.0.0.1, ::1),
 * so the listeners (listen.h) must be bound there, on the ports given here.
 *
 * The table is owned (NFT_TABLE_F_OWNER) by the netlink socket of the struct nft_egress that
 * installed it: no other process can change or delete it, and the kernel deletes it when that
 * socket closes (nft_egress_free, or the supervisor's death) unless it was installed with
 * persist (see below). Without the table the netns still has no way out (see netns.h), and an
 * orphaned persist table still sends everything to listeners that are gone: either way a dead
 * supervisor fails closed. */
#ifndef CLOISTER_NETFILTER_NFT_EGRESS_H
#define CLOISTER_NETFILTER_NFT_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define NFT_EGRESS_TABLE "cloister"

struct nft_egress_config {
	uint16_t proxy_port; /* the transparent TCP listener, on 127.0.0.1 and ::1 */
	uint16_t dns_port;   /* the resolver (UDP and TCP), on 127.0.0.1 and ::1 */
	/* For a netns that dies with the sandbox: the table is also "persist" (kernel >= 6.9),
	 * so closing the owning socket only orphans it, rules intact, until the netns goes
	 * (the kernel's deletion on close costs RCU grace periods: 10-15 ms measured here, at
	 * every exit). While the socket is open it stays owned as below. Where the kernel has
	 * no persist flag the table is an owner-only one, as without this. */
	bool persist;
};

/* Pure: the ruleset as nft text, malloc'd into *ret_text: a table block, or with persist the
 * commands that add its chains and rules to the table created beforehand. -EINVAL for a port
 * 0. */
int nft_egress_ruleset(const struct nft_egress_config *cfg, char **ret_text);

struct nft_egress;

/* Install the ruleset in the netns of netns_fd, in one transaction (nothing is installed on
 * failure). On success *ret owns the table. err has nft's own message on failure. */
int nft_egress_install(int netns_fd, const struct nft_egress_config *cfg, struct nft_egress **ret,
                       struct cl_error *err);

/* Delete the table now (the netns keeps its egress device: it then drops everything but
 * loopback traffic). Frees e whatever the outcome; returns the first error. NULL is accepted. */
int nft_egress_remove(struct nft_egress *e, struct cl_error *err);

/* Close the owning socket, which makes the kernel delete the table (a persist one stays, with
 * its rules and no owner, until its netns is gone). NULL is accepted. */
void nft_egress_free(struct nft_egress *e);

#endif
