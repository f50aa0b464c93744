/* fd_read_all: everything up to the limit, NUL-terminated; one byte more is refused. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/fd_read.h"

/* A file of LEN bytes (a repeating pattern), open for reading from its start. */
static int file_of(size_t len)
{
	char tmpl[] = "/tmp/test_fd_read.XXXXXX";
	int fd = mkstemp(tmpl);
	size_t done = 0;

	assert_true(fd >= 0);
	unlink(tmpl);
	while (done < len) {
		char chunk[4096];
		size_t n = len - done < sizeof(chunk) ? len - done : sizeof(chunk);

		for (size_t i = 0; i < n; i++)
			chunk[i] = (char)('a' + (done + i) % 26);
		assert_int_equal(write(fd, chunk, n), (ssize_t)n);
		done += n;
	}
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

static void test_reads_up_to_the_limit_nul_terminated(void **state)
{
	/* Below the first buffer, across it (the buffer grows), and exactly the limit. */
	static const struct {
		size_t len, max;
	} cases[] = {
	        {0, 10}, {5, 10}, {10, 10}, {65536, 1 << 20}, {200000, 1 << 20}, {200000, 200000},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int fd = file_of(cases[i].len);
		char *buf = NULL;
		size_t len = 1;

		assert_int_equal(fd_read_all(fd, cases[i].max, &buf, &len), 0);
		assert_int_equal(len, cases[i].len);
		assert_non_null(buf);
		assert_int_equal(buf[len], '\0');
		for (size_t k = 0; k < len; k++)
			assert_int_equal(buf[k], 'a' + k % 26);
		free(buf);
		close(fd);
	}
}

static void test_one_byte_past_the_limit_is_efbig_and_outputs_untouched(void **state)
{
	static const struct {
		size_t len, max;
	} cases[] = {{11, 10}, {1, 0}, {200001, 200000}, {65537, 65536}};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int fd = file_of(cases[i].len);
		char *buf = (char *)"untouched";
		size_t len = 7;

		assert_int_equal(fd_read_all(fd, cases[i].max, &buf, &len), -EFBIG);
		assert_string_equal(buf, "untouched");
		assert_int_equal(len, 7);
		close(fd);
	}
}

static void test_a_pipe_reads_to_its_end_and_a_bad_fd_gives_the_errno(void **state)
{
	int p[2];
	char *buf = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "abc", 3), 3);
	close(p[1]);
	assert_int_equal(fd_read_all(p[0], 100, &buf, &len), 0);
	assert_int_equal(len, 3);
	assert_string_equal(buf, "abc");
	free(buf);
	close(p[0]);
	assert_int_equal(fd_read_all(-1, 100, &buf, &len), -EBADF);
	assert_int_equal(fd_read_all(0, SIZE_MAX, &buf, &len), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_reads_up_to_the_limit_nul_terminated),
	        cmocka_unit_test(test_one_byte_past_the_limit_is_efbig_and_outputs_untouched),
	        cmocka_unit_test(test_a_pipe_reads_to_its_end_and_a_bad_fd_gives_the_errno),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
