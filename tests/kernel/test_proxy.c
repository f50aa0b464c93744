/* The egress proxy end to end, with real sockets (root).
 *
 * The whole test first moves into a network namespace of its own, which plays the host: the
 * proxy's loop lives there, with a server on its loopback (127.0.0.1) and one listening on
 * every address of it ([::], also IPv4), and nothing the test does touches the real host's
 * network. The upstream servers (echo servers on 192.0.2.1 and [2001:db8::1]) live in a
 * second one, "the world", joined to the host's by a veth pair (host side 192.0.2.254 and
 * 2001:db8::fe): the proxy refuses every address of the host it dials from. From it a sandbox netns
 * is made as `run` will make it (netfilter_netns_setup, the egress rules, the listeners), and
 * clients use sockets created inside the sandbox netns: every TCP connection they open lands on the
 * transparent proxy, every DNS query on the resolver. Names map to the test's addresses through a
 * hosts file of the resolver's.
 *
 * The owner's policy (decide) is a table: denied.test is denied, names starting with
 * "pending" are held until the test answers, the rest are allowed. A banner server on
 * 192.0.2.1 speaks first (as ssh or smtp do), then echoes: for clients that send nothing. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "netfilter/listen.h"
#include "netfilter/netns.h"
#include "netfilter/nft_egress.h"
#include "base/cleanup.h"
#include "supervisor/egress/dns_msg.h"
#include "supervisor/egress/fakeip.h"
#include "supervisor/egress/local_route.h"
#include "base/loop.h"
#include "supervisor/egress/proxy.h"
#include "supervisor/egress/resolver.h"
#include "supervisor/approval/tokens.h"

#define WAIT_MS 3000
#define TOKEN   "tok-0123456789abcdef"
#define BANNER  "220 banner.test ready\r\n"
/* The proxy's sniff deadlines in this test: named by the resolver, and unnamed. */
#define PEEK_NAMED_MS 400
#define PEEK_MS       800

static const char *skip_reason;

/* ---- the upstream echo servers ----------------------------------------------------------- */

struct echo_server {
	int fd;
	pthread_t thread;
	bool running;
	bool banner; /* say BANNER on accept, before echoing */
	int accepted;
};

static void *echo_conn(void *arg)
{
	int fd = (int)((intptr_t)arg >> 1);
	char buf[65536];
	ssize_t n;

	if (((intptr_t)arg & 1) && write(fd, BANNER, strlen(BANNER)) != (ssize_t)strlen(BANNER))
		goto out;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		ssize_t off = 0;

		while (off < n) {
			ssize_t w = write(fd, buf + off, (size_t)(n - off));

			if (w <= 0)
				goto out;
			off += w;
		}
	}
	shutdown(fd, SHUT_WR);
out:
	/* Wait for the peer to close too, so the close sends no RST. */
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
	return NULL;
}

static void *echo_main(void *arg)
{
	struct echo_server *s = arg;

	for (;;) {
		int c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
		pthread_t t;

		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return NULL;
		}
		__atomic_add_fetch(&s->accepted, 1, __ATOMIC_SEQ_CST);
		if (pthread_create(&t, NULL, echo_conn,
		                   (void *)((intptr_t)c << 1 | (s->banner ? 1 : 0))) != 0) {
			close(c);
			continue;
		}
		pthread_detach(t);
	}
}

static int echo_start(struct echo_server *s, int family, const char *addr, uint16_t *port)
{
	struct sockaddr_storage ss = {0};
	socklen_t len;
	int one = 1;

	s->fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		s->fd = -EBADF;
		return -errno;
	}
	setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(*port);
		inet_pton(AF_INET, addr, &a->sin_addr);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons(*port);
		inet_pton(AF_INET6, addr, &a->sin6_addr);
		len = sizeof(*a);
	}
	if (bind(s->fd, (struct sockaddr *)&ss, len) < 0 || listen(s->fd, 128) < 0 ||
	    getsockname(s->fd, (struct sockaddr *)&ss, &len) < 0)
		return -errno;
	*port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
	                                : ((struct sockaddr_in6 *)&ss)->sin6_port);
	if (pthread_create(&s->thread, NULL, echo_main, s) != 0)
		return -EAGAIN;
	s->running = true;
	return 0;
}

static void echo_stop(struct echo_server *s)
{
	if (s->running) {
		shutdown(s->fd, SHUT_RDWR); /* wakes accept() */
		pthread_join(s->thread, NULL);
		s->running = false;
	}
	cl_closep(&s->fd);
}

/* ---- the owner: policy table, observations ----------------------------------------------- */

struct seen {
	int decide_calls;
	int closed_calls;
	char host[DOMAIN_HOST_MAX + 1];
	char name_source[16];
	char sandbox[64];
	char project[64];
	uint16_t port;
	enum proxy_source source;
	enum proxy_outcome outcome;
	char reason[128];
	uint64_t bytes_up, bytes_down;
	struct proxy_conn *pending;
};

enum { CMD_DECIDE, CMD_STOP };

struct cmd {
	int op;
	bool allow;
	char reason[128];
};

static struct env {
	int netns_fd;
	struct nft_egress *rules;
	struct netfilter_listeners l;
	int world_fd;
	struct echo_server echo4, echo6, echo_lo, banner, self;
	uint16_t port;        /* of every echo server */
	uint16_t self_port;   /* of the one on [::] of the host */
	uint16_t banner_port; /* of the banner server, on 192.0.2.1 */
	char hosts_path[64];
	struct loop *loop;
	struct resolver *resolver;
	struct proxy *proxy;
	struct tokens *tokens;
	int connect_fd;
	uint16_t connect_port;
	int cmd_pipe[2];
	pthread_t loop_thread;
	bool loop_running;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct seen seen;
	/* Over the whole run (never reset): a test starts once every connection an earlier
	 * test opened has been reported closed, or a late close would count as its own. */
	long decided_total, closed_total;
} env = {.netns_fd = -EBADF,
         .world_fd = -EBADF,
         .self.fd = -EBADF,
         .connect_fd = -EBADF,
         .cmd_pipe = {-EBADF, -EBADF},
         .echo4.fd = -EBADF,
         .echo6.fd = -EBADF,
         .echo_lo.fd = -EBADF,
         .banner.fd = -EBADF};

static enum proxy_verdict on_decide(void *userdata, struct proxy_conn *conn,
                                    const struct proxy_conn_info *info)
{
	enum proxy_verdict v = PROXY_ALLOW;

	pthread_mutex_lock(&env.lock);
	env.seen.decide_calls++;
	env.decided_total++;
	snprintf(env.seen.host, sizeof(env.seen.host), "%s", info->host);
	snprintf(env.seen.name_source, sizeof(env.seen.name_source), "%s", info->name_source);
	snprintf(env.seen.sandbox, sizeof(env.seen.sandbox), "%s", info->sandbox);
	snprintf(env.seen.project, sizeof(env.seen.project), "%s",
	         info->project ? info->project : "");
	env.seen.port = info->port;
	env.seen.source = info->source;
	if (strcmp(info->host, "denied.test") == 0) {
		v = PROXY_DENY;
	} else if (strncmp(info->host, "pending", 7) == 0) {
		env.seen.pending = conn;
		v = PROXY_PENDING;
	}
	pthread_cond_broadcast(&env.cond);
	pthread_mutex_unlock(&env.lock);
	return v;
}

static void on_closed(void *userdata, struct proxy_conn *conn, const struct proxy_conn_info *info,
                      const struct proxy_stats *st)
{
	pthread_mutex_lock(&env.lock);
	env.seen.closed_calls++;
	env.closed_total++;
	env.seen.outcome = st->outcome;
	env.seen.bytes_up = st->bytes_up;
	env.seen.bytes_down = st->bytes_down;
	snprintf(env.seen.reason, sizeof(env.seen.reason), "%s", st->reason ? st->reason : "");
	if (env.seen.pending == conn)
		env.seen.pending = NULL;
	pthread_cond_broadcast(&env.cond);
	pthread_mutex_unlock(&env.lock);
}

static int on_original_dst(void *userdata, int fd, const struct sockaddr *peer, socklen_t len,
                           struct sockaddr_storage *ret)
{
	return netfilter_original_dst(fd, ret);
}

static bool on_allow_restricted(void *userdata, const struct proxy_conn_info *info)
{
	return strcmp(info->host, "loopok.test") == 0 || strcmp(info->host, "selfok.test") == 0;
}

static enum resolver_name on_name_allowed(void *userdata, const void *tag, const char *name)
{
	return strcmp(name, "denied.test") != 0 ? RESOLVER_NAME_LOOKUP : RESOLVER_NAME_DENY;
}

static int on_cmd(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct cmd c;

	if (read(fd, &c, sizeof(c)) != sizeof(c))
		return 0;
	if (c.op == CMD_STOP) {
		loop_exit(loop, 0);
		return 0;
	}
	pthread_mutex_lock(&env.lock);
	{
		struct proxy_conn *p = env.seen.pending;

		pthread_mutex_unlock(&env.lock);
		if (p)
			proxy_conn_decide(p, c.allow, c.reason[0] ? c.reason : NULL);
	}
	return 0;
}

static void send_cmd(int op, bool allow, const char *reason)
{
	struct cmd c = {.op = op, .allow = allow};

	snprintf(c.reason, sizeof(c.reason), "%s", reason ? reason : "");
	assert_int_equal(write(env.cmd_pipe[1], &c, sizeof(c)), sizeof(c));
}

static void *loop_main(void *arg)
{
	loop_run(env.loop);
	return NULL;
}

static void reset_seen(void)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WAIT_MS / 1000;
	pthread_mutex_lock(&env.lock);
	/* Bounded: a connection still held on purpose must not stop the next test. */
	while (env.closed_total < env.decided_total)
		if (pthread_cond_timedwait(&env.cond, &env.lock, &until) != 0)
			break;
	memset(&env.seen, 0, sizeof(env.seen));
	pthread_mutex_unlock(&env.lock);
}

/* Wait until the proxy reported N closed connections since reset_seen(). */
static bool wait_closed(int n)
{
	struct timespec until;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WAIT_MS / 1000;
	pthread_mutex_lock(&env.lock);
	while (env.seen.closed_calls < n)
		if (pthread_cond_timedwait(&env.cond, &env.lock, &until) != 0)
			break;
	ok = env.seen.closed_calls >= n;
	pthread_mutex_unlock(&env.lock);
	return ok;
}

/* A connection closed since reset_seen(), with outcome WANT. A macro: a failure names the
 * test's line. */
#define assert_closed_as(want)                              \
	do {                                                \
		assert_true(wait_closed(1));                \
		assert_int_equal(env.seen.outcome, (want)); \
	} while (0)

static bool wait_pending(void)
{
	struct timespec until;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WAIT_MS / 1000;
	pthread_mutex_lock(&env.lock);
	while (!env.seen.pending)
		if (pthread_cond_timedwait(&env.cond, &env.lock, &until) != 0)
			break;
	ok = env.seen.pending != NULL;
	pthread_mutex_unlock(&env.lock);
	return ok;
}

/* ---- set-up ------------------------------------------------------------------------------ */

static int run(const char *cmd)
{
	int r = system(cmd);

	if (r != 0)
		fprintf(stderr, "test_proxy: `%s` failed (%d)\n", cmd, r);
	return r == 0 ? 0 : -EIO;
}

static int group_teardown(void **state);
static int setup_failed(void);

/* netfilter_run_in_netns() callbacks: a command, an echo server, in the world's netns. */
static int run_there(void *userdata)
{
	return run(userdata);
}

struct echo_args {
	struct echo_server *s;
	int family;
	const char *addr;
	uint16_t *port;
};

static int echo_start_there(void *userdata)
{
	struct echo_args *a = userdata;

	return echo_start(a->s, a->family, a->addr, a->port);
}

static int echo_start_in_world(struct echo_server *s, int family, const char *addr, uint16_t *port)
{
	struct echo_args a = {s, family, addr, port};

	return netfilter_run_in_netns(env.world_fd, echo_start_there, &a);
}

static int group_setup(void **state)
{
	struct cl_error err = {{0}};
	struct resolver_config rc;
	struct proxy_config pc;
	struct proxy_ops ops = {
	        .decide = on_decide,
	        .closed = on_closed,
	        .original_dst = on_original_dst,
	        .allow_restricted = on_allow_restricted,
	};
	struct resolver_ops rops = {.name_allowed = on_name_allowed};
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t slen = sizeof(sin);
	uint16_t port = 0;
	FILE *f;
	char cmd[512];
	int fd, r;

	pthread_mutex_init(&env.lock, NULL);
	pthread_cond_init(&env.cond, NULL);
	env.l = (struct netfilter_listeners)NETFILTER_LISTENERS_INIT;
	if (skip_reason)
		return 0;
	if (run("ip link set lo up") < 0 || netfilter_netns_create(&env.world_fd) < 0)
		return setup_failed();
	/* Static neighbours: the first IPv6 connection would otherwise wait a second for
	 * neighbour discovery. */
	snprintf(cmd, sizeof(cmd),
	         "ip link add tpw0 address 02:00:00:00:00:01 type veth peer name tpw1 "
	         "address 02:00:00:00:00:02 netns /proc/%d/fd/%d && "
	         "ip addr add 192.0.2.254/24 dev tpw0 && "
	         "ip -6 addr add 2001:db8::fe/64 dev tpw0 nodad && ip link set tpw0 up && "
	         "ip neigh add 192.0.2.1 lladdr 02:00:00:00:00:02 dev tpw0 nud permanent && "
	         "ip neigh add 192.0.2.3 lladdr 02:00:00:00:00:02 dev tpw0 nud permanent && "
	         "ip -6 neigh add 2001:db8::1 lladdr 02:00:00:00:00:02 dev tpw0 nud permanent",
	         (int)getpid(), env.world_fd);
	if (run(cmd) < 0 ||
	    netfilter_run_in_netns(
	            env.world_fd, run_there,
	            "ip link set lo up && ip addr add 192.0.2.1/24 dev tpw1 && "
	            "ip addr add 192.0.2.3/24 dev tpw1 && "
	            "ip -6 addr add 2001:db8::1/64 dev tpw1 nodad && ip link set tpw1 up && "
	            "ip neigh add 192.0.2.254 lladdr 02:00:00:00:00:01 dev tpw1 nud permanent && "
	            "ip -6 neigh add 2001:db8::fe lladdr 02:00:00:00:00:01 dev tpw1 "
	            "nud permanent") < 0)
		return setup_failed();
	if (echo_start_in_world(&env.echo4, AF_INET, "192.0.2.1", &port) < 0)
		return setup_failed();
	env.port = port;
	if (echo_start_in_world(&env.echo6, AF_INET6, "2001:db8::1", &port) < 0 ||
	    echo_start(&env.echo_lo, AF_INET, "127.0.0.1", &port) < 0)
		return setup_failed();
	env.banner.banner = true;
	if (echo_start_in_world(&env.banner, AF_INET, "192.0.2.1", &env.banner_port) < 0)
		return setup_failed();
	/* A service of the host on every address of it, IPv4 included (dual-stack [::]). */
	if (echo_start(&env.self, AF_INET6, "::", &env.self_port) < 0)
		return setup_failed();

	snprintf(env.hosts_path, sizeof(env.hosts_path), "/tmp/test_proxy_hosts.XXXXXX");
	fd = mkstemp(env.hosts_path);
	if (fd < 0) {
		env.hosts_path[0] = '\0';
		return setup_failed();
	}
	if (!(f = fdopen(fd, "w")))
		return setup_failed();
	fprintf(f, "192.0.2.1 web.test tls.test raw.test pending.test pending2.test closed.test "
	           "banner.test\n"
	           "2001:db8::1 v6.test\n"
	           "127.0.0.1 loop.test loopok.test\n"
	           "192.0.2.254 self.test selfok.test\n"
	           "2001:db8::fe self6.test\n"
	           "192.0.2.99 late.test\n"
	           "192.0.2.3 fallback.test\n"
	           "192.0.2.1 fallback.test\n");
	fclose(f);

	r = netfilter_netns_create(&env.netns_fd);
	if (r >= 0)
		r = netfilter_netns_setup(env.netns_fd, &err);
	if (r >= 0)
		r = netfilter_listeners_open(env.netns_fd, 0, 0, &env.l, &err);
	if (r >= 0)
		r = nft_egress_install(env.netns_fd,
		                       &(struct nft_egress_config){.proxy_port = env.l.proxy_port,
		                                                   .dns_port = env.l.dns_port},
		                       &env.rules, &err);
	if (r < 0) {
		fprintf(stderr, "test_proxy: sandbox netns: %s\n",
		        err.msg[0] ? err.msg : strerror(-r));
		return setup_failed();
	}

	if (loop_new(&env.loop) < 0 || pipe2(env.cmd_pipe, O_CLOEXEC | O_NONBLOCK) < 0 ||
	    loop_add_fd(env.loop, env.cmd_pipe[0], EPOLLIN, on_cmd, NULL) < 0)
		return setup_failed();
	resolver_config_init(&rc);
	rc.hosts_file = env.hosts_path;
	rc.resolv_conf = NULL; /* no upstream: every test name is in the hosts file */
	if (resolver_new(env.loop, &rc, &rops, NULL, &env.resolver, &err) < 0) {
		fprintf(stderr, "test_proxy: resolver: %s\n", err.msg);
		return setup_failed();
	}
	if (resolver_serve_udp(env.resolver, env.l.dns_udp4, NULL) < 0 ||
	    resolver_serve_tcp(env.resolver, env.l.dns_tcp4, NULL) < 0)
		return setup_failed();
	if (tokens_new(&env.tokens) < 0 ||
	    tokens_register(env.tokens, TOKEN, "sb-connect", "proj-c", NULL) < 0)
		return setup_failed();
	proxy_config_init(&pc);
	pc.resolver = env.resolver;
	pc.tokens = env.tokens;
	pc.connect_ms = 1000;
	pc.peek_named_ms = PEEK_NAMED_MS;
	pc.peek_ms = PEEK_MS;
	if (proxy_new(env.loop, &pc, &ops, NULL, &env.proxy) < 0 ||
	    proxy_add_transparent(env.proxy, env.l.proxy4, "sb-trans", "proj-t") < 0 ||
	    (env.l.proxy6 >= 0 &&
	     proxy_add_transparent(env.proxy, env.l.proxy6, "sb-trans", "proj-t") < 0))
		return setup_failed();
	env.connect_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (env.connect_fd < 0 || bind(env.connect_fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    listen(env.connect_fd, 128) < 0 ||
	    getsockname(env.connect_fd, (struct sockaddr *)&sin, &slen) < 0 ||
	    proxy_add_connect(env.proxy, env.connect_fd) < 0)
		return setup_failed();
	env.connect_port = ntohs(sin.sin_port);
	if (pthread_create(&env.loop_thread, NULL, loop_main, NULL) != 0)
		return setup_failed();
	env.loop_running = true;
	return 0;
}

static int group_teardown(void **state)
{
	if (skip_reason)
		return 0;
	if (env.loop_running) {
		send_cmd(CMD_STOP, false, NULL);
		pthread_join(env.loop_thread, NULL);
	}
	proxy_free(env.proxy);
	resolver_free(env.resolver);
	tokens_free(env.tokens);
	loop_free(env.loop);
	cl_closep(&env.connect_fd);
	cl_closep(&env.cmd_pipe[0]);
	cl_closep(&env.cmd_pipe[1]);
	netfilter_listeners_close(&env.l);
	nft_egress_free(env.rules);
	cl_closep(&env.netns_fd);
	echo_stop(&env.echo4);
	echo_stop(&env.echo6);
	echo_stop(&env.echo_lo);
	echo_stop(&env.banner);
	echo_stop(&env.self);
	cl_closep(&env.world_fd);
	if (env.hosts_path[0])
		unlink(env.hosts_path);
	return 0;
}

/* cmocka does not call the group teardown when the group setup fails: undo what was done. */
static int setup_failed(void)
{
	group_teardown(NULL);
	return -1;
}

static void skip_if_needed(void)
{
	if (skip_reason) {
		print_message("skipped: %s\n", skip_reason);
		skip();
	}
	reset_seen();
}

/* ---- clients inside the sandbox ---------------------------------------------------------- */

struct sock_args {
	int family, type;
	int fd;
};

static int make_socket(void *userdata)
{
	struct sock_args *a = userdata;

	a->fd = socket(a->family, a->type | SOCK_CLOEXEC, 0);
	return a->fd < 0 ? -errno : 0;
}

/* A socket of the sandbox netns, used from the test's thread. */
static int sandbox_socket(int family, int type)
{
	struct sock_args a = {.family = family, .type = type, .fd = -1};

	assert_int_equal(netfilter_run_in_netns(env.netns_fd, make_socket, &a), 0);
	return a.fd;
}

static void set_timeouts(int fd)
{
	struct timeval tv = {.tv_sec = WAIT_MS / 1000};

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int connect_to(int fd, int family, const char *addr, uint16_t port)
{
	struct sockaddr_storage ss = {0};
	socklen_t len;

	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		assert_int_equal(inet_pton(AF_INET, addr, &a->sin_addr), 1);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		assert_int_equal(inet_pton(AF_INET6, addr, &a->sin6_addr), 1);
		len = sizeof(*a);
	}
	set_timeouts(fd);
	return connect(fd, (struct sockaddr *)&ss, len) < 0 ? -errno : 0;
}

/* Read until EOF (0), an error (-errno) or the timeout (-ETIMEDOUT); GOT and LEN: the bytes. */
static int read_all(int fd, uint8_t *got, size_t size, size_t *len)
{
	*len = 0;
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, WAIT_MS) == 0)
			return -ETIMEDOUT;
		n = read(fd, got + *len, size - *len);
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		*len += (size_t)n;
		if (*len == size)
			return 0;
	}
}

static void write_all(int fd, const void *data, size_t len)
{
	assert_int_equal(send(fd, data, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* Send DATA over a transparent connection to ADDR:PORT, half-close, and expect it echoed back
 * intact and a clean EOF. */
static void expect_echo(int family, const char *addr, uint16_t port, const void *data, size_t len)
{
	_cleanup_close_ int fd = sandbox_socket(family, SOCK_STREAM);
	static uint8_t got[65536];
	size_t got_len;

	assert_int_equal(connect_to(fd, family, addr, port), 0);
	write_all(fd, data, len);
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	assert_int_equal(read_all(fd, got, sizeof(got), &got_len), 0);
	assert_int_equal(got_len, len);
	assert_memory_equal(got, data, len);
}

/* Expect the connection to be reset quickly (RST, not a timeout). */
static void expect_reset(int family, const char *addr, uint16_t port, const void *data, size_t len)
{
	_cleanup_close_ int fd = sandbox_socket(family, SOCK_STREAM);
	uint8_t got[512];
	size_t got_len;
	struct timespec t0, t1;
	int r;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(connect_to(fd, family, addr, port), 0);
	(void)send(fd, data, len, MSG_NOSIGNAL);
	r = read_all(fd, got, sizeof(got), &got_len);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(r, -ECONNRESET);
	assert_int_equal(got_len, 0);
	/* Fail fast: well under the peek deadline plus the decision. */
	assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 1000);
}

static size_t client_hello(const char *name, uint8_t *out)
{
	uint8_t body[512];
	size_t n = 0, nlen = strlen(name), ext_len = 9 + nlen, b;

	body[n++] = 0x03, body[n++] = 0x03;
	memset(body + n, 0x11, 32), n += 32;
	body[n++] = 0;                                                    /* session id */
	body[n++] = 0, body[n++] = 2, body[n++] = 0xc0, body[n++] = 0x2f; /* one suite */
	body[n++] = 1, body[n++] = 0;                                     /* compression */
	body[n++] = (uint8_t)(ext_len >> 8), body[n++] = (uint8_t)ext_len;
	body[n++] = 0, body[n++] = 0; /* server_name */
	body[n++] = (uint8_t)((nlen + 5) >> 8), body[n++] = (uint8_t)(nlen + 5);
	body[n++] = (uint8_t)((nlen + 3) >> 8), body[n++] = (uint8_t)(nlen + 3);
	body[n++] = 0; /* host_name */
	body[n++] = (uint8_t)(nlen >> 8), body[n++] = (uint8_t)nlen;
	memcpy(body + n, name, nlen), n += nlen;
	b = 0;
	out[b++] = 22, out[b++] = 3, out[b++] = 1;
	out[b++] = (uint8_t)((n + 4) >> 8), out[b++] = (uint8_t)(n + 4);
	out[b++] = 1, out[b++] = 0, out[b++] = (uint8_t)(n >> 8), out[b++] = (uint8_t)n;
	memcpy(out + b, body, n);
	return b + n;
}

/* Ask the sandbox's resolver (any address, port 53: redirected) over UDP or TCP. */
static void dns_ask(bool tcp, const char *name, uint16_t qtype, struct dns_addrs *ret)
{
	_cleanup_close_ int fd = sandbox_socket(AF_INET, tcp ? SOCK_STREAM : SOCK_DGRAM);
	struct dns_query q;
	uint8_t buf[2 + 1024];
	int n;
	ssize_t got;

	assert_int_equal(resolver_question(name, qtype, &q), 0);
	n = dns_query_build(&q, 0x4242, buf + 2, sizeof(buf) - 2);
	assert_true(n > 0);
	assert_int_equal(connect_to(fd, AF_INET, "192.0.2.53", 53), 0);
	if (tcp) {
		buf[0] = (uint8_t)(n >> 8);
		buf[1] = (uint8_t)n;
		write_all(fd, buf, (size_t)n + 2);
		assert_int_equal(recv(fd, buf, 2, MSG_WAITALL), 2);
		got = recv(fd, buf + 2, (size_t)buf[0] << 8 | buf[1], MSG_WAITALL);
	} else {
		write_all(fd, buf + 2, (size_t)n);
		got = recv(fd, buf + 2, sizeof(buf) - 2, 0);
	}
	assert_true(got > 0);
	assert_int_equal(dns_response_addrs(buf + 2, (size_t)got, &q, 0x4242, ret, NULL), 0);
}

static void fake_addr_of(const char *name, int family, char *out)
{
	struct dns_addrs a;

	dns_ask(false, name, family == AF_INET ? DNS_TYPE_A : DNS_TYPE_AAAA, &a);
	assert_int_equal(a.rcode, DNS_RCODE_NOERROR);
	assert_int_equal(a.n, 1);
	assert_int_equal(a.addrs[0].family, family);
	inet_ntop(family, &a.addrs[0].v6, out, INET6_ADDRSTRLEN);
}

/* ---- transparent ------------------------------------------------------------------------- */

static void test_http_is_named_by_host_and_relayed_with_half_close(void **state)
{
	static const char req[] = "GET /x HTTP/1.1\r\nHost: web.test\r\nUser-Agent: t\r\n\r\n"
	                          "and a body after the head";

	skip_if_needed();
	/* 203.0.113.5 is nowhere: only dialling the name reaches the echo server. */
	expect_echo(AF_INET, "203.0.113.5", env.port, req, sizeof(req) - 1);
	assert_true(wait_closed(1));
	assert_string_equal(env.seen.host, "web.test");
	assert_string_equal(env.seen.name_source, "http-host");
	assert_int_equal(env.seen.port, env.port);
	assert_int_equal(env.seen.source, PROXY_SOURCE_TRANSPARENT);
	assert_string_equal(env.seen.sandbox, "sb-trans");
	assert_string_equal(env.seen.project, "proj-t");
	assert_int_equal(env.seen.outcome, PROXY_OUTCOME_RELAYED);
	assert_int_equal(env.seen.bytes_up, sizeof(req) - 1);
	assert_int_equal(env.seen.bytes_down, sizeof(req) - 1);
}

static void test_tls_is_named_by_sni(void **state)
{
	uint8_t hello[600];
	size_t n = client_hello("TLS.test", hello);

	skip_if_needed();
	expect_echo(AF_INET, "203.0.113.6", env.port, hello, n);
	assert_true(wait_closed(1));
	assert_string_equal(env.seen.host, "tls.test");
	assert_string_equal(env.seen.name_source, "sni");
}

static void test_big_transfer_arrives_intact(void **state)
{
	static uint8_t data[60000];
	static const char head[] =
	        "POST / HTTP/1.1\r\nHost: web.test\r\nContent-Length: 59948\r\n\r\n";

	skip_if_needed();
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + i / 251);
	memcpy(data, head, sizeof(head) - 1);
	expect_echo(AF_INET, "203.0.113.5", env.port, data, sizeof(data));
}

static void test_raw_tcp_is_named_through_the_fake_ip(void **state)
{
	static const uint8_t raw[] = {0x00, 0x01, 0xfe, 'S', 'S', 'H', '?', 0x00};
	char addr[INET6_ADDRSTRLEN];

	skip_if_needed();
	fake_addr_of("raw.test", AF_INET, addr);
	assert_true(strncmp(addr, "198.1", 5) == 0);
	expect_echo(AF_INET, addr, env.port, raw, sizeof(raw));
	assert_true(wait_closed(1));
	assert_string_equal(env.seen.host, "raw.test");
	assert_string_equal(env.seen.name_source, "resolver");
}

/* A fake address aims at the name it stands for, never at the host: the proxy asks the
 * kernel nothing about it (a route lookup less per connection), and a host that happens to
 * hold that address itself (the range is private, not ours alone) still reaches the name. */
static void test_a_fake_address_the_host_also_holds_still_reaches_its_name(void **state)
{
	static const uint8_t raw[] = {0x00, 0x01, 0xfe, 'f', 'a', 'k', 'e', 0x00};
	char addr[INET6_ADDRSTRLEN], cmd[128];

	skip_if_needed();
	fake_addr_of("raw.test", AF_INET, addr);
	snprintf(cmd, sizeof(cmd), "ip addr add %s/32 dev lo", addr);
	assert_int_equal(run(cmd), 0);
	expect_echo(AF_INET, addr, env.port, raw, sizeof(raw));
	snprintf(cmd, sizeof(cmd), "ip addr del %s/32 dev lo", addr);
	assert_int_equal(run(cmd), 0);
	assert_closed_as(PROXY_OUTCOME_RELAYED);
	assert_string_equal(env.seen.host, "raw.test");
}

static void test_ipv6_through_a_fake_address(void **state)
{
	static const char data[] = "hello over IPv6";
	char addr[INET6_ADDRSTRLEN];

	skip_if_needed();
	if (env.l.proxy6 < 0) {
		print_message("skipped: the sandbox netns has no IPv6\n");
		skip();
	}
	fake_addr_of("v6.test", AF_INET6, addr);
	assert_true(strncmp(addr, "fd63:6c6f:6973:fa6b:", 20) == 0);
	expect_echo(AF_INET6, addr, env.port, data, sizeof(data) - 1);
	assert_true(wait_closed(1));
	assert_string_equal(env.seen.host, "v6.test");
}

/* The first bytes go out with the dial (sending them is how the proxy learns that the connect
 * is done): an address that refuses (192.0.2.3 of the world, where nothing listens on the
 * port) gets none of them counted, the next one gets them exactly once. */
static void test_the_first_bytes_reach_the_next_address_once_when_one_refuses(void **state)
{
	static const char req[] = "GET / HTTP/1.1\r\nHost: fallback.test\r\n\r\n";

	skip_if_needed();
	expect_echo(AF_INET, "203.0.113.5", env.port, req, sizeof(req) - 1);
	assert_closed_as(PROXY_OUTCOME_RELAYED);
	assert_int_equal(env.seen.bytes_up, sizeof(req) - 1);
	assert_int_equal(env.seen.bytes_down, sizeof(req) - 1);
}

static void test_denied_name_is_reset_at_once(void **state)
{
	static const char req[] = "GET / HTTP/1.1\r\nHost: denied.test\r\n\r\n";

	skip_if_needed();
	expect_reset(AF_INET, "203.0.113.5", 80, req, sizeof(req) - 1);
	assert_closed_as(PROXY_OUTCOME_DENIED);
}

static void test_pending_ask_holds_the_connection_until_decided(void **state)
{
	static const char req[] = "GET / HTTP/1.1\r\nHost: pending.test\r\n\r\n";
	_cleanup_close_ int fd = sandbox_socket(AF_INET, SOCK_STREAM);
	static uint8_t got[512];
	size_t got_len;
	struct pollfd p = {.fd = fd, .events = POLLIN};

	skip_if_needed();
	assert_int_equal(connect_to(fd, AF_INET, "203.0.113.5", env.port), 0);
	write_all(fd, req, sizeof(req) - 1);
	assert_true(wait_pending());
	/* Held: nothing comes back while nobody answered. */
	assert_int_equal(poll(&p, 1, 300), 0);
	send_cmd(CMD_DECIDE, true, NULL);
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	assert_int_equal(read_all(fd, got, sizeof(got), &got_len), 0);
	assert_int_equal(got_len, sizeof(req) - 1);
	assert_memory_equal(got, req, got_len);
	assert_closed_as(PROXY_OUTCOME_RELAYED);
}

static void test_pending_ask_refused_later_resets(void **state)
{
	static const char req[] = "GET / HTTP/1.1\r\nHost: pending2.test\r\n\r\n";
	_cleanup_close_ int fd = sandbox_socket(AF_INET, SOCK_STREAM);
	uint8_t got[64];
	size_t got_len;

	skip_if_needed();
	assert_int_equal(connect_to(fd, AF_INET, "203.0.113.5", env.port), 0);
	write_all(fd, req, sizeof(req) - 1);
	assert_true(wait_pending());
	send_cmd(CMD_DECIDE, false, NULL);
	assert_int_equal(read_all(fd, got, sizeof(got), &got_len), -ECONNRESET);
	assert_closed_as(PROXY_OUTCOME_DENIED);
}

static void test_metadata_and_loopback_destinations_are_refused(void **state)
{
	static const char meta[] =
	        "GET /latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n";
	static const char loop[] = "GET / HTTP/1.1\r\nHost: loop.test\r\n\r\n";
	static const char loopok[] = "GET / HTTP/1.1\r\nHost: loopok.test\r\n\r\n";

	skip_if_needed();
	expect_reset(AF_INET, "169.254.169.254", 80, meta, sizeof(meta) - 1);
	assert_closed_as(PROXY_OUTCOME_REFUSED);
	assert_int_equal(env.seen.decide_calls, 0); /* never even asked */

	/* A name that resolves to loopback on the host side. */
	reset_seen();
	expect_reset(AF_INET, "203.0.113.5", env.port, loop, sizeof(loop) - 1);
	assert_closed_as(PROXY_OUTCOME_REFUSED);

	/* ... unless the policy names that exact host. */
	reset_seen();
	expect_echo(AF_INET, "203.0.113.5", env.port, loopok, sizeof(loopok) - 1);
	assert_closed_as(PROXY_OUTCOME_RELAYED);
}

/* Every address of the host the proxy dials from is the host itself: a service listening on
 * [::] (or 0.0.0.0) answers there as on loopback. Refused by name and by address, over IPv4
 * and IPv6, for an address added after the proxy started, unless the policy names the host. */
static void test_addresses_of_the_host_are_refused_unless_named(void **state)
{
	static const char self[] = "GET / HTTP/1.1\r\nHost: self.test\r\n\r\n";
	static const char self6[] = "GET / HTTP/1.1\r\nHost: self6.test\r\n\r\n";
	static const char selfok[] = "GET / HTTP/1.1\r\nHost: selfok.test\r\n\r\n";
	static const char late[] = "GET / HTTP/1.1\r\nHost: late.test\r\n\r\n";
	static const uint8_t raw[] = {1, 2, 3};

	skip_if_needed();
	/* A name that resolves to the host's interface address. */
	expect_reset(AF_INET, "203.0.113.5", env.self_port, self, sizeof(self) - 1);
	assert_true(wait_closed(1));
	assert_int_equal(env.seen.decide_calls, 1);
	assert_int_equal(env.seen.outcome, PROXY_OUTCOME_REFUSED);
	assert_string_equal(env.seen.reason, "an address of this host");

	reset_seen();
	expect_reset(AF_INET, "203.0.113.5", env.self_port, self6, sizeof(self6) - 1);
	assert_closed_as(PROXY_OUTCOME_REFUSED);

	/* The address itself, unnamed: refused before anybody is asked. */
	reset_seen();
	expect_reset(AF_INET, "192.0.2.254", env.self_port, raw, sizeof(raw));
	assert_true(wait_closed(1));
	assert_int_equal(env.seen.decide_calls, 0);
	assert_int_equal(env.seen.outcome, PROXY_OUTCOME_REFUSED);

	/* An address the host gets after the proxy started counts at once. */
	reset_seen();
	assert_int_equal(run("ip addr add 192.0.2.99/32 dev lo"), 0);
	expect_reset(AF_INET, "203.0.113.5", env.self_port, late, sizeof(late) - 1);
	assert_int_equal(run("ip addr del 192.0.2.99/32 dev lo"), 0);
	assert_closed_as(PROXY_OUTCOME_REFUSED);
	assert_string_equal(env.seen.reason, "an address of this host");

	/* ... unless the policy names that exact host. */
	reset_seen();
	expect_echo(AF_INET, "203.0.113.5", env.self_port, selfok, sizeof(selfok) - 1);
	assert_closed_as(PROXY_OUTCOME_RELAYED);
}

/* The proxy keeps whether an address is the host's (local_route.h): an address it dialled a
 * moment ago as a remote one, once the host takes it, is the host's at once. */
static void test_an_address_dialled_before_the_host_took_it_is_then_refused(void **state)
{
	static const char web[] = "GET / HTTP/1.1\r\nHost: web.test\r\n\r\n";

	skip_if_needed();
	expect_echo(AF_INET, "203.0.113.5", env.port, web, sizeof(web) - 1);
	assert_closed_as(PROXY_OUTCOME_RELAYED);

	reset_seen();
	assert_int_equal(run("ip addr add 192.0.2.1/32 dev lo"), 0);
	expect_reset(AF_INET, "203.0.113.5", env.port, web, sizeof(web) - 1);
	assert_int_equal(run("ip addr del 192.0.2.1/32 dev lo"), 0);
	assert_closed_as(PROXY_OUTCOME_REFUSED);
	assert_string_equal(env.seen.reason, "an address of this host");

	/* Given back: remote again. */
	reset_seen();
	expect_echo(AF_INET, "203.0.113.5", env.port, web, sizeof(web) - 1);
	assert_closed_as(PROXY_OUTCOME_RELAYED);
}

/* The route answers local_route keeps follow every way an address becomes the host's or stops
 * being it: a local route, an interface address (IPv4 and IPv6). Run by the calling process;
 * the changes are made by RUN_CMD (root). Returns 0 or the step that failed (1-based). */
static int kept_answers_follow_changes(int (*run_cmd)(const char *cmd, void *arg), void *arg)
{
	static const struct {
		const char *addr, *cmd;
		int after;
	} steps[] = {
	        {"10.9.0.1", NULL, 0},
	        {"10.9.0.1", NULL, 0}, /* kept */
	        {"10.9.0.1", "ip route add local 10.9.0.0/16 dev lo", 1},
	        {"10.9.0.1", "ip route del local 10.9.0.0/16 dev lo", 0},
	        {"192.0.2.97", NULL, 0},
	        {"192.0.2.97", "ip addr add 192.0.2.97/32 dev lo", 1},
	        {"192.0.2.97", "ip addr del 192.0.2.97/32 dev lo", 0},
	        {"2001:db8::97", NULL, 0},
	        {"2001:db8::97", "ip addr add 2001:db8::97/128 dev lo nodad", 1},
	        {"2001:db8::97", "ip addr del 2001:db8::97/128 dev lo", 0},
	};
	struct local_route *lr = NULL;
	int failed = 0;

	if (local_route_new(&lr) < 0 || !local_route_caches(lr))
		return -1;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]) && !failed; i++) {
		struct sockaddr_storage ss = {0};

		if (strchr(steps[i].addr, ':')) {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

			s6->sin6_family = AF_INET6;
			inet_pton(AF_INET6, steps[i].addr, &s6->sin6_addr);
		} else {
			struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

			s4->sin_family = AF_INET;
			inet_pton(AF_INET, steps[i].addr, &s4->sin_addr);
		}
		if (steps[i].cmd && run_cmd(steps[i].cmd, arg) < 0) {
			failed = (int)i + 1;
			continue;
		}
		/* IPv6 adds an address's local route from a work queue, a moment after `ip`
		 * returns: wait for it (bounded), as a fresh lookup would have to. A kept answer
		 * that missed the change never turns. */
		failed = (int)i + 1;
		for (int tries = 0; tries < 200 && failed; tries++) {
			struct timespec ts = {.tv_nsec = 10 * 1000000};

			if (local_route_is_local(lr, (struct sockaddr *)&ss) == steps[i].after)
				failed = 0;
			else
				nanosleep(&ts, NULL);
		}
	}
	local_route_free(lr);
	return failed;
}

static int run_here(const char *cmd, void *arg)
{
	return run(cmd);
}

/* As nobody: the commands are the root parent's, asked for through a pipe. */
struct asker {
	int to_parent, from_parent;
};

static int ask_parent(const char *cmd, void *arg)
{
	const struct asker *a = arg;
	size_t len = strlen(cmd) + 1;
	char ok;

	if (write(a->to_parent, cmd, len) != (ssize_t)len || read(a->from_parent, &ok, 1) != 1)
		return -EIO;
	return ok == '0' ? 0 : -EIO;
}

static void test_kept_route_answers_follow_route_and_address_changes(void **state)
{
	int up[2], down[2], status = 0;
	pid_t pid;
	char cmd[256];
	ssize_t n;

	skip_if_needed();
	assert_int_equal(kept_answers_follow_changes(run_here, NULL), 0);

	/* The same as nobody (the supervisor of an unprivileged run). */
	assert_int_equal(pipe2(up, O_CLOEXEC), 0);
	assert_int_equal(pipe2(down, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct asker a = {.to_parent = up[1], .from_parent = down[0]};

		close(up[0]);
		close(down[1]);
		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(100);
		_exit(kept_answers_follow_changes(ask_parent, &a) == 0 ? 0 : 101);
	}
	close(up[1]);
	close(down[0]);
	/* Each request is one write of a NUL-terminated command (well under PIPE_BUF). */
	while ((n = read(up[0], cmd, sizeof(cmd) - 1)) > 0) {
		cmd[n] = '\0';
		assert_int_equal(write(down[1], run(cmd) == 0 ? "0" : "1", 1), 1);
	}
	close(up[0]);
	close(down[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_unnamed_connection_is_decided_as_its_address(void **state)
{
	static const uint8_t raw[] = {1, 2, 3};

	skip_if_needed();
	/* Nothing names it and nothing routes to it on the host side: decided as the IP, then
	 * reset because upstream is unreachable. */
	expect_reset(AF_INET, "203.0.113.77", 4444, raw, sizeof(raw));
	assert_true(wait_closed(1));
	assert_string_equal(env.seen.host, "203.0.113.77");
	assert_string_equal(env.seen.name_source, "ip");
	assert_int_equal(env.seen.outcome, PROXY_OUTCOME_UNREACHABLE);
}

/* ---- clients that send nothing ---------------------------------------------------------- */

static long ms_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1000 + (t1.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Connect to ADDR:PORT and end the sending side before any byte; expect the server's answer
 * and a clean EOF long before the sniff deadline. */
static void expect_answer_to_eof(const char *addr, uint16_t port, const char *answer)
{
	_cleanup_close_ int fd = sandbox_socket(AF_INET, SOCK_STREAM);
	uint8_t got[256];
	size_t got_len;
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(connect_to(fd, AF_INET, addr, port), 0);
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	assert_int_equal(read_all(fd, got, sizeof(got), &got_len), 0);
	assert_int_equal(got_len, strlen(answer));
	assert_memory_equal(got, answer, got_len);
	assert_true(ms_since(&t0) < PEEK_NAMED_MS);
}

static void test_eof_before_any_byte_is_decided_at_once_by_the_fake_ip(void **state)
{
	char addr[INET6_ADDRSTRLEN];

	skip_if_needed();
	fake_addr_of("banner.test", AF_INET, addr);
	expect_answer_to_eof(addr, env.banner_port, BANNER);
	assert_true(wait_closed(1));
	assert_int_equal(env.seen.decide_calls, 1);
	assert_string_equal(env.seen.host, "banner.test");
	assert_string_equal(env.seen.name_source, "resolver");
	assert_int_equal(env.seen.outcome, PROXY_OUTCOME_RELAYED);
	assert_int_equal(env.seen.bytes_up, 0);
	assert_int_equal(env.seen.bytes_down, strlen(BANNER));

	/* The same to a server that says nothing: the half-close reaches it, its EOF comes back. */
	reset_seen();
	fake_addr_of("raw.test", AF_INET, addr);
	expect_answer_to_eof(addr, env.port, "");
	assert_true(wait_closed(1));
	assert_string_equal(env.seen.host, "raw.test");
	assert_int_equal(env.seen.outcome, PROXY_OUTCOME_RELAYED);
}

static void test_eof_before_any_byte_to_a_bare_address_is_decided_as_the_address(void **state)
{
	skip_if_needed();
	expect_answer_to_eof("192.0.2.1", env.banner_port, BANNER);
	assert_true(wait_closed(1));
	assert_string_equal(env.seen.host, "192.0.2.1");
	assert_string_equal(env.seen.name_source, "ip");
	assert_int_equal(env.seen.outcome, PROXY_OUTCOME_RELAYED);
}

static void test_eof_before_any_byte_to_a_restricted_address_is_reset(void **state)
{
	_cleanup_close_ int fd = sandbox_socket(AF_INET, SOCK_STREAM);
	uint8_t got[64];
	size_t got_len;

	skip_if_needed();
	/* Refused as before: decided on the address at once, and reset (no quiet close). */
	assert_int_equal(connect_to(fd, AF_INET, "169.254.169.254", 80), 0);
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	assert_int_equal(read_all(fd, got, sizeof(got), &got_len), -ECONNRESET);
	assert_closed_as(PROXY_OUTCOME_REFUSED);
}

/* A client that sends nothing and waits for the server to speak first (ssh, smtp): the
 * banner arrives after the sniff deadline DEADLINE_MS, then the session goes on both ways. */
static void expect_server_first(const char *addr, uint16_t port, long deadline_ms)
{
	static const char line[] = "QUIT\r\n";
	_cleanup_close_ int fd = sandbox_socket(AF_INET, SOCK_STREAM);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	uint8_t got[256];
	size_t got_len;
	ssize_t n;
	struct timespec t0;
	long first_ms;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(connect_to(fd, AF_INET, addr, port), 0);
	assert_int_equal(poll(&p, 1, WAIT_MS), 1);
	first_ms = ms_since(&t0);
	n = recv(fd, got, sizeof(got), 0);
	assert_int_equal(n, (ssize_t)strlen(BANNER));
	assert_memory_equal(got, BANNER, (size_t)n);
	/* Not before the deadline (a few ms of timer slack), and not long after it. */
	assert_true(first_ms >= deadline_ms - 10);
	assert_true(first_ms < deadline_ms + 1000);
	write_all(fd, line, sizeof(line) - 1);
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	assert_int_equal(read_all(fd, got, sizeof(got), &got_len), 0);
	assert_int_equal(got_len, sizeof(line) - 1);
	assert_memory_equal(got, line, got_len);
}

static void test_server_speaks_first_after_the_named_sniff_deadline(void **state)
{
	char addr[INET6_ADDRSTRLEN];

	skip_if_needed();
	fake_addr_of("banner.test", AF_INET, addr);
	expect_server_first(addr, env.banner_port, PEEK_NAMED_MS);
	assert_true(wait_closed(1));
	assert_string_equal(env.seen.host, "banner.test");
	assert_string_equal(env.seen.name_source, "resolver");
	assert_int_equal(env.seen.outcome, PROXY_OUTCOME_RELAYED);
	assert_int_equal(env.seen.bytes_up, 6);
}

static void test_server_speaks_first_to_a_bare_address_after_the_sniff_deadline(void **state)
{
	skip_if_needed();
	expect_server_first("192.0.2.1", env.banner_port, PEEK_MS);
	assert_true(wait_closed(1));
	assert_string_equal(env.seen.host, "192.0.2.1");
	assert_string_equal(env.seen.name_source, "ip");
	assert_int_equal(env.seen.outcome, PROXY_OUTCOME_RELAYED);
}

/* ---- DNS --------------------------------------------------------------------------------- */

static void test_dns_answers_fake_addresses_and_nxdomain_for_denied(void **state)
{
	struct dns_addrs a, b;
	_cleanup_close_ int fd = -EBADF;
	uint8_t bad[12] = {0xbe, 0xef, 0x01, 0x00}, out[64];
	ssize_t n;

	skip_if_needed();
	dns_ask(false, "web.test", DNS_TYPE_A, &a);
	assert_int_equal(a.rcode, DNS_RCODE_NOERROR);
	assert_int_equal(a.n, 1);
	dns_ask(true, "web.test", DNS_TYPE_A, &b); /* TCP: the same address */
	assert_int_equal(b.n, 1);
	assert_memory_equal(&a.addrs[0].v4, &b.addrs[0].v4, 4);
	dns_ask(false, "web.test", DNS_TYPE_AAAA, &a);
	assert_int_equal(a.n, 1);
	assert_int_equal(a.addrs[0].family, AF_INET6);
	dns_ask(false, "denied.test", DNS_TYPE_A, &a);
	assert_int_equal(a.rcode, DNS_RCODE_NXDOMAIN);
	assert_int_equal(a.n, 0);
	dns_ask(false, "web.test", 16 /* TXT */, &a);
	assert_int_equal(a.rcode, DNS_RCODE_NOERROR);
	assert_int_equal(a.n, 0);

	/* A header without a question: REFUSED, with its id. */
	fd = sandbox_socket(AF_INET, SOCK_DGRAM);
	assert_int_equal(connect_to(fd, AF_INET, "192.0.2.53", 53), 0);
	write_all(fd, bad, sizeof(bad));
	n = recv(fd, out, sizeof(out), 0);
	assert_int_equal(n, 12);
	assert_int_equal(out[0], 0xbe);
	assert_int_equal(out[1], 0xef);
	assert_int_equal(out[3] & 0x0f, DNS_RCODE_REFUSED);
}

/* ---- CONNECT ----------------------------------------------------------------------------- */

/* Send REQ to the CONNECT proxy; return the socket, the answer's head (and what followed it
 * that arrived with it) in GOT. */
static int connect_proxy(const char *req, char *got, size_t size)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t len = 0;

	assert_true(fd >= 0);
	assert_int_equal(connect_to(fd, AF_INET, "127.0.0.1", env.connect_port), 0);
	write_all(fd, req, strlen(req));
	while (len + 1 < size) {
		ssize_t n = recv(fd, got + len, size - 1 - len, 0);

		if (n <= 0)
			break;
		len += (size_t)n;
		got[len] = '\0';
		if (strstr(got, "\r\n\r\n") && strncmp(got, "HTTP/1.1 200", 12) == 0)
			break;
	}
	got[len] = '\0';
	return fd;
}

static char *auth_header(char *buf, size_t size, const char *password)
{
	/* base64 of "x:" + password, by hand (tiny). */
	static const char tbl[] =
	        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char plain[128];
	size_t n = (size_t)snprintf(plain, sizeof(plain), "x:%s", password), o = 0;

	o += (size_t)snprintf(buf, size, "Proxy-Authorization: Basic ");
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)(uint8_t)plain[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)(uint8_t)plain[i + 1] << 8;
		if (i + 2 < n)
			v |= (uint8_t)plain[i + 2];
		buf[o++] = tbl[(v >> 18) & 63];
		buf[o++] = tbl[(v >> 12) & 63];
		buf[o++] = i + 1 < n ? tbl[(v >> 6) & 63] : '=';
		buf[o++] = i + 2 < n ? tbl[v & 63] : '=';
	}
	snprintf(buf + o, size - o, "\r\n");
	return buf;
}

static void test_connect_without_or_with_a_wrong_token_gets_407(void **state)
{
	char got[2048], auth[256], req[512];
	int fd;

	skip_if_needed();
	fd = connect_proxy("CONNECT web.test:443 HTTP/1.1\r\nHost: web.test:443\r\n\r\n", got,
	                   sizeof(got));
	close(fd);
	assert_true(strncmp(got, "HTTP/1.1 407", 12) == 0);
	assert_non_null(strcasestr(got, "Proxy-Authenticate: Basic"));
	snprintf(req, sizeof(req), "CONNECT web.test:443 HTTP/1.1\r\n%s\r\n",
	         auth_header(auth, sizeof(auth), "tok-wrong-wrong-wrong"));
	fd = connect_proxy(req, got, sizeof(got));
	close(fd);
	assert_true(strncmp(got, "HTTP/1.1 407", 12) == 0);
	assert_int_equal(env.seen.decide_calls, 0);
	/* Every test waits for its connections' ends, so none reaches the next test. */
	assert_true(wait_closed(2));
	assert_int_equal(env.seen.outcome, PROXY_OUTCOME_REJECTED);
}

static void test_connect_tunnels_to_an_allowed_host(void **state)
{
	char got[2048], auth[256], req[512];
	static const char data[] = "bytes through the tunnel";
	uint8_t back[128];
	size_t back_len;
	int fd;

	skip_if_needed();
	snprintf(req, sizeof(req), "CONNECT web.test:%u HTTP/1.1\r\n%s\r\n", env.port,
	         auth_header(auth, sizeof(auth), TOKEN));
	fd = connect_proxy(req, got, sizeof(got));
	assert_true(strncmp(got, "HTTP/1.1 200", 12) == 0);
	write_all(fd, data, sizeof(data) - 1);
	shutdown(fd, SHUT_WR);
	assert_int_equal(read_all(fd, back, sizeof(back), &back_len), 0);
	close(fd);
	assert_int_equal(back_len, sizeof(data) - 1);
	assert_memory_equal(back, data, back_len);
	assert_true(wait_closed(1));
	assert_string_equal(env.seen.sandbox, "sb-connect");
	assert_string_equal(env.seen.project, "proj-c");
	assert_string_equal(env.seen.name_source, "connect");
	assert_int_equal(env.seen.source, PROXY_SOURCE_CONNECT);
}

static void test_connect_denied_gets_403_json(void **state)
{
	char got[2048], auth[256], req[512];
	int fd;

	skip_if_needed();
	snprintf(req, sizeof(req), "CONNECT denied.test:443 HTTP/1.1\r\n%s\r\n",
	         auth_header(auth, sizeof(auth), TOKEN));
	fd = connect_proxy(req, got, sizeof(got));
	close(fd);
	assert_true(strncmp(got, "HTTP/1.1 403", 12) == 0);
	assert_non_null(strstr(got, "application/json"));
	assert_non_null(strstr(got, "\"error\": \"domain not in allowlist\""));
	assert_non_null(strstr(got, "\"domain\": \"denied.test\""));
	assert_closed_as(PROXY_OUTCOME_DENIED);
}

/* The CONNECT proxy dials from the host too: the host's addresses are refused there, by name,
 * as a literal and as IPv4 spelled in IPv6. */
static void test_connect_to_an_address_of_the_host_gets_403(void **state)
{
	static const char *const targets[] = {"self.test", "self6.test", "192.0.2.254",
	                                      "[2001:db8::fe]", "[::ffff:192.0.2.254]"};
	char got[2048], auth[256], req[512];
	int fd;

	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		skip_if_needed();
		snprintf(req, sizeof(req), "CONNECT %s:%u HTTP/1.1\r\n%s\r\n", targets[i],
		         env.self_port, auth_header(auth, sizeof(auth), TOKEN));
		fd = connect_proxy(req, got, sizeof(got));
		close(fd);
		if (strncmp(got, "HTTP/1.1 403", 12) != 0 ||
		    !strstr(got, "destination address not allowed"))
			fail_msg("CONNECT %s: %.200s", targets[i], got);
		assert_closed_as(PROXY_OUTCOME_REFUSED);
	}
	/* Named by the policy: tunnelled. */
	skip_if_needed();
	snprintf(req, sizeof(req), "CONNECT selfok.test:%u HTTP/1.1\r\n%s\r\n", env.self_port,
	         auth_header(auth, sizeof(auth), TOKEN));
	fd = connect_proxy(req, got, sizeof(got));
	close(fd);
	assert_true(strncmp(got, "HTTP/1.1 200", 12) == 0);
	assert_closed_as(PROXY_OUTCOME_RELAYED);
}

static void test_connect_pending_refused_says_why(void **state)
{
	char got[2048], auth[256], req[512];
	int fd;

	skip_if_needed();
	snprintf(req, sizeof(req), "CONNECT pending.test:443 HTTP/1.1\r\n%s\r\n",
	         auth_header(auth, sizeof(auth), TOKEN));
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect_to(fd, AF_INET, "127.0.0.1", env.connect_port), 0);
	write_all(fd, req, strlen(req));
	assert_true(wait_pending());
	send_cmd(CMD_DECIDE, false, "Request timed out waiting for approval");
	{
		size_t len;

		assert_int_equal(read_all(fd, (uint8_t *)got, sizeof(got) - 1, &len), 0);
		got[len] = '\0';
	}
	close(fd);
	assert_true(strncmp(got, "HTTP/1.1 403", 12) == 0);
	assert_non_null(strstr(got, "Request timed out waiting for approval"));
	assert_closed_as(PROXY_OUTCOME_DENIED);
}

static void test_connect_client_leaving_while_pending_cancels(void **state)
{
	char auth[256], req[512];
	int fd;

	skip_if_needed();
	snprintf(req, sizeof(req), "CONNECT pending.test:443 HTTP/1.1\r\n%s\r\n",
	         auth_header(auth, sizeof(auth), TOKEN));
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect_to(fd, AF_INET, "127.0.0.1", env.connect_port), 0);
	write_all(fd, req, strlen(req));
	assert_true(wait_pending());
	close(fd);
	/* The owner hears of it (to cancel its queue item) and the ask is gone. */
	assert_closed_as(PROXY_OUTCOME_CANCELLED);
	assert_null(env.seen.pending);
}

static void test_connect_other_methods_get_405_and_unreachable_502(void **state)
{
	char got[2048], auth[256], req[512];
	int fd;

	skip_if_needed();
	snprintf(req, sizeof(req), "GET http://web.test/ HTTP/1.1\r\nHost: web.test\r\n%s\r\n",
	         auth_header(auth, sizeof(auth), TOKEN));
	fd = connect_proxy(req, got, sizeof(got));
	close(fd);
	assert_true(strncmp(got, "HTTP/1.1 405", 12) == 0);
	assert_non_null(strstr(got, "only tunnels with CONNECT"));
	assert_closed_as(PROXY_OUTCOME_REJECTED);

	/* closed.test is 192.0.2.1, where nothing listens on port 1. */
	snprintf(req, sizeof(req), "CONNECT closed.test:1 HTTP/1.1\r\n%s\r\n",
	         auth_header(auth, sizeof(auth), TOKEN));
	fd = connect_proxy(req, got, sizeof(got));
	close(fd);
	assert_true(strncmp(got, "HTTP/1.1 502", 12) == 0);
	assert_true(wait_closed(2));
	assert_int_equal(env.seen.outcome, PROXY_OUTCOME_UNREACHABLE);

	/* A literal loopback address is refused before anything is asked. */
	reset_seen();
	snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%u HTTP/1.1\r\n%s\r\n", env.port,
	         auth_header(auth, sizeof(auth), TOKEN));
	fd = connect_proxy(req, got, sizeof(got));
	close(fd);
	assert_true(strncmp(got, "HTTP/1.1 403", 12) == 0);
	assert_int_equal(env.seen.decide_calls, 0);
	assert_closed_as(PROXY_OUTCOME_REFUSED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_http_is_named_by_host_and_relayed_with_half_close),
	        cmocka_unit_test(test_tls_is_named_by_sni),
	        cmocka_unit_test(test_big_transfer_arrives_intact),
	        cmocka_unit_test(test_raw_tcp_is_named_through_the_fake_ip),
	        cmocka_unit_test(test_a_fake_address_the_host_also_holds_still_reaches_its_name),
	        cmocka_unit_test(test_ipv6_through_a_fake_address),
	        cmocka_unit_test(test_the_first_bytes_reach_the_next_address_once_when_one_refuses),
	        cmocka_unit_test(test_denied_name_is_reset_at_once),
	        cmocka_unit_test(test_pending_ask_holds_the_connection_until_decided),
	        cmocka_unit_test(test_pending_ask_refused_later_resets),
	        cmocka_unit_test(test_metadata_and_loopback_destinations_are_refused),
	        cmocka_unit_test(test_addresses_of_the_host_are_refused_unless_named),
	        cmocka_unit_test(test_an_address_dialled_before_the_host_took_it_is_then_refused),
	        cmocka_unit_test(test_kept_route_answers_follow_route_and_address_changes),
	        cmocka_unit_test(test_unnamed_connection_is_decided_as_its_address),
	        cmocka_unit_test(test_eof_before_any_byte_is_decided_at_once_by_the_fake_ip),
	        cmocka_unit_test(
	                test_eof_before_any_byte_to_a_bare_address_is_decided_as_the_address),
	        cmocka_unit_test(test_eof_before_any_byte_to_a_restricted_address_is_reset),
	        cmocka_unit_test(test_server_speaks_first_after_the_named_sniff_deadline),
	        cmocka_unit_test(
	                test_server_speaks_first_to_a_bare_address_after_the_sniff_deadline),
	        cmocka_unit_test(test_dns_answers_fake_addresses_and_nxdomain_for_denied),
	        cmocka_unit_test(test_connect_without_or_with_a_wrong_token_gets_407),
	        cmocka_unit_test(test_connect_tunnels_to_an_allowed_host),
	        cmocka_unit_test(test_connect_denied_gets_403_json),
	        cmocka_unit_test(test_connect_to_an_address_of_the_host_gets_403),
	        cmocka_unit_test(test_connect_pending_refused_says_why),
	        cmocka_unit_test(test_connect_client_leaving_while_pending_cancels),
	        cmocka_unit_test(test_connect_other_methods_get_405_and_unreachable_502),
	};

	if (geteuid() != 0)
		skip_reason = "needs root (network namespaces, nftables)";
	else if (unshare(CLONE_NEWNET) < 0)
		skip_reason = "cannot create a network namespace for the test's host side";
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
