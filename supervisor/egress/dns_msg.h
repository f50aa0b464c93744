/* DNS messages for the sandbox's resolver (RFC 1035, RFC 6891 EDNS; pure).
 *
 * The agent's queries arrive at our resolver: dns_query_parse() reads one, strictly (one
 * question, no answers, at most one additional record and that an OPT; compression pointers
 * only backwards, at most DNS_MAX_POINTERS of them; names of at most 255 wire bytes). The
 * resolver decides and answers with dns_answer_build(): A/AAAA records with the addresses it
 * chose, or NXDOMAIN / REFUSED / SERVFAIL, or NOERROR without records (NODATA). For a name it
 * allows it asks the host's resolver and reads that answer's addresses with
 * dns_response_addrs(), to record what the name really resolved to.
 * Names are reported lower case and validated (domain_name_normalise(), '_' allowed); the
 * question is echoed exactly as the client sent it (0x20 case randomisation survives). */
#ifndef CLOISTER_DNS_MSG_H
#define CLOISTER_DNS_MSG_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "supervisor/policy/domain.h"

#define DNS_HEADER_LEN   12
#define DNS_NAME_WIRE    255 /* RFC 1035 2.3.4 */
#define DNS_MAX_POINTERS 16
#define DNS_MAX_MSG      65535
#define DNS_UDP_PLAIN    512  /* the limit without EDNS */
#define DNS_UDP_OURS     1232 /* the payload size we announce and answer within */
#define DNS_MAX_ADDRS    32   /* addresses read from one upstream answer */
#define DNS_MAX_CNAMES   8    /* CNAME hops followed in an upstream answer */

#define DNS_TYPE_A     1
#define DNS_TYPE_CNAME 5
#define DNS_TYPE_AAAA  28
#define DNS_TYPE_OPT   41
#define DNS_CLASS_IN   1

enum dns_rcode {
	DNS_RCODE_NOERROR = 0,
	DNS_RCODE_FORMERR = 1,
	DNS_RCODE_SERVFAIL = 2,
	DNS_RCODE_NXDOMAIN = 3,
	DNS_RCODE_NOTIMP = 4,
	DNS_RCODE_REFUSED = 5,
};

struct dns_query {
	uint16_t id;
	bool rd;                           /* recursion desired (echoed) */
	bool cd;                           /* checking disabled (echoed) */
	uint8_t qname_wire[DNS_NAME_WIRE]; /* the name as sent, uncompressed */
	size_t qname_wire_len;
	char name[DOMAIN_HOST_MAX + 1]; /* normalised; "" when not a host name */
	bool name_valid;                /* false: the root, or labels outside LDH/_ */
	uint16_t qtype;
	uint16_t qclass;
	bool edns;              /* an OPT record came with it */
	uint16_t edns_udp_size; /* its payload size (at least 512) */
	uint8_t edns_version;
};

/* Parse the query MSG[0..LEN-1]. Fails with -EINVAL (ERR says what) for anything but a
 * standard query (QR=0, opcode QUERY) with exactly one question and the limits above;
 * *ret only on success. A name that is well-formed on the wire but no host name (the root,
 * a label with '*' or a dot in it) parses with name_valid false: answer it REFUSED. */
int dns_query_parse(const uint8_t *msg, size_t len, struct dns_query *ret, struct cl_error *err);

/* The id of MSG when it has a full header, for a FORMERR answer to a query that does not
 * parse; -EINVAL otherwise. */
int dns_query_id(const uint8_t *msg, size_t len, uint16_t *ret_id);

struct dns_addr {
	int family; /* AF_INET or AF_INET6 */
	union {
		struct in_addr v4;
		struct in6_addr v6;
	};
	uint32_t ttl; /* seconds (dns_response_addrs(): the record's; ignored when building) */
};

/* The largest answer the client of Q accepts over UDP (512, or its EDNS size up to
 * DNS_UDP_OURS). */
size_t dns_query_udp_limit(const struct dns_query *q);

/* Build the answer to Q in BUF (SIZE bytes), at most MAX_LEN bytes long (dns_query_udp_limit()
 * for UDP, DNS_MAX_MSG for TCP): id and question echoed, QR and RA set, RD and CD copied, an
 * OPT record when the query had one. With RCODE NOERROR, every address of ADDRS[0..N-1] whose
 * family fits the question type (A: AF_INET, AAAA: AF_INET6) becomes a record with TTL;
 * none fits → NODATA. When the records do not fit in MAX_LEN the answer carries none and TC
 * set. Returns the length, -EINVAL for a bad rcode, -ENOSPC when even the question does not fit.
 */
int dns_answer_build(const struct dns_query *q, enum dns_rcode rcode, const struct dns_addr *addrs,
                     size_t n_addrs, uint32_t ttl, uint8_t *buf, size_t size, size_t max_len);

/* Build a query for Q's question (to forward upstream) with id ID and RD set, no EDNS.
 * Returns the length or -ENOSPC. */
int dns_query_build(const struct dns_query *q, uint16_t id, uint8_t *buf, size_t size);

struct dns_addrs {
	enum dns_rcode rcode;
	bool truncated; /* TC was set: the addresses may be incomplete */
	size_t n;
	struct dns_addr addrs[DNS_MAX_ADDRS]; /* in the order of the answer */
};

/* Read the upstream answer MSG to the question of Q sent with id ID: it must be a response
 * with that id and echo the same question (name compared without case). Collects the A and
 * AAAA records of the question's name or of the CNAME chain that starts at it (at most
 * DNS_MAX_CNAMES hops), the first DNS_MAX_ADDRS of them. -EINVAL (ERR says what) for a
 * malformed or mismatched answer; *ret only on success. */
int dns_response_addrs(const uint8_t *msg, size_t len, const struct dns_query *q, uint16_t id,
                       struct dns_addrs *ret, struct cl_error *err);

#endif
