/* The terminal relay between two real pseudo-terminals (no root needed): a child process
 * plays `run`, with the "user's" pty as its controlling terminal and stdio, relaying the
 * "agent's" pty master on its own event loop; the test plays both the person and the agent.
 * The user's terminal is raw while the relay runs and gets its modes back; what the agent
 * writes arrives whole and in order; a terminal that is not read stops the relay from
 * reading (back-pressure: the agent blocks, nothing piles up in the supervisor); what the
 * agent wrote just before its pty closed is drained at the end; what the person types
 * reaches the agent. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "base/loop.h"
#include "supervisor/tty/pty_relay.h"

#define MIB (1024 * 1024)

static int on_ctl(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	loop_exit(loop, 0);
	return 0;
}

/* The "supervisor": relay AGENT_MASTER to its stdio (the user's pty) until CTL is readable. */
__attribute__((noreturn)) static void relay_child(int user_slave, int agent_master, int ctl)
{
	struct pty_relay *r = NULL;
	struct loop *loop = NULL;

	if (setsid() < 0 || ioctl(user_slave, TIOCSCTTY, 0) < 0)
		_exit(10);
	dup2(user_slave, 0);
	dup2(user_slave, 1);
	dup2(user_slave, 2);
	close(user_slave);
	if (loop_new(&loop) < 0 || pty_relay_open(&r) < 0)
		_exit(11);
	if (pty_relay_start(r, loop, agent_master, NULL) < 0)
		_exit(12);
	if (loop_add_fd(loop, ctl, EPOLLIN, on_ctl, NULL) < 0)
		_exit(13);
	if (loop_run(loop) < 0)
		_exit(14);
	(void)loop_del_fd(loop, ctl);
	pty_relay_free(r); /* drains until the agent's pty closes */
	loop_free(loop);
	_exit(0);
}

/* Read up to WANT bytes of the user's terminal within 5 s. */
static size_t read_user(int user_master, char *buf, size_t want)
{
	size_t got = 0;

	while (got < want) {
		struct pollfd p = {.fd = user_master, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, 5000) != 1)
			break;
		n = read(user_master, buf + got, want - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

static void test_relay_is_raw_bounded_whole_and_drained(void **state)
{
	int user_master, user_slave, agent_master, agent_slave, ctl[2], status;
	struct termios before, during, after, raw;
	size_t written = 0, got;
	char *buf = malloc(8 * MIB), chunk[4096];
	pid_t child;

	assert_non_null(buf);
	assert_int_equal(openpty(&user_master, &user_slave, NULL, NULL, NULL), 0);
	assert_int_equal(openpty(&agent_master, &agent_slave, NULL, NULL, NULL), 0);
	assert_int_equal(pipe2(ctl, O_CLOEXEC), 0);
	/* the agent's terminal passes bytes as they are */
	assert_int_equal(tcgetattr(agent_slave, &raw), 0);
	cfmakeraw(&raw);
	assert_int_equal(tcsetattr(agent_slave, TCSANOW, &raw), 0);
	assert_int_equal(tcgetattr(user_slave, &before), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		close(user_master);
		close(agent_slave);
		close(ctl[1]);
		relay_child(user_slave, agent_master, ctl[0]);
	}
	close(agent_master);
	close(ctl[0]);

	/* The person types: it reaches the agent (once the relay has the terminal raw). */
	for (int i = 0; i < 100; i++) {
		assert_int_equal(tcgetattr(user_slave, &during), 0);
		if (!(during.c_lflag & ICANON))
			break;
		usleep(20000);
	}
	assert_false(during.c_lflag & ICANON);
	assert_false(during.c_lflag & ISIG);
	assert_false(during.c_oflag & OPOST);
	assert_int_equal(write(user_master, "typed\x03", 6), 6);
	{
		char in[16] = "";
		struct pollfd p = {.fd = agent_slave, .events = POLLIN};
		size_t n = 0;

		while (n < 6 && poll(&p, 1, 5000) == 1) {
			ssize_t k = read(agent_slave, in + n, sizeof(in) - 1 - n);
			if (k <= 0)
				break;
			n += (size_t)k;
		}
		assert_memory_equal(in, "typed\x03", 6); /* ^C a byte: the agent's pty's to judge */
	}

	/* Nobody reads the user's terminal: the agent's writes must come to block, with what is
	 * buffered on the way (two ptys and the relay's buffer) well under a few MiB. */
	assert_int_equal(fcntl(agent_slave, F_SETFL, O_NONBLOCK), 0);
	memset(chunk, 'x', sizeof(chunk));
	while (written < 8 * MIB) {
		ssize_t n = write(agent_slave, chunk, sizeof(chunk));

		if (n > 0) {
			written += (size_t)n;
			continue;
		}
		assert_true(n < 0 && errno == EAGAIN);
		/* Blocked: does the relay make room again? Not without a reader. */
		struct pollfd p = {.fd = agent_slave, .events = POLLOUT};
		if (poll(&p, 1, 1000) == 0)
			break;
	}
	if (written >= 8 * MIB)
		fail_msg("the relay took 8 MiB the terminal never read: no back-pressure");
	print_message("# back-pressure after %zu KiB\n", written / 1024);
	assert_true(written < 2 * MIB);

	/* Now the person's terminal reads: everything arrives, in order. */
	got = read_user(user_master, buf, written);
	assert_int_equal(got, written);
	for (size_t i = 0; i < got; i++)
		if (buf[i] != 'x')
			fail_msg("byte %zu is %#x", i, (unsigned char)buf[i]);

	/* The agent writes its last words and its pty closes: they arrive before the end. */
	assert_int_equal(fcntl(agent_slave, F_SETFL, 0), 0);
	assert_int_equal(write(agent_slave, "last words", 10), 10);
	close(agent_slave);
	assert_int_equal(write(ctl[1], "q", 1), 1);
	got = read_user(user_master, buf, 10);
	assert_int_equal(got, 10);
	assert_memory_equal(buf, "last words", 10);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	/* and the user's terminal has its modes back */
	assert_int_equal(tcgetattr(user_slave, &after), 0);
	assert_int_equal(after.c_lflag, before.c_lflag);
	assert_int_equal(after.c_iflag, before.c_iflag);
	assert_int_equal(after.c_oflag, before.c_oflag);
	close(user_slave);
	close(user_master);
	close(ctl[1]);
	free(buf);
}

static void test_no_terminal_among_fds_0_to_2_means_no_relay(void **state)
{
	int status;
	pid_t child = fork();

	assert_true(child >= 0);
	if (child == 0) {
		int null = open("/dev/null", O_RDWR);
		struct pty_relay *r = NULL;

		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		_exit(pty_relay_open(&r) == -ENOTTY && r == NULL ? 0 : 1);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_relay_is_raw_bounded_whole_and_drained),
	        cmocka_unit_test(test_no_terminal_among_fds_0_to_2_means_no_relay),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
