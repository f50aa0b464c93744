#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "supervisor/policy/config.h"
#include "supervisor/policy/exec_pattern.h"
#include "supervisor/policy/policy.h"

/* A config whose only allow rule is the decision's: allowlist, asking on a miss. */
static struct config *config_with(const struct exec_pattern_rule *rule)
{
	struct config *c = calloc(1, sizeof(*c));
	char msg[256];

	assert_non_null(c);
	c->exec.security = EXEC_SECURITY_ALLOWLIST;
	c->exec.ask = EXEC_ASK_ON_MISS;
	c->exec.allow.items = calloc(1, sizeof(*c->exec.allow.items));
	assert_non_null(c->exec.allow.items);
	c->exec.allow.n = 1;
	c->exec.allow.items[0].path_glob = strdup(rule->path_glob);
	c->exec.allow.items[0].list = "exec.allow";
	if (config_regex_compile(rule->command, &c->exec.allow.items[0].command, msg, sizeof(msg)) <
	    0)
		fail_msg("%s: %s", rule->command, msg);
	return c;
}

static struct config *decide(const char *exe, const char *const *argv, enum exec_match match,
                             const char *pattern)
{
	struct exec_pattern_rule rule = {0};
	struct cl_error err = {""};
	size_t argc = 0;
	struct config *c;

	while (argv[argc])
		argc++;
	if (exec_pattern_rule(exe, argv, argc, match, pattern, &rule, &err) < 0)
		fail_msg("rule for %s: %s", exe, err.msg);
	c = config_with(&rule);
	exec_pattern_rule_done(&rule);
	return c;
}

static bool allows(const struct config *c, const char *exe, const char *const *argv)
{
	struct policy_result res;
	struct cl_error err = {""};
	size_t argc = 0;

	while (argv[argc])
		argc++;
	if (policy_check_exec(c, exe, argv, argc, &res, &err) < 0)
		fail_msg("check %s: %s", exe, err.msg);
	return res.verdict == POLICY_ALLOW;
}

#define ARGV(...) ((const char *const[]){__VA_ARGS__, NULL})

static void test_exact_covers_this_command_only(void **state)
{
	_cleanup_(config_freep) struct config *c =
	        decide("/usr/bin/git", ARGV("git", "status", "--short"), EXEC_MATCH_EXACT, NULL);
	_cleanup_(config_freep) struct config *dots =
	        decide("/usr/bin/echo", ARGV("echo", ".*", "a b", "it's"), EXEC_MATCH_EXACT, NULL);

	assert_true(allows(c, "/usr/bin/git", ARGV("git", "status", "--short")));
	assert_false(allows(c, "/usr/bin/git", ARGV("git", "status")));
	assert_false(allows(c, "/usr/bin/git", ARGV("git", "status", "--short", "x")));
	assert_false(allows(c, "/usr/bin/git", ARGV("git", "status", "--shortx")));
	/* Another file of the same name, one the agent wrote. */
	assert_false(allows(c, "/tmp/git", ARGV("git", "status", "--short")));
	/* A multi-call program under another name. */
	assert_false(allows(c, "/usr/bin/git", ARGV("git-clean", "status", "--short")));
	/* Arguments are literal: regex characters and quotes mean themselves. */
	assert_true(allows(dots, "/usr/bin/echo", ARGV("echo", ".*", "a b", "it's")));
	assert_false(allows(dots, "/usr/bin/echo", ARGV("echo", "ab", "a b", "it's")));
	assert_false(allows(dots, "/usr/bin/echo", ARGV("echo", ".*", "a  b", "it's")));
}

static void test_program_covers_any_arguments_under_its_names_only(void **state)
{
	_cleanup_(config_freep) struct config *c =
	        decide("/usr/bin/git", ARGV("git", "status"), EXEC_MATCH_PROGRAM, NULL);
	_cleanup_(config_freep) struct config *which =
	        decide("/usr/bin/which.debianutils", ARGV("which", "ls"), EXEC_MATCH_PROGRAM, NULL);

	assert_true(allows(c, "/usr/bin/git", ARGV("git")));
	assert_true(allows(c, "/usr/bin/git", ARGV("git", "push", "--force", "a'b", "")));
	assert_true(allows(c, "/usr/bin/git", ARGV("/usr/bin/git", "log")));
	assert_false(allows(c, "/usr/bin/git", ARGV("git-clean", "-fdx")));
	assert_false(allows(c, "/home/u/bin/git", ARGV("git", "status")));
	/* The name it was called by, and its file's own. */
	assert_true(allows(which, "/usr/bin/which.debianutils", ARGV("which", "cc")));
	assert_true(allows(which, "/usr/bin/which.debianutils", ARGV("which.debianutils", "cc")));
	assert_false(allows(which, "/usr/bin/which.debianutils", ARGV("rm", "cc")));
}

static void test_pattern_star_stays_within_one_argument(void **state)
{
	_cleanup_(config_freep) struct config *one =
	        decide("/usr/bin/git", ARGV("git", "x"), EXEC_MATCH_PATTERN, "git *");
	_cleanup_(config_freep) struct config *sub =
	        decide("/usr/bin/git", ARGV("git", "status"), EXEC_MATCH_PATTERN, "git status **");
	_cleanup_(config_freep) struct config *cfiles =
	        decide("/usr/bin/ls", ARGV("ls", "a.c"), EXEC_MATCH_PATTERN, "ls -l *.c");

	/* `git *`: git with exactly one argument, whatever it holds (no shell runs it). */
	assert_true(allows(one, "/usr/bin/git", ARGV("git", "status")));
	assert_true(allows(one, "/usr/bin/git", ARGV("git", "; rm -rf ~")));
	assert_false(allows(one, "/usr/bin/git", ARGV("git", ";", "rm", "-rf", "~")));
	assert_false(allows(one, "/usr/bin/git", ARGV("git")));
	assert_false(allows(one, "/tmp/x/git", ARGV("git", "status")));
	/* `**`: any number of arguments, none included. */
	assert_true(allows(sub, "/usr/bin/git", ARGV("git", "status")));
	assert_true(allows(sub, "/usr/bin/git", ARGV("git", "status", "-s", "a b")));
	assert_false(allows(sub, "/usr/bin/git", ARGV("git", "statusx")));
	assert_false(allows(sub, "/usr/bin/git", ARGV("git", "push", "status")));
	assert_false(allows(sub, "/usr/bin/git", ARGV("git", "'status'")));
	/* A glob inside an argument, whether the argument is quoted or not. */
	assert_true(allows(cfiles, "/usr/bin/ls", ARGV("ls", "-l", "a.c")));
	assert_true(allows(cfiles, "/usr/bin/ls", ARGV("ls", "-l", "my file.c")));
	assert_true(allows(cfiles, "/usr/bin/ls", ARGV("ls", "-l", "dir/x.c")));
	assert_false(allows(cfiles, "/usr/bin/ls", ARGV("ls", "-l", "a.h")));
	assert_false(allows(cfiles, "/usr/bin/ls", ARGV("ls", "-l", "a.c", "b.c")));
	assert_false(allows(cfiles, "/usr/bin/ls", ARGV("ls", "-la", "a.c")));
}

static void test_pattern_quotes_are_literal(void **state)
{
	_cleanup_(config_freep) struct config *q = decide(
	        "/usr/bin/echo", ARGV("echo", "x"), EXEC_MATCH_PATTERN, "echo '*' 'it'\\''s' \\?");

	assert_true(allows(q, "/usr/bin/echo", ARGV("echo", "*", "it's", "?")));
	assert_false(allows(q, "/usr/bin/echo", ARGV("echo", "a", "it's", "?")));
	assert_false(allows(q, "/usr/bin/echo", ARGV("echo", "*", "it's", "a")));
}

static void test_bad_patterns_are_refused_with_a_reason(void **state)
{
	static const struct {
		const char *pattern, *why;
	} cases[] = {
	        {"rm **", "must start with the program's name"},
	        {"* **", "must start with the program's name"},
	        {"", "a pattern is needed"},
	        {"git a**", "stands alone"},
	        {"git '**", "unterminated quote"},
	        {"git \"x\"", "double quotes"},
	        {"git x\\", "ends with a backslash"},
	        {"git \x01", "control character"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct exec_pattern_rule rule = {0};
		struct cl_error err = {""};

		if (exec_pattern_rule("/usr/bin/git", ARGV("git", "x"), 2, EXEC_MATCH_PATTERN,
		                      cases[i].pattern, &rule, &err) != -EINVAL)
			fail_msg("%s: accepted", cases[i].pattern);
		if (!strstr(err.msg, cases[i].why))
			fail_msg("%s: %s", cases[i].pattern, err.msg);
	}
}

static void test_path_is_escaped_and_suggestions_are_prefilled(void **state)
{
	struct exec_pattern_rule rule = {0};
	struct cl_error err = {""};
	_cleanup_free_ char *s1 = NULL, *s2 = NULL, *s3 = NULL;

	assert_int_equal(exec_pattern_rule("/opt/a*b/[x]", ARGV("x"), 1, EXEC_MATCH_PROGRAM, NULL,
	                                   &rule, &err),
	                 0);
	assert_string_equal(rule.path_glob, "/opt/a\\*b/\\[x\\]");
	exec_pattern_rule_done(&rule);

	assert_int_equal(
	        exec_pattern_suggest("/usr/bin/git", ARGV("git", "status", "-s"), 3, &s1, &err), 0);
	assert_string_equal(s1, "git status **");
	assert_int_equal(exec_pattern_suggest("/usr/bin/ls", ARGV("ls", "-la"), 2, &s2, &err), 0);
	assert_string_equal(s2, "ls **");
	assert_int_equal(exec_pattern_suggest("/usr/bin/cat", ARGV("cat"), 1, &s3, &err), 0);
	assert_string_equal(s3, "cat **");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_exact_covers_this_command_only),
	        cmocka_unit_test(test_program_covers_any_arguments_under_its_names_only),
	        cmocka_unit_test(test_pattern_star_stays_within_one_argument),
	        cmocka_unit_test(test_pattern_quotes_are_literal),
	        cmocka_unit_test(test_bad_patterns_are_refused_with_a_reason),
	        cmocka_unit_test(test_path_is_escaped_and_suggestions_are_prefilled),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
