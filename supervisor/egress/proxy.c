/* The egress proxy: see proxy.h.
 *
 * A connection moves through these states, one timer and at most two fds at a time:
 *   PEEK     transparent: reading the first bytes until they name the host, or the deadline
 *   HEAD     CONNECT: reading the request head
 *   PENDING  decide() said PROXY_PENDING; only the client's hang-up is watched
 *   RESOLVE  host-side lookup of the name in flight
 *   DIAL     non-blocking connect to one address after the other
 *   RELAY    handed to relay.c (which owns both fds from then on)
 *   LINGER   CONNECT: an error answer was sent; read and discard until the client closes, so
 *            the close does not reset the answer away
 *
 * Over 900 lines on purpose: one connection's state machine above, over one struct proxy_conn and
 * its one timer; each part below is one state's handler, and the transitions between them read
 * best in one file. What is pure is apart already: sniff.c, tls_sni.c, http_head.c, and the
 * relay once a connection is allowed (relay.c).
 */
#include "supervisor/egress/proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "supervisor/egress/fakeip.h"
#include "supervisor/egress/http_head.h"
#include "supervisor/egress/local_route.h"
#include "supervisor/egress/relay.h"
#include "supervisor/egress/resolver.h"
#include "supervisor/egress/sniff.h"
#include "supervisor/approval/tokens.h"

#define LINGER_MS       2000
#define LINGER_DISCARD  (64 * 1024)
#define ACCEPT_PAUSE_MS 100
#define MAX_LISTENERS   256
#define MAX_DIAL_ADDRS  4
#define REASON_MAX      256
/* Empty pipes kept for the next relays (one per direction that went bulk). */
#define PIPES_KEPT 32

enum conn_state {
	ST_PEEK,
	ST_HEAD,
	ST_PENDING,
	ST_RESOLVE,
	ST_DIAL,
	ST_RELAY,
	ST_LINGER,
};

struct listener {
	struct proxy *p;
	struct listener *retired_next; /* once removed: kept, connections use its names */
	int fd;
	struct loop_timer *paused; /* accepting resumes when it fires */
	bool nodelay;              /* set on the listener: accepted sockets inherit it */
	enum proxy_source source;
	char *sandbox, *project;
};

struct proxy_conn {
	struct proxy *p;
	uint64_t id;
	enum conn_state state;
	struct listener *l;
	int fd, up;
	bool fd_registered, up_registered;
	bool client_eof;
	struct proxy_conn_info info;
	char host[DOMAIN_HOST_MAX + 1];
	char *sandbox, *project; /* CONNECT: from the token (owned) */
	bool dial_original;      /* unnamed: dial info.original_dst itself */
	bool dst_fake;           /* original_dst is a fake address our resolver handed out */
	uint8_t *buf;
	size_t len, head_len;
	struct loop_timer *timer;
	struct resolver_lookup *lookup;
	struct dns_addrs addrs;
	size_t next_addr, dialled;
	struct relay *relay;
	uint64_t started_ms;
	uint64_t bytes_up, bytes_down;
	uint64_t sent_at_dial; /* of the first bytes, sent by dial_next() (counted in bytes_up) */
	bool in_decide, early_decided, early_allow;
	char reason[REASON_MAX];
	const char *refused_why;           /* dial_next: why an address was refused */
	enum proxy_outcome linger_outcome; /* LINGER: how it ends */
	struct proxy_conn *prev, *next;
};

struct proxy {
	struct loop *loop;
	struct proxy_config cfg;
	struct local_route *local; /* is a destination this host itself? */
	struct relay_pipes *pipes; /* the relays' pipes, reused */
	struct proxy_ops ops;
	void *userdata;
	struct listener *listeners[MAX_LISTENERS];
	size_t n_listeners;
	struct listener *retired;
	struct proxy_conn *conns;
	size_t n_conns;
	uint64_t next_id;
};

void proxy_config_init(struct proxy_config *cfg)
{
	*cfg = (struct proxy_config){
	        .max_conns = 4096,
	        .peek_bytes = 16 * 1024,
	        .peek_ms = 1500,
	        .peek_named_ms = 300,
	        .head_ms = 10000,
	        .connect_ms = 10000,
	        .pending_max_ms = 15 * 60 * 1000,
	        .idle_ms = 60 * 60 * 1000,
	};
}

const char *proxy_outcome_to_string(enum proxy_outcome outcome)
{
	switch (outcome) {
	case PROXY_OUTCOME_RELAYED:
		return "relayed";
	case PROXY_OUTCOME_DENIED:
		return "denied";
	case PROXY_OUTCOME_REFUSED:
		return "refused";
	case PROXY_OUTCOME_UNREACHABLE:
		return "unreachable";
	case PROXY_OUTCOME_CANCELLED:
		return "cancelled";
	case PROXY_OUTCOME_REJECTED:
		return "rejected";
	}
	return "unknown";
}

/* Loopback, 0/8, link-local (AWS, GCP metadata), and the other clouds' metadata services:
 * Alibaba 100.100.100.200, Azure 168.63.129.16, Oracle 192.0.0.192. A (host order). */
static bool v4_restricted(uint32_t a)
{
	return (a >> 24) == 127 || (a >> 24) == 0 || (a >> 16) == 0xa9fe || a == 0x646464c8u ||
	       a == 0xa83f8110u || a == 0xc00000c0u;
}

static uint32_t v4_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

bool proxy_addr_restricted(const struct sockaddr *addr)
{
	if (addr->sa_family == AF_INET) {
		struct sockaddr_in sin;

		memcpy(&sin, addr, sizeof(sin));
		return v4_restricted(ntohl(sin.sin_addr.s_addr));
	}
	if (addr->sa_family == AF_INET6) {
		struct sockaddr_in6 sin6;
		const uint8_t *b;
		static const uint8_t ec2[16] = {0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0,    0,
		                                0,    0,    0,    0,    0, 0, 0x02, 0x54};
		static const uint8_t nat64[12] = {0x00, 0x64, 0xff, 0x9b}; /* 64:ff9b::/96 */

		memcpy(&sin6, addr, sizeof(sin6));
		b = sin6.sin6_addr.s6_addr;
		/* IPv4 addresses spelled in IPv6: mapped, compatible, NAT64 (the last 4 bytes)
		 * and 6to4 (2002:AABB:CCDD::/48, bytes 2..5). */
		if (IN6_IS_ADDR_V4MAPPED(&sin6.sin6_addr) ||
		    IN6_IS_ADDR_V4COMPAT(&sin6.sin6_addr) || !memcmp(b, nat64, sizeof(nat64)))
			return v4_restricted(v4_at(b + 12));
		if (b[0] == 0x20 && b[1] == 0x02 && v4_restricted(v4_at(b + 2)))
			return true;
		return IN6_IS_ADDR_LOOPBACK(&sin6.sin6_addr) ||
		       IN6_IS_ADDR_UNSPECIFIED(&sin6.sin6_addr) ||
		       IN6_IS_ADDR_LINKLOCAL(&sin6.sin6_addr) || !memcmp(b, ec2, sizeof(ec2));
	}
	return true; /* nothing else is dialled */
}

int proxy_new(struct loop *loop, const struct proxy_config *cfg, const struct proxy_ops *ops,
              void *userdata, struct proxy **ret)
{
	struct proxy *p;
	int e;

	if (!cfg->resolver || !ops || !ops->decide || cfg->max_conns == 0 || cfg->peek_bytes == 0 ||
	    cfg->peek_bytes > RELAY_MAX_PREFIX)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	e = local_route_new(&p->local);
	if (e >= 0)
		e = relay_pipes_new(PIPES_KEPT, &p->pipes);
	if (e < 0) {
		local_route_free(p->local);
		free(p);
		return e;
	}
	p->loop = loop;
	p->cfg = *cfg;
	p->ops = *ops;
	p->userdata = userdata;
	p->next_id = 1;
	*ret = p;
	return 0;
}

/* ---- ending a connection ----------------------------------------------------------------- */

static void reset_fd(int fd)
{
	struct linger lg = {.l_onoff = 1, .l_linger = 0};

	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

static void conn_release(struct proxy_conn *c, bool reset_client)
{
	struct proxy *p = c->p;

	if (c->timer)
		loop_cancel_timer(p->loop, c->timer);
	c->timer = NULL;
	if (c->lookup)
		resolver_lookup_cancel(p->cfg.resolver, c->lookup);
	c->lookup = NULL;
	if (c->up >= 0) {
		if (c->up_registered)
			loop_del_fd(p->loop, c->up);
		reset_fd(c->up);
		close(c->up);
		c->up = -EBADF;
	}
	if (c->fd >= 0) {
		if (c->fd_registered)
			loop_del_fd(p->loop, c->fd);
		if (reset_client)
			reset_fd(c->fd);
		close(c->fd);
		c->fd = -EBADF;
	}
	c->fd_registered = c->up_registered = false;
}

static void conn_free(struct proxy_conn *c, enum proxy_outcome outcome, const char *reason)
{
	struct proxy *p = c->p;
	struct proxy_stats st = {
	        .bytes_up = c->bytes_up,
	        .bytes_down = c->bytes_down,
	        .duration_ms = loop_now_ms() - c->started_ms,
	        .outcome = outcome,
	        .reason = reason,
	};

	if (c->prev)
		c->prev->next = c->next;
	else
		p->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	p->n_conns--;
	if (p->ops.closed)
		p->ops.closed(p->userdata, c, &c->info, &st);
	free(c->buf);
	free(c->sandbox);
	free(c->project);
	free(c);
}

/* End C now: both sockets closed (the client's reset when RESET), closed() called. */
static void conn_end(struct proxy_conn *c, bool reset, enum proxy_outcome outcome,
                     const char *reason)
{
	conn_release(c, reset);
	conn_free(c, outcome, reason);
}

/* ---- CONNECT answers --------------------------------------------------------------------- */

static int on_linger_timer(struct loop *loop, void *userdata);
static int on_client(struct loop *loop, int fd, uint32_t events, void *userdata);

static int watch_client(struct proxy_conn *c, uint32_t events)
{
	struct proxy *p = c->p;
	int e;

	if (c->fd_registered)
		return loop_mod_fd(p->loop, c->fd, events);
	e = loop_add_fd(p->loop, c->fd, events, on_client, c);
	if (e >= 0)
		c->fd_registered = true;
	return e;
}

/* Send TEXT[0..LEN-1] to the CONNECT client, then linger until it closes; the connection ends
 * with OUTCOME. */
static void answer_and_linger(struct proxy_conn *c, const char *text, size_t len,
                              enum proxy_outcome outcome, const char *reason)
{
	struct proxy *p = c->p;

	if (send(c->fd, text, len, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)len) {
		conn_end(c, true, outcome, reason);
		return;
	}
	(void)shutdown(c->fd, SHUT_WR);
	if (c->timer)
		loop_cancel_timer(p->loop, c->timer);
	c->timer = NULL;
	if (c->lookup)
		resolver_lookup_cancel(p->cfg.resolver, c->lookup);
	c->lookup = NULL;
	if (c->up >= 0) {
		if (c->up_registered)
			loop_del_fd(p->loop, c->up);
		close(c->up);
		c->up = -EBADF;
		c->up_registered = false;
	}
	/* The outcome is final now: closed() is called when the lingering ends. */
	c->state = ST_LINGER;
	snprintf(c->reason, sizeof(c->reason), "%s", reason ? reason : "");
	c->linger_outcome = outcome;
	if (c->client_eof || watch_client(c, EPOLLIN | EPOLLRDHUP) < 0 ||
	    loop_add_timer(p->loop, loop_now_ms() + LINGER_MS, on_linger_timer, c, &c->timer) < 0)
		conn_end(c, false, outcome, c->reason);
}

static void answer_connect(struct proxy_conn *c, enum http_answer what, const char *error,
                           const char *domain, enum proxy_outcome outcome, const char *reason)
{
	char buf[1024];
	int n = http_answer_build(what, error, domain, buf, sizeof(buf));

	if (n < 0) {
		conn_end(c, true, outcome, reason);
		return;
	}
	answer_and_linger(c, buf, (size_t)n, outcome, reason);
}

static void answer_405(struct proxy_conn *c)
{
	static const char body[] =
	        "{\"error\": \"method not allowed: this proxy only tunnels with CONNECT "
	        "host:port (no plain http:// requests)\"}";
	char buf[512];
	int n = snprintf(buf, sizeof(buf),
	                 "HTTP/1.1 405 Method Not Allowed\r\n"
	                 "Allow: CONNECT\r\n"
	                 "Content-Type: application/json\r\n"
	                 "Content-Length: %zu\r\n"
	                 "Connection: close\r\n"
	                 "\r\n%s",
	                 sizeof(body) - 1, body);

	answer_and_linger(c, buf, (size_t)n, PROXY_OUTCOME_REJECTED, "method not allowed");
}

/* Refuse C in the way its front-end does: RST for transparent, an HTTP answer for CONNECT. */
static void refuse(struct proxy_conn *c, enum http_answer what, const char *error,
                   enum proxy_outcome outcome, const char *reason)
{
	if (c->info.source == PROXY_SOURCE_TRANSPARENT)
		conn_end(c, true, outcome, reason);
	else
		answer_connect(c, what, error, c->host[0] ? c->host : NULL, outcome, reason);
}

/* ---- upstream ---------------------------------------------------------------------------- */

static void on_relay_done(void *userdata, const struct relay_stats *st)
{
	struct proxy_conn *c = userdata;
	const char *reason = "closed";

	c->relay = NULL;
	c->fd = c->up = -EBADF; /* the relay closed them */
	c->bytes_up = c->sent_at_dial + st->bytes_a_to_b;
	c->bytes_down = st->bytes_b_to_a;
	switch (st->end) {
	case RELAY_END_CLOSED:
		break;
	case RELAY_END_IDLE:
		reason = "idle timeout";
		break;
	case RELAY_END_ERROR:
		reason = st->error == -ECONNRESET ? "connection reset" : "socket error";
		break;
	case RELAY_END_CANCELED:
		reason = "cancelled";
		break;
	}
	conn_free(c, PROXY_OUTCOME_RELAYED, reason);
}

static void start_relay(struct proxy_conn *c)
{
	struct proxy *p = c->p;
	struct relay_options opts = {
	        .pipe_size = p->cfg.pipe_size, .idle_ms = p->cfg.idle_ms, .pipes = p->pipes};
	int one = 1, e, fd, up;

	if (c->timer)
		loop_cancel_timer(p->loop, c->timer);
	c->timer = NULL;
	(void)setsockopt(c->up, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (c->info.source == PROXY_SOURCE_CONNECT) {
		char ok[128];
		int n = http_answer_build(HTTP_ANSWER_ESTABLISHED, NULL, NULL, ok, sizeof(ok));

		if (n < 0 || send(c->fd, ok, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) != n) {
			conn_end(c, true, PROXY_OUTCOME_CANCELLED, "client gone");
			return;
		}
	}
	/* What was read to name the connection (or after the CONNECT head) goes first. */
	opts.prefix = c->buf + c->head_len;
	opts.prefix_len = c->len - c->head_len;
	fd = c->fd;
	up = c->up;
	c->fd = c->up = -EBADF;
	/* Registered or not, both go to the relay, which takes a registration over. */
	c->fd_registered = c->up_registered = false;
	c->state = ST_RELAY;
	e = relay_start(p->loop, fd, up, &opts, on_relay_done, c, &c->relay);
	free(c->buf);
	c->buf = NULL;
	c->len = c->head_len = 0;
	if (e < 0)
		conn_free(c, PROXY_OUTCOME_UNREACHABLE, "cannot relay");
}

static void dial_next(struct proxy_conn *c, int last_error);

/* While resolving or dialling, only a hang-up of the client matters. Registered only right
 * before going back to the loop: a name the resolver knows and a dial that completes at once
 * (loopback, nearby hosts) go straight on to the relay without it. */
static int watch_hangup(struct proxy_conn *c)
{
	return c->client_eof ? 0 : watch_client(c, EPOLLRDHUP);
}

static int on_dial_timer(struct loop *loop, void *userdata)
{
	struct proxy_conn *c = userdata;

	c->timer = NULL;
	dial_next(c, -ETIMEDOUT);
	return 0;
}

static int on_upstream(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct proxy_conn *c = userdata;
	int err = 0;
	socklen_t len = sizeof(err);

	/* Writable without an error or a hang-up: TCP reports that only once it is connected
	 * (never in SYN-SENT), so only a failure needs asking which. */
	if ((events & (EPOLLERR | EPOLLHUP)) &&
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err == 0 && (events & (EPOLLERR | EPOLLHUP)))
		err = ECONNREFUSED;
	if (err) {
		dial_next(c, -err);
		return 0;
	}
	start_relay(c);
	return 0;
}

static void addr_to_sockaddr(const struct dns_addr *a, uint16_t port, struct sockaddr_storage *ss,
                             socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;

		s->sin_family = AF_INET;
		s->sin_port = htons(port);
		s->sin_addr = a->v4;
		*len = sizeof(*s);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;

		s->sin6_family = AF_INET6;
		s->sin6_port = htons(port);
		s->sin6_addr = a->v6;
		*len = sizeof(*s);
	}
}

static bool restricted_allowed(struct proxy_conn *c)
{
	struct proxy *p = c->p;

	return p->ops.allow_restricted && p->ops.allow_restricted(p->userdata, &c->info);
}

/* IPv4 spelled in IPv6 (mapped, compatible, NAT64, 6to4): the IPv4 address, which a connect()
 * to B may reach. */
static bool embedded_v4(const struct in6_addr *a, struct sockaddr_in *ret)
{
	static const uint8_t nat64[12] = {0x00, 0x64, 0xff, 0x9b}; /* 64:ff9b::/96 */
	const uint8_t *b = a->s6_addr;
	const uint8_t *v4;

	if (IN6_IS_ADDR_V4MAPPED(a) || IN6_IS_ADDR_V4COMPAT(a) || !memcmp(b, nat64, sizeof(nat64)))
		v4 = b + 12;
	else if (b[0] == 0x20 && b[1] == 0x02)
		v4 = b + 2;
	else
		return false;
	*ret = (struct sockaddr_in){.sin_family = AF_INET};
	memcpy(&ret->sin_addr, v4, 4);
	return true;
}

/* Is ADDR this host itself (local_route.h)? 1 yes, 0 no, -errno when it cannot be told. */
static int addr_is_local(struct proxy *p, const struct sockaddr *addr)
{
	struct sockaddr_in6 sin6;
	struct sockaddr_in v4;
	int r;

	if (addr->sa_family != AF_INET6)
		return local_route_is_local(p->local, addr);
	memcpy(&sin6, addr, sizeof(sin6));
	if (IN6_IS_ADDR_V4MAPPED(&sin6.sin6_addr)) {
		/* Routed as IPv4: the IPv6 route of ::ffff:a.b.c.d says nothing. */
		embedded_v4(&sin6.sin6_addr, &v4);
		return local_route_is_local(p->local, (struct sockaddr *)&v4);
	}
	r = local_route_is_local(p->local, addr);
	if (r == 0 && embedded_v4(&sin6.sin6_addr, &v4))
		r = local_route_is_local(p->local, (struct sockaddr *)&v4);
	return r;
}

/* Why the proxy refuses to connect C to ADDR, or NULL when it may: a restricted address
 * (proxy_addr_restricted) or one of this host's own, unless the policy names C's exact host
 * (ops->allow_restricted). A service listening on 0.0.0.0 of the host answers at every
 * address of the host, so all of them are the host's loopback in effect. */
static const char *dest_refused(struct proxy_conn *c, const struct sockaddr *addr)
{
	const char *why = NULL;
	int r;

	if (proxy_addr_restricted(addr)) {
		why = "restricted destination address";
	} else {
		r = addr_is_local(c->p, addr);
		if (r > 0)
			why = "an address of this host";
		else if (r < 0)
			why = "cannot tell whether the address is this host's";
	}
	return why && !restricted_allowed(c) ? why : NULL;
}

/* Try the next address of c->addrs; LAST_ERROR is why the previous one failed. */
static void dial_next(struct proxy_conn *c, int last_error)
{
	struct proxy *p = c->p;
	bool refused = false;
	const char *why;

	if (c->timer)
		loop_cancel_timer(p->loop, c->timer);
	c->timer = NULL;
	if (c->up >= 0) {
		if (c->up_registered)
			loop_del_fd(p->loop, c->up);
		close(c->up);
		c->up = -EBADF;
		c->up_registered = false;
	}
	while (c->next_addr < c->addrs.n && c->dialled < MAX_DIAL_ADDRS) {
		struct sockaddr_storage ss;
		socklen_t slen;
		int fd, e;

		addr_to_sockaddr(&c->addrs.addrs[c->next_addr++], c->info.port, &ss, &slen);
		why = dest_refused(c, (struct sockaddr *)&ss);
		if (why) {
			c->refused_why = why;
			refused = true;
			continue;
		}
		c->dialled++;
		fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			last_error = -errno;
			continue;
		}
		if (connect(fd, (struct sockaddr *)&ss, slen) < 0 && errno != EINPROGRESS) {
			last_error = -errno;
			close(fd);
			continue;
		}
		c->up = fd;
		c->state = ST_DIAL;
		/* On loopback and nearby hosts the handshake is often done by the time connect()
		 * returns: look once before paying for a round through the loop. With bytes to
		 * send first (transparent: a CONNECT client waits for our answer), sending them is
		 * that look: TCP takes them only once connected (EAGAIN before, the connect's error
		 * after a failure). */
		if (c->info.source == PROXY_SOURCE_TRANSPARENT && c->len > c->head_len) {
			ssize_t n = send(fd, c->buf + c->head_len, c->len - c->head_len,
			                 MSG_NOSIGNAL | MSG_DONTWAIT);

			if (n > 0) {
				c->head_len += (size_t)n;
				c->sent_at_dial = c->bytes_up = (uint64_t)n;
				start_relay(c);
				return;
			}
			if (n < 0 && errno != EAGAIN && errno != EINTR) {
				last_error = -errno;
				close(fd);
				c->up = -EBADF;
				continue;
			}
		} else {
			struct pollfd pfd = {.fd = fd, .events = POLLOUT};

			if (poll(&pfd, 1, 0) == 1) {
				on_upstream(p->loop, fd, (uint32_t)pfd.revents, c);
				return;
			}
		}
		e = loop_add_fd(p->loop, fd, EPOLLOUT, on_upstream, c);
		if (e >= 0) {
			c->up_registered = true;
			e = loop_add_timer(p->loop, loop_now_ms() + p->cfg.connect_ms,
			                   on_dial_timer, c, &c->timer);
		}
		if (e >= 0)
			e = watch_hangup(c);
		if (e < 0) {
			/* Undo this address before the next one sets c->up and c->timer again. */
			last_error = e;
			if (c->timer)
				loop_cancel_timer(p->loop, c->timer);
			c->timer = NULL;
			if (c->up_registered)
				loop_del_fd(p->loop, fd);
			c->up_registered = false;
			close(fd);
			c->up = -EBADF;
			continue;
		}
		return;
	}
	if (refused && c->dialled == 0) {
		refuse(c, HTTP_ANSWER_FORBIDDEN, "destination address not allowed",
		       PROXY_OUTCOME_REFUSED,
		       strcmp(c->refused_why, "restricted destination address")
		               ? c->refused_why
		               : "resolves to a restricted address");
		return;
	}
	if (last_error == -ETIMEDOUT)
		refuse(c, HTTP_ANSWER_GATEWAY_TIMEOUT, "upstream connect timed out",
		       PROXY_OUTCOME_UNREACHABLE, "connect timed out");
	else
		refuse(c, HTTP_ANSWER_BAD_GATEWAY, "upstream unreachable",
		       PROXY_OUTCOME_UNREACHABLE,
		       last_error == -ECONNREFUSED ? "connection refused" : "unreachable");
}

static void start_dial(struct proxy_conn *c, const struct dns_addrs *addrs)
{
	c->addrs = *addrs;
	c->next_addr = 0;
	c->dialled = 0;
	dial_next(c, -EHOSTUNREACH);
}

static void on_lookup(void *userdata, int error, const struct dns_addrs *addrs)
{
	struct proxy_conn *c = userdata;

	c->lookup = NULL;
	if (error < 0) {
		refuse(c, HTTP_ANSWER_BAD_GATEWAY, "upstream name not resolved",
		       PROXY_OUTCOME_UNREACHABLE,
		       error == -ENOENT ? "name does not exist" : "name not resolved");
		return;
	}
	start_dial(c, addrs);
}

/* Allowed: find the upstream address and connect. */
static void go_upstream(struct proxy_conn *c)
{
	struct proxy *p = c->p;
	struct dns_addrs addrs;
	int e;

	if (c->dial_original) {
		struct dns_addr a = {.family = c->info.original_dst.ss_family};

		if (a.family == AF_INET)
			a.v4 = ((struct sockaddr_in *)&c->info.original_dst)->sin_addr;
		else
			a.v6 = ((struct sockaddr_in6 *)&c->info.original_dst)->sin6_addr;
		memset(&addrs, 0, sizeof(addrs));
		addrs.n = 1;
		addrs.addrs[0] = a;
		start_dial(c, &addrs);
		return;
	}
	c->state = ST_RESOLVE;
	e = resolver_lookup(p->cfg.resolver, c->host, &addrs, on_lookup, c, &c->lookup);
	if (e > 0)
		start_dial(c, &addrs);
	else if (e < 0)
		on_lookup(c, e, NULL);
	else if (watch_hangup(c) < 0)
		conn_end(c, true, PROXY_OUTCOME_CANCELLED, "loop error");
}

/* ---- deciding ---------------------------------------------------------------------------- */

static void apply_decision(struct proxy_conn *c, bool allow, const char *reason)
{
	if (c->timer)
		loop_cancel_timer(c->p->loop, c->timer);
	c->timer = NULL;
	if (allow) {
		go_upstream(c);
		return;
	}
	refuse(c, HTTP_ANSWER_FORBIDDEN, reason, PROXY_OUTCOME_DENIED,
	       reason ? reason : "domain not in allowlist");
}

static int on_pending_timer(struct loop *loop, void *userdata)
{
	struct proxy_conn *c = userdata;

	c->timer = NULL;
	apply_decision(c, false, "Request timed out waiting for approval");
	return 0;
}

static void decide(struct proxy_conn *c)
{
	struct proxy *p = c->p;
	enum proxy_verdict v;
	const char *why;

	c->info.host = c->host;
	/* A fake address aims at the name it stands for, never at this host (the dial goes to
	 * that name's resolution, which is checked then): asking the kernel whether the host
	 * holds it would cost a route lookup per connection and could only refuse wrongly. */
	if (c->info.source == PROXY_SOURCE_TRANSPARENT && !c->dst_fake &&
	    (why = dest_refused(c, (struct sockaddr *)&c->info.original_dst))) {
		refuse(c, HTTP_ANSWER_FORBIDDEN, NULL, PROXY_OUTCOME_REFUSED, why);
		return;
	}
	if (c->timer)
		loop_cancel_timer(p->loop, c->timer);
	c->timer = NULL;
	c->state = ST_PENDING;
	c->in_decide = true;
	v = p->ops.decide(p->userdata, c, &c->info);
	c->in_decide = false;
	if (c->early_decided) {
		apply_decision(c, c->early_allow, c->reason[0] ? c->reason : NULL);
		return;
	}
	switch (v) {
	case PROXY_ALLOW:
		apply_decision(c, true, NULL);
		return;
	case PROXY_DENY:
		apply_decision(c, false, NULL);
		return;
	case PROXY_PENDING:
		break;
	}
	if (watch_hangup(c) < 0 || loop_add_timer(p->loop, loop_now_ms() + p->cfg.pending_max_ms,
	                                          on_pending_timer, c, &c->timer) < 0)
		conn_end(c, true, PROXY_OUTCOME_CANCELLED, "loop error");
}

int proxy_conn_decide(struct proxy_conn *c, bool allow, const char *reason)
{
	if (c->state != ST_PENDING || c->early_decided)
		return -EALREADY;
	snprintf(c->reason, sizeof(c->reason), "%s", reason ? reason : "");
	if (c->in_decide) {
		/* From inside decide(): applied when it returns. */
		c->early_decided = true;
		c->early_allow = allow;
		return 0;
	}
	c->early_decided = true;
	apply_decision(c, allow, c->reason[0] ? c->reason : NULL);
	return 0;
}

uint64_t proxy_conn_id(const struct proxy_conn *c)
{
	return c->id;
}

/* ---- naming a transparent connection ----------------------------------------------------- */

static void set_port_from(struct proxy_conn *c, const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		c->info.port = ntohs(((const struct sockaddr_in *)ss)->sin_port);
	else
		c->info.port = ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
}

/* Name the connection from what was read (FINAL: nothing more will come: EOF, a full buffer or
 * the sniff deadline) and decide. Returns true when it was decided, false to read on. */
static bool try_name(struct proxy_conn *c, bool final)
{
	struct sniff_name named;

	switch (sniff_name(c->buf, c->len, final, &named)) {
	case SNIFF_WAIT:
		return false;
	case SNIFF_NAMED:
		snprintf(c->host, sizeof(c->host), "%s", named.host);
		c->info.name_source = named.source;
		c->dial_original = false;
		break;
	case SNIFF_FALLBACK:
		/* The resolver's name for the address (set at accept), else the address. */
		if (c->host[0] == '\0') {
			void *a = c->info.original_dst.ss_family == AF_INET
			                  ? (void *)&((struct sockaddr_in *)&c->info.original_dst)
			                            ->sin_addr
			                  : (void *)&((struct sockaddr_in6 *)&c->info.original_dst)
			                            ->sin6_addr;

			inet_ntop(c->info.original_dst.ss_family, a, c->host, sizeof(c->host));
			c->info.name_source = "ip";
			c->dial_original = true;
		}
		break;
	}
	decide(c);
	return true;
}

static int on_peek_timer(struct loop *loop, void *userdata)
{
	struct proxy_conn *c = userdata;

	c->timer = NULL;
	try_name(c, true);
	return 0;
}

/* Read what the client sent and try to name the connection. Returns 1 when the peek is over
 * (named and decided, or ended: C may be gone), 0 when more bytes are needed. */
static int peek_read(struct proxy_conn *c)
{
	ssize_t n = recv(c->fd, c->buf + c->len, c->p->cfg.peek_bytes - c->len, MSG_DONTWAIT);

	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		conn_end(c, true, PROXY_OUTCOME_CANCELLED, "client error");
		return 1;
	}
	if (n == 0) {
		/* The client ended its sending, maybe before any byte (a server-speaks-first
		 * protocol, `nc -N … </dev/null`): decide now on what is known, and relay the
		 * half-close and the server's answer as for any other connection. */
		c->client_eof = true;
		/* No more events from it: a half-closed socket stays readable. */
		if (c->fd_registered)
			loop_del_fd(c->p->loop, c->fd);
		c->fd_registered = false;
		try_name(c, true);
		return 1;
	}
	c->len += (size_t)n;
	return try_name(c, c->len == c->p->cfg.peek_bytes) ? 1 : 0;
}

/* ---- the CONNECT head -------------------------------------------------------------------- */

static void connect_head(struct proxy_conn *c, const struct http_request_head *head)
{
	struct proxy *p = c->p;
	char user[HTTP_AUTH_MAX + 1], password[HTTP_AUTH_MAX + 1];
	const struct token_entry *tok = NULL;
	struct http_authority auth;

	if (head->proxy_auth &&
	    http_basic_auth_decode(head->proxy_auth->value, head->proxy_auth->value_len, user,
	                           password, NULL) >= 0 &&
	    p->cfg.tokens)
		tok = tokens_lookup(p->cfg.tokens, password);
	explicit_bzero(password, sizeof(password));
	if (!tok) {
		answer_connect(c, HTTP_ANSWER_AUTH_REQUIRED, NULL, NULL, PROXY_OUTCOME_REJECTED,
		               head->proxy_auth ? "bad proxy credentials" : "no proxy credentials");
		return;
	}
	c->sandbox = strdup(tok->cloister);
	c->project = tok->project ? strdup(tok->project) : NULL;
	if (!c->sandbox || (tok->project && !c->project)) {
		conn_end(c, true, PROXY_OUTCOME_REJECTED, "out of memory");
		return;
	}
	c->info.sandbox = c->sandbox;
	c->info.project = c->project;
	if (!head->connect) {
		answer_405(c);
		return;
	}
	if (http_authority_parse(head->target, head->target_len, 0, &auth, NULL) < 0) {
		answer_connect(c, HTTP_ANSWER_BAD_REQUEST, "CONNECT target must be host:port", NULL,
		               PROXY_OUTCOME_REJECTED, "bad CONNECT target");
		return;
	}
	snprintf(c->host, sizeof(c->host), "%s", auth.host);
	c->info.port = auth.port;
	c->info.name_source = "connect";
	if (auth.ip) {
		struct dns_addrs a;
		struct sockaddr_storage ss;
		socklen_t slen;
		const char *why;

		if (resolver_lookup(p->cfg.resolver, c->host, &a, NULL, NULL, NULL) == 1) {
			addr_to_sockaddr(&a.addrs[0], auth.port, &ss, &slen);
			c->info.host = c->host;
			why = dest_refused(c, (struct sockaddr *)&ss);
			if (why) {
				refuse(c, HTTP_ANSWER_FORBIDDEN, "destination address not allowed",
				       PROXY_OUTCOME_REFUSED, why);
				return;
			}
		}
	}
	decide(c);
}

/* Like peek_read(), for the CONNECT head: 1 when it is over, 0 when more is needed. */
static int head_read(struct proxy_conn *c)
{
	struct http_request_head *head;
	ssize_t n;
	int h;

	n = recv(c->fd, c->buf + c->len, c->p->cfg.peek_bytes - c->len, MSG_DONTWAIT);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		conn_end(c, true, PROXY_OUTCOME_CANCELLED, "client error");
		return 1;
	}
	if (n == 0) {
		conn_end(c, false, PROXY_OUTCOME_CANCELLED, "client closed before the head");
		return 1;
	}
	c->len += (size_t)n;
	head = malloc(sizeof(*head));
	if (!head) {
		conn_end(c, true, PROXY_OUTCOME_REJECTED, "out of memory");
		return 1;
	}
	h = http_head_parse((const char *)c->buf, c->len, head, NULL);
	if (h == 0 && c->len == c->p->cfg.peek_bytes)
		h = -EMSGSIZE;
	if (h > 0) {
		c->head_len = (size_t)h;
		connect_head(c, head);
	} else if (h == -EMSGSIZE) {
		answer_connect(c, HTTP_ANSWER_HEAD_TOO_LARGE, NULL, NULL, PROXY_OUTCOME_REJECTED,
		               "head too large");
	} else if (h == -EPROTONOSUPPORT) {
		answer_connect(c, HTTP_ANSWER_VERSION_UNSUPPORTED, NULL, NULL,
		               PROXY_OUTCOME_REJECTED, "HTTP version not supported");
	} else if (h < 0) {
		answer_connect(c, HTTP_ANSWER_BAD_REQUEST, NULL, NULL, PROXY_OUTCOME_REJECTED,
		               "malformed request head");
	}
	free(head);
	return h == 0 ? 0 : 1;
}

static int on_head_timer(struct loop *loop, void *userdata)
{
	struct proxy_conn *c = userdata;

	c->timer = NULL;
	conn_end(c, false, PROXY_OUTCOME_REJECTED, "no request head in time");
	return 0;
}

/* ---- lingering --------------------------------------------------------------------------- */

static void linger_end(struct proxy_conn *c)
{
	conn_end(c, false, c->linger_outcome, c->reason);
}

static int on_linger_timer(struct loop *loop, void *userdata)
{
	struct proxy_conn *c = userdata;

	c->timer = NULL;
	linger_end(c);
	return 0;
}

static void linger_read(struct proxy_conn *c)
{
	uint8_t sink[4096];

	for (size_t total = 0; total < LINGER_DISCARD; total += sizeof(sink)) {
		ssize_t n = recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0)
			break;
	}
	linger_end(c);
}

/* ---- the client socket ------------------------------------------------------------------- */

static int on_client(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct proxy_conn *c = userdata;

	switch (c->state) {
	case ST_PEEK:
		peek_read(c);
		break;
	case ST_HEAD:
		head_read(c);
		break;
	case ST_LINGER:
		linger_read(c);
		break;
	case ST_PENDING:
	case ST_RESOLVE:
	case ST_DIAL:
		/* Only hang-ups are watched here. A reset, or a FIN from a CONNECT client (which
		 * waits for our answer and never half-closes before it): the asker is gone. A
		 * transparent client may well send its request and shut its side (half-close):
		 * that FIN is relayed later, so stop watching and go on. */
		if ((events & (EPOLLERR | EPOLLHUP)) || c->info.source == PROXY_SOURCE_CONNECT) {
			conn_end(c, true, PROXY_OUTCOME_CANCELLED, "client left");
			break;
		}
		c->client_eof = true;
		loop_del_fd(loop, c->fd);
		c->fd_registered = false;
		break;
	case ST_RELAY:
		break;
	}
	return 0;
}

/* ---- accepting --------------------------------------------------------------------------- */

static void accept_one(struct listener *l, int fd, const struct sockaddr_storage *peer,
                       socklen_t peer_len)
{
	struct proxy *p = l->p;
	struct proxy_conn *c;
	int one = 1, e;

	if (p->n_conns >= p->cfg.max_conns) {
		reset_fd(fd);
		close(fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c)
		c->buf = malloc(p->cfg.peek_bytes);
	if (!c || !c->buf) {
		if (c)
			free(c);
		reset_fd(fd);
		close(fd);
		return;
	}
	c->p = p;
	c->id = p->next_id++;
	c->l = l;
	c->fd = fd;
	c->up = -EBADF;
	c->started_ms = loop_now_ms();
	c->info.source = l->source;
	c->info.sandbox = l->sandbox;
	c->info.project = l->project;
	c->info.host = c->host;
	c->info.peer = *peer;
	c->info.original_dst.ss_family = AF_UNSPEC;
	c->info.name_source = "";
	c->next = p->conns;
	if (p->conns)
		p->conns->prev = c;
	p->conns = c;
	p->n_conns++;
	if (!l->nodelay)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

	if (l->source == PROXY_SOURCE_CONNECT) {
		c->state = ST_HEAD;
		/* The head often came with the handshake: look before registering anything. */
		if (head_read(c))
			return;
		e = watch_client(c, EPOLLIN);
		if (e >= 0)
			e = loop_add_timer(p->loop, c->started_ms + p->cfg.head_ms, on_head_timer,
			                   c, &c->timer);
		if (e < 0)
			conn_end(c, true, PROXY_OUTCOME_REJECTED, "loop error");
		return;
	}

	e = p->ops.original_dst ? p->ops.original_dst(p->userdata, fd, (struct sockaddr *)peer,
	                                              peer_len, &c->info.original_dst)
	                        : -ENOTSUP;
	if (e < 0) {
		c->info.original_dst.ss_family = AF_UNSPEC;
		conn_end(c, true, PROXY_OUTCOME_REJECTED, "no original destination");
		return;
	}
	set_port_from(c, &c->info.original_dst);
	{
		bool fake = false;

		if (resolver_name_of(p->cfg.resolver, (struct sockaddr *)&c->info.original_dst,
		                     c->host, &fake) >= 0) {
			c->info.name_source = "resolver";
			c->dst_fake = fake;
		} else if (fakeip_is_fake((struct sockaddr *)&c->info.original_dst)) {
			/* A fake address nobody holds: there is nowhere to go. */
			conn_end(c, true, PROXY_OUTCOME_REJECTED, "unknown fake address");
			return;
		}
	}
	c->state = ST_PEEK;
	/* The first bytes often came with the handshake: look before registering anything. */
	if (peek_read(c))
		return;
	e = watch_client(c, EPOLLIN);
	if (e >= 0)
		e = loop_add_timer(p->loop,
		                   c->started_ms +
		                           (c->host[0] ? p->cfg.peek_named_ms : p->cfg.peek_ms),
		                   on_peek_timer, c, &c->timer);
	if (e < 0)
		conn_end(c, true, PROXY_OUTCOME_REJECTED, "loop error");
}

static int on_listener_resume(struct loop *loop, void *userdata)
{
	struct listener *l = userdata;

	l->paused = NULL;
	if (loop_mod_fd(loop, l->fd, EPOLLIN) >= 0)
		return 0;
	/* Still paused: try again in a moment. A listener left paused for good would serve
	 * nothing more and say nothing: stop the loop with the error instead. */
	return loop_add_timer(loop, loop_now_ms() + ACCEPT_PAUSE_MS, on_listener_resume, l,
	                      &l->paused);
}

/* One connection per wake-up: the listener is level-triggered, so another one waiting makes
 * the next epoll_wait() return at once, and the usual lone connection costs no accept4() that
 * can only say EAGAIN. */
static int on_listener(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct listener *l = userdata;
	struct sockaddr_storage peer;
	socklen_t plen = sizeof(peer);
	int cfd = accept4(fd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (cfd >= 0) {
		accept_one(l, cfd, &peer, plen);
		return 0;
	}
	if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
		/* Out of fds or memory: the connection stays queued and the listener would be
		 * ready again at once. Stop listening for a moment instead of spinning. */
		if (!l->paused && loop_mod_fd(loop, fd, 0) >= 0 &&
		    loop_add_timer(loop, loop_now_ms() + ACCEPT_PAUSE_MS, on_listener_resume, l,
		                   &l->paused) < 0)
			/* No timer to resume it: listening again at once, or the loop stops
			 * (a listener paused for good serves nothing more). */
			return loop_mod_fd(loop, fd, EPOLLIN);
	}
	return 0; /* EAGAIN, or a transient error (ECONNABORTED) */
}

static int add_listener(struct proxy *p, int fd, enum proxy_source source, const char *sandbox,
                        const char *project)
{
	struct listener *l;
	int e;

	if (p->n_listeners == MAX_LISTENERS)
		return -ENOSPC;
	if (source == PROXY_SOURCE_TRANSPARENT && (!sandbox || !p->ops.original_dst))
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->p = p;
	l->fd = fd;
	l->source = source;
	/* Small writes (a TLS handshake, a request) go out at once; set once here rather than on
	 * every accepted socket, which inherits it from its listener. */
	l->nodelay = setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int)) == 0;
	if ((sandbox && !(l->sandbox = strdup(sandbox))) ||
	    (project && !(l->project = strdup(project)))) {
		free(l->sandbox);
		free(l);
		return -ENOMEM;
	}
	e = loop_add_fd(p->loop, fd, EPOLLIN, on_listener, l);
	if (e < 0) {
		free(l->sandbox);
		free(l->project);
		free(l);
		return e;
	}
	p->listeners[p->n_listeners++] = l;
	return 0;
}

int proxy_add_transparent(struct proxy *p, int fd, const char *sandbox, const char *project)
{
	return add_listener(p, fd, PROXY_SOURCE_TRANSPARENT, sandbox, project);
}

int proxy_add_connect(struct proxy *p, int fd)
{
	if (!p->cfg.tokens)
		return -EINVAL;
	return add_listener(p, fd, PROXY_SOURCE_CONNECT, NULL, NULL);
}

void proxy_free(struct proxy *p)
{
	if (!p)
		return;
	while (p->conns) {
		struct proxy_conn *c = p->conns;

		if (c->relay)
			relay_cancel(c->relay); /* ends in on_relay_done, which frees c */
		else
			conn_end(c, true, PROXY_OUTCOME_CANCELLED, "proxy stopped");
	}
	for (size_t i = 0; i < p->n_listeners; i++) {
		if (p->listeners[i]->paused)
			loop_cancel_timer(p->loop, p->listeners[i]->paused);
		loop_del_fd(p->loop, p->listeners[i]->fd);
		free(p->listeners[i]->sandbox);
		free(p->listeners[i]->project);
		free(p->listeners[i]);
	}
	while (p->retired) {
		struct listener *l = p->retired;

		p->retired = l->retired_next;
		free(l->sandbox);
		free(l->project);
		free(l);
	}
	relay_pipes_free(p->pipes); /* after the relays: they gave theirs back */
	local_route_free(p->local);
	free(p);
}

int proxy_remove_listener(struct proxy *p, int fd)
{
	for (size_t i = 0; i < p->n_listeners; i++) {
		struct listener *l = p->listeners[i];

		if (l->fd != fd)
			continue;
		if (l->paused)
			loop_cancel_timer(p->loop, l->paused);
		l->paused = NULL;
		loop_del_fd(p->loop, fd);
		l->fd = -1;
		p->listeners[i] = p->listeners[--p->n_listeners];
		/* Its connections keep pointing at its names until the proxy goes. */
		l->retired_next = p->retired;
		p->retired = l;
		return 0;
	}
	return -ENOENT;
}
