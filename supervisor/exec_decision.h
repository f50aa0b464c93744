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

#include "protocol/error.h"
#include "supervisor/config.h"
#include "supervisor/policy.h"

int exec_decide(const struct config *config, const char *given_path, const char *real_path,
                const char *const *argv, size_t argc, bool truncated, struct policy_result *ret,
                struct cl_error *err);

#endif
