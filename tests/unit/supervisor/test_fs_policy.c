/* The fs: section: its parsing and errors (file:line:column), the merge of the built-in, global
 * and project files, the built-in default, and fs_policy_check()'s verdicts, rules and
 * origins. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "supervisor/policy/config.h"
#include "supervisor/policy/fs_policy.h"

static struct config_source src(const char *name, const char *text)
{
	return (struct config_source){
	        .name = name,
	        .data = text,
	        .len = text ? strlen(text) : 0,
	        .present = text != NULL,
	};
}

static struct config *load(const char *global, const char *project)
{
	struct config_sources s = {
	        .global = src("config.yaml", global),
	        .project = src("projects/p.yaml", project),
	};
	struct cl_error err = {""};
	struct config *cfg = NULL;

	if (config_load(&s, NULL, &cfg, &err) < 0)
		fail_msg("load failed: %s", err.msg);
	return cfg;
}

static const struct fs_vars vars = {.home = "/home/u", .worktree = "/home/u/proj"};

struct check_case {
	const char *path;
	bool write;
	enum fs_verdict want;
	const char *rule;   /* the deciding entry's pattern, NULL: none */
	const char *origin; /* its file, NULL: not checked */
};

static void run_cases(const struct config *cfg, const struct check_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct fs_result res;
		struct cl_error err = {""};

		if (fs_policy_check(cfg, &vars, cases[i].path, cases[i].write, &res, &err) < 0)
			fail_msg("%s: %s", cases[i].path, err.msg);
		if (res.verdict != cases[i].want)
			fail_msg("%s %s: got %s, want %s (%s)", cases[i].write ? "write" : "read",
			         cases[i].path, fs_verdict_to_string(res.verdict),
			         fs_verdict_to_string(cases[i].want), res.reason);
		if (!cases[i].rule && res.rule)
			fail_msg("%s: decided by %s, want no rule", cases[i].path,
			         res.rule->pattern);
		if (cases[i].rule && (!res.rule || strcmp(res.rule->pattern, cases[i].rule) != 0))
			fail_msg("%s: decided by %s, want %s", cases[i].path,
			         res.rule ? res.rule->pattern : "(none)", cases[i].rule);
		if (cases[i].origin && strcmp(res.rule->origin.file, cases[i].origin) != 0)
			fail_msg("%s: rule from %s, want %s", cases[i].path, res.rule->origin.file,
			         cases[i].origin);
	}
}

/* The built-in default: the project and the caches are writable, start-up files are not, the
 * secrets are hidden and the files the host runs are protected inside the project. */
static void test_builtin_default_protects_home_when_the_worktree_is_home(void **state)
{
	_cleanup_(config_freep) struct config *cfg = load(NULL, NULL);
	const struct fs_vars home_is_worktree = {.home = "/home/u", .worktree = "/home/u"};
	static const char *const protected[] = {
	        "/home/u/.bashrc",       "/home/u/.zshrc",
	        "/home/u/.gitconfig",    "/home/u/.config/systemd/user/evil.service",
	        "/home/u/.local/bin/ls", "/home/u/.config/autostart/x.desktop",
	        "/home/u/.git/hooks/x",  "/home/u/.config/cloister/config.yaml",
	};

	for (size_t i = 0; i < ELEMENTSOF(protected); i++) {
		struct fs_result res;
		struct cl_error err = {""};

		assert_int_equal(
		        fs_policy_check(cfg, &home_is_worktree, protected[i], true, &res, &err), 0);
		if (res.verdict != FS_DENY_PROTECT)
			fail_msg("%s: %s", protected[i], res.reason);
	}
}

static void test_builtin_default_verdicts(void **state)
{
	static const struct check_case cases[] = {
	        {"/home/u/proj/src/main.c", true, FS_ALLOW, "{worktree}", "<built-in>"},
	        {"/home/u/proj", true, FS_ALLOW, "{worktree}", NULL},
	        {"/home/u/proj/node_modules/x/index.js", true, FS_ALLOW, "{worktree}", NULL},
	        {"/tmp/build/x.o", true, FS_ALLOW, NULL, NULL},
	        {"/home/u/.npm/_cacache/index", true, FS_ALLOW, "~/.npm/", NULL},
	        {"/home/u/.cache/pip/http/x", true, FS_ALLOW, "~/.cache/pip/", NULL},
	        {"/home/u/.cargo/registry/cache/x", true, FS_ALLOW, "~/.cargo/registry/", NULL},
	        {"/home/u/go/pkg/mod/x", true, FS_ALLOW, "~/go/pkg/mod/", NULL},
	        {"/home/u/.claude/projects/x.jsonl", true, FS_ALLOW, "~/.claude/", NULL},
	        {"/home/u/.claude.json", true, FS_ALLOW, "~/.claude.json", NULL},
	        /* Where the host runs what it finds: never writable, and protected should $HOME
	         * be writable. */
	        {"/home/u/.bashrc", true, FS_DENY_PROTECT, "~/.bashrc", NULL},
	        {"/home/u/.profile", true, FS_DENY_PROTECT, "~/.profile", NULL},
	        {"/home/u/.gitconfig", true, FS_DENY_PROTECT, "~/.gitconfig", NULL},
	        {"/home/u/.config/systemd/user/x.service", true, FS_DENY_PROTECT,
	         "~/.config/systemd", NULL},
	        {"/home/u/.local/bin/git", true, FS_DENY_PROTECT, "~/.local/bin", NULL},
	        {"/home/u/.cargo/bin/cargo", true, FS_DENY_PROTECT, "~/.cargo/bin", NULL},
	        {"/home/u/.config/cloister/config.yaml", true, FS_DENY_PROTECT,
	         "~/.config/cloister", NULL},
	        {"/home/u/.cache/pre-commit/repo/hook", true, FS_DENY_OUTSIDE, NULL, NULL},
	        {"/home/u/.local/share/x", true, FS_DENY_OUTSIDE, NULL, NULL},
	        {"/etc/passwd", true, FS_DENY_OUTSIDE, NULL, NULL},
	        {"/home/u/proj/.git/hooks/pre-commit", true, FS_DENY_PROTECT,
	         "{worktree}/.git/hooks", NULL},
	        {"/home/u/proj/.git/hooks", true, FS_DENY_PROTECT, "{worktree}/.git/hooks", NULL},
	        {"/home/u/proj/.git/config", true, FS_DENY_PROTECT, "{worktree}/.git/config", NULL},
	        {"/home/u/proj/.git/commondir", true, FS_DENY_PROTECT, "{worktree}/.git/commondir",
	         NULL},
	        {"/home/u/proj/.git/modules/lib/hooks/post-checkout", true, FS_DENY_PROTECT,
	         "{worktree}/.git/modules/*/hooks", NULL},
	        {"/home/u/proj/.git/modules/lib/objects/x", true, FS_ALLOW, "{worktree}", NULL},
	        {"/home/u/proj/.git/objects/ab/cd", true, FS_ALLOW, "{worktree}", NULL},
	        {"/home/u/proj/.git/index", true, FS_ALLOW, "{worktree}", NULL},
	        {"/home/u/proj/.envrc", true, FS_DENY_PROTECT, "{worktree}/.envrc", NULL},
	        {"/home/u/proj/.vscode/tasks.json", true, FS_DENY_PROTECT, "{worktree}/.vscode",
	         NULL},
	        {"/home/u/proj/.claude/settings.local.json", true, FS_DENY_PROTECT,
	         "{worktree}/.claude", NULL},
	        {"/home/u/proj/.mcp.json", true, FS_DENY_PROTECT, "{worktree}/.mcp.json", NULL},
	        {"/home/u/.claude/settings.json", true, FS_DENY_PROTECT, "~/.claude/settings.json",
	         NULL},
	        /* Protected files stay readable. */
	        {"/home/u/proj/.git/config", false, FS_ALLOW, NULL, NULL},
	        /* Secrets: hidden for reads and writes. */
	        {"/home/u/.ssh/id_ed25519", false, FS_DENY_HIDE, "~/.ssh", NULL},
	        {"/home/u/.ssh", false, FS_DENY_HIDE, "~/.ssh", NULL},
	        {"/home/u/.ssh/authorized_keys", true, FS_DENY_HIDE, "~/.ssh", NULL},
	        {"/home/u/.aws/credentials", false, FS_DENY_HIDE, "~/.aws", NULL},
	        {"/home/u/.config/gcloud/credentials.db", false, FS_DENY_HIDE, "~/.config/gcloud",
	         NULL},
	        {"/home/u/.kube/config", false, FS_DENY_HIDE, "~/.kube", NULL},
	        {"/home/u/.docker/config.json", false, FS_DENY_HIDE, "~/.docker/config.json", NULL},
	        {"/home/u/.netrc", false, FS_DENY_HIDE, "~/.netrc", NULL},
	        {"/home/u/.git-credentials", false, FS_DENY_HIDE, "~/.git-credentials", NULL},
	        {"/home/u/.config/gh/hosts.yml", false, FS_DENY_HIDE, "~/.config/gh", NULL},
	        {"/home/u/.mozilla/firefox/x/cookies.sqlite", false, FS_DENY_HIDE, "~/.mozilla",
	         NULL},
	        /* Near misses are not covered: a component is a component. */
	        {"/home/u/.sshx", false, FS_ALLOW, NULL, NULL},
	        {"/home/u/.docker/daemon.json", false, FS_ALLOW, NULL, NULL},
	        {"/home/u/proj/.envrc.example", true, FS_ALLOW, "{worktree}", NULL},
	        {"/home/u/proj/.git/hooksx", true, FS_ALLOW, "{worktree}", NULL},
	        /* Lexical normalisation before matching: no way around by "..". */
	        {"/home/u/proj/src/../.git/./hooks//pre-commit", true, FS_DENY_PROTECT,
	         "{worktree}/.git/hooks", NULL},
	        {"/home/u/proj/../.bashrc", true, FS_DENY_PROTECT, "~/.bashrc", NULL},
	        {"/home/u/proj/../.xinitrc", true, FS_DENY_OUTSIDE, NULL, NULL},
	        {"/tmpx/y", true, FS_DENY_OUTSIDE, NULL, NULL},
	};
	_cleanup_(config_freep) struct config *cfg = load(NULL, NULL);

	assert_int_equal(cfg->fs.tmp, FS_TMP_PRIVATE);
	assert_int_equal(cfg->fs.ask, FS_ASK_OFF);
	run_cases(cfg, cases, ELEMENTSOF(cases));
}

/* Files extend the built-in; hide and protect win over write in any order of files; globs are
 * one level; the scalars override. */
static void test_files_extend_and_hide_protect_beat_write(void **state)
{
	static const char global[] = "fs:\n"
	                             "  write:\n"
	                             "    - \"~/.ssh\"\n"              /* hide wins */
	                             "    - \"{worktree}/.git\"\n"     /* protect inside wins */
	                             "    - \"/srv/data/*/out\"\n"     /* a glob of one level */
	                             "    - \"{home}/.config/tool\"\n" /* {home} is ~ */
	                             "  tmp: host\n";
	static const char project[] = "fs:\n"
	                              "  hide:\n"
	                              "    - \"{worktree}/secrets\"\n"
	                              "  protect:\n"
	                              "    - \"/srv/data/a/out/keep\"\n"
	                              "  ask: on-write\n";
	static const struct check_case cases[] = {
	        {"/home/u/.ssh/id_rsa", true, FS_DENY_HIDE, "~/.ssh", "<built-in>"},
	        {"/home/u/proj/.git/config", true, FS_DENY_PROTECT, "{worktree}/.git/config",
	         "<built-in>"},
	        {"/home/u/proj/secrets/key", false, FS_DENY_HIDE, "{worktree}/secrets",
	         "projects/p.yaml"},
	        {"/srv/data/a/out/x", true, FS_ALLOW, "/srv/data/*/out", "config.yaml"},
	        {"/srv/data/a/out/keep/x", true, FS_DENY_PROTECT, "/srv/data/a/out/keep",
	         "projects/p.yaml"},
	        {"/srv/data/a/b/out/x", true, FS_ASK, NULL, NULL}, /* '*' stops at '/' */
	        {"/home/u/.config/tool/state", true, FS_ALLOW, "{home}/.config/tool", NULL},
	        /* tmp: host — /tmp is the host's and outside write: asked (ask: on-write). */
	        {"/tmp/x", true, FS_ASK, NULL, NULL},
	        {"/home/u/.xinitrc", true, FS_ASK, NULL, NULL},
	        {"/home/u/.bashrc", true, FS_DENY_PROTECT, "~/.bashrc", NULL}, /* never asked */
	};
	_cleanup_(config_freep) struct config *cfg = load(global, project);
	const struct config_fs_rule *last;

	assert_int_equal(cfg->fs.tmp, FS_TMP_HOST);
	assert_string_equal(cfg->fs.tmp_at.origin.file, "config.yaml");
	assert_int_equal(cfg->fs.ask, FS_ASK_ON_WRITE);
	assert_string_equal(cfg->fs.ask_at.origin.file, "projects/p.yaml");
	/* The built-in's entries come first and stay. */
	assert_string_equal(cfg->fs.write.items[0].pattern, "{worktree}");
	last = &cfg->fs.write.items[cfg->fs.write.n - 1];
	assert_string_equal(last->pattern, "{home}/.config/tool");
	assert_int_equal(last->origin.line, 6);
	assert_int_equal(last->origin.column, 7);
	run_cases(cfg, cases, ELEMENTSOF(cases));
}

/* Without a variable's value its patterns match nothing (policy check without $HOME). */
static void test_patterns_with_an_unknown_variable_match_nothing(void **state)
{
	_cleanup_(config_freep) struct config *cfg = load(NULL, NULL);
	const struct fs_vars none = {.worktree = "/w"};
	struct fs_result res;
	struct cl_error err = {""};

	assert_int_equal(fs_policy_check(cfg, &none, "/home/u/.ssh/id", false, &res, &err), 0);
	assert_int_equal(res.verdict, FS_ALLOW);
	assert_int_equal(fs_policy_check(cfg, &none, "/w/x", true, &res, &err), 0);
	assert_int_equal(res.verdict, FS_ALLOW);
	assert_int_equal(fs_policy_check(cfg, &none, "relative/x", true, &res, &err), -EINVAL);
}

static void test_pattern_expansion(void **state)
{
	static const struct {
		const char *pattern;
		const char *want; /* NULL: error */
		bool dir;
	} cases[] = {
	        {"~", "/home/u", false},
	        {"~/", "/home/u", true},
	        {"~/.npm/", "/home/u/.npm", true},
	        {"{home}/.x", "/home/u/.x", false},
	        {"{worktree}", "/home/u/proj", false},
	        {"{worktree}/.git/hooks", "/home/u/proj/.git/hooks", false},
	        {"/", "/", false},
	        {"/srv/*/x", "/srv/*/x", false},
	        {"~user/x", NULL, false},
	        {"{worktreex}/a", NULL, false},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_free_ char *got = NULL;
		bool dir = false;
		int r = fs_pattern_expand(cases[i].pattern, &vars, &got, &dir);

		if (!cases[i].want) {
			if (r >= 0)
				fail_msg("%s expanded to %s", cases[i].pattern, got);
			continue;
		}
		if (r < 0)
			fail_msg("%s: %s", cases[i].pattern, strerror(-r));
		assert_string_equal(got, cases[i].want);
		assert_int_equal(dir, cases[i].dir);
	}
}

/* Every mistake names file:line:column, the key path and what was expected. */
static void test_errors_name_file_line_column(void **state)
{
	static const struct {
		const char *text;
		const char *message;
	} cases[] = {
	        {"fs:\n  write: \"~/x\"\n",
	         "config.yaml:2:10: fs.write: expected a list, got a scalar"},
	        {"fs:\n  write:\n    - a/relative\n",
	         "config.yaml:3:7: fs.write[0]: expected an absolute path, or one starting with "
	         "~, {home} or {worktree}, got \"a/relative\""},
	        {"fs:\n  hide:\n    - \"~/.ssh\"\n    - \"~/a/../b\"\n",
	         "config.yaml:4:7: fs.hide[1]: \"~/a/../b\" has an empty, \".\" or \"..\" "
	         "component; write the path plainly"},
	        {"fs:\n  protect:\n    - \"{worktree}/**/hooks\"\n",
	         "config.yaml:3:7: fs.protect[0]: \"**\" is not recursive here (a '*' never "
	         "crosses '/', and a pattern covers everything below what it matches), got "
	         "\"{worktree}/**/hooks\""},
	        {"fs:\n  write:\n    - \"/a/{worktree}\"\n",
	         "config.yaml:3:7: fs.write[0]: \"/a/{worktree}\": a variable ({home}, "
	         "{worktree}) may only start the path"},
	        {"fs:\n  write:\n    - \"\"\n",
	         "config.yaml:3:7: fs.write[0]: expected a path, got an empty string"},
	        {"fs:\n  write:\n    - [a]\n",
	         "config.yaml:3:7: fs.write[0]: expected a path, got a sequence"},
	        {"fs:\n  tmp: shared\n",
	         "config.yaml:2:8: fs.tmp: expected one of private, host, got \"shared\""},
	        {"fs:\n  ask: always\n",
	         "config.yaml:2:8: fs.ask: expected one of off, on-write, got \"always\""},
	        {"fs:\n  hdie:\n    - \"~/.ssh\"\n",
	         "config.yaml:2:3: fs.hdie: unknown key; expected one of write, hide, protect, "
	         "tmp, ask"},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct config_source s = src("config.yaml", cases[i].text);
		struct config_load_options lenient = {.lenient = true};
		struct config *cfg = NULL;
		struct cl_error err = {""};
		int r;

		/* Even --lenient keeps an unknown fs key an error: `hdie:` drops a protection. */
		r = config_parse_file(CONFIG_FILE_GLOBAL, CONFIG_LAYER_GLOBAL, &s, &lenient, &cfg,
		                      &err);
		config_free(cfg);
		if (r != -EINVAL)
			fail_msg("case %zu: expected -EINVAL, got %d", i, r);
		if (strcmp(err.msg, cases[i].message) != 0)
			fail_msg("case %zu:\n  got:  %s\n  want: %s", i, err.msg, cases[i].message);
	}
}

/* The project file takes an fs section too (it extends). */
static void test_project_file_accepts_fs(void **state)
{
	struct config_source s = src("projects/p.yaml", "fs:\n  write:\n    - \"/data\"\n");
	struct config *cfg = NULL;
	struct cl_error err = {""};

	assert_int_equal(
	        config_parse_file(CONFIG_FILE_PROJECT, CONFIG_LAYER_PROJECT, &s, NULL, &cfg, &err),
	        0);
	assert_int_equal(cfg->fs.write.n, 1);
	config_free(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_builtin_default_verdicts),
	        cmocka_unit_test(test_builtin_default_protects_home_when_the_worktree_is_home),
	        cmocka_unit_test(test_files_extend_and_hide_protect_beat_write),
	        cmocka_unit_test(test_patterns_with_an_unknown_variable_match_nothing),
	        cmocka_unit_test(test_pattern_expansion),
	        cmocka_unit_test(test_errors_name_file_line_column),
	        cmocka_unit_test(test_project_file_accepts_fs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
