/* bench_loop: what registering fds and timers costs the supervisor's loop as the count grows.
 * With 1000 proxy tunnels the loop holds thousands of fds and idle timers; each operation
 * must stay cheap however many others are registered. */
#include "tests/bench/bench.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "base/loop.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int never_fd(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	return 0;
}

static int never_timer(struct loop *loop, void *userdata)
{
	return 0;
}

static int count_timer(struct loop *loop, void *userdata)
{
	int *left = userdata;

	if (--*left == 0)
		loop_exit(loop, 0);
	return 0;
}

/* A fixed-seed shuffle so that runs compare like with like. */
static void shuffle(int *v, int n, unsigned *seed)
{
	for (int i = n - 1; i > 0; i--) {
		int j = rand_r(seed) % (i + 1), t = v[i];

		v[i] = v[j];
		v[j] = t;
	}
}

static double per_op_ns(uint64_t t0, uint64_t t1, int n)
{
	return (double)(t1 - t0) / n;
}

static void bench_fds(int n)
{
	struct loop *loop = NULL;
	int *fds = calloc((size_t)n, sizeof(int)), *order = calloc((size_t)n, sizeof(int));
	int opened = 0;
	uint64_t t0, t1, t2, t3;
	unsigned seed = 1;

	if (!fds || !order || loop_new(&loop) < 0)
		goto out;
	for (; opened < n; opened++) {
		fds[opened] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (fds[opened] < 0) {
			printf("fds x%d: not measured (eventfd: %s)\n", n, strerror(errno));
			goto out;
		}
		order[opened] = opened;
	}
	shuffle(order, n, &seed);
	t0 = now_ns();
	for (int i = 0; i < n; i++)
		if (loop_add_fd(loop, fds[i], EPOLLIN, never_fd, NULL) < 0)
			abort();
	t1 = now_ns();
	for (int i = 0; i < n; i++)
		if (loop_mod_fd(loop, fds[order[i]], EPOLLIN | EPOLLOUT) < 0)
			abort();
	t2 = now_ns();
	/* In the order they were added: the oldest connections close first. */
	for (int i = 0; i < n; i++)
		if (loop_del_fd(loop, fds[i]) < 0)
			abort();
	t3 = now_ns();
	printf("fds x%-5d: add %.2f µs, mod %.2f µs, del %.2f µs per fd (%.1f ms in all)\n", n,
	       per_op_ns(t0, t1, n) / 1e3, per_op_ns(t1, t2, n) / 1e3, per_op_ns(t2, t3, n) / 1e3,
	       (double)(t3 - t0) / 1e6);
out:
	loop_free(loop);
	for (int i = 0; i < opened; i++)
		close(fds[i]);
	free(fds);
	free(order);
}

static void bench_timers(int n)
{
	struct loop *loop = NULL;
	struct loop_timer **timers = calloc((size_t)n, sizeof(*timers));
	int *order = calloc((size_t)n, sizeof(int)), left = n;
	uint64_t t0, t1, t2, t3, t4, base = loop_now_ms() + 3600 * 1000;
	unsigned seed = 2;

	if (!timers || !order || loop_new(&loop) < 0)
		goto out;
	for (int i = 0; i < n; i++)
		order[i] = i;
	shuffle(order, n, &seed);
	/* Idle timeouts of live connections: deadlines in the future, in no particular order. */
	t0 = now_ns();
	for (int i = 0; i < n; i++)
		if (loop_add_timer(loop, base + (uint64_t)order[i], never_timer, NULL, &timers[i]) <
		    0)
			abort();
	t1 = now_ns();
	shuffle(order, n, &seed);
	for (int i = 0; i < n; i++)
		loop_cancel_timer(loop, timers[order[i]]);
	t2 = now_ns();
	/* Then N timers already due, fired by the loop. */
	for (int i = 0; i < n; i++)
		if (loop_add_timer(loop, (uint64_t)order[i], count_timer, &left, NULL) < 0)
			abort();
	t3 = now_ns();
	if (loop_run(loop) < 0 || left != 0)
		abort();
	t4 = now_ns();
	printf("timers x%-5d: add %.2f µs, cancel %.2f µs, add due %.2f µs + fire %.2f µs per "
	       "timer (%.1f ms in all)\n",
	       n, per_op_ns(t0, t1, n) / 1e3, per_op_ns(t1, t2, n) / 1e3,
	       per_op_ns(t2, t3, n) / 1e3, per_op_ns(t3, t4, n) / 1e3, (double)(t4 - t0) / 1e6);
out:
	loop_free(loop);
	free(timers);
	free(order);
}

void bench_loop(void)
{
	static const int sizes[] = {100, 1000, 10000};
	struct rlimit rl;

	/* 10000 eventfds need the soft limit raised toward the hard one. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		bench_fds(sizes[i]);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		bench_timers(sizes[i]);
}
