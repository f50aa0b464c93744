/* oci_testserver: a stand-in for `cloister-supervisor serve`'s container parts, built on the
 * same modules (oci_agent, oci_hook_server, notifier, netfilter), for tests/integration/oci_runc.sh
 * until serve has them.
 *
 *   oci_testserver --seccomp-socket PATH --hook-socket PATH --release FILE
 *
 * Exec policy, by the file name of the path the exec names: "denied*" fails with EACCES,
 * "held*" waits until FILE exists (an "ask" answered later), anything else runs. Hooks get the
 * egress rules and listeners of netfilter/ in the container's netns; a connection redirected
 * to the proxy listener is reported with its original destination and closed. One line per
 * event on stdout:
 *   ready
 *   container NAME project PROJECT status STATUS pid PID
 *   netns ID ready | netns ID failed: WHY
 *   exec PATH allow|deny|held|released
 *   redirected ADDR:PORT
 *   refused: WHY */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "netfilter/listen.h"
#include "netfilter/netns.h"
#include "netfilter/nft_egress.h"
#include "notifier/notify.h"
#include "notifier/oci_agent.h"
#include "notifier/oci_hook_server.h"
#include "notifier/target.h"
#include "supervisor/loop.h"

struct held {
	struct notifier *n;
	uint64_t id;
	char *path;
	struct held *next;
};

struct listener {
	struct notifier *n;
	struct listener *next;
};

struct egress {
	struct netfilter_listeners l;
	struct nft_egress *rules;
	struct egress *next;
};

static struct loop *loop;
static const char *release_file;
static struct held *helds;
static struct listener *listeners;
static struct egress *egresses;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void drop_listener(struct listener *ls)
{
	for (struct listener **p = &listeners; *p; p = &(*p)->next)
		if (*p == ls) {
			*p = ls->next;
			break;
		}
	/* Held execs of this listener die with it (their processes are gone). */
	for (struct held **p = &helds; *p;) {
		struct held *h = *p;
		if (h->n == ls->n) {
			*p = h->next;
			free(h->path);
			free(h);
		} else {
			p = &h->next;
		}
	}
	loop_del_fd(loop, notifier_fd(ls->n));
	notifier_free(ls->n);
	free(ls);
}

static int on_notification(struct loop *l, int fd, uint32_t events, void *userdata)
{
	struct listener *ls = userdata;
	struct exec_target *t = NULL;
	struct cl_error err = {{0}};
	struct seccomp_notif req;
	const char *base;
	int r;

	if (!(events & EPOLLIN)) {
		drop_listener(ls); /* EPOLLHUP: every process of the filter is gone */
		return 0;
	}
	r = notifier_receive(ls->n, &req);
	if (r < 0)
		return 0;
	r = notifier_read_exec(ls->n, &req, &t, &err);
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		say("exec ? deny (%s)", err.msg);
		notifier_deny(ls->n, req.id, EACCES);
		return 0;
	}
	base = strrchr(t->path, '/');
	base = base ? base + 1 : t->path;
	if (strncmp(base, "denied", 6) == 0) {
		say("exec %s deny", t->path);
		notifier_deny(ls->n, req.id, EACCES);
	} else if (strncmp(base, "held", 4) == 0) {
		struct held *h = calloc(1, sizeof(*h));
		h->n = ls->n;
		h->id = req.id;
		h->path = strdup(t->path);
		h->next = helds;
		helds = h;
		say("exec %s held", t->path);
	} else {
		say("exec %s allow", t->path);
		notifier_continue(ls->n, req.id);
	}
	exec_target_free(t);
	return 0;
}

static int on_release_tick(struct loop *l, void *userdata)
{
	struct loop_timer *t;

	if (helds && access(release_file, F_OK) == 0) {
		while (helds) {
			struct held *h = helds;
			helds = h->next;
			say("exec %s released", h->path);
			notifier_continue(h->n, h->id);
			free(h->path);
			free(h);
		}
	}
	return loop_add_timer(loop, loop_now_ms() + 50, on_release_tick, NULL, &t);
}

static void on_container(void *userdata, const struct oci_state *s, const struct oci_identity *id,
                         int listener_fd, pid_t peer_pid)
{
	struct listener *ls = calloc(1, sizeof(*ls));

	if (!ls || notifier_new(listener_fd, &ls->n) < 0) {
		close(listener_fd);
		free(ls);
		say("refused: cannot wrap the listener");
		return;
	}
	ls->next = listeners;
	listeners = ls;
	loop_add_fd(loop, notifier_fd(ls->n), EPOLLIN, on_notification, ls);
	say("container %s project %s status %s pid %d", id->name, *id->project ? id->project : "-",
	    oci_status_name(s->status), (int)s->pid);
}

static void on_refused(void *userdata, int error, const char *msg)
{
	say("refused: %s", msg);
}

static int on_proxy(struct loop *l, int fd, uint32_t events, void *userdata)
{
	struct sockaddr_storage dst;
	char addr[INET6_ADDRSTRLEN];
	int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (c < 0)
		return 0;
	if (netfilter_original_dst(c, &dst) == 0 && dst.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&dst;
		inet_ntop(AF_INET, &in->sin_addr, addr, sizeof(addr));
		say("redirected %s:%u", addr, ntohs(in->sin_port));
	} else {
		say("redirected ?");
	}
	close(c);
	return 0;
}

static void on_netns(void *userdata, struct oci_hook_request *req, const struct oci_state *s,
                     const struct oci_identity *id, int netns_fd)
{
	struct egress *e = calloc(1, sizeof(*e));
	struct cl_error err = {{0}};
	struct nft_egress_config cfg;
	int r;

	e->l = (struct netfilter_listeners)NETFILTER_LISTENERS_INIT;
	r = netfilter_netns_setup(netns_fd, &err);
	if (r >= 0)
		r = netfilter_listeners_open(netns_fd, 0, 0, &e->l, &err);
	if (r >= 0) {
		cfg = (struct nft_egress_config){.proxy_port = e->l.proxy_port,
		                                 .dns_port = e->l.dns_port};
		r = nft_egress_install(netns_fd, &cfg, &e->rules, &err);
	}
	if (r >= 0)
		r = loop_add_fd(loop, e->l.proxy4, EPOLLIN, on_proxy, NULL);
	if (r < 0) {
		say("netns %s failed: %s", s->id, err.msg);
		oci_hook_request_reply(req, r, err.msg);
		netfilter_listeners_close(&e->l);
		nft_egress_free(e->rules);
		free(e);
		return;
	}
	e->next = egresses;
	egresses = e;
	say("netns %s ready", s->id);
	oci_hook_request_reply(req, 0, NULL);
}

static int on_signal(struct loop *l, int sig, void *userdata)
{
	loop_exit(l, 0);
	return 0;
}

int main(int argc, char **argv)
{
	const char *seccomp_path = NULL, *hook_path = NULL;
	struct oci_agent *agent = NULL;
	struct oci_hook_server *hooks = NULL;
	struct cl_error err = {{0}};
	struct loop_timer *t;
	sigset_t sigs;
	int r;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--seccomp-socket") == 0)
			seccomp_path = argv[i + 1];
		else if (strcmp(argv[i], "--hook-socket") == 0)
			hook_path = argv[i + 1];
		else if (strcmp(argv[i], "--release") == 0)
			release_file = argv[i + 1];
	}
	if (!seccomp_path || !hook_path || !release_file) {
		fprintf(stderr,
		        "usage: %s --seccomp-socket PATH --hook-socket PATH --release FILE\n",
		        argv[0]);
		return 2;
	}
	if (loop_new(&loop) < 0)
		return 1;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	loop_add_signals(loop, &sigs, on_signal, NULL);
	struct oci_agent_options ao = {
	        .path = seccomp_path, .on_container = on_container, .on_error = on_refused};
	struct oci_hook_server_options ho = {
	        .path = hook_path, .on_netns = on_netns, .on_error = on_refused};
	if (oci_agent_new(loop, &ao, &agent, &err) < 0 ||
	    oci_hook_server_new(loop, &ho, &hooks, &err) < 0) {
		fprintf(stderr, "oci_testserver: %s\n", err.msg);
		return 1;
	}
	loop_add_timer(loop, loop_now_ms() + 50, on_release_tick, NULL, &t);
	say("ready");
	r = loop_run(loop);
	oci_agent_free(agent);
	oci_hook_server_free(hooks);
	while (listeners)
		drop_listener(listeners);
	while (egresses) {
		struct egress *e = egresses;
		egresses = e->next;
		netfilter_listeners_close(&e->l);
		nft_egress_free(e->rules);
		free(e);
	}
	loop_free(loop);
	return r < 0 ? 1 : 0;
}
