/* The event loop: fds, timers in deadline order, removal from inside a handler, signals; and at
 * scale: thousands of fds and timers, fd numbers reused inside a batch, timers cancelled and
 * added from timer callbacks. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "base/loop.h"

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

static int on_readable_never(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	fail_msg("the handler a registration was handed over from was called");
	return 0;
}

/* loop_set_fd() hands a registration over (one MOD): only the new handler is called, also for
 * bytes that were waiting before the hand-over (reported at once, as after an add); on an fd
 * not registered it registers it. */
static void test_a_registration_handed_over_calls_only_the_new_handler(void **state)
{
	struct loop *loop;
	struct record rec = {0};
	int other[2];

	assert_int_equal(loop_new(&loop), 0);
	assert_int_equal(pipe2(rec.fds, O_CLOEXEC), 0);
	assert_int_equal(pipe2(other, O_CLOEXEC), 0);
	/* One byte: edge-triggered, the handler reads one byte per event. */
	assert_int_equal(write(rec.fds[1], "q", 1), 1);
	assert_int_equal(loop_add_fd(loop, rec.fds[0], EPOLLIN, on_readable_never, NULL), 0);
	assert_int_equal(loop_set_fd(loop, rec.fds[0], EPOLLIN | EPOLLET, on_readable, &rec), 0);
	assert_int_equal(loop_run(loop), 7);
	assert_string_equal(rec.order, "q");
	assert_int_equal(loop_set_fd(loop, other[0], EPOLLIN, on_readable, &rec), 0);
	assert_int_equal(write(other[1], "q", 1), 1);
	assert_int_equal(loop_run(loop), 7);
	assert_string_equal(rec.order, "qq");
	assert_int_equal(loop_set_fd(loop, other[0], EPOLLIN, NULL, NULL), -EINVAL);
	loop_free(loop);
	for (int i = 0; i < 2; i++) {
		close(rec.fds[i]);
		close(other[i]);
	}
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

/* ---- many fds -------------------------------------------------------------------------- */

/* Raises the soft RLIMIT_NOFILE toward the hard one and says how many fds a test may open. */
static int fd_budget(int want)
{
	struct rlimit rl;

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	}
	/* Leave room for what cmocka, the loop and the runner hold. */
	if (rl.rlim_cur != RLIM_INFINITY && (rlim_t)want + 64 > rl.rlim_cur)
		want = (int)rl.rlim_cur - 64;
	return want;
}

struct many {
	int *fds;
	int n;
	unsigned char *seen; /* calls per fd number */
	unsigned char *gone; /* fd numbers deleted: their handler must not run */
	int calls, want;
	uint32_t need_events;
};

static int on_many(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct many *m = userdata;
	uint64_t v;

	assert_false(m->gone[fd]);
	assert_true((events & m->need_events) == m->need_events);
	if (events & EPOLLIN)
		assert_int_equal(read(fd, &v, sizeof(v)), sizeof(v));
	m->seen[fd]++;
	if (++m->calls == m->want)
		loop_exit(loop, 0);
	return 0;
}

static void test_thousands_of_fds_each_dispatched_modified_and_deleted(void **state)
{
	struct loop *loop;
	struct many m = {0};
	int max_fd = 0;
	uint64_t one = 1;

	m.n = fd_budget(3000);
	assert_true(m.n >= 1000);
	m.fds = calloc((size_t)m.n, sizeof(int));
	assert_non_null(m.fds);
	assert_int_equal(loop_new(&loop), 0);
	for (int i = 0; i < m.n; i++) {
		m.fds[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		assert_true(m.fds[i] >= 0);
		if (m.fds[i] > max_fd)
			max_fd = m.fds[i];
	}
	m.seen = calloc((size_t)max_fd + 1, 1);
	m.gone = calloc((size_t)max_fd + 1, 1);
	assert_non_null(m.seen);
	assert_non_null(m.gone);
	for (int i = 0; i < m.n; i++) {
		assert_int_equal(loop_add_fd(loop, m.fds[i], EPOLLIN, on_many, &m), 0);
		assert_int_equal(write(m.fds[i], &one, sizeof(one)), sizeof(one));
	}
	assert_int_equal(loop_add_fd(loop, m.fds[m.n / 2], EPOLLIN, on_many, &m), -EEXIST);

	/* Every fd becomes readable: each handler runs exactly once. */
	m.want = m.n;
	m.need_events = EPOLLIN;
	assert_int_equal(loop_run(loop), 0);
	for (int i = 0; i < m.n; i++)
		assert_int_equal(m.seen[m.fds[i]], 1);

	/* Delete every other one, switch the rest to writability: only those run. */
	for (int i = 0; i < m.n; i += 2) {
		assert_int_equal(loop_del_fd(loop, m.fds[i]), 0);
		assert_int_equal(loop_del_fd(loop, m.fds[i]), -ENOENT);
		assert_int_equal(loop_mod_fd(loop, m.fds[i], EPOLLIN), -ENOENT);
		m.gone[m.fds[i]] = 1;
	}
	for (int i = 1; i < m.n; i += 2)
		assert_int_equal(loop_mod_fd(loop, m.fds[i], EPOLLOUT), 0);
	memset(m.seen, 0, (size_t)max_fd + 1);
	m.calls = 0;
	m.want = m.n / 2;
	m.need_events = EPOLLOUT;
	assert_int_equal(loop_run(loop), 0);
	for (int i = 1; i < m.n; i += 2)
		assert_int_equal(m.seen[m.fds[i]], 1);

	/* Numbers that were never registered, or are out of any table. */
	assert_int_equal(loop_del_fd(loop, -1), -ENOENT);
	assert_int_equal(loop_del_fd(loop, 1 << 30), -ENOENT);
	assert_int_equal(loop_mod_fd(loop, 1 << 30, EPOLLIN), -ENOENT);
	assert_int_equal(loop_add_fd(loop, -1, EPOLLIN, on_many, &m), -EINVAL);
	/* Not an open fd: epoll refuses it before any table grows to that size. */
	assert_int_equal(loop_add_fd(loop, (1 << 30) - 1, EPOLLIN, on_many, &m), -EBADF);

	loop_free(loop);
	for (int i = 0; i < m.n; i++)
		close(m.fds[i]);
	free(m.fds);
	free(m.seen);
	free(m.gone);
}

/* ---- deletion and fd number reuse inside one batch ------------------------------------- */

enum { BATCH = 32 }; /* below the loop's 64 events per epoll_wait: one batch */

struct reuse {
	int fds[BATCH];
	int old_calls, new_calls;
	bool reused[BATCH];
};

static int on_reused(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct reuse *r = userdata;
	uint64_t v;

	assert_int_equal(read(fd, &v, sizeof(v)), sizeof(v));
	assert_int_equal(v, 2); /* the new fd's own write, not the old one's */
	if (++r->new_calls == BATCH - 1)
		loop_exit(loop, 0);
	return 0;
}

static int on_first_of_batch(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct reuse *r = userdata;
	uint64_t two = 2;

	r->old_calls++;
	/* Whichever runs first tears every other one down while their events are still in this
	 * batch, closes them and registers new fds that get the same numbers. */
	for (int i = 0; i < BATCH; i++) {
		int nfd;

		if (r->fds[i] == fd)
			continue;
		assert_int_equal(loop_del_fd(loop, r->fds[i]), 0);
		close(r->fds[i]);
		nfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		assert_int_equal(nfd, r->fds[i]);
		assert_int_equal(loop_add_fd(loop, nfd, EPOLLIN, on_reused, r), 0);
		assert_int_equal(write(nfd, &two, sizeof(two)), sizeof(two));
		r->reused[i] = true;
	}
	/* Its own registration goes too. */
	assert_int_equal(loop_del_fd(loop, fd), 0);
	assert_int_equal(loop_del_fd(loop, fd), -ENOENT);
	return 0;
}

static void test_fds_deleted_and_reused_inside_a_batch_are_not_dispatched_stale(void **state)
{
	struct loop *loop;
	struct reuse r = {0};
	uint64_t one = 1;
	int own = -1;

	assert_int_equal(loop_new(&loop), 0);
	for (int i = 0; i < BATCH; i++) {
		r.fds[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		assert_true(r.fds[i] >= 0);
		assert_int_equal(loop_add_fd(loop, r.fds[i], EPOLLIN, on_first_of_batch, &r), 0);
		assert_int_equal(write(r.fds[i], &one, sizeof(one)), sizeof(one));
	}
	assert_int_equal(loop_run(loop), 0);
	assert_int_equal(r.old_calls, 1);
	assert_int_equal(r.new_calls, BATCH - 1);
	for (int i = 0; i < BATCH; i++) {
		if (!r.reused[i])
			own = i;
	}
	assert_true(own >= 0);
	assert_int_equal(loop_del_fd(loop, r.fds[own]), -ENOENT);
	for (int i = 0; i < BATCH; i++)
		if (i != own)
			assert_int_equal(loop_del_fd(loop, r.fds[i]), 0);
	loop_free(loop);
	for (int i = 0; i < BATCH; i++)
		close(r.fds[i]);
}

/* ---- many timers ----------------------------------------------------------------------- */

struct fired {
	int *order; /* index given at loop_add_timer, in firing order */
	int n;
};

struct tag {
	struct fired *f;
	int index;
};

static int on_tagged(struct loop *loop, void *userdata)
{
	struct tag *t = userdata;

	t->f->order[t->f->n++] = t->index;
	return 0;
}

static int on_exit_timer(struct loop *loop, void *userdata)
{
	loop_exit(loop, 0);
	return 0;
}

static void test_thousands_of_timers_fire_in_deadline_order_fifo_on_ties(void **state)
{
	enum { N = 5000 };
	struct loop *loop;
	struct loop_timer **handles = calloc(N, sizeof(*handles));
	struct tag *tags = calloc(N, sizeof(*tags));
	uint64_t *deadline = calloc(N, sizeof(*deadline));
	bool *cancelled = calloc(N, sizeof(*cancelled));
	struct fired f = {.order = calloc(N, sizeof(int))};
	uint64_t base = loop_now_ms() - 2 * N; /* all due: one round fires them */
	unsigned seed = 42;
	int expect = 0;

	assert_non_null(handles);
	assert_non_null(tags);
	assert_non_null(deadline);
	assert_non_null(cancelled);
	assert_non_null(f.order);
	assert_int_equal(loop_new(&loop), 0);
	/* Random deadlines with many ties (N values over N/4 distinct deadlines). */
	for (int i = 0; i < N; i++) {
		deadline[i] = base + (uint64_t)(rand_r(&seed) % (N / 4));
		tags[i] = (struct tag){.f = &f, .index = i};
		assert_int_equal(
		        loop_add_timer(loop, deadline[i], on_tagged, &tags[i], &handles[i]), 0);
	}
	/* Cancel a spread of them, first, last and in the middle of the heap. */
	for (int i = 0; i < N; i++) {
		if (i % 7 == 3 || i == 0 || i == N - 1) {
			loop_cancel_timer(loop, handles[i]);
			cancelled[i] = true;
		} else {
			expect++;
		}
	}
	assert_int_equal(loop_add_timer(loop, base + N, on_exit_timer, NULL, NULL), 0);
	assert_int_equal(loop_run(loop), 0);
	assert_int_equal(f.n, expect);
	for (int k = 0; k < f.n; k++) {
		int i = f.order[k];

		assert_false(cancelled[i]);
		if (k > 0) {
			int prev = f.order[k - 1];

			assert_true(deadline[prev] <= deadline[i]);
			if (deadline[prev] == deadline[i])
				assert_true(prev < i); /* added first, fired first */
		}
	}
	loop_free(loop);
	free(handles);
	free(tags);
	free(deadline);
	free(cancelled);
	free(f.order);
}

/* The timerfd follows the earliest deadline as it is cancelled and replaced. */
static void test_cancelling_the_earliest_timer_rearms_for_the_next(void **state)
{
	struct loop *loop;
	struct loop_timer *early, *same;
	struct record rec = {0};
	uint64_t start = loop_now_ms();

	assert_int_equal(loop_new(&loop), 0);
	assert_int_equal(loop_add_timer(loop, start + 40, on_timer, &rec, NULL), 0);
	assert_int_equal(loop_add_timer(loop, start + 5, on_timer_never, NULL, &early), 0);
	assert_int_equal(loop_add_timer(loop, start + 20, on_timer_never, NULL, &same), 0);
	loop_cancel_timer(loop, early);
	/* Replaced by one at the same deadline: the timerfd need not change, but must fire. */
	loop_cancel_timer(loop, same);
	assert_int_equal(loop_add_timer(loop, start + 20, on_timer, &rec, NULL), 0);
	assert_int_equal(loop_add_timer(loop, start + 60, on_timer, &rec, NULL), 0);
	assert_int_equal(loop_run(loop), 0);
	assert_string_equal(rec.order, "012");
	assert_true(loop_now_ms() - start >= 60);
	loop_free(loop);
}

/* Cancelling the earliest timer leaves the timerfd set to its deadline (no timerfd_settime
 * per cancel): that early expiry must fire nothing, and the later timers still fire, each at
 * or after its own deadline. */
struct punctual {
	uint64_t deadline;
	int fired;
	bool early;
};

static int on_punctual(struct loop *loop, void *userdata)
{
	struct punctual *t = userdata;

	t->fired++;
	t->early |= loop_now_ms() < t->deadline;
	loop_exit(loop, 0);
	return 0;
}

static void test_a_cancelled_earliest_deadline_fires_nothing_early(void **state)
{
	struct loop *loop;
	struct loop_timer *early;
	uint64_t start = loop_now_ms();
	struct punctual late = {.deadline = start + 50}, later = {.deadline = start + 80};

	assert_int_equal(loop_new(&loop), 0);
	assert_int_equal(loop_add_timer(loop, start + 5, on_timer_never, NULL, &early), 0);
	assert_int_equal(loop_add_timer(loop, late.deadline, on_punctual, &late, NULL), 0);
	loop_cancel_timer(loop, early);
	assert_int_equal(loop_run(loop), 0);
	assert_int_equal(late.fired, 1);
	assert_false(late.early);
	/* And with nothing left but a stale setting, a new later timer is still served. */
	assert_int_equal(loop_add_timer(loop, later.deadline, on_punctual, &later, NULL), 0);
	assert_int_equal(loop_run(loop), 0);
	assert_int_equal(later.fired, 1);
	assert_false(later.early);
	loop_free(loop);
}

/* loop_exit() from a timer leaves the other due ones (same deadline) for the next run. */
static int on_exit_first(struct loop *loop, void *userdata)
{
	struct record *rec = userdata;

	rec->order[rec->n++] = 'x';
	loop_exit(loop, 3);
	return 0;
}

static int on_exit_second(struct loop *loop, void *userdata)
{
	struct record *rec = userdata;

	rec->order[rec->n++] = 'y';
	loop_exit(loop, 4);
	return 0;
}

static void test_due_timers_left_at_exit_fire_on_the_next_run(void **state)
{
	struct loop *loop;
	struct record rec = {0};
	uint64_t d = loop_now_ms() + 5;

	assert_int_equal(loop_new(&loop), 0);
	assert_int_equal(loop_add_timer(loop, d, on_exit_first, &rec, NULL), 0);
	assert_int_equal(loop_add_timer(loop, d, on_exit_second, &rec, NULL), 0);
	assert_int_equal(loop_run(loop), 3);
	assert_string_equal(rec.order, "x");
	/* The timerfd fired and was read; it must be set again for the one left. */
	assert_int_equal(loop_run(loop), 4);
	assert_string_equal(rec.order, "xy");
	loop_free(loop);
}

struct canceller {
	struct loop_timer *victim, *self;
	char order[8];
	int n;
};

static int on_victim(struct loop *loop, void *userdata)
{
	fail_msg("a timer cancelled by another in the same round fired");
	return 0;
}

static int on_note(struct loop *loop, void *userdata)
{
	struct canceller *c = userdata;

	c->order[c->n++] = 'b';
	loop_exit(loop, 0);
	return 0;
}

static int on_cancel_victim(struct loop *loop, void *userdata)
{
	struct canceller *c = userdata;

	c->order[c->n++] = 'a';
	loop_cancel_timer(loop, c->victim);
	/* Cancelling itself while it runs changes nothing: the loop frees it afterwards. */
	loop_cancel_timer(loop, c->self);
	return 0;
}

static void test_a_timer_cancels_another_due_in_the_same_round(void **state)
{
	struct loop *loop;
	struct canceller c = {0};
	uint64_t now = loop_now_ms();

	assert_int_equal(loop_new(&loop), 0);
	/* All three are due when the round starts; the first removes the second. */
	assert_int_equal(loop_add_timer(loop, now - 3, on_cancel_victim, &c, &c.self), 0);
	assert_int_equal(loop_add_timer(loop, now - 2, on_victim, NULL, &c.victim), 0);
	assert_int_equal(loop_add_timer(loop, now - 2, on_note, &c, NULL), 0);
	assert_int_equal(loop_run(loop), 0);
	assert_string_equal(c.order, "ab");
	loop_free(loop);
}

struct chain {
	char order[16];
	int n;
	uint64_t start;
};

static int on_chain_late(struct loop *loop, void *userdata)
{
	struct chain *c = userdata;

	c->order[c->n++] = 'L';
	assert_true(loop_now_ms() - c->start >= 25);
	loop_exit(loop, 0);
	return 0;
}

static int on_chain_soon(struct loop *loop, void *userdata)
{
	struct chain *c = userdata;

	c->order[c->n++] = 's';
	return 0;
}

static int on_chain_first(struct loop *loop, void *userdata)
{
	struct chain *c = userdata;

	c->order[c->n++] = 'f';
	/* Added from a callback: one later, then one "at 0" (run soon) that comes before it. */
	assert_int_equal(loop_add_timer(loop, loop_now_ms() + 25, on_chain_late, c, NULL), 0);
	assert_int_equal(loop_add_timer(loop, 0, on_chain_soon, c, NULL), 0);
	assert_int_equal(loop_add_timer(loop, 0, on_chain_soon, c, NULL), 0);
	return 0;
}

static void test_timers_added_from_a_timer_callback_fire(void **state)
{
	struct loop *loop;
	struct chain c = {.start = loop_now_ms()};

	assert_int_equal(loop_new(&loop), 0);
	assert_int_equal(loop_add_timer(loop, c.start + 5, on_chain_first, &c, NULL), 0);
	assert_int_equal(loop_run(loop), 0);
	assert_string_equal(c.order, "fssL");
	loop_free(loop);
}

struct prep {
	struct loop *loop;
	unsigned a, b;
	int fd;          /* written by the timer: a round with work for the fd handler */
	bool seen_ready; /* the fd handler ran; a's next call must follow it */
	bool a_after_fd;
};

static void on_prepare_a(struct loop *loop, void *userdata)
{
	struct prep *p = userdata;

	if (p->seen_ready)
		p->a_after_fd = true;
	p->a++;
}

/* Runs once, then removes itself: the hook after it still runs in that same round. */
static void on_prepare_b(struct loop *loop, void *userdata)
{
	struct prep *p = userdata;

	p->b++;
	loop_del_prepare(loop, on_prepare_b, p);
}

static int on_prep_readable(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct prep *p = userdata;
	char c;

	assert_int_equal(read(fd, &c, 1), 1);
	p->seen_ready = true;
	assert_int_equal(loop_add_timer(loop, 0, on_exit_timer, NULL, NULL), 0);
	return 0;
}

static int on_prep_timer(struct loop *loop, void *userdata)
{
	struct prep *p = userdata;

	assert_int_equal(write(p->fd, "x", 1), 1);
	return 0;
}

/* Hooks run before every wait: after the handlers of the round before it. */
static void test_prepare_hooks_run_before_each_wait(void **state)
{
	struct loop *loop;
	struct prep p = {0};
	int fds[2];

	assert_int_equal(pipe(fds), 0);
	p.fd = fds[1];
	assert_int_equal(loop_new(&loop), 0);
	assert_int_equal(loop_add_prepare(loop, on_prepare_b, &p), 0);
	assert_int_equal(loop_add_prepare(loop, on_prepare_a, &p), 0);
	assert_int_equal(loop_add_fd(loop, fds[0], EPOLLIN, on_prep_readable, &p), 0);
	assert_int_equal(loop_add_timer(loop, 0, on_prep_timer, &p, NULL), 0);
	assert_int_equal(loop_run(loop), 0);
	assert_int_equal(p.b, 1);
	assert_true(p.a >= 3); /* first wait, after the timer, after the fd */
	assert_true(p.a_after_fd);
	for (int i = 0; i < LOOP_MAX_PREPARE - 1; i++)
		assert_int_equal(loop_add_prepare(loop, on_prepare_b, &p), 0);
	assert_int_equal(loop_add_prepare(loop, on_prepare_b, &p), -ENOSPC);
	loop_free(loop);
	close(fds[0]);
	close(fds[1]);
}

/* A loop freed with fds and timers still registered frees them (checked under ASan/valgrind). */
static void test_free_with_registrations_left(void **state)
{
	struct loop *loop;
	int efd = eventfd(0, EFD_CLOEXEC);

	assert_true(efd >= 0);
	assert_int_equal(loop_new(&loop), 0);
	assert_int_equal(loop_add_fd(loop, efd, EPOLLIN, on_many, NULL), 0);
	for (int i = 0; i < 100; i++)
		assert_int_equal(loop_add_timer(loop, loop_now_ms() + 100000 + (uint64_t)i,
		                                on_timer_never, NULL, NULL),
		                 0);
	loop_free(loop);
	close(efd);
}

/* ---- other threads: the loop's lock ---------------------------------------------------- */

struct locker {
	struct loop *loop;
	int rounds;       /* lock and unlock this many times, doing nothing for the loop */
	int exit_code;    /* then loop_exit() with it, under the lock (0: not) */
	bool add_timer;   /* or add a timer due at once, whose callback exits with exit_code */
	int prepared;     /* the prepare hook's count */
	uint64_t wakeups; /* loop_wakeups() seen under the lock, after the rounds */
	bool cancel;
};

static void count_prepare(struct loop *loop, void *userdata)
{
	struct locker *l = userdata;

	l->prepared++;
}

static int exit_from_timer(struct loop *loop, void *userdata)
{
	struct locker *l = userdata;

	loop_exit(loop, l->exit_code);
	return 0;
}

static int exit_99(struct loop *loop, void *userdata)
{
	loop_exit(loop, 99); /* the loop was never woken: the test's bound */
	return 0;
}

static void *locker_main(void *userdata)
{
	struct locker *l = userdata;
	struct loop_timer *t;

	for (int i = 0; i < l->rounds; i++) {
		if (loop_thread_lock(l->loop, &l->cancel) < 0)
			return NULL;
		loop_thread_unlock(l->loop);
	}
	if (loop_thread_lock(l->loop, &l->cancel) < 0)
		return NULL;
	l->wakeups = loop_wakeups(l->loop);
	if (l->add_timer)
		assert_int_equal(loop_add_timer(l->loop, 0, exit_from_timer, l, &t), 0);
	else
		loop_exit(l->loop, l->exit_code);
	loop_thread_unlock(l->loop);
	return NULL;
}

/* A thread that takes the lock while the loop sleeps runs the prepare hooks itself and leaves
 * the loop asleep (no wake-up for work that reached the kernel on its own), wakes it when it
 * must stop (loop_exit), and a timer it adds fires on the loop's thread. */
static void test_a_thread_with_the_lock_wakes_the_loop_only_when_it_must(void **state)
{
	for (int add_timer = 0; add_timer <= 1; add_timer++) {
		struct loop *loop;
		struct loop_timer *bound;
		struct locker l = {
		        .rounds = 100, .exit_code = 5 + add_timer, .add_timer = add_timer};
		uint64_t bound_ms = loop_now_ms() + 20000;
		pthread_t th;

		assert_int_equal(loop_new(&loop), 0);
		l.loop = loop;
		assert_int_equal(loop_add_prepare(loop, count_prepare, &l), 0);
		assert_int_equal(loop_add_timer(loop, bound_ms, exit_99, NULL, &bound), 0);
		assert_int_equal(pthread_create(&th, NULL, locker_main, &l), 0);
		assert_int_equal(loop_run(loop), 5 + add_timer);
		/* Woken by the thread, not by the bound (which would find the exit already set). */
		assert_true(loop_now_ms() < bound_ms);
		assert_int_equal(pthread_join(th, NULL), 0);
		assert_int_equal(l.wakeups, 0);     /* 100 rounds of the thread, the loop asleep */
		assert_true(l.prepared >= 100 + 1); /* the thread's rounds, the loop's first wait */
		loop_cancel_timer(loop, bound);
		loop_free(loop);
	}
}

struct busy {
	struct loop *loop;
	bool cancel;
	int done; /* set by the loop's thread when it has had its rounds */
	long cycles;
	int rounds;
};

#define BUSY_CAP 3000000L

static void *busy_main(void *userdata)
{
	struct busy *b = userdata;

	while (!__atomic_load_n(&b->done, __ATOMIC_ACQUIRE) && b->cycles < BUSY_CAP) {
		if (loop_thread_lock(b->loop, &b->cancel) < 0)
			break;
		b->cycles++;
		loop_thread_unlock(b->loop);
	}
	return NULL;
}

static int busy_round(struct loop *loop, void *userdata)
{
	struct busy *b = userdata;
	struct loop_timer *t;

	if (++b->rounds == 20) {
		__atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
		loop_exit(loop, 0);
		return 0;
	}
	/* The loop sleeps a little each round: the thread has the lock then. */
	return loop_add_timer(loop, loop_now_ms() + 1, busy_round, b, &t);
}

/* A thread that takes the lock again as soon as it lets go (an agent's flood of execs) does not
 * starve the loop. Counted, not timed: the loop's 20 rounds (a 1 ms sleep each, the thread has
 * the lock then) end long before the thread's cap of lock rounds (about 0.4-0.8 M rounds here,
 * of 3 M). The loop-first rule makes the bound one round of the thread per wake-up; glibc's
 * mutex alone lets the loop in too, later (0.7-1.2 M): this is a liveness check. */
static void test_a_busy_thread_does_not_starve_the_loop(void **state)
{
	struct loop *loop;
	struct loop_timer *t;
	struct busy b = {0};
	pthread_t th;

	assert_int_equal(loop_new(&loop), 0);
	b.loop = loop;
	assert_int_equal(loop_add_timer(loop, 0, busy_round, &b, &t), 0);
	assert_int_equal(pthread_create(&th, NULL, busy_main, &b), 0);
	assert_int_equal(loop_run(loop), 0);
	/* Still the lock's holder: let the thread see DONE, or wait for it and be cancelled. */
	loop_thread_cancel(loop, &b.cancel);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(b.rounds, 20);
	print_message("busy thread: %ld lock rounds while the loop made 20\n", b.cycles);
	assert_true(b.cycles < BUSY_CAP);
	loop_free(loop);
}

struct turns {
	struct loop *loop;
	bool cancel;
	int done;    /* set by the loop's thread: the thread had its turns, or the cap came */
	int next;    /* eventfd: the thread's next notification (the loop's round writes it) */
	int rounds;  /* the loop's rounds (its handler's calls) */
	long taken;  /* the thread's turns */
	long waited; /* the loop's rounds that passed while the thread waited for its turns */
};

#define TURNS     200
#define TURNS_CAP 10000

/* A handler that always has work (an fd that stays readable: a flood through the proxy), some
 * 200 us of it a round, after it made the thread's next notification. */
static int busy_fd(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct turns *t = userdata;
	uint64_t one = 1;
	struct timespec start, now;

	/* First: the thread waits for the lock before this round ends. */
	__atomic_store_n(&t->rounds, t->rounds + 1, __ATOMIC_RELEASE);
	assert_int_equal(write(t->next, &one, sizeof(one)), sizeof(one));
	clock_gettime(CLOCK_MONOTONIC, &start);
	do
		clock_gettime(CLOCK_MONOTONIC, &now);
	while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < 200000);
	if (t->taken >= TURNS || t->rounds >= TURNS_CAP) {
		__atomic_store_n(&t->done, 1, __ATOMIC_RELEASE);
		loop_exit(loop, 0);
	}
	return 0;
}

static void *turns_main(void *userdata)
{
	struct turns *t = userdata;
	uint64_t count;

	/* Blocked in a read, as the exec thread is in its RECV, until the next notification. */
	while (read(t->next, &count, sizeof(count)) == sizeof(count) &&
	       !__atomic_load_n(&t->done, __ATOMIC_ACQUIRE)) {
		int before = __atomic_load_n(&t->rounds, __ATOMIC_ACQUIRE);

		if (loop_thread_lock(t->loop, &t->cancel) < 0)
			break;
		t->waited += t->rounds - before;
		t->taken++;
		loop_thread_unlock(t->loop);
	}
	return NULL;
}

/* The other way round: a loop that always has work (its epoll_wait returns at once, sooner
 * than a woken thread runs) does not keep the lock from a thread that waits for it (the exec
 * thread: every sandbox's execs). Counted, not timed: a thread that waits is let in before the
 * loop's next round, so it waits about one round a turn; without the turns it waited some
 * hundred rounds a turn here (0.4-1.5 s with 50-200 us rounds), and had not had its 200 turns
 * when the loop had made 20000 rounds. */
static void test_a_busy_loop_does_not_starve_a_waiting_thread(void **state)
{
	struct loop *loop;
	struct turns t = {0};
	pthread_t th;
	uint64_t one = 1;
	int efd = eventfd(1, EFD_CLOEXEC); /* readable, and never read */

	assert_true(efd >= 0);
	t.next = eventfd(0, EFD_CLOEXEC);
	assert_true(t.next >= 0);
	assert_int_equal(loop_new(&loop), 0);
	t.loop = loop;
	assert_int_equal(loop_add_fd(loop, efd, EPOLLIN, busy_fd, &t), 0);
	assert_int_equal(pthread_create(&th, NULL, turns_main, &t), 0);
	assert_int_equal(loop_run(loop), 0);
	loop_thread_cancel(loop, &t.cancel);
	assert_int_equal(write(t.next, &one, sizeof(one)), sizeof(one)); /* out of its read */
	assert_int_equal(pthread_join(th, NULL), 0);
	print_message("busy loop: %ld turns of the thread in %d rounds, %ld rounds waited\n",
	              t.taken, t.rounds, t.waited);
	assert_int_equal(t.taken, TURNS);
	assert_true(t.waited < TURNS / 2);
	assert_int_equal(loop_del_fd(loop, efd), 0);
	loop_free(loop);
	close(efd);
	close(t.next);
}

static void *wait_for_lock(void *userdata)
{
	struct locker *l = userdata;

	l->exit_code = loop_thread_lock(l->loop, &l->cancel);
	return NULL;
}

/* The loop's thread holds the lock from loop_new() on; a thread waiting for it is let go by
 * loop_thread_cancel(), without the lock. */
static void test_a_thread_waiting_for_the_lock_is_cancelled(void **state)
{
	struct loop *loop;
	struct locker l = {.exit_code = 1};
	pthread_t th;

	assert_int_equal(loop_new(&loop), 0);
	l.loop = loop;
	assert_int_equal(pthread_create(&th, NULL, wait_for_lock, &l), 0);
	loop_thread_cancel(loop, &l.cancel);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(l.exit_code, -ECANCELED);
	loop_free(loop);
}

/* ---- ending a thread: loop_thread_join, a loop freed before its thread leaves ---- */

struct blocked {
	struct loop *loop;
	int fds[2];    /* the thread blocks reading fds[0] */
	bool mask_sig; /* it blocks the wake-up signal too: no signal ends its read */
	bool cancel;
	int lock_result;
	int done;
};

static int test_sig(void)
{
	return SIGRTMIN + 5;
}

static void on_test_sig(int sig)
{
	(void)sig; /* only there to end a read (no SA_RESTART) */
}

static void *blocked_main(void *userdata)
{
	struct blocked *b = userdata;
	sigset_t set;
	char c;

	sigemptyset(&set);
	sigaddset(&set, test_sig());
	pthread_sigmask(b->mask_sig ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
	/* As the exec thread in RECV: a call that returns on a signal, or when there is data. */
	while (read(b->fds[0], &c, 1) < 0 && errno == EINTR && !b->mask_sig &&
	       !__atomic_load_n(&b->cancel, __ATOMIC_ACQUIRE))
		;
	if (b->loop) {
		b->lock_result = loop_thread_lock(b->loop, &b->cancel);
		if (b->lock_result == 0)
			loop_thread_unlock(b->loop);
		loop_thread_leave(b->loop);
	}
	__atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static bool wait_done(struct blocked *b)
{
	for (int i = 0; i < 2000; i++) { /* 20 s: a bound, not a timing */
		if (__atomic_load_n(&b->done, __ATOMIC_ACQUIRE))
			return true;
		usleep(10000);
	}
	return false;
}

/* A thread in a call that a signal ends is joined; one in a call no signal ends (here: the
 * signal blocked) is given up after the bound, detached, and ends by itself later. Without the
 * bound, stopping it never returned. */
static void test_a_thread_is_joined_or_given_up_after_the_bound(void **state)
{
	struct sigaction sa = {.sa_handler = on_test_sig};

	sigfillset(&sa.sa_mask);
	assert_int_equal(sigaction(test_sig(), &sa, NULL), 0);
	for (int masked = 0; masked <= 1; masked++) {
		struct blocked b = {.mask_sig = masked};
		pthread_t th;

		assert_int_equal(pipe2(b.fds, O_CLOEXEC), 0);
		assert_int_equal(pthread_create(&th, NULL, blocked_main, &b), 0);
		__atomic_store_n(&b.cancel, true, __ATOMIC_RELEASE);
		if (!masked) {
			assert_int_equal(loop_thread_join(th, test_sig(), 20000), 0);
			assert_true(__atomic_load_n(&b.done, __ATOMIC_ACQUIRE));
		} else {
			assert_int_equal(loop_thread_join(th, test_sig(), 200), -ETIMEDOUT);
			assert_false(__atomic_load_n(&b.done, __ATOMIC_ACQUIRE));
			/* What held it returns: it leaves on its own (detached: nobody joins it).
			 */
			assert_int_equal(write(b.fds[1], "x", 1), 1);
			assert_true(wait_done(&b));
		}
		close(b.fds[0]);
		close(b.fds[1]);
	}
}

/* A thread given up on (above) may still look at the loop's lock after the loop is freed: it
 * is cancelled, not blocked, and the last to leave frees the lock (ASan: no use after free, no
 * leak). */
static void test_a_loop_freed_before_its_thread_leaves(void **state)
{
	struct blocked b = {.mask_sig = true, .lock_result = 1};
	pthread_t th;

	assert_int_equal(loop_new(&b.loop), 0);
	assert_int_equal(pipe2(b.fds, O_CLOEXEC), 0);
	loop_thread_enter(b.loop);
	assert_int_equal(pthread_create(&th, NULL, blocked_main, &b), 0);
	loop_thread_cancel(b.loop, &b.cancel);
	loop_free(b.loop);
	assert_int_equal(write(b.fds[1], "x", 1), 1);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(b.lock_result, -ECANCELED);
	close(b.fds[0]);
	close(b.fds[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_fd_handler_sees_data_and_exit_code_is_returned),
	        cmocka_unit_test(test_a_registration_handed_over_calls_only_the_new_handler),
	        cmocka_unit_test(test_prepare_hooks_run_before_each_wait),
	        cmocka_unit_test(test_timers_fire_in_deadline_order_and_cancelled_ones_never),
	        cmocka_unit_test(test_fd_removed_inside_a_handler_is_not_dispatched),
	        cmocka_unit_test(test_signals_arrive_through_the_loop),
	        cmocka_unit_test(test_a_failing_handler_stops_the_loop_with_its_error),
	        cmocka_unit_test(test_thousands_of_fds_each_dispatched_modified_and_deleted),
	        cmocka_unit_test(
	                test_fds_deleted_and_reused_inside_a_batch_are_not_dispatched_stale),
	        cmocka_unit_test(test_thousands_of_timers_fire_in_deadline_order_fifo_on_ties),
	        cmocka_unit_test(test_cancelling_the_earliest_timer_rearms_for_the_next),
	        cmocka_unit_test(test_a_cancelled_earliest_deadline_fires_nothing_early),
	        cmocka_unit_test(test_due_timers_left_at_exit_fire_on_the_next_run),
	        cmocka_unit_test(test_a_timer_cancels_another_due_in_the_same_round),
	        cmocka_unit_test(test_timers_added_from_a_timer_callback_fire),
	        cmocka_unit_test(test_free_with_registrations_left),
	        cmocka_unit_test(test_a_thread_with_the_lock_wakes_the_loop_only_when_it_must),
	        cmocka_unit_test(test_a_busy_thread_does_not_starve_the_loop),
	        cmocka_unit_test(test_a_busy_loop_does_not_starve_a_waiting_thread),
	        cmocka_unit_test(test_a_thread_waiting_for_the_lock_is_cancelled),
	        cmocka_unit_test(test_a_thread_is_joined_or_given_up_after_the_bound),
	        cmocka_unit_test(test_a_loop_freed_before_its_thread_leaves),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
