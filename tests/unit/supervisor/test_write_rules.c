/* write_rules: which opens are asked about, and the session's answers. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>

#include "supervisor/files/write_rules.h"

static void test_only_flags_that_write_are_writes(void **state)
{
	(void)state;
	assert_false(write_rules_flags_write(O_RDONLY));
	assert_false(write_rules_flags_write(O_RDONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW));
	assert_true(write_rules_flags_write(O_WRONLY));
	assert_true(write_rules_flags_write(O_RDWR));
	assert_true(write_rules_flags_write(O_RDONLY | O_CREAT));
	assert_true(write_rules_flags_write(O_RDONLY | O_TRUNC)); /* truncates */
	assert_true(write_rules_flags_write(O_TMPFILE | O_WRONLY));
	/* O_PATH opens nothing: its access flags are ignored by the kernel. */
	assert_false(write_rules_flags_write(O_PATH | O_WRONLY));
}

static void test_devices_and_kernel_files_are_the_kernels(void **state)
{
	(void)state;
	assert_true(write_rules_kernel_only("/dev/null"));
	assert_true(write_rules_kernel_only("/dev"));
	assert_true(write_rules_kernel_only("/proc/self/attr/current"));
	assert_true(write_rules_kernel_only("/sys/fs/cgroup/x"));
	assert_false(write_rules_kernel_only("/device"));
	assert_false(write_rules_kernel_only("/home/u/dev/null"));
	assert_false(write_rules_kernel_only("/process"));
}

static void test_session_answers_exact_and_prefix(void **state)
{
	struct write_answers *a;

	(void)state;
	assert_int_equal(write_answers_new(&a), 0);
	assert_false(write_answers_covers(a, "/home/u/.npmrc"));
	assert_int_equal(write_answers_allow(a, "/home/u/.npmrc", false), 0);
	assert_true(write_answers_covers(a, "/home/u/.npmrc"));
	assert_false(write_answers_covers(a, "/home/u/.npmrc/x"));
	assert_false(write_answers_covers(a, "/home/u/.npmrc2"));
	assert_int_equal(write_answers_allow(a, "/home/u/.config/tool", true), 0);
	assert_true(write_answers_covers(a, "/home/u/.config/tool"));
	assert_true(write_answers_covers(a, "/home/u/.config/tool/a/b"));
	assert_false(write_answers_covers(a, "/home/u/.config/toolbox"));
	assert_false(write_answers_covers(a, "/home/u/.config"));
	assert_int_equal(write_answers_allow(a, "relative", false), -EINVAL);
	write_answers_free(a);
}

static void test_session_answers_are_bounded(void **state)
{
	struct write_answers *a;
	char path[64];
	int r = 0;

	(void)state;
	assert_int_equal(write_answers_new(&a), 0);
	for (int i = 0; i < WRITE_ANSWERS_MAX + 10 && r == 0; i++) {
		snprintf(path, sizeof(path), "/f%d", i);
		r = write_answers_allow(a, path, false);
	}
	assert_int_equal(r, -E2BIG);
	assert_true(write_answers_covers(a, "/f0"));
	write_answers_free(a);
}

static void test_reason_lines_once_per_process_and_path(void **state)
{
	struct write_notes wn = {0};

	(void)state;
	assert_true(write_notes_admit(&wn, 5000, 10, "/home/u/.bashrc"));
	assert_false(write_notes_admit(&wn, 5100, 10, "/home/u/.bashrc"));
	assert_false(write_notes_admit(&wn, 9000, 10, "/home/u/.bashrc"));
	assert_true(write_notes_admit(&wn, 9000, 11, "/home/u/.bashrc"));
	assert_true(write_notes_admit(&wn, 9000, 10, "/home/u/.profile"));
}

static void test_reason_lines_capped_per_second(void **state)
{
	struct write_notes wn = {0};
	char path[32];
	unsigned admitted = 0;

	(void)state;
	for (int i = 0; i < 1000; i++) {
		snprintf(path, sizeof(path), "/x/%d", i);
		admitted += write_notes_admit(&wn, 7000 + (uint64_t)i % 1000, 10, path);
	}
	assert_int_equal(admitted, WRITE_NOTES_PER_SECOND);
	/* The next second lets lines through again; the ring forgets the oldest paths. */
	assert_true(write_notes_admit(&wn, 8000, 10, "/y"));
	for (int i = 0; i < WRITE_NOTES_RECENT; i++) {
		snprintf(path, sizeof(path), "/z/%d", i);
		(void)write_notes_admit(&wn, 9000 + (uint64_t)i * 1000, 10, path);
	}
	assert_true(write_notes_admit(&wn, 99000, 10, "/y"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_only_flags_that_write_are_writes),
	        cmocka_unit_test(test_devices_and_kernel_files_are_the_kernels),
	        cmocka_unit_test(test_session_answers_exact_and_prefix),
	        cmocka_unit_test(test_session_answers_are_bounded),
	        cmocka_unit_test(test_reason_lines_once_per_process_and_path),
	        cmocka_unit_test(test_reason_lines_capped_per_second),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
