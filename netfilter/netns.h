/* The sandbox's network namespace, seen from the supervisor: create one, run code inside one,
 * and give one the links and routes that make every connection reach netfilter.
 *
 * A new netns has only lo, and it is down. A connect() to any other address then fails with
 * ENETUNREACH in routing, before the nat OUTPUT hook could redirect it to our proxy. So
 * netfilter_netns_setup() brings lo up and adds the egress device: a link that leads nowhere
 * (a "dummy", or an "ifb" where the kernel has no dummy driver: both discard what they are
 * given), with a private address per family and the default routes through it. Routing then
 * succeeds for every destination, nft redirects TCP and DNS to the listeners (see
 * nft_egress.h) and drops the rest; whatever the rules miss still leaves through a device that
 * drops it, also when there are no rules at all (fail closed).
 *
 * Nothing here moves the calling thread: the work is done in a short-lived thread that joins
 * the netns with setns() and is joined before the call returns. Needs CAP_SYS_ADMIN (setns)
 * and CAP_NET_ADMIN in the netns. */
#ifndef CLOISTER_NETFILTER_NETNS_H
#define CLOISTER_NETFILTER_NETNS_H

#include "base/error.h"

/* The egress device and its addresses (ULA fd00::/8 and a 10/8 host route: private, never
 * routed anywhere since the device discards everything). */
#define NETFILTER_EGRESS_IFNAME "cloister0"
#define NETFILTER_EGRESS_ADDR4  "10.255.255.1"
#define NETFILTER_EGRESS_ADDR6  "fd63:6c6f:6973:7465::1"
#define NETFILTER_EGRESS_MTU    65536 /* lo's, see netns.c */

/* Create a new network namespace (only lo, down) and return an O_CLOEXEC fd of it in *ret_fd.
 * The netns lives while an fd or a process holds it. */
int netfilter_netns_create(int *ret_fd);

/* Run fn(userdata) in a new thread that has joined the netns of netns_fd, wait for it and
 * return what fn returned (or a negative errno if the thread or setns failed, fn not run).
 * Sockets fn creates belong to that netns, and stay there when used from any thread. fn must
 * not wait for the calling thread. */
int netfilter_run_in_netns(int netns_fd, int (*fn)(void *userdata), void *userdata);

/* Bring lo up, add the egress device with NETFILTER_EGRESS_ADDR4/32 and
 * NETFILTER_EGRESS_ADDR6/128 (no duplicate address detection: usable at once) and the default
 * routes (IPv4 and IPv6) through it. Idempotent: what exists already is kept. IPv6 is skipped
 * when the kernel has it disabled. Fails with -errno and err says which step. */
int netfilter_netns_setup(int netns_fd, struct cl_error *err);

#endif
