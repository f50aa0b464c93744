/* Fuzz the proxy's naming of a transparent connection from its first bytes.
 * Beyond memory safety: FINAL never answers "wait" (the proxy would hang on a client that
 * already ended), a name is lower-case host name characters only, and a name found without FINAL is
 * the same with FINAL (the proxy decides on the first answer that is not "wait"). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/egress/sniff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sniff_name a, b;
	enum sniff_verdict open = sniff_name(data, size, false, &a);
	enum sniff_verdict final = sniff_name(data, size, true, &b);

	if (final == SNIFF_WAIT)
		abort();
	if (open == SNIFF_NAMED) {
		if (final != SNIFF_NAMED || strcmp(a.host, b.host) != 0 ||
		    strcmp(a.source, b.source) != 0)
			abort();
		if (a.host[0] == '\0' || strlen(a.host) > DOMAIN_HOST_MAX)
			abort();
		for (const char *c = a.host; *c; c++)
			if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789.-_", *c))
				abort();
	}
	return 0;
}
