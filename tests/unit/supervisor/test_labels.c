/* Sandbox labels: set, replace, eviction, cuts; .git/HEAD and .git file parsing; the branch of a
 * worktree on disk (a plain checkout, a linked worktree, a subdirectory, none). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "supervisor/approval/labels.h"
#include "supervisor/approval/worktree.h"

static void test_set_get_replace(void **state)
{
	struct labels *l;
	const char *b, *a;

	assert_int_equal(labels_new(&l), 0);
	labels_get(l, "box", &b, &a);
	assert_string_equal(b, "");
	assert_string_equal(a, "");
	assert_int_equal(labels_set(l, "box", "main", "claude"), 0);
	assert_int_equal(labels_set(l, "other", NULL, "codex"), 0);
	labels_get(l, "box", &b, &a);
	assert_string_equal(b, "main");
	assert_string_equal(a, "claude");
	labels_get(l, "other", &b, &a);
	assert_string_equal(b, "");
	assert_string_equal(a, "codex");
	assert_int_equal(labels_set(l, "box", "feature", NULL), 0);
	labels_get(l, "box", &b, &a);
	assert_string_equal(b, "feature");
	assert_string_equal(a, "");
	labels_get(l, NULL, &b, &a);
	assert_string_equal(b, "");
	labels_get(NULL, "box", &b, &a);
	assert_string_equal(b, "");
	assert_int_equal(labels_set(l, "", "x", "y"), -EINVAL);
	assert_int_equal(labels_set(l, NULL, "x", "y"), -EINVAL);
	labels_free(l);
}

static void test_bounds_evict_the_oldest_and_cut_long_values(void **state)
{
	struct labels *l;
	const char *b, *a;
	char name[32], long_name[LABELS_VALUE_MAX + 10];

	assert_int_equal(labels_new(&l), 0);
	for (int i = 0; i < LABELS_MAX + 1; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		assert_int_equal(labels_set(l, name, name, "a"), 0);
	}
	labels_get(l, "s0", &b, &a); /* the oldest made room */
	assert_string_equal(b, "");
	labels_get(l, "s1", &b, &a);
	assert_string_equal(b, "s1");
	snprintf(name, sizeof(name), "s%d", LABELS_MAX);
	labels_get(l, name, &b, &a);
	assert_string_equal(b, name);

	/* A name too long for the map is refused; a long value is cut, not in a UTF-8 sequence. */
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	assert_int_equal(labels_set(l, long_name, "b", "a"), -EINVAL);
	char utf8[LABELS_VALUE_MAX + 4];
	memset(utf8, 'y', LABELS_VALUE_MAX - 2);
	memcpy(utf8 + LABELS_VALUE_MAX - 2, "\xc3\xa9\xc3\xa9", 5); /* éé across the limit */
	assert_int_equal(labels_set(l, "s1", utf8, NULL), 0);
	labels_get(l, "s1", &b, &a);
	assert_int_equal(strlen(b), LABELS_VALUE_MAX - 2);
	labels_free(l);
}

static void test_parse_git_head(void **state)
{
	char out[64];
	static const char sha1[] = "0123456789abcdef0123456789abcdef01234567\n";

	assert_int_equal(labels_parse_git_head("ref: refs/heads/main\n", 21, out, sizeof(out)), 0);
	assert_string_equal(out, "main");
	assert_int_equal(
	        labels_parse_git_head("ref: refs/heads/feat/x-1\r\n", 26, out, sizeof(out)), 0);
	assert_string_equal(out, "feat/x-1");
	assert_int_equal(labels_parse_git_head(sha1, strlen(sha1), out, sizeof(out)), 0);
	assert_string_equal(out, "0123456789ab");
	/* Not a HEAD: other refs, empty names, control characters, short or foreign text. */
	const char *const bad[] = {"ref: refs/tags/v1\n",
	                           "ref: refs/heads/\n",
	                           "ref: refs/heads/a\x1b[31m\n",
	                           "0123abc\n",
	                           "",
	                           "hello world\n",
	                           "ref: refs/heads/a\nref: refs/heads/b\n"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(labels_parse_git_head(bad[i], strlen(bad[i]), out, sizeof(out)),
		                 -EINVAL);
	assert_int_equal(labels_parse_git_head("ref: refs/heads/averyverylongname\n", 34, out, 8),
	                 -ENAMETOOLONG);
	assert_int_equal(labels_parse_gitdir("gitdir: ../.git/worktrees/w\n", 28, out, sizeof(out)),
	                 0);
	assert_string_equal(out, "../.git/worktrees/w");
	assert_int_equal(labels_parse_gitdir("gitdir:\n", 8, out, sizeof(out)), -EINVAL);
	assert_int_equal(labels_parse_gitdir("ref: x\n", 7, out, sizeof(out)), -EINVAL);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_worktree_branch_on_disk(void **state)
{
	char dir[] = "/tmp/cloister-labels-XXXXXX", path[256], out[64];

	assert_non_null(mkdtemp(dir));
	/* No .git anywhere up to / (/tmp is not in a repository on a test machine). */
	assert_int_equal(worktree_git_branch(dir, out, sizeof(out)), -ENOENT);
	snprintf(path, sizeof(path), "%s/repo", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/repo/.git", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/repo/.git/HEAD", dir);
	write_file(path, "ref: refs/heads/trunk\n");
	snprintf(path, sizeof(path), "%s/repo/src", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/repo/src/deep", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(worktree_git_branch(path, out, sizeof(out)), 0);
	assert_string_equal(out, "trunk");

	/* A linked worktree: .git is a file naming the git dir (relative to it). */
	snprintf(path, sizeof(path), "%s/repo/.git/worktrees", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/repo/.git/worktrees/wt", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/repo/.git/worktrees/wt/HEAD", dir);
	write_file(path, "ref: refs/heads/side\n");
	snprintf(path, sizeof(path), "%s/wt", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/wt/.git", dir);
	write_file(path, "gitdir: ../repo/.git/worktrees/wt\n");
	snprintf(path, sizeof(path), "%s/wt", dir);
	assert_int_equal(worktree_git_branch(path, out, sizeof(out)), 0);
	assert_string_equal(out, "side");

	/* A HEAD that is not a regular file is not read (a fifo would block). */
	snprintf(path, sizeof(path), "%s/repo/.git/worktrees/wt/HEAD", dir);
	unlink(path);
	assert_int_equal(mkfifo(path, 0600), 0);
	snprintf(path, sizeof(path), "%s/wt", dir);
	assert_int_equal(worktree_git_branch(path, out, sizeof(out)), -EINVAL);

	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_set_get_replace),
	        cmocka_unit_test(test_bounds_evict_the_oldest_and_cut_long_values),
	        cmocka_unit_test(test_parse_git_head),
	        cmocka_unit_test(test_worktree_branch_on_disk),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
