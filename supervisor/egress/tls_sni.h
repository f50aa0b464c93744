/* The server name of a TLS ClientHello, read from the first bytes of a connection (pure).
 *
 * The proxy buffers what the agent sends until it knows where the connection goes (it must
 * replay those bytes upstream anyway) and calls tls_sni_parse() on the whole buffer after
 * every read: the answer is TLS_SNI_NEED_MORE until the ClientHello is complete, whether it
 * arrives in one TCP segment or many, in one TLS record or spread over several. The work is
 * bounded by the limits below, so re-parsing the growing buffer stays cheap.
 *
 * Every length field is checked against the bytes that enclose it; a ClientHello that does
 * not add up, has a duplicate extension or more than one host name, or names something that
 * is not a host name (an IP literal, a wildcard, bytes outside LDH) is TLS_SNI_MALFORMED.
 * Limits: a handshake message of at most TLS_SNI_MAX_HELLO bytes, carried in at most
 * TLS_SNI_MAX_RECORDS records; past them the answer is TLS_SNI_MALFORMED. */
#ifndef CLOISTER_TLS_SNI_H
#define CLOISTER_TLS_SNI_H

#include <stddef.h>

#include "base/error.h"
#include "supervisor/policy/domain.h"

#define TLS_SNI_MAX_HELLO   (16 * 1024)
#define TLS_SNI_MAX_RECORDS 32
/* Never more input than this is needed to decide (headers of every record included). */
#define TLS_SNI_MAX_INPUT (4 + TLS_SNI_MAX_HELLO + 5 * TLS_SNI_MAX_RECORDS)

enum tls_sni_status {
	TLS_SNI_NEED_MORE, /* not decided yet: read more and call again with everything */
	TLS_SNI_FOUND,     /* a ClientHello naming a host (written to ret_host) */
	TLS_SNI_ABSENT,    /* a well-formed ClientHello without a server_name */
	TLS_SNI_NOT_TLS,   /* the first bytes are no TLS handshake record */
	TLS_SNI_MALFORMED, /* TLS, but broken or over a limit (err says what) */
};

/* Look at DATA[0..LEN-1], everything received on the connection so far. On TLS_SNI_FOUND the
 * host name (lower case, no trailing dot, at most DOMAIN_HOST_MAX characters) is written to
 * RET_HOST (DOMAIN_HOST_MAX + 1 bytes); RET_HOST is untouched otherwise. ERR (may be NULL)
 * says why on TLS_SNI_NOT_TLS and TLS_SNI_MALFORMED. */
enum tls_sni_status tls_sni_parse(const void *data, size_t len, char *ret_host,
                                  struct cl_error *err);

const char *tls_sni_status_to_string(enum tls_sni_status status);

#endif
