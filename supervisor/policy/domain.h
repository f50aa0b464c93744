/* Domain names and the allow/deny entries that match them (pure, no I/O).
 *
 * One parser serves config entries and queries alike, so both sides are normalised the same
 * way: lower case, one trailing dot dropped, an optional ":port" split off ("[v6]:port" for IPv6
 * literals). Addresses take one form each, the one a resolver reaches: IPv4 as a dotted quad
 * (also when written "127.1", "2130706433", "0x7f.0.0.1" or as the IPv4-mapped "::ffff:7f00:1"),
 * IPv6 in inet_ntop's form; a name whose last label is a number but no IPv4 address
 * ("1.2.3.4.5", "999.1.1.1") is refused. Entries come in two kinds, as in Cloister's config:
 *   - domain: example.com        exact name (any port, or only the port given)
 *   - pattern: "*.example.com"   in an allow list: one subdomain level and the apex
 *                                (api.example.com and example.com match, a.b.example.com
 *                                does not); in a deny list: the apex and every depth, since
 *                                a person who denies "*.evil.com" means all of evil.com */
#ifndef CLOISTER_DOMAIN_H
#define CLOISTER_DOMAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define DOMAIN_HOST_MAX 253

struct domain_spec {
	char host[DOMAIN_HOST_MAX + 1]; /* normalised; for a pattern, the part after "*." */
	uint16_t port;                  /* 0: any port */
	bool wildcard;                  /* parsed from "*.host" */
};

/* Parse TEXT ("Example.COM.", "example.com:443", "[::1]:8443", "10.0.0.1", and with
 * allow_wildcard also "*.example.com"). Fails with -EINVAL and a message for an empty name,
 * a bad label or character, a bad port, or a "*" where none is allowed or anywhere but a
 * leading "*." label. Writes *ret only on success. */
int domain_spec_parse(const char *text, bool allow_wildcard, struct domain_spec *ret,
                      struct cl_error *err);

/* Does the allow entry RULE match the (non-wildcard) QUERY? A rule without a port matches
 * every port; a query without a port matches only rules without one. A pattern covers its
 * apex and one subdomain level. */
bool domain_spec_matches(const struct domain_spec *rule, const struct domain_spec *query);

/* The same for a deny entry: a pattern covers its apex and subdomains at every depth. */
bool domain_spec_matches_deny(const struct domain_spec *rule, const struct domain_spec *query);

/* For a pattern RULE: how many labels QUERY has in front of the pattern's apex (0: the apex
 * itself), ports aside; -1 when QUERY is not under it or RULE is not a pattern. */
int domain_spec_depth_below(const struct domain_spec *rule, const struct domain_spec *query);

/* Flags of domain_name_normalise(). */
#define DOMAIN_NAME_UNDERSCORE 1u /* allow '_' in labels (DNS: _dmarc, _sip._tcp) */

/* Validate a host name as it arrives from the network (TLS SNI, DNS QNAME, Host header) and
 * write its normal form to RET (DOMAIN_HOST_MAX + 1 bytes): LEN bytes (no NUL needed), one
 * trailing dot dropped, upper case folded, 1..253 characters, labels of 1..63 letters, digits
 * and '-' (not first or last; '_' too with DOMAIN_NAME_UNDERSCORE). A name whose last label
 * is all digits is refused: it is an IPv4 address in disguise to a resolver, and addresses do
 * not belong where these names come from. -EINVAL otherwise; RET is written only on success. */
int domain_name_normalise(const char *name, size_t len, unsigned flags, char *ret);

/* Write RULE back in config syntax ("*.example.com", "example.com:443", "[::1]:443"). */
int domain_spec_format(const struct domain_spec *rule, char *buf, unsigned long size);

#endif
