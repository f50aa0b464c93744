/* The splice relay on real loopback TCP connections: bytes intact both ways with pipes that
 * grow (and that fall back to a smaller size the kernel grants), big transfers both ways at
 * once, many small exchanges with quiet gaps (a source that ran dry wakes the relay again),
 * half-close passed on in each direction, the prefix first (sent by relay_start itself), idle
 * timeout, a reset passed on, cancel, and the pipe cache (empty default-size pipes reused, a
 * grown one or one that may hold bytes closed). The loop runs in a thread of its own; the test
 * drives both ends. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/loop.h"
#include "supervisor/egress/relay.h"

struct env {
	struct loop *loop;
	int client, server; /* the test's ends */
	int relay_a, relay_b;
	pthread_t thread;
	struct relay_stats st;
	int done;
	bool unprivileged; /* the loop's thread runs without CAP_SYS_RESOURCE, CAP_SYS_ADMIN */
	size_t granted;    /* unprivileged: what F_SETPIPE_SZ gives that thread (0: nothing) */
	int refused;       /* unprivileged: F_SETPIPE_SZ of 4 x pipe-max-size (-errno) */
};

/* A connected loopback TCP pair: *ret_a connected to *ret_b. */
static void tcp_pair(int *ret_a, int *ret_b)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sin);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&sin, &len), 0);
	*ret_a = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(*ret_a, (struct sockaddr *)&sin, sizeof(sin)), 0);
	*ret_b = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	assert_true(*ret_b >= 0);
	close(l);
}

static void on_done(void *userdata, const struct relay_stats *st)
{
	struct env *e = userdata;

	e->st = *st;
	e->done++;
	loop_exit(e->loop, 0);
}

static size_t pipe_max_size(void)
{
	FILE *f = fopen("/proc/sys/fs/pipe-max-size", "re");
	unsigned long v = 0;

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%lu", &v), 1);
	fclose(f);
	return v;
}

/* Capabilities are per thread: drop the two that let F_SETPIPE_SZ pass fs.pipe-max-size (and
 * the pipe quota) from this thread only, then see what the kernel grants it now. */
static void drop_pipe_privileges(struct env *e)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	int p[2];

	assert_int_equal(syscall(SYS_capget, &h, d), 0);
	d[CAP_SYS_RESOURCE / 32].effective &= ~(1u << (CAP_SYS_RESOURCE % 32));
	d[CAP_SYS_ADMIN / 32].effective &= ~(1u << (CAP_SYS_ADMIN % 32));
	assert_int_equal(syscall(SYS_capset, &h, d), 0);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	e->refused = fcntl(p[1], F_SETPIPE_SZ, (int)(4 * pipe_max_size())) < 0 ? -errno : 0;
	{
		int got = fcntl(p[1], F_SETPIPE_SZ, (int)pipe_max_size());

		e->granted = got > 0 ? (size_t)got : 0;
	}
	close(p[0]);
	close(p[1]);
}

static void *loop_main(void *arg)
{
	struct env *e = arg;

	if (e->unprivileged)
		drop_pipe_privileges(e);
	loop_run(e->loop);
	return NULL;
}

static struct relay *start(struct env *e, const struct relay_options *opts)
{
	struct relay *r = NULL;

	memset(e, 0, sizeof(*e));
	assert_int_equal(loop_new(&e->loop), 0);
	tcp_pair(&e->client, &e->relay_a);
	tcp_pair(&e->relay_b, &e->server);
	fcntl(e->relay_a, F_SETFL, O_NONBLOCK);
	fcntl(e->relay_b, F_SETFL, O_NONBLOCK);
	assert_int_equal(relay_start(e->loop, e->relay_a, e->relay_b, opts, on_done, e, &r), 0);
	return r;
}

static void run(struct env *e)
{
	assert_int_equal(pthread_create(&e->thread, NULL, loop_main, e), 0);
}

static void finish(struct env *e)
{
	pthread_join(e->thread, NULL);
	close(e->client);
	close(e->server);
	loop_free(e->loop);
}

static uint8_t pattern(size_t i, unsigned seed)
{
	return (uint8_t)(i * 31 + i / 4093 + seed);
}

struct writer {
	int fd;
	size_t len;
	unsigned seed;
};

static void *write_then_shut(void *arg)
{
	struct writer *w = arg;
	uint8_t buf[65536];
	size_t off = 0;

	while (off < w->len) {
		size_t n = w->len - off < sizeof(buf) ? w->len - off : sizeof(buf);
		ssize_t got;

		for (size_t i = 0; i < n; i++)
			buf[i] = pattern(off + i, w->seed);
		got = write(w->fd, buf, n);
		if (got <= 0)
			return NULL;
		off += (size_t)got;
	}
	shutdown(w->fd, SHUT_WR);
	return NULL;
}

/* Read until EOF; check the pattern; return the count (or -errno). */
static ssize_t read_check(int fd, unsigned seed)
{
	uint8_t buf[65536];
	size_t total = 0;

	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, 5000) != 1)
			return -ETIMEDOUT;
		n = read(fd, buf, sizeof(buf));
		if (n < 0)
			return -errno;
		if (n == 0)
			return (ssize_t)total;
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != pattern(total + (size_t)i, seed))
				return -EBADMSG;
		total += (size_t)n;
	}
}

static void test_bytes_arrive_intact_both_ways_with_half_close(void **state)
{
	struct env e;
	struct writer up = {.len = 3u << 20, .seed = 1}, down = {.len = 2u << 20, .seed = 2};
	pthread_t tu;

	start(&e, NULL);
	run(&e);
	up.fd = e.client;
	assert_int_equal(pthread_create(&tu, NULL, write_then_shut, &up), 0);
	/* The client has shut its side; the server still gets everything and an EOF, and can
	 * then answer through the half-open connection. */
	assert_int_equal(read_check(e.server, 1), (ssize_t)up.len);
	pthread_join(tu, NULL);
	down.fd = e.server;
	write_then_shut(&down);
	assert_int_equal(read_check(e.client, 2), (ssize_t)down.len);
	finish(&e);
	assert_int_equal(e.done, 1);
	assert_int_equal(e.st.end, RELAY_END_CLOSED);
	assert_int_equal(e.st.bytes_a_to_b, up.len);
	assert_int_equal(e.st.bytes_b_to_a, down.len);
	assert_true(e.st.spliced);
}

struct reader {
	int fd;
	unsigned seed;
	unsigned delay_ms; /* before the first read: lets the relay's pipe run full */
	ssize_t got;
};

static void *read_check_thread(void *arg)
{
	struct reader *rd = arg;
	struct timespec ts = {.tv_sec = rd->delay_ms / 1000,
	                      .tv_nsec = (long)(rd->delay_ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
	rd->got = read_check(rd->fd, rd->seed);
	return NULL;
}

/* Both directions at full speed at the same time, each ending with its own half-close, while
 * the readers start late so that both pipes run full and grow. */
static void test_big_transfers_both_ways_at_once_stay_byte_exact(void **state)
{
	struct env e;
	struct writer up = {.len = 24u << 20, .seed = 3}, down = {.len = 16u << 20, .seed = 4};
	struct reader at_server = {.seed = 3, .delay_ms = 100}, at_client = {.seed = 4};
	pthread_t tu, td, tr;

	start(&e, NULL);
	run(&e);
	up.fd = at_client.fd = e.client;
	down.fd = at_server.fd = e.server;
	assert_int_equal(pthread_create(&tu, NULL, write_then_shut, &up), 0);
	assert_int_equal(pthread_create(&td, NULL, write_then_shut, &down), 0);
	assert_int_equal(pthread_create(&tr, NULL, read_check_thread, &at_server), 0);
	read_check_thread(&at_client);
	pthread_join(tr, NULL);
	pthread_join(tu, NULL);
	pthread_join(td, NULL);
	assert_int_equal(at_server.got, (ssize_t)up.len);
	assert_int_equal(at_client.got, (ssize_t)down.len);
	finish(&e);
	assert_int_equal(e.done, 1);
	assert_int_equal(e.st.end, RELAY_END_CLOSED);
	assert_int_equal(e.st.bytes_a_to_b, up.len);
	assert_int_equal(e.st.bytes_b_to_a, down.len);
	assert_true(e.st.spliced);
	assert_true(e.st.pipe_size > 65536); /* a bulk direction got a big pipe */
}

static void read_exactly(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		assert_int_equal(poll(&p, 1, 5000), 1);
		n = read(fd, buf + got, len - got);
		assert_true(n > 0);
		got += (size_t)n;
	}
}

/* Request / answer rounds, some after a quiet gap in which the relay has run dry on both
 * sides and sleeps: every round must still get through, and such a connection never needs
 * more than the kernel's default pipe. */
static void test_small_exchanges_after_quiet_gaps_all_arrive(void **state)
{
	struct env e;
	uint64_t up = 0, down = 0;
	char buf[64];

	start(&e, NULL);
	run(&e);
	for (int i = 0; i < 300; i++) {
		char msg[32];
		int n = snprintf(msg, sizeof(msg), "ping %d", i);

		if (i % 50 == 0) {
			struct timespec ts = {.tv_nsec = 20 * 1000000};

			nanosleep(&ts, NULL);
		}
		assert_int_equal(write(e.client, msg, (size_t)n), n);
		read_exactly(e.server, buf, (size_t)n);
		assert_memory_equal(buf, msg, (size_t)n);
		up += (uint64_t)n;
		msg[1] = 'o';
		assert_int_equal(write(e.server, msg, (size_t)n), n);
		read_exactly(e.client, buf, (size_t)n);
		assert_memory_equal(buf, msg, (size_t)n);
		down += (uint64_t)n;
	}
	shutdown(e.client, SHUT_WR);
	assert_int_equal(read(e.server, buf, sizeof(buf)), 0);
	shutdown(e.server, SHUT_WR);
	assert_int_equal(read(e.client, buf, sizeof(buf)), 0);
	finish(&e);
	assert_int_equal(e.st.end, RELAY_END_CLOSED);
	assert_int_equal(e.st.bytes_a_to_b, up);
	assert_int_equal(e.st.bytes_b_to_a, down);
	/* Small messages move with recv/send: no pipe is made at all. */
	assert_int_equal(e.st.bytes_copied, up + down);
	assert_int_equal(e.st.pipe_size, 0);
}

/* Wait (bounded: up to MS milliseconds) until FD's receive queue is empty. */
static bool queue_drained(int fd, int ms)
{
	for (int i = 0; i < ms; i++) {
		struct timespec ts = {.tv_nsec = 1000000};
		int queued = -1;

		assert_int_equal(ioctl(fd, SIOCINQ, &queued), 0);
		if (queued == 0)
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

/* Small messages into a destination that stops taking them: the relay keeps what the socket
 * refused and stops reading; only the destination's writable edge can move it on once the
 * reader wakes up. The messages go one by one (each read by the relay before the next is
 * written), so the direction stays on recv/send all along. */
static void test_a_full_destination_gets_small_messages_once_it_has_room(void **state)
{
	struct env e;
	int small = 1;
	char msg[1000];
	size_t sent = 0, got = 0;
	bool stalled = false;

	start(&e, NULL);
	assert_int_equal(setsockopt(e.relay_b, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	assert_int_equal(setsockopt(e.server, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
	run(&e);
	for (int i = 0; i < 4000 && !stalled; i++) {
		for (size_t k = 0; k < sizeof(msg); k++)
			msg[k] = (char)pattern(sent + k, 7);
		assert_int_equal(write(e.client, msg, sizeof(msg)), (ssize_t)sizeof(msg));
		sent += sizeof(msg);
		/* Not read within 200 ms: the relay holds bytes the destination refused. */
		stalled = !queue_drained(e.relay_a, 200);
	}
	assert_true(stalled);
	shutdown(e.client, SHUT_WR);
	while (got < sent) {
		char buf[4096];
		struct pollfd p = {.fd = e.server, .events = POLLIN};
		ssize_t n;

		assert_int_equal(poll(&p, 1, 5000), 1);
		n = read(e.server, buf, sizeof(buf));
		assert_true(n > 0);
		for (ssize_t k = 0; k < n; k++)
			assert_int_equal((uint8_t)buf[k], pattern(got + (size_t)k, 7));
		got += (size_t)n;
	}
	assert_int_equal(read(e.server, msg, sizeof(msg)), 0);
	shutdown(e.server, SHUT_WR);
	finish(&e);
	assert_int_equal(e.st.end, RELAY_END_CLOSED);
	assert_int_equal(e.st.bytes_a_to_b, sent);
	assert_int_equal(e.st.bytes_copied, sent);
	assert_int_equal(e.st.pipe_size, 0);
}

/* Urgent data stops a TCP read short at its mark although more bytes wait behind it: a
 * relay that took that short read for an empty queue would sit on them. Everything is there
 * before the relay first looks, so no later edge could hide the mistake. */
static void test_bytes_behind_urgent_data_are_not_left_waiting(void **state)
{
	struct env e;
	char buf[16];

	start(&e, NULL);
	assert_int_equal(send(e.client, "abc", 3, 0), 3);
	assert_int_equal(send(e.client, "X", 1, MSG_OOB), 1);
	assert_int_equal(send(e.client, "def", 3, 0), 3);
	run(&e);
	/* The urgent byte is out of band: the stream carries the rest, in order. */
	read_exactly(e.server, buf, 6);
	assert_memory_equal(buf, "abcdef", 6);
	shutdown(e.client, SHUT_WR);
	assert_int_equal(read(e.server, buf, sizeof(buf)), 0);
	shutdown(e.server, SHUT_WR);
	assert_int_equal(read(e.client, buf, sizeof(buf)), 0);
	finish(&e);
	assert_int_equal(e.st.end, RELAY_END_CLOSED);
	assert_int_equal(e.st.bytes_a_to_b, 6);
}

/* Enough bytes in one write to make a direction bulk (its first read fills the relay's 16 KiB
 * buffer), too few to fill its pipe (which would grow and not be kept). */
#define BULK_LEN (64u << 10)

/* Asked for more than fs.pipe-max-size by a thread that may not exceed it, the pipe grows to
 * what the kernel grants instead (or keeps its size), and every byte still arrives. */
static void test_pipe_growth_falls_back_when_the_kernel_refuses(void **state)
{
	struct env e;
	struct relay_options o;
	struct writer up = {.len = 8u << 20, .seed = 5};
	struct reader at_server = {.seed = 5, .delay_ms = 100};
	pthread_t tu;

	o = (struct relay_options){.pipe_size = 4 * pipe_max_size()};
	start(&e, &o);
	e.unprivileged = true;
	run(&e);
	up.fd = e.client;
	at_server.fd = e.server;
	assert_int_equal(pthread_create(&tu, NULL, write_then_shut, &up), 0);
	read_check_thread(&at_server);
	pthread_join(tu, NULL);
	assert_int_equal(at_server.got, (ssize_t)up.len);
	shutdown(e.server, SHUT_WR);
	finish(&e);
	assert_int_equal(e.refused, -EPERM); /* the precondition: the big size is refused */
	assert_int_equal(e.st.end, RELAY_END_CLOSED);
	assert_int_equal(e.st.bytes_a_to_b, up.len);
	assert_true(e.st.spliced);
	/* pipe-max-size itself when the quota allows it, else the default it started with. */
	assert_int_equal(e.st.pipe_size, e.granted ? e.granted : 65536);
}

static void test_prefix_goes_before_what_the_client_sends(void **state)
{
	struct env e;
	struct relay_options o = {.prefix = "HEAD:", .prefix_len = 5};
	char buf[64];
	size_t len = 0;
	ssize_t n;

	start(&e, &o);
	run(&e);
	assert_int_equal(write(e.client, "body", 4), 4);
	shutdown(e.client, SHUT_WR);
	while ((n = read(e.server, buf + len, sizeof(buf) - len)) > 0)
		len += (size_t)n;
	assert_int_equal(len, 9);
	assert_memory_equal(buf, "HEAD:body", 9);
	shutdown(e.server, SHUT_WR);
	assert_int_equal(read(e.client, buf, sizeof(buf)), 0);
	finish(&e);
	assert_int_equal(e.st.bytes_a_to_b, 9);
	assert_int_equal(e.st.end, RELAY_END_CLOSED);
}

/* Only the prefix and two ends cross: no direction has a byte for a pipe, so none is made. */
static void test_a_relay_of_only_a_prefix_and_two_ends_makes_no_pipe(void **state)
{
	struct env e;
	struct relay_options o = {.prefix = "HELLO", .prefix_len = 5};
	char buf[16];

	start(&e, &o);
	shutdown(e.client, SHUT_WR);
	run(&e);
	read_exactly(e.server, buf, 5);
	assert_memory_equal(buf, "HELLO", 5);
	assert_int_equal(read(e.server, buf, sizeof(buf)), 0);
	shutdown(e.server, SHUT_WR);
	assert_int_equal(read(e.client, buf, sizeof(buf)), 0);
	finish(&e);
	assert_int_equal(e.st.end, RELAY_END_CLOSED);
	assert_int_equal(e.st.bytes_a_to_b, 5);
	assert_int_equal(e.st.bytes_b_to_a, 0);
	assert_int_equal(e.st.pipe_size, 0);
}

static void test_idle_relay_ends_and_resets_both_sides(void **state)
{
	struct env e;
	struct relay_options o = {.idle_ms = 100};
	char c;

	start(&e, &o);
	run(&e);
	assert_int_equal(write(e.client, "x", 1), 1);
	assert_int_equal(read(e.server, &c, 1), 1);
	pthread_join(e.thread, NULL); /* the loop stops when the relay ends */
	assert_int_equal(e.st.end, RELAY_END_IDLE);
	assert_true(e.st.ended_ms - e.st.started_ms >= 100);
	assert_int_equal(read(e.client, &c, 1), -1);
	assert_int_equal(errno, ECONNRESET);
	assert_int_equal(read(e.server, &c, 1), -1);
	assert_int_equal(errno, ECONNRESET);
	close(e.client);
	close(e.server);
	loop_free(e.loop);
}

static void test_a_reset_on_one_side_resets_the_other(void **state)
{
	struct env e;
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	char c;

	start(&e, NULL);
	run(&e);
	assert_int_equal(write(e.client, "x", 1), 1);
	assert_int_equal(read(e.server, &c, 1), 1);
	setsockopt(e.server, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(e.server);
	e.server = -1;
	{
		struct pollfd p = {.fd = e.client, .events = POLLIN};

		assert_int_equal(poll(&p, 1, 5000), 1);
	}
	assert_int_equal(read(e.client, &c, 1), -1);
	assert_int_equal(errno, ECONNRESET);
	finish(&e);
	assert_int_equal(e.st.end, RELAY_END_ERROR);
}

static void test_cancel_ends_it_at_once(void **state)
{
	struct env e;
	struct relay *r = start(&e, NULL);
	char c;

	relay_cancel(r); /* from the loop's thread: it is not running yet */
	assert_int_equal(e.done, 1);
	assert_int_equal(e.st.end, RELAY_END_CANCELED);
	assert_int_equal(read(e.client, &c, 1), -1);
	assert_int_equal(errno, ECONNRESET);
	close(e.client);
	close(e.server);
	loop_free(e.loop);
}

static int on_never(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	fail_msg("the caller's handler was called after the relay took the socket");
	return 0;
}

/* A socket the caller still has registered (the proxy's client while it was named) is taken
 * over by the relay: the caller's handler is never called again, and the relay's end leaves
 * nothing registered. */
static void test_a_registered_socket_is_taken_over(void **state)
{
	struct env e;
	char buf[8];

	memset(&e, 0, sizeof(e));
	assert_int_equal(loop_new(&e.loop), 0);
	tcp_pair(&e.client, &e.relay_a);
	tcp_pair(&e.relay_b, &e.server);
	fcntl(e.relay_a, F_SETFL, O_NONBLOCK);
	fcntl(e.relay_b, F_SETFL, O_NONBLOCK);
	assert_int_equal(write(e.client, "hi", 2), 2);
	assert_int_equal(loop_add_fd(e.loop, e.relay_a, EPOLLIN, on_never, NULL), 0);
	assert_int_equal(relay_start(e.loop, e.relay_a, e.relay_b, NULL, on_done, &e, NULL), 0);
	run(&e);
	read_exactly(e.server, buf, 2); /* waiting before the hand-over: still reported */
	assert_memory_equal(buf, "hi", 2);
	shutdown(e.client, SHUT_WR);
	assert_int_equal(read(e.server, buf, sizeof(buf)), 0);
	shutdown(e.server, SHUT_WR);
	assert_int_equal(read(e.client, buf, sizeof(buf)), 0);
	pthread_join(e.thread, NULL);
	assert_int_equal(e.done, 1);
	assert_int_equal(loop_del_fd(e.loop, e.relay_a), -ENOENT);
	close(e.client);
	close(e.server);
	loop_free(e.loop);
}

static void test_oversized_prefix_is_refused_and_the_sockets_closed(void **state)
{
	static char big[RELAY_MAX_PREFIX + 1];
	struct relay_options o = {.prefix = big, .prefix_len = sizeof(big)};
	struct loop *loop;
	int a, b, c, d;

	assert_int_equal(loop_new(&loop), 0);
	tcp_pair(&a, &b);
	tcp_pair(&c, &d);
	/* The caller had one registered: it must not stay registered to a closed fd (its number
	 * comes back with the next socket). */
	assert_int_equal(loop_add_fd(loop, b, EPOLLIN, on_never, NULL), 0);
	assert_int_equal(relay_start(loop, b, c, &o, on_done, NULL, NULL), -EINVAL);
	assert_int_equal(fcntl(b, F_GETFD), -1); /* closed */
	assert_int_equal(fcntl(c, F_GETFD), -1);
	assert_int_equal(loop_del_fd(loop, b), -ENOENT);
	close(a);
	close(d);
	loop_free(loop);
}

/* The prefix is on its way before the loop runs at all: relay_start() sent it. */
static void test_the_prefix_is_sent_by_relay_start_itself(void **state)
{
	struct env e;
	struct relay_options o = {.prefix = "HEAD:", .prefix_len = 5};
	char buf[16];
	size_t len = 0;
	ssize_t n;

	start(&e, &o);
	read_exactly(e.server, buf, 5); /* no loop thread yet */
	assert_memory_equal(buf, "HEAD:", 5);
	run(&e);
	assert_int_equal(write(e.client, "x", 1), 1);
	shutdown(e.client, SHUT_WR);
	while ((n = read(e.server, buf + len, sizeof(buf) - len)) > 0)
		len += (size_t)n;
	assert_int_equal(len, 1); /* and never again */
	assert_memory_equal(buf, "x", 1);
	shutdown(e.server, SHUT_WR);
	assert_int_equal(read(e.client, buf, sizeof(buf)), 0);
	finish(&e);
	assert_int_equal(e.st.bytes_a_to_b, 6);
	assert_int_equal(e.st.end, RELAY_END_CLOSED);
}

/* A bulk transfer each way, one after the other, each ended by its half-close. */
static void bulk_exchange(struct env *e, unsigned seed)
{
	struct writer up = {.fd = e->client, .len = BULK_LEN, .seed = seed},
	              down = {.fd = e->server, .len = BULK_LEN, .seed = seed + 1};
	pthread_t tu;

	assert_int_equal(pthread_create(&tu, NULL, write_then_shut, &up), 0);
	assert_int_equal(read_check(e->server, seed), (ssize_t)BULK_LEN);
	pthread_join(tu, NULL);
	assert_int_equal(pthread_create(&tu, NULL, write_then_shut, &down), 0);
	assert_int_equal(read_check(e->client, seed + 1), (ssize_t)BULK_LEN);
	pthread_join(tu, NULL);
}

/* A relay that ended cleanly gives its two empty pipes back and the next relay takes them
 * (no pipe2): it carries its own bytes and nothing of the first one's. */
static void test_empty_pipes_go_back_and_serve_the_next_relay(void **state)
{
	struct relay_pipes *pipes;
	struct relay_options o = {0};
	struct env e;

	assert_int_equal(relay_pipes_new(4, &pipes), 0);
	o.pipes = pipes;
	start(&e, &o);
	run(&e);
	bulk_exchange(&e, 11);
	finish(&e);
	assert_int_equal(e.st.end, RELAY_END_CLOSED);
	assert_true(e.st.pipe_size > 0); /* the precondition: both directions spliced */
	assert_int_equal(relay_pipes_held(pipes), 2);
	assert_int_equal(relay_pipes_reused(pipes), 0);

	start(&e, &o);
	run(&e);
	bulk_exchange(&e, 21); /* read_check: nothing but its own pattern */
	finish(&e);
	assert_int_equal(e.st.bytes_a_to_b, BULK_LEN);
	assert_int_equal(e.st.bytes_b_to_a, BULK_LEN);
	assert_int_equal(relay_pipes_reused(pipes), 2);
	assert_int_equal(relay_pipes_held(pipes), 2);
	relay_pipes_free(pipes);
}

/* A pipe that grew for a bulk transfer is closed at the end, not kept (the small answer made
 * no pipe). */
static void test_a_grown_pipe_is_not_kept(void **state)
{
	struct relay_pipes *pipes;
	struct relay_options o = {0};
	struct writer up = {.len = 8u << 20, .seed = 7};
	struct reader at_server = {.seed = 7, .delay_ms = 100};
	struct env e;
	pthread_t tu;
	char buf[8];

	assert_int_equal(relay_pipes_new(4, &pipes), 0);
	o.pipes = pipes;
	start(&e, &o);
	run(&e);
	up.fd = e.client;
	at_server.fd = e.server;
	assert_int_equal(pthread_create(&tu, NULL, write_then_shut, &up), 0);
	read_check_thread(&at_server);
	pthread_join(tu, NULL);
	assert_int_equal(at_server.got, (ssize_t)up.len);
	assert_int_equal(write(e.server, "ok", 2), 2);
	read_exactly(e.client, buf, 2);
	shutdown(e.server, SHUT_WR);
	assert_int_equal(read(e.client, buf, sizeof(buf)), 0);
	finish(&e);
	assert_int_equal(e.st.end, RELAY_END_CLOSED);
	assert_true(e.st.pipe_size > 65536); /* the precondition: it grew */
	assert_int_equal(relay_pipes_held(pipes), 0);
	relay_pipes_free(pipes);
}

/* The attack on the cache: a connection that ends while its pipe still holds bytes (its
 * server reset it mid-transfer) must not hand that pipe, bytes and all, to the next
 * connection. The pipe stays at the default size, so only its content can keep it out. */
static void test_a_pipe_that_holds_bytes_is_never_kept(void **state)
{
	struct relay_pipes *pipes;
	struct relay_options o = {.pipe_size = 65536};
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	static char chunk[65536];
	struct env e;

	assert_int_equal(relay_pipes_new(4, &pipes), 0);
	o.pipes = pipes;
	start(&e, &o);
	run(&e);
	fcntl(e.client, F_SETFL, O_NONBLOCK);
	/* Write until everything is backed up: the server reads nothing, so its socket, the
	 * relay's pipe and the client's socket fill, and then no byte moves for 300 ms. */
	for (;;) {
		struct pollfd p = {.fd = e.client, .events = POLLOUT};

		while (write(e.client, chunk, sizeof(chunk)) > 0)
			;
		assert_int_equal(errno, EAGAIN);
		if (poll(&p, 1, 300) == 0)
			break;
	}
	assert_int_equal(setsockopt(e.server, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	close(e.server);
	e.server = -1;
	finish(&e);
	assert_int_equal(e.st.end, RELAY_END_ERROR);
	assert_int_equal(e.st.pipe_size, 65536);
	assert_int_equal(relay_pipes_held(pipes), 0);
	relay_pipes_free(pipes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_bytes_arrive_intact_both_ways_with_half_close),
	        cmocka_unit_test(test_big_transfers_both_ways_at_once_stay_byte_exact),
	        cmocka_unit_test(test_small_exchanges_after_quiet_gaps_all_arrive),
	        cmocka_unit_test(test_a_full_destination_gets_small_messages_once_it_has_room),
	        cmocka_unit_test(test_bytes_behind_urgent_data_are_not_left_waiting),
	        cmocka_unit_test(test_pipe_growth_falls_back_when_the_kernel_refuses),
	        cmocka_unit_test(test_prefix_goes_before_what_the_client_sends),
	        cmocka_unit_test(test_a_relay_of_only_a_prefix_and_two_ends_makes_no_pipe),
	        cmocka_unit_test(test_idle_relay_ends_and_resets_both_sides),
	        cmocka_unit_test(test_a_reset_on_one_side_resets_the_other),
	        cmocka_unit_test(test_cancel_ends_it_at_once),
	        cmocka_unit_test(test_a_registered_socket_is_taken_over),
	        cmocka_unit_test(test_oversized_prefix_is_refused_and_the_sockets_closed),
	        cmocka_unit_test(test_the_prefix_is_sent_by_relay_start_itself),
	        cmocka_unit_test(test_empty_pipes_go_back_and_serve_the_next_relay),
	        cmocka_unit_test(test_a_grown_pipe_is_not_kept),
	        cmocka_unit_test(test_a_pipe_that_holds_bytes_is_never_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
