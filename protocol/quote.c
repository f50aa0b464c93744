#include "protocol/quote.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

static bool char_is_simple(unsigned char c)
{
	/* Explicit ranges, not isalnum(): the locale must never change the canonical string. */
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c != '\0' && strchr("-_./:@+=", c) != NULL;
}

bool cl_quote_arg_is_simple(const char *arg, size_t len)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!char_is_simple((unsigned char)arg[i]))
			return false;
	return true;
}

size_t cl_quote_arg_length(const char *arg, size_t len)
{
	size_t n = 2; /* the surrounding quotes */

	if (cl_quote_arg_is_simple(arg, len))
		return len;
	for (size_t i = 0; i < len; i++)
		n += arg[i] == '\'' ? 4 : 1; /* ' becomes '\'' */
	return n;
}

/* Write the quoted argument to out, which has room for cl_quote_arg_length() bytes. */
static size_t quote_into(const char *arg, size_t len, char *out)
{
	size_t n = 0;

	if (cl_quote_arg_is_simple(arg, len)) {
		memcpy(out, arg, len);
		return len;
	}
	out[n++] = '\'';
	for (size_t i = 0; i < len; i++) {
		if (arg[i] == '\'') {
			memcpy(out + n, "'\\''", 4);
			n += 4;
		} else {
			out[n++] = arg[i];
		}
	}
	out[n++] = '\'';
	return n;
}

int cl_quote_arg(const char *arg, size_t len, char *buf, size_t size)
{
	size_t n;

	if (len > 0 && memchr(arg, '\0', len))
		return -EINVAL;
	n = cl_quote_arg_length(arg, len);
	/* Results above INT_MAX cannot be returned; such an argument is far beyond any limit. */
	if (n >= size || n > (size_t)0x7fffffff)
		return -ENOBUFS;
	quote_into(arg, len, buf);
	buf[n] = '\0';
	return (int)n;
}

int cl_quote_args(const struct cl_arg *args, size_t argc, struct cl_error *err, char **ret_command)
{
	_cleanup_free_ char *out = NULL;
	size_t total = 0, n = 0;

	if (argc == 0)
		return cl_error_set(err, -EINVAL, "args: no arguments");
	if (argc > CL_QUOTE_MAX_ARGC)
		return cl_error_set(err, -E2BIG, "args: %zu arguments exceed the limit of %d", argc,
		                    CL_QUOTE_MAX_ARGC);

	/* First pass: validate and measure, stopping as soon as the limit is passed so that a
	 * huge argument costs no more than the limit. */
	for (size_t i = 0; i < argc; i++) {
		if (args[i].len > 0 && memchr(args[i].data, '\0', args[i].len))
			return cl_error_set(err, -EINVAL, "args[%zu]: contains a NUL byte", i);
		if (args[i].len > CL_QUOTE_MAX_OUTPUT)
			total = (size_t)CL_QUOTE_MAX_OUTPUT + 1;
		else
			total += (i > 0) + cl_quote_arg_length(args[i].data, args[i].len);
		if (total > CL_QUOTE_MAX_OUTPUT)
			return cl_error_set(err, -E2BIG,
			                    "args: the command string exceeds the %d-byte limit "
			                    "(at args[%zu])",
			                    CL_QUOTE_MAX_OUTPUT, i);
	}

	out = malloc(total + 1);
	if (!out)
		return cl_error_set(err, -ENOMEM, "args: out of memory");
	for (size_t i = 0; i < argc; i++) {
		if (i > 0)
			out[n++] = ' ';
		n += quote_into(args[i].data, args[i].len, out + n);
	}
	out[n] = '\0';
	*ret_command = TAKE_PTR(out);
	return 0;
}

int cl_quote_strv(const char *const *argv, size_t argc, struct cl_error *err, char **ret_command)
{
	_cleanup_free_ struct cl_arg *args = NULL;

	if (argc > CL_QUOTE_MAX_ARGC)
		return cl_error_set(err, -E2BIG, "args: %zu arguments exceed the limit of %d", argc,
		                    CL_QUOTE_MAX_ARGC);
	if (argc == 0)
		return cl_error_set(err, -EINVAL, "args: no arguments");
	args = calloc(argc, sizeof(*args));
	if (!args)
		return cl_error_set(err, -ENOMEM, "args: out of memory");
	for (size_t i = 0; i < argc; i++)
		args[i] = (struct cl_arg){.data = argv[i], .len = strlen(argv[i])};
	return cl_quote_args(args, argc, err, ret_command);
}
