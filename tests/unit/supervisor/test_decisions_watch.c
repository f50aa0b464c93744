/* decisions_watch: a decisions file changed by another run is read again, whether it was
 * replaced (rename, as decisions.c writes) or edited in place, even with the same size within
 * one tick of the filesystem's clock; an unchanged one is not; the loop is told, never the
 * caller from inside its own check. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/loop.h"
#include "supervisor/policy/config.h"
#include "supervisor/policy/decisions_watch.h"

#define SEC 1000000000LL

static void test_stamps(void **state)
{
	struct decisions_stamp a = {.present = true,
	                            .dev = 1,
	                            .ino = 2,
	                            .mtime_ns = 10 * SEC,
	                            .ctime_ns = 10 * SEC,
	                            .size = 5};
	struct decisions_stamp b = a, absent = {0}, absent2 = {0};

	(void)state;
	assert_false(decisions_stamp_changed(&a, &b));
	b.ino = 3; /* replaced by rename */
	assert_true(decisions_stamp_changed(&a, &b));
	b = a;
	b.mtime_ns++;
	assert_true(decisions_stamp_changed(&a, &b));
	b = a;
	b.ctime_ns++;
	assert_true(decisions_stamp_changed(&a, &b));
	b = a;
	b.size = 6;
	assert_true(decisions_stamp_changed(&a, &b));
	b = a;
	b.dev = 9;
	assert_true(decisions_stamp_changed(&a, &b));
	assert_true(decisions_stamp_changed(&a, &absent));
	assert_true(decisions_stamp_changed(&absent, &a));
	assert_false(decisions_stamp_changed(&absent, &absent2));

	/* Settled: an mtime well in the past only; a recent or a future one is read again. */
	assert_true(decisions_stamp_settled(&a, 10 * SEC + DECISIONS_STAMP_RACY_NS));
	assert_false(decisions_stamp_settled(&a, 10 * SEC + DECISIONS_STAMP_RACY_NS - 1));
	assert_false(decisions_stamp_settled(&a, 10 * SEC));
	assert_false(decisions_stamp_settled(&a, 10 * SEC - 1));
	assert_true(decisions_stamp_settled(&a, 10 * SEC - DECISIONS_STAMP_RACY_NS));
	assert_true(decisions_stamp_settled(&absent, 0));
}

struct fixture {
	char dir[64];
	char global[128], project[128], tmp[128];
};

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, 0600), 0);
}

/* Rewrite PATH in place: same inode, same size, and its mtime set back to what it was (its
 * ctime moves: only the kernel sets it). */
static void put_in_place_same_stamp(const char *path, const char *text)
{
	struct stat before, after;
	struct timespec times[2];
	FILE *f;

	assert_int_equal(stat(path, &before), 0);
	f = fopen(path, "r+e");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	times[0] = before.st_atim;
	times[1] = before.st_mtim;
	assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
	assert_int_equal(stat(path, &after), 0);
	assert_int_equal(after.st_ino, before.st_ino);
	assert_int_equal(after.st_size, before.st_size);
	assert_int_equal(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char path[128];

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/var/tmp/cloister-dw.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(path, sizeof(path), "%s/decisions", f->dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/decisions/projects", f->dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(f->global, sizeof(f->global), "%s/decisions/global.yaml", f->dir);
	snprintf(f->project, sizeof(f->project), "%s/decisions/projects/p.yaml", f->dir);
	snprintf(f->tmp, sizeof(f->tmp), "%s/decisions/projects/.p.tmp", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char path[128];

	unlink(f->global);
	unlink(f->project);
	unlink(f->tmp);
	snprintf(path, sizeof(path), "%s/decisions/projects", f->dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/decisions", f->dir);
	rmdir(path);
	rmdir(f->dir);
	free(f);
	return 0;
}

static size_t allowed(const struct config *c)
{
	return c ? c->proxy.allow.n : 0;
}

static const char *first_allowed(const struct config *c)
{
	return c && c->proxy.allow.n ? c->proxy.allow.items[0].spec.host : "";
}

static void test_files_read_again(void **state)
{
	struct fixture *f = *state;
	struct decisions_watch *w = NULL;
	struct cl_error err = {""};

	put(f->project, "proxy:\n  allow:\n    - domain: a.example\n");
	assert_int_equal(decisions_watch_new(f->dir, "p", &w, &err), 0);
	assert_non_null(w);
	assert_true(decisions_watch_known(w, false));
	assert_true(decisions_watch_known(w, true));
	assert_null(decisions_watch_global(w)); /* absent */
	assert_string_equal(first_allowed(decisions_watch_project(w)), "a.example");
	assert_string_equal(decisions_watch_project_name(w), "p");

	/* Replaced by another run: a new file renamed over it. */
	put(f->tmp, "proxy:\n  allow:\n    - domain: b.example\n    - domain: c.example\n");
	assert_int_equal(rename(f->tmp, f->project), 0);
	assert_int_equal(decisions_watch_check(w, &err), 1);
	assert_int_equal(allowed(decisions_watch_project(w)), 2);
	assert_string_equal(first_allowed(decisions_watch_project(w)), "b.example");

	/* Edited in place, same size, its mtime put back: the read moments ago was too close
	 * to that mtime to trust the stamp, so it is read again. */
	put_in_place_same_stamp(
	        f->project, "proxy:\n  allow:\n    - domain: d.example\n    - domain: e.example\n");
	assert_int_equal(decisions_watch_check(w, &err), 1);
	assert_string_equal(first_allowed(decisions_watch_project(w)), "d.example");
	/* Read again, unchanged: no change told. */
	assert_int_equal(decisions_watch_check(w, &err), 0);

	/* The global file appears, and goes. */
	put(f->global, "proxy:\n  deny:\n    - domain: z.example\n");
	assert_int_equal(decisions_watch_check(w, &err), 1);
	assert_int_equal(decisions_watch_global(w)->proxy.deny.n, 1);
	assert_int_equal(unlink(f->global), 0);
	assert_int_equal(decisions_watch_check(w, &err), 1);
	assert_null(decisions_watch_global(w));

	/* A file that does not parse (being edited by hand) keeps what was read. */
	put(f->project, "proxy: [\n");
	assert_true(decisions_watch_check(w, &err) < 0);
	assert_string_equal(first_allowed(decisions_watch_project(w)), "d.example");
	put(f->project, "proxy:\n  allow:\n    - domain: f.example\n");
	assert_int_equal(decisions_watch_check(w, &err), 1);
	assert_string_equal(first_allowed(decisions_watch_project(w)), "f.example");
	decisions_watch_free(w);
}

/* A file whose mtime is old is trusted by its stamp; an edit in place that puts the mtime
 * back still moves the ctime, which nobody can set: seen. */
static void test_settled_file_edited_in_place(void **state)
{
	struct fixture *f = *state;
	struct decisions_watch *w = NULL;
	struct cl_error err = {""};
	struct timespec old[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};

	put(f->project, "proxy:\n  allow:\n    - domain: a.example\n");
	assert_int_equal(utimensat(AT_FDCWD, f->project, old, 0), 0);
	assert_int_equal(decisions_watch_new(f->dir, "p", &w, &err), 0);
	assert_string_equal(first_allowed(decisions_watch_project(w)), "a.example");
	assert_int_equal(decisions_watch_check(w, &err), 0);
	put_in_place_same_stamp(f->project, "proxy:\n  allow:\n    - domain: b.example\n");
	assert_int_equal(decisions_watch_check(w, &err), 1);
	assert_string_equal(first_allowed(decisions_watch_project(w)), "b.example");
	assert_int_equal(decisions_watch_check(w, &err), 0);
	decisions_watch_free(w);
}

static void on_changed(void *userdata)
{
	int *n = userdata;

	(*n)++;
}

static int stop(struct loop *loop, void *userdata)
{
	(void)userdata;
	loop_exit(loop, 0);
	return 0;
}

/* A change found by a caller's check is told from the loop, once; nothing is told when
 * nothing changed. */
static void test_told_from_the_loop(void **state)
{
	struct fixture *f = *state;
	struct decisions_watch *w = NULL;
	struct cl_error err = {""};
	struct loop *loop = NULL;
	struct loop_timer *t;
	int told = 0;

	assert_int_equal(loop_new(&loop), 0);
	assert_int_equal(decisions_watch_new(f->dir, "p", &w, &err), 0);
	assert_int_equal(decisions_watch_start(w, loop, on_changed, &told), 0);
	put(f->project, "proxy:\n  allow:\n    - domain: a.example\n");
	assert_int_equal(decisions_watch_check(w, &err), 1);
	assert_int_equal(told, 0); /* not from inside the check */
	assert_int_equal(loop_add_timer(loop, loop_now_ms() + 50, stop, NULL, &t), 0);
	assert_int_equal(loop_run(loop), 0);
	assert_int_equal(told, 1);
	assert_int_equal(decisions_watch_check(w, &err), 0);
	assert_int_equal(loop_add_timer(loop, loop_now_ms() + 50, stop, NULL, &t), 0);
	assert_int_equal(loop_run(loop), 0);
	assert_int_equal(told, 1);

	/* A plain check does not hurry the timer: a change is told at the idle interval,
	 * after a deadline between the two (timers fire in the order of their deadlines,
	 * whatever the machine's load). */
	assert_int_equal(decisions_watch_check(w, &err), 0);
	put(f->project, "proxy:\n  allow:\n    - domain: c.example\n");
	assert_int_equal(loop_add_timer(loop,
	                                loop_now_ms() + (DECISIONS_WATCH_HURRY_INTERVAL_MS +
	                                                 DECISIONS_WATCH_INTERVAL_MS) /
	                                                        2,
	                                stop, NULL, &t),
	                 0);
	assert_int_equal(loop_run(loop), 0);
	assert_int_equal(told, 1);
	assert_int_equal(
	        loop_add_timer(loop, loop_now_ms() + DECISIONS_WATCH_INTERVAL_MS, stop, NULL, &t),
	        0);
	assert_int_equal(loop_run(loop), 0);
	assert_int_equal(told, 2);

	/* A caller about to ask: another run's change is told at the hurried interval,
	 * before the idle one would come. */
	assert_int_equal(decisions_watch_before_ask(w, &err), 0);
	put(f->project, "proxy:\n  allow:\n    - domain: b.example\n");
	assert_int_equal(loop_add_timer(loop,
	                                loop_now_ms() + (DECISIONS_WATCH_HURRY_INTERVAL_MS +
	                                                 DECISIONS_WATCH_INTERVAL_MS) /
	                                                        2,
	                                stop, NULL, &t),
	                 0);
	assert_int_equal(loop_run(loop), 0);
	assert_int_equal(told, 3);
	assert_string_equal(first_allowed(decisions_watch_project(w)), "b.example");
	decisions_watch_free(w);
	loop_free(loop);
}

/* No config directory: nothing to watch, and every call is harmless. */
static void test_no_dir(void **state)
{
	struct decisions_watch *w = (void *)1;
	struct cl_error err = {""};

	(void)state;
	assert_int_equal(decisions_watch_new(NULL, "p", &w, &err), 0);
	assert_null(w);
	assert_int_equal(decisions_watch_check(w, &err), 0);
	assert_false(decisions_watch_known(w, false));
	assert_null(decisions_watch_global(w));
	decisions_watch_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_stamps),
	        cmocka_unit_test_setup_teardown(test_files_read_again, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_settled_file_edited_in_place, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_told_from_the_loop, setup, teardown),
	        cmocka_unit_test(test_no_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
