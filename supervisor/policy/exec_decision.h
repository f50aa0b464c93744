/* The verdict for one intercepted exec, from the two names the file has (pure, no I/O).
 *
 * An exec names a path (GIVEN: "/bin/ls", "/tmp/git") and the kernel runs the file it resolves
 * to (REAL: "/usr/bin/ls", "/usr/bin/rm"). Rules may be written for either name, and the agent
 * controls symlinks, so:
 *   - a deny rule that matches the given name denies (an alias cannot dodge a deny rule);
 *   - otherwise the real file decides, its own file name leading the canonical command
 *     ("/tmp/git status" → "rm status" when /tmp/git links to rm): a symlink cannot borrow an
 *     allow rule.
 * Without a real name (unknown), the given one decides alone. TRUNCATED says ARGV is only the
 * start of the real argument list (policy_check_exec_prefix). */
#ifndef CLOISTER_EXEC_DECISION_H
#define CLOISTER_EXEC_DECISION_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "supervisor/policy/config.h"
#include "supervisor/policy/policy.h"

int exec_decide(const struct config *config, const char *given_path, const char *real_path,
                const char *const *argv, size_t argc, bool truncated, struct policy_result *ret,
                struct cl_error *err);

/* The same for a file whose content has the digest SHA256 (NULL: unknown), for the rules
 * pinned to a content (config_exec_rule.sha256: a person's decision). */
int exec_decide_content(const struct config *config, const char *given_path, const char *real_path,
                        const char *const *argv, size_t argc, bool truncated, const char *sha256,
                        struct policy_result *ret, struct cl_error *err);

/* A `#!` script: the kernel runs INTERP [INTERP_ARG] SCRIPT ARGV[1..] (SCRIPT as the exec named
 * it), so the interpreter is an exec of its own that the policy must allow too, or an allowed
 * script could run a denied program (`#!/usr/bin/sudo /bin/sh`). Decide it, by INTERP_GIVEN
 * (as the script writes it, if absolute) and INTERP_REAL (its resolved file) like exec_decide()
 * — either may be NULL, not both — and fold it into *RES, which holds the script's verdict: the
 * stricter verdict wins (deny over ask over allow), its rule named "interpreter PATH: RULE", and
 * an ask falls back to allow only if both would. On error *RES is unchanged. */
int exec_decide_interpreter(const struct config *config, const char *interp_given,
                            const char *interp_real, const char *interp_arg, const char *script,
                            const char *const *argv, size_t argc, bool truncated,
                            struct policy_result *res, struct cl_error *err);

/* The file is also ALIAS: the name a deny rule's file has (deny_ids.h) when the exec's file is
 * that very file under another name (a hard link). A deny rule that matches ALIAS denies, as
 * if the exec had named it; nothing else about ALIAS counts. Folds into *RES (a deny rule
 * there already stays; the rule takes the place of a denial by a setting, which says less);
 * *RES keeps its subject, and its reason names ALIAS. On error *RES is unchanged. */
int exec_decide_alias(const struct config *config, const char *alias, const char *const *argv,
                      size_t argc, bool truncated, struct policy_result *res, struct cl_error *err);

#endif
