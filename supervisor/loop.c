#include "supervisor/loop.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "protocol/cleanup.h"

#define MAX_EVENTS 64

struct loop_fd {
	int fd;
	loop_fd_fn fn;
	void *userdata;
	bool dead; /* removed while the current batch of events is being dispatched */
	struct loop_fd *next;
};

struct loop_timer {
	uint64_t deadline_ms;
	loop_timer_fn fn;
	void *userdata;
	struct loop_timer *next; /* sorted by deadline */
};

struct loop {
	int epoll_fd;
	int timer_fd;
	int signal_fd;
	loop_signal_fn signal_fn;
	void *signal_userdata;
	struct loop_fd *fds;
	struct loop_fd *graveyard; /* freed after each dispatch round */
	struct loop_timer *timers;
	bool exiting;
	int exit_code;
};

uint64_t loop_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int arm_timer_fd(struct loop *loop)
{
	struct itimerspec its = {0};

	if (loop->timers) {
		uint64_t d = loop->timers->deadline_ms;

		/* TFD_TIMER_ABSTIME with 0 would disarm; a deadline in the past fires at once. */
		its.it_value.tv_sec = (time_t)(d / 1000);
		its.it_value.tv_nsec = (long)(d % 1000) * 1000000;
		if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
			its.it_value.tv_nsec = 1;
	}
	if (timerfd_settime(loop->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		return -errno;
	return 0;
}

static struct loop_fd *find_fd(struct loop *loop, int fd)
{
	for (struct loop_fd *f = loop->fds; f; f = f->next)
		if (f->fd == fd && !f->dead)
			return f;
	return NULL;
}

int loop_new(struct loop **ret)
{
	struct loop *loop = calloc(1, sizeof(*loop));
	struct epoll_event ev = {.events = EPOLLIN};

	if (!loop)
		return -ENOMEM;
	loop->signal_fd = -EBADF;
	loop->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	loop->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (loop->epoll_fd < 0 || loop->timer_fd < 0)
		goto fail;
	ev.data.ptr = NULL; /* NULL marks the timerfd */
	if (epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, loop->timer_fd, &ev) < 0)
		goto fail;
	*ret = loop;
	return 0;
fail:;
	int r = -errno;
	loop_free(loop);
	return r;
}

static void free_fd_list(struct loop_fd *f)
{
	while (f) {
		struct loop_fd *next = f->next;
		free(f);
		f = next;
	}
}

void loop_free(struct loop *loop)
{
	if (!loop)
		return;
	free_fd_list(loop->fds);
	free_fd_list(loop->graveyard);
	while (loop->timers) {
		struct loop_timer *next = loop->timers->next;
		free(loop->timers);
		loop->timers = next;
	}
	cl_closep(&loop->epoll_fd);
	cl_closep(&loop->timer_fd);
	cl_closep(&loop->signal_fd);
	free(loop);
}

int loop_add_fd(struct loop *loop, int fd, uint32_t events, loop_fd_fn fn, void *userdata)
{
	struct loop_fd *f;
	struct epoll_event ev = {.events = events};

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
	ev.data.ptr = f;
	if (epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int r = -errno;
		free(f);
		return r;
	}
	f->next = loop->fds;
	loop->fds = f;
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

int loop_del_fd(struct loop *loop, int fd)
{
	struct loop_fd **p;

	for (p = &loop->fds; *p; p = &(*p)->next) {
		struct loop_fd *f = *p;

		if (f->fd != fd || f->dead)
			continue;
		/* The fd may already be closed by the caller; EBADF/ENOENT are fine then. */
		epoll_ctl(loop->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
		*p = f->next;
		/* Events for it may still be in the current batch: keep the memory until the
		 * batch is done, and mark it so it is not dispatched. */
		f->dead = true;
		f->next = loop->graveyard;
		loop->graveyard = f;
		return 0;
	}
	return -ENOENT;
}

int loop_add_timer(struct loop *loop, uint64_t deadline_ms, loop_timer_fn fn, void *userdata,
                   struct loop_timer **ret)
{
	struct loop_timer *t = calloc(1, sizeof(*t)), **p;
	bool first;

	if (!t)
		return -ENOMEM;
	t->deadline_ms = deadline_ms;
	t->fn = fn;
	t->userdata = userdata;
	for (p = &loop->timers; *p && (*p)->deadline_ms <= deadline_ms; p = &(*p)->next)
		;
	t->next = *p;
	*p = t;
	first = loop->timers == t;
	if (first) {
		int r = arm_timer_fd(loop);
		if (r < 0) {
			loop->timers = t->next;
			free(t);
			return r;
		}
	}
	if (ret)
		*ret = t;
	return 0;
}

void loop_cancel_timer(struct loop *loop, struct loop_timer *timer)
{
	for (struct loop_timer **p = &loop->timers; *p; p = &(*p)->next) {
		bool first = p == &loop->timers;

		if (*p != timer)
			continue;
		*p = timer->next;
		free(timer);
		/* The timerfd holds the first deadline: a later one going changes nothing. */
		if (first)
			arm_timer_fd(loop);
		return;
	}
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

	/* Drain the timerfd; the list, not the count, says what is due. */
	if (read(loop->timer_fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
		return -errno;
	while (loop->timers && loop->timers->deadline_ms <= now && !loop->exiting) {
		struct loop_timer *t = loop->timers;
		int r;

		loop->timers = t->next;
		r = t->fn(loop, t->userdata);
		free(t);
		if (r < 0) {
			/* The loop stops with r, but may run again: keep the timers armed. */
			arm_timer_fd(loop);
			return r;
		}
	}
	return arm_timer_fd(loop);
}

void loop_exit(struct loop *loop, int code)
{
	loop->exiting = true;
	loop->exit_code = code;
}

int loop_run(struct loop *loop)
{
	struct epoll_event events[MAX_EVENTS];

	/* A loop can be run again after loop_exit() (a test or a client running it per job). */
	loop->exiting = false;
	while (!loop->exiting) {
		int n = epoll_wait(loop->epoll_fd, events, MAX_EVENTS, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n && !loop->exiting; i++) {
			struct loop_fd *f = events[i].data.ptr;
			int r;

			if (!f)
				r = dispatch_timers(loop);
			else if (f->dead)
				continue;
			else
				r = f->fn(loop, f->fd, events[i].events, f->userdata);
			if (r < 0)
				return r;
		}
		free_fd_list(loop->graveyard);
		loop->graveyard = NULL;
	}
	return loop->exit_code;
}
