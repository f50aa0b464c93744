/* exec_decisions: what a kept decision answers, and what it refuses to keep. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "supervisor/approval/approvals.h"
#include "supervisor/approval/queue.h"
#include "supervisor/exec/exec_decisions.h"
#include "supervisor/policy/policy.h"

static char *argv_git[] = {"git", "status", NULL};

static struct queue_item item_of(char **argv, size_t argc)
{
	return (struct queue_item){
	        .id = "0123456789ab",
	        .kind = QUEUE_KIND_EXEC,
	        .sandbox = "s",
	        .summary = "git status",
	        .exe = "/usr/bin/git",
	        .argv = argv,
	        .argc = argc,
	};
}

/* What an ask of ARGV becomes with X's decisions: 'a', 'd' or '?' (still an ask). */
static char verdict(const struct exec_decisions *x, const char *const *argv, size_t argc,
                    char *reason, size_t size)
{
	struct policy_result res = {.verdict = POLICY_ASK};

	if (!exec_decisions_apply(x, "/usr/bin/git", "/usr/bin/git", argv, argc, false, &res))
		return '?';
	if (reason)
		snprintf(reason, size, "%s", res.reason);
	return res.verdict == POLICY_ALLOW ? 'a' : res.verdict == POLICY_DENY ? 'd' : '?';
}

static void test_session_decisions_answer_what_they_cover(void **state)
{
	struct exec_decisions *x = NULL;
	struct queue_item it = item_of(argv_git, 2);
	struct approval_decision once = {.allow = true, .scope = QUEUE_SCOPE_ONCE, .by = "cli"};
	struct approval_decision exact = {.allow = true, .scope = QUEUE_SCOPE_SESSION, .by = "cli"};
	struct approval_decision deny = {.allow = false,
	                                 .scope = QUEUE_SCOPE_SESSION,
	                                 .by = "web",
	                                 .reason = "not git push",
	                                 .match = "pattern",
	                                 .pattern = "git push **"};
	const char *const status[] = {"git", "status"}, *log[] = {"git", "log"},
	                  *push[] = {"git", "push", "-f"};
	struct cl_error err = {""};
	char reason[600];

	assert_int_equal(exec_decisions_new(NULL, NULL, &x), 0);
	assert_int_equal(verdict(x, status, 2, NULL, 0), '?');
	/* Once keeps nothing. */
	assert_int_equal(exec_decisions_keep(x, &it, &once, &err), 0);
	assert_int_equal(exec_decisions_count(x), 0);
	assert_int_equal(exec_decisions_keep(x, &it, &exact, &err), 0);
	assert_int_equal(verdict(x, status, 2, NULL, 0), 'a');
	assert_int_equal(verdict(x, log, 2, NULL, 0), '?');
	assert_int_equal(exec_decisions_keep(x, &it, &deny, &err), 0);
	assert_int_equal(verdict(x, push, 3, reason, sizeof(reason)), 'd');
	assert_non_null(strstr(reason, "denied (session, pattern) by web: not git push"));
	/* Only asks are looked at. */
	{
		struct policy_result res = {.verdict = POLICY_ALLOW};

		assert_false(exec_decisions_apply(x, "/usr/bin/git", "/usr/bin/git", push, 3, false,
		                                  &res));
	}
	exec_decisions_free(x);
}

static void test_what_cannot_be_kept_is_refused(void **state)
{
	struct exec_decisions *x = NULL;
	struct queue_item it = item_of(argv_git, 2);
	struct approval_decision bad = {.allow = true,
	                                .scope = QUEUE_SCOPE_SESSION,
	                                .match = "pattern",
	                                .pattern = "rm **"};
	struct approval_decision project = {.allow = true, .scope = QUEUE_SCOPE_PROJECT};
	struct cl_error err = {""};

	assert_int_equal(exec_decisions_new(NULL, NULL, &x), 0);
	assert_int_equal(exec_decisions_validate(&it, &bad, &err), -EINVAL);
	assert_int_equal(exec_decisions_keep(x, &it, &bad, &err), -EINVAL);
	assert_int_equal(exec_decisions_count(x), 0);
	/* No directory to write to: reported, and kept for the session all the same. */
	assert_int_equal(exec_decisions_keep(x, &it, &project, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no config directory"));
	assert_int_equal(exec_decisions_count(x), 1);
	exec_decisions_free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_session_decisions_answer_what_they_cover),
	        cmocka_unit_test(test_what_cannot_be_kept_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
