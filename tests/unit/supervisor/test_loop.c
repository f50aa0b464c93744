/* The event loop: fds, timers in deadline order, removal from inside a handler, signals. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "supervisor/loop.h"

struct record {
	char order[16];
	int n;
	int fds[2];
};

static int on_readable(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct record *rec = userdata;
	char c;

	assert_true(events & EPOLLIN);
	assert_int_equal(read(fd, &c, 1), 1);
	rec->order[rec->n++] = c;
	if (c == 'q')
		loop_exit(loop, 7);
	return 0;
}

static void test_fd_handler_sees_data_and_exit_code_is_returned(void **state)
{
	struct loop *loop;
	struct record rec = {0};

	assert_int_equal(loop_new(&loop), 0);
	assert_int_equal(pipe2(rec.fds, O_CLOEXEC), 0);
	assert_int_equal(loop_add_fd(loop, rec.fds[0], EPOLLIN, on_readable, &rec), 0);
	assert_int_equal(loop_add_fd(loop, rec.fds[0], EPOLLIN, on_readable, &rec), -EEXIST);
	assert_int_equal(write(rec.fds[1], "abq", 3), 3);
	assert_int_equal(loop_run(loop), 7);
	assert_string_equal(rec.order, "abq");
	/* The loop runs again after loop_exit(). */
	assert_int_equal(write(rec.fds[1], "cq", 2), 2);
	assert_int_equal(loop_run(loop), 7);
	assert_string_equal(rec.order, "abqcq");
	loop_free(loop);
	close(rec.fds[0]);
	close(rec.fds[1]);
}

static int on_timer(struct loop *loop, void *userdata)
{
	struct record *rec = userdata;

	rec->order[rec->n] = (char)('0' + rec->n);
	rec->n++;
	if (rec->n == 3)
		loop_exit(loop, 0);
	return 0;
}

static int on_timer_never(struct loop *loop, void *userdata)
{
	fail_msg("a cancelled timer fired");
	return 0;
}

static void test_timers_fire_in_deadline_order_and_cancelled_ones_never(void **state)
{
	struct loop *loop;
	struct loop_timer *cancelled;
	struct record rec = {0};
	uint64_t now = loop_now_ms(), start = now;

	assert_int_equal(loop_new(&loop), 0);
	assert_int_equal(loop_add_timer(loop, now + 30, on_timer, &rec, NULL), 0);
	assert_int_equal(loop_add_timer(loop, now + 10, on_timer_never, NULL, &cancelled), 0);
	assert_int_equal(loop_add_timer(loop, now + 20, on_timer, &rec, NULL), 0);
	assert_int_equal(loop_add_timer(loop, now - 5, on_timer, &rec, NULL), 0); /* overdue */
	loop_cancel_timer(loop, cancelled);
	assert_int_equal(loop_run(loop), 0);
	assert_string_equal(rec.order, "012");
	assert_true(loop_now_ms() - start >= 30);
	loop_free(loop);
}

struct two {
	int a[2], b[2];
	int calls;
};

static int remove_other(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct two *t = userdata;

	t->calls++;
	/* Whichever runs first removes the other, whose event may be in the same batch. */
	loop_del_fd(loop, fd == t->a[0] ? t->b[0] : t->a[0]);
	loop_del_fd(loop, fd);
	loop_exit(loop, 0);
	return 0;
}

static void test_fd_removed_inside_a_handler_is_not_dispatched(void **state)
{
	struct loop *loop;
	struct two t = {0};

	assert_int_equal(loop_new(&loop), 0);
	assert_int_equal(pipe2(t.a, O_CLOEXEC), 0);
	assert_int_equal(pipe2(t.b, O_CLOEXEC), 0);
	assert_int_equal(loop_add_fd(loop, t.a[0], EPOLLIN, remove_other, &t), 0);
	assert_int_equal(loop_add_fd(loop, t.b[0], EPOLLIN, remove_other, &t), 0);
	assert_int_equal(write(t.a[1], "x", 1), 1);
	assert_int_equal(write(t.b[1], "x", 1), 1);
	assert_int_equal(loop_run(loop), 0);
	assert_int_equal(t.calls, 1);
	assert_int_equal(loop_del_fd(loop, t.a[0]), -ENOENT);
	loop_free(loop);
	for (int i = 0; i < 2; i++) {
		close(t.a[i]);
		close(t.b[i]);
	}
}

static int on_signal(struct loop *loop, int sig, void *userdata)
{
	*(int *)userdata = sig;
	loop_exit(loop, 0);
	return 0;
}

static void test_signals_arrive_through_the_loop(void **state)
{
	struct loop *loop;
	sigset_t set;
	int got = 0;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	assert_int_equal(loop_new(&loop), 0);
	assert_int_equal(loop_add_signals(loop, &set, on_signal, &got), 0);
	assert_int_equal(kill(getpid(), SIGUSR1), 0);
	assert_int_equal(loop_run(loop), 0);
	assert_int_equal(got, SIGUSR1);
	loop_free(loop);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

static int failing(struct loop *loop, void *userdata)
{
	return -EPIPE;
}

static void test_a_failing_handler_stops_the_loop_with_its_error(void **state)
{
	struct loop *loop;

	assert_int_equal(loop_new(&loop), 0);
	assert_int_equal(loop_add_timer(loop, loop_now_ms(), failing, NULL, NULL), 0);
	assert_int_equal(loop_run(loop), -EPIPE);
	loop_free(loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_fd_handler_sees_data_and_exit_code_is_returned),
	        cmocka_unit_test(test_timers_fire_in_deadline_order_and_cancelled_ones_never),
	        cmocka_unit_test(test_fd_removed_inside_a_handler_is_not_dispatched),
	        cmocka_unit_test(test_signals_arrive_through_the_loop),
	        cmocka_unit_test(test_a_failing_handler_stops_the_loop_with_its_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
