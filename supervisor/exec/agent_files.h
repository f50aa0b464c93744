/* The files the agent itself is made of, found when run starts it, so that the agent needs
 * no ask to run its own parts:
 *   - the program its argv[0] names, found through PATH as the sandbox's execvp finds it;
 *   - when that file belongs to an npm package (…/node_modules/NAME or …/node_modules/@SCOPE/
 *     NAME), the whole package: agents installed from npm run native programs they ship there
 *     (Claude Code's and Codex's platform binaries, their ripgrep);
 *   - when it is a script (#!), its interpreter, through `env` as env would find it.
 * And the worktree (run's directory), unless it is the root, the home directory itself or a
 * system directory: what the agent builds there it could run through an allowed shell or
 * interpreter anyway.
 *
 * Found by what the person named on run's command line, never by a name the agent gives
 * later. run allows them for the whole run (config_allow_exec_tree); deny rules still win. */
#ifndef CLOISTER_AGENT_FILES_H
#define CLOISTER_AGENT_FILES_H

#include <stddef.h>

#define AGENT_FILES_MAX 3

struct agent_files {
	char *paths[AGENT_FILES_MAX]; /* absolute, real (no symlinks): a file or a directory */
	size_t n;
};

/* The files of the agent ARGV0 with the search path PATH_ENV (NULL: execvp's default). What
 * cannot be found is left out (the sandbox's own exec will say why). -ENOMEM. */
int agent_files_find(const char *argv0, const char *path_env, struct agent_files *ret);
void agent_files_done(struct agent_files *files);

/* Pure. The npm package directory REAL (an absolute path without symlinks) belongs to: the
 * path up to the package's name after the first "/node_modules/", or NULL when it belongs to
 * none. malloc'd. */
char *agent_files_package_of(const char *real);

/* Pure. The interpreter a script's first line LINE (up to its newline, without it) names:
 * "#!/usr/bin/env node" gives "node" with *ret_search 1 (to look up in PATH), "#!/bin/sh -e"
 * gives "/bin/sh" with 0; env's options are skipped with their arguments (-C DIR, -u NAME;
 * -S's string read as more words). NULL when LINE is no #! line or names an env option we do
 * not know. malloc'd. */
char *agent_files_interpreter_of(const char *line, int *ret_search);

/* Pure. Whether the worktree REAL (absolute, real) may be allowed as a tree: not "/", neither
 * HOME (NULL: unknown) nor a directory above it, and not a system directory (/usr, /etc, …). */
int agent_files_worktree_ok(const char *real, const char *home);

#endif
