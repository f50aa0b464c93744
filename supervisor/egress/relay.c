/* The splice relay: see relay.h.
 *
 * Each direction is pumped until it can make no more progress: move what the pipe (or
 * buffer) holds to the destination, then refill it from the source, and again while either
 * step moved bytes. A pump stops only when the source said EAGAIN with nothing left to
 * deliver (then its next readable edge wakes us) or the destination said EAGAIN (then its
 * next writable edge does). That is what makes edge-triggered registration safe, also for
 * the one ambiguous case: splice into a pipe whose slots are all taken says EAGAIN although
 * the socket has data, but then the pipe is not empty and the destination's edge follows.
 *
 * A source that said EAGAIN with the pipe empty is "dry": it is not read again until its next
 * readable edge (or an error or hang-up on it). Edge-triggered epoll reports every arrival of
 * new bytes, so nothing is missed, and a pump woken only because the destination became
 * writable costs no read that can only fail. A direction starts dry: registering a socket that
 * already holds bytes (or an EOF) reports it readable at once.
 *
 * Small first: a direction reads with recv(2) into a buffer on the stack and sends at once,
 * until one read fills that buffer; only then does it switch to splice for good (a pipe, its
 * bookkeeping and two splices per chunk pay off for bulk, not for a request and its answer).
 * A short read of a stream socket means its queue is empty now: the direction is dry without
 * the read that can only say EAGAIN. Two exceptions keep reading: after the peer's end was
 * reported (the EOF still has to be read) and once urgent data was seen (TCP stops a read
 * short at the urgent mark). What a destination does not take at once is kept, in a buffer of
 * exactly its size, until its writable edge. */
#include "supervisor/egress/relay.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/cleanup.h"

/* The stack buffer of a small read; a read that fills it makes the direction bulk. */
#define COPY_CHUNK (16u * 1024)
/* Edge-triggered: see the top of this file. A socket's writable edge is watched only from the
 * first time it did not take all it was given: registered at once, a writable socket reports
 * that edge straight away, a round through the loop for nothing on every connection, and a
 * request and its answer never fill a socket. */
#define RELAY_EVENTS     (EPOLLIN | EPOLLRDHUP | EPOLLPRI | EPOLLET)
#define RELAY_EVENTS_OUT (RELAY_EVENTS | EPOLLOUT)
/* What pipe2() gives (16 pages); the only size a cached pipe has. */
#define DEFAULT_PIPE (64u * 1024)

struct relay_pipes {
	size_t max, n;
	uint64_t reused;
	int (*fds)[2]; /* [i][0] read end, [i][1] write end */
};

struct direction {
	int src, dst;
	int pipe_r, pipe_w; /* -EBADF: read/write through buf */
	size_t in_pipe;
	size_t pipe_size, pipe_max;
	bool pipe_tried, pipe_grown;
	bool bulk;    /* a read filled COPY_CHUNK: splice from now on */
	bool no_pipe; /* splice cannot serve this direction: copy for good */
	uint8_t *buf; /* what dst did not take yet (exactly that size); NULL when empty */
	size_t buf_len, buf_off;
	uint8_t *prefix; /* owned; sent before anything else */
	size_t prefix_len, prefix_off;
	bool dry;    /* src said EAGAIN with nothing in the pipe: wait for its readable edge */
	bool rdhup;  /* src reported the peer's end of sending (EPOLLRDHUP) */
	bool urgent; /* src reported urgent data (EPOLLPRI): a short read proves nothing */
	bool eof;    /* src ended and everything before the end was read */
	bool shut;   /* dst got SHUT_WR */
	uint64_t bytes, copied;
	bool fallback_used;
	struct relay_pipes *pipes; /* NULL: pipe2() and close() */
};

struct relay {
	struct loop *loop;
	int a, b;
	bool out_a, out_b;     /* its writable edge is watched */
	struct direction d[2]; /* [0]: a → b, [1]: b → a */
	uint64_t idle_ms, last_ms, started_ms;
	struct loop_timer *timer;
	relay_done_fn done;
	void *userdata;
	bool ending;
};

static void close_pipe(struct direction *d)
{
	cl_closep(&d->pipe_r);
	cl_closep(&d->pipe_w);
	d->pipe_r = d->pipe_w = -EBADF;
}

int relay_pipes_new(size_t max, struct relay_pipes **ret)
{
	struct relay_pipes *c;

	if (max == 0)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fds = calloc(max, sizeof(*c->fds));
	if (!c->fds) {
		free(c);
		return -ENOMEM;
	}
	c->max = max;
	*ret = c;
	return 0;
}

void relay_pipes_free(struct relay_pipes *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		close(c->fds[i][0]);
		close(c->fds[i][1]);
	}
	free(c->fds);
	free(c);
}

size_t relay_pipes_held(const struct relay_pipes *c)
{
	return c->n;
}

uint64_t relay_pipes_reused(const struct relay_pipes *c)
{
	return c->reused;
}

/* The relay is done with D's pipe: back to the cache when it is empty for sure and at the
 * default size (a grown one would keep its memory and the user's pipe quota), else closed. */
static void release_pipe(struct direction *d)
{
	struct relay_pipes *c = d->pipes;
	int queued = -1;

	if (c && d->pipe_r >= 0 && c->n < c->max && d->in_pipe == 0 &&
	    d->pipe_size == DEFAULT_PIPE && ioctl(d->pipe_r, FIONREAD, &queued) == 0 &&
	    queued == 0) {
		c->fds[c->n][0] = d->pipe_r;
		c->fds[c->n][1] = d->pipe_w;
		c->n++;
		d->pipe_r = d->pipe_w = -EBADF;
		return;
	}
	close_pipe(d);
}

static void reset_socket(int fd)
{
	struct linger lg = {.l_onoff = 1, .l_linger = 0};

	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

static void fill_stats(const struct relay *r, struct relay_stats *s)
{
	s->bytes_a_to_b = r->d[0].bytes;
	s->bytes_b_to_a = r->d[1].bytes;
	s->started_ms = r->started_ms;
	s->ended_ms = loop_now_ms();
	s->spliced = !r->d[0].fallback_used && !r->d[1].fallback_used;
	s->bytes_copied = r->d[0].copied + r->d[1].copied;
	s->pipe_size =
	        r->d[0].pipe_size > r->d[1].pipe_size ? r->d[0].pipe_size : r->d[1].pipe_size;
	s->end = RELAY_END_CLOSED;
	s->error = 0;
}

static void relay_finish(struct relay *r, enum relay_end end, int error)
{
	struct relay_stats st;

	if (r->ending)
		return;
	r->ending = true;
	fill_stats(r, &st);
	st.end = end;
	st.error = error;
	if (r->timer)
		loop_cancel_timer(r->loop, r->timer);
	loop_del_fd(r->loop, r->a);
	loop_del_fd(r->loop, r->b);
	if (end != RELAY_END_CLOSED) {
		/* An abort must look like one on the other side, not like a clean end. */
		reset_socket(r->a);
		reset_socket(r->b);
	}
	close(r->a);
	close(r->b);
	for (int i = 0; i < 2; i++) {
		release_pipe(&r->d[i]);
		free(r->d[i].buf);
		free(r->d[i].prefix);
	}
	if (r->done)
		r->done(r->userdata, &st);
	free(r);
}

/* Write what is waiting in D's prefix or buffer. 1: progress, 0: nothing to do or EAGAIN. */
static int flush_bytes(struct direction *d, const uint8_t *p, size_t len, size_t *off)
{
	ssize_t n = send(d->dst, p + *off, len - *off, MSG_NOSIGNAL | MSG_DONTWAIT);

	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	*off += (size_t)n;
	d->bytes += (uint64_t)n;
	return 1;
}

/* Read what SRC holds into a buffer on the stack and send it on; keep what DST does not take.
 * 1: progress, 0: nothing to read now (d->dry set when that is known), -errno. */
static int copy_once(struct direction *d)
{
	uint8_t chunk[COPY_CHUNK];
	ssize_t n = recv(d->src, chunk, sizeof(chunk), MSG_DONTWAIT), sent;

	if (n == 0) {
		d->eof = true;
		return 1;
	}
	if (n < 0) {
		if (errno == EAGAIN) {
			d->dry = true;
			return 0;
		}
		return errno == EINTR ? 0 : -errno;
	}
	d->copied += (uint64_t)n;
	if ((size_t)n == sizeof(chunk)) {
		if (!d->no_pipe)
			d->bulk = true; /* more is likely to follow: splice it */
	} else if (!d->rdhup && !d->urgent) {
		/* A stream socket's read stops short only when its queue ran empty (urgent data
		 * aside); bytes arriving after it raise a new edge. */
		d->dry = true;
	}
	sent = send(d->dst, chunk, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (sent < 0) {
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		sent = 0;
	}
	d->bytes += (uint64_t)sent;
	if (sent < n) {
		d->buf = malloc((size_t)(n - sent));
		if (!d->buf)
			return -ENOMEM;
		memcpy(d->buf, chunk + sent, (size_t)(n - sent));
		d->buf_len = (size_t)(n - sent);
		d->buf_off = 0;
	}
	return 1;
}

/* The pipe is made when the first bytes move (a connection that ends at once, or only
 * carries a few bytes one way, costs no pipe) with the kernel's default size, and grows to
 * pipe_max once it ran full: interactive connections keep small pipes, bulk ones get big
 * ones. No pipe to be had (fd or pipe quota): read/write instead. */
static void open_pipe(struct direction *d)
{
	int p[2];

	d->pipe_tried = true;
	d->pipe_size = DEFAULT_PIPE; /* a smaller pipe only makes splice stop earlier */
	if (d->pipes && d->pipes->n > 0) {
		d->pipes->n--;
		d->pipes->reused++;
		d->pipe_r = d->pipes->fds[d->pipes->n][0];
		d->pipe_w = d->pipes->fds[d->pipes->n][1];
		return;
	}
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return;
	d->pipe_r = p[0];
	d->pipe_w = p[1];
}

/* Once per direction: the biggest size the kernel grants, from pipe_max down by halves. */
static void grow_pipe(struct direction *d)
{
	d->pipe_grown = true;
	for (size_t want = d->pipe_max; want > d->pipe_size; want /= 2) {
		int got = fcntl(d->pipe_w, F_SETPIPE_SZ, (int)want);

		if (got > 0) {
			d->pipe_size = (size_t)got;
			return;
		}
		if (errno != EPERM && errno != ENOMEM)
			return; /* EBUSY, EINVAL: no smaller size does better */
	}
}

/* Move bytes of D until neither step makes progress. OTHER is the opposite direction: when it
 * has finished, D's end needs no shutdown(): relay_finish()'s close() sends the FIN (every byte
 * of both sockets was read, so close() does not reset). Returns 0 or -errno. */
static int pump(struct direction *d, const struct direction *other, bool *ret_moved)
{
	bool progress;

	do {
		int r;

		progress = false;
		/* 1. deliver */
		if (d->prefix_off < d->prefix_len) {
			r = flush_bytes(d, d->prefix, d->prefix_len, &d->prefix_off);
			if (r < 0)
				return r;
			progress |= r > 0;
			if (d->prefix_off < d->prefix_len)
				goto fill_skip; /* keep the order: nothing read goes before it */
		}
		if (d->buf) {
			r = flush_bytes(d, d->buf, d->buf_len, &d->buf_off);
			if (r < 0)
				return r;
			progress |= r > 0;
			if (d->buf_off < d->buf_len)
				goto fill_skip; /* the destination is full: its writable edge
				                   follows */
			free(d->buf);
			d->buf = NULL;
			d->buf_len = d->buf_off = 0;
		} else if (d->in_pipe > 0) {
			ssize_t n = splice(d->pipe_r, NULL, d->dst, NULL, d->in_pipe,
			                   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);

			if (n > 0) {
				d->in_pipe -= (size_t)n;
				d->bytes += (uint64_t)n;
				progress = true;
			} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
				return -errno;
			}
		}

		/* 2. refill */
		if (d->eof || d->dry)
			goto fill_skip;
		if (!d->bulk) {
			r = copy_once(d);
			if (r < 0)
				return r;
			progress |= r > 0;
			goto fill_skip;
		}
		if (!d->pipe_tried)
			open_pipe(d);
		if (d->pipe_r < 0) {
			/* No pipe to be had: copy for good. */
			d->bulk = false;
			d->no_pipe = d->fallback_used = true;
			progress = true;
		} else if (d->in_pipe < d->pipe_size) {
			ssize_t n = splice(d->src, NULL, d->pipe_w, NULL, d->pipe_size - d->in_pipe,
			                   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);

			if (n > 0) {
				d->in_pipe += (size_t)n;
				progress = true;
				if (d->in_pipe >= d->pipe_size && !d->pipe_grown)
					grow_pipe(d);
			} else if (n == 0) {
				d->eof = true;
				progress = true;
			} else if (errno == EINVAL && d->in_pipe == 0) {
				/* This socket cannot splice: copy from now on. */
				close_pipe(d);
				d->bulk = false;
				d->no_pipe = d->fallback_used = true;
				progress = true;
			} else if (errno == EAGAIN) {
				/* With bytes in the pipe this may only mean its slots are taken:
				 * then delivering them is progress, and the source is tried again.
				 */
				d->dry = d->in_pipe == 0;
			} else if (errno != EINTR) {
				return -errno;
			}
		}
	fill_skip:
		if (progress)
			*ret_moved = true;
	} while (progress);

	if (d->eof && !d->shut && d->in_pipe == 0 && !d->buf && d->prefix_off >= d->prefix_len) {
		/* ENOTCONN: the peer is already gone; the other direction will tell. */
		if (!other->shut && shutdown(d->dst, SHUT_WR) < 0 && errno != ENOTCONN)
			return -errno;
		d->shut = true;
	}
	return 0;
}

/* D holds bytes its destination did not take (EAGAIN): only its writable edge moves them. */
static bool undelivered(const struct direction *d)
{
	return d->prefix_off < d->prefix_len || d->buf || d->in_pipe > 0;
}

/* Watch the writable edge of D's destination from now on when D waits for it. Added after the
 * EAGAIN: epoll looks at the socket when it is changed and reports it at once if room was made
 * in between, so that edge is not lost. Once watched it stays so (a bulk direction would
 * otherwise change it back and forth). */
static int watch_out(struct relay *r, const struct direction *d)
{
	bool *watched = d->dst == r->a ? &r->out_a : &r->out_b;
	int e;

	if (*watched || !undelivered(d))
		return 0;
	e = loop_mod_fd(r->loop, d->dst, RELAY_EVENTS_OUT);
	if (e >= 0)
		*watched = true;
	return e;
}

/* Pump the directions in MASK (bit 0: a → b, bit 1: b → a). */
static void pump_dirs(struct relay *r, unsigned mask)
{
	bool moved = false;

	for (int i = 0; i < 2; i++) {
		int e;

		if (!(mask & (1u << i)))
			continue;
		e = pump(&r->d[i], &r->d[1 - i], &moved);
		if (e >= 0)
			e = watch_out(r, &r->d[i]);
		if (e < 0) {
			relay_finish(r, RELAY_END_ERROR, e);
			return;
		}
	}
	if (moved && r->idle_ms)
		r->last_ms = loop_now_ms();
	if (r->d[0].shut && r->d[1].shut)
		relay_finish(r, RELAY_END_CLOSED, 0);
}

static int on_socket(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct relay *r = userdata;
	/* Readable: the direction this fd feeds; writable: the one it drains. A pump of the
	 * other direction would only meet EAGAIN. */
	unsigned in = fd == r->a ? 1u : 2u, out = fd == r->a ? 2u : 1u, mask = 0;

	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLPRI)) {
		mask |= in;
		r->d[in - 1].dry = false;
		if (events & EPOLLRDHUP)
			r->d[in - 1].rdhup = true;
		if (events & EPOLLPRI)
			r->d[in - 1].urgent = true;
	}
	if (events & EPOLLOUT)
		mask |= out;
	if (events & (EPOLLERR | EPOLLHUP)) {
		/* Let both directions meet the error (or the end) on their next call. */
		mask = 3;
		r->d[0].dry = r->d[1].dry = false;
	}
	pump_dirs(r, mask);
	return 0;
}

static int on_idle_timer(struct loop *loop, void *userdata)
{
	struct relay *r = userdata;
	uint64_t now = loop_now_ms();

	r->timer = NULL; /* the loop frees it after this call */
	if (now - r->last_ms >= r->idle_ms) {
		relay_finish(r, RELAY_END_IDLE, 0);
		return 0;
	}
	if (loop_add_timer(loop, r->last_ms + r->idle_ms, on_idle_timer, r, &r->timer) < 0)
		relay_finish(r, RELAY_END_ERROR, -ENOMEM);
	return 0;
}

static void setup_direction(struct direction *d, int src, int dst, size_t pipe_max,
                            struct relay_pipes *pipes)
{
	d->src = src;
	d->dst = dst;
	d->pipe_r = d->pipe_w = -EBADF;
	d->pipe_max = pipe_max;
	d->pipes = pipes;
	d->dry = true; /* until the first readable edge: see the top of this file */
}

/* relay_start() failed with E: neither socket may stay registered once closed, not to us and
 * not to a caller whose registration was not taken over yet. */
static int unregister(struct loop *loop, int a, int b, int e)
{
	loop_del_fd(loop, a);
	loop_del_fd(loop, b);
	return e;
}

int relay_start(struct loop *loop, int a, int b, const struct relay_options *opts,
                relay_done_fn done, void *userdata, struct relay **ret)
{
	_cleanup_close_ int fa = a, fb = b;
	struct relay_options defaults = {0};
	struct relay *r;
	size_t pipe_max;
	int e;

	if (!opts)
		opts = &defaults;
	pipe_max = opts->pipe_size ? opts->pipe_size : RELAY_DEFAULT_PIPE_SIZE;
	if (pipe_max > RELAY_MAX_PIPE_SIZE)
		pipe_max = RELAY_MAX_PIPE_SIZE;
	if (opts->prefix_len > RELAY_MAX_PREFIX)
		return unregister(loop, a, b, -EINVAL);
	r = calloc(1, sizeof(*r));
	if (!r)
		return unregister(loop, a, b, -ENOMEM);
	if (opts->prefix_len) {
		r->d[0].prefix = malloc(opts->prefix_len);
		if (!r->d[0].prefix) {
			free(r);
			return unregister(loop, a, b, -ENOMEM);
		}
		memcpy(r->d[0].prefix, opts->prefix, opts->prefix_len);
		r->d[0].prefix_len = opts->prefix_len;
	}
	r->loop = loop;
	r->a = a;
	r->b = b;
	r->done = done;
	r->userdata = userdata;
	r->idle_ms = opts->idle_ms;
	r->started_ms = r->last_ms = loop_now_ms();
	setup_direction(&r->d[0], a, b, pipe_max, opts->pipes);
	setup_direction(&r->d[1], b, a, pipe_max, opts->pipes);
	/* The prefix (the request that named the connection) goes at once: a round through the
	 * loop less before the server has it. EAGAIN or an error: the first pump goes on (B's
	 * writable edge, or its error, follows the registration). */
	if (r->d[0].prefix_len &&
	    flush_bytes(&r->d[0], r->d[0].prefix, r->d[0].prefix_len, &r->d[0].prefix_off) > 0)
		r->last_ms = loop_now_ms();

	/* A socket the caller still has registered is taken over (loop_set_fd). */
	r->out_b = undelivered(&r->d[0]); /* the prefix waits for B's room */
	e = loop_set_fd(loop, a, RELAY_EVENTS, on_socket, r);
	if (e >= 0)
		e = loop_set_fd(loop, b, r->out_b ? RELAY_EVENTS_OUT : RELAY_EVENTS, on_socket, r);
	if (e >= 0 && r->idle_ms)
		e = loop_add_timer(loop, r->last_ms + r->idle_ms, on_idle_timer, r, &r->timer);
	if (e < 0) {
		unregister(loop, a, b, e);
		for (int i = 0; i < 2; i++) {
			close_pipe(&r->d[i]);
			free(r->d[i].prefix);
		}
		free(r);
		return e;
	}
	fa = fb = -EBADF; /* the relay's now */
	if (ret)
		*ret = r;
	/* No pump here: adding a socket that is ready already queues its first edge. */
	return 0;
}

void relay_cancel(struct relay *r)
{
	relay_finish(r, RELAY_END_CANCELED, 0);
}
