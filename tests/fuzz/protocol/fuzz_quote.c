/* Quoting: the canonical string must parse back (as a POSIX shell word list) into exactly the
 * arguments it was built from. Input: a sequence of [1-byte length][bytes] arguments. */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "protocol/quote.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Split a canonical string the way sh would, for the subset quoting produces: words separated by
 * one space, made of plain characters and '…' sections. Checks word i equals args[i]. */
static void check_unquotes_to(const char *s, const struct cl_arg *args, size_t argc)
{
	size_t word = 0;
	_cleanup_free_ char *buf = malloc(strlen(s) + 1);
	size_t n = 0;

	assert(buf);
	for (;;) {
		if (*s == '\'') {
			s++;
			while (*s != '\'') {
				assert(*s != '\0');
				buf[n++] = *s++;
			}
			s++;
			continue;
		}
		if (*s == ' ' || *s == '\0') {
			assert(word < argc);
			assert(n == args[word].len);
			assert(n == 0 || memcmp(buf, args[word].data, n) == 0);
			word++;
			n = 0;
			if (*s == '\0')
				break;
			s++;
			continue;
		}
		/* Outside quotes only the simple characters and the backslash of '\'' appear. */
		if (*s == '\\') {
			assert(s[1] == '\'');
			buf[n++] = '\'';
			s += 2;
			continue;
		}
		assert(cl_quote_arg_is_simple(s, 1));
		buf[n++] = *s++;
	}
	assert(word == argc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cl_arg args[256];
	_cleanup_free_ char *out = NULL;
	struct cl_error err;
	size_t argc = 0, pos = 0, expect_len = 0;
	int expect = 0, r;

	while (pos < size && argc < ELEMENTSOF(args)) {
		size_t len = data[pos++];

		if (len > size - pos)
			len = size - pos;
		args[argc] = (struct cl_arg){(const char *)data + pos, len};
		if (len > 0 && memchr(data + pos, 0, len) && expect == 0)
			expect = -EINVAL;
		expect_len += (argc > 0) + cl_quote_arg_length(args[argc].data, len);
		pos += len;
		argc++;
	}
	if (argc == 0)
		expect = -EINVAL;

	r = cl_quote_args(args, argc, &err, &out);
	assert(r == expect);
	if (r < 0) {
		assert(out == NULL);
		return 0;
	}
	assert(strlen(out) == expect_len);
	check_unquotes_to(out, args, argc);

	/* The single-argument function agrees with the joined string. */
	for (size_t i = 0, off = 0; i < argc; i++) {
		char one[4 * 255 + 3];
		int n = cl_quote_arg(args[i].data, args[i].len, one, sizeof(one));

		assert(n >= 0 && (size_t)n == cl_quote_arg_length(args[i].data, args[i].len));
		assert(memcmp(out + off, one, (size_t)n) == 0);
		off += (size_t)n + 1;
	}
	return 0;
}
