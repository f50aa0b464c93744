/* exec_decisions: what a kept decision answers, and what it refuses to keep. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "supervisor/approval/approvals.h"
#include "supervisor/approval/queue.h"
#include "supervisor/exec/exec_decisions.h"
#include "supervisor/policy/policy.h"

static char *argv_git[] = {"git", "status", NULL};
/* Two contents of /usr/bin/git: the one a person was shown, and one copied over it. */
#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SHA_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

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

/* What an ask of ARGV on the file of content SHA becomes with X's decisions: 'a', 'd' or '?'
 * (still an ask). */
static char verdict_of(struct exec_decisions *x, const char *const *argv, size_t argc,
                       const char *sha, char *reason, size_t size)
{
	struct policy_result res = {.verdict = POLICY_ASK};

	if (!exec_decisions_apply(x, "/usr/bin/git", "/usr/bin/git", argv, argc, false, sha, &res))
		return res.content_changed ? 'c' : '?';
	if (reason)
		snprintf(reason, size, "%s", res.reason);
	return res.verdict == POLICY_ALLOW ? 'a' : res.verdict == POLICY_DENY ? 'd' : '?';
}

static char verdict(struct exec_decisions *x, const char *const *argv, size_t argc, char *reason,
                    size_t size)
{
	return verdict_of(x, argv, argc, SHA_A, reason, size);
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
	assert_int_equal(exec_decisions_keep(x, &it, &once, SHA_A, &err), 0);
	assert_int_equal(exec_decisions_count(x), 0);
	assert_int_equal(exec_decisions_keep(x, &it, &exact, SHA_A, &err), 0);
	assert_int_equal(verdict(x, status, 2, NULL, 0), 'a');
	assert_int_equal(verdict(x, log, 2, NULL, 0), '?');
	assert_int_equal(exec_decisions_keep(x, &it, &deny, SHA_A, &err), 0);
	assert_int_equal(verdict(x, push, 3, reason, sizeof(reason)), 'd');
	assert_non_null(strstr(reason, "denied (session, pattern) by web: not git push"));
	/* Only asks are looked at. */
	{
		struct policy_result res = {.verdict = POLICY_ALLOW};

		assert_false(exec_decisions_apply(x, "/usr/bin/git", "/usr/bin/git", push, 3, false,
		                                  SHA_A, &res));
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
	assert_int_equal(exec_decisions_validate(&it, &bad, SHA_A, &err), -EINVAL);
	assert_int_equal(exec_decisions_keep(x, &it, &bad, SHA_A, &err), -EINVAL);
	assert_int_equal(exec_decisions_count(x), 0);
	/* No directory to write to: reported, and kept for the session all the same. */
	assert_int_equal(exec_decisions_keep(x, &it, &project, SHA_A, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no config directory"));
	assert_int_equal(exec_decisions_count(x), 1);
	exec_decisions_free(x);
}

/* An allow holds for the content it was decided on: another file copied to the path is asked
 * again (and says why); an unknown content is not covered. A denial holds whatever the file
 * holds. Without the file's digest, an allow wider than once is refused. */
static void test_allows_are_pinned_to_the_content(void **state)
{
	struct exec_decisions *x = NULL;
	struct queue_item it = item_of(argv_git, 2);
	struct approval_decision program = {
	        .allow = true, .scope = QUEUE_SCOPE_SESSION, .match = "program"};
	struct approval_decision deny = {.allow = false,
	                                 .scope = QUEUE_SCOPE_SESSION,
	                                 .match = "pattern",
	                                 .pattern = "git push **"};
	const char *const status[] = {"git", "status"}, *push[] = {"git", "push"};
	struct cl_error err = {""};

	assert_int_equal(exec_decisions_new(NULL, NULL, &x), 0);
	assert_int_equal(exec_decisions_validate(&it, &program, NULL, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "allow it once"));
	assert_int_equal(exec_decisions_keep(x, &it, &program, SHA_A, &err), 0);
	assert_int_equal(verdict_of(x, status, 2, SHA_A, NULL, 0), 'a');
	assert_int_equal(verdict_of(x, status, 2, SHA_B, NULL, 0), 'c');
	assert_int_equal(verdict_of(x, status, 2, NULL, NULL, 0), '?');
	assert_int_equal(exec_decisions_keep(x, &it, &deny, NULL, &err), 0);
	assert_int_equal(verdict_of(x, push, 2, SHA_B, NULL, 0), 'd');
	assert_int_equal(verdict_of(x, push, 2, NULL, NULL, 0), 'd');
	exec_decisions_free(x);
}

/* A decision holds for the name argv[0] had: a multi-call program decided on as one applet
 * is not decided on as another, nor under its own name. */
static void test_decisions_keep_the_applet(void **state)
{
	static char *argv_ls[] = {"ls", "/tmp", NULL};
	struct exec_decisions *x = NULL;
	struct queue_item it = item_of(argv_ls, 2);
	struct approval_decision program = {
	        .allow = true, .scope = QUEUE_SCOPE_SESSION, .match = "program"};
	const char *const ls[] = {"ls", "/etc"}, *rm[] = {"busybox", "rm", "/tmp/x"},
	                  *as_rm[] = {"rm", "/tmp/x"}, *path_ls[] = {"/bin/ls", "-l"};
	struct policy_result res = {.verdict = POLICY_ASK};
	struct cl_error err = {""};

	it.exe = "/usr/bin/busybox";
	assert_int_equal(exec_decisions_new(NULL, NULL, &x), 0);
	assert_int_equal(exec_decisions_keep(x, &it, &program, SHA_A, &err), 0);
	assert_true(exec_decisions_apply(x, "/usr/bin/busybox", "/usr/bin/busybox", ls, 2, false,
	                                 SHA_A, &res));
	assert_int_equal(res.verdict, POLICY_ALLOW);
	res.verdict = POLICY_ASK;
	assert_true(exec_decisions_apply(x, "/usr/bin/busybox", "/usr/bin/busybox", path_ls, 2,
	                                 false, SHA_A, &res));
	res.verdict = POLICY_ASK;
	assert_false(exec_decisions_apply(x, "/usr/bin/busybox", "/usr/bin/busybox", rm, 3, false,
	                                  SHA_A, &res));
	assert_false(exec_decisions_apply(x, "/usr/bin/busybox", "/usr/bin/busybox", as_rm, 2,
	                                  false, SHA_A, &res));
	exec_decisions_free(x);
}

static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* What other runs wrote to the decisions files since the start is read again: an allow of the
 * global file answers, a denial of the project file wins over it and over this session's
 * allow; a file that no longer parses keeps what was read. */
static void test_the_files_are_read_again(void **state)
{
	char dir[] = "/var/tmp/cloister-xd.XXXXXX", path[128];
	struct exec_decisions *x = NULL;
	struct queue_item it = item_of(argv_git, 2);
	struct approval_decision exact = {.allow = true, .scope = QUEUE_SCOPE_SESSION};
	const char *const status[] = {"git", "status"}, *log[] = {"git", "log"};
	struct cl_error err = {""};

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/decisions", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/decisions/projects", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(exec_decisions_new(dir, "p", &x), 0);
	assert_int_equal(exec_decisions_reload(x, &err), 0);
	assert_int_equal(verdict(x, log, 2, NULL, 0), '?');

	snprintf(path, sizeof(path), "%s/decisions/global.yaml", dir);
	put_file(path, "exec:\n  allow:\n    - path: \"/usr/bin/git\"\n      argv0: \"git\"\n"
	               "      sha256: \"" SHA_A "\"\n");
	assert_int_equal(exec_decisions_reload(x, &err), 0);
	assert_int_equal(verdict(x, log, 2, NULL, 0), 'a');
	assert_int_equal(verdict_of(x, log, 2, SHA_B, NULL, 0), 'c');

	assert_int_equal(exec_decisions_keep(x, &it, &exact, SHA_A, &err), 0);
	snprintf(path, sizeof(path), "%s/decisions/projects/p.yaml", dir);
	put_file(path, "exec:\n  deny:\n    - path: \"/usr/bin/git\"\n");
	assert_int_equal(exec_decisions_reload(x, &err), 0);
	assert_int_equal(verdict(x, log, 2, NULL, 0), 'd');
	assert_int_equal(verdict(x, status, 2, NULL, 0), 'd');

	put_file(path, "exec: [\n");
	assert_true(exec_decisions_reload(x, &err) < 0);
	assert_int_equal(verdict(x, status, 2, NULL, 0), 'd');
	exec_decisions_free(x);
	unlink(path);
	snprintf(path, sizeof(path), "%s/decisions/global.yaml", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/decisions/projects", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/decisions", dir);
	rmdir(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_the_files_are_read_again),
	        cmocka_unit_test(test_allows_are_pinned_to_the_content),
	        cmocka_unit_test(test_decisions_keep_the_applet),
	        cmocka_unit_test(test_session_decisions_answer_what_they_cover),
	        cmocka_unit_test(test_what_cannot_be_kept_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
