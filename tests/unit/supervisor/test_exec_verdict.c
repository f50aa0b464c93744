/* The exec guard's rewrites of the policy's verdict (exec_verdict.h), table-driven: the
 * sandbox's own view denies a file mounted over a name whatever the policy said, "always" and
 * a denial of a moment ago settle an ask (only an ask, only for that process, only for a
 * moment), termination denies an ask, and each rewrite names itself. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "notifier/target.h"
#include "supervisor/exec/exec_verdict.h"
#include "supervisor/policy/policy.h"

#define KEY "/usr/bin/curl\ncurl example.com"

static struct policy_result result(enum policy_verdict v)
{
	static const char file[] = "config.yaml";
	struct policy_result r = {
	        .verdict = v,
	        .fallback = POLICY_ALLOW,
	        .origin = {.file = file, .line = 7},
	};

	snprintf(r.rule, sizeof(r.rule), "exec.ask=on-miss");
	snprintf(r.subject, sizeof(r.subject), "curl example.com");
	return r;
}

static struct exec_target target(pid_t pid)
{
	return (struct exec_target){
	        .pid = pid,
	        .file = {.exists = true,
	                 .executable = true,
	                 .view = EXEC_VIEW_SAME,
	                 .real_path = (char *)"/usr/bin/curl"},
	};
}

static void test_the_view_check_denies_a_file_mounted_over_its_name(void **state)
{
	static const struct {
		enum exec_view_check file, interp;
		bool script;
		enum policy_verdict in, out;
		const char *rule_has;
	} cases[] = {
	        {EXEC_VIEW_SAME, EXEC_VIEW_SAME, false, POLICY_ALLOW, POLICY_ALLOW, "exec.ask"},
	        {EXEC_VIEW_UNCHECKED, EXEC_VIEW_SAME, false, POLICY_ASK, POLICY_ASK, "exec.ask"},
	        {EXEC_VIEW_OTHER, EXEC_VIEW_SAME, false, POLICY_ALLOW, POLICY_DENY,
	         "/usr/bin/curl is another file in this process's mount namespace"},
	        {EXEC_VIEW_ABSENT, EXEC_VIEW_SAME, false, POLICY_ASK, POLICY_DENY,
	         "exists only in this process's mount namespace, not in the sandbox's (No such "
	         "file or directory)"},
	        /* A script: its interpreter is checked too, and only for a script. */
	        {EXEC_VIEW_SAME, EXEC_VIEW_OTHER, true, POLICY_ALLOW, POLICY_DENY,
	         "the interpreter /bin/sh is another file"},
	        {EXEC_VIEW_SAME, EXEC_VIEW_OTHER, false, POLICY_ALLOW, POLICY_ALLOW, "exec.ask"},
	        /* A denial stays the policy's own. */
	        {EXEC_VIEW_OTHER, EXEC_VIEW_SAME, false, POLICY_DENY, POLICY_DENY, "exec.ask"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct exec_target t = target(10);
		struct policy_result r = result(cases[i].in);

		t.file.view = cases[i].file;
		t.file.view_error = ENOENT;
		t.script = cases[i].script;
		t.interp_file = (struct exec_file){
		        .exists = true, .view = cases[i].interp, .real_path = (char *)"/bin/sh"};
		r.by_deny_rule = true;
		exec_verdict_rewrite(&t, NULL, cases[i].in == POLICY_ASK ? KEY : NULL, false, 0,
		                     &r);
		assert_int_equal(r.verdict, cases[i].out);
		assert_non_null(strstr(r.rule, cases[i].rule_has));
		if (cases[i].out != cases[i].in) {
			/* Not a config line, not a deny rule; nobody is asked about it. */
			assert_null(r.origin.file);
			assert_false(r.by_deny_rule);
			assert_int_equal(r.fallback, POLICY_DENY);
			assert_non_null(strstr(r.reason, "namespace of its own"));
		} else {
			assert_non_null(r.origin.file);
		}
	}
}

static void test_always_allows_the_same_ask_for_the_session(void **state)
{
	struct exec_answers *a = NULL;
	struct exec_target t = target(10);
	struct policy_result r = result(POLICY_ASK);

	assert_int_equal(exec_answers_new(&a), 0);
	exec_verdict_rewrite(&t, a, KEY, false, 0, &r);
	assert_int_equal(r.verdict, POLICY_ASK);
	exec_answers_allow_always(a, KEY);
	exec_answers_allow_always(a, KEY); /* kept once */
	/* Any process, any time later, as long as file and command are the same. */
	t.pid = 99;
	exec_verdict_rewrite(&t, a, KEY, false, 1000000, &r);
	assert_int_equal(r.verdict, POLICY_ALLOW);
	assert_string_equal(r.rule, "session: allowed always by a person");
	assert_null(r.origin.file);
	r = result(POLICY_ASK);
	exec_verdict_rewrite(&t, a, "/usr/bin/curl\ncurl other.example", false, 0, &r);
	assert_int_equal(r.verdict, POLICY_ASK);
	/* It settles asks only: the policy's own denial stands. */
	r = result(POLICY_DENY);
	exec_verdict_rewrite(&t, a, KEY, false, 0, &r);
	assert_int_equal(r.verdict, POLICY_DENY);
	assert_string_equal(r.rule, "exec.ask=on-miss");
	/* ... and so does the view check. */
	r = result(POLICY_ASK);
	t.file.view = EXEC_VIEW_OTHER;
	exec_verdict_rewrite(&t, a, KEY, false, 0, &r);
	assert_int_equal(r.verdict, POLICY_DENY);
	exec_answers_free(a);
}

static void test_a_denial_of_a_moment_ago_is_repeated_to_that_process_only(void **state)
{
	struct exec_answers *a = NULL;
	struct exec_target t = target(10);
	struct policy_result r;

	assert_int_equal(exec_answers_new(&a), 0);
	exec_answers_denied(a, KEY, 10, 5000);
	r = result(POLICY_ASK);
	exec_verdict_rewrite(&t, a, KEY, false, 5000 + EXEC_ANSWERS_RECENT_MS - 1, &r);
	assert_int_equal(r.verdict, POLICY_DENY);
	assert_string_equal(r.rule, "the same exec was denied a moment ago");
	assert_null(r.origin.file);
	/* Another process, or later, is asked again. */
	r = result(POLICY_ASK);
	t.pid = 11;
	exec_verdict_rewrite(&t, a, KEY, false, 5001, &r);
	assert_int_equal(r.verdict, POLICY_ASK);
	r = result(POLICY_ASK);
	t.pid = 10;
	exec_verdict_rewrite(&t, a, KEY, false, 5000 + EXEC_ANSWERS_RECENT_MS, &r);
	assert_int_equal(r.verdict, POLICY_ASK);
	/* Only the last EXEC_ANSWERS_RECENT denials are kept. */
	for (int i = 0; i < EXEC_ANSWERS_RECENT; i++) {
		char key[64];

		snprintf(key, sizeof(key), "/bin/x\nx %d", i);
		exec_answers_denied(a, key, 10, 6000);
	}
	r = result(POLICY_ASK);
	exec_answers_denied(a, KEY, 10, 5990);
	exec_verdict_rewrite(&t, a, KEY, false, 6000, &r);
	assert_int_equal(r.verdict, POLICY_DENY);
	for (int i = 0; i < EXEC_ANSWERS_RECENT; i++) {
		char key[64];

		snprintf(key, sizeof(key), "/bin/y\ny %d", i);
		exec_answers_denied(a, key, 10, 6000);
	}
	r = result(POLICY_ASK);
	exec_verdict_rewrite(&t, a, KEY, false, 6000, &r);
	assert_int_equal(r.verdict, POLICY_ASK);
	exec_answers_free(a);
}

static void test_termination_denies_asks_but_not_what_was_answered(void **state)
{
	struct exec_answers *a = NULL;
	struct exec_target t = target(10);
	struct policy_result r;

	assert_int_equal(exec_answers_new(&a), 0);
	r = result(POLICY_ASK);
	exec_verdict_rewrite(&t, a, KEY, true, 0, &r);
	assert_int_equal(r.verdict, POLICY_DENY);
	assert_string_equal(r.rule, "the agent is being terminated");
	assert_null(r.origin.file);
	/* What the policy allows still runs: the agent must be able to end. */
	r = result(POLICY_ALLOW);
	exec_verdict_rewrite(&t, a, NULL, true, 0, &r);
	assert_int_equal(r.verdict, POLICY_ALLOW);
	/* An earlier "always" is an answer, not a question. */
	exec_answers_allow_always(a, KEY);
	r = result(POLICY_ASK);
	exec_verdict_rewrite(&t, a, KEY, true, 0, &r);
	assert_int_equal(r.verdict, POLICY_ALLOW);
	exec_answers_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_the_view_check_denies_a_file_mounted_over_its_name),
	        cmocka_unit_test(test_always_allows_the_same_ask_for_the_session),
	        cmocka_unit_test(test_a_denial_of_a_moment_ago_is_repeated_to_that_process_only),
	        cmocka_unit_test(test_termination_denies_asks_but_not_what_was_answered),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
