#include "supervisor/policy/config_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8

#include <errno.h>
#include <pcre2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

int config_regex_compile(const char *pattern, struct config_regex *ret, char *msg, size_t size)
{
	/* PCRE2_MATCH_INVALID_UTF as well: the subject is repaired before matching (below), but
	 * should a byte sequence slip through, PCRE2 must not fail on it. \C could split a
	 * UTF-8 character, so it is refused. PCRE2_DOTALL: a newline inside a quoted argument
	 * is just a byte of the command; were `.` to stop there, "^curl .*evil" would miss
	 * curl 'a<LF>b' evil, a deny rule bypass. */
	const uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_DOLLAR_ENDONLY |
	                         PCRE2_DOTALL | PCRE2_NEVER_BACKSLASH_C;
	PCRE2_UCHAR text[256];
	PCRE2_SIZE offset;
	pcre2_code *code;
	char *source;
	int rc;

	code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, options, &rc, &offset,
	                     NULL);
	if (!code) {
		if (rc == PCRE2_ERROR_HEAPLIMIT || rc == PCRE2_ERROR_NOMEMORY)
			return -ENOMEM;
		pcre2_get_error_message(rc, text, sizeof(text));
		snprintf(msg, size, "%s at offset %zu", (const char *)text, (size_t)offset);
		return -EINVAL;
	}
	source = strdup(pattern);
	if (!source) {
		pcre2_code_free(code);
		return -ENOMEM;
	}
	*ret = (struct config_regex){.source = source, .code = code};
	return 0;
}

void config_regex_done(struct config_regex *regex)
{
	free(regex->source);
	pcre2_code_free(regex->code);
	regex->source = NULL;
	regex->code = NULL;
}

/* Length of the valid UTF-8 sequence at P (1-4), or 0 if the byte there starts none. Rejects
 * overlong forms, surrogates and code points above U+10FFFF, as PCRE2 does. */
static size_t utf8_sequence_length(const unsigned char *p)
{
	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		return (p[1] & 0xc0) == 0x80 ? 2 : 0;
	if (p[0] >= 0xe0 && p[0] <= 0xef) {
		if ((p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80)
			return 0;
		if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0))
			return 0;
		return 3;
	}
	if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		if ((p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80 || (p[3] & 0xc0) != 0x80)
			return 0;
		if ((p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))
			return 0;
		return 4;
	}
	return 0;
}

/* Subjects are argv bytes, which need not be UTF-8. A UTF-mode regex cannot see across an
 * invalid byte (`.` never matches one), so "^curl .*evil" would miss "curl \xff evil": a deny
 * rule bypass. As Go's regexp does, each invalid byte is read as U+FFFD instead. *ret_copy is
 * the repaired copy, or NULL when SUBJECT is valid as it is. */
static int utf8_sanitise(const char *subject, char **ret_copy)
{
	const unsigned char *p = (const unsigned char *)subject;
	size_t len = strlen(subject), out = 0;
	bool valid = true;
	char *copy;

	for (size_t i = 0; i < len;) {
		size_t n = utf8_sequence_length(p + i); /* reads stop at the NUL: it is < 0x80 */
		if (n == 0) {
			valid = false;
			break;
		}
		i += n;
	}
	*ret_copy = NULL;
	if (valid)
		return 0;
	copy = malloc(3 * len + 1);
	if (!copy)
		return -ENOMEM;
	for (size_t i = 0; i < len;) {
		size_t n = utf8_sequence_length(p + i);
		if (n == 0) {
			memcpy(copy + out, "\xef\xbf\xbd", 3);
			out += 3;
			i++;
		} else {
			memcpy(copy + out, p + i, n);
			out += n;
			i += n;
		}
	}
	copy[out] = '\0';
	*ret_copy = copy;
	return 0;
}

/* The match data (one pair: only whether it matched is used) and the context with the limits
 * are the same for every match: made on a thread's first match and kept, instead of two
 * allocations and frees per rule per exec. */
static __thread pcre2_match_data *thread_md;
static __thread pcre2_match_context *thread_mc;

void config_regex_thread_free(void)
{
	pcre2_match_data_free(thread_md);
	pcre2_match_context_free(thread_mc);
	thread_md = NULL;
	thread_mc = NULL;
}

int config_regex_match(const struct config_regex *regex, const char *subject_in)
{
	_cleanup_free_ char *sanitised = NULL;
	const char *subject = subject_in;
	int rc;

	if (utf8_sanitise(subject_in, &sanitised) < 0)
		return -ENOMEM;
	if (sanitised)
		subject = sanitised;

	if (!thread_mc) {
		pcre2_match_context *mc = pcre2_match_context_create(NULL);

		if (!mc)
			return -ENOMEM;
		/* Bounds catastrophic backtracking; a pattern that hits it fails closed (see
		 * header). */
		pcre2_set_match_limit(mc, CONFIG_REGEX_MATCH_LIMIT);
		pcre2_set_depth_limit(mc, CONFIG_REGEX_MATCH_LIMIT);
		thread_mc = mc;
	}
	if (!thread_md) {
		thread_md = pcre2_match_data_create(1, NULL);
		if (!thread_md)
			return -ENOMEM;
	}
	rc = pcre2_match(regex->code, (PCRE2_SPTR)subject, strlen(subject), 0, 0, thread_md,
	                 thread_mc);
	if (rc >= 0)
		return 1;
	if (rc == PCRE2_ERROR_NOMATCH)
		return 0;
	return rc == PCRE2_ERROR_NOMEMORY ? -ENOMEM : -ERANGE;
}
