/* What a person's decision on an exec covers, as an exec rule (pure, no I/O).
 *
 * A decision wider than once (the session, the project, every project) covers one of:
 *   exact    this very command: the file, its name, every argument as it was;
 *   program  this file run under this name, with any arguments;
 *   pattern  this file run under this name, with the arguments a pattern allows.
 * Each becomes an exec rule as the config writes them (`path:` and `command:`), so the policy
 * judges it like any other rule: a decision kept for the project is an `exec:` entry of its
 * decisions file (decisions.h), readable and removable like the config's own.
 *
 * The rule's path is the file that ran (its real path, glob characters escaped): a program of
 * the same name elsewhere (one the agent wrote) is not covered. Its command regex is anchored
 * (\A…\z) and starts with the program's name: the file's own name, or argv[0]'s when it
 * differs (`which` runs `which.debianutils`): a multi-call program acts on argv[0], and the
 * policy requires an allow rule to hold for the command under both names, so a decision on
 * `git` does not cover `execve("/usr/bin/git", ["git-clean", …])`.
 *
 * A pattern is written as the canonical command is (protocol/quote.h): words separated by
 * spaces, a word in single quotes is literal ('\'' for a quote), `\x` is x. Outside quotes:
 *   `*`   any characters within ONE argument (never across arguments: `git *` is git with
 *         exactly one argument, whatever it holds);
 *   `?`   one character of one argument;
 *   `**`  as a whole word: any number of arguments, none included (`git status **`).
 * The first word is the program's name (as above); it is not a wildcard. Arguments are
 * matched as the values the program receives, not as text: since no shell runs, `git *`
 * cannot be `git; rm -rf ~` — that is git with the one argument "; rm -rf ~" at most. */
#ifndef CLOISTER_EXEC_PATTERN_H
#define CLOISTER_EXEC_PATTERN_H

#include <stddef.h>

#include "base/error.h"

enum exec_match {
	EXEC_MATCH_EXACT,
	EXEC_MATCH_PROGRAM,
	EXEC_MATCH_PATTERN,
};

/* "exact", "program", "pattern". */
const char *exec_match_to_string(enum exec_match m);
int exec_match_from_string(const char *s, enum exec_match *ret);

/* An exec rule as the config writes it; both strings malloc'd. */
struct exec_pattern_rule {
	char *path_glob;
	char *command; /* a regex in config_regex.h's dialect */
};
void exec_pattern_rule_done(struct exec_pattern_rule *r);

/* The longest pattern accepted, in bytes. */
#define EXEC_PATTERN_MAX 4096

/* The rule for a decision of MATCH on the exec of EXE (its real, absolute path) with
 * ARGV[0..ARGC-1] as the program received it (ARGC 0: as the kernel runs it, {""}). PATTERN
 * is needed for EXEC_MATCH_PATTERN only. -EINVAL with a message a person can act on: a
 * pattern that does not parse or does not start with the program's name, an argument that is
 * not UTF-8 text in an exact rule, a rule longer than the config accepts (CONFIG_MAX_PATTERN);
 * -ENOMEM. */
int exec_pattern_rule(const char *exe, const char *const *argv, size_t argc, enum exec_match match,
                      const char *pattern, struct exec_pattern_rule *ret, struct cl_error *err);

/* The pattern a person is offered to edit for this exec: the program's name, its first
 * argument when it looks like a subcommand (a lowercase word: `git status`), then `**`. */
int exec_pattern_suggest(const char *exe, const char *const *argv, size_t argc, char **ret,
                         struct cl_error *err);

#endif
