/* bench_proxy: the egress proxy against a direct loopback connection and against tinyproxy.
 *
 * One server (an epoll echo / sink thread on 127.0.0.1) is reached four ways:
 *   direct       a plain connection;
 *   transparent  from a sandbox netns with the egress rules: redirected to our proxy, named by
 *                the Host header, dialled and relayed with splice (relay.c);
 *   CONNECT      through our CONNECT proxy;
 *   tinyproxy    through tinyproxy's CONNECT, run on a free port with a temporary config;
 * and, for set-up only, a fifth:
 *   minimal relay  from a second sandbox netns redirected the same way to floor_child(): what
 *                any user-space relay in our place pays (the floor under the transparent way).
 * Our proxy runs in a child process (as in the supervisor: one loop), so its RSS can be read
 * from /proc/PID/status, idle and with 1000 tunnels open.
 *
 * The machine is shared and small (2 cores, other jobs running), so throughput swings from
 * one second to the next. The ways therefore take turns, both for set-up (one sample of each
 * way per round) and for bulk (every way once per round, starting with a different one each
 * round), and the bulk ratio of a way is its throughput over the direct throughput of the same
 * round, the median over the rounds. Every way sends the same bytes with the same client and
 * server sockets (no socket options on either); the sink answers once it has all of them. */
#include "tests/bench/bench.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "netfilter/listen.h"
#include "netfilter/netns.h"
#include "netfilter/nft_egress.h"
#include "base/cleanup.h"
#include "supervisor/egress/local_route.h"
#include "base/loop.h"
#include "supervisor/egress/proxy.h"
#include "supervisor/egress/resolver.h"
#include "supervisor/approval/tokens.h"
#include "tests/bench/bench_summary.h"

#define SETUPS     1000
#define SETUP_RUN  50 /* consecutive set-ups of one way before the next way's turn */
#define BULK_BYTES (512u << 20)
#define BULK_CHUNK (256u << 10)
#define BULK_RUNS  5
#define TUNNELS    1000
#define TOKEN      "bench-token-0123456789"
/* base64("x:" TOKEN) */
#define TOKEN_B64 "eDpiZW5jaC10b2tlbi0wMTIzNDU2Nzg5"

static const char probe[] = "GET / HTTP/1.1\r\nHost: bench.test\r\n\r\n";
static const char bulk_head[] = "POST / HTTP/1.1\r\nHost: bench.test\r\n\r\n";

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- the server: echo ('G...') or sink ('P...', answers "k" when all arrived) ------------- */

struct server {
	int lfd, stop[2];
	uint16_t port;
	pthread_t thread;
};

struct sconn {
	int fd;
	char mode;
	uint64_t got;
};

static void *server_main(void *arg)
{
	struct server *s = arg;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	static char buf[BULK_CHUNK];
	struct epoll_event ev = {.events = EPOLLIN};

	ev.data.ptr = NULL;
	epoll_ctl(ep, EPOLL_CTL_ADD, s->lfd, &ev);
	ev.data.ptr = &s->stop;
	epoll_ctl(ep, EPOLL_CTL_ADD, s->stop[0], &ev);
	for (;;) {
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, 64, -1);

		for (int i = 0; i < n; i++) {
			struct sconn *c = evs[i].data.ptr;
			ssize_t r;

			if (c == NULL) {
				int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
				struct epoll_event cev = {.events = EPOLLIN};

				if (fd < 0)
					continue;
				c = calloc(1, sizeof(*c));
				c->fd = fd;
				cev.data.ptr = c;
				epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
				continue;
			}
			if ((void *)c == (void *)&s->stop) {
				close(ep);
				return NULL;
			}
			r = read(c->fd, buf, sizeof(buf));
			if (r < 0 && errno == EAGAIN)
				continue;
			if (r <= 0) {
				close(c->fd);
				free(c);
				continue;
			}
			if (!c->mode)
				c->mode = buf[0];
			c->got += (uint64_t)r;
			/* Sink: answer when everything arrived (not at EOF: tinyproxy does not pass
			 * a half-close on). */
			if (c->mode == 'P' && c->got == BULK_BYTES + sizeof(bulk_head) - 1)
				(void)!write(c->fd, "k", 1);
			if (c->mode != 'P') {
				/* Echo: small messages; a blocking write is fine for them. */
				fcntl(c->fd, F_SETFL, 0);
				(void)!write(c->fd, buf, (size_t)r);
				fcntl(c->fd, F_SETFL, O_NONBLOCK);
			}
		}
	}
}

static int server_start(struct server *s)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sin);

	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    listen(s->lfd, 4096) < 0 || getsockname(s->lfd, (struct sockaddr *)&sin, &len) < 0 ||
	    pipe2(s->stop, O_CLOEXEC) < 0)
		return -errno;
	s->port = ntohs(sin.sin_port);
	return pthread_create(&s->thread, NULL, server_main, s) == 0 ? 0 : -EAGAIN;
}

static void server_stop(struct server *s)
{
	(void)!write(s->stop[1], "x", 1);
	pthread_join(s->thread, NULL);
	close(s->lfd);
	close(s->stop[0]);
	close(s->stop[1]);
}

/* ---- our proxy, in a child process ------------------------------------------------------- */

static enum proxy_verdict allow_all(void *userdata, struct proxy_conn *conn,
                                    const struct proxy_conn_info *info)
{
	return PROXY_ALLOW;
}

static bool restricted_ok(void *userdata, const struct proxy_conn_info *info)
{
	return true; /* the bench's server is on loopback */
}

static int orig_dst(void *userdata, int fd, const struct sockaddr *peer, socklen_t len,
                    struct sockaddr_storage *ret)
{
	return netfilter_original_dst(fd, ret);
}

static int on_term(struct loop *loop, int sig, void *userdata)
{
	loop_exit(loop, 0);
	return 0;
}

static void proxy_child(int transparent_fd, int connect_fd, const char *hosts)
{
	struct loop *loop;
	struct resolver *res;
	struct proxy *p;
	struct tokens *t;
	struct resolver_config rc;
	struct proxy_config pc;
	struct proxy_ops ops = {
	        .decide = allow_all, .original_dst = orig_dst, .allow_restricted = restricted_ok};
	sigset_t sigs;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	resolver_config_init(&rc);
	rc.hosts_file = hosts;
	rc.resolv_conf = NULL;
	if (loop_new(&loop) < 0 || loop_add_signals(loop, &sigs, on_term, NULL) < 0 ||
	    resolver_new(loop, &rc, NULL, NULL, &res, NULL) < 0 || tokens_new(&t) < 0 ||
	    tokens_register(t, TOKEN, "bench", NULL, NULL) < 0)
		_exit(1);
	proxy_config_init(&pc);
	pc.resolver = res;
	pc.tokens = t;
	if (proxy_new(loop, &pc, &ops, NULL, &p) < 0 ||
	    proxy_add_transparent(p, transparent_fd, "bench", NULL) < 0 ||
	    proxy_add_connect(p, connect_fd) < 0)
		_exit(1);
	loop_run(loop);
	proxy_free(p);
	resolver_free(res);
	tokens_free(t);
	loop_free(loop);
	_exit(0);
}

/* ---- the floor: a minimal relay in the proxy's place ------------------------------------- */

#define FLOOR_FDS 4096

/* What any user-space relay pays in this place, and nothing more: accept, the original
 * destination, a non-blocking connect (looked at once, as ours does), the first bytes sent on,
 * then recv/send both ways from one epoll loop. No naming, no policy, no timers, no audit.
 */
static void floor_child(int transparent_fd)
{
	static int peer[FLOOR_FDS];
	struct epoll_event e = {.events = EPOLLIN, .data.fd = transparent_fd};
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, transparent_fd, &e) < 0)
		_exit(1);
	for (;;) {
		struct epoll_event ev[64];
		int n = epoll_wait(ep, ev, 64, -1);

		for (int i = 0; i < n; i++) {
			int fd = ev[i].data.fd, cfd, up;
			char buf[16384];
			ssize_t got;
			struct sockaddr_storage dst;
			struct sockaddr_in sin = {.sin_family = AF_INET};
			struct pollfd pfd;

			if (fd != transparent_fd) {
				got = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
				if (got > 0)
					(void)send(peer[fd], buf, (size_t)got, MSG_NOSIGNAL);
				else if (got == 0 || errno != EAGAIN) {
					close(peer[fd]);
					close(fd);
				}
				continue;
			}
			cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
			if (cfd < 0)
				continue;
			if (cfd >= FLOOR_FDS || netfilter_original_dst(cfd, &dst) < 0 ||
			    dst.ss_family != AF_INET) {
				close(cfd);
				continue;
			}
			got = recv(cfd, buf, sizeof(buf), MSG_DONTWAIT);
			sin.sin_port = ((struct sockaddr_in *)&dst)->sin_port;
			sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			up = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
			if (up < 0 || up >= FLOOR_FDS ||
			    (connect(up, (struct sockaddr *)&sin, sizeof(sin)) < 0 &&
			     errno != EINPROGRESS)) {
				close(cfd);
				if (up >= 0)
					close(up);
				continue;
			}
			pfd = (struct pollfd){.fd = up, .events = POLLOUT};
			(void)poll(&pfd, 1, -1);
			(void)setsockopt(up, IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int));
			if (got > 0)
				(void)send(up, buf, (size_t)got, MSG_NOSIGNAL);
			peer[cfd] = up;
			peer[up] = cfd;
			e = (struct epoll_event){.events = EPOLLIN | EPOLLRDHUP | EPOLLET,
			                         .data.fd = cfd};
			(void)epoll_ctl(ep, EPOLL_CTL_ADD, cfd, &e);
			e.data.fd = up;
			(void)epoll_ctl(ep, EPOLL_CTL_ADD, up, &e);
		}
	}
}

/* ---- the ways ---------------------------------------------------------------------------- */

/* WAY_FLOOR is set-up only: the minimal relay of floor_child() in a sandbox netns of its own,
 * redirected as the transparent way is. */
enum way { WAY_DIRECT, WAY_TRANSPARENT, WAY_CONNECT, WAY_TINYPROXY, WAY_FLOOR, WAY_COUNT };
static const char *const way_name[WAY_COUNT] = {"direct", "transparent", "CONNECT", "tinyproxy",
                                                "minimal relay"};

struct bench {
	int netns_fd;
	int floor_netns_fd; /* -EBADF: no floor */
	uint16_t server_port;
	uint16_t connect_port;   /* ours */
	uint16_t tinyproxy_port; /* 0: not available */
};

struct sock_args {
	int fd;
};

static int make_socket(void *userdata)
{
	struct sock_args *a = userdata;

	a->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	return a->fd < 0 ? -errno : 0;
}

static int new_socket(const struct bench *b, enum way w)
{
	struct sock_args a = {.fd = -1};

	if (w != WAY_TRANSPARENT && w != WAY_FLOOR)
		return socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (netfilter_run_in_netns(w == WAY_FLOOR ? b->floor_netns_fd : b->netns_fd, make_socket,
	                           &a) < 0)
		return -1;
	return a.fd;
}

static int read_exact(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

		if (n <= 0)
			return -EIO;
		got += (size_t)n;
	}
	return 0;
}

/* Connect FD the way W; afterwards it carries the server's protocol. */
static int way_connect(const struct bench *b, enum way w, int fd)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(b->server_port)};
	char req[256], head[256];
	size_t len = 0;
	int n;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (w == WAY_TRANSPARENT || w == WAY_FLOOR)
		inet_pton(AF_INET, "203.0.113.7", &sin.sin_addr); /* redirected */
	if (w == WAY_CONNECT)
		sin.sin_port = htons(b->connect_port);
	if (w == WAY_TINYPROXY)
		sin.sin_port = htons(b->tinyproxy_port);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		return -errno;
	if (w == WAY_DIRECT || w == WAY_TRANSPARENT || w == WAY_FLOOR)
		return 0;
	n = snprintf(req, sizeof(req),
	             "CONNECT 127.0.0.1:%u HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n"
	             "Proxy-Authorization: Basic " TOKEN_B64 "\r\n\r\n",
	             b->server_port, b->server_port);
	if (write(fd, req, (size_t)n) != n)
		return -EIO;
	/* The server sends nothing before it is sent something: the answer head is all
	 * there is to read. */
	while (len < sizeof(head) - 1) {
		ssize_t got = read(fd, head + len, sizeof(head) - 1 - len);

		if (got <= 0)
			return -EIO;
		len += (size_t)got;
		if (len >= 4 && memcmp(head + len - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	head[len] = '\0';
	return strncmp(head, "HTTP/1.1 200", 12) == 0 || strncmp(head, "HTTP/1.0 200", 12) == 0
	               ? 0
	               : -EPROTO;
}

/* Connect and one probe round trip; the connection stays open in *ret_fd. */
static int way_open(const struct bench *b, enum way w, uint64_t *ret_ns, int *ret_fd)
{
	int fd = new_socket(b, w), one = 1, r;
	char back[sizeof(probe)];
	uint64_t t0;

	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	t0 = now_ns();
	r = way_connect(b, w, fd);
	if (r >= 0 && write(fd, probe, sizeof(probe) - 1) != sizeof(probe) - 1)
		r = -EIO;
	if (r >= 0)
		r = read_exact(fd, back, sizeof(probe) - 1);
	if (r < 0) {
		close(fd);
		return r;
	}
	*ret_ns = now_ns() - t0;
	*ret_fd = fd;
	return 0;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, c = *(const uint64_t *)y;

	return a < c ? -1 : a > c;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, c = *(const double *)y;

	return a < c ? -1 : a > c;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Time PID spent on a CPU, in nanoseconds (/proc/PID/schedstat: not rounded to clock ticks).
 * 0 when unknown. */
static uint64_t oncpu_ns(pid_t pid)
{
	char path[64];
	unsigned long long ns = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &ns) != 1)
		ns = 0;
	fclose(f);
	return ns;
}

/* How often PID went to sleep and was woken again (voluntary context switches, all its
 * threads: the proxy has one). 0 when unknown. */
static uint64_t wakeups(pid_t pid)
{
	char path[64], line[256];
	unsigned long long n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %llu", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* The median set-up time of each way in ON, the ways taking turns every SETUP_RUN set-ups
 * (long enough for each way to run warm, short enough that a change in the machine's load
 * hits all alike), and the CPU time our proxy (PROXY) spent per set-up of the transparent
 * and CONNECT ways: what it costs whatever the machine's wake-up latency. A tinyproxy that
 * fails is dropped from ON (with a note); a failure of ours or of the direct way ends it. */
static int measure_setups(const struct bench *b, const pid_t pids[WAY_COUNT], bool on[WAY_COUNT],
                          double ret_us[WAY_COUNT], double ret_cpu_us[WAY_COUNT],
                          double ret_wakeups[WAY_COUNT])
{
	_cleanup_free_ uint64_t *samples = calloc((size_t)SETUPS * WAY_COUNT, sizeof(uint64_t));
	uint64_t cpu[WAY_COUNT] = {0}, woken[WAY_COUNT] = {0};

	if (!samples)
		return -ENOMEM;
	for (int start = 0; start < SETUPS; start += SETUP_RUN)
		for (int k = 0; k < WAY_COUNT * SETUP_RUN; k++) {
			int w = k / SETUP_RUN, i = start + k % SETUP_RUN, fd, r;
			uint64_t c0 = 0, w0 = 0;

			if (!on[w] || i >= SETUPS)
				continue;
			if (pids[w] > 0) {
				c0 = oncpu_ns(pids[w]);
				w0 = wakeups(pids[w]);
			}
			r = way_open(b, w, &samples[(size_t)w * SETUPS + (size_t)i], &fd);
			if (r < 0 && w == WAY_TINYPROXY) {
				printf("proxy: measuring tinyproxy failed: %s\n", strerror(-r));
				on[w] = false;
				continue;
			}
			if (r < 0) {
				printf("proxy: measuring %s set-up failed: %s\n", way_name[w],
				       strerror(-r));
				return r;
			}
			close(fd);
			if (pids[w] > 0) {
				cpu[w] += oncpu_ns(pids[w]) - c0;
				woken[w] += wakeups(pids[w]) - w0;
			}
		}
	for (int w = 0; w < WAY_COUNT; w++) {
		uint64_t *s = samples + (size_t)w * SETUPS;

		ret_cpu_us[w] = (double)cpu[w] / SETUPS / 1e3;
		ret_wakeups[w] = (double)woken[w] / SETUPS;
		if (!on[w])
			continue;
		qsort(s, SETUPS, sizeof(uint64_t), cmp_u64);
		ret_us[w] = (double)s[SETUPS / 2] / 1e3;
	}
	return 0;
}

/* CPU time (user + system) of PID, or of this whole process for 0, in nanoseconds. */
static uint64_t cpu_ns(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut, st;
	FILE *f;
	size_t n;

	if (pid == 0) {
		struct rusage ru;

		getrusage(RUSAGE_SELF, &ru);
		return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) *
		               1000000000ULL +
		       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ULL;
	}
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	/* after the comm: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
	 * utime stime */
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return 0;
	return (uint64_t)(ut + st) * (1000000000ULL / (uint64_t)sysconf(_SC_CLK_TCK));
}

/* One bulk transfer the way W: GB/s, and the CPU time PID spent on it (0: this process). */
static int bulk_once(const struct bench *b, enum way w, pid_t pid, double *ret_gbs,
                     uint64_t *ret_cpu)
{
	static char buf[BULK_CHUNK];
	int fd = new_socket(b, w), r;
	uint64_t t0, c0, sent = 0;
	char k;

	if (fd < 0)
		return -errno;
	memset(buf, 'x', sizeof(buf));
	c0 = cpu_ns(pid);
	t0 = now_ns();
	r = way_connect(b, w, fd);
	if (r >= 0 && write(fd, bulk_head, sizeof(bulk_head) - 1) != sizeof(bulk_head) - 1)
		r = -EIO;
	while (r >= 0 && sent < BULK_BYTES) {
		ssize_t n = write(fd, buf, sizeof(buf));

		if (n <= 0)
			r = -EIO;
		else
			sent += (uint64_t)n;
	}
	if (r >= 0 && read(fd, &k, 1) != 1)
		r = -EIO;
	close(fd);
	if (r < 0)
		return r;
	*ret_gbs = (double)sent / (double)(now_ns() - t0);
	*ret_cpu = cpu_ns(pid) - c0;
	return 0;
}

static long rss_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* Open TUNNELS tunnels the way W and read PID's RSS with them open. */
static int measure_tunnels(const struct bench *b, enum way w, pid_t pid, long *ret_idle,
                           long *ret_busy, double *ret_ms)
{
	_cleanup_free_ int *fds = calloc(TUNNELS, sizeof(int));
	uint64_t t0 = now_ns(), ns;
	int r = 0, n = 0;

	if (!fds)
		return -ENOMEM;
	*ret_idle = rss_kib(pid);
	for (; n < TUNNELS && r >= 0; n++)
		r = way_open(b, w, &ns, &fds[n]);
	if (r < 0)
		n--;
	*ret_ms = (double)(now_ns() - t0) / 1e6;
	*ret_busy = rss_kib(pid);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	return r;
}

/* ---- tinyproxy --------------------------------------------------------------------------- */

static uint16_t free_port(void)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	uint16_t port = 0;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sin, &len) == 0)
		port = ntohs(sin.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static pid_t tinyproxy_start(const char *dir, uint16_t *ret_port)
{
	char conf[256];
	uint16_t port = free_port();
	FILE *f;
	pid_t pid;

	snprintf(conf, sizeof(conf), "%s/tinyproxy.conf", dir);
	f = fopen(conf, "we");
	if (!f || port == 0)
		return -1;
	fprintf(f,
	        "Port %u\nListen 127.0.0.1\nTimeout 600\nMaxClients %d\nAllow 127.0.0.1\n"
	        "LogLevel Critical\n",
	        port, TUNNELS + 100);
	fclose(f);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		dup2(null, 1);
		dup2(null, 2);
		execlp("tinyproxy", "tinyproxy", "-d", "-c", conf, (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		return -1;
	/* Ready when it accepts. */
	for (int i = 0; i < 200; i++) {
		struct sockaddr_in sin = {.sin_family = AF_INET,
		                          .sin_port = htons(port),
		                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int ok = connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0;
		int status;

		close(fd);
		if (ok) {
			*ret_port = port;
			return pid;
		}
		if (waitpid(pid, &status, WNOHANG) == pid)
			return -1; /* not installed, or it failed */
		usleep(10000);
	}
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	return -1;
}

static void stop_child(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}
}

/* ---- the section ------------------------------------------------------------------------- */

/* What the proxy pays per address it dials to know whether it is this host (local_route.h),
 * and what re-reading every address of the host instead would cost. */
static void bench_local_route(void)
{
	struct local_route *lr = NULL;
	struct sockaddr_in sin = {.sin_family = AF_INET};
	const int n = 20000, m = 2000;
	uint64_t t0;
	double route_us, kept_us, ifaddrs_us;
	bool caches;

	if (local_route_new(&lr) < 0) {
		printf("route lookup: skipped (no netlink socket)\n");
		return;
	}
	/* A new address each time (10.x.y.z): every one is asked of the kernel. */
	t0 = now_ns();
	for (int i = 0; i < n; i++) {
		sin.sin_addr.s_addr = htonl(0x0a000000u | (uint32_t)(i + 1));
		(void)local_route_is_local(lr, (struct sockaddr *)&sin);
	}
	route_us = (double)(now_ns() - t0) / n / 1000.0;
	/* The same address again: the answer kept, unless the routes changed meanwhile. */
	inet_pton(AF_INET, "198.51.100.7", &sin.sin_addr);
	t0 = now_ns();
	for (int i = 0; i < n; i++)
		(void)local_route_is_local(lr, (struct sockaddr *)&sin);
	kept_us = (double)(now_ns() - t0) / n / 1000.0;
	caches = local_route_caches(lr);
	local_route_free(lr);
	t0 = now_ns();
	for (int i = 0; i < m; i++) {
		struct ifaddrs *ifa;

		if (getifaddrs(&ifa) == 0)
			freeifaddrs(ifa);
	}
	ifaddrs_us = (double)(now_ns() - t0) / m / 1000.0;
	printf("is the destination this host? one route lookup %.2f µs, the answer kept for an "
	       "address asked before %.2f µs%s (re-reading every address with getifaddrs: %.2f "
	       "µs)\n",
	       route_us, kept_us, caches ? "" : " (nothing kept: no announcements)", ifaddrs_us);
}

void bench_proxy(void)
{
	struct bench b = {.netns_fd = -EBADF, .floor_netns_fd = -EBADF};
	struct netfilter_listeners l = NETFILTER_LISTENERS_INIT;
	struct nft_egress *rules = NULL;
	struct cl_error err = {{0}};
	struct server srv;
	struct rlimit rl = {.rlim_cur = 65536, .rlim_max = 65536};
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t slen = sizeof(sin);
	char dir[] = "/tmp/bench_proxy.XXXXXX", hosts[64];
	_cleanup_close_ int connect_fd = -EBADF;
	pid_t proxy_pid = -1, tiny_pid = -1, floor_pid = -1;
	double setup_us[WAY_COUNT] = {0}, best_gbs[WAY_COUNT] = {0}, ratio[WAY_COUNT] = {0};
	double setup_cpu_us[WAY_COUNT] = {0}, setup_wakeups[WAY_COUNT] = {0};
	double cpu_ms_per_gib[WAY_COUNT] = {0};
	double run_gbs[BULK_RUNS][WAY_COUNT] = {{0}}, run_cpu[BULK_RUNS][WAY_COUNT] = {{0}};
	bool on[WAY_COUNT] = {true, true, true, false, false};
	struct netfilter_listeners fl = NETFILTER_LISTENERS_INIT;
	struct nft_egress *floor_rules = NULL;
	bool floor_ok = false;
	int runs = 0;
	long idle = 0, busy = 0, tiny_idle = 0, tiny_busy = 0;
	double open_ms = 0, tiny_open_ms = 0;
	FILE *f;
	int r;

	bench_local_route();
	if (geteuid() != 0) {
		printf("proxy: skipped (needs root: network namespaces, nftables)\n");
		return;
	}
	setrlimit(RLIMIT_NOFILE, &rl);
	if (!mkdtemp(dir)) {
		printf("proxy: no temporary directory: %s\n", strerror(errno));
		return;
	}
	snprintf(hosts, sizeof(hosts), "%s/hosts", dir);
	f = fopen(hosts, "we");
	if (!f) {
		rmdir(dir);
		return;
	}
	fprintf(f, "127.0.0.1 bench.test\n");
	fclose(f);

	r = netfilter_netns_create(&b.netns_fd);
	if (r >= 0)
		r = netfilter_netns_setup(b.netns_fd, &err);
	if (r >= 0)
		r = netfilter_listeners_open(b.netns_fd, 0, 0, &l, &err);
	if (r >= 0)
		r = nft_egress_install(b.netns_fd,
		                       &(struct nft_egress_config){.proxy_port = l.proxy_port,
		                                                   .dns_port = l.dns_port},
		                       &rules, &err);
	if (r >= 0) {
		connect_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (connect_fd < 0 || bind(connect_fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
		    listen(connect_fd, 4096) < 0 ||
		    getsockname(connect_fd, (struct sockaddr *)&sin, &slen) < 0)
			r = -errno;
		b.connect_port = ntohs(sin.sin_port);
	}
	if (r < 0) {
		printf("proxy: set-up failed: %s\n", err.msg[0] ? err.msg : strerror(-r));
		goto out;
	}
	/* The floor's own sandbox netns, made the same way (without it: no floor row). */
	floor_ok = netfilter_netns_create(&b.floor_netns_fd) >= 0 &&
	           netfilter_netns_setup(b.floor_netns_fd, &err) >= 0 &&
	           netfilter_listeners_open(b.floor_netns_fd, 0, 0, &fl, &err) >= 0 &&
	           nft_egress_install(b.floor_netns_fd,
	                              &(struct nft_egress_config){.proxy_port = fl.proxy_port,
	                                                          .dns_port = fl.dns_port},
	                              &floor_rules, &err) >= 0;
	/* Fork before any thread exists in this process. */
	proxy_pid = fork();
	if (proxy_pid == 0)
		proxy_child(l.proxy4, connect_fd, hosts);
	if (proxy_pid < 0) {
		printf("proxy: fork: %s\n", strerror(errno));
		goto out;
	}
	if (floor_ok) {
		floor_pid = fork();
		if (floor_pid == 0)
			floor_child(fl.proxy4);
	}
	tiny_pid = tinyproxy_start(dir, &b.tinyproxy_port);
	if (server_start(&srv) < 0) {
		printf("proxy: cannot start the server\n");
		goto out;
	}
	b.server_port = srv.port;

	on[WAY_TINYPROXY] = tiny_pid > 0;
	on[WAY_FLOOR] = floor_pid > 0;
	{
		const pid_t pids[WAY_COUNT] = {[WAY_TRANSPARENT] = proxy_pid,
		                               [WAY_CONNECT] = proxy_pid,
		                               [WAY_FLOOR] = floor_pid};

		r = measure_setups(&b, pids, on, setup_us, setup_cpu_us, setup_wakeups);
	}
	if (r >= 0 && tiny_pid > 0 && !on[WAY_TINYPROXY]) {
		stop_child(tiny_pid);
		tiny_pid = -1;
	}
	/* Bulk in rounds: every way once per round, each round starting with another way. */
	for (int run = 0; run < BULK_RUNS && r >= 0; run++, runs++)
		for (int k = 0; k < WAY_COUNT && r >= 0; k++) {
			int w = (run + k) % WAY_COUNT;
			pid_t who = w == WAY_DIRECT ? 0 : w == WAY_TINYPROXY ? tiny_pid : proxy_pid;
			double g = 0;
			uint64_t cpu = 0;

			if ((w == WAY_TINYPROXY && tiny_pid < 0) || w == WAY_FLOOR)
				continue;
			r = bulk_once(&b, w, who, &g, &cpu);
			if (r < 0 && w == WAY_TINYPROXY) {
				printf("proxy: tinyproxy bulk failed: %s\n", strerror(-r));
				stop_child(tiny_pid);
				tiny_pid = -1;
				r = 0;
				continue;
			}
			if (r < 0) {
				printf("proxy: measuring %s bulk failed: %s\n", way_name[w],
				       strerror(-r));
				break;
			}
			run_gbs[run][w] = g;
			run_cpu[run][w] = (double)cpu / 1e6 * (double)(1u << 30) / BULK_BYTES;
			if (g > best_gbs[w])
				best_gbs[w] = g;
		}
	for (int w = 0; w < WAY_COUNT && r >= 0 && runs > 0; w++) {
		double v[BULK_RUNS], c[BULK_RUNS];

		for (int i = 0; i < runs; i++) {
			v[i] = run_gbs[i][w] / run_gbs[i][WAY_DIRECT];
			c[i] = run_cpu[i][w];
		}
		ratio[w] = median(v, runs);
		cpu_ms_per_gib[w] = median(c, runs);
	}
	if (r >= 0)
		r = measure_tunnels(&b, WAY_CONNECT, proxy_pid, &idle, &busy, &open_ms);
	if (r >= 0 && tiny_pid > 0)
		(void)measure_tunnels(&b, WAY_TINYPROXY, tiny_pid, &tiny_idle, &tiny_busy,
		                      &tiny_open_ms);
	server_stop(&srv);
	if (r < 0)
		goto out;

	printf("connect set-up + one request/answer, median of %d (the ways taking turns of %d): "
	       "direct "
	       "%.1f µs, transparent "
	       "%.1f µs (%+.1f µs), CONNECT %.1f µs (%+.1f µs)",
	       SETUPS, SETUP_RUN, setup_us[0], setup_us[1], setup_us[1] - setup_us[0], setup_us[2],
	       setup_us[2] - setup_us[0]);
	if (tiny_pid > 0)
		printf(", tinyproxy CONNECT %.1f µs (%+.1f µs)", setup_us[3],
		       setup_us[3] - setup_us[0]);
	printf("\n");
	if (on[WAY_FLOOR])
		printf("the floor of a user-space relay here: a minimal one redirected as ours is "
		       "(accept, original destination, connect, recv/send; no naming, policy, "
		       "timer "
		       "or audit), taking the same turns: %.1f µs (%+.1f µs over direct); its CPU "
		       "per set-up %.1f µs, wake-ups %.2f (ours: %.1f µs, %.2f)\n",
		       setup_us[WAY_FLOOR], setup_us[WAY_FLOOR] - setup_us[0],
		       setup_cpu_us[WAY_FLOOR], setup_wakeups[WAY_FLOOR], setup_cpu_us[1],
		       setup_wakeups[1]);
	bench_summary_set(BENCH_ROW_PROXY_SETUP, setup_us[1] - setup_us[0], -1);
	if (on[WAY_FLOOR])
		bench_summary_floor(BENCH_ROW_PROXY_SETUP, setup_us[WAY_FLOOR] - setup_us[0],
		                    "a minimal user-space relay redirected as ours is");
	printf("bulk %u MiB one way, %d rounds, best GB/s and the median of (way / direct in the "
	       "same round): direct %.2f GB/s; transparent %.2f GB/s, %.0f %%; CONNECT %.2f GB/s, "
	       "%.0f %%",
	       BULK_BYTES >> 20, runs, best_gbs[0], best_gbs[1], 100 * ratio[1], best_gbs[2],
	       100 * ratio[2]);
	if (tiny_pid > 0)
		printf("; tinyproxy %.2f GB/s, %.0f %%; ours (CONNECT) / tinyproxy %.2fx",
		       best_gbs[3], 100 * ratio[3], ratio[2] / ratio[3]);
	printf("\n");
	/* What the proxy itself spends from accept to the close of a set-up connection (the
	 * client's connect, the dial, the relay of one request and answer, both ends): the
	 * part of the set-up overhead that is ours, apart from the wake-ups the kernel and the
	 * machine's load cost. */
	printf("proxy CPU per set-up (accept to close): transparent %.1f µs, CONNECT %.1f µs; its "
	       "wake-ups per set-up (voluntary context switches): transparent %.2f, CONNECT "
	       "%.2f\n",
	       setup_cpu_us[1], setup_cpu_us[2], setup_wakeups[1], setup_wakeups[2]);
	printf("target bulk >= 90 %% of direct: transparent %.0f %%, CONNECT %.0f %%; target "
	       "set-up overhead <= 60 µs: transparent %+.1f µs, CONNECT %+.1f µs\n",
	       100 * ratio[1], 100 * ratio[2], setup_us[1] - setup_us[0],
	       setup_us[2] - setup_us[0]);
	/* What the proxy costs, whatever else the machine runs: its CPU time per GiB relayed,
	 * next to what the client and the server spend on a direct GiB. */
	printf("CPU per GiB (median): client + server direct %.0f ms; the relay in the "
	       "transparent proxy %.0f ms, in the CONNECT proxy %.0f ms",
	       cpu_ms_per_gib[0], cpu_ms_per_gib[1], cpu_ms_per_gib[2]);
	if (tiny_pid > 0)
		printf(", tinyproxy %.0f ms", cpu_ms_per_gib[3]);
	printf("\n");
	printf("%d concurrent CONNECT tunnels (opened in %.0f ms): proxy RSS %.1f MB idle, %.1f MB "
	       "with them open (%.1f KiB per tunnel)",
	       TUNNELS, open_ms, idle / 1024.0, busy / 1024.0, (double)(busy - idle) / TUNNELS);
	if (tiny_pid > 0 && tiny_busy > 0)
		printf("; tinyproxy %.1f MB idle, %.1f MB with them open", tiny_idle / 1024.0,
		       tiny_busy / 1024.0);
	printf("\n");
	if (tiny_pid < 0)
		printf("tinyproxy: not measured (not installed or did not start; "
		       "scripts/install-deps "
		       "installs it)\n");
out:
	stop_child(proxy_pid);
	stop_child(tiny_pid);
	stop_child(floor_pid);
	netfilter_listeners_close(&fl);
	nft_egress_free(floor_rules);
	cl_closep(&b.floor_netns_fd);
	netfilter_listeners_close(&l);
	nft_egress_free(rules);
	cl_closep(&b.netns_fd);
	unlink(hosts);
	{
		char conf[256];

		snprintf(conf, sizeof(conf), "%s/tinyproxy.conf", dir);
		unlink(conf);
	}
	rmdir(dir);
}
