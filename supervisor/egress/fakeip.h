/* Names behind addresses, for the sandbox's resolver and the transparent proxy (pure, no I/O).
 *
 * Fake-IP mode: the resolver answers every A/AAAA query it does not deny with an address of
 * its own, taken from ranges no real host uses here (FAKEIP_NET4, FAKEIP_NET6), one address
 * pair per name. A TCP connection to such an address is then named by the table, whatever
 * protocol it speaks, and the proxy dials the real address of the name itself. Names stay
 * while they are used (a lookup or a new answer counts as use); when the table is full the
 * least recently used name gives its addresses to the new one.
 *
 * Real-IP mode: the resolver forwards the query and records which name each answer address
 * belongs to (fakeip_record_real); a connection to that address is named from the record.
 * When several names share an address the latest answer wins.
 *
 * Bounded (capacities fixed at creation) and hashed with a caller-provided key, so names an
 * agent chooses cannot make lookups slow. */
#ifndef CLOISTER_FAKEIP_H
#define CLOISTER_FAKEIP_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "supervisor/policy/domain.h"

/* 198.18.0.0/15 (RFC 2544 benchmarking) and a ULA /64 (the egress device's /48 is
 * fd63:6c6f:6973::/48, see netfilter/netns.h; this /64 is not on any device). */
#define FAKEIP_NET4      "198.18.0.0"
#define FAKEIP_NET4_BITS 15
#define FAKEIP_NET6      "fd63:6c6f:6973:fa6b::"
#define FAKEIP_NET6_BITS 64
#define FAKEIP_MAX_NAMES ((1u << (32 - FAKEIP_NET4_BITS)) - 2)

struct fakeip;

/* A table of at most NAMES fake names (1..FAKEIP_MAX_NAMES) and REAL recorded addresses
 * (0 disables recording). KEY seeds the hash (fill it from getrandom()). */
int fakeip_new(size_t names, size_t real, const uint8_t key[16], struct fakeip **ret);
void fakeip_free(struct fakeip *f);

/* The fake addresses of NAME (a normalised host name, see domain_name_normalise()), assigned
 * now if NAME has none. Never fails for a valid name: the least recently used name is evicted
 * when the table is full. -EINVAL for an empty or overlong name, -ENOMEM. */
int fakeip_assign(struct fakeip *f, const char *name, struct in_addr *ret_v4,
                  struct in6_addr *ret_v6);

/* Is ADDR (a sockaddr_in/in6; IPv4-mapped IPv6 counts as IPv4) inside the fake ranges? */
bool fakeip_is_fake(const struct sockaddr *addr);

/* The name that owns the fake address ADDR, copied to RET_NAME (DOMAIN_HOST_MAX + 1 bytes).
 * -EINVAL when ADDR is not fake, -ENOENT when no name holds it (never assigned, or evicted). */
int fakeip_lookup(struct fakeip *f, const struct sockaddr *addr, char *ret_name);

/* Remember that the real address ADDR (AF_INET: struct in_addr, AF_INET6: struct in6_addr)
 * was an answer for NAME. -EINVAL for a bad family or name, -ENOMEM, -ENOSPC when recording is
 * disabled. */
int fakeip_record_real(struct fakeip *f, int family, const void *addr, const char *name);

/* The name recorded for the real address ADDR (a sockaddr_in/in6), copied to RET_NAME.
 * -ENOENT when none. */
int fakeip_lookup_real(struct fakeip *f, const struct sockaddr *addr, char *ret_name);

size_t fakeip_count(const struct fakeip *f);

#endif
