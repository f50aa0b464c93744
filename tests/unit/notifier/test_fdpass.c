/* fdpass: one fd and a payload over a unix socket; anything else is refused and closed. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "notifier/fdpass.h"

static int sv[2];

static int setup(void **state)
{
	return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv);
}

static int teardown(void **state)
{
	close(sv[0]);
	close(sv[1]);
	return 0;
}

/* How many fds this process has open: a refused fd must not leak. */
static int count_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			n++;
	return n;
}

static void send_raw_fds(const int *fds, size_t nfds, const void *data, size_t len)
{
	char control[CMSG_SPACE(sizeof(int) * 4)] = {0};
	struct iovec iov = {.iov_base = (void *)data, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *c;

	if (nfds) {
		msg.msg_control = control;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	assert_int_equal(sendmsg(sv[0], &msg, 0), (ssize_t)len);
}

static void test_fd_and_payload_arrive_close_on_exec(void **state)
{
	struct stat a, b;
	char buf[32];
	size_t len = 0;
	int fd = open("/dev/null", O_RDONLY), got = -1;

	assert_true(fd >= 0);
	assert_int_equal(fdpass_send(sv[0], fd, "hello", 5), 0);
	assert_int_equal(fdpass_recv(sv[1], buf, sizeof(buf), &len, &got), 0);
	assert_int_equal(len, 5);
	assert_memory_equal(buf, "hello", 5);
	assert_true(got >= 0 && got != fd);
	assert_true(fcntl(got, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(fstat(got, &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	close(fd);
	close(got);
}

static void test_no_payload_is_allowed(void **state)
{
	int fd = open("/dev/null", O_RDONLY), got = -1;

	assert_int_equal(fdpass_send(sv[0], fd, NULL, 0), 0);
	assert_int_equal(fdpass_recv(sv[1], NULL, 0, NULL, &got), 0);
	assert_true(got >= 0);
	close(fd);
	close(got);
}

static void test_extra_fds_are_refused_and_closed(void **state)
{
	int fds[3] = {open("/dev/null", O_RDONLY), open("/dev/null", O_RDONLY),
	              open("/dev/null", O_RDONLY)};
	int before, got = -1;
	char buf[8];

	send_raw_fds(fds, 3, "x", 1);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	before = count_fds();
	assert_int_equal(fdpass_recv(sv[1], buf, sizeof(buf), NULL, &got), -EBADMSG);
	assert_int_equal(got, -1);
	assert_int_equal(count_fds(), before);
}

static void test_message_without_fd_is_refused(void **state)
{
	int got = -1;
	char buf[8];

	send_raw_fds(NULL, 0, "x", 1);
	assert_int_equal(fdpass_recv(sv[1], buf, sizeof(buf), NULL, &got), -EBADMSG);
	assert_int_equal(got, -1);
}

static void test_truncated_payload_is_refused_and_fd_closed(void **state)
{
	int fd = open("/dev/null", O_RDONLY), before, got = -1;
	char buf[4];

	assert_int_equal(fdpass_send(sv[0], fd, "too long for buf", 16), 0);
	close(fd);
	before = count_fds();
	assert_int_equal(fdpass_recv(sv[1], buf, sizeof(buf), NULL, &got), -EMSGSIZE);
	assert_int_equal(count_fds(), before);
}

static void test_closed_peer_is_end_of_stream(void **state)
{
	int got = -1;
	char buf[4];

	close(sv[0]);
	sv[0] = -1;
	assert_int_equal(fdpass_recv(sv[1], buf, sizeof(buf), NULL, &got), -ECONNRESET);
	assert_int_equal(fdpass_send(sv[1], 0, "x", 1), -EPIPE);
	assert_int_equal(fdpass_send(sv[1], -1, "x", 1), -EBADF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_fd_and_payload_arrive_close_on_exec, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_no_payload_is_allowed, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_extra_fds_are_refused_and_closed, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_message_without_fd_is_refused, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_truncated_payload_is_refused_and_fd_closed,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_closed_peer_is_end_of_stream, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
