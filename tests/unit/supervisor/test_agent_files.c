/* The agent's own files: the npm package a file belongs to, a script's interpreter, which
 * worktrees may be allowed whole, and the search through PATH on a real directory. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "supervisor/exec/agent_files.h"

static void package_is(const char *real, const char *want)
{
	_cleanup_free_ char *got = agent_files_package_of(real);

	if (!want) {
		if (got)
			fail_msg("%s: got %s, want none", real, got);
		return;
	}
	if (!got || strcmp(got, want) != 0)
		fail_msg("%s: got %s, want %s", real, got ? got : "(none)", want);
}

static void test_the_package_is_the_outermost_one(void **state)
{
	package_is("/usr/lib/node_modules/@anthropic-ai/claude-code/bin/claude.exe",
	           "/usr/lib/node_modules/@anthropic-ai/claude-code");
	package_is("/usr/lib/node_modules/@openai/codex/node_modules/@openai/codex-linux-x64/"
	           "vendor/codex",
	           "/usr/lib/node_modules/@openai/codex");
	package_is("/home/u/.nvm/versions/node/v22/lib/node_modules/typescript/bin/tsc",
	           "/home/u/.nvm/versions/node/v22/lib/node_modules/typescript");
	package_is("/usr/bin/bash", NULL);
	package_is("/x/node_modules/tool", NULL); /* a file, not a package */
	package_is("/x/node_modules/@scope/tool", NULL);
	package_is("/x/node_modules/.bin/tool", NULL); /* npm's links, not a package */
	package_is("/x/node_modules//tool/a", NULL);
}

static void interpreter_is(const char *line, const char *want, int want_search)
{
	int search = -1;
	_cleanup_free_ char *got = agent_files_interpreter_of(line, &search);

	if (!want) {
		if (got)
			fail_msg("%s: got %s, want none", line, got);
		return;
	}
	if (!got || strcmp(got, want) != 0 || search != want_search)
		fail_msg("%s: got %s (%d), want %s (%d)", line, got ? got : "(none)", search, want,
		         want_search);
}

static void test_the_interpreter_of_a_script(void **state)
{
	interpreter_is("#!/usr/bin/env node", "node", 1);
	interpreter_is("#! /usr/bin/env -S node --no-warnings", "node", 1);
	interpreter_is("#!/usr/bin/env -u X NODE_OPTIONS=1 node", "node", 1);
	interpreter_is("#!/usr/bin/env /opt/node/bin/node", "/opt/node/bin/node", 0);
	interpreter_is("#!/bin/sh -e", "/bin/sh", 0);
	interpreter_is("#!/usr/bin/python3", "/usr/bin/python3", 0);
	interpreter_is("#!/usr/bin/env", NULL, 0);
	/* options that take an argument, joined or not; an unknown one judges nothing */
	interpreter_is("#!/usr/bin/env -S -C /usr/bin sh", "sh", 1);
	interpreter_is("#!/usr/bin/env -C/usr/bin sh", "sh", 1);
	interpreter_is("#!/usr/bin/env --chdir /usr/bin sh", "sh", 1);
	interpreter_is("#!/usr/bin/env --chdir=/usr/bin sh", "sh", 1);
	interpreter_is("#!/usr/bin/env -iS -a x sh", "sh", 1);
	interpreter_is("#!/usr/bin/env -u", NULL, 0);
	interpreter_is("#!/usr/bin/env -Z /usr/bin", NULL, 0);
	interpreter_is("#!/usr/bin/env --frobnicate /usr/bin", NULL, 0);
	interpreter_is("#!python3", NULL, 0);
	interpreter_is("\x7f"
	               "ELF",
	               NULL, 0);
	interpreter_is("", NULL, 0);
}

static void test_which_worktrees_are_allowed_whole(void **state)
{
	assert_true(agent_files_worktree_ok("/home/u/src/project", "/home/u"));
	assert_true(agent_files_worktree_ok("/srv/work", "/home/u"));
	assert_true(agent_files_worktree_ok("/usrx/project", NULL));
	assert_false(agent_files_worktree_ok("/", "/home/u"));
	assert_false(agent_files_worktree_ok("/home/u", "/home/u"));
	assert_false(agent_files_worktree_ok("/home", "/home/u")); /* above the home */
	assert_false(agent_files_worktree_ok("/srv", "/srv/users/u"));
	assert_true(agent_files_worktree_ok("/home/u2", "/home/u"));
	assert_false(agent_files_worktree_ok("/usr", NULL));
	assert_false(agent_files_worktree_ok("/usr/local/src", NULL));
	assert_false(agent_files_worktree_ok("/etc", NULL));
	assert_false(agent_files_worktree_ok("/bin", NULL));
	assert_false(agent_files_worktree_ok("/proc/1", NULL));
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

/* A PATH with a non-executable file first, an npm package's script linked from a bin
 * directory, its interpreter found through the same PATH. */
static void test_found_through_path_as_execvp_finds_it(void **state)
{
	char dir[] = "/tmp/cloister-agent-files.XXXXXX", path[512], search[1100];
	_cleanup_free_ char *real = NULL;
	struct agent_files f;

	assert_non_null(mkdtemp(dir));
	real = realpath(dir, NULL);
	assert_non_null(real);
	snprintf(path, sizeof(path), "%s/a", real);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/b", real);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/lib/node_modules/@x/agent/bin", real);
	assert_int_equal(system(NULL) >= 0, 1);
	{
		char cmd[700];

		snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
		assert_int_equal(system(cmd), 0);
	}
	snprintf(path, sizeof(path), "%s/lib/node_modules/@x/agent/bin/agent.js", real);
	write_file(path, "#!/usr/bin/env mynode\nconsole.log(1)\n", 0755);
	{
		char link[512];

		snprintf(link, sizeof(link), "%s/b/agent", real);
		assert_int_equal(symlink(path, link), 0);
	}
	snprintf(path, sizeof(path), "%s/a/agent", real); /* not executable: skipped */
	write_file(path, "#!/bin/sh\n", 0644);
	snprintf(path, sizeof(path), "%s/b/mynode", real);
	write_file(path,
	           "\x7f"
	           "ELF",
	           0755);
	snprintf(search, sizeof(search), "%s/a:%s/b", real, real);

	assert_int_equal(agent_files_find("agent", search, &f), 0);
	assert_int_equal(f.n, 2);
	snprintf(path, sizeof(path), "%s/lib/node_modules/@x/agent", real);
	assert_string_equal(f.paths[0], path);
	snprintf(path, sizeof(path), "%s/b/mynode", real);
	assert_string_equal(f.paths[1], path);
	agent_files_done(&f);

	/* a name found nowhere: nothing (the sandbox's exec says why) */
	assert_int_equal(agent_files_find("no-such-agent", search, &f), 0);
	assert_int_equal(f.n, 0);
	/* a path: the file itself, no search */
	snprintf(path, sizeof(path), "%s/b/mynode", real);
	assert_int_equal(agent_files_find(path, "/nonexistent", &f), 0);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.paths[0], path);
	agent_files_done(&f);

	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", real);
		assert_int_equal(system(cmd), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_the_package_is_the_outermost_one),
	        cmocka_unit_test(test_the_interpreter_of_a_script),
	        cmocka_unit_test(test_which_worktrees_are_allowed_whole),
	        cmocka_unit_test(test_found_through_path_as_execvp_finds_it),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
