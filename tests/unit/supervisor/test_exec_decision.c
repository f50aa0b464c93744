/* exec_decide and exec_decide_interpreter: the given and the real name of a file, and a #!
 * script's interpreter, which the policy must allow too. Configs are written as YAML. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "supervisor/policy/config.h"
#include "supervisor/policy/exec_decision.h"
#include "supervisor/policy/policy.h"

static struct config *load(const char *yaml)
{
	struct config_sources s = {
	        .global = {.name = "config.yaml",
	                   .data = yaml,
	                   .len = strlen(yaml),
	                   .present = true},
	};
	struct cl_error err = {""};
	struct config *cfg = NULL;

	if (config_load(&s, NULL, &cfg, &err) < 0)
		fail_msg("load failed: %s", err.msg);
	return cfg;
}

/* The file's own rules alone (defaults: false, last so that the lines stay where they were). */
static const char *const CONFIG = "exec:\n"
                                  "  security: allowlist\n"
                                  "  ask: on-miss\n"
                                  "  ask_fallback: allowlist\n"
                                  "  allow:\n"
                                  "    - path: \"/usr/bin/dash\"\n"
                                  "    - path: \"/work/*.sh\"\n"
                                  "    - path: \"/work/tool\"\n"
                                  "  deny:\n"
                                  "    - path: \"/usr/bin/sudo\"\n"
                                  "    - command: \"^dash .*--evil\"\n"
                                  "      path: \"/usr/bin/dash\"\n"
                                  "  defaults: false\n";

/* The script's own verdict, then the interpreter folded in. */
static struct policy_result script_then_interp(const struct config *cfg, const char *script,
                                               const char *given, const char *real, const char *arg,
                                               const char *const *argv)
{
	struct policy_result res;
	struct cl_error err = {""};
	size_t argc = 0;

	while (argv[argc])
		argc++;
	if (exec_decide(cfg, script, NULL, argv, argc, false, &res, &err) < 0)
		fail_msg("exec_decide: %s", err.msg);
	if (exec_decide_interpreter(cfg, given, real, arg, script, argv, argc, false, &res, &err) <
	    0)
		fail_msg("exec_decide_interpreter: %s", err.msg);
	return res;
}

static void test_allowed_script_with_allowed_interpreter_is_allowed(void **state)
{
	static const char *const argv[] = {"/work/build.sh", "all", NULL};
	struct config *cfg = load(CONFIG);
	struct policy_result res =
	        script_then_interp(cfg, "/work/build.sh", "/bin/sh", "/usr/bin/dash", NULL, argv);

	assert_int_equal(res.verdict, POLICY_ALLOW);
	assert_string_equal(res.subject, "build.sh all");
	assert_non_null(strstr(res.rule, "/work/*.sh"));
	config_free(cfg);
	(void)state;
}

static void test_denied_interpreter_denies_an_allowed_script(void **state)
{
	static const char *const argv[] = {"/work/x.sh", NULL};
	struct config *cfg = load(CONFIG);
	struct policy_result res = script_then_interp(cfg, "/work/x.sh", "/usr/bin/sudo",
	                                              "/usr/bin/sudo", "/bin/sh", argv);

	assert_int_equal(res.verdict, POLICY_DENY);
	assert_string_equal(res.rule,
	                    "interpreter /usr/bin/sudo: exec.deny[0] path \"/usr/bin/sudo\"");
	assert_int_equal(res.origin.line, 10);
	assert_string_equal(res.subject, "x.sh"); /* what a person sees stays the script */
	config_free(cfg);
	(void)state;
}

/* A deny regex sees the command the kernel runs: INTERP ARG SCRIPT ARGS. */
static void test_interpreter_command_is_what_the_kernel_runs(void **state)
{
	static const char *const argv[] = {"/work/x.sh", "--evil", NULL};
	struct config *cfg = load(CONFIG);
	struct policy_result res =
	        script_then_interp(cfg, "/work/x.sh", NULL, "/usr/bin/dash", "-e", argv);

	assert_int_equal(res.verdict, POLICY_DENY);
	assert_non_null(strstr(res.rule, "exec.deny[1]"));
	config_free(cfg);
	(void)state;
}

/* An unlisted interpreter asks; nobody answering, allowlist fallback: the interpreter is not
 * on the allowlist, so the fallback denies even though the script is. */
static void test_unlisted_interpreter_asks_with_a_denying_fallback(void **state)
{
	static const char *const argv[] = {"/work/x.sh", NULL};
	struct config *cfg = load(CONFIG);
	struct policy_result res =
	        script_then_interp(cfg, "/work/x.sh", "/usr/bin/python3", NULL, NULL, argv);

	assert_int_equal(res.verdict, POLICY_ASK);
	assert_int_equal(res.fallback, POLICY_DENY);
	assert_non_null(strstr(res.rule, "interpreter /usr/bin/python3: "));
	config_free(cfg);
	(void)state;
}

/* A script that asks keeps its allowlist fallback when its interpreter is allowed. */
static void test_asking_script_keeps_its_fallback(void **state)
{
	static const char *const argv[] = {"/tmp/y.sh", NULL};
	struct config *cfg = load(CONFIG);
	struct policy_result res;
	struct cl_error err = {""};

	res = script_then_interp(cfg, "/tmp/y.sh", "/bin/sh", "/usr/bin/dash", NULL, argv);
	assert_int_equal(res.verdict, POLICY_ASK);
	assert_int_equal(res.fallback, POLICY_DENY); /* not on the allowlist itself */
	assert_string_equal(res.rule, "exec.ask=on-miss");

	/* Neither name of the interpreter known: an error, the result untouched. */
	assert_int_equal(exec_decide_interpreter(cfg, NULL, NULL, NULL, "/tmp/y.sh", argv, 1, false,
	                                         &res, &err),
	                 -EINVAL);
	assert_int_equal(res.verdict, POLICY_ASK);
	config_free(cfg);
	(void)state;
}

/* A symlink cannot dodge a deny rule: /usr/bin/sudo -> /work/tool is denied by its name. */
static void test_a_deny_rule_on_the_given_name_holds_for_an_allowed_file(void **state)
{
	static const char *const argv[] = {"sudo", "-i", NULL};
	struct config *cfg = load(CONFIG);
	struct policy_result res;

	assert_int_equal(
	        exec_decide(cfg, "/usr/bin/sudo", "/work/tool", argv, 2, false, &res, NULL), 0);
	assert_int_equal(res.verdict, POLICY_DENY);
	assert_true(res.by_deny_rule);
	assert_string_equal(res.rule, "exec.deny[0] path \"/usr/bin/sudo\"");
	config_free(cfg);
	(void)state;
}

/* Only a deny rule sticks to the given name: a name no allow rule lists (denied there by
 * ask: off, a setting) is judged by the file it resolves to. */
static void test_a_setting_denial_of_the_given_name_yields_to_the_real_file(void **state)
{
	static const char *const argv[] = {"tool", NULL};
	struct config *cfg = load("exec:\n"
	                          "  security: allowlist\n"
	                          "  ask: off\n"
	                          "  allow:\n"
	                          "    - path: \"/work/tool\"\n");
	struct policy_result res;

	assert_int_equal(
	        exec_decide(cfg, "/home/u/bin/tool", "/work/tool", argv, 1, false, &res, NULL), 0);
	assert_int_equal(res.verdict, POLICY_ALLOW);
	assert_false(res.by_deny_rule);
	config_free(cfg);
	(void)state;
}

/* A hard link of a denied program, under a name an allow rule lists: the file is also
 * /usr/bin/sudo (deny_ids found it by identity), and sudo's deny rule holds. */
static void test_a_deny_rules_file_under_another_name_is_denied(void **state)
{
	static const char *const argv[] = {"tool", "-i", NULL};
	struct config *cfg = load(CONFIG);
	struct policy_result res;

	assert_int_equal(exec_decide(cfg, "/work/tool", "/work/tool", argv, 2, false, &res, NULL),
	                 0);
	assert_int_equal(res.verdict, POLICY_ALLOW);
	assert_int_equal(exec_decide_alias(cfg, "/usr/bin/sudo", argv, 2, false, &res, NULL), 0);
	assert_int_equal(res.verdict, POLICY_DENY);
	assert_true(res.by_deny_rule);
	assert_string_equal(res.rule, "exec.deny[0] path \"/usr/bin/sudo\"");
	assert_string_equal(res.subject, "tool -i"); /* what was run, for the person reading */
	assert_non_null(strstr(res.reason, "/usr/bin/sudo under another name"));
	config_free(cfg);
	(void)state;
}

/* Only a deny rule of the other name counts: a name the policy would merely ask about (or
 * allow) changes nothing, and a command rule of it is checked against the command run. */
static void test_an_alias_only_adds_deny_rules(void **state)
{
	static const char *const harmless[] = {"tool", NULL};
	static const char *const evil[] = {"tool", "--evil", NULL};
	struct config *cfg = load(CONFIG);
	struct policy_result res;

	assert_int_equal(exec_decide(cfg, "/work/tool", NULL, harmless, 1, false, &res, NULL), 0);
	assert_int_equal(
	        exec_decide_alias(cfg, "/usr/bin/unlisted", harmless, 1, false, &res, NULL), 0);
	assert_int_equal(res.verdict, POLICY_ALLOW);
	assert_int_equal(exec_decide_alias(cfg, "/usr/bin/dash", harmless, 1, false, &res, NULL),
	                 0);
	assert_int_equal(res.verdict, POLICY_ALLOW);
	assert_int_equal(exec_decide(cfg, "/work/tool", NULL, evil, 2, false, &res, NULL), 0);
	assert_int_equal(exec_decide_alias(cfg, "/usr/bin/dash", evil, 2, false, &res, NULL), 0);
	assert_int_equal(res.verdict, POLICY_DENY);
	assert_string_equal(res.rule,
	                    "exec.deny[1] path \"/usr/bin/dash\" command \"^dash .*--evil\"");
	config_free(cfg);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_allowed_script_with_allowed_interpreter_is_allowed),
	        cmocka_unit_test(test_denied_interpreter_denies_an_allowed_script),
	        cmocka_unit_test(test_interpreter_command_is_what_the_kernel_runs),
	        cmocka_unit_test(test_unlisted_interpreter_asks_with_a_denying_fallback),
	        cmocka_unit_test(test_asking_script_keeps_its_fallback),
	        cmocka_unit_test(test_a_deny_rule_on_the_given_name_holds_for_an_allowed_file),
	        cmocka_unit_test(test_a_setting_denial_of_the_given_name_yields_to_the_real_file),
	        cmocka_unit_test(test_a_deny_rules_file_under_another_name_is_denied),
	        cmocka_unit_test(test_an_alias_only_adds_deny_rules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
