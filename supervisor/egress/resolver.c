/* The resolver: see resolver.h.
 *
 * Over 900 lines on purpose: the agent's DNS server (the last part) and the proxy's host-side
 * lookups are two users of one cache, one set of upstream queries in flight and one set of bounds,
 * and the server's real-IP mode answers through the lookups; what is pure is apart already
 * (dns_msg.c, fakeip.c, hostsdb.c's parsing).
 */
#include "supervisor/egress/resolver.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd_read.h"
#include "supervisor/egress/fakeip.h"
#include "supervisor/egress/hostsdb.h"

#define HOSTS_MAX_BYTES (256 * 1024)
#define TCP_QUERY_MAX   4096
#define TCP_IDLE_MS     10000
#define NEG_TTL_S       5

/* ---- pure helpers ------------------------------------------------------------------------ */

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* The next whitespace-separated word of LINE[*pos..end), or false at the end / a comment. */
static bool next_word(const char *line, size_t end, size_t *pos, const char **ret, size_t *ret_len)
{
	size_t p = *pos, s;

	while (p < end && is_space(line[p]))
		p++;
	if (p >= end || line[p] == '#')
		return false;
	s = p;
	while (p < end && !is_space(line[p]) && line[p] != '#')
		p++;
	*ret = line + s;
	*ret_len = p - s;
	*pos = p;
	return true;
}

static bool parse_addr(const char *w, size_t len, struct dns_addr *ret)
{
	char tmp[INET6_ADDRSTRLEN + 1];
	char *pct;

	if (len >= sizeof(tmp))
		return false;
	memcpy(tmp, w, len);
	tmp[len] = '\0';
	pct = strchr(tmp, '%'); /* a zone index: not ours to use */
	if (pct)
		*pct = '\0';
	memset(ret, 0, sizeof(*ret));
	if (inet_pton(AF_INET, tmp, &ret->v4) == 1) {
		ret->family = AF_INET;
		return true;
	}
	if (inet_pton(AF_INET6, tmp, &ret->v6) == 1) {
		ret->family = AF_INET6;
		return true;
	}
	return false;
}

int resolver_hosts_find(const char *text, size_t len, const char *name, struct dns_addrs *ret)
{
	struct dns_addrs out = {.rcode = DNS_RCODE_NOERROR};
	size_t nlen = strlen(name), line = 0;

	while (line < len) {
		const char *nl = memchr(text + line, '\n', len - line);
		size_t end = nl ? (size_t)(nl - text) : len, pos = line;
		const char *w;
		size_t wl;
		struct dns_addr a;

		if (next_word(text, end, &pos, &w, &wl) && parse_addr(w, wl, &a)) {
			while (next_word(text, end, &pos, &w, &wl)) {
				if (wl == nlen && strncasecmp(w, name, nlen) == 0 &&
				    out.n < DNS_MAX_ADDRS) {
					out.addrs[out.n++] = a;
					break;
				}
			}
		}
		line = end + 1;
	}
	if (out.n == 0)
		return -ENOENT;
	*ret = out;
	return 0;
}

int resolver_conf_nameserver(const char *text, size_t len, struct sockaddr_storage *ret)
{
	size_t line = 0;

	while (line < len) {
		const char *nl = memchr(text + line, '\n', len - line);
		size_t end = nl ? (size_t)(nl - text) : len, pos = line;
		const char *w;
		size_t wl;
		struct dns_addr a;

		if (next_word(text, end, &pos, &w, &wl) && wl == 10 &&
		    memcmp(w, "nameserver", 10) == 0 && next_word(text, end, &pos, &w, &wl) &&
		    parse_addr(w, wl, &a)) {
			memset(ret, 0, sizeof(*ret));
			if (a.family == AF_INET) {
				struct sockaddr_in *s = (struct sockaddr_in *)ret;

				s->sin_family = AF_INET;
				s->sin_port = htons(53);
				s->sin_addr = a.v4;
			} else {
				struct sockaddr_in6 *s = (struct sockaddr_in6 *)ret;

				s->sin6_family = AF_INET6;
				s->sin6_port = htons(53);
				s->sin6_addr = a.v6;
			}
			return 0;
		}
		line = end + 1;
	}
	return -ENOENT;
}

int resolver_question(const char *name, uint16_t qtype, struct dns_query *ret)
{
	struct dns_query q = {.qtype = qtype, .qclass = DNS_CLASS_IN, .rd = true};
	size_t len = strlen(name), w = 0, start = 0;

	if (domain_name_normalise(name, len, DOMAIN_NAME_UNDERSCORE, q.name) < 0)
		return -EINVAL;
	len = strlen(q.name);
	for (size_t i = 0; i <= len; i++) {
		if (i < len && q.name[i] != '.')
			continue;
		q.qname_wire[w++] = (uint8_t)(i - start);
		memcpy(q.qname_wire + w, q.name + start, i - start);
		w += i - start;
		start = i + 1;
	}
	q.qname_wire[w++] = 0;
	q.qname_wire_len = w;
	q.name_valid = true;
	*ret = q;
	return 0;
}

/* ---- the resolver ------------------------------------------------------------------------ */

struct cache_entry {
	char name[DOMAIN_HOST_MAX + 1];
	uint64_t expires_ms;
	int error; /* 0, or a negative answer kept for NEG_TTL_S */
	struct dns_addrs addrs;
};

struct resolver_lookup {
	struct upstream_query *uq;
	resolver_done_fn fn;
	void *userdata;
	size_t next_source;   /* hostsdb order index after dns, for a failed answer */
	unsigned dns_stop_on; /* hostsdb_status bits that end the lookup at dns */
	struct resolver_lookup *next;
};

/* One name asked upstream: an A and an AAAA question from one socket. */
struct upstream_query {
	struct resolver *r;
	char name[DOMAIN_HOST_MAX + 1];
	int fd;
	struct dns_query q[2]; /* A, AAAA */
	uint16_t id[2];
	bool answered[2];
	int error[2];
	struct dns_addrs got;
	uint32_t min_ttl;
	struct loop_timer *timer;
	uint64_t started_ms;
	bool resent;
	struct resolver_lookup *waiters;
	struct upstream_query *prev, *next;
};

struct tcp_client {
	struct resolver *r;
	int fd;
	const void *tag; /* its listener's (resolver_serve_tcp) */
	uint8_t buf[2 + TCP_QUERY_MAX];
	size_t len;
	bool busy; /* a query of it waits for a lookup */
	struct loop_timer *timer;
	struct tcp_client *prev, *next;
};

/* An agent's query waiting for the host-side lookup (real-IP mode). */
struct agent_query {
	struct resolver *r;
	struct dns_query q;
	int udp_fd; /* UDP: answer to peer from this socket */
	struct sockaddr_storage peer;
	socklen_t peer_len;
	struct tcp_client *tcp; /* TCP: answer on this client */
	struct resolver_lookup *lookup;
	struct agent_query *prev, *next;
};

struct resolver {
	struct loop *loop;
	struct resolver_config cfg;
	struct resolver_ops ops;
	void *userdata;
	struct fakeip *fake;
	struct hostsdb *db;
	bool have_upstream;
	struct sockaddr_storage upstream;
	struct cache_entry **cache;
	size_t cache_n;
	struct upstream_query *queries;
	size_t n_queries;
	struct tcp_client *clients;
	size_t n_clients;
	struct agent_query *agent_queries;
	size_t n_agent_queries;
	int served[256];
	const void *tags[256]; /* resolver_serve_*'s TAG of each */
	bool paused_fd[256];
	struct loop_timer *pause_timer;
	size_t n_served;
};

void resolver_config_init(struct resolver_config *cfg)
{
	*cfg = (struct resolver_config){
	        .fake_ip = true,
	        .upstream.ss_family = AF_UNSPEC,
	        .resolv_conf = "/etc/resolv.conf",
	        .system_hosts = "/etc/hosts",
	        .nsswitch_conf = "/etc/nsswitch.conf",
	        .fake_names = 65536,
	        .real_records = 16384,
	        .cache_max = 1024,
	        .max_lookups = 256,
	        .max_tcp_clients = 64,
	        .fake_ttl = 30,
	        .max_ttl = 300,
	        .timeout_ms = 3000,
	};
}

static int read_small_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((size_t)st.st_size > max)
		return -EFBIG;
	return fd_read_all(fd, max, ret, ret_len);
}

int resolver_new(struct loop *loop, const struct resolver_config *cfg,
                 const struct resolver_ops *ops, void *userdata, struct resolver **ret,
                 struct cl_error *err)
{
	struct resolver *r = calloc(1, sizeof(*r));
	uint8_t key[16];
	int e;

	if (!r)
		return -ENOMEM;
	r->loop = loop;
	r->cfg = *cfg;
	r->cfg.resolv_conf = NULL; /* not kept: used here only */
	r->cfg.hosts_file = NULL;  /* hostsdb keeps its own copies */
	r->cfg.system_hosts = NULL;
	r->cfg.nsswitch_conf = NULL;
	if (ops)
		r->ops = *ops;
	r->userdata = userdata;
	if (getrandom(key, sizeof(key), 0) != sizeof(key)) {
		free(r);
		return cl_error_set(err, -EIO, "getrandom failed");
	}
	e = fakeip_new(cfg->fake_names, cfg->fake_ip ? 0 : cfg->real_records, key, &r->fake);
	if (e < 0) {
		free(r);
		return cl_error_set(err, e, "fake-IP table of %zu names: %s", cfg->fake_names,
		                    strerror(-e));
	}
	r->cache = calloc(cfg->cache_max ? cfg->cache_max : 1, sizeof(*r->cache));
	if (!r->cache) {
		resolver_free(r);
		return -ENOMEM;
	}
	{
		const struct hostsdb_config hc = {
		        .extra = cfg->hosts_file,
		        .hosts = cfg->system_hosts,
		        .nsswitch = cfg->nsswitch_conf,
		};

		e = hostsdb_new(&hc, &r->db, err);
		if (e < 0) {
			resolver_free(r);
			return e;
		}
	}
	if (cfg->upstream.ss_family != AF_UNSPEC) {
		r->upstream = cfg->upstream;
		r->have_upstream = true;
	} else if (cfg->resolv_conf) {
		_cleanup_free_ char *conf = NULL;
		size_t len = 0;

		if (read_small_file(cfg->resolv_conf, HOSTS_MAX_BYTES, &conf, &len) >= 0 &&
		    resolver_conf_nameserver(conf, len, &r->upstream) >= 0)
			r->have_upstream = true;
	}
	*ret = r;
	return 0;
}

static void query_free(struct upstream_query *uq);
static void client_close(struct tcp_client *c);
static void agent_query_free(struct agent_query *aq);

void resolver_free(struct resolver *r)
{
	if (!r)
		return;
	if (r->pause_timer)
		loop_cancel_timer(r->loop, r->pause_timer);
	for (size_t i = 0; i < r->n_served; i++)
		loop_del_fd(r->loop, r->served[i]);
	while (r->agent_queries)
		agent_query_free(r->agent_queries);
	while (r->queries) {
		struct upstream_query *uq = r->queries;

		while (uq->waiters) {
			struct resolver_lookup *w = uq->waiters;

			uq->waiters = w->next;
			free(w);
		}
		query_free(uq);
	}
	while (r->clients)
		client_close(r->clients);
	for (size_t i = 0; i < r->cache_n; i++)
		free(r->cache[i]);
	free(r->cache);
	hostsdb_free(r->db);
	fakeip_free(r->fake);
	free(r);
}

/* ---- cache ------------------------------------------------------------------------------- */

static struct cache_entry *cache_find(struct resolver *r, const char *name, uint64_t now)
{
	for (size_t i = 0; i < r->cache_n; i++) {
		struct cache_entry *c = r->cache[i];

		if (strcmp(c->name, name) != 0)
			continue;
		if (c->expires_ms <= now) {
			free(c);
			r->cache[i] = r->cache[--r->cache_n];
			return NULL;
		}
		return c;
	}
	return NULL;
}

static void cache_put(struct resolver *r, const char *name, int error, const struct dns_addrs *a,
                      uint32_t ttl_s)
{
	uint64_t now = loop_now_ms();
	struct cache_entry *c = cache_find(r, name, now);

	if (r->cfg.cache_max == 0)
		return;
	if (!c) {
		if (r->cache_n == r->cfg.cache_max) {
			/* Full: drop the entry closest to expiring. */
			size_t victim = 0;

			for (size_t i = 1; i < r->cache_n; i++)
				if (r->cache[i]->expires_ms < r->cache[victim]->expires_ms)
					victim = i;
			free(r->cache[victim]);
			r->cache[victim] = r->cache[--r->cache_n];
		}
		c = calloc(1, sizeof(*c));
		if (!c)
			return;
		r->cache[r->cache_n++] = c;
		strcpy(c->name, name);
	}
	c->error = error;
	if (a)
		c->addrs = *a;
	c->expires_ms = now + (uint64_t)ttl_s * 1000;
}

/* ---- upstream queries -------------------------------------------------------------------- */

static void query_free(struct upstream_query *uq)
{
	struct resolver *r = uq->r;

	if (uq->timer)
		loop_cancel_timer(r->loop, uq->timer);
	if (uq->fd >= 0) {
		loop_del_fd(r->loop, uq->fd);
		close(uq->fd);
	}
	if (uq->prev)
		uq->prev->next = uq->next;
	else
		r->queries = uq->next;
	if (uq->next)
		uq->next->prev = uq->prev;
	r->n_queries--;
	free(uq);
}

static int walk_sources(struct resolver *r, const char *name, size_t from, int error,
                        struct dns_addrs *ret, size_t *ret_dns);

static void query_finish(struct upstream_query *uq, int error)
{
	struct resolver *r = uq->r;
	struct resolver_lookup *w = uq->waiters;
	struct dns_addrs got = uq->got;
	char name[DOMAIN_HOST_MAX + 1];

	uq->waiters = NULL;
	if (error == 0 && got.n == 0)
		error = -ENODATA;
	if (error == 0) {
		uint32_t ttl = uq->min_ttl;

		if (ttl > r->cfg.max_ttl)
			ttl = r->cfg.max_ttl;
		if (ttl == 0)
			ttl = 1;
		cache_put(r, uq->name, 0, &got, ttl);
	} else if (error == -ENOENT || error == -ENODATA) {
		cache_put(r, uq->name, error, NULL, NEG_TTL_S);
	}
	strcpy(name, uq->name);
	query_free(uq);
	/* Waiters may start new lookups or cancel others from their callbacks: each is taken
	 * off the list before it is called. */
	while (w) {
		struct resolver_lookup *next = w->next;
		struct dns_addrs after;
		size_t dns;
		int e = error;

		/* DNS failed and nsswitch.conf goes on (`dns files`): the sources after it. */
		if (e < 0 && !(w->dns_stop_on & hostsdb_status_of(e))) {
			e = walk_sources(r, name, w->next_source, e, &after, &dns);
			e = e > 0 ? 0 : e < 0 ? e : error;
		}
		w->fn(w->userdata, e, e == 0 ? (error == 0 ? &got : &after) : NULL);
		free(w);
		w = next;
	}
}

static int query_send(struct upstream_query *uq)
{
	for (int i = 0; i < 2; i++) {
		uint8_t buf[DNS_UDP_PLAIN];
		int len;

		if (uq->answered[i])
			continue;
		len = dns_query_build(&uq->q[i], uq->id[i], buf, sizeof(buf));
		if (len < 0)
			return len;
		if (send(uq->fd, buf, (size_t)len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 &&
		    errno != EAGAIN)
			return -errno;
	}
	return 0;
}

static int on_query_timer(struct loop *loop, void *userdata)
{
	struct upstream_query *uq = userdata;
	uint64_t now = loop_now_ms();

	uq->timer = NULL;
	if (!uq->resent && now < uq->started_ms + uq->r->cfg.timeout_ms) {
		uq->resent = true;
		if (query_send(uq) >= 0 &&
		    loop_add_timer(loop, uq->started_ms + uq->r->cfg.timeout_ms, on_query_timer, uq,
		                   &uq->timer) >= 0)
			return 0;
	}
	/* One family answered and the other never did: use what came. */
	query_finish(uq, uq->got.n > 0 ? 0 : -ETIMEDOUT);
	return 0;
}

static int on_query_readable(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct upstream_query *uq = userdata;

	for (;;) {
		uint8_t buf[DNS_MAX_MSG];
		struct dns_addrs a;
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		int which = -1;

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			/* ECONNREFUSED: nobody listens upstream. */
			query_finish(uq, uq->got.n > 0 ? 0 : -EIO);
			return 0;
		}
		for (int i = 0; i < 2; i++)
			if (!uq->answered[i] && dns_response_addrs(buf, (size_t)n, &uq->q[i],
			                                           uq->id[i], &a, NULL) >= 0) {
				which = i;
				break;
			}
		if (which < 0)
			continue; /* a stray or forged datagram: ignored */
		uq->answered[which] = true;
		if (a.rcode == DNS_RCODE_NXDOMAIN)
			uq->error[which] = -ENOENT;
		else if (a.rcode != DNS_RCODE_NOERROR)
			uq->error[which] = -EIO;
		for (size_t i = 0; i < a.n && uq->got.n < DNS_MAX_ADDRS; i++) {
			uq->got.addrs[uq->got.n++] = a.addrs[i];
			if (a.addrs[i].ttl < uq->min_ttl)
				uq->min_ttl = a.addrs[i].ttl;
		}
		if (uq->answered[0] && uq->answered[1]) {
			int e = 0;

			if (uq->got.n == 0)
				e = uq->error[0]   ? uq->error[0]
				    : uq->error[1] ? uq->error[1]
				                   : -ENODATA;
			query_finish(uq, e);
			return 0;
		}
	}
}

static int query_start(struct resolver *r, const char *name, struct upstream_query **ret)
{
	struct upstream_query *uq;
	socklen_t alen = r->upstream.ss_family == AF_INET ? sizeof(struct sockaddr_in)
	                                                  : sizeof(struct sockaddr_in6);
	int e;

	if (r->n_queries >= r->cfg.max_lookups)
		return -EBUSY;
	uq = calloc(1, sizeof(*uq));
	if (!uq)
		return -ENOMEM;
	uq->r = r;
	uq->fd = -EBADF;
	uq->min_ttl = UINT32_MAX;
	strcpy(uq->name, name);
	if (resolver_question(name, DNS_TYPE_A, &uq->q[0]) < 0 ||
	    resolver_question(name, DNS_TYPE_AAAA, &uq->q[1]) < 0) {
		free(uq);
		return -EINVAL;
	}
	if (getrandom(uq->id, sizeof(uq->id), 0) != sizeof(uq->id)) {
		free(uq);
		return -EIO;
	}
	uq->next = r->queries;
	if (r->queries)
		r->queries->prev = uq;
	r->queries = uq;
	r->n_queries++;
	uq->fd = socket(r->upstream.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (uq->fd < 0) {
		e = -errno;
		goto fail;
	}
	if (connect(uq->fd, (struct sockaddr *)&r->upstream, alen) < 0) {
		e = -errno;
		goto fail;
	}
	e = loop_add_fd(r->loop, uq->fd, EPOLLIN, on_query_readable, uq);
	if (e < 0) {
		close(uq->fd);
		uq->fd = -EBADF;
		goto fail;
	}
	uq->started_ms = loop_now_ms();
	e = loop_add_timer(r->loop, uq->started_ms + r->cfg.timeout_ms / 3, on_query_timer, uq,
	                   &uq->timer);
	if (e < 0)
		goto fail;
	e = query_send(uq);
	if (e < 0)
		goto fail;
	*ret = uq;
	return 0;
fail:
	query_free(uq);
	return e;
}

static bool literal(const char *name, struct dns_addrs *ret)
{
	struct dns_addr a;

	if (!parse_addr(name, strlen(name), &a) || strchr(name, '%'))
		return false;
	memset(ret, 0, sizeof(*ret));
	ret->n = 1;
	ret->addrs[0] = a;
	return true;
}

/* Go through the host's sources (hostsdb.h) from FROM on, as far as they answer at once.
 * ERROR is where the lookup stands (the previous source's failure). Returns 1 with *ret
 * filled (files, or the DNS cache, answered), a negative errno when the lookup ends there,
 * or 0 when DNS must be asked upstream: *ret_dns is its index in the order. */
static int walk_sources(struct resolver *r, const char *name, size_t from, int error,
                        struct dns_addrs *ret, size_t *ret_dns)
{
	const struct hostsdb_order *o = hostsdb_order(r->db);

	for (size_t i = from; i < o->n; i++) {
		int e;

		if (o->source[i] == HOSTSDB_FILES) {
			e = hostsdb_find_files(r->db, name, ret);
			if (e == 0)
				return 1;
		} else {
			struct cache_entry *c = cache_find(r, name, loop_now_ms());

			if (c && !c->error) {
				*ret = c->addrs;
				return 1;
			}
			if (!c && r->have_upstream) {
				*ret_dns = i;
				return 0;
			}
			e = c ? c->error : -ENXIO;
		}
		/* The lookup's error is DNS's when DNS was asked (NXDOMAIN, a timeout, no
		 * upstream), else "not found". */
		if (o->source[i] == HOSTSDB_DNS)
			error = e;
		if (o->stop_on[i] & hostsdb_status_of(e))
			return error;
	}
	return error;
}

int resolver_lookup(struct resolver *r, const char *name, struct dns_addrs *ret_addrs,
                    resolver_done_fn fn, void *userdata, struct resolver_lookup **ret_lookup)
{
	char norm[DOMAIN_HOST_MAX + 1];
	struct upstream_query *uq;
	struct resolver_lookup *w;
	size_t dns = 0;
	int e;

	if (!name || strlen(name) > DOMAIN_HOST_MAX)
		return -EINVAL;
	if (literal(name, ret_addrs))
		return 1;
	if (domain_name_normalise(name, strlen(name), DOMAIN_NAME_UNDERSCORE, norm) < 0)
		return -EINVAL;
	hostsdb_refresh(r->db, loop_now_ms());
	if (hostsdb_find_extra(r->db, norm, ret_addrs) == 0)
		return 1;
	e = walk_sources(r, norm, 0, -ENOENT, ret_addrs, &dns);
	if (e != 0)
		return e;
	if (!fn)
		return -EINVAL; /* a caller that only takes answers known at once */
	for (uq = r->queries; uq; uq = uq->next)
		if (strcmp(uq->name, norm) == 0)
			break;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	if (!uq) {
		e = query_start(r, norm, &uq);
		if (e < 0) {
			free(w);
			return e;
		}
	}
	w->uq = uq;
	w->fn = fn;
	w->userdata = userdata;
	w->next_source = dns + 1;
	w->dns_stop_on = hostsdb_order(r->db)->stop_on[dns];
	w->next = uq->waiters;
	uq->waiters = w;
	*ret_lookup = w;
	return 0;
}

void resolver_describe_sources(const struct resolver *r, char *buf, size_t size)
{
	hostsdb_describe(r->db, buf, size);
}

void resolver_lookup_cancel(struct resolver *r, struct resolver_lookup *lookup)
{
	struct upstream_query *uq;

	if (!lookup)
		return;
	uq = lookup->uq;
	for (struct resolver_lookup **p = &uq->waiters; *p; p = &(*p)->next)
		if (*p == lookup) {
			*p = lookup->next;
			break;
		}
	free(lookup);
	/* The query goes on without waiters: its answer still fills the cache. */
}

int resolver_name_of(struct resolver *r, const struct sockaddr *addr, char *ret_name,
                     bool *ret_fake)
{
	int e;

	if (fakeip_is_fake(addr)) {
		e = fakeip_lookup(r->fake, addr, ret_name);
		if (e < 0)
			return -ENOENT;
		*ret_fake = true;
		return 0;
	}
	e = fakeip_lookup_real(r->fake, addr, ret_name);
	if (e < 0)
		return -ENOENT;
	*ret_fake = false;
	return 0;
}

/* ---- the agent's DNS server -------------------------------------------------------------- */

static void client_send(struct tcp_client *c, const uint8_t *msg, size_t len)
{
	uint8_t frame[2 + DNS_MAX_MSG];

	frame[0] = (uint8_t)(len >> 8);
	frame[1] = (uint8_t)len;
	memcpy(frame + 2, msg, len);
	/* A client that does not take a small answer at once is not worth buffering for. */
	if (send(c->fd, frame, len + 2, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)(len + 2))
		client_close(c);
}

/* A header-only answer with RCODE for a message we could not parse. */
static size_t bare_answer(const uint8_t *msg, size_t len, enum dns_rcode rcode, uint8_t out[12])
{
	uint16_t id;

	if (dns_query_id(msg, len, &id) < 0)
		return 0;
	memset(out, 0, 12);
	out[0] = (uint8_t)(id >> 8);
	out[1] = (uint8_t)id;
	out[2] = 0x80;                  /* QR */
	out[3] = 0x80 | (uint8_t)rcode; /* RA */
	return 12;
}

static void reply(struct resolver *r, int udp_fd, const struct sockaddr_storage *peer,
                  socklen_t peer_len, struct tcp_client *c, const uint8_t *msg, size_t len)
{
	if (c)
		client_send(c, msg, len);
	else
		(void)sendto(udp_fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL,
		             (const struct sockaddr *)peer, peer_len);
}

static void answer(struct resolver *r, const struct dns_query *q, enum dns_rcode rcode,
                   const struct dns_addr *addrs, size_t n, uint32_t ttl, int udp_fd,
                   const struct sockaddr_storage *peer, socklen_t peer_len, struct tcp_client *c)
{
	uint8_t buf[DNS_MAX_MSG];
	size_t max = c ? DNS_MAX_MSG : dns_query_udp_limit(q);
	int len = dns_answer_build(q, rcode, addrs, n, ttl, buf, sizeof(buf), max);

	if (len > 0)
		reply(r, udp_fd, peer, peer_len, c, buf, (size_t)len);
}

static void agent_query_free(struct agent_query *aq)
{
	struct resolver *r = aq->r;

	if (aq->lookup)
		resolver_lookup_cancel(r, aq->lookup);
	if (aq->tcp)
		aq->tcp->busy = false;
	if (aq->prev)
		aq->prev->next = aq->next;
	else
		r->agent_queries = aq->next;
	if (aq->next)
		aq->next->prev = aq->prev;
	r->n_agent_queries--;
	free(aq);
}

static void client_continue(struct tcp_client *c);

/* Answer Q with the real addresses ADDRS (or an error), recording them for the proxy. */
static void answer_real(struct resolver *r, const struct dns_query *q, int error,
                        const struct dns_addrs *addrs, int udp_fd,
                        const struct sockaddr_storage *peer, socklen_t peer_len,
                        struct tcp_client *c)
{
	uint32_t ttl = r->cfg.max_ttl;

	if (error == -ENOENT) {
		answer(r, q, DNS_RCODE_NXDOMAIN, NULL, 0, NEG_TTL_S, udp_fd, peer, peer_len, c);
		return;
	}
	if (error == -ENODATA) {
		answer(r, q, DNS_RCODE_NOERROR, NULL, 0, NEG_TTL_S, udp_fd, peer, peer_len, c);
		return;
	}
	if (error < 0) {
		answer(r, q, DNS_RCODE_SERVFAIL, NULL, 0, 0, udp_fd, peer, peer_len, c);
		return;
	}
	for (size_t i = 0; i < addrs->n; i++) {
		(void)fakeip_record_real(r->fake, addrs->addrs[i].family, &addrs->addrs[i].v6,
		                         q->name);
		if (addrs->addrs[i].ttl && addrs->addrs[i].ttl < ttl)
			ttl = addrs->addrs[i].ttl;
	}
	answer(r, q, DNS_RCODE_NOERROR, addrs->addrs, addrs->n, ttl, udp_fd, peer, peer_len, c);
}

static bool client_alive(struct resolver *r, const struct tcp_client *c)
{
	for (struct tcp_client *x = r->clients; x; x = x->next)
		if (x == c)
			return true;
	return false;
}

static void on_agent_lookup(void *userdata, int error, const struct dns_addrs *addrs)
{
	struct agent_query *aq = userdata;
	struct resolver *r = aq->r;
	struct tcp_client *c = aq->tcp;
	struct dns_query q = aq->q;
	struct sockaddr_storage peer = aq->peer;
	socklen_t peer_len = aq->peer_len;
	int udp_fd = aq->udp_fd;

	/* Gone before answering: answering may close the TCP client, which frees its query. */
	aq->lookup = NULL;
	agent_query_free(aq);
	answer_real(r, &q, error, addrs, udp_fd, &peer, peer_len, c);
	if (c && client_alive(r, c))
		client_continue(c);
}

/* Handle one query from the agent. Returns 1 when the answer will come later (TCP: the client
 * waits for it before its next query is read). */
/* The TAG FD was served with (NULL when it is not served). */
static const void *served_tag(const struct resolver *r, int fd)
{
	for (size_t i = 0; i < r->n_served; i++)
		if (r->served[i] == fd)
			return r->tags[i];
	return NULL;
}

static void on_prefetched(void *userdata, int error, const struct dns_addrs *addrs)
{
	/* Never called: the lookup is cancelled at once, its answer only fills the cache. */
}

/* A name the policy allows, answered with a fake address: the connection that follows will
 * be allowed and dialled to the host-side resolution of the name, so start that lookup now
 * (what real-IP mode does for the same names). Its answer fills the cache, and the proxy's
 * lookup at connect time costs no DNS round trip. Over max_lookups it is simply not done. */
static void prefetch(struct resolver *r, const char *name)
{
	struct resolver_lookup *w = NULL;
	struct dns_addrs addrs;

	if (resolver_lookup(r, name, &addrs, on_prefetched, NULL, &w) == 0)
		resolver_lookup_cancel(r, w);
}

static int handle_query(struct resolver *r, const uint8_t *msg, size_t len, int udp_fd,
                        const struct sockaddr_storage *peer, socklen_t peer_len,
                        struct tcp_client *c)
{
	struct dns_query q;
	struct dns_addrs addrs;
	struct agent_query *aq;
	enum resolver_name verdict;
	int e;

	if (dns_query_parse(msg, len, &q, NULL) < 0) {
		uint8_t out[12];
		size_t n = bare_answer(msg, len, DNS_RCODE_REFUSED, out);

		if (n)
			reply(r, udp_fd, peer, peer_len, c, out, n);
		return 0;
	}
	if (!q.name_valid || q.qclass != DNS_CLASS_IN) {
		answer(r, &q, DNS_RCODE_REFUSED, NULL, 0, 0, udp_fd, peer, peer_len, c);
		return 0;
	}
	verdict = r->ops.name_allowed
	                  ? r->ops.name_allowed(r->userdata, c ? c->tag : served_tag(r, udp_fd),
	                                        q.name)
	                  : RESOLVER_NAME_LOOKUP;
	if (verdict == RESOLVER_NAME_DENY) {
		answer(r, &q, DNS_RCODE_NXDOMAIN, NULL, 0, NEG_TTL_S, udp_fd, peer, peer_len, c);
		return 0;
	}
	if (q.qtype != DNS_TYPE_A && q.qtype != DNS_TYPE_AAAA) {
		answer(r, &q, DNS_RCODE_NOERROR, NULL, 0, NEG_TTL_S, udp_fd, peer, peer_len, c);
		return 0;
	}
	/* Real-IP mode too answers a name nobody allowed yet with a fake address: a lookup
	 * would carry the name (and whatever the agent put in it) to the host's DNS server and
	 * beyond before any approval. The proxy looks it up once the connection is allowed. */
	if (r->cfg.fake_ip || verdict != RESOLVER_NAME_LOOKUP) {
		struct dns_addr a[2] = {{.family = AF_INET}, {.family = AF_INET6}};

		if (fakeip_assign(r->fake, q.name, &a[0].v4, &a[1].v6) < 0) {
			answer(r, &q, DNS_RCODE_SERVFAIL, NULL, 0, 0, udp_fd, peer, peer_len, c);
			return 0;
		}
		answer(r, &q, DNS_RCODE_NOERROR, a, 2, r->cfg.fake_ttl, udp_fd, peer, peer_len, c);
		if (verdict == RESOLVER_NAME_LOOKUP)
			prefetch(r, q.name);
		return 0;
	}
	if (r->n_agent_queries >= r->cfg.max_lookups) {
		answer(r, &q, DNS_RCODE_SERVFAIL, NULL, 0, 0, udp_fd, peer, peer_len, c);
		return 0;
	}
	aq = calloc(1, sizeof(*aq));
	if (!aq) {
		answer(r, &q, DNS_RCODE_SERVFAIL, NULL, 0, 0, udp_fd, peer, peer_len, c);
		return 0;
	}
	e = resolver_lookup(r, q.name, &addrs, on_agent_lookup, aq, &aq->lookup);
	if (e != 0) {
		free(aq);
		answer_real(r, &q, e > 0 ? 0 : e, &addrs, udp_fd, peer, peer_len, c);
		return 0;
	}
	aq->r = r;
	aq->q = q;
	aq->udp_fd = udp_fd;
	if (peer)
		aq->peer = *peer;
	aq->peer_len = peer_len;
	aq->tcp = c;
	if (c)
		c->busy = true;
	aq->next = r->agent_queries;
	if (r->agent_queries)
		r->agent_queries->prev = aq;
	r->agent_queries = aq;
	r->n_agent_queries++;
	return 1;
}

static int on_udp(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct resolver *r = userdata;

	/* Bounded per wake-up, so one flooding client cannot hold the loop. */
	for (int i = 0; i < 64; i++) {
		uint8_t buf[DNS_MAX_MSG];
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		ssize_t n = recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&peer,
		                     &plen);

		if (n < 0)
			return 0;
		handle_query(r, buf, (size_t)n, fd, &peer, plen, NULL);
	}
	return 0;
}

static void client_close(struct tcp_client *c)
{
	struct resolver *r = c->r;

	for (struct agent_query *aq = r->agent_queries; aq; aq = aq->next)
		if (aq->tcp == c) {
			agent_query_free(aq);
			break;
		}
	if (c->timer)
		loop_cancel_timer(r->loop, c->timer);
	loop_del_fd(r->loop, c->fd);
	close(c->fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		r->clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	r->n_clients--;
	free(c);
}

/* Process the complete queries buffered on C, one at a time. */
static void client_continue(struct tcp_client *c)
{
	while (!c->busy && c->len >= 2) {
		size_t qlen = (size_t)c->buf[0] << 8 | c->buf[1];
		int async;

		if (qlen == 0 || qlen > TCP_QUERY_MAX) {
			client_close(c);
			return;
		}
		if (c->len < 2 + qlen)
			return;
		async = handle_query(c->r, c->buf + 2, qlen, -1, NULL, 0, c);
		/* handle_query may have closed C on a failed send: only the list knows. */
		if (!client_alive(c->r, c))
			return;
		memmove(c->buf, c->buf + 2 + qlen, c->len - 2 - qlen);
		c->len -= 2 + qlen;
		if (async)
			return;
	}
}

static int on_client_timer(struct loop *loop, void *userdata)
{
	struct tcp_client *c = userdata;

	c->timer = NULL;
	client_close(c);
	return 0;
}

static int on_client(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct tcp_client *c = userdata;
	ssize_t n;

	if (c->len == sizeof(c->buf)) {
		client_close(c);
		return 0;
	}
	n = recv(fd, c->buf + c->len, sizeof(c->buf) - c->len, MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		client_close(c);
		return 0;
	}
	if (n > 0) {
		c->len += (size_t)n;
		client_continue(c);
	}
	return 0;
}

static int on_listener_resume(struct loop *loop, void *userdata)
{
	struct resolver *r = userdata;

	bool still_paused = false;

	for (size_t i = 0; i < r->n_served; i++)
		if (r->paused_fd[i]) {
			r->paused_fd[i] = loop_mod_fd(loop, r->served[i], EPOLLIN) < 0;
			still_paused |= r->paused_fd[i];
		}
	r->pause_timer = NULL;
	if (!still_paused)
		return 0;
	/* Try again in a moment; a listener left paused for good would serve nothing more and
	 * say nothing: stop the loop with the error instead. */
	return loop_add_timer(loop, loop_now_ms() + 100, on_listener_resume, r, &r->pause_timer);
}

/* Out of fds: the connection stays queued and the listener would be ready again at once.
 * Stop listening for a moment instead of spinning. Without a timer to resume them, the paused
 * listeners listen again at once; a negative errno when one cannot (the loop stops with it: a
 * listener paused for good serves nothing more). */
static int pause_listener(struct resolver *r, int fd)
{
	for (size_t i = 0; i < r->n_served; i++)
		if (r->served[i] == fd && !r->paused_fd[i] && loop_mod_fd(r->loop, fd, 0) >= 0)
			r->paused_fd[i] = true;
	if (r->pause_timer || loop_add_timer(r->loop, loop_now_ms() + 100, on_listener_resume, r,
	                                     &r->pause_timer) >= 0)
		return 0;
	r->pause_timer = NULL;
	for (size_t i = 0; i < r->n_served; i++)
		if (r->paused_fd[i]) {
			int e = loop_mod_fd(r->loop, r->served[i], EPOLLIN);

			if (e < 0)
				return e;
			r->paused_fd[i] = false;
		}
	return 0;
}

static int on_tcp_listener(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct resolver *r = userdata;

	for (int i = 0; i < 16; i++) {
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct tcp_client *c;

		if (cfd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				return pause_listener(r, fd);
			return 0;
		}
		if (r->n_clients >= r->cfg.max_tcp_clients || !(c = calloc(1, sizeof(*c)))) {
			close(cfd);
			continue;
		}
		c->r = r;
		c->tag = served_tag(r, fd);
		c->fd = cfd;
		if (loop_add_fd(loop, cfd, EPOLLIN, on_client, c) < 0) {
			close(cfd);
			free(c);
			continue;
		}
		c->next = r->clients;
		if (r->clients)
			r->clients->prev = c;
		r->clients = c;
		r->n_clients++;
		if (loop_add_timer(loop, loop_now_ms() + TCP_IDLE_MS, on_client_timer, c,
		                   &c->timer) < 0)
			client_close(c);
	}
	return 0;
}

static int serve(struct resolver *r, int fd, const void *tag, loop_fd_fn fn)
{
	int e;

	if (r->n_served == ELEMENTSOF(r->served))
		return -ENOSPC;
	e = loop_add_fd(r->loop, fd, EPOLLIN, fn, r);
	if (e < 0)
		return e;
	r->tags[r->n_served] = tag;
	r->served[r->n_served++] = fd;
	return 0;
}

int resolver_serve_udp(struct resolver *r, int fd, const void *tag)
{
	return serve(r, fd, tag, on_udp);
}

int resolver_serve_tcp(struct resolver *r, int fd, const void *tag)
{
	return serve(r, fd, tag, on_tcp_listener);
}

int resolver_unserve(struct resolver *r, int fd)
{
	for (size_t i = 0; i < r->n_served; i++) {
		if (r->served[i] != fd)
			continue;
		loop_del_fd(r->loop, fd);
		r->n_served--;
		r->served[i] = r->served[r->n_served];
		r->tags[i] = r->tags[r->n_served];
		r->paused_fd[i] = r->paused_fd[r->n_served];
		return 0;
	}
	return -ENOENT;
}
