/* The regular expressions of config rules (hostexec patterns, exec `command:` rules), with
 * PCRE2 (pure, no I/O).
 *
 * Semantics follow Go's regexp, which Cloister's users write their patterns for: UTF mode;
 * `$` matches only at the very end (not before a final newline); an invalid UTF-8 byte in the
 * subject reads as U+FFFD, so `.` still crosses it; matching is not anchored (write ^…$).
 * One departure from Go: `.` also matches a newline (as with (?s)), because a newline can
 * only appear inside a quoted argument of the canonical command, and a deny rule such as
 * "^curl .*evil" must not stop at it.
 * Matching is bounded by a match and depth limit against catastrophic backtracking. */
#ifndef CLOISTER_CONFIG_REGEX_H
#define CLOISTER_CONFIG_REGEX_H

#include <stddef.h>

#define CONFIG_REGEX_MATCH_LIMIT 100000

struct config_regex {
	char *source;
	struct pcre2_real_code_8 *code;
};

/* Compile PATTERN into *ret (written only on success). On -EINVAL, MSG (SIZE bytes) holds
 * PCRE2's message and the offset ("missing closing parenthesis at offset 5"); -ENOMEM. */
int config_regex_compile(const char *pattern, struct config_regex *ret, char *msg, size_t size);

/* Free what *REGEX holds and reset it; accepts an empty one. */
void config_regex_done(struct config_regex *regex);

/* Does REGEX match SUBJECT? 1 yes, 0 no, negative errno when matching failed (-ERANGE: the
 * match limit was reached; -ENOMEM). Callers decide which way a failure counts, always
 * against the request (policy.h). */
int config_regex_match(const struct config_regex *regex, const char *subject);
/* Frees what matching keeps per thread (made on its first match): for a thread that ends
 * before the process (the exec guard's). */
void config_regex_thread_free(void);

#endif
