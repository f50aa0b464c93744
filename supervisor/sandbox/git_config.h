/* git's config files, read for what they make git run or read next (pure: a buffer in, the
 * named paths out). fs_confine protects what a config names in a writable path: a protected
 * .git/config that says `include.path = ../team.gitconfig`, `core.fsmonitor =
 * scripts/watch.sh` or `filter.x.clean = sh tools/clean.sh` hands the agent the next command
 * anyway when the file it names is an ordinary project file.
 *
 * The syntax is git-config(1)'s: [section], [section "subsection"], [section.subsection];
 * `key = value`, a key alone (true); values with "quotes", \" \\ \n \t \b escapes, a trailing
 * backslash continuing the line, # and ; comments outside quotes. Section and key names are
 * compared without case. A line git would refuse ends the parse with -EINVAL (git refuses the
 * whole file then: nothing after it runs). Conditions (includeIf's) are not evaluated: every
 * include counts, a superset of what git reads. */
#ifndef CLOISTER_SUPERVISOR_GIT_CONFIG_H
#define CLOISTER_SUPERVISOR_GIT_CONFIG_H

#include <stddef.h>

enum git_named {
	GIT_NAMED_NONE,
	GIT_NAMED_INCLUDE,   /* include.path, includeIf.*.path: another config file */
	GIT_NAMED_HOOKS_DIR, /* core.hooksPath: the directory git runs hooks from */
	GIT_NAMED_PROGRAM,   /* a shell command git runs (fsmonitor, filters, aliases, …) */
};

/* Each variable in order: SECTION and KEY lower-case, SUBSECTION NULL when absent, VALUE NULL
 * for a key alone. A negative return stops the parse and is returned. */
typedef int (*git_config_fn)(const char *section, const char *subsection, const char *key,
                             const char *value, void *userdata);

int git_config_parse(const char *buf, size_t len, git_config_fn fn, void *userdata);

/* What the variable's value names (arguments as git_config_fn's). */
enum git_named git_config_named(const char *section, const char *subsection, const char *key,
                                const char *value);

/* The words of shell command CMD that may name a file: split at blanks and shell operators,
 * quotes removed, an alias's leading '!' dropped; words that are options (-x), expansions ($,
 * `, %, globs) or empty are left out. A negative return of FN stops and is returned. */
int git_command_words(const char *cmd, int (*fn)(const char *word, void *userdata), void *userdata);

#endif
