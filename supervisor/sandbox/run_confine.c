/* See run_confine.h. */
#include "supervisor/sandbox/run_confine.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "supervisor/policy/env_scrub.h"
#include "supervisor/sandbox/confine_plan.h"
#include "supervisor/sandbox/fs_confine.h"
#include "supervisor/sandbox/landlock.h"
#include "base/say.h"

extern char **environ;

/* Paths on the agent's command line kept visible when they live under /tmp (the agent program
 * itself, a script it is given). */
#define ARGV_PATHS_MAX 64

int run_confine_environ(const struct run_confine_options *o, struct cl_error *err, char ***ret_envp)
{
	const char *keep[RUN_KEEP_ENV_MAX + 16];
	struct env_scrub_rules rules = env_scrub_agent_rules;
	struct cl_error why = {""};
	size_t n = 0, n_keep = 0, dropped = 0, kept = 0;
	char **env = NULL;
	int r;

	if (rules.n_keep + o->n_keep_env > ELEMENTSOF(keep))
		return cl_error_set(err, -E2BIG, "too many --keep-env names");
	for (size_t i = 0; i < rules.n_keep; i++)
		keep[n_keep++] = rules.keep[i];
	for (size_t i = 0; i < o->n_keep_env; i++)
		keep[n_keep++] = o->keep_env[i];
	rules.keep = keep;
	rules.n_keep = n_keep;
	while (environ[n])
		n++;
	r = env_scrub(&rules, environ, n, &why, &env, &kept, &dropped);
	if (r < 0)
		return cl_error_set(err, r, "the agent's %s", why.msg);
	if (o->verbose && dropped) {
		char line[1024];
		size_t len = 0;

		/* Names only: a value may be the secret itself. */
		for (size_t i = 0; i < n; i++) {
			const char *eq = strchr(environ[i], '=');
			char name[256];

			if (!eq || eq == environ[i] || (size_t)(eq - environ[i]) >= sizeof(name))
				continue;
			memcpy(name, environ[i], (size_t)(eq - environ[i]));
			name[eq - environ[i]] = '\0';
			if (env_scrub_keeps(&rules, name))
				continue;
			if (len + strlen(name) + 3 >= sizeof(line)) {
				say("environment: removed %s", line);
				len = 0;
			}
			len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%s",
			                        len ? " " : "", name);
		}
		if (len)
			say("environment: removed %s", line);
	}
	*ret_envp = env;
	return 0;
}

static const char *scope_names(uint64_t scopes)
{
	if ((scopes & CL_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET) &&
	    (scopes & CL_LANDLOCK_SCOPE_SIGNAL))
		return "abstract unix sockets, signals";
	if (scopes & CL_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET)
		return "abstract unix sockets";
	return "none";
}

int run_confine_plan(const struct run_confine_options *o, struct cl_error *err,
                     struct sandbox_confine **ret)
{
	const char *keep[ARGV_PATHS_MAX + 8], *protect[8];
	struct sandbox_confine_request req = {
	        .keep_visible = keep,
	        .protect = protect,
	        .ssh_auth_sock = getenv("SSH_AUTH_SOCK"),
	        .runtime_dir = getenv("XDG_RUNTIME_DIR"),
	        .tmpdir = getenv("TMPDIR"),
	        .host_network = o->host_network,
	};
	struct sandbox_confine_summary sum;
	size_t nk = 0, np = 0;
	int abi, r;

	abi = landlock_abi();
	req.landlock_scopes = landlock_scopes_supported(abi);
	if (!(req.landlock_scopes & CL_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET)) {
		/* In a network namespace of its own, the host's abstract sockets are out of reach
		 * anyway (they belong to a network namespace); on the host's they are not. */
		if (o->host_network && !o->allow_abstract_sockets)
			return cl_error_set(
			        err, -EPERM,
			        "--net host: this kernel's Landlock (ABI %d) cannot keep "
			        "the agent from the host's abstract unix sockets; "
			        "--allow-abstract-sockets accepts that",
			        abi);
		if (o->verbose || o->host_network)
			say("warning: no Landlock scopes (ABI %d): %s", abi,
			    o->host_network ? "the agent can reach the host's abstract unix sockets"
			                    : "abstract unix sockets are kept apart only by the "
			                      "network namespace");
	}
	if (o->config_dir)
		keep[nk++] = protect[np++] = o->config_dir;
	if (o->default_config_dir)
		keep[nk++] = protect[np++] = o->default_config_dir;
	if (o->exe)
		protect[np++] = o->exe;
	if (o->audit_dir)
		protect[np++] = o->audit_dir;
	if (o->run_dir)
		protect[np++] = o->run_dir;
	protect[np] = NULL;
	if (getenv("HOME") && getenv("HOME")[0] == '/')
		keep[nk++] = getenv("HOME");
	for (char *const *a = o->agent_argv; *a && nk < ELEMENTSOF(keep) - 1; a++)
		if ((*a)[0] == '/')
			keep[nk++] = *a;
	keep[nk] = NULL;

	if (!o->config && o->require_fs_confinement)
		return cl_error_set(err, -EPERM,
		                    "--require-fs-confinement: the file system is not confined");
	if (o->config) {
		const char *kept[3] = {NULL}, *own[3] = {o->config_dir, NULL, NULL};
		size_t n_kept = 0;
		struct fs_confine_request fr = {
		        .config = o->config,
		        .home = getenv("HOME"),
		        .worktree = ".",
		        .keep_visible = kept,
		        .own_dirs = own,
		        .no_mounts = o->test_no_fs_mounts,
		};

		if (o->config_dir)
			kept[n_kept++] = o->config_dir;
		own[o->config_dir ? 1 : 0] = o->default_config_dir;
		if (o->audit_dir)
			kept[n_kept++] = o->audit_dir;
		/* ABI 1 refuses every rename across directories in a domain; from ABI 2 the
		 * REFER right lets them through where both sides are writable. A process in a
		 * domain with file rules may not mount at all, not even in a user namespace of
		 * its own: an agent allowed its own sandbox goes without them (the mount layer
		 * still holds: what it mounts cannot unlock ours). */
		req.landlock_fs =
		        abi >= 2 && !o->nested_sandbox ? landlock_fs_write_rights(abi) : 0;
		if (o->require_fs_confinement && (o->test_no_fs_mounts || !req.landlock_fs))
			return cl_error_set(
			        err, -EPERM, "--require-fs-confinement: %s",
			        o->test_no_fs_mounts
			                ? "the mount layer is off (--test-no-fs-mounts)"
			        : o->nested_sandbox
			                ? "--allow-nested-sandbox leaves Landlock's file rules out "
			                  "(they refuse every mount)"
			                : "this kernel's Landlock cannot confine writes (ABI < 2)");
		r = fs_confine_prepare(&fr, &req.fs, err);
		if (r < 0)
			return r;
	}
	if (req.fs) {
		_cleanup_free_ char *cwd = getcwd(NULL, 0);
		const char *home = getenv("HOME");
		_cleanup_free_ char *real_home =
		        home && home[0] == '/' ? realpath(home, NULL) : NULL;

		/* The project is writable: run from ~ (or /), all of ~ is, but for fs.protect. */
		if ((o->verbose || isatty(STDERR_FILENO)) && cwd &&
		    ((real_home && strcmp(real_home, cwd) == 0) || strcmp(cwd, "/") == 0))
			say("warning: the working directory %s holds your home directory: all of "
			    "it "
			    "is writable for the agent but for fs.protect; start run in the "
			    "project",
			    cwd);
	}
	if (req.fs) {
		const struct confine_paths *fl = fs_confine_followed(req.fs);
		struct fs_confine_summary fs;

		/* Files of the project made read-only by what leads to them: say which, or a
		 * failing build would be a riddle. */
		fs_confine_summarize(req.fs, &fs);
		for (size_t i = 0; o->verbose && i < fl->n; i++)
			say("files: read-only, a protected path leads to it: %s", fl->v[i]);
		if (!o->verbose && fl->n && isatty(STDERR_FILENO))
			say("files: %zu writable paths are read-only: protected paths lead to them "
			    "(run -v names them)",
			    fl->n);
		if (fs.unwalked)
			say("warning: %zu protected directories or git configs too many, large or "
			    "deep to follow whole: what links or includes there lead to may be "
			    "writable",
			    fs.unwalked);
	}
	r = sandbox_confine_prepare(&req, ret, err);
	if (r < 0)
		return r;
	if (o->verbose && req.fs) {
		struct fs_confine_summary fs;

		sandbox_confine_summarize(*ret, &sum);
		fs_confine_summarize(req.fs, &fs);
		say("files, mount layer: %s; %zu writable paths (%zu created), %zu protected (%zu "
		    "absent, not held by a mount; %zu symlinks held), %zu hidden (%zu absent)%s, "
		    "%zu "
		    "directories pinned; /tmp %s; at the end: %s",
		    fs.mounts ? "on (the rest read-only)" : "OFF (--test-no-fs-mounts)", fs.write,
		    fs.created, fs.protect, fs.absent_protect, fs.links, fs.hide, fs.absent_hide,
		    fs.skipped_hide ? " (some skipped: they hold the project)" : "", fs.pinned,
		    sum.private_tmp ? "private" : "the host's",
		    fs.git_check ? "absent protected and hidden paths and every .git in the "
		                   "project checked"
		                 : "absent protected and hidden paths checked");
		say("files, Landlock: %s",
		    sum.landlock_fs     ? "on: write rights only beneath the writable paths"
		    : o->nested_sandbox ? "off: --allow-nested-sandbox (its file rules refuse "
		                          "every mount)"
		    : abi >= 1          ? "off: ABI 1 would refuse every rename across directories"
		                        : "off: unavailable on this kernel");
	} else if (o->verbose) {
		say("files: not confined (--test-no-fs-confinement)");
	}
	if (o->verbose) {
		sandbox_confine_summarize(*ret, &sum);
		say("confinement: %s; %zu host unix socket and /run FIFO paths covered where "
		    "visible; %zu parent directories pinned; capabilities kept: %#llx; Landlock "
		    "ABI %d, scopes: %s",
		    sum.private_tmp ? "private /tmp" : "/tmp shared (it is the working directory)",
		    sum.host_sockets, sum.pinned, (unsigned long long)sum.kept_caps, abi,
		    scope_names(sum.landlock_scopes));
	}
	return 0;
}
