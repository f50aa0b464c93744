/* Canonical command string: argv joined into one shell-quoted line.
 *
 * This is the string that policy patterns (hostexec auto_approve / manual_approve regexes, exec
 * rules) are matched against and that a human reads on the dashboard, so it must be unambiguous
 * and identical in every component. The rules are those of Cloister's guardian:
 *   - an argument made only of ASCII letters, digits and -_./:@+= is written as is;
 *   - any other argument is wrapped in single quotes, an embedded ' becoming '\'' ;
 *   - an empty argument is written '' ;
 *   - arguments are joined by one space.
 * Bytes outside ASCII (UTF-8 included) are not "simple", so such an argument is quoted.
 * Arguments carry explicit lengths; one containing a NUL byte cannot be represented (and would
 * be truncated by execve) and is rejected. */
#ifndef CLOISTER_QUOTE_H
#define CLOISTER_QUOTE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

/* Largest canonical string cl_quote_args() produces, in bytes, without the terminating NUL. */
#define CL_QUOTE_MAX_OUTPUT (256 * 1024)
/* Most arguments cl_quote_args() accepts. */
#define CL_QUOTE_MAX_ARGC 16384

/* One argument: len bytes at data (not necessarily NUL-terminated; data may be NULL if len is 0).
 */
struct cl_arg {
	const char *data;
	size_t len;
};

/* True when the argument is written as is (non-empty, only [A-Za-z0-9-_./:@+=]). */
bool cl_quote_arg_is_simple(const char *arg, size_t len);

/* Bytes the quoted form of the argument takes, without a terminating NUL. Never fails; the
 * result is at most 4 * len + 2, so it cannot overflow for any len a caller holds in memory. */
size_t cl_quote_arg_length(const char *arg, size_t len);

/* Write the quoted form of one argument to buf (size bytes) followed by a NUL.
 * Returns the length written (without the NUL, as cl_quote_arg_length()), -EINVAL if the
 * argument contains a NUL byte, -ENOBUFS if buf is too small. buf is unspecified on failure. */
int cl_quote_arg(const char *arg, size_t len, char *buf, size_t size);

/* Build the canonical command string of args[0..argc-1] into a malloc'd, NUL-terminated string.
 * Fails with -EINVAL when argc is 0 ("no arguments") or an argument contains a NUL byte
 * ("args[2]: contains a NUL byte"), -E2BIG above CL_QUOTE_MAX_ARGC arguments or when the result
 * would exceed CL_QUOTE_MAX_OUTPUT bytes, -ENOMEM. On success *ret_command is set (free() it). */
int cl_quote_args(const struct cl_arg *args, size_t argc, struct cl_error *err, char **ret_command);

/* Like cl_quote_args() for argc NUL-terminated strings (argv[i] must not be NULL). */
int cl_quote_strv(const char *const *argv, size_t argc, struct cl_error *err, char **ret_command);

#endif
