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
 * socket closes (nft_egress_free, or the supervisor's death). Without the table the netns still
 * has no way out (see netns.h): a dead supervisor fails closed. */
#ifndef CLOISTER_NETFILTER_NFT_EGRESS_H
#define CLOISTER_NETFILTER_NFT_EGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/error.h"

#define NFT_EGRESS_TABLE "cloister"

struct nft_egress_config {
	uint16_t proxy_port; /* the transparent TCP listener, on 127.0.0.1 and ::1 */
	uint16_t dns_port;   /* the resolver (UDP and TCP), on 127.0.0.1 and ::1 */
};

/* Pure: the ruleset as nft text, malloc'd into *ret_text. -EINVAL for a port 0. */
int nft_egress_ruleset(const struct nft_egress_config *cfg, char **ret_text);

struct nft_egress;

/* Install the ruleset in the netns of netns_fd, in one transaction (nothing is installed on
 * failure). On success *ret owns the table. err has nft's own message on failure. */
int nft_egress_install(int netns_fd, const struct nft_egress_config *cfg, struct nft_egress **ret,
                       struct cl_error *err);

/* Delete the table now (the netns keeps its egress device: it then drops everything but
 * loopback traffic). Frees e whatever the outcome; returns the first error. NULL is accepted. */
int nft_egress_remove(struct nft_egress *e, struct cl_error *err);

/* Close the owning socket, which makes the kernel delete the table. NULL is accepted. */
void nft_egress_free(struct nft_egress *e);

#endif
