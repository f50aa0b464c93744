/* Internal to supervisor/policy/config*.c: what the schema walk (config.c) and the merging of
 * the files (config_load.c) share. Not for callers outside these files: they use config.h. */
#ifndef CLOISTER_CONFIG_INTERNAL_H
#define CLOISTER_CONFIG_INTERNAL_H

#include <stddef.h>

#include "supervisor/policy/config.h"

void exec_list_clear(struct config_exec_list *list);
void pattern_list_clear(struct config_pattern_list *list);
void scalar_clear(struct config_scalar *s);
/* Append S (taken) to *V of *N strings. -ENOMEM, -E2BIG past CONFIG_MAX_RULES. */
int strv_push(char ***v, size_t *n, char *s);

#endif
