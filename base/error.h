/* A caller-provided error message, for failures where an errno is not enough
 * ("config.yaml:12:3: expected a list of {domain: …}", "args[2]: contains a NUL byte").
 *
 * Functions return a negative errno and, when given a non-NULL struct cl_error, fill it.
 * The message never contains secrets: callers name fields, not values they must not log. */
#ifndef CLOISTER_ERROR_H
#define CLOISTER_ERROR_H

#define CL_ERROR_MAX 512

struct cl_error {
	char msg[CL_ERROR_MAX];
};

/* Format the message into err (when err is not NULL) and return code, which should be a
 * negative errno, so that `return cl_error_set(err, -EINVAL, "…", …);` reads naturally. */
int cl_error_set(struct cl_error *err, int code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Prepend "prefix: " to an existing message (e.g. a file name), keeping it bounded. */
void cl_error_prefix(struct cl_error *err, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

#endif
