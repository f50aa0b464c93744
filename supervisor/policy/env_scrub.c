#include "supervisor/policy/env_scrub.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

static const char *const default_allow[] = {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "PWD",
        "LANG",
        "LANGUAGE",
        "LC_*",
        "TZ",
        "TERM",
        "COLORTERM",
        "NO_COLOR",
        "FORCE_COLOR",
        "COLUMNS",
        "LINES",
        "TMPDIR",
        "EDITOR",
        "VISUAL",
        "PAGER",
        "CI",
        "DEBIAN_FRONTEND",
        "NODE_ENV",
        "npm_config_*",
        "GOPATH",
        "GOCACHE",
        "GOFLAGS",
        "CARGO_HOME",
        "RUSTUP_HOME",
        "VIRTUAL_ENV",
        "PYTHONUNBUFFERED",
        "PYTHONDONTWRITEBYTECODE",
        "PIP_*",
        "DOCKER_HOST",
        "COMPOSE_*",
        "KUBECONFIG",
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        /* where a nested shim call goes (CLOISTER_TOKEN is dropped by *_TOKEN) */
        "CLOISTER_SOCKET",
        "CLOISTER_SUPERVISOR",
};

/* Credentials, dropped by both built-in rule sets: one list, so that the two cannot drift
 * apart (they had: the shim's rules lacked *_CREDENTIAL and KRB5CCNAME, harmless only as long
 * as no allow pattern of theirs matches such a name). */
#define CREDENTIAL_PATTERNS                                                                      \
	"*_TOKEN", "*_TOKEN_*", "TOKEN", "*_SECRET", "*_SECRET_*", "SECRET", "*_KEY", "*_KEY_*", \
	        "*_PASSWORD", "PASSWORD", "*_PASSWD", "*_CREDENTIALS", "*_CREDENTIAL", "AWS_*",  \
	        "AZURE_*", "GOOGLE_APPLICATION_CREDENTIALS", "KRB5CCNAME", "npm_config__auth*",  \
	        "npm_config_*token*", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "SSH_AUTH_SOCK",   \
	        "GPG_AGENT_INFO"

/* Deny wins over allow, so a pattern here removes even what an allow entry names. */
static const char *const default_deny[] = {
        CREDENTIAL_PATTERNS,
        /* the dynamic loader */
        "LD_*",
        "GCONV_PATH",
        "HOSTALIASES",
        "LOCALDOMAIN",
        "RES_OPTIONS",
        "MALLOC_*",
        "GLIBC_TUNABLES",
        /* shells and interpreters running code at start-up */
        "BASH_ENV",
        "ENV",
        "PROMPT_COMMAND",
        "BASH_FUNC_*",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "IFS",
        "CDPATH",
        "GLOBIGNORE",
        "PYTHONSTARTUP",
        "PYTHONPATH",
        "PYTHONHOME",
        "PERL5OPT",
        "PERL5LIB",
        "PERLLIB",
        "RUBYOPT",
        "RUBYLIB",
        "NODE_OPTIONS",
        "NODE_PATH",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "GIT_SSH_COMMAND",
        "GIT_EXEC_PATH",
        "GIT_CONFIG_*",
        "DOCKER_CONFIG",
};

/* The agent's own environment: the user's, less what opens a way to their other programs
 * (the sockets themselves are hidden by the sandbox; the names only point at them) and their
 * credentials. Loader and shell start-up variables stay: the user set them for this program. */
static const char *const agent_deny[] = {
        CREDENTIAL_PATTERNS,
        /* agents, sessions and the programs that answer on a socket */
        "SSH_AGENT_PID",
        "TMUX",
        "TMUX_PANE",
        "TMUX_TMPDIR",
        "STY",
        "DBUS_SESSION_BUS_ADDRESS",
        "DBUS_SYSTEM_BUS_ADDRESS",
        "DISPLAY",
        "WAYLAND_DISPLAY",
        "WAYLAND_SOCKET",
        "XAUTHORITY",
        "ICEAUTHORITY",
        "SESSION_MANAGER",
        "PULSE_SERVER",
        "DOCKER_HOST",
        "CONTAINER_HOST",
        "NVIM",
        "NVIM_LISTEN_ADDRESS",
        "KITTY_LISTEN_ON",
        "WEZTERM_UNIX_SOCKET",
        "ALACRITTY_SOCKET",
        "VSCODE_IPC_HOOK*",
        "VSCODE_GIT_IPC_HANDLE",
        "VSCODE_GIT_ASKPASS_*",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "I3SOCK",
        "SWAYSOCK",
};

/* The keys of the model APIs coding agents call: without them the agent cannot work at all,
 * so a user would pass them on anyway; they reach only the provider's API, through the proxy
 * and the domain policy like any other connection. Every other credential needs --keep-env. */
static const char *const agent_keep[] = {
        "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
        "OPENAI_API_KEY",    "GEMINI_API_KEY",
};

const struct env_scrub_rules env_scrub_agent_rules = {
        .deny = agent_deny,
        .n_deny = ELEMENTSOF(agent_deny),
        .keep = agent_keep,
        .n_keep = ELEMENTSOF(agent_keep),
        /* The whole of a user's environment, as execve takes it. */
        .max_entries = 16384,
        .max_bytes = 2 * 1024 * 1024,
};

const struct env_scrub_rules env_scrub_default_rules = {
        .allow = default_allow,
        .n_allow = ELEMENTSOF(default_allow),
        .deny = default_deny,
        .n_deny = ELEMENTSOF(default_deny),
};

static bool matches_any(const char *const *patterns, size_t n, const char *name, int flags)
{
	for (size_t i = 0; i < n; i++)
		if (fnmatch(patterns[i], name, flags) == 0)
			return true;
	return false;
}

int env_scrub_keeps(const struct env_scrub_rules *rules, const char *name)
{
	for (size_t i = 0; name[0] && i < rules->n_keep; i++)
		if (strcmp(rules->keep[i], name) == 0)
			return 1;
	if (!name[0] || matches_any(rules->deny, rules->n_deny, name, FNM_CASEFOLD))
		return 0;
	if (rules->n_allow == 0)
		return 1;
	return matches_any(rules->allow, rules->n_allow, name, 0) ? 1 : 0;
}

void env_scrub_free(char **env)
{
	if (!env)
		return;
	for (char **p = env; *p; p++)
		free(*p);
	free(env);
}

/* Is the name of entry (len bytes up to '=') the name of one of kept[0..n-1]? */
static bool seen(char *const *kept, size_t n, const char *entry, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strncmp(kept[i], entry, len + 1) == 0)
			return true;
	return false;
}

int env_scrub(const struct env_scrub_rules *rules, char *const *env, size_t envc,
              struct cl_error *err, char ***ret_env, size_t *ret_envc, size_t *ret_dropped)
{
	size_t max_entries =
	        rules->max_entries ? rules->max_entries : ENV_SCRUB_MAX_ENTRIES_DEFAULT;
	size_t max_bytes = rules->max_bytes ? rules->max_bytes : ENV_SCRUB_MAX_BYTES_DEFAULT;
	_cleanup_(env_scrub_freep) char **kept = NULL;
	size_t n = 0, bytes = 0;
	char name[256];

	kept = calloc(1, sizeof(*kept));
	if (!kept)
		return cl_error_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < envc; i++) {
		const char *e = env[i], *eq = e ? strchr(e, '=') : NULL;
		size_t len = eq ? (size_t)(eq - e) : 0;
		char **grown;

		if (!eq || len == 0)
			continue;
		/* Longer names than any pattern is written for are not kept. */
		if (len >= sizeof(name))
			continue;
		memcpy(name, e, len);
		name[len] = '\0';
		if (!env_scrub_keeps(rules, name) || seen(kept, n, e, len))
			continue;
		if (n + 1 > max_entries)
			return cl_error_set(err, -E2BIG,
			                    "environment: more than %zu variables kept",
			                    max_entries);
		bytes += strlen(e) + 1;
		if (bytes > max_bytes)
			return cl_error_set(err, -E2BIG,
			                    "environment: more than %zu bytes of variables kept",
			                    max_bytes);
		grown = realloc(kept, (n + 2) * sizeof(*kept));
		if (!grown)
			return cl_error_set(err, -ENOMEM, "out of memory");
		kept = grown;
		kept[n] = strdup(e);
		kept[n + 1] = NULL;
		if (!kept[n])
			return cl_error_set(err, -ENOMEM, "out of memory");
		n++;
	}
	*ret_dropped = envc - n;
	*ret_envc = n;
	*ret_env = TAKE_PTR(kept);
	return 0;
}
