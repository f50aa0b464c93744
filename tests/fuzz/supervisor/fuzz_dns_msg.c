/* Fuzz the resolver's DNS reader with queries from the agent and answers from upstream.
 * Beyond memory safety: a query that parses gets an answer that parses back (as upstream
 * would read it) with exactly the addresses put in, and a forwarded copy of its question
 * parses back to the same question. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/egress/dns_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t fixed_query[] = {
	        0x12, 0x34, 1,   0,   0,   1,   0,   0, 0,   0,   0,   0, 3, 'w', 'w', 'w', 7,
	        'e',  'x',  'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0, 1,   0,   1};
	struct dns_query q, fixed, back;
	struct dns_addrs addrs;
	struct dns_addr put[3] = {{.family = AF_INET}, {.family = AF_INET6}, {.family = AF_INET}};
	uint8_t out[DNS_MAX_MSG];
	int n;

	/* As an upstream answer to a fixed question (id taken from the input). */
	if (dns_query_parse(fixed_query, sizeof(fixed_query), &fixed, NULL) < 0)
		abort();
	if (size >= 2)
		dns_response_addrs(data, size, &fixed, (uint16_t)(data[0] << 8 | data[1]), &addrs,
		                   NULL);

	if (dns_query_parse(data, size, &q, NULL) < 0)
		return 0;
	put[0].v4.s_addr = htonl(0xc6120001);
	put[1].v6.s6_addr[0] = 0xfd;
	put[2].v4.s_addr = htonl(0xc6120002);
	n = dns_answer_build(&q, DNS_RCODE_NOERROR, put, 3, 60, out, sizeof(out), DNS_MAX_MSG);
	if (n < 0)
		abort();
	if (dns_response_addrs(out, (size_t)n, &q, q.id, &addrs, NULL) < 0)
		abort();
	if (q.qclass == DNS_CLASS_IN && !(q.edns && q.edns_version > 0)) {
		size_t want = q.qtype == DNS_TYPE_A ? 2 : q.qtype == DNS_TYPE_AAAA ? 1 : 0;
		if (addrs.n != want)
			abort();
	}
	n = dns_query_build(&q, 7, out, sizeof(out));
	if (n < 0 || dns_query_parse(out, (size_t)n, &back, NULL) < 0)
		abort();
	if (back.qname_wire_len != q.qname_wire_len ||
	    memcmp(back.qname_wire, q.qname_wire, q.qname_wire_len) != 0 || back.qtype != q.qtype ||
	    back.qclass != q.qclass || strcmp(back.name, q.name) != 0)
		abort();
	return 0;
}
