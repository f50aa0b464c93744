/* verdict_cache: an allow is found again only for the very same exec (paths, the file's
 * identity and view, a script's interpreter, every argument); only allows are kept; clearing
 * forgets them all. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/exec/verdict_cache.h"

struct fixture {
	struct exec_target t;
	char *argv[4];
	char path[32], abs_path[32], real[32], interp[32], interp_real[32];
	char a0[32], a1[32], a2[4200];
};

static void fill(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	strcpy(f->path, "tool");
	strcpy(f->abs_path, "/w/tool");
	strcpy(f->real, "/w/tool");
	strcpy(f->interp, "/bin/sh");
	strcpy(f->interp_real, "/usr/bin/dash");
	strcpy(f->a0, "tool");
	strcpy(f->a1, "--flag");
	f->argv[0] = f->a0;
	f->argv[1] = f->a1;
	f->t.path = f->path;
	f->t.abs_path = f->abs_path;
	f->t.argv = f->argv;
	f->t.argc = 2;
	f->t.file = (struct exec_file){.exists = true,
	                               .dev = 0x803,
	                               .ino = 42,
	                               .mnt_id = 7,
	                               .ctime_ns = 123456789,
	                               .size = 1000,
	                               .real_path = f->real};
}

static const struct policy_result allow = {.verdict = POLICY_ALLOW, .rule = "exec.allow[0]"};

static bool hit(struct verdict_cache *c, const struct exec_target *t)
{
	struct verdict_key k;
	struct policy_result res;

	verdict_key_of(t, &k);
	return verdict_cache_find(c, &k, &res);
}

static void keep(struct verdict_cache *c, const struct exec_target *t,
                 const struct policy_result *res)
{
	struct verdict_key k;

	verdict_key_of(t, &k);
	assert_int_equal(verdict_cache_put(c, &k, res), 0);
}

static void test_the_same_exec_only(void **state)
{
	struct verdict_cache *c;
	struct fixture *f = calloc(1, sizeof(*f));
	struct verdict_key k;
	struct policy_result res;

	(void)state;
	assert_int_equal(verdict_cache_new(&c), 0);
	fill(f);
	assert_false(hit(c, &f->t));
	keep(c, &f->t, &allow);
	verdict_key_of(&f->t, &k);
	assert_true(verdict_cache_find(c, &k, &res));
	assert_int_equal(res.verdict, POLICY_ALLOW);
	assert_string_equal(res.rule, "exec.allow[0]");

#define MISSES_WITH(change)                  \
	do {                                 \
		fill(f);                     \
		change;                      \
		assert_false(hit(c, &f->t)); \
	} while (0)
	MISSES_WITH(f->t.file.ino++);                  /* replaced under its name */
	MISSES_WITH(f->t.file.ctime_ns++);             /* rewritten in place */
	MISSES_WITH(f->t.file.size++);                 /* …and grown */
	MISSES_WITH(f->t.file.dev++);                  /* another file system */
	MISSES_WITH(f->t.file.mnt_id++);               /* another mount */
	MISSES_WITH(f->t.file.view = EXEC_VIEW_OTHER); /* another file in the view */
	MISSES_WITH(strcpy(f->abs_path, "/w/tooL"));   /* another name given */
	/* The name the file resolved to is part of the key: the same inode by the same given
	 * path may be reached under another name, which rules may not allow (verdict_cache.h). */
	MISSES_WITH(strcpy(f->real, "/w/tooL"));
	MISSES_WITH(f->t.file.real_path = NULL);
	MISSES_WITH(strcpy(f->a1, "--flaG"));    /* another argument */
	MISSES_WITH(f->t.argc = 1);              /* fewer */
	MISSES_WITH(f->t.argv_truncated = true); /* a prefix of a longer one */
	/* The same bytes split otherwise are another command line. */
	MISSES_WITH((strcpy(f->a0, "tool-"), strcpy(f->a1, "-flag")));
	/* A script: its interpreter is part of what was decided. */
	MISSES_WITH((f->t.script = true, f->t.interp = f->interp));
	fill(f);
	f->t.script = true;
	f->t.interp = f->interp;
	f->t.interp_file =
	        (struct exec_file){.exists = true, .ino = 9, .real_path = f->interp_real};
	keep(c, &f->t, &allow);
	assert_true(hit(c, &f->t));
	f->t.interp_file.ctime_ns++;
	assert_false(hit(c, &f->t));
	f->t.interp_file.ctime_ns--;
	strcpy(f->interp, "/bin/bash");
	assert_false(hit(c, &f->t));
	free(f);
	verdict_cache_free(c);
}

static void test_only_allows_are_kept_and_clear_forgets(void **state)
{
	struct verdict_cache *c;
	struct fixture *f = calloc(1, sizeof(*f));
	struct policy_result deny = {.verdict = POLICY_DENY}, ask = {.verdict = POLICY_ASK};
	uint64_t hits, misses;

	(void)state;
	assert_int_equal(verdict_cache_new(&c), 0);
	fill(f);
	keep(c, &f->t, &deny);
	assert_false(hit(c, &f->t));
	keep(c, &f->t, &ask);
	assert_false(hit(c, &f->t));
	keep(c, &f->t, &allow);
	assert_true(hit(c, &f->t));
	verdict_cache_clear(c);
	assert_false(hit(c, &f->t));
	verdict_cache_stats(c, &hits, &misses);
	assert_int_equal(hits, 1);
	assert_int_equal(misses, 3);

	/* A command line longer than a key is never kept. */
	memset(f->a2, 'x', sizeof(f->a2) - 1);
	f->argv[2] = f->a2;
	f->t.argc = 3;
	keep(c, &f->t, &allow);
	assert_false(hit(c, &f->t));
	free(f);
	verdict_cache_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_the_same_exec_only),
	        cmocka_unit_test(test_only_allows_are_kept_and_clear_forgets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
