/* Fuzz the ClientHello reader with what an agent sends first on a connection.
 * Beyond memory safety: a name it returns is a valid normalised host name, and a prefix of
 * the input never decides differently from the whole when the whole names a server (the
 * proxy calls it on a growing buffer and acts on the first decision). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/egress/tls_sni.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char host[DOMAIN_HOST_MAX + 1], again[DOMAIN_HOST_MAX + 1], part[DOMAIN_HOST_MAX + 1];
	enum tls_sni_status s = tls_sni_parse(data, size, host, NULL);

	if (s != TLS_SNI_FOUND)
		return 0;
	if (domain_name_normalise(host, strlen(host), 0, again) < 0 || strcmp(host, again) != 0)
		abort();
	for (size_t cut = size / 2; cut < size; cut += (size - cut + 1) / 2) {
		enum tls_sni_status p = tls_sni_parse(data, cut, part, NULL);

		if (p == TLS_SNI_NEED_MORE)
			continue;
		if (p != TLS_SNI_FOUND || strcmp(part, host) != 0)
			abort();
	}
	return 0;
}
