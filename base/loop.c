#include "base/loop.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"

#define MAX_EVENTS 64
/* The fd table's first size; it doubles from there, up to RLIMIT_NOFILE. */
#define FD_TABLE_MIN   64
#define TIMER_HEAP_MIN 16
/* loop_timer.idx of a timer that is not in the heap: it is being fired. */
#define TIMER_NOT_QUEUED SIZE_MAX
/* The wake-up eventfd's epoll mark (the timerfd's is NULL, an fd's its struct loop_fd). */
static char wake_mark;

struct loop_fd {
	int fd;
	loop_fd_fn fn;
	void *userdata;
	bool dead; /* removed while the current batch of events is being dispatched */
	struct loop_fd *next_dead; /* in the graveyard */
};

struct loop_timer {
	uint64_t deadline_ms;
	uint64_t seq; /* order of addition: equal deadlines fire first come, first served */
	size_t idx;   /* position in the heap, or TIMER_NOT_QUEUED */
	loop_timer_fn fn;
	void *userdata;
};

struct loop {
	int epoll_fd;
	int timer_fd;
	int signal_fd;
	loop_signal_fn signal_fn;
	void *signal_userdata;
	/* Live registrations indexed by fd number; a deleted one leaves its slot at once (so the
	 * number can be registered again) and waits in the graveyard until the batch is done. */
	struct loop_fd **fds;
	size_t fds_size;
	struct loop_fd *graveyard; /* freed after each dispatch round */
	/* A binary min-heap on (deadline_ms, seq); each timer knows its index for cancelling. */
	struct loop_timer **timers;
	size_t n_timers, timers_size;
	uint64_t timer_seq;
	/* What the timerfd was last set to, so it is only set again when the earliest deadline
	 * comes before it; timers_dispatching defers that to the end of the timer round. */
	bool armed;
	uint64_t armed_ms;
	bool timers_dispatching;
	bool exiting;
	int exit_code;
	struct {
		loop_prepare_fn fn;
		void *userdata;
	} prepare[LOOP_MAX_PREPARE];
	size_t n_prepare;
	/* The loop's lock (loop.h, "other threads"): HELD says someone runs the loop's logic; MU
	 * and CV only guard HELD and the waiters' cancel flags, never across anything slow. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool held;
	bool loop_waiting; /* the loop's thread wants it back: it goes first */
	unsigned waiting;  /* threads in loop_thread_lock() */
	unsigned handoff;  /* turns the loop's thread gives before it takes the lock back */
	int wake_fd;       /* eventfd: a thread asked the loop to look again (loop_exit) */
	unsigned threads;  /* entered and not left: they may still look at MU */
	bool freed;        /* loop_free() came before they left: the last one frees the rest */
	uint64_t wakeups;  /* epoll_wait returns */
};

uint64_t loop_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool timer_before(const struct loop_timer *a, const struct loop_timer *b)
{
	return a->deadline_ms < b->deadline_ms ||
	       (a->deadline_ms == b->deadline_ms && a->seq < b->seq);
}

static void heap_place(struct loop *loop, size_t i, struct loop_timer *t)
{
	loop->timers[i] = t;
	t->idx = i;
}

static void heap_sift_up(struct loop *loop, size_t i)
{
	struct loop_timer *t = loop->timers[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (!timer_before(t, loop->timers[parent]))
			break;
		heap_place(loop, i, loop->timers[parent]);
		i = parent;
	}
	heap_place(loop, i, t);
}

static void heap_sift_down(struct loop *loop, size_t i)
{
	struct loop_timer *t = loop->timers[i];
	size_t n = loop->n_timers;

	for (;;) {
		size_t child = 2 * i + 1;

		if (child >= n)
			break;
		if (child + 1 < n && timer_before(loop->timers[child + 1], loop->timers[child]))
			child++;
		if (!timer_before(loop->timers[child], t))
			break;
		heap_place(loop, i, loop->timers[child]);
		i = child;
	}
	heap_place(loop, i, t);
}

/* Takes the timer at I out of the heap; the caller owns it afterwards. */
static void heap_remove(struct loop *loop, size_t i)
{
	struct loop_timer *t = loop->timers[i], *last = loop->timers[--loop->n_timers];

	t->idx = TIMER_NOT_QUEUED;
	if (last == t)
		return;
	heap_place(loop, i, last);
	if (i > 0 && timer_before(last, loop->timers[(i - 1) / 2]))
		heap_sift_up(loop, i);
	else
		heap_sift_down(loop, i);
}

/* Sets the timerfd when the earliest deadline comes before what it holds (or it holds
 * nothing). A deadline that moved later (its timer cancelled: a connection's timeout, most
 * often) leaves the timerfd as it is: its one early expiry finds nothing due and sets it
 * again, which costs less than a timerfd_settime() at every cancel. */
static int arm_timer_fd(struct loop *loop)
{
	struct itimerspec its = {0};
	bool want = loop->n_timers > 0;
	uint64_t d = want ? loop->timers[0]->deadline_ms : 0;

	if (loop->timers_dispatching)
		return 0; /* the timer round sets it once at its end */
	if (!want || (loop->armed && loop->armed_ms <= d))
		return 0;
	/* TFD_TIMER_ABSTIME with 0 would disarm; a deadline in the past fires at once. */
	its.it_value.tv_sec = (time_t)(d / 1000);
	its.it_value.tv_nsec = (long)(d % 1000) * 1000000;
	if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
		its.it_value.tv_nsec = 1;
	/* On failure the timerfd keeps its old setting, and so does our record of it. */
	if (timerfd_settime(loop->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		return -errno;
	loop->armed = true;
	loop->armed_ms = d;
	return 0;
}

static struct loop_fd *find_fd(struct loop *loop, int fd)
{
	if (fd < 0 || (size_t)fd >= loop->fds_size)
		return NULL;
	return loop->fds[fd];
}

/* Makes room for slot FD, which epoll has already accepted as an open fd. */
static int reserve_fd_slot(struct loop *loop, int fd)
{
	size_t want = loop->fds_size ? loop->fds_size : FD_TABLE_MIN;
	struct loop_fd **p;
	struct rlimit rl;

	if ((size_t)fd < loop->fds_size)
		return 0;
	while (want <= (size_t)fd)
		want *= 2;
	/* Open fds are below the soft RLIMIT_NOFILE (unless it was lowered after they were opened):
	 * doubling need not go past it. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    want > rl.rlim_cur)
		want = (size_t)rl.rlim_cur > (size_t)fd ? (size_t)rl.rlim_cur : (size_t)fd + 1;
	p = reallocarray(loop->fds, want, sizeof(*p));
	if (!p)
		return -ENOMEM;
	memset(p + loop->fds_size, 0, (want - loop->fds_size) * sizeof(*p));
	loop->fds = p;
	loop->fds_size = want;
	return 0;
}

int loop_new(struct loop **ret)
{
	struct loop *loop = calloc(1, sizeof(*loop));
	struct epoll_event ev = {.events = EPOLLIN};

	if (!loop)
		return -ENOMEM;
	/* The creating thread runs the loop: it holds the lock from now on. */
	pthread_mutex_init(&loop->mu, NULL);
	pthread_cond_init(&loop->cv, NULL);
	loop->held = true;
	loop->signal_fd = -EBADF;
	loop->wake_fd = -EBADF;
	loop->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	loop->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	loop->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (loop->epoll_fd < 0 || loop->timer_fd < 0 || loop->wake_fd < 0)
		goto fail;
	ev.data.ptr = NULL; /* NULL marks the timerfd */
	if (epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, loop->timer_fd, &ev) < 0)
		goto fail;
	ev.data.ptr = &wake_mark;
	if (epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, loop->wake_fd, &ev) < 0)
		goto fail;
	*ret = loop;
	return 0;
fail:;
	int r = -errno;
	loop_free(loop);
	return r;
}

static void free_graveyard(struct loop *loop)
{
	while (loop->graveyard) {
		struct loop_fd *next = loop->graveyard->next_dead;

		free(loop->graveyard);
		loop->graveyard = next;
	}
}

/* What is left of a freed loop once no thread may look at it. */
static void free_lock(struct loop *loop)
{
	pthread_cond_destroy(&loop->cv);
	pthread_mutex_destroy(&loop->mu);
	free(loop);
}

void loop_free(struct loop *loop)
{
	bool last;

	if (!loop)
		return;
	for (size_t i = 0; i < loop->fds_size; i++)
		free(loop->fds[i]);
	free(loop->fds);
	free_graveyard(loop);
	for (size_t i = 0; i < loop->n_timers; i++)
		free(loop->timers[i]);
	free(loop->timers);
	cl_closep(&loop->epoll_fd);
	cl_closep(&loop->timer_fd);
	cl_closep(&loop->signal_fd);
	cl_closep(&loop->wake_fd);
	pthread_mutex_lock(&loop->mu);
	loop->freed = true;
	last = loop->threads == 0;
	pthread_mutex_unlock(&loop->mu);
	if (last)
		free_lock(loop);
}

int loop_add_fd(struct loop *loop, int fd, uint32_t events, loop_fd_fn fn, void *userdata)
{
	struct loop_fd *f;
	struct epoll_event ev = {.events = events};
	int r;

	if (fd < 0 || !fn)
		return -EINVAL;
	if (find_fd(loop, fd))
		return -EEXIST;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->fd = fd;
	f->fn = fn;
	f->userdata = userdata;
	/* Dispatch finds the entry through the event itself, without a lookup. */
	ev.data.ptr = f;
	if (epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		r = -errno;
		free(f);
		return r;
	}
	/* Only now is FD known to be open, so a bogus huge number cannot size the table. */
	r = reserve_fd_slot(loop, fd);
	if (r < 0) {
		epoll_ctl(loop->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
		free(f);
		return r;
	}
	loop->fds[fd] = f;
	return 0;
}

int loop_mod_fd(struct loop *loop, int fd, uint32_t events)
{
	struct loop_fd *f = find_fd(loop, fd);
	struct epoll_event ev = {.events = events};

	if (!f)
		return -ENOENT;
	ev.data.ptr = f;
	if (epoll_ctl(loop->epoll_fd, EPOLL_CTL_MOD, fd, &ev) < 0)
		return -errno;
	return 0;
}

int loop_set_fd(struct loop *loop, int fd, uint32_t events, loop_fd_fn fn, void *userdata)
{
	struct loop_fd *f = find_fd(loop, fd);
	struct epoll_event ev = {.events = events};

	if (!f)
		return loop_add_fd(loop, fd, events, fn, userdata);
	if (!fn)
		return -EINVAL;
	ev.data.ptr = f;
	if (epoll_ctl(loop->epoll_fd, EPOLL_CTL_MOD, fd, &ev) < 0)
		return -errno;
	f->fn = fn;
	f->userdata = userdata;
	return 0;
}

int loop_del_fd(struct loop *loop, int fd)
{
	struct loop_fd *f = find_fd(loop, fd);

	if (!f)
		return -ENOENT;
	/* The fd may already be closed by the caller; EBADF/ENOENT are fine then. */
	epoll_ctl(loop->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
	loop->fds[fd] = NULL;
	/* Events for it may still be in the current batch: keep the memory until the batch is
	 * done, and mark it so it is not dispatched. Its number is free for a new registration,
	 * which gets an entry of its own. */
	f->dead = true;
	f->next_dead = loop->graveyard;
	loop->graveyard = f;
	return 0;
}

int loop_add_timer(struct loop *loop, uint64_t deadline_ms, loop_timer_fn fn, void *userdata,
                   struct loop_timer **ret)
{
	struct loop_timer *t;
	int r;

	if (loop->n_timers == loop->timers_size) {
		size_t size = loop->timers_size ? loop->timers_size * 2 : TIMER_HEAP_MIN;
		struct loop_timer **p = reallocarray(loop->timers, size, sizeof(*p));

		if (!p)
			return -ENOMEM;
		loop->timers = p;
		loop->timers_size = size;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->deadline_ms = deadline_ms;
	t->seq = loop->timer_seq++;
	t->fn = fn;
	t->userdata = userdata;
	loop->timers[loop->n_timers++] = t;
	heap_sift_up(loop, loop->n_timers - 1);
	r = arm_timer_fd(loop);
	if (r < 0) {
		heap_remove(loop, t->idx);
		free(t);
		return r;
	}
	if (ret)
		*ret = t;
	return 0;
}

void loop_cancel_timer(struct loop *loop, struct loop_timer *timer)
{
	/* A timer being fired is out of the heap: cancelling it from its own callback is a no-op
	 * and the dispatcher frees it. */
	if (!timer || timer->idx >= loop->n_timers || loop->timers[timer->idx] != timer)
		return;
	heap_remove(loop, timer->idx);
	free(timer);
	/* Only a change of the earliest deadline touches the timerfd. */
	arm_timer_fd(loop);
}

static int dispatch_signals(struct loop *loop)
{
	struct signalfd_siginfo si;

	for (;;) {
		ssize_t n = read(loop->signal_fd, &si, sizeof(si));

		if (n < 0)
			return errno == EAGAIN ? 0 : -errno;
		if (n != sizeof(si))
			return -EIO;
		if (loop->signal_fn) {
			int r = loop->signal_fn(loop, (int)si.ssi_signo, loop->signal_userdata);
			if (r < 0)
				return r;
		}
	}
}

static int signal_fd_ready(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	return dispatch_signals(loop);
}

int loop_add_signals(struct loop *loop, const sigset_t *sigs, loop_signal_fn fn, void *userdata)
{
	int r;

	if (loop->signal_fd >= 0)
		return -EEXIST;
	if (sigprocmask(SIG_BLOCK, sigs, NULL) < 0)
		return -errno;
	loop->signal_fd = signalfd(-1, sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	if (loop->signal_fd < 0)
		return -errno;
	loop->signal_fn = fn;
	loop->signal_userdata = userdata;
	r = loop_add_fd(loop, loop->signal_fd, EPOLLIN, signal_fd_ready, NULL);
	if (r < 0)
		cl_closep(&loop->signal_fd);
	return r;
}

static int dispatch_timers(struct loop *loop)
{
	uint64_t expirations;
	uint64_t now = loop_now_ms();
	int r = 0;

	/* Drain the timerfd; the heap, not the count, says what is due. A successful read means
	 * it expired and holds nothing any more. */
	if (read(loop->timer_fd, &expirations, sizeof(expirations)) >= 0)
		loop->armed = false;
	else if (errno != EAGAIN)
		return -errno;
	/* Callbacks add and cancel timers; the timerfd is set once, after the round. */
	loop->timers_dispatching = true;
	while (loop->n_timers && loop->timers[0]->deadline_ms <= now && !loop->exiting) {
		struct loop_timer *t = loop->timers[0];

		heap_remove(loop, 0);
		r = t->fn(loop, t->userdata);
		free(t);
		/* The loop stops with r, but may run again: keep the timers armed. */
		if (r < 0)
			break;
	}
	loop->timers_dispatching = false;
	if (r < 0) {
		arm_timer_fd(loop);
		return r;
	}
	return arm_timer_fd(loop);
}

int loop_add_prepare(struct loop *loop, loop_prepare_fn fn, void *userdata)
{
	if (!fn)
		return -EINVAL;
	if (loop->n_prepare == LOOP_MAX_PREPARE)
		return -ENOSPC;
	loop->prepare[loop->n_prepare].fn = fn;
	loop->prepare[loop->n_prepare].userdata = userdata;
	loop->n_prepare++;
	return 0;
}

void loop_del_prepare(struct loop *loop, loop_prepare_fn fn, void *userdata)
{
	for (size_t i = 0; i < loop->n_prepare; i++)
		if (loop->prepare[i].fn == fn && loop->prepare[i].userdata == userdata) {
			memmove(&loop->prepare[i], &loop->prepare[i + 1],
			        (loop->n_prepare - i - 1) * sizeof(loop->prepare[0]));
			loop->n_prepare--;
			return;
		}
}

void loop_exit(struct loop *loop, int code)
{
	loop->exiting = true;
	loop->exit_code = code;
}

static void run_prepare(struct loop *loop)
{
	/* By index: a hook may remove itself. */
	for (size_t i = 0; i < loop->n_prepare; i++) {
		size_t before = loop->n_prepare;

		loop->prepare[i].fn(loop, loop->prepare[i].userdata);
		if (loop->n_prepare < before)
			i--;
	}
}

/* ---- the lock ---------------------------------------------------------------------------- */

/* The loop's thread lets go while it sleeps in epoll_wait, and takes the lock back after. */
static void loop_release(struct loop *loop)
{
	pthread_mutex_lock(&loop->mu);
	loop->held = false;
	/* The threads waiting now go before the loop's thread takes the lock back: an epoll_wait
	 * with events ready returns sooner than a woken thread runs, so without the turns a loop
	 * kept busy (a flood through the proxy or the pty) would keep the lock, and the execs of
	 * every sandbox would wait for seconds. */
	loop->handoff = loop->waiting;
	if (loop->waiting)
		pthread_cond_broadcast(&loop->cv);
	pthread_mutex_unlock(&loop->mu);
}

/* Before any thread that asks after it: a thread that receives notifications as fast as an
 * agent makes them would otherwise take the lock again before the woken loop's thread runs,
 * and the loop (the dashboard, the CLI, the proxy: the person who answers) would starve. */
static void loop_acquire(struct loop *loop)
{
	pthread_mutex_lock(&loop->mu);
	loop->loop_waiting = true;
	while (loop->held || loop->handoff)
		pthread_cond_wait(&loop->cv, &loop->mu);
	loop->loop_waiting = false;
	loop->held = true;
	pthread_mutex_unlock(&loop->mu);
}

void loop_thread_enter(struct loop *loop)
{
	pthread_mutex_lock(&loop->mu);
	loop->threads++;
	pthread_mutex_unlock(&loop->mu);
}

void loop_thread_leave(struct loop *loop)
{
	bool last;

	pthread_mutex_lock(&loop->mu);
	last = --loop->threads == 0 && loop->freed;
	pthread_mutex_unlock(&loop->mu);
	if (last)
		free_lock(loop);
}

int loop_thread_lock(struct loop *loop, const bool *cancel)
{
	int r = 0;

	pthread_mutex_lock(&loop->mu);
	loop->waiting++;
	while ((loop->held || (loop->loop_waiting && !loop->handoff)) &&
	       !__atomic_load_n(cancel, __ATOMIC_ACQUIRE))
		pthread_cond_wait(&loop->cv, &loop->mu);
	loop->waiting--;
	/* A turn is used up by taking the lock or by leaving without it; the loop's thread may
	 * wait for that last turn (a cancel is rare: tell it). */
	if (loop->handoff)
		loop->handoff--;
	if (__atomic_load_n(cancel, __ATOMIC_ACQUIRE)) {
		r = -ECANCELED;
		pthread_cond_broadcast(&loop->cv);
	} else {
		loop->held = true;
	}
	pthread_mutex_unlock(&loop->mu);
	return r;
}

void loop_thread_unlock(struct loop *loop)
{
	/* What the loop's thread would do before its next wait, for the work this thread made:
	 * its timers and fds already reached the kernel (the timerfd is set when the earliest
	 * deadline moves, epoll_ctl holds across threads), so only the hooks and an exit are
	 * left. The loop's thread sleeps on: no wake-up unless it must stop. */
	run_prepare(loop);
	if (loop->exiting) {
		uint64_t one = 1;

		(void)!write(loop->wake_fd, &one, sizeof(one));
	}
	pthread_mutex_lock(&loop->mu);
	loop->held = false;
	pthread_cond_broadcast(&loop->cv);
	pthread_mutex_unlock(&loop->mu);
}

void loop_thread_cancel(struct loop *loop, bool *cancel)
{
	pthread_mutex_lock(&loop->mu);
	/* Atomic: the thread may look at it outside the lock too, before it blocks elsewhere. */
	__atomic_store_n(cancel, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&loop->cv);
	pthread_mutex_unlock(&loop->mu);
}

int loop_thread_join(pthread_t thread, int sig, unsigned bound_ms)
{
	uint64_t until = loop_now_ms() + bound_ms;

	for (;;) {
		struct timespec ts;
		uint64_t now = loop_now_ms();
		long wait_ns = 20 * 1000000L;

		if (now >= until) {
			/* Nothing a signal ends: it leaves when its call returns, and nobody joins
			 * it. */
			(void)pthread_detach(thread);
			return -ETIMEDOUT;
		}
		if (until - now < 20)
			wait_ns = (long)(until - now) * 1000000L;
		(void)pthread_kill(thread, sig);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += wait_ns;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (pthread_timedjoin_np(thread, NULL, &ts) == 0)
			return 0;
	}
}

uint64_t loop_wakeups(const struct loop *loop)
{
	return loop->wakeups;
}

int loop_run(struct loop *loop)
{
	struct epoll_event events[MAX_EVENTS];

	/* A loop can be run again after loop_exit() (a test or a client running it per job). */
	loop->exiting = false;
	while (!loop->exiting) {
		int n;

		int e;

		run_prepare(loop);
		loop_release(loop);
		n = epoll_wait(loop->epoll_fd, events, MAX_EVENTS, -1);
		e = errno;
		loop_acquire(loop);
		loop->wakeups++;
		if (n < 0) {
			if (e == EINTR)
				continue;
			return -e;
		}
		for (int i = 0; i < n && !loop->exiting; i++) {
			struct loop_fd *f = events[i].data.ptr;
			int r;

			if (!f) {
				r = dispatch_timers(loop);
			} else if ((void *)f == &wake_mark) {
				uint64_t count;

				(void)!read(loop->wake_fd, &count, sizeof(count));
				continue;
			} else if (f->dead) {
				continue;
			} else {
				r = f->fn(loop, f->fd, events[i].events, f->userdata);
			}
			if (r < 0)
				return r;
		}
		free_graveyard(loop);
	}
	return loop->exit_code;
}
