/* The policy: (effective config, event) → allow / deny / ask, with the rule or setting that
 * decided and a reason a person understands (pure, no I/O).
 *
 * exec (kernel-intercepted execve): the event is the resolved executable path and argv.
 *   The canonical command matched by `command:` regexes is built from argv with argv[0]
 *   replaced by the executable's file name: argv[0] is chosen by the (hostile) caller, so
 *   `execve("/bin/rm", ["git", "status"])` is checked as "rm status", not "git status".
 *   Multi-call programs (git, busybox) act on argv[0], though: `execve("/usr/bin/git",
 *   ["git-clean", "log", "-fdx"])` runs git clean. So when argv[0]'s file name differs from
 *   the executable's, a regex must also hold for the command under argv[0]'s name ("git-clean
 *   log -fdx"): an allow regex must match both forms, a deny regex either.
 *   An empty argv (legal; the kernel runs the program with argv {""}) is checked as {""}.
 *   The path must be absolute and normalised (no "//", "/./", "/../"); anything else is
 *   denied, since a path glob could not be trusted to see the file the kernel runs.
 *   A `command:` rule on an incomplete argv (see policy_check_exec_prefix(), or an argv whose
 *   canonical command exceeds CL_QUOTE_MAX_OUTPUT bytes or CL_QUOTE_MAX_ARGC arguments) is
 *   judged on the prefix that fits: an allow regex never matches it; a deny regex that
 *   matches it denies; one that does not cannot be ruled out, so the exec is not allowed
 *   without a person (ALLOW becomes ASK — DENY with exec.ask=off — and the fallback DENY).
 *
 *   Evaluation, first that applies:
 *     1. an exec.deny rule matches (any file)         → DENY  (that rule)
 *     2. exec.security = deny                          → DENY  (the setting)
 *     3. exec.security = full,      ask = always       → ASK   (exec.ask)
 *        exec.security = full,      ask = off|on-miss  → ALLOW (exec.security)
 *     4. exec.security = allowlist, an allow matches:  ask = always → ASK, else ALLOW (the rule)
 *     5. exec.security = allowlist, no allow matches:  ask = off → DENY,
 *                                                      on-miss|always → ASK  (exec.ask)
 *   An ASK carries the fallback for when nobody can answer (exec.ask_fallback): deny → DENY;
 *   allowlist → ALLOW if an allow rule matched, else DENY; full → ALLOW.
 *
 * hostexec (a command run on the host, Cloister's POST /request): the canonical command of
 *   args as given. auto_approve matches → ALLOW (the pattern); else manual_approve → ASK;
 *   else DENY "Command doesn't match allowlist". Fallback of an ASK: DENY.
 *
 * domain (a connection, host[:port]): a deny entry of any layer — global or project config,
 *   global or project decisions, or the caller's in-memory session decisions — beats any
 *   allow entry. Listed in allow → ALLOW; unlisted → proxy.unlisted_domain_behavior: reject →
 *   DENY, request_approval → ASK (fallback DENY when the approval times out).
 *
 * A regex that cannot be evaluated (match limit hit) counts as a match for deny rules and as
 * no match for allow rules, so an error never lets anything through. Likewise a caller must
 * treat a failing check (negative return) as a denial. */
#ifndef CLOISTER_POLICY_H
#define CLOISTER_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "supervisor/policy/config.h"

enum policy_verdict {
	POLICY_ALLOW,
	POLICY_DENY,
	POLICY_ASK,
};

struct policy_result {
	enum policy_verdict verdict;
	enum policy_verdict fallback; /* what an ASK becomes when nobody answers */
	/* exec: an exec.deny rule denied (not a setting such as exec.security or exec.ask), so
	 * the denial holds whatever name the file is reached by (see exec_decision.h). */
	bool by_deny_rule;
	/* domain: an ALLOW that rests on an entry naming this exact host (a `domain:` entry of
	 * the config or the decisions, or a person's decision for the host itself), not on a
	 * pattern or the unlisted rule. Only such an allow lets the proxy dial a loopback,
	 * metadata or local address (proxy.h). */
	bool exact_host;
	/* exec: an allow rule pinned to a content (config_exec_rule.sha256) matched all but the
	 * content: unknown (pin_wanted: decide again with the file's digest), or another one
	 * (content_changed: the file changed since a person allowed it). */
	bool pin_wanted;
	bool content_changed;
	/* The rule or setting that decided; origin.file NULL when a built-in rule of the
	 * policy itself decided (a malformed path). */
	struct config_origin origin;
	char rule[512];     /* e.g. `exec.deny[1] path "/usr/bin/nc*"`, `exec.ask=on-miss` */
	char reason[512];   /* e.g. "no allow rule matched and exec.ask is on-miss" */
	char subject[1024]; /* canonical command or normalised domain (truncated for display) */
	char pattern[512];  /* hostexec: the matching pattern as written ("" otherwise) */
};

/* Decisions kept in memory for a running session (the dashboard's "session" scope); the
 * rules' origin.layer should be CONFIG_LAYER_SESSION. */
struct policy_session {
	struct config_domain_list allow;
	struct config_domain_list deny;
};

/* Decide an exec of PATH with ARGV[0..ARGC-1] (ARGC may be 0). Fails with -EINVAL when PATH
 * has no file name, -E2BIG when argv[0] alone is too long to build a command from, -ENOMEM;
 * *ret is written only on success. */
int policy_check_exec(const struct config *config, const char *path, const char *const *argv,
                      size_t argc, struct policy_result *ret, struct cl_error *err);

/* The same when ARGV[0..ARGC-1] is only the start of the real argument list (the notifier
 * stopped reading at its limit: exec_target.argv_truncated); see "incomplete argv" above. */
int policy_check_exec_prefix(const struct config *config, const char *path, const char *const *argv,
                             size_t argc, struct policy_result *ret, struct cl_error *err);

/* Either of the above (TRUNCATED) for a file whose content has the digest SHA256 (64 lowercase
 * hex digits; NULL: unknown, and rules pinned to a content do not match). */
int policy_check_exec_content(const struct config *config, const char *path,
                              const char *const *argv, size_t argc, bool truncated,
                              const char *sha256, struct policy_result *ret, struct cl_error *err);

/* Decide a hostexec request for the canonical command COMMAND. */
int policy_check_hostexec(const struct config *config, const char *command,
                          struct policy_result *ret, struct cl_error *err);

/* Decide a connection to HOST ("example.com", "example.com:443", "[::1]:8443"); SESSION may
 * be NULL. -EINVAL with a message for a malformed host. */
int policy_check_domain(const struct config *config, const struct policy_session *session,
                        const char *host, struct policy_result *ret, struct cl_error *err);
/* The same with N rule sets in memory (SESSIONS[i] may be NULL): a sandbox's own, its
 * project's and the global ones; a denial in any of them wins. */
int policy_check_domain_in(const struct config *config,
                           const struct policy_session *const *sessions, size_t n, const char *host,
                           struct policy_result *ret, struct cl_error *err);
/* The same, leaving out CONFIG's rules of the layers in SKIP_LAYERS (a mask of 1 << layer):
 * the decisions files a running supervisor reads again as they change, passed among
 * SESSIONS instead. */
int policy_check_domain_except(const struct config *config, unsigned skip_layers,
                               const struct policy_session *const *sessions, size_t n,
                               const char *host, struct policy_result *ret, struct cl_error *err);

const char *policy_verdict_to_string(enum policy_verdict verdict);

#endif
