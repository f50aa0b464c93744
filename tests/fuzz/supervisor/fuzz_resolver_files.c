/* Fuzz the resolver's readers of the hosts file, resolv.conf and nsswitch.conf's hosts line,
 * and its question encoder.
 * Input: a name, a NUL, then the file text. Beyond memory safety: every address found is of
 * a known family, and a question built for a name that encodes parses back to that name. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "supervisor/egress/hostsdb.h"
#include "supervisor/egress/resolver.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	char name[DOMAIN_HOST_MAX + 1];
	size_t name_len = nul ? (size_t)(nul - data) : 0;
	const char *text = (const char *)(nul ? nul + 1 : data);
	size_t text_len = nul ? size - name_len - 1 : size;
	struct dns_addrs addrs;
	struct sockaddr_storage ss;
	struct dns_query q, back;
	uint8_t msg[DNS_UDP_PLAIN];
	int n;

	if (name_len > DOMAIN_HOST_MAX)
		return 0;
	memcpy(name, data, name_len);
	name[name_len] = '\0';
	if (resolver_hosts_find(text, text_len, name, &addrs) == 0) {
		if (addrs.n == 0 || addrs.n > DNS_MAX_ADDRS)
			abort();
		for (size_t i = 0; i < addrs.n; i++)
			if (addrs.addrs[i].family != AF_INET && addrs.addrs[i].family != AF_INET6)
				abort();
	}
	if (resolver_conf_nameserver(text, text_len, &ss) == 0 && ss.ss_family != AF_INET &&
	    ss.ss_family != AF_INET6)
		abort();
	{
		struct hostsdb_order o;

		(void)hostsdb_order_parse(text, text_len, &o);
		if (o.n > 2 || memchr(o.skipped, 0, sizeof(o.skipped)) == NULL)
			abort();
		for (size_t i = 0; i < o.n; i++)
			if ((o.source[i] != HOSTSDB_FILES && o.source[i] != HOSTSDB_DNS) ||
			    (i > 0 && o.source[i] == o.source[0]))
				abort();
	}
	if (resolver_question(name, 1, &q) == 0) {
		n = dns_query_build(&q, 0x1234, msg, sizeof(msg));
		if (n <= 0 || dns_query_parse(msg, (size_t)n, &back, NULL) < 0 ||
		    strcmp(back.name, q.name) != 0)
			abort();
	}
	return 0;
}
