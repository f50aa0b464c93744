/* Naming a transparent connection from the first bytes its client sent (pure).
 *
 * The proxy reads what the client sends into a bounded buffer and asks sniff_name() after
 * every read, and once more when no more bytes will come before the decision: the client
 * ended its sending (EOF, possibly before any byte: `nc -N host port </dev/null`), the buffer
 * is full, or the sniff deadline passed (a server-speaks-first protocol — ssh, smtp, postgres —
 * whose client sends nothing and waits). The bytes name the connection by a TLS ClientHello's
 * SNI or an HTTP request's Host header (a name, not an IP literal). Anything else — no byte at
 * all, another protocol, a ClientHello without SNI, a request without a Host name — falls back
 * to what the proxy knows of the address (the resolver's name for a fake IP, else the IP). */
#ifndef CLOISTER_SNIFF_H
#define CLOISTER_SNIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "supervisor/policy/domain.h"

enum sniff_verdict {
	SNIFF_WAIT,     /* read on: the bytes so far may still become a name */
	SNIFF_NAMED,    /* the bytes name the host (see struct sniff_name) */
	SNIFF_FALLBACK, /* nothing in them names it, or nothing more will come */
};

struct sniff_name {
	char host[DOMAIN_HOST_MAX + 1]; /* normalised, lower case */
	const char *source;             /* "sni" or "http-host" (static) */
};

/* Look at DATA[0..LEN-1], everything the client sent so far; FINAL: nothing more will come
 * before the decision (EOF, full buffer, deadline). Never SNIFF_WAIT when FINAL. *RET is
 * written only for SNIFF_NAMED. */
enum sniff_verdict sniff_name(const uint8_t *data, size_t len, bool final, struct sniff_name *ret);

const char *sniff_verdict_to_string(enum sniff_verdict v);

#endif
