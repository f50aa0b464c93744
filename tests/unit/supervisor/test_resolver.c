/* The resolver's pure helpers (hosts file, resolv.conf, questions) and its host-side lookups
 * on a loop against an upstream DNS server of the test's own on loopback: cache, merged
 * lookups, NXDOMAIN, timeouts, forged answers ignored. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "supervisor/egress/resolver.h"

static void test_hosts_file_gives_every_address_of_a_name_in_order(void **state)
{
	static const char hosts[] = "# comment line\n"
	                            "127.0.0.1\tlocalhost\n"
	                            "192.0.2.10  web.test  alias.test # trailing comment\n"
	                            "2001:db8::10 web.test\n"
	                            "not-an-address web.test\n"
	                            "192.0.2.11 WEB.test";
	struct dns_addrs a;
	char buf[INET6_ADDRSTRLEN];

	assert_int_equal(resolver_hosts_find(hosts, strlen(hosts), "web.test", &a), 0);
	assert_int_equal(a.n, 3);
	assert_int_equal(a.addrs[0].family, AF_INET);
	inet_ntop(AF_INET, &a.addrs[0].v4, buf, sizeof(buf));
	assert_string_equal(buf, "192.0.2.10");
	assert_int_equal(a.addrs[1].family, AF_INET6);
	inet_ntop(AF_INET6, &a.addrs[1].v6, buf, sizeof(buf));
	assert_string_equal(buf, "2001:db8::10");
	inet_ntop(AF_INET, &a.addrs[2].v4, buf, sizeof(buf));
	assert_string_equal(buf, "192.0.2.11");
	assert_int_equal(resolver_hosts_find(hosts, strlen(hosts), "alias.test", &a), 0);
	assert_int_equal(a.n, 1);
	assert_int_equal(resolver_hosts_find(hosts, strlen(hosts), "comment", &a), -ENOENT);
	assert_int_equal(resolver_hosts_find(hosts, strlen(hosts), "web", &a), -ENOENT);
}

static void test_resolv_conf_gives_the_first_nameserver(void **state)
{
	static const char conf[] = "# generated\nsearch example.org\n"
	                           "nameserver   fe80::1%eth0\nnameserver 10.0.0.2\n";
	static const char v4[] = "options ndots:1\nnameserver 10.0.0.2 # x\n";
	struct sockaddr_storage ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

	assert_int_equal(resolver_conf_nameserver(conf, strlen(conf), &ss), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_int_equal(ntohs(((struct sockaddr_in6 *)&ss)->sin6_port), 53);
	assert_int_equal(resolver_conf_nameserver(v4, strlen(v4), &ss), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(ntohl(s4->sin_addr.s_addr), 0x0a000002);
	assert_int_equal(resolver_conf_nameserver("search x\n", 9, &ss), -ENOENT);
	assert_int_equal(resolver_conf_nameserver("nameserver\n", 11, &ss), -ENOENT);
}

static void test_questions_encode_names_and_refuse_bad_ones(void **state)
{
	struct dns_query q;
	uint8_t buf[512];
	struct dns_query back;
	int n;

	assert_int_equal(resolver_question("Api.Example.COM.", DNS_TYPE_AAAA, &q), 0);
	assert_string_equal(q.name, "api.example.com");
	assert_int_equal(q.qname_wire_len, 17);
	assert_memory_equal(q.qname_wire,
	                    "\x03"
	                    "api\x07"
	                    "example\x03"
	                    "com\x00",
	                    17);
	n = dns_query_build(&q, 0x1234, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(dns_query_parse(buf, (size_t)n, &back, NULL), 0);
	assert_string_equal(back.name, "api.example.com");
	assert_int_equal(back.qtype, DNS_TYPE_AAAA);
	assert_int_equal(back.id, 0x1234);
	assert_int_equal(resolver_question("bad..name", DNS_TYPE_A, &q), -EINVAL);
	assert_int_equal(resolver_question("1.2.3.4", DNS_TYPE_A, &q), -EINVAL);
	assert_int_equal(resolver_question("", DNS_TYPE_A, &q), -EINVAL);
}

/* ---- lookups against a fake upstream ----------------------------------------------------- */

struct upstream {
	int fd;
	struct sockaddr_in addr;
	int queries;  /* received */
	int mode;     /* 0 answer, 1 NXDOMAIN, 2 silent, 3 forged id first */
	int exit_at;  /* loop_exit() once this many queries arrived (0: never) */
	int unlisted; /* queries for names with "unlisted" in them */
	struct loop *loop;
};

static int on_upstream(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct upstream *u = userdata;
	uint8_t msg[512], out[512];
	struct sockaddr_storage peer;
	socklen_t plen = sizeof(peer);
	ssize_t n = recvfrom(fd, msg, sizeof(msg), 0, (struct sockaddr *)&peer, &plen);
	struct dns_query q;
	struct dns_addr a[1];
	int len;

	if (n < 0)
		return 0;
	u->queries++;
	assert_int_equal(dns_query_parse(msg, (size_t)n, &q, NULL), 0);
	if (strstr(q.name, "unlisted"))
		u->unlisted++;
	if (u->exit_at && u->queries >= u->exit_at)
		loop_exit(loop, 0);
	if (u->mode == 2)
		return 0;
	if (q.qtype == DNS_TYPE_A) {
		a[0].family = AF_INET;
		inet_pton(AF_INET, "192.0.2.77", &a[0].v4);
	} else {
		a[0].family = AF_INET6;
		inet_pton(AF_INET6, "2001:db8::77", &a[0].v6);
	}
	if (u->mode == 3) {
		struct dns_query forged = q;

		forged.id ^= 0x5555;
		inet_pton(AF_INET, "6.6.6.6", &a[0].v4);
		len = dns_answer_build(&forged, DNS_RCODE_NOERROR, a, 1, 60, out, sizeof(out), 512);
		sendto(fd, out, (size_t)len, 0, (struct sockaddr *)&peer, plen);
		inet_pton(AF_INET, "192.0.2.77", &a[0].v4);
	}
	len = dns_answer_build(&q, u->mode == 1 ? DNS_RCODE_NXDOMAIN : DNS_RCODE_NOERROR, a,
	                       u->mode == 1 ? 0 : 1, 60, out, sizeof(out), 512);
	assert_true(len > 0);
	sendto(fd, out, (size_t)len, 0, (struct sockaddr *)&peer, plen);
	return 0;
}

static void upstream_open(struct upstream *u, struct loop *loop, int mode)
{
	socklen_t len = sizeof(u->addr);

	memset(u, 0, sizeof(*u));
	u->loop = loop;
	u->mode = mode;
	u->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(u->fd >= 0);
	u->addr.sin_family = AF_INET;
	u->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(u->fd, (struct sockaddr *)&u->addr, sizeof(u->addr)), 0);
	assert_int_equal(getsockname(u->fd, (struct sockaddr *)&u->addr, &len), 0);
	assert_int_equal(loop_add_fd(loop, u->fd, EPOLLIN, on_upstream, u), 0);
}

struct result {
	int calls;
	int error;
	struct dns_addrs addrs;
	struct loop *loop;
	int want;
};

static void on_done(void *userdata, int error, const struct dns_addrs *addrs)
{
	struct result *r = userdata;

	r->calls++;
	r->error = error;
	if (addrs)
		r->addrs = *addrs;
	if (r->calls >= r->want)
		loop_exit(r->loop, 0);
}

static struct resolver *new_resolver(struct loop *loop, const struct upstream *u,
                                     uint64_t timeout_ms)
{
	struct resolver_config cfg;
	struct resolver *r;

	resolver_config_init(&cfg);
	memcpy(&cfg.upstream, &u->addr, sizeof(u->addr));
	cfg.timeout_ms = timeout_ms;
	/* The machine's own /etc/hosts and nsswitch.conf are not the test's. */
	cfg.system_hosts = NULL;
	cfg.nsswitch_conf = NULL;
	assert_int_equal(resolver_new(loop, &cfg, NULL, NULL, &r, NULL), 0);
	return r;
}

static char etc[] = "/tmp/cloister-test-resolver-XXXXXX";

/* A resolver whose `files` is HOSTS and whose nsswitch.conf is NSSWITCH (test-owned files). */
static struct resolver *new_resolver_etc(struct loop *loop, const struct upstream *u,
                                         const char *hosts, const char *nsswitch)
{
	struct resolver_config cfg;
	struct resolver *r;
	char hosts_path[128], nss_path[128];
	FILE *f;

	snprintf(hosts_path, sizeof(hosts_path), "%s/hosts", etc);
	snprintf(nss_path, sizeof(nss_path), "%s/nsswitch.conf", etc);
	f = fopen(hosts_path, "we");
	assert_non_null(f);
	fputs(hosts, f);
	assert_int_equal(fclose(f), 0);
	f = fopen(nss_path, "we");
	assert_non_null(f);
	fputs(nsswitch, f);
	assert_int_equal(fclose(f), 0);
	resolver_config_init(&cfg);
	memcpy(&cfg.upstream, &u->addr, sizeof(u->addr));
	cfg.system_hosts = hosts_path;
	cfg.nsswitch_conf = nss_path;
	assert_int_equal(resolver_new(loop, &cfg, NULL, NULL, &r, NULL), 0);
	return r;
}

static const char *first_v4(const struct dns_addrs *a, char *buf)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->addrs[i].family == AF_INET)
			return inet_ntop(AF_INET, &a->addrs[i].v4, buf, INET_ADDRSTRLEN);
	return "";
}

/* The host's order: a name in /etc/hosts resolves as the host resolves it, in the order
 * nsswitch.conf gives files and dns (the upstream mock answers 192.0.2.77, or NXDOMAIN). */
static void test_lookup_follows_nsswitch_order_of_files_and_dns(void **state)
{
	static const struct {
		const char *nsswitch;
		int upstream_mode; /* 0: answers, 1: NXDOMAIN */
		const char *name;
		int at_once;      /* resolver_lookup's return */
		int error;        /* of the lookup in the end */
		const char *addr; /* "" none */
		int queries;      /* sent upstream */
	} cases[] = {
	        {"hosts: files dns\n", 0, "corp.test", 1, 0, "10.1.2.3", 0},
	        {"hosts: files dns\n", 0, "other.test", 0, 0, "192.0.2.77", 2},
	        {"hosts: files mdns4_minimal [NOTFOUND=return] dns\n", 0, "corp.test", 1, 0,
	         "10.1.2.3", 0},
	        {"hosts: dns files\n", 0, "corp.test", 0, 0, "192.0.2.77", 2},
	        {"hosts: dns files\n", 1, "corp.test", 0, 0, "10.1.2.3", 2},
	        {"hosts: dns files\n", 1, "other.test", 0, -ENOENT, "", 2},
	        {"hosts: dns [NOTFOUND=return] files\n", 1, "corp.test", 0, -ENOENT, "", 2},
	        {"hosts: files [NOTFOUND=return] dns\n", 0, "other.test", -ENOENT, -ENOENT, "", 0},
	        {"hosts: dns\n", 1, "corp.test", 0, -ENOENT, "", 2},
	        {"hosts: files\n", 0, "other.test", -ENOENT, -ENOENT, "", 0},
	        {"# no hosts line: files dns\n", 0, "corp.test", 1, 0, "10.1.2.3", 0},
	};

	assert_non_null(mkdtemp(etc));
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct loop *loop;
		struct upstream u;
		struct resolver *r;
		struct result res = {.want = 1};
		struct resolver_lookup *l;
		struct dns_addrs now = {0};
		char buf[INET_ADDRSTRLEN];
		int e;

		assert_int_equal(loop_new(&loop), 0);
		res.loop = loop;
		upstream_open(&u, loop, cases[i].upstream_mode);
		r = new_resolver_etc(loop, &u, "10.1.2.3 corp.test corp\n", cases[i].nsswitch);
		e = resolver_lookup(r, cases[i].name, &now, on_done, &res, &l);
		if (e != cases[i].at_once)
			fail_msg("case %zu: resolver_lookup gave %d", i, e);
		if (e == 0) {
			assert_int_equal(loop_run(loop), 0);
			assert_int_equal(res.calls, 1);
			now = res.addrs;
		} else {
			res.error = e > 0 ? 0 : e;
		}
		if (res.error != cases[i].error || u.queries != cases[i].queries ||
		    (res.error == 0 && strcmp(first_v4(&now, buf), cases[i].addr) != 0))
			fail_msg("case %zu: error %d, %d queries, %s", i, res.error, u.queries,
			         res.error == 0 ? first_v4(&now, buf) : "-");
		resolver_free(r);
		loop_del_fd(loop, u.fd);
		close(u.fd);
		loop_free(loop);
	}
	{
		char path[128];

		snprintf(path, sizeof(path), "%s/hosts", etc);
		unlink(path);
		snprintf(path, sizeof(path), "%s/nsswitch.conf", etc);
		unlink(path);
		rmdir(etc);
	}
}

static void test_lookup_asks_upstream_once_then_answers_from_the_cache(void **state)
{
	struct loop *loop;
	struct upstream u;
	struct resolver *r;
	struct result res = {.want = 2}, res2 = {.want = 2};
	struct resolver_lookup *l1, *l2;
	struct dns_addrs now;

	assert_int_equal(loop_new(&loop), 0);
	upstream_open(&u, loop, 0);
	r = new_resolver(loop, &u, 3000);
	res.loop = res2.loop = loop;
	assert_int_equal(resolver_lookup(r, "Web.Test", &now, on_done, &res, &l1), 0);
	/* The same name again while in flight: one query pair serves both. */
	assert_int_equal(resolver_lookup(r, "web.test", &now, on_done, &res2, &l2), 0);
	res.want = 1;
	res2.want = 1;
	assert_int_equal(loop_run(loop), 0);
	if (res2.calls == 0)
		assert_int_equal(loop_run(loop), 0);
	assert_int_equal(res.calls, 1);
	assert_int_equal(res2.calls, 1);
	assert_int_equal(res.error, 0);
	assert_int_equal(res.addrs.n, 2);
	assert_int_equal(u.queries, 2); /* A and AAAA */
	assert_int_equal(resolver_lookup(r, "web.test", &now, on_done, &res, &l1), 1);
	assert_int_equal(now.n, 2);
	assert_int_equal(u.queries, 2);
	/* Literals never leave. */
	assert_int_equal(resolver_lookup(r, "192.0.2.1", &now, on_done, &res, &l1), 1);
	assert_int_equal(now.n, 1);
	assert_int_equal(resolver_lookup(r, "bad..name", &now, on_done, &res, &l1), -EINVAL);
	resolver_free(r);
	loop_del_fd(loop, u.fd);
	close(u.fd);
	loop_free(loop);
}

static void test_nxdomain_timeout_and_forged_answers(void **state)
{
	struct loop *loop;
	struct upstream u;
	struct resolver *r;
	struct result res = {.want = 1};
	struct resolver_lookup *l;
	struct dns_addrs now;
	char buf[INET_ADDRSTRLEN];

	assert_int_equal(loop_new(&loop), 0);
	res.loop = loop;

	upstream_open(&u, loop, 1);
	r = new_resolver(loop, &u, 3000);
	assert_int_equal(resolver_lookup(r, "gone.test", &now, on_done, &res, &l), 0);
	assert_int_equal(loop_run(loop), 0);
	assert_int_equal(res.error, -ENOENT);
	/* The negative answer is remembered for a few seconds. */
	assert_int_equal(resolver_lookup(r, "gone.test", &now, on_done, &res, &l), -ENOENT);
	resolver_free(r);

	u.mode = 2;
	u.queries = 0;
	r = new_resolver(loop, &u, 300);
	res.calls = 0;
	assert_int_equal(resolver_lookup(r, "silent.test", &now, on_done, &res, &l), 0);
	assert_int_equal(loop_run(loop), 0);
	assert_int_equal(res.error, -ETIMEDOUT);
	assert_int_equal(u.queries, 4); /* sent, and resent once */
	resolver_free(r);

	u.mode = 3;
	r = new_resolver(loop, &u, 3000);
	res.calls = 0;
	assert_int_equal(resolver_lookup(r, "forged.test", &now, on_done, &res, &l), 0);
	assert_int_equal(loop_run(loop), 0);
	assert_int_equal(res.error, 0);
	for (size_t i = 0; i < res.addrs.n; i++)
		if (res.addrs.addrs[i].family == AF_INET) {
			inet_ntop(AF_INET, &res.addrs.addrs[i].v4, buf, sizeof(buf));
			assert_string_equal(buf, "192.0.2.77");
		}

	/* A cancelled lookup is never called back. */
	res.calls = 0;
	assert_int_equal(resolver_lookup(r, "cancel.test", &now, on_done, &res, &l), 0);
	resolver_lookup_cancel(r, l);
	resolver_free(r);
	assert_int_equal(res.calls, 0);
	loop_del_fd(loop, u.fd);
	close(u.fd);
	loop_free(loop);
}

struct agent_answer {
	uint8_t buf[1024];
	ssize_t len;
	struct loop *loop;
};

static int on_agent_answer(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct agent_answer *a = userdata;

	a->len = recv(fd, a->buf, sizeof(a->buf), 0);
	loop_exit(loop, 0);
	return 0;
}

static const char served_as[] = "the sandbox's tag";

static enum resolver_name deny_evil(void *userdata, const void *tag, const char *name)
{
	/* The query's socket was served with this tag: the callback knows who asked. */
	assert_ptr_equal(tag, served_as);
	if (strcmp(name, "evil.test") == 0)
		return RESOLVER_NAME_DENY;
	if (strncmp(name, "unlisted.", 9) == 0 || strstr(name, ".unlisted."))
		return RESOLVER_NAME_LOCAL;
	return RESOLVER_NAME_LOOKUP;
}

/* Real-IP mode: the agent's query is forwarded, answered with the real addresses, and each
 * address is recorded as the name's, so a connection to it can be named. */
static void test_real_ip_mode_forwards_and_records_the_answer(void **state)
{
	struct loop *loop;
	struct upstream u;
	struct resolver *r;
	struct resolver_config cfg;
	struct resolver_ops ops = {.name_allowed = deny_evil};
	struct sockaddr_in srv = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t slen = sizeof(srv);
	struct agent_answer ans = {.len = -1};
	struct dns_query q;
	struct dns_addrs got;
	uint8_t msg[512];
	char name[DOMAIN_HOST_MAX + 1];
	struct sockaddr_in conn = {.sin_family = AF_INET, .sin_port = htons(443)};
	bool fake = true;
	int sfd, cfd, n;

	assert_int_equal(loop_new(&loop), 0);
	ans.loop = loop;
	upstream_open(&u, loop, 0);
	resolver_config_init(&cfg);
	cfg.fake_ip = false;
	cfg.system_hosts = NULL;
	cfg.nsswitch_conf = NULL;
	memcpy(&cfg.upstream, &u.addr, sizeof(u.addr));
	assert_int_equal(resolver_new(loop, &cfg, &ops, NULL, &r, NULL), 0);
	sfd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(sfd, (struct sockaddr *)&srv, sizeof(srv)), 0);
	assert_int_equal(getsockname(sfd, (struct sockaddr *)&srv, &slen), 0);
	assert_int_equal(resolver_serve_udp(r, sfd, served_as), 0);
	cfd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(cfd, (struct sockaddr *)&srv, sizeof(srv)), 0);
	assert_int_equal(loop_add_fd(loop, cfd, EPOLLIN, on_agent_answer, &ans), 0);

	assert_int_equal(resolver_question("real.test", DNS_TYPE_A, &q), 0);
	n = dns_query_build(&q, 0x7777, msg, sizeof(msg));
	assert_int_equal(send(cfd, msg, (size_t)n, 0), n);
	assert_int_equal(loop_run(loop), 0);
	assert_true(ans.len > 0);
	assert_int_equal(dns_response_addrs(ans.buf, (size_t)ans.len, &q, 0x7777, &got, NULL), 0);
	assert_int_equal(got.rcode, DNS_RCODE_NOERROR);
	assert_int_equal(got.n, 1);
	assert_int_equal(got.addrs[0].family, AF_INET);
	conn.sin_addr = got.addrs[0].v4;
	assert_int_equal(resolver_name_of(r, (struct sockaddr *)&conn, name, &fake), 0);
	assert_string_equal(name, "real.test");
	assert_false(fake);

	/* A denied name never leaves: NXDOMAIN, and upstream saw nothing more. */
	assert_int_equal(resolver_question("evil.test", DNS_TYPE_A, &q), 0);
	n = dns_query_build(&q, 0x7778, msg, sizeof(msg));
	assert_int_equal(send(cfd, msg, (size_t)n, 0), n);
	assert_int_equal(loop_run(loop), 0);
	assert_int_equal(dns_response_addrs(ans.buf, (size_t)ans.len, &q, 0x7778, &got, NULL), 0);
	assert_int_equal(got.rcode, DNS_RCODE_NXDOMAIN);
	assert_int_equal(u.queries, 2);

	/* A name nobody allowed yet (asked at connect) never leaves either: it gets a fake
	 * address, which names it to the proxy, and upstream saw nothing more. */
	assert_int_equal(resolver_question("data.unlisted.test", DNS_TYPE_A, &q), 0);
	n = dns_query_build(&q, 0x7779, msg, sizeof(msg));
	assert_int_equal(send(cfd, msg, (size_t)n, 0), n);
	assert_int_equal(loop_run(loop), 0);
	assert_int_equal(dns_response_addrs(ans.buf, (size_t)ans.len, &q, 0x7779, &got, NULL), 0);
	assert_int_equal(got.rcode, DNS_RCODE_NOERROR);
	assert_int_equal(got.n, 1);
	conn.sin_addr = got.addrs[0].v4;
	assert_int_equal(resolver_name_of(r, (struct sockaddr *)&conn, name, &fake), 0);
	assert_string_equal(name, "data.unlisted.test");
	assert_true(fake);
	assert_int_equal(u.queries, 2);

	resolver_free(r);
	loop_del_fd(loop, cfd);
	loop_del_fd(loop, u.fd);
	close(cfd);
	close(sfd);
	close(u.fd);
	loop_free(loop);
}

static int on_too_late(struct loop *loop, void *userdata)
{
	*(struct loop_timer **)userdata = NULL;
	loop_exit(loop, 1);
	return 0;
}

/* Fake-IP mode: the agent gets a fake address either way, but for a name the policy allows
 * the host-side lookup starts right away, so the connection that follows finds the answer in
 * the cache (no DNS round trip at connect). A name nobody allowed yet, and a denied one,
 * still never leave the machine. */
static void test_fake_ip_mode_looks_up_allowed_names_ahead_only(void **state)
{
	struct loop *loop;
	struct upstream u;
	struct resolver *r;
	struct resolver_config cfg;
	struct resolver_ops ops = {.name_allowed = deny_evil};
	struct sockaddr_in srv = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t slen = sizeof(srv);
	struct agent_answer ans = {.len = -1};
	struct result res = {.want = 1};
	struct resolver_lookup *l;
	struct loop_timer *late = NULL;
	struct dns_query q;
	struct dns_addrs got, now;
	uint8_t msg[512];
	char name[DOMAIN_HOST_MAX + 1], ip[INET_ADDRSTRLEN];
	struct sockaddr_in conn = {.sin_family = AF_INET, .sin_port = htons(443)};
	const char *const names[] = {"evil.test", "data.unlisted.test", "allowed.test"};
	bool fake = false;
	int sfd, cfd, n;

	assert_int_equal(loop_new(&loop), 0);
	ans.loop = res.loop = loop;
	upstream_open(&u, loop, 0);
	resolver_config_init(&cfg);
	cfg.system_hosts = NULL;
	cfg.nsswitch_conf = NULL;
	memcpy(&cfg.upstream, &u.addr, sizeof(u.addr));
	assert_int_equal(resolver_new(loop, &cfg, &ops, NULL, &r, NULL), 0);
	sfd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(sfd, (struct sockaddr *)&srv, sizeof(srv)), 0);
	assert_int_equal(getsockname(sfd, (struct sockaddr *)&srv, &slen), 0);
	assert_int_equal(resolver_serve_udp(r, sfd, served_as), 0);
	cfd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(cfd, (struct sockaddr *)&srv, sizeof(srv)), 0);
	assert_int_equal(loop_add_fd(loop, cfd, EPOLLIN, on_agent_answer, &ans), 0);

	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(resolver_question(names[i], DNS_TYPE_A, &q), 0);
		n = dns_query_build(&q, (uint16_t)(0x7000 + i), msg, sizeof(msg));
		assert_int_equal(send(cfd, msg, (size_t)n, 0), n);
		assert_int_equal(loop_run(loop), 0);
		assert_int_equal(dns_response_addrs(ans.buf, (size_t)ans.len, &q,
		                                    (uint16_t)(0x7000 + i), &got, NULL),
		                 0);
		assert_int_equal(got.rcode, i == 0 ? DNS_RCODE_NXDOMAIN : DNS_RCODE_NOERROR);
	}
	/* allowed.test got a fake address, like the others... */
	conn.sin_addr = got.addrs[0].v4;
	assert_int_equal(resolver_name_of(r, (struct sockaddr *)&conn, name, &fake), 0);
	assert_string_equal(name, "allowed.test");
	assert_true(fake);
	/* ...and its A and AAAA went upstream with nobody asking for them yet. */
	u.exit_at = 2;
	assert_int_equal(loop_add_timer(loop, loop_now_ms() + 5000, on_too_late, &late, &late), 0);
	assert_int_equal(loop_run(loop), 0);
	loop_cancel_timer(loop, late);
	assert_int_equal(u.queries, 2);
	assert_int_equal(u.unlisted, 0);
	/* The proxy's lookup at connect: from the cache, or joined to the prefetch in flight. */
	n = resolver_lookup(r, "allowed.test", &now, on_done, &res, &l);
	if (n == 0) {
		assert_int_equal(loop_run(loop), 0);
		now = res.addrs;
	}
	assert_string_equal(first_v4(&now, ip), "192.0.2.77");
	assert_int_equal(resolver_lookup(r, "allowed.test", &now, on_done, &res, &l), 1);
	assert_int_equal(u.queries, 2);

	resolver_free(r);
	loop_del_fd(loop, cfd);
	loop_del_fd(loop, u.fd);
	close(cfd);
	close(sfd);
	close(u.fd);
	loop_free(loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_hosts_file_gives_every_address_of_a_name_in_order),
	        cmocka_unit_test(test_resolv_conf_gives_the_first_nameserver),
	        cmocka_unit_test(test_questions_encode_names_and_refuse_bad_ones),
	        cmocka_unit_test(test_lookup_asks_upstream_once_then_answers_from_the_cache),
	        cmocka_unit_test(test_fake_ip_mode_looks_up_allowed_names_ahead_only),
	        cmocka_unit_test(test_nxdomain_timeout_and_forged_answers),
	        cmocka_unit_test(test_lookup_follows_nsswitch_order_of_files_and_dns),
	        cmocka_unit_test(test_real_ip_mode_forwards_and_records_the_answer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
