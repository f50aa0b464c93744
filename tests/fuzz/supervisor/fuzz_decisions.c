/* Fuzz the decisions file rewrite with arbitrary existing file text.
 * Beyond memory safety: whatever it writes parses back as a decisions file holding the new
 * entry, and adding the entry again changes nothing (the text is a fixed point). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/policy/config.h"
#include "supervisor/policy/decisions.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct domain_spec entry;
	char *text = NULL, *again = NULL;
	struct config *cfg = NULL;
	struct config_source src = {.name = "fuzz"};
	bool found = false;
	int r;

	if (size > 65536)
		return 0;
	if (domain_spec_parse(size % 2 ? "*.new.example" : "new.example:443", true, &entry, NULL) <
	    0)
		abort();
	r = decisions_add("fuzz", (const char *)data, size, true,
	                  size % 3 ? DECISIONS_ALLOW : DECISIONS_DENY, &entry, &text, NULL);
	if (r < 0)
		return 0;
	src.data = text;
	src.len = strlen(text);
	src.present = true;
	if (config_parse_file(CONFIG_FILE_DECISIONS, CONFIG_LAYER_GLOBAL_DECISIONS, &src, NULL,
	                      &cfg, NULL) < 0)
		abort();
	const struct config_domain_list *list = size % 3 ? &cfg->proxy.allow : &cfg->proxy.deny;
	for (size_t i = 0; i < list->n; i++)
		found = found || memcmp(&list->items[i].spec, &entry, sizeof(entry)) == 0;
	if (!found || cfg->n_warnings != 0)
		abort();
	if (decisions_add("fuzz", text, strlen(text), true,
	                  size % 3 ? DECISIONS_ALLOW : DECISIONS_DENY, &entry, &again, NULL) != 0 ||
	    strcmp(text, again) != 0)
		abort();
	config_free(cfg);
	free(text);
	free(again);
	return 0;
}
