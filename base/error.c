#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int cl_error_set(struct cl_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

void cl_error_prefix(struct cl_error *err, const char *fmt, ...)
{
	char prefix[CL_ERROR_MAX];
	char old[CL_ERROR_MAX];
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	old[sizeof(old) - 1] = '\0';
	/* Truncation keeps the message bounded; the start (what failed where) matters most. */
	if (snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old) >= (int)sizeof(err->msg))
		err->msg[sizeof(err->msg) - 1] = '\0';
}
