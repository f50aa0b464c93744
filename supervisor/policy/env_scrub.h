/* Environment scrubbing (pure, no I/O): for commands run on a shim's behalf, and for the agent
 * that `run` starts.
 *
 * The shim sends the caller's whole environment; only part of it may reach the command the
 * supervisor runs. `run` hands the agent the caller's environment less what points at the
 * user's other programs or holds their credentials. Rules are glob patterns (fnmatch(3)) on
 * variable names:
 *   0. a name in the keep list (exact) is kept: what the user passes on deliberately;
 *   1. a name matching a deny pattern, ignoring case ("*_TOKEN" catches "github_token" and
 *      "npm_config_//host/:_authToken" is caught by "npm_config_*token*"), is dropped: deny
 *      wins over allow;
 *   2. otherwise it is kept if it matches an allow pattern (case matters), or if the allow list is
 * empty;
 *   3. otherwise it is dropped.
 * A name given twice keeps its first value (the one getenv() sees); malformed entries (no '=',
 * empty name) are dropped. The kept environment is bounded in entries and bytes: past a bound
 * the call fails, so a command never runs with an environment cut at an arbitrary place. */
#ifndef CLOISTER_ENV_SCRUB_H
#define CLOISTER_ENV_SCRUB_H

#include <stddef.h>

#include "base/cleanup.h"
#include "base/error.h"

#define ENV_SCRUB_MAX_ENTRIES_DEFAULT 1024
#define ENV_SCRUB_MAX_BYTES_DEFAULT   (256 * 1024)

struct env_scrub_rules {
	const char *const *allow; /* n_allow patterns; none: keep every name not denied */
	size_t n_allow;
	const char *const *deny;
	size_t n_deny;
	size_t max_entries;      /* 0: ENV_SCRUB_MAX_ENTRIES_DEFAULT */
	size_t max_bytes;        /* sum of strlen("K=V") + 1; 0: ENV_SCRUB_MAX_BYTES_DEFAULT */
	const char *const *keep; /* n_keep exact names kept whatever the deny patterns say */
	size_t n_keep;
};

/* The built-in rules: keep PATH, HOME, LANG, LC_*, TERM, … (tools' ordinary settings); drop
 * secrets (*_TOKEN, *_SECRET, *_KEY, *_PASSWORD, AWS_*, …), loader and shell start-up hooks
 * (LD_*, BASH_ENV, ENV, PROMPT_COMMAND, BASH_FUNC_*, …); CLOISTER_SOCKET and CLOISTER_SUPERVISOR
 * stay so that a command's own shimmed calls reach the supervisor, CLOISTER_TOKEN does not. */
extern const struct env_scrub_rules env_scrub_default_rules;

/* The agent's (`run`): everything but credentials (*_TOKEN, *_SECRET, *_PASSWORD, *_KEY,
 * AWS_*, …) and what leads to the user's other programs (TMUX, STY, SSH_AUTH_SOCK,
 * DBUS_SESSION_BUS_ADDRESS, DISPLAY, WAYLAND_DISPLAY, editors' and terminals' IPC sockets, …).
 * Kept: the model providers' API keys an agent needs to work at all (ANTHROPIC_API_KEY,
 * OPENAI_API_KEY, …; see the .c). Copy it and extend keep for `run --keep-env`. */
extern const struct env_scrub_rules env_scrub_agent_rules;

/* Is NAME kept by RULES? (1 kept, 0 dropped.) */
int env_scrub_keeps(const struct env_scrub_rules *rules, const char *name);

/* Scrub ENV[0..ENVC-1] ("K=V" strings). On success *ret_env is a malloc'd NULL-terminated
 * vector of malloc'd copies of the kept entries, in their original order (free with
 * env_scrub_free()), *ret_envc their count and *ret_dropped how many were dropped.
 * -E2BIG ("environment: more than N variables kept", "… bytes") past a bound, -ENOMEM. */
int env_scrub(const struct env_scrub_rules *rules, char *const *env, size_t envc,
              struct cl_error *err, char ***ret_env, size_t *ret_envc, size_t *ret_dropped);

void env_scrub_free(char **env);
CL_DEFINE_TRIVIAL_CLEANUP(char **, env_scrub_free)

#endif
