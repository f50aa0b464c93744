/* Policy decisions: exec (security × ask), hostexec (auto / manual / none), domains (deny beats
 * allow at every layer). Configs are written as YAML, as a user would. */
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
#include "protocol/quote.h"
#include "supervisor/policy/config.h"
#include "supervisor/policy/policy.h"

static struct config_source src(const char *name, const char *text)
{
	return (struct config_source){
	        .name = name,
	        .data = text,
	        .len = text ? strlen(text) : 0,
	        .present = text != NULL,
	};
}

/* These tests check the policy on a config.yaml's own rules: its exec and proxy sections say
 * `defaults: false` (test_config checks that lists extend the built-in's otherwise). */
static char *own_lists_only(const char *text)
{
	size_t len = strlen(text), n = 0;
	char *out = malloc(len * 2 + 64), *o = out;

	assert_non_null(out);
	for (const char *p = text; *p; p++) {
		bool line_start = p == text || p[-1] == '\n';

		*o++ = *p;
		if (line_start &&
		    (strncmp(p, "exec:\n", 6) == 0 || strncmp(p, "proxy:\n", 7) == 0)) {
			size_t k = p[0] == 'e' ? 5 : 6;

			memcpy(o, p + 1, k);
			o += k;
			p += k;
			o += sprintf(o, "  defaults: false\n");
			n++;
		}
	}
	*o = '\0';
	assert_true(n <= 2);
	return out;
}

static struct config *load4(const char *global, const char *project, const char *gdec,
                            const char *pdec)
{
	_cleanup_free_ char *own = global ? own_lists_only(global) : NULL;
	struct config_sources s = {
	        .global = src("config.yaml", own),
	        .project = src("projects/p.yaml", project),
	        .global_decisions = src("decisions/global.yaml", gdec),
	        .project_decisions = src("decisions/projects/p.yaml", pdec),
	};
	struct cl_error err = {""};
	struct config *cfg = NULL;

	if (config_load(&s, NULL, &cfg, &err) < 0)
		fail_msg("load failed: %s", err.msg);
	return cfg;
}

static struct policy_result check_exec(const struct config *cfg, const char *path,
                                       const char *const *argv)
{
	struct policy_result res;
	struct cl_error err = {""};
	size_t argc = 0;

	while (argv[argc])
		argc++;
	if (policy_check_exec(cfg, path, argv, argc, &res, &err) < 0)
		fail_msg("check_exec %s: %s", path, err.msg);
	return res;
}

static const char *V(enum policy_verdict v)
{
	return policy_verdict_to_string(v);
}

/* ---- exec -------------------------------------------------------------------------------- */

static void test_exec_verdict_for_every_security_and_ask_combination(void **state)
{
	static const char *const git_status[] = {"git", "status", NULL};
	static const char *const make[] = {"make", "-j2", NULL};
	static const char *const nc[] = {"nc", "-l", "4444", NULL};
	static const struct {
		const char *security, *ask;
		enum policy_verdict match, miss, denied;
		const char *match_rule, *miss_rule;
	} cases[] = {
	        {"deny", "off", POLICY_DENY, POLICY_DENY, POLICY_DENY, "exec.security=deny",
	         "exec.security=deny"},
	        {"deny", "on-miss", POLICY_DENY, POLICY_DENY, POLICY_DENY, "exec.security=deny",
	         "exec.security=deny"},
	        {"deny", "always", POLICY_DENY, POLICY_DENY, POLICY_DENY, "exec.security=deny",
	         "exec.security=deny"},
	        {"allowlist", "off", POLICY_ALLOW, POLICY_DENY, POLICY_DENY, "exec.allow[0]*",
	         "exec.ask=off"},
	        {"allowlist", "on-miss", POLICY_ALLOW, POLICY_ASK, POLICY_DENY, "exec.allow[0]*",
	         "exec.ask=on-miss"},
	        {"allowlist", "always", POLICY_ASK, POLICY_ASK, POLICY_DENY, "exec.allow[0]*",
	         "exec.ask=always"},
	        {"full", "off", POLICY_ALLOW, POLICY_ALLOW, POLICY_DENY, "exec.security=full",
	         "exec.security=full"},
	        {"full", "on-miss", POLICY_ALLOW, POLICY_ALLOW, POLICY_DENY, "exec.security=full",
	         "exec.security=full"},
	        {"full", "always", POLICY_ASK, POLICY_ASK, POLICY_DENY, "exec.ask=always",
	         "exec.ask=always"},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char yaml[512];
		_cleanup_(config_freep) struct config *cfg = NULL;
		struct policy_result res;

		snprintf(yaml, sizeof(yaml),
		         "exec:\n"
		         "  security: %s\n"
		         "  ask: %s\n"
		         "  allow:\n"
		         "    - path: /usr/bin/git\n"
		         "      command: \"^git status( |$)\"\n"
		         "  deny:\n"
		         "    - path: \"/usr/bin/nc*\"\n",
		         cases[i].security, cases[i].ask);
		cfg = load4(yaml, NULL, NULL, NULL);

		res = check_exec(cfg, "/usr/bin/git", git_status);
		if (res.verdict != cases[i].match)
			fail_msg("%s/%s match: got %s want %s (%s)", cases[i].security,
			         cases[i].ask, V(res.verdict), V(cases[i].match), res.reason);
		if (cases[i].match_rule[strlen(cases[i].match_rule) - 1] == '*'
		            ? strncmp(res.rule, cases[i].match_rule,
		                      strlen(cases[i].match_rule) - 1) != 0
		            : strcmp(res.rule, cases[i].match_rule) != 0)
			fail_msg("%s/%s match: rule \"%s\", want \"%s\"", cases[i].security,
			         cases[i].ask, res.rule, cases[i].match_rule);

		res = check_exec(cfg, "/usr/bin/make", make);
		if (res.verdict != cases[i].miss)
			fail_msg("%s/%s miss: got %s want %s", cases[i].security, cases[i].ask,
			         V(res.verdict), V(cases[i].miss));
		if (strcmp(res.rule, cases[i].miss_rule) != 0)
			fail_msg("%s/%s miss: rule \"%s\", want \"%s\"", cases[i].security,
			         cases[i].ask, res.rule, cases[i].miss_rule);
		/* A setting decided: its origin is where the file set it. */
		assert_string_equal(res.origin.file, "config.yaml");

		res = check_exec(cfg, "/usr/bin/nc.openbsd", nc);
		if (res.verdict != POLICY_DENY)
			fail_msg("%s/%s: a deny rule must win, got %s", cases[i].security,
			         cases[i].ask, V(res.verdict));
		assert_string_equal(res.rule, "exec.deny[0] path \"/usr/bin/nc*\"");
		assert_int_equal(res.origin.line, 9) /* own_lists_only() added a line */;
		assert_int_equal(res.origin.column, 7);
	}
}

static void test_exec_deny_beats_allow_across_global_and_project(void **state)
{
	static const char *const curl[] = {"curl", "https://example.com", NULL};
	const char *allow_all = "exec:\n"
	                        "  security: allowlist\n"
	                        "  allow:\n"
	                        "    - path: \"/usr/bin/*\"\n";
	const char *deny_curl = "exec:\n"
	                        "  deny:\n"
	                        "    - command: \"^curl \"\n";
	struct policy_result res;

	{
		_cleanup_(config_freep) struct config *cfg =
		        load4(allow_all, deny_curl, NULL, NULL);
		res = check_exec(cfg, "/usr/bin/curl", curl);
		assert_int_equal(res.verdict, POLICY_DENY);
		assert_string_equal(res.origin.file, "projects/p.yaml");
		assert_int_equal(res.origin.layer, CONFIG_LAYER_PROJECT);
		assert_string_equal(res.rule, "exec.deny[0] command \"^curl \"");
	}
	{
		/* The other way round: a project allow does not undo a global deny. */
		const char *global = "exec:\n"
		                     "  deny:\n"
		                     "    - path: /usr/bin/curl\n";
		const char *project = "exec:\n"
		                      "  security: full\n"
		                      "  allow:\n"
		                      "    - path: /usr/bin/curl\n";
		_cleanup_(config_freep) struct config *cfg = load4(global, project, NULL, NULL);
		res = check_exec(cfg, "/usr/bin/curl", curl);
		assert_int_equal(res.verdict, POLICY_DENY);
		assert_string_equal(res.origin.file, "config.yaml");
		assert_int_equal(res.origin.line, 4) /* own_lists_only() added a line */;
	}
}

static void test_exec_path_glob_and_command_regex_semantics(void **state)
{
	const char *yaml = "exec:\n"
	                   "  ask: off\n"
	                   "  deny: []\n"
	                   "  allow:\n"
	                   "    - path: \"/usr/bin/*\"\n"
	                   "      command: \"^(ls|cat)( |$)\"\n"
	                   "    - command: \"^git (status|diff)( |$)\"\n";
	_cleanup_(config_freep) struct config *cfg = load4(yaml, NULL, NULL, NULL);
	static const struct {
		const char *path;
		const char *argv[4];
		enum policy_verdict want;
		const char *subject;
	} cases[] = {
	        {"/usr/bin/ls", {"ls", "-la", NULL}, POLICY_ALLOW, "ls -la"},
	        /* path and command must both match */
	        {"/tmp/ls", {"ls", NULL}, POLICY_DENY, "ls"},
	        /* '*' does not cross '/' */
	        {"/usr/bin/x/ls", {"ls", NULL}, POLICY_DENY, "ls"},
	        /* argv[0] is the caller's to choose: the file name counts */
	        {"/usr/bin/rm", {"ls", "-rf", "/", NULL}, POLICY_DENY, "rm -rf /"},
	        {"/usr/bin/git", {"git", "status", NULL}, POLICY_ALLOW, "git status"},
	        {"/opt/bin/git", {"git", "diff", NULL}, POLICY_ALLOW, "git diff"},
	        {"/usr/bin/git", {"git", "push", NULL}, POLICY_DENY, "git push"},
	        /* the canonical quoting keeps an argument one word */
	        {"/usr/bin/git",
	         {"git", "status;rm -rf ~", NULL},
	         POLICY_DENY,
	         "git 'status;rm -rf ~'"},
	        {"/usr/bin/cat", {"/usr/bin/cat", "a b", NULL}, POLICY_ALLOW, "cat 'a b'"},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct policy_result res = check_exec(cfg, cases[i].path, cases[i].argv);
		if (res.verdict != cases[i].want)
			fail_msg("case %zu (%s): got %s want %s (%s)", i, cases[i].path,
			         V(res.verdict), V(cases[i].want), res.reason);
		assert_string_equal(res.subject, cases[i].subject);
	}
}

static void test_exec_path_that_is_not_normalised_is_denied(void **state)
{
	static const char *const argv[] = {"nc", NULL};
	static const char *const paths[] = {
	        "usr/bin/nc",    "/usr/bin/../bin/nc", "/usr//bin/nc",
	        "/usr/bin/./nc", "/usr/bin/nc/",       "/",
	};
	_cleanup_(config_freep) struct config *cfg = load4("exec:\n"
	                                                   "  security: full\n"
	                                                   "  deny:\n"
	                                                   "    - path: /usr/bin/nc\n",
	                                                   NULL, NULL, NULL);

	for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
		struct policy_result res;
		struct cl_error err = {""};
		int r = policy_check_exec(cfg, paths[i], argv, 1, &res, &err);
		if (r == -EINVAL)
			continue; /* "/" has no file name: refused outright */
		assert_int_equal(r, 0);
		if (res.verdict != POLICY_DENY)
			fail_msg("%s: got %s", paths[i], V(res.verdict));
	}
}

static void test_exec_ask_fallback_applies_when_nobody_answers(void **state)
{
	static const char *const git_status[] = {"git", "status", NULL};
	static const char *const make[] = {"make", NULL};
	static const struct {
		const char *fallback;
		enum policy_verdict match, miss;
	} cases[] = {
	        {"deny", POLICY_DENY, POLICY_DENY},
	        {"allowlist", POLICY_ALLOW, POLICY_DENY},
	        {"full", POLICY_ALLOW, POLICY_ALLOW},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char yaml[256];
		_cleanup_(config_freep) struct config *cfg = NULL;
		struct policy_result res;

		snprintf(yaml, sizeof(yaml),
		         "exec:\n  ask: always\n  ask_fallback: %s\n  allow:\n"
		         "    - path: /usr/bin/git\n",
		         cases[i].fallback);
		cfg = load4(yaml, NULL, NULL, NULL);
		res = check_exec(cfg, "/usr/bin/git", git_status);
		assert_int_equal(res.verdict, POLICY_ASK);
		assert_int_equal(res.fallback, cases[i].match);
		res = check_exec(cfg, "/usr/bin/make", make);
		assert_int_equal(res.verdict, POLICY_ASK);
		assert_int_equal(res.fallback, cases[i].miss);
	}
}

static void test_exec_regex_errors_count_against_the_exec(void **state)
{
	/* Catastrophic backtracking hits the match limit: as a deny rule it denies, as an
	 * allow rule it does not allow. */
	char arg[64];
	const char *argv[] = {"x", arg, NULL};
	struct policy_result res;

	memset(arg, 'a', 40);
	strcpy(arg + 40, "b"); /* a simple word: no quotes in the way */
	{
		_cleanup_(config_freep) struct config *cfg =
		        load4("exec:\n"
		              "  security: full\n"
		              "  deny:\n"
		              "    - command: \"^x (a|aa)+$\"\n",
		              NULL, NULL, NULL);
		res = check_exec(cfg, "/usr/bin/x", argv);
		assert_int_equal(res.verdict, POLICY_DENY);
	}
	{
		_cleanup_(config_freep) struct config *cfg =
		        load4("exec:\n"
		              "  ask: off\n"
		              "  allow:\n"
		              "    - command: \"^x (a|aa)+$\"\n",
		              NULL, NULL, NULL);
		res = check_exec(cfg, "/usr/bin/x", argv);
		assert_int_equal(res.verdict, POLICY_DENY);
		assert_string_equal(res.rule, "exec.ask=off");
	}
}

static void test_exec_deny_regex_still_matches_arguments_that_are_not_utf8(void **state)
{
	static const char *const argv[] = {"curl", "\xff\xfe", "http://x", NULL};
	_cleanup_(config_freep) struct config *cfg = load4("exec:\n"
	                                                   "  security: full\n"
	                                                   "  deny:\n"
	                                                   "    - command: \"^curl .*http\"\n",
	                                                   NULL, NULL, NULL);
	struct policy_result res = check_exec(cfg, "/usr/bin/curl", argv);

	assert_int_equal(res.verdict, POLICY_DENY);
}

static void test_exec_with_the_builtin_default(void **state)
{
	static const struct {
		const char *path;
		const char *argv[5];
		enum policy_verdict want;
	} cases[] = {
	        {"/usr/bin/ls", {"ls", "-la", NULL}, POLICY_ALLOW},
	        {"/bin/sh", {"sh", "-c", "make", NULL}, POLICY_ALLOW},
	        {"/usr/bin/git", {"git", "status", NULL}, POLICY_ALLOW},
	        {"/usr/bin/git", {"git", "push", NULL}, POLICY_ASK},
	        {"/usr/bin/make", {"make", "test", NULL}, POLICY_ALLOW},
	        {"/usr/bin/curl", {"curl", "https://x", NULL}, POLICY_ASK},
	        {"/usr/bin/apt-get", {"apt-get", "install", "x", NULL}, POLICY_ASK},
	        {"/usr/bin/sudo", {"sudo", "ls", NULL}, POLICY_DENY},
	        {"/usr/bin/rm", {"rm", "-rf", "/", NULL}, POLICY_DENY},
	        {"/tmp/ls", {"ls", NULL}, POLICY_ASK},
	        /* what a scripted local session runs (issue: 0 asks) */
	        {"/usr/bin/git", {"git", "commit", "-qm", NULL}, POLICY_ALLOW},
	        {"/usr/bin/git", {"git", "maintenance", "run", NULL}, POLICY_ALLOW},
	        {"/usr/bin/git", {"git", "-C", "/w", NULL}, POLICY_ASK},
	        {"/usr/bin/git", {"git", "fetch", NULL}, POLICY_ASK},
	        {"/usr/bin/git", {"git", "config", "core.hooksPath", NULL}, POLICY_ASK},
	        {"/usr/bin/git", {"git", "-c", "x=y", "status", NULL}, POLICY_ASK},
	        {"/usr/lib/git-core/git", {"git", "push", NULL}, POLICY_ASK},
	        {"/usr/lib/git-core/git", {"git", "add", "x", NULL}, POLICY_ALLOW},
	        {"/usr/lib/git-core/git", {"git-push", "x", NULL}, POLICY_ASK},
	        {"/usr/lib/git-core/git-remote-https",
	         {"git-remote-https", "o", NULL},
	         POLICY_ALLOW},
	        {"/usr/bin/which.debianutils", {"which", "ls", NULL}, POLICY_ALLOW},
	        {"/usr/bin/mktemp", {"mktemp", "-d", NULL}, POLICY_ALLOW},
	        {"/usr/bin/tar", {"tar", "czf", "a", NULL}, POLICY_ALLOW},
	        {"/usr/bin/rm", {"rm", "-rf", "build", NULL}, POLICY_ALLOW},
	        {"/usr/bin/chmod", {"chmod", "+x", "a", NULL}, POLICY_ALLOW},
	        {"/usr/bin/chmod", {"chmod", "0755", "a", NULL}, POLICY_ALLOW},
	        {"/usr/bin/chmod", {"chmod", "u+s", "a", NULL}, POLICY_ASK},
	        {"/usr/bin/chmod", {"chmod", "4755", "a", NULL}, POLICY_ASK},
	        {"/usr/bin/chmod", {"chmod", "g+s,u+x", "a", NULL}, POLICY_ASK},
	        {"/usr/bin/wget", {"wget", "x", NULL}, POLICY_ASK},
	        {"/usr/bin/ssh", {"ssh", "h", NULL}, POLICY_ASK},
	        {"/usr/bin/docker", {"docker", "ps", NULL}, POLICY_ASK},
	        {"/usr/bin/pip3", {"pip3", "install", "x", NULL}, POLICY_ASK},
	        {"/usr/bin/su", {"su", NULL}, POLICY_DENY},
	};
	_cleanup_(config_freep) struct config *cfg = load4(NULL, NULL, NULL, NULL);

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct policy_result res = check_exec(cfg, cases[i].path, cases[i].argv);
		if (res.verdict != cases[i].want)
			fail_msg("%s: got %s want %s (%s: %s)", res.subject, V(res.verdict),
			         V(cases[i].want), res.rule, res.reason);
		assert_string_equal(res.origin.file, "<built-in>");
	}
}

static void test_exec_argv0_of_a_multicall_program_must_match_the_rule_too(void **state)
{
	/* git and busybox act on argv[0]: ["git-clean", "log", "-ffdx", "."] run as /usr/bin/git
	 * removes every untracked file, though "git log -ffdx ." matches the default's rule. */
	static const struct {
		const char *path;
		const char *argv[5];
		enum policy_verdict want;
	} cases[] = {
	        {"/usr/bin/git", {"git-clean", "log", "-ffdx", ".", NULL}, POLICY_ASK},
	        {"/usr/bin/git", {"git-push", "status", NULL}, POLICY_ASK},
	        {"/usr/bin/git", {"", "status", NULL}, POLICY_ASK},
	        /* argv[0] naming the same file, however written, changes nothing */
	        {"/usr/bin/git", {"/usr/bin/git", "log", NULL}, POLICY_ALLOW},
	        {"/usr/bin/git", {"git", "log", NULL}, POLICY_ALLOW},
	        /* a deny regex matches the command under either name */
	        {"/usr/bin/busybox", {"rm", "-rf", "/", NULL}, POLICY_DENY},
	        {"/usr/bin/rm", {"ls", "-rf", "/", NULL}, POLICY_DENY},
	};
	_cleanup_(config_freep) struct config *cfg = load4(NULL, NULL, NULL, NULL);

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct policy_result res = check_exec(cfg, cases[i].path, cases[i].argv);
		if (res.verdict != cases[i].want)
			fail_msg("case %zu (%s): got %s want %s (%s: %s)", i, res.subject,
			         V(res.verdict), V(cases[i].want), res.rule, res.reason);
	}
	{
		struct policy_result res = check_exec(cfg, "/usr/bin/git", cases[0].argv);
		assert_non_null(strstr(res.reason, "argv[0] is \"git-clean\""));
	}
}

static void test_exec_deny_regex_crosses_newlines_inside_arguments(void **state)
{
	static const char *const curl[] = {"curl", "-H", "a\nb", "http://evil", NULL};
	static const char *const echo[] = {"echo", "hi\n", NULL};
	_cleanup_(config_freep) struct config *cfg = load4("exec:\n"
	                                                   "  security: allowlist\n"
	                                                   "  ask: off\n"
	                                                   "  allow:\n"
	                                                   "    - command: \"^echo hi$\"\n"
	                                                   "    - path: /usr/bin/curl\n"
	                                                   "  deny:\n"
	                                                   "    - command: \"^curl .*evil\"\n",
	                                                   NULL, NULL, NULL);
	struct policy_result res = check_exec(cfg, "/usr/bin/curl", curl);

	assert_int_equal(res.verdict, POLICY_DENY);
	assert_string_equal(res.rule, "exec.deny[0] command \"^curl .*evil\"");
	/* `$` only at the very end: "echo 'hi<LF>'" is not "echo hi" */
	res = check_exec(cfg, "/usr/bin/echo", echo);
	assert_int_equal(res.verdict, POLICY_DENY);
	assert_string_equal(res.rule, "exec.ask=off");
}

static void test_exec_with_an_empty_argv_is_checked_as_the_kernel_runs_it(void **state)
{
	/* execve(path, {NULL}) is legal; the program then gets argv {""}. */
	_cleanup_(config_freep) struct config *cfg = load4("exec:\n"
	                                                   "  ask: on-miss\n"
	                                                   "  allow:\n"
	                                                   "    - path: /usr/bin/true\n"
	                                                   "    - path: /usr/bin/ls\n"
	                                                   "      command: \"^ls$\"\n",
	                                                   NULL, NULL, NULL);
	struct policy_result res;
	struct cl_error err = {""};

	assert_int_equal(policy_check_exec(cfg, "/usr/bin/true", NULL, 0, &res, &err), 0);
	assert_int_equal(res.verdict, POLICY_ALLOW);
	assert_string_equal(res.subject, "true");
	assert_int_equal(policy_check_exec(cfg, "/usr/bin/ls", NULL, 0, &res, &err), 0);
	assert_int_equal(res.verdict, POLICY_ASK);
}

static void test_exec_truncated_argv_is_never_allowed_by_a_command_rule(void **state)
{
	static const char *const argv[] = {"ls", "-l", NULL};
	static const char *const rm[] = {"rm", "-rf", "/", NULL};
#define TRUNCATED_YAML(ask)                   \
	"exec:\n"                             \
	"  ask: " ask "\n"                    \
	"  allow:\n"                          \
	"    - path: /usr/bin/ls\n"           \
	"      command: \"^ls -l$\"\n"        \
	"    - path: /usr/bin/rm\n"           \
	"    - path: /usr/bin/make\n"         \
	"  deny:\n"                           \
	"    - path: /usr/bin/rm\n"           \
	"      command: \"^rm -rf /( |$)\"\n" \
	"    - path: /usr/bin/make\n"         \
	"      command: \"^make .*install\"\n"
	struct policy_result res;
	struct cl_error err = {""};

	{
		_cleanup_(config_freep) struct config *cfg =
		        load4(TRUNCATED_YAML("on-miss"), NULL, NULL, NULL);

		/* complete, it is allowed; as a prefix, "^ls -l$" proves nothing */
		assert_int_equal(policy_check_exec(cfg, "/usr/bin/ls", argv, 2, &res, &err), 0);
		assert_int_equal(res.verdict, POLICY_ALLOW);
		assert_int_equal(policy_check_exec_prefix(cfg, "/usr/bin/ls", argv, 2, &res, &err),
		                 0);
		assert_int_equal(res.verdict, POLICY_ASK);
		assert_non_null(strstr(res.reason, "only the first 2 of more than 2 arguments"));
		/* a deny regex matching the prefix denies */
		assert_int_equal(policy_check_exec_prefix(cfg, "/usr/bin/rm", rm, 3, &res, &err),
		                 0);
		assert_int_equal(res.verdict, POLICY_DENY);
		/* one that does not might match the rest: a person decides, nobody → deny */
		assert_int_equal(
		        policy_check_exec_prefix(cfg, "/usr/bin/make", rm + 1, 1, &res, &err), 0);
		assert_int_equal(res.verdict, POLICY_ASK);
		assert_int_equal(res.fallback, POLICY_DENY);
		assert_string_equal(res.rule, "exec.deny[1] path \"/usr/bin/make\" command "
		                              "\"^make .*install\"");
		/* a path-only allow with no deny regex for the path is unaffected */
		assert_int_equal(policy_check_exec_prefix(cfg, "/usr/bin/rm", argv, 2, &res, &err),
		                 0);
		assert_int_equal(res.verdict, POLICY_ASK);
	}
	{
		_cleanup_(config_freep) struct config *cfg =
		        load4(TRUNCATED_YAML("off"), NULL, NULL, NULL);

		assert_int_equal(
		        policy_check_exec_prefix(cfg, "/usr/bin/make", rm + 1, 1, &res, &err), 0);
		assert_int_equal(res.verdict, POLICY_DENY);
	}
}

static void test_exec_argv_too_long_for_a_command_string_is_checked_as_a_prefix(void **state)
{
	/* More arguments than a canonical command holds: decided, not an error. */
	const size_t argc = CL_QUOTE_MAX_ARGC + 10;
	_cleanup_free_ const char **argv = calloc(argc, sizeof(*argv));
	_cleanup_(config_freep) struct config *cfg = load4("exec:\n"
	                                                   "  allow:\n"
	                                                   "    - path: /usr/bin/touch\n"
	                                                   "    - command: \"^touch( a)*$\"\n"
	                                                   "  deny:\n"
	                                                   "    - command: \"^touch .* b\"\n",
	                                                   NULL, NULL, NULL);
	struct policy_result res;
	struct cl_error err = {""};

	assert_non_null(argv);
	argv[0] = "touch";
	for (size_t i = 1; i < argc; i++)
		argv[i] = "a";
	argv[argc - 1] = "b"; /* beyond what can be checked */
	assert_int_equal(policy_check_exec(cfg, "/usr/bin/touch", argv, argc, &res, &err), 0);
	assert_int_equal(res.verdict, POLICY_ASK);
	assert_int_equal(res.fallback, POLICY_DENY);
}

/* ---- hostexec ---------------------------------------------------------------------------- */

/* run's rules for the agent's own files: the file or directory and everything below it, by
 * path prefix (no glob: a name with '*' or '[' is itself), ahead of the files' allow rules;
 * deny rules still win. */
static void test_exec_tree_of_the_agent_allows_below_it_and_deny_still_wins(void **state)
{
	_cleanup_(config_freep) struct config *cfg =
	        load4("exec:\n  ask: always\n  deny:\n    - path: \"/opt/a?gent?/bin/*\"\n", NULL,
	              NULL, NULL);
	static const char *const argv[] = {"x", NULL};
	struct policy_result res;

	assert_int_equal(config_allow_exec_tree(cfg, "/opt/a[gent]", "the agent"), 0);
	assert_int_equal(config_allow_exec_tree(cfg, "/opt/a[gent]/", "the agent"), -EINVAL);
	assert_int_equal(config_allow_exec_tree(cfg, "/opt/../etc", "the agent"), -EINVAL);
	assert_int_equal(config_allow_exec_tree(cfg, "opt", "the agent"), -EINVAL);
	assert_int_equal(config_allow_exec_tree(cfg, "/opt/x/..", "the agent"), -EINVAL);

	res = check_exec(cfg, "/opt/a[gent]", argv);
	assert_string_equal(V(res.verdict), "ask"); /* exec.ask always: every match is asked */
	assert_int_equal(res.origin.layer, CONFIG_LAYER_AGENT);
	assert_non_null(strstr(res.rule, "the agent: \"/opt/a[gent]\""));
	res = check_exec(cfg, "/opt/a[gent]/node_modules/x/bin/tool", argv);
	assert_int_equal(res.origin.layer, CONFIG_LAYER_AGENT);
	/* a sibling with the same prefix, and the glob's meaning of the name, are not below it */
	res = check_exec(cfg, "/opt/a[gent]x/tool", argv);
	assert_int_not_equal(res.origin.layer, CONFIG_LAYER_AGENT);
	res = check_exec(cfg, "/opt/ag/tool", argv);
	assert_int_not_equal(res.origin.layer, CONFIG_LAYER_AGENT);
	/* a deny rule wins */
	res = check_exec(cfg, "/opt/a[gent]/bin/rg", argv);
	assert_string_equal(V(res.verdict), "deny");

	/* with exec.ask on-miss it is an allow */
	cfg->exec.ask = EXEC_ASK_ON_MISS;
	res = check_exec(cfg, "/opt/a[gent]/node_modules/x/bin/tool", argv);
	assert_string_equal(V(res.verdict), "allow");
}

/* "~/" in an exec path glob is the home directory (its glob characters escaped); without a
 * home the built-in's such rules are left out and a file's is an error. */
static void test_exec_path_glob_under_the_home_directory(void **state)
{
	struct config_sources src1 = {
	        .global = src("config.yaml", "exec:\n  allow:\n    - path: \"~/tools/*\"\n"),
	};
	struct config_load_options home = {.home = "/home/a[1]"};
	static const char *const argv[] = {"t", NULL};
	struct cl_error err = {""};
	struct config *cfg = NULL;
	struct policy_result res;

	assert_int_equal(config_load(&src1, &home, &cfg, &err), 0);
	res = check_exec(cfg, "/home/a[1]/tools/t", argv);
	assert_string_equal(V(res.verdict), "allow");
	assert_non_null(strstr(res.rule, "path \"/home/a\\[1\\]/tools/*\""));
	res = check_exec(cfg, "/home/a1/tools/t", argv);
	assert_string_equal(V(res.verdict), "ask");
	config_free(cfg);
	cfg = NULL;
	/* the built-in's version managers, under this home */
	src1.global = src("config.yaml", NULL);
	assert_int_equal(config_load(&src1, &home, &cfg, &err), 0);
	res = check_exec(cfg, "/home/a[1]/.pyenv/shims/python3", argv);
	assert_string_equal(V(res.verdict), "allow");
	config_free(cfg);
	cfg = NULL;
	src1.global = src("config.yaml", "exec:\n  allow:\n    - path: \"~/tools/*\"\n");

	assert_int_equal(config_load(&src1, NULL, &cfg, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "HOME is not set"));
	_cleanup_(config_freep) struct config *builtin = load4(NULL, NULL, NULL, NULL);
	res = check_exec(builtin, "/root/.pyenv/shims/python3", argv);
	assert_string_equal(V(res.verdict), "ask");
}

static void test_hostexec_auto_then_manual_then_deny(void **state)
{
	const char *global = "hostexec:\n"
	                     "  auto_approve:\n"
	                     "    - pattern: \"^docker compose ps$\"\n"
	                     "    - pattern: \"^docker compose logs\"\n"
	                     "  manual_approve:\n"
	                     "    - pattern: \"^docker compose .*$\"\n"
	                     "    - pattern: \"^gh .+$\"\n";
	const char *project = "hostexec:\n"
	                      "  auto_approve:\n"
	                      "    - pattern: \"^gh pr view\"\n";
	static const struct {
		const char *command;
		enum policy_verdict want;
		const char *rule;
		const char *file;
		unsigned line;
	} cases[] = {
	        {"docker compose ps", POLICY_ALLOW,
	         "hostexec.auto_approve[0] pattern \"^docker compose ps$\"", "config.yaml", 3},
	        {"docker compose logs", POLICY_ALLOW,
	         "hostexec.auto_approve[1] pattern \"^docker compose logs\"", "config.yaml", 4},
	        /* auto_approve is tried before manual_approve, whichever file it is in */
	        {"gh pr view 12", POLICY_ALLOW, "hostexec.auto_approve[0] pattern \"^gh pr view\"",
	         "projects/p.yaml", 3},
	        {"docker compose up -d", POLICY_ASK,
	         "hostexec.manual_approve[0] pattern \"^docker compose .*$\"", "config.yaml", 6},
	        {"gh pr create", POLICY_ASK, "hostexec.manual_approve[1] pattern \"^gh .+$\"",
	         "config.yaml", 7},
	        {"rm -rf /", POLICY_DENY, "no hostexec pattern matched", NULL, 0},
	        {"gh", POLICY_DENY, "no hostexec pattern matched", NULL, 0},
	        /* `$` is the end of the string only, as in Go's regexp, so the auto pattern
	         * misses; `.` crosses a newline (config_regex.h), so the manual one matches */
	        {"docker compose ps\n", POLICY_ASK,
	         "hostexec.manual_approve[0] pattern \"^docker compose .*$\"", "config.yaml", 6},
	};
	_cleanup_(config_freep) struct config *cfg = load4(global, project, NULL, NULL);

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct policy_result res;
		struct cl_error err = {""};

		assert_int_equal(policy_check_hostexec(cfg, cases[i].command, &res, &err), 0);
		if (res.verdict != cases[i].want || strcmp(res.rule, cases[i].rule) != 0)
			fail_msg("\"%s\": got %s \"%s\", want %s \"%s\"", cases[i].command,
			         V(res.verdict), res.rule, V(cases[i].want), cases[i].rule);
		if (cases[i].file) {
			assert_string_equal(res.origin.file, cases[i].file);
			assert_int_equal(res.origin.line, cases[i].line);
		} else {
			assert_null(res.origin.file);
			assert_string_equal(res.reason, "Command doesn't match allowlist");
		}
		assert_int_equal(res.verdict == POLICY_ASK ? res.fallback : POLICY_DENY,
		                 POLICY_DENY);
	}
}

/* ---- domains ----------------------------------------------------------------------------- */

static struct policy_result check_domain(const struct config *cfg,
                                         const struct policy_session *session, const char *host)
{
	struct policy_result res;
	struct cl_error err = {""};

	if (policy_check_domain(cfg, session, host, &res, &err) < 0)
		fail_msg("%s: %s", host, err.msg);
	return res;
}

static void session_add(struct config_domain_list *list, const char *text)
{
	struct config_domain_rule rule = {
	        .list = "session",
	        .origin = {.layer = CONFIG_LAYER_SESSION},
	};
	struct cl_error err = {""};

	if (domain_spec_parse(text, true, &rule.spec, &err) < 0)
		fail_msg("%s: %s", text, err.msg);
	assert_int_equal(config_domain_list_add(list, &rule), 0);
}

/* A sandbox's, its project's and the global decisions in memory: an allow from any of them
 * counts, a deny in any of them wins over allows everywhere, and NULL sets are skipped. */
static void test_domain_several_session_sets(void **state)
{
	_cleanup_(config_freep) struct config *cfg =
	        load4("proxy:\n  allow:\n    - domain: cfg.example\n", NULL, NULL, NULL);
	struct policy_session mine = {0}, project = {0}, global = {0};
	const struct policy_session *sets[] = {&mine, NULL, &project, &global};
	struct policy_result res;
	struct cl_error err = {""};

	session_add(&mine.allow, "a.example");
	session_add(&project.allow, "b.example");
	session_add(&global.allow, "c.example");
	session_add(&global.deny, "a.example");
	session_add(&project.deny, "cfg.example");
	const char *const allowed[] = {"b.example", "c.example:443"};
	for (size_t i = 0; i < ELEMENTSOF(allowed); i++) {
		assert_int_equal(
		        policy_check_domain_in(cfg, sets, ELEMENTSOF(sets), allowed[i], &res, &err),
		        0);
		assert_int_equal(res.verdict, POLICY_ALLOW);
		assert_int_equal(res.origin.layer, CONFIG_LAYER_SESSION);
	}
	/* Allowed by the sandbox, denied globally; allowed by the config, denied by the project. */
	const char *const denied[] = {"a.example", "cfg.example"};
	for (size_t i = 0; i < ELEMENTSOF(denied); i++) {
		assert_int_equal(
		        policy_check_domain_in(cfg, sets, ELEMENTSOF(sets), denied[i], &res, &err),
		        0);
		assert_int_equal(res.verdict, POLICY_DENY);
	}
	/* Without the sets, only the config speaks. */
	assert_int_equal(policy_check_domain_in(cfg, NULL, 0, "cfg.example", &res, &err), 0);
	assert_int_equal(res.verdict, POLICY_ALLOW);
	assert_int_equal(policy_check_domain_in(cfg, NULL, 0, "b.example", &res, &err), 0);
	assert_int_equal(res.verdict, POLICY_DENY); /* unlisted, and the file says no approval */
	assert_string_equal(res.rule, "proxy.unlisted_domain_behavior=reject");
	for (size_t i = 0; i < ELEMENTSOF(sets); i++) {
		struct policy_session *s = (struct policy_session *)sets[i];

		if (!s)
			continue;
		config_domain_list_clear(&s->allow);
		config_domain_list_clear(&s->deny);
	}
}

static void test_domain_deny_beats_allow_at_every_layer(void **state)
{
	/* Each layer in turn denies x.example while every other layer allows it. */
	static const char *const allow_proxy = "proxy:\n  allow:\n    - domain: x.example\n";
	static const char *const deny_proxy = "proxy:\n  deny:\n    - pattern: \"*.x.example\"\n";
	static const enum config_layer layers[] = {
	        CONFIG_LAYER_GLOBAL,           CONFIG_LAYER_PROJECT,
	        CONFIG_LAYER_GLOBAL_DECISIONS, CONFIG_LAYER_PROJECT_DECISIONS,
	        CONFIG_LAYER_SESSION,
	};

	for (size_t i = 0; i < ELEMENTSOF(layers); i++) {
		enum config_layer deny_at = layers[i];
		const char *text[4];
		_cleanup_(config_freep) struct config *cfg = NULL;
		struct policy_session session = {0};
		struct policy_result res;

		for (int l = 0; l < 4; l++)
			text[l] = (enum config_layer)(CONFIG_LAYER_GLOBAL + l) == deny_at
			                  ? deny_proxy
			                  : allow_proxy;
		cfg = load4(text[0], text[1], text[2], text[3]);
		if (deny_at == CONFIG_LAYER_SESSION)
			session_add(&session.deny, "x.example");
		else
			session_add(&session.allow, "x.example");

		res = check_domain(cfg, &session, "x.example:443");
		if (res.verdict != POLICY_DENY || res.origin.layer != deny_at)
			fail_msg("deny at %s: got %s from %s", config_layer_to_string(deny_at),
			         V(res.verdict), config_layer_to_string(res.origin.layer));
		/* Something unlisted is rejected: a config.yaml that leaves out
		 * unlisted_domain_behavior means reject, as in Cloister. */
		res = check_domain(cfg, &session, "y.example");
		assert_int_equal(res.verdict, POLICY_DENY);
		assert_string_equal(res.rule, "proxy.unlisted_domain_behavior=reject");
		config_domain_list_clear(&session.allow);
		config_domain_list_clear(&session.deny);
	}
}

static void test_domain_unlisted_behavior_and_wildcards(void **state)
{
	const char *reject = "proxy:\n"
	                     "  unlisted_domain_behavior: reject\n"
	                     "  allow:\n"
	                     "    - pattern: \"*.example.com\"\n"
	                     "    - domain: api.other.com:8443\n";
	static const struct {
		const char *host;
		enum policy_verdict want;
		const char *subject;
	} cases[] = {
	        {"api.example.com", POLICY_ALLOW, "api.example.com"},
	        {"example.com", POLICY_ALLOW, "example.com"},
	        {"API.Example.COM.", POLICY_ALLOW, "api.example.com"},
	        {"a.b.example.com", POLICY_DENY, "a.b.example.com"},
	        {"example.com.evil.net", POLICY_DENY, "example.com.evil.net"},
	        {"api.other.com:8443", POLICY_ALLOW, "api.other.com:8443"},
	        {"api.other.com:443", POLICY_DENY, "api.other.com:443"},
	        {"api.other.com", POLICY_DENY, "api.other.com"},
	};
	_cleanup_(config_freep) struct config *cfg = load4(reject, NULL, NULL, NULL);

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct policy_result res = check_domain(cfg, NULL, cases[i].host);
		if (res.verdict != cases[i].want)
			fail_msg("%s: got %s want %s (%s)", cases[i].host, V(res.verdict),
			         V(cases[i].want), res.reason);
		assert_string_equal(res.subject, cases[i].subject);
		if (res.verdict == POLICY_DENY) {
			assert_string_equal(res.rule, "proxy.unlisted_domain_behavior=reject");
			assert_int_equal(res.origin.line, 3) /* own_lists_only() added a line */;
		}
	}
	{
		struct policy_result res = check_domain(cfg, NULL, "api.example.com");
		assert_string_equal(res.rule, "proxy.allow[0] pattern \"*.example.com\"");
		assert_int_equal(res.origin.line, 5); /* own_lists_only() added a line */
		assert_int_equal(res.origin.column, 16);
	}
}

static void test_domain_unlisted_request_approval_asks_and_times_out_to_deny(void **state)
{
	_cleanup_(config_freep) struct config *cfg = load4("proxy:\n"
	                                                   "  unlisted_domain_behavior: "
	                                                   "request_approval\n"
	                                                   "  approval_timeout: 90s\n",
	                                                   NULL, NULL, NULL);
	struct policy_result res = check_domain(cfg, NULL, "new.example");

	assert_int_equal(res.verdict, POLICY_ASK);
	assert_int_equal(res.fallback, POLICY_DENY);
	assert_string_equal(res.rule, "proxy.unlisted_domain_behavior=request_approval");
	assert_non_null(strstr(res.reason, "90 s"));
}

/* Cloister's policy engine cases as rows (deny first at every tier, then allow, then the
 * unlisted behaviour), with this project's pattern depths and the reason that says them. */
static void test_domain_deny_patterns_cover_every_depth_and_say_so(void **state)
{
	const char *global = "proxy:\n"
	                     "  unlisted_domain_behavior: request_approval\n"
	                     "  allow:\n"
	                     "    - pattern: \"*.example.com\"\n"
	                     "    - domain: evil.net\n"
	                     "  deny:\n"
	                     "    - pattern: \"*.evil.net\"\n";
	static const struct {
		const char *host;
		enum policy_verdict want;
		const char *reason; /* a part of it */
	} cases[] = {
	        {"a.b.evil.net", POLICY_DENY, "covers evil.net and its subdomains at every depth"},
	        {"x.evil.net:8443", POLICY_DENY, "denials win over approvals"},
	        {"evil.net", POLICY_DENY, "a denied pattern covers evil.net"},
	        {"api.example.com", POLICY_ALLOW, "covers example.com and one subdomain level"},
	        {"example.com", POLICY_ALLOW, "an allowed pattern covers example.com"},
	        {"a.b.example.com", POLICY_ASK,
	         "the allowed pattern \"*.example.com\" covers one subdomain level only"},
	        {"other.org", POLICY_ASK, "is not in the allowlist, so a person decides"},
	        /* Cloister's always-allowed domains, beneath the config. */
	        {"api.openai.com", POLICY_ALLOW, "is allowed (always allowed)"},
	        {"deb.nodesource.com:443", POLICY_ALLOW, "is allowed (always allowed)"},
	};
	_cleanup_(config_freep) struct config *cfg = load4(global, NULL, NULL, NULL);

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct policy_result res = check_domain(cfg, NULL, cases[i].host);
		if (res.verdict != cases[i].want || !strstr(res.reason, cases[i].reason))
			fail_msg("%s: got %s (%s), want %s (…%s…)", cases[i].host, V(res.verdict),
			         res.reason, V(cases[i].want), cases[i].reason);
	}
	{
		/* A session denial of a pattern covers every depth too. */
		struct policy_session session = {0};
		struct policy_result res;

		session_add(&session.deny, "*.example.com");
		res = check_domain(cfg, &session, "deep.api.example.com");
		assert_int_equal(res.verdict, POLICY_DENY);
		assert_int_equal(res.origin.layer, CONFIG_LAYER_SESSION);
		config_domain_list_clear(&session.deny);
	}
}

static void test_domain_always_allowed_base_is_beneath_every_config_and_deny_overrides(void **state)
{
	struct policy_result res;
	{
		_cleanup_(config_freep) struct config *cfg =
		        load4("proxy:\n  deny:\n    - domain: storage.googleapis.com\n", NULL, NULL,
		              "denied_patterns: [\"*.ubuntu.com\"]\n");

		res = check_domain(cfg, NULL, "storage.googleapis.com");
		assert_int_equal(res.verdict, POLICY_DENY);
		res = check_domain(cfg, NULL, "security.ubuntu.com");
		assert_int_equal(res.verdict, POLICY_DENY);
		assert_int_equal(res.origin.layer, CONFIG_LAYER_PROJECT_DECISIONS);
		res = check_domain(cfg, NULL, "sum.golang.org");
		assert_int_equal(res.verdict, POLICY_ALLOW);
		assert_int_equal(res.origin.layer, CONFIG_LAYER_BASE);
		assert_string_equal(res.origin.file, CONFIG_BASE_NAME);
		assert_string_equal(res.rule, "always-allowed[4] domain \"sum.golang.org\"");
	}
}

static void test_domain_unlisted_left_out_of_the_file_rejects_and_says_why(void **state)
{
	_cleanup_(config_freep) struct config *none = load4(NULL, NULL, NULL, NULL);
	_cleanup_(config_freep) struct config *file =
	        load4("proxy:\n  allow: []\n", NULL, NULL, NULL);
	struct policy_result res = check_domain(none, NULL, "new.example");

	assert_int_equal(res.verdict, POLICY_ASK); /* no file: the built-in asks */
	res = check_domain(file, NULL, "new.example");
	assert_int_equal(res.verdict, POLICY_DENY);
	assert_string_equal(res.rule, "proxy.unlisted_domain_behavior=reject");
	assert_string_equal(res.origin.file, "config.yaml");
	assert_int_equal(res.origin.line, 0);
	assert_non_null(strstr(res.reason, "not set in the config file, which means reject"));
}

/* Whether an allow names the host itself is a field of the result, not something to read out
 * of the rule's text: only such an allow may reach a loopback, metadata or local address. */
static void test_domain_exact_host_is_a_field_of_the_verdict(void **state)
{
	_cleanup_(config_freep) struct config *cfg =
	        load4("proxy:\n"
	              "  unlisted_domain_behavior: request_approval\n"
	              "  allow:\n"
	              "    - pattern: \"*.pattern.test\"\n"
	              "    - domain: exact.test\n"
	              "    - domain: listed.pattern.test\n"
	              "    - domain: port.test:8080\n"
	              "    - domain: 192.0.2.7\n"
	              "  deny:\n"
	              "    - domain: denied.test\n",
	              NULL, "proxy:\n  allow:\n    - domain: decided.test\n", NULL);
	struct policy_session session = {0};
	static const struct {
		const char *host;
		enum policy_verdict verdict;
		bool exact;
	} cases[] = {
	        {"exact.test", POLICY_ALLOW, true},
	        {"exact.test:443", POLICY_ALLOW, true},
	        {"port.test:8080", POLICY_ALLOW, true},
	        {"192.0.2.7:22", POLICY_ALLOW, true},
	        {"decided.test", POLICY_ALLOW, true},        /* a decisions file's domain entry */
	        {"person.test:80", POLICY_ALLOW, true},      /* a person's session decision */
	        {"listed.pattern.test", POLICY_ALLOW, true}, /* after a matching pattern */
	        {"a.pattern.test", POLICY_ALLOW, false},
	        {"pattern.test", POLICY_ALLOW, false}, /* the apex, through the pattern */
	        {"b.wild.test", POLICY_ALLOW, false},  /* a person's wildcard decision */
	        {"other.test", POLICY_ASK, false},
	        {"denied.test", POLICY_DENY, false},
	};

	session_add(&session.allow, "person.test");
	session_add(&session.allow, "*.wild.test");
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct policy_result res = check_domain(cfg, &session, cases[i].host);

		if (res.verdict != cases[i].verdict || res.exact_host != cases[i].exact)
			fail_msg("%s: got %s exact_host=%d, want %s exact_host=%d (%s)",
			         cases[i].host, V(res.verdict), res.exact_host, V(cases[i].verdict),
			         cases[i].exact, res.rule);
	}
	config_domain_list_clear(&session.allow);
}

static void test_domain_malformed_host_is_an_error(void **state)
{
	_cleanup_(config_freep) struct config *cfg = load4(NULL, NULL, NULL, NULL);
	static const char *const hosts[] = {"", "a b", "*.example.com", "example.com:99999",
	                                    "a..b"};

	for (size_t i = 0; i < ELEMENTSOF(hosts); i++) {
		struct policy_result res = {.verdict = POLICY_ALLOW};
		struct cl_error err = {""};
		if (policy_check_domain(cfg, NULL, hosts[i], &res, &err) != -EINVAL)
			fail_msg("\"%s\" accepted", hosts[i]);
		assert_true(err.msg[0] != '\0');
	}
}

/* A running supervisor reads the decisions files again as they change: the config's copy of
 * their layers is left out (policy_check_domain_except), the fresh rules come as a rule set. */
static void test_domain_decisions_left_out_of_the_config(void **state)
{
	_cleanup_(config_freep) struct config *cfg =
	        load4("proxy:\n  allow:\n    - domain: own.example\n"
	              "  unlisted_domain_behavior: request_approval\n",
	              NULL, "proxy:\n  allow:\n    - domain: g.example\n",
	              "proxy:\n  allow:\n    - domain: p.example\n  deny:\n"
	              "    - domain: own.example\n");
	_cleanup_(config_freep) struct config *fresh =
	        load4(NULL, NULL, NULL, "proxy:\n  allow:\n    - domain: q.example\n");
	const unsigned both =
	        1U << CONFIG_LAYER_GLOBAL_DECISIONS | 1U << CONFIG_LAYER_PROJECT_DECISIONS;
	struct policy_session now = {fresh->proxy.allow, fresh->proxy.deny};
	const struct policy_session *sets[] = {&now};
	struct policy_result res;
	struct cl_error err = {""};

	(void)state;
	/* As read at the start: the project's denial wins over the config's own allow. */
	assert_int_equal(policy_check_domain_except(cfg, 0, NULL, 0, "own.example", &res, &err), 0);
	assert_int_equal(res.verdict, POLICY_DENY);
	assert_int_equal(policy_check_domain_except(cfg, 0, NULL, 0, "p.example", &res, &err), 0);
	assert_int_equal(res.verdict, POLICY_ALLOW);
	/* Both decisions layers left out: what the files said at the start no longer counts,
	 * the config's own entries still do, and the fresh set decides. */
	assert_int_equal(policy_check_domain_except(cfg, both, sets, 1, "own.example", &res, &err),
	                 0);
	assert_int_equal(res.verdict, POLICY_ALLOW);
	assert_int_equal(policy_check_domain_except(cfg, both, sets, 1, "p.example", &res, &err),
	                 0);
	assert_int_equal(res.verdict, POLICY_ASK);
	assert_int_equal(policy_check_domain_except(cfg, both, sets, 1, "g.example", &res, &err),
	                 0);
	assert_int_equal(res.verdict, POLICY_ASK);
	assert_int_equal(policy_check_domain_except(cfg, both, sets, 1, "q.example", &res, &err),
	                 0);
	assert_int_equal(res.verdict, POLICY_ALLOW);
	/* One layer only: the global file's entry still holds. */
	assert_int_equal(policy_check_domain_except(cfg, 1U << CONFIG_LAYER_PROJECT_DECISIONS, sets,
	                                            1, "g.example", &res, &err),
	                 0);
	assert_int_equal(res.verdict, POLICY_ALLOW);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_exec_verdict_for_every_security_and_ask_combination),
	        cmocka_unit_test(test_domain_decisions_left_out_of_the_config),
	        cmocka_unit_test(test_exec_deny_beats_allow_across_global_and_project),
	        cmocka_unit_test(test_exec_path_glob_and_command_regex_semantics),
	        cmocka_unit_test(test_exec_path_that_is_not_normalised_is_denied),
	        cmocka_unit_test(test_exec_ask_fallback_applies_when_nobody_answers),
	        cmocka_unit_test(test_exec_regex_errors_count_against_the_exec),
	        cmocka_unit_test(test_exec_deny_regex_still_matches_arguments_that_are_not_utf8),
	        cmocka_unit_test(test_exec_with_the_builtin_default),
	        cmocka_unit_test(test_exec_path_glob_under_the_home_directory),
	        cmocka_unit_test(test_exec_tree_of_the_agent_allows_below_it_and_deny_still_wins),
	        cmocka_unit_test(test_exec_argv0_of_a_multicall_program_must_match_the_rule_too),
	        cmocka_unit_test(test_exec_deny_regex_crosses_newlines_inside_arguments),
	        cmocka_unit_test(test_exec_with_an_empty_argv_is_checked_as_the_kernel_runs_it),
	        cmocka_unit_test(test_exec_truncated_argv_is_never_allowed_by_a_command_rule),
	        cmocka_unit_test(
	                test_exec_argv_too_long_for_a_command_string_is_checked_as_a_prefix),
	        cmocka_unit_test(test_hostexec_auto_then_manual_then_deny),
	        cmocka_unit_test(test_domain_deny_beats_allow_at_every_layer),
	        cmocka_unit_test(test_domain_unlisted_behavior_and_wildcards),
	        cmocka_unit_test(test_domain_unlisted_request_approval_asks_and_times_out_to_deny),
	        cmocka_unit_test(test_domain_malformed_host_is_an_error),
	        cmocka_unit_test(test_domain_deny_patterns_cover_every_depth_and_say_so),
	        cmocka_unit_test(
	                test_domain_always_allowed_base_is_beneath_every_config_and_deny_overrides),
	        cmocka_unit_test(test_domain_unlisted_left_out_of_the_file_rejects_and_says_why),
	        cmocka_unit_test(test_domain_exact_host_is_a_field_of_the_verdict),
	        cmocka_unit_test(test_domain_several_session_sets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
