/* Fuzz the domain parser that sees SNI names, Host headers and CONNECT targets.
 * Checks logic as well as memory: whatever parses must format, parse back to the same
 * entry, and match itself (exact entries) or its apex (wildcards). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/policy/domain.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct domain_spec spec, again, apex;
	char text[600];
	char out[300];

	if (size == 0 || size >= sizeof(text))
		return 0;
	/* The first byte picks whether wildcards are allowed; the rest is the text. */
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	if (domain_spec_parse(text, data[0] & 1, &spec, NULL) < 0)
		return 0;
	if (domain_spec_format(&spec, out, sizeof(out)) < 0)
		abort();
	if (domain_spec_parse(out, true, &again, NULL) < 0)
		abort();
	if (memcmp(&spec, &again, sizeof(spec)) != 0)
		abort();
	apex = spec;
	apex.wildcard = false;
	if (!domain_spec_matches(&spec, &apex))
		abort();
	return 0;
}
