/* The resolver's address books (pure: no I/O, no clock — callers pass now).
 *
 * fakeip_map: every name the agent resolves through us gets a stable private address, an
 * IPv4 one from 198.18.0.0/15 (RFC 2544 benchmarking space, never routed) and an IPv6 one in
 * a ULA /64 chosen by the caller at creation, both at the same offset in the pool. When the
 * agent connects to such an address, the proxy looks the name up again: the connection's
 * destination is the name the agent asked for, not whatever it resolves to. The map holds at
 * most CAPACITY names and evicts the least recently used (assigning or looking up a name uses
 * it); addresses are handed out in order round the pool, so an evicted address goes to
 * another name only after the whole pool has been used — a late connection to it fails
 * rather than reaching the wrong name.
 *
 * realip_map: which names the agent resolved (through the host's resolver) to a real
 * address, so a connection to that address can be attributed to a name. At most MAX_ADDRS
 * addresses, REALIP_NAMES_PER_ADDR names each, every name with an expiry; when full, expired
 * entries go first, then those expiring soonest. */
#ifndef CLOISTER_FAKEIP_H
#define CLOISTER_FAKEIP_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/cleanup.h"

#define FAKEIP_V4_NET       0xc6120000u /* 198.18.0.0 */
#define FAKEIP_POOL_SIZE    (1u << 17)  /* a /15 */
#define FAKEIP_MAX_CAPACITY (FAKEIP_POOL_SIZE / 2)

struct fakeip_map;

/* A map for at most CAPACITY (1..FAKEIP_MAX_CAPACITY) names, whose IPv6 addresses lie in
 * ULA_PREFIX::/64 (8 bytes, first byte 0xfd: fd00::/8 with a random global id, RFC 4193).
 * -EINVAL for a bad capacity or prefix, -ENOMEM. */
int fakeip_map_new(const uint8_t ula_prefix[8], size_t capacity, struct fakeip_map **ret);
void fakeip_map_free(struct fakeip_map *map);
CL_DEFINE_TRIVIAL_CLEANUP(struct fakeip_map *, fakeip_map_free)

/* The addresses of NAME (a normalised host name, see domain_name_normalise()), assigning
 * them if it has none. -EINVAL for an empty or overlong name, -ENOMEM. */
int fakeip_map_assign(struct fakeip_map *map, const char *name, struct in_addr *ret_v4,
                      struct in6_addr *ret_v6);

/* The name that holds ADDR (FAMILY AF_INET: struct in_addr, AF_INET6: struct in6_addr).
 * *ret_name stays valid until the next assign. -ENOENT when no name holds it (also for an
 * address outside the pools). */
int fakeip_map_lookup(struct fakeip_map *map, int family, const void *addr, const char **ret_name);

/* Is ADDR inside this map's pools (held or not)? */
bool fakeip_map_is_fake(const struct fakeip_map *map, int family, const void *addr);

size_t fakeip_map_size(const struct fakeip_map *map);

#define REALIP_NAMES_PER_ADDR 4

struct realip_map;

int realip_map_new(size_t max_addrs, struct realip_map **ret);
void realip_map_free(struct realip_map *map);
CL_DEFINE_TRIVIAL_CLEANUP(struct realip_map *, realip_map_free)

/* Record that NAME resolved to ADDR at NOW_MS for TTL_MS (a name already there gets the later
 * expiry). -EINVAL for a bad family or name, -ENOMEM. */
int realip_map_record(struct realip_map *map, int family, const void *addr, const char *name,
                      uint64_t now_ms, uint64_t ttl_ms);

/* The names ADDR resolved from that have not expired at NOW_MS: up to MAX of them into
 * RET_NAMES (valid until the next record or expire), their count into *ret_n. -ENOENT when
 * there is none. */
int realip_map_lookup(const struct realip_map *map, int family, const void *addr, uint64_t now_ms,
                      const char **ret_names, size_t max, size_t *ret_n);

/* Drop everything expired at NOW_MS. */
void realip_map_expire(struct realip_map *map, uint64_t now_ms);

size_t realip_map_size(const struct realip_map *map);

#endif
