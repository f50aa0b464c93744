/* Internal to protocol/: the value checks message.c and message_exec.c share. Not for callers
 * outside this folder. */
#ifndef CLOISTER_MESSAGE_CHECK_H
#define CLOISTER_MESSAGE_CHECK_H

#include <stddef.h>

#include "base/error.h"

/* Free a NULL-terminated vector of strings; NULL is fine. */
void cl_message_strv_free(char **v);
/* s at most max bytes, else -E2BIG "FIELD: longer than MAX bytes". */
int cl_message_check_length(const char *s, size_t max, const char *field, struct cl_error *err);
/* s starts with '/' and is at most CL_MESSAGE_MAX_PATH bytes. */
int cl_message_check_absolute_path(const char *s, const char *field, struct cl_error *err);
/* v holds n (min_count..max_count) non-NULL strings of at most CL_MESSAGE_MAX_ARG_BYTES. */
int cl_message_check_strv(char *const *v, size_t n, size_t min_count, size_t max_count,
                          const char *field, struct cl_error *err);

#endif
