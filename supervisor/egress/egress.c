/* Egress glue: proxy + resolver + netfilter around the domain policy and the queue; see
 * egress.h. */
#include "supervisor/egress/egress.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

#include "bpf/redirect.h"
#include "netfilter/listen.h"
#include "netfilter/netns.h"
#include "netfilter/nft_egress.h"
#include "notifier/target.h"
#include "base/cleanup.h"
#include "base/tcp_listen.h"
#include "protocol/address.h"
#include "supervisor/approval/audit.h"
#include "supervisor/approval/audit_log.h"
#include "supervisor/policy/config.h"
#include "supervisor/policy/decisions.h"
#include "supervisor/policy/decisions_watch.h"
#include "supervisor/policy/domain.h"
#include "supervisor/approval/approvals.h"
#include "base/loop.h"
#include "base/say.h"
#include "supervisor/approval/metrics.h"
#include "supervisor/policy/policy.h"
#include "supervisor/egress/proxy.h"
#include "supervisor/egress/resolver.h"
#include "base/trace_timing.h"

#define MAX_NETNS    64
#define HOSTPORT_MAX (DOMAIN_HOST_MAX + 16)

/* A connection held while a person decides; its waiter's cookie is its proxy id. */
struct held {
	struct proxy_conn *conn;
	uint64_t cookie;
	char item_id[QUEUE_ID_LEN + 1]; /* its ask, for a decision another run made meanwhile */
	struct held *next;
};

/* Decisions kept in memory: scope session (KEY is a sandbox), project (KEY is a project) or
 * global (KEY is NULL). */
struct rule_set {
	struct rule_set *next;
	enum queue_scope scope;
	char *key;
	struct policy_session rules;
	unsigned n;
};

struct attachment {
	struct netfilter_listeners listeners;
	struct nft_egress *rules;  /* a netns of its own */
	struct redirect *redirect; /* a cgroup on the host's network */
	char *key;                 /* for egress_detach; NULL: none */
	char *sandbox;
	char *project;
};

struct egress {
	struct loop *loop;
	struct approvals *service;
	struct approval_source *approvals; /* domain asks */
	/* The decisions files of the supervisor's project and of every project, as other runs
	 * change them (NULL: no config directory): what they hold replaces the copy the config
	 * read at the start, so that a domain decided or removed elsewhere holds here too. */
	struct decisions_watch *watch;
	struct egress_config cfg;
	struct resolver *resolver;
	struct proxy *proxy;
	struct rule_set *rule_sets;
	struct held *held;
	struct attachment att[MAX_NETNS];
	unsigned n_att;
	int connect_fd;
	unsigned connect_port;
};

/* "example.com:443", "[2001:db8::1]:80". */
static void host_port(const char *host, uint16_t port, char *buf, size_t size)
{
	if (strchr(host, ':'))
		snprintf(buf, size, "[%s]:%u", host, (unsigned)port);
	else
		snprintf(buf, size, "%s:%u", host, (unsigned)port);
}

static struct held *held_take(struct egress *eg, uint64_t cookie)
{
	for (struct held **p = &eg->held; *p; p = &(*p)->next) {
		if ((*p)->cookie == cookie) {
			struct held *h = *p;

			*p = h->next;
			return h;
		}
	}
	return NULL;
}

static void audit_conn(struct egress *eg, const struct proxy_conn_info *info, const char *summary,
                       enum audit_verdict verdict, const char *rule, const char *reason,
                       const struct proxy_stats *stats)
{
	struct audit_record rec = {
	        .time_ms = audit_log_now_ms(),
	        .sandbox = info->sandbox,
	        .project = info->project,
	        .kind = "domain",
	        .pid = info->pid > 0 ? info->pid : -1,
	        .uid = -1,
	        .summary = summary,
	        .verdict = verdict,
	        .rule = rule,
	        .decided_by = "policy",
	        .latency_ms = -1,
	        .reason = reason,
	        .automatic = true, /* a verdict of the policy, or a connection's end */
	};

	if (stats) {
		rec.connection = true;
		rec.bytes_up = (int64_t)stats->bytes_up;
		rec.bytes_down = (int64_t)stats->bytes_down;
		rec.duration_ms = (int64_t)stats->duration_ms;
		rec.decided_by = NULL;
	}
	approvals_verdict(eg->approvals, &rec);
}

/* ---- the policy for a sandbox ---------------------------------------------------------------- */

static void rule_set_free(struct rule_set *s)
{
	config_domain_list_clear(&s->rules.allow);
	config_domain_list_clear(&s->rules.deny);
	free(s->key);
	free(s);
}

static struct rule_set *find_rule_set(struct egress *eg, enum queue_scope scope, const char *key)
{
	for (struct rule_set *s = eg->rule_sets; s; s = s->next)
		if (s->scope == scope && (s->key && key ? !strcmp(s->key, key) : s->key == key))
			return s;
	return NULL;
}

static const struct policy_session *rules_of(struct egress *eg, enum queue_scope scope,
                                             const char *key)
{
	struct rule_set *s = find_rule_set(eg, scope, key);

	return s ? &s->rules : NULL;
}

/* PROJECT is the one whose decisions file the watch reads. */
static bool watched_project(const struct egress *eg, const char *project)
{
	const char *w = decisions_watch_project_name(eg->watch);

	return project && w && !strcmp(project, w) && decisions_watch_known(eg->watch, true);
}

/* Decide HOST for SANDBOX of PROJECT (either may be NULL): its project's config (a container
 * of another project than the supervisor's has its own) with the decisions in memory that
 * apply to it. The decisions files the watch reads count as they are now, not as the config
 * read them at the start: their layers of the config are left out. */
static int check_domain(struct egress *eg, const char *sandbox, const char *project,
                        const char *host, struct policy_result *ret, struct cl_error *err)
{
	const struct config *live_project = NULL, *live_global = NULL;
	struct policy_session files[2];
	const struct policy_session *sets[5] = {
	        rules_of(eg, QUEUE_SCOPE_SESSION, sandbox),
	        rules_of(eg, QUEUE_SCOPE_PROJECT, project),
	        rules_of(eg, QUEUE_SCOPE_GLOBAL, NULL),
	};
	const struct config *cfg = NULL;
	struct cl_error why = {""};
	unsigned skip = 0;

	if (project && eg->cfg.project_config &&
	    eg->cfg.project_config(eg->cfg.project_config_userdata, project, &cfg, &why) < 0)
		return cl_error_set(err, -EACCES, "project %s: %s", project, why.msg);
	if (watched_project(eg, project)) {
		skip |= 1U << CONFIG_LAYER_PROJECT_DECISIONS;
		live_project = decisions_watch_project(eg->watch);
	}
	if (decisions_watch_known(eg->watch, false)) {
		skip |= 1U << CONFIG_LAYER_GLOBAL_DECISIONS;
		live_global = decisions_watch_global(eg->watch);
	}
	if (live_project) {
		files[0] = (struct policy_session){live_project->proxy.allow,
		                                   live_project->proxy.deny};
		sets[3] = &files[0];
	}
	if (live_global) {
		files[1] =
		        (struct policy_session){live_global->proxy.allow, live_global->proxy.deny};
		sets[4] = &files[1];
	}
	return policy_check_domain_except(cfg ? cfg : eg->cfg.config, skip, sets, ELEMENTSOF(sets),
	                                  host, ret, err);
}

/* ---- proxy callbacks --------------------------------------------------------------------- */

static enum proxy_verdict on_decide(void *userdata, struct proxy_conn *conn,
                                    const struct proxy_conn_info *info)
{
	struct egress *eg = userdata;
	char hp[HOSTPORT_MAX], rule[1024];
	struct policy_result pr;
	struct cl_error err = {""};
	struct queue_request qr;
	struct held *h;
	int r;

	host_port(info->host, info->port, hp, sizeof(hp));
	r = check_domain(eg, info->sandbox, info->project, hp, &pr, &err);
	/* Before a person is asked: what another run decided a moment ago answers it (a stat of
	 * each decisions file; read again only when one changed). */
	if (r >= 0 && pr.verdict == POLICY_ASK && decisions_watch_before_ask(eg->watch, &err) > 0)
		r = check_domain(eg, info->sandbox, info->project, hp, &pr, &err);
	if (r < 0) {
		audit_conn(eg, info, hp, AUDIT_DENY, NULL, err.msg, NULL);
		return PROXY_DENY;
	}
	if (pr.origin.file && pr.origin.line)
		snprintf(rule, sizeof(rule), "%s (%s:%u)", pr.rule, pr.origin.file, pr.origin.line);
	else if (pr.origin.file)
		snprintf(rule, sizeof(rule), "%s (%s)", pr.rule, pr.origin.file);
	else
		snprintf(rule, sizeof(rule), "%s", pr.rule);
	if (pr.verdict != POLICY_ASK) {
		bool allow = pr.verdict == POLICY_ALLOW;

		audit_conn(eg, info, hp, allow ? AUDIT_ALLOW : AUDIT_DENY, rule, pr.reason, NULL);
		if (!allow)
			say("connection to %s denied: %s", hp, rule);
		else if (eg->cfg.verbose)
			say("connection to %s allowed: %s", hp, rule);
		return allow ? PROXY_ALLOW : PROXY_DENY;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return PROXY_DENY;
	/* Name the process on the card (only now: most connections never need it). */
	struct connect_target who;
	const char *argv[32];
	size_t argc = 0;
	bool known = info->source == PROXY_SOURCE_TRANSPARENT && eg->cfg.who &&
	             eg->cfg.who(eg->cfg.who_userdata, &info->peer, &info->original_dst, &who) == 0;

	for (size_t off = 0; known && off < who.cmdline_len && argc < 32;
	     off += strlen(who.cmdline + off) + 1)
		argv[argc++] = who.cmdline + off;
	h->conn = conn;
	h->cookie = proxy_conn_id(conn);
	qr = (struct queue_request){
	        .kind = QUEUE_KIND_DOMAIN,
	        .sandbox = info->sandbox,
	        .project = info->project,
	        .summary = hp,
	        .exe = known && who.exe[0] ? who.exe : NULL,
	        .argv = argc ? argv : NULL,
	        .argc = argc,
	        .pid = known           ? who.pid
	               : info->pid > 0 ? info->pid
	                               : -1,
	        .uid = -1,
	        .cookie = h->cookie,
	};
	/* Held first: a fallback's decision comes from the loop (a deferred source). */
	h->next = eg->held;
	eg->held = h;
	r = approvals_ask(eg->approvals, &qr, h->item_id);
	if (r < 0) {
		free(held_take(eg, h->cookie));
		audit_conn(eg, info, hp, AUDIT_DENY, rule, queue_strerror(r), NULL);
		return PROXY_DENY;
	}
	return PROXY_PENDING;
}

static void on_closed(void *userdata, struct proxy_conn *conn, const struct proxy_conn_info *info,
                      const struct proxy_stats *stats)
{
	struct egress *eg = userdata;
	struct held *h = held_take(eg, proxy_conn_id(conn));
	char hp[HOSTPORT_MAX];

	/* A held connection whose client left: its ask has nobody to answer any more. */
	if (h) {
		(void)approvals_withdraw(eg->approvals, h->cookie);
		free(h);
	}
	host_port(info->host[0] ? info->host : "?", info->port, hp, sizeof(hp));
	audit_conn(eg, info, hp, stats->outcome == PROXY_OUTCOME_RELAYED ? AUDIT_ALLOW : AUDIT_DENY,
	           NULL, stats->reason ? stats->reason : proxy_outcome_to_string(stats->outcome),
	           stats);
}

static int on_original_dst(void *userdata, int fd, const struct sockaddr *peer, socklen_t peer_len,
                           struct sockaddr_storage *ret)
{
	struct egress *eg = userdata;
	int r = netfilter_original_dst(fd, ret);

	/* Not redirected by nftables: maybe by a cgroup's eBPF program, which kept the original
	 * destination under the client's address and port. */
	for (unsigned i = 0; r == -ENOENT && i < eg->n_att; i++)
		if (eg->att[i].redirect)
			r = redirect_lookup(eg->att[i].redirect, peer, peer_len, ret);
	return r;
}

/* The policy names this exact host (a domain: entry, not a pattern nor the unlisted rule). */
static bool on_allow_restricted(void *userdata, const struct proxy_conn_info *info)
{
	struct egress *eg = userdata;
	char hp[HOSTPORT_MAX];
	struct policy_result pr;

	/* Never our own dashboard or token API, whatever the policy names: the proxy dials
	 * from the host, where nothing (no netns, no eBPF map) keeps the agent from them. */
	for (size_t i = 0; info->port && i < ELEMENTSOF(eg->cfg.api_ports); i++)
		if (info->port == eg->cfg.api_ports[i])
			return false;
	host_port(info->host, info->port, hp, sizeof(hp));
	return check_domain(eg, info->sandbox, info->project, hp, &pr, NULL) == 0 &&
	       pr.verdict == POLICY_ALLOW && pr.exact_host;
}

/* TAG is the sandbox string of the attachment whose listener the query came through
 * (serve_listeners): compared by address only, so a detached one's is never read. */
static enum resolver_name on_name_allowed(void *userdata, const void *tag, const char *name)
{
	struct egress *eg = userdata;
	struct policy_result pr;

	/* A name every port of which is denied to the asking sandbox gets NXDOMAIN; one the
	 * policy allows may be looked up; the rest are asked per connection (ports matter
	 * there), so nothing of them leaves the machine before that. A query from no known
	 * sandbox (it was detached meanwhile), or a policy that cannot decide, gets nothing. */
	for (unsigned i = 0; tag && i < eg->n_att; i++) {
		if (eg->att[i].sandbox != tag)
			continue;
		if (check_domain(eg, eg->att[i].sandbox, eg->att[i].project, name, &pr, NULL) < 0 ||
		    pr.verdict == POLICY_DENY)
			return RESOLVER_NAME_DENY;
		return pr.verdict == POLICY_ALLOW ? RESOLVER_NAME_LOOKUP : RESOLVER_NAME_LOCAL;
	}
	return RESOLVER_NAME_DENY;
}

static const struct proxy_ops egress_proxy_ops = {
        .decide = on_decide,
        .closed = on_closed,
        .original_dst = on_original_dst,
        .allow_restricted = on_allow_restricted,
};

static const struct resolver_ops egress_resolver_ops = {
        .name_allowed = on_name_allowed,
};

/* ---- asks and decisions ----------------------------------------------------------------- */

/* The queue decided a domain item: release or refuse the connections held for it. From the
 * loop (a deferred source), never inside a proxy callback. */
static void on_resolved(void *userdata, const struct queue_item *item, const uint64_t *cookies,
                        size_t n)
{
	struct egress *eg = userdata;
	bool allow = item->state == QUEUE_STATE_APPROVED;
	const char *reason = NULL;

	if (item->state == QUEUE_STATE_TIMED_OUT)
		reason = "Request timed out waiting for approval";
	else if (!allow && item->state == QUEUE_STATE_CANCELLED)
		reason = item->reason;
	for (size_t i = 0; i < n; i++) {
		struct held *h = held_take(eg, cookies[i]);

		if (!h)
			continue;
		proxy_conn_decide(h->conn, allow, reason);
		free(h);
	}
	if (!allow && item->state != QUEUE_STATE_CANCELLED)
		say("connection to %s %s: %s", item->summary, queue_state_to_string(item->state),
		    item->reason);
}

/* A decision of scope session (for SANDBOX's connections), project (PROJECT's) or global
 * (everyone's): VALUE (a domain, or a pattern when IS_PATTERN) is allowed or denied for later
 * connections from now on. */
static void add_rule(struct egress *eg, const char *sandbox, const char *project,
                     enum queue_scope scope, bool allow, const char *value, bool is_pattern)
{
	const char *key = scope == QUEUE_SCOPE_PROJECT  ? project
	                  : scope == QUEUE_SCOPE_GLOBAL ? NULL
	                                                : sandbox;
	struct config_domain_rule rule = {
	        .origin = {.layer = CONFIG_LAYER_SESSION},
	};
	struct rule_set *s;

	/* A project decision without a project (it could not be kept) lasts this session. */
	if (scope == QUEUE_SCOPE_PROJECT && !project) {
		scope = QUEUE_SCOPE_SESSION;
		key = sandbox;
	}
	if (scope == QUEUE_SCOPE_ONCE || (scope == QUEUE_SCOPE_SESSION && !key) ||
	    domain_spec_parse(value, is_pattern, &rule.spec, NULL) < 0)
		return;
	s = find_rule_set(eg, scope, key);
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s || (key && !(s->key = strdup(key)))) {
			free(s);
			return;
		}
		s->scope = scope;
		s->next = eg->rule_sets;
		eg->rule_sets = s;
	}
	rule.list = allow ? "session.allow" : "session.deny";
	rule.index = s->n++;
	config_domain_list_add(allow ? &s->rules.allow : &s->rules.deny, &rule);
}

/* Keep a project or global decision in the decisions file of the asking sandbox's project (a
 * container's own), else of this supervisor's. */
static int persist_rule(struct egress *eg, const struct queue_item *item,
                        const struct approval_decision *d, struct cl_error *err)
{
	const char *project = item->project ? item->project : eg->cfg.project;
	_cleanup_free_ char *path = NULL;
	struct domain_spec spec;
	int r;

	if (!eg->cfg.decisions_dir)
		return cl_error_set(err, -ENOENT, "no config directory to keep decisions in");
	if (d->scope == QUEUE_SCOPE_PROJECT && !project)
		return cl_error_set(
		        err, -EINVAL,
		        "no project (start with --project NAME to keep project decisions)");
	r = domain_spec_parse(d->value, d->is_pattern, &spec, err);
	if (r >= 0)
		r = decisions_prepare_dir(eg->cfg.decisions_dir, err);
	if (r >= 0)
		r = decisions_path(eg->cfg.decisions_dir,
		                   d->scope == QUEUE_SCOPE_PROJECT ? project : NULL, &path, err);
	/* flock: another supervisor writing the same file holds us for its write only. */
	if (r >= 0)
		r = decisions_update(path, d->allow ? DECISIONS_ALLOW : DECISIONS_DENY, &spec, err);
	if (r >= 0)
		say("%s %s %s in %s", d->allow ? "allowed" : "denied",
		    d->is_pattern ? "pattern" : "domain", d->value, path);
	return r < 0 ? r : 0;
}

/* A person decided a domain item with a wider scope than once: the rule applies to later
 * connections at once, and a project or global one is written to the decisions file. Only a
 * decision that names what it covers (the dashboard's domain or pattern) is kept; "always" at
 * the terminal covers the one connection. */
static int on_decided(void *userdata, const struct queue_item *item,
                      const struct approval_decision *d, struct cl_error *err)
{
	struct egress *eg = userdata;
	struct cl_error why = {""};
	int r;

	if (d->scope == QUEUE_SCOPE_ONCE || !d->value)
		return 0;
	if (d->scope != QUEUE_SCOPE_PROJECT && d->scope != QUEUE_SCOPE_GLOBAL) {
		add_rule(eg, item->sandbox, item->project, d->scope, d->allow, d->value,
		         d->is_pattern);
		return 0;
	}
	r = persist_rule(eg, item, d, err);
	/* Written to a file the watch reads for this sandbox's connections: it holds from there,
	 * and `decisions rm` takes it back. Else (not written, a sandbox of no project or of a
	 * container's project) it is kept in memory for the session. */
	if (r >= 0 &&
	    (d->scope == QUEUE_SCOPE_GLOBAL ? decisions_watch_known(eg->watch, false)
	                                    : watched_project(eg, item->project)) &&
	    decisions_watch_check(eg->watch, &why) >= 0)
		return 0;
	add_rule(eg, item->sandbox, item->project, d->scope, d->allow, d->value, d->is_pattern);
	return r;
}

/* The decisions files changed (another run decided, or `decisions rm`): the connections
 * held for a name they now decide are answered as if a person had. From the loop. */
static void on_decisions_changed(void *userdata)
{
	struct egress *eg = userdata;
	char(*ids)[QUEUE_ID_LEN + 1];
	size_t n = 0, max = 0;

	for (struct held *h = eg->held; h; h = h->next)
		max++;
	if (!max)
		return;
	ids = calloc(max, sizeof(*ids));
	if (!ids)
		return;
	/* Copied first: a decision resolves (and frees) held connections. */
	for (struct held *h = eg->held; h; h = h->next)
		if (h->item_id[0])
			memcpy(ids[n++], h->item_id, sizeof(*ids));
	for (size_t i = 0; i < n; i++) {
		const struct queue_item *item = queue_find(approvals_queue(eg->service), ids[i]);
		struct approval_decision d = {.scope = QUEUE_SCOPE_ONCE, .by = "decision"};
		struct policy_result pr;

		if (!item || item->kind != QUEUE_KIND_DOMAIN ||
		    item->state != QUEUE_STATE_PENDING ||
		    check_domain(eg, item->sandbox, item->project, item->summary, &pr, NULL) < 0 ||
		    pr.verdict == POLICY_ASK)
			continue;
		d.allow = pr.verdict == POLICY_ALLOW;
		d.reason = pr.reason;
		(void)approvals_decide(eg->service, ids[i], &d, NULL);
	}
	free(ids);
}

static const struct approval_source_ops egress_source_ops = {
        .resolved = on_resolved,
        .decided = on_decided,
        /* A decision must not reach a connection while the proxy is still handling it. */
        .deferred = true,
};

/* ---- set-up -------------------------------------------------------------------------------- */

static int listen_connect(struct egress *eg, const char *text, struct cl_error *err)
{
	struct sockaddr_storage ss;
	socklen_t len;
	/* As the dashboard does: a port another supervisor has is replaced by a free one. */
	struct tcp_listen_options lo = {.backlog = 512, .v6only = true, .port_fallback = true};
	uint16_t port;
	int r;

	if (cl_address_parse_local(text, NULL, &ss, &len) < 0)
		return cl_error_set(err, -EINVAL, "CONNECT proxy: \"%s\" is not ADDR:PORT", text);
	r = tcp_listen(&ss, len, &lo, &eg->connect_fd, &port);
	if (r < 0)
		return cl_error_set(err, r, "CONNECT proxy on %s: %s", text, strerror(-r));
	if (cl_address_port(&ss) && port != cl_address_port(&ss))
		say("CONNECT proxy: %s is taken, using a free port", text);
	eg->connect_port = port;
	return proxy_add_connect(eg->proxy, eg->connect_fd);
}

int egress_new(struct loop *loop, struct approvals *approvals, const struct egress_config *config,
               struct cl_error *err, struct egress **ret)
{
	struct egress *eg = calloc(1, sizeof(*eg));
	struct resolver_config rc;
	struct proxy_config pc;
	int r;

	if (!eg)
		return -ENOMEM;
	eg->loop = loop;
	eg->service = approvals;
	eg->cfg = *config;
	eg->connect_fd = -EBADF;
	r = approvals_register(approvals, &egress_source_ops, eg, &eg->approvals);
	if (r < 0) {
		free(eg);
		return r;
	}
	r = decisions_watch_new(config->decisions_dir, config->project, &eg->watch, err);
	if (r >= 0)
		r = decisions_watch_start(eg->watch, loop, on_decisions_changed, eg);
	if (r < 0) {
		if (!err->msg[0])
			cl_error_set(err, r, "decisions files: %s", strerror(-r));
		egress_free(eg);
		return r;
	}
	resolver_config_init(&rc);
	rc.fake_ip = !config->real_ip;
	rc.hosts_file = config->hosts_file;
	/* For tests, which must never edit the machine's files: another hosts file and
	 * nsswitch.conf in place of /etc's (README, "Network"). */
	if (getenv("CLOISTER_SYSTEM_HOSTS"))
		rc.system_hosts = getenv("CLOISTER_SYSTEM_HOSTS");
	if (getenv("CLOISTER_NSSWITCH_CONF"))
		rc.nsswitch_conf = getenv("CLOISTER_NSSWITCH_CONF");
	r = resolver_new(loop, &rc, &egress_resolver_ops, eg, &eg->resolver, err);
	if (r >= 0 && config->verbose) {
		char sources[512];

		resolver_describe_sources(eg->resolver, sources, sizeof(sources));
		say("names resolve through %s", sources);
	}
	if (r >= 0) {
		proxy_config_init(&pc);
		pc.resolver = eg->resolver;
		pc.tokens = config->tokens;
		r = proxy_new(loop, &pc, &egress_proxy_ops, eg, &eg->proxy);
		if (r < 0)
			cl_error_set(err, r, "proxy: %s", strerror(-r));
	}
	if (r >= 0 && config->connect_listen)
		r = listen_connect(eg, config->connect_listen, err);
	if (r < 0) {
		egress_free(eg);
		return r;
	}
	*ret = eg;
	return 0;
}

/* Undo serve_listeners (whatever part of it was done), then close and free A's parts. */
static void attachment_release(struct egress *eg, struct attachment *a)
{
	const struct netfilter_listeners *l = &a->listeners;
	const int proxies[] = {l->proxy4, l->proxy6};
	const int dns[] = {l->dns_udp4, l->dns_udp6, l->dns_tcp4, l->dns_tcp6};

	for (size_t i = 0; i < 2; i++)
		if (proxies[i] >= 0)
			(void)proxy_remove_listener(eg->proxy, proxies[i]);
	for (size_t i = 0; i < 4; i++)
		if (dns[i] >= 0)
			(void)resolver_unserve(eg->resolver, dns[i]);
	redirect_free(a->redirect); /* detaches its programs */
	nft_egress_free(a->rules);
	netfilter_listeners_close(&a->listeners);
	free(a->sandbox);
	free(a->project);
	free(a->key);
	*a = (struct attachment){.listeners = NETFILTER_LISTENERS_INIT};
}

/* SANDBOX's session decisions, when no attachment is that sandbox any more: a later one of
 * the same name starts afresh. */
static void forget_session(struct egress *eg, const char *sandbox)
{
	for (unsigned i = 0; i < eg->n_att; i++)
		if (eg->att[i].sandbox && !strcmp(eg->att[i].sandbox, sandbox))
			return;
	for (struct rule_set **p = &eg->rule_sets; *p; p = &(*p)->next) {
		struct rule_set *s = *p;

		if (s->scope != QUEUE_SCOPE_SESSION || strcmp(s->key, sandbox))
			continue;
		*p = s->next;
		rule_set_free(s);
		return;
	}
}

int egress_detach(struct egress *eg, const char *key)
{
	for (unsigned i = 0; key && i < eg->n_att; i++) {
		if (!eg->att[i].key || strcmp(eg->att[i].key, key))
			continue;
		struct attachment gone = eg->att[i];

		/* Out of the list first: its sandbox may have no attachment left. */
		eg->att[i] = eg->att[--eg->n_att];
		if (gone.sandbox)
			forget_session(eg, gone.sandbox);
		attachment_release(eg, &gone);
		return 0;
	}
	return -ENOENT;
}

/* Serve A's listeners: the proxy and the resolver. */
static int serve_listeners(struct egress *eg, struct attachment *a)
{
	int r = proxy_add_transparent(eg->proxy, a->listeners.proxy4, a->sandbox, a->project);

	if (r >= 0 && a->listeners.proxy6 >= 0)
		r = proxy_add_transparent(eg->proxy, a->listeners.proxy6, a->sandbox, a->project);
	if (r >= 0)
		r = resolver_serve_udp(eg->resolver, a->listeners.dns_udp4, a->sandbox);
	if (r >= 0 && a->listeners.dns_udp6 >= 0)
		r = resolver_serve_udp(eg->resolver, a->listeners.dns_udp6, a->sandbox);
	if (r >= 0)
		r = resolver_serve_tcp(eg->resolver, a->listeners.dns_tcp4, a->sandbox);
	if (r >= 0 && a->listeners.dns_tcp6 >= 0)
		r = resolver_serve_tcp(eg->resolver, a->listeners.dns_tcp6, a->sandbox);
	return r;
}

int egress_attach_cgroup(struct egress *eg, int cgroup_fd, const char *sandbox, const char *project,
                         egress_refused_fn refused_fn, void *userdata, struct cl_error *err)
{
	uint16_t refused[REDIRECT_REFUSED_MAX];
	size_t n_refused = 0;
	struct attachment *a;
	struct redirect_config rc;
	_cleanup_close_ int self = -EBADF;
	int r;

	if (eg->n_att == MAX_NETNS)
		return cl_error_set(err, -ENOSPC, "too many sandboxes");
	if (cgroup_fd < 0)
		return cl_error_set(err, -EINVAL, "sharing the host's network needs a cgroup");
	a = &eg->att[eg->n_att];
	*a = (struct attachment){.listeners = NETFILTER_LISTENERS_INIT};
	a->sandbox = strdup(sandbox);
	a->project = project ? strdup(project) : NULL;
	if (!a->sandbox || (project && !a->project)) {
		free(a->sandbox);
		free(a->project);
		return -ENOMEM;
	}
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	r = self < 0 ? cl_error_set(err, -errno, "/proc/self/ns/net: %m") : 0;
	if (r >= 0)
		r = netfilter_listeners_open(self, 0, 0, &a->listeners, err);
	if (r >= 0) {
		rc = (struct redirect_config){.proxy_port = a->listeners.proxy_port,
		                              .dns_port = a->listeners.dns_port};
		r = redirect_open(&rc, &a->redirect, err);
	}
	/* The watch first, then the list: a supervisor that starts in between is in one of them. */
	if (r >= 0)
		r = redirect_watch_peers(a->redirect, err);
	if (r >= 0) {
		r = refused_fn(userdata, refused, ELEMENTSOF(refused), &n_refused);
		if (r < 0)
			cl_error_set(err, r, "listing Cloister's listeners: %s", strerror(-r));
	}
	/* Before attach: the agent never sees a moment where these are open. */
	for (size_t i = 0; r >= 0 && i < n_refused; i++) {
		r = redirect_refuse_port(a->redirect, refused[i]);
		if (r < 0)
			cl_error_set(err, r, "egress redirect: refusing port %u: %s",
			             (unsigned)refused[i], strerror(-r));
	}
	if (r >= 0)
		r = redirect_attach(a->redirect, cgroup_fd, err);
	if (r >= 0)
		r = serve_listeners(eg, a);
	if (r < 0) {
		if (!err->msg[0])
			cl_error_set(err, r, "egress set-up: %s", strerror(-r));
		attachment_release(eg, a);
		return r;
	}
	eg->n_att++;
	return 0;
}

int egress_attach_netns(struct egress *eg, int netns_fd, const char *sandbox, const char *project,
                        struct cl_error *err)
{
	return egress_attach_netns_key(eg, netns_fd, NULL, sandbox, project, err);
}

int egress_attach_netns_key(struct egress *eg, int netns_fd, const char *key, const char *sandbox,
                            const char *project, struct cl_error *err)
{
	struct attachment *a;
	struct nft_egress_config nc;
	int r;

	if (eg->n_att == MAX_NETNS)
		return cl_error_set(err, -ENOSPC, "too many network namespaces");
	a = &eg->att[eg->n_att];
	*a = (struct attachment){.listeners = NETFILTER_LISTENERS_INIT};
	a->sandbox = strdup(sandbox);
	a->project = project ? strdup(project) : NULL;
	a->key = key ? strdup(key) : NULL;
	if (!a->sandbox || (project && !a->project) || (key && !a->key)) {
		attachment_release(eg, a);
		return -ENOMEM;
	}
	r = netfilter_netns_setup(netns_fd, err);
	trace_timing_mark("egress: netns links, routes");
	if (r >= 0)
		r = netfilter_listeners_open(netns_fd, 0, 0, &a->listeners, err);
	trace_timing_mark("egress: listeners in the netns");
	if (r >= 0) {
		/* Without a key the netns is run's own and dies with its sandbox (see
		 * egress_attach_netns): its table may too. A keyed one (a container's) is
		 * detached while the netns lives on, so its table must go with the socket. */
		nc = (struct nft_egress_config){.proxy_port = a->listeners.proxy_port,
		                                .dns_port = a->listeners.dns_port,
		                                .persist = key == NULL};
		r = nft_egress_install(netns_fd, &nc, &a->rules, err);
	}
	trace_timing_mark("egress: nft ruleset");
	if (r >= 0)
		r = serve_listeners(eg, a);
	if (r < 0) {
		if (!err->msg[0])
			cl_error_set(err, r, "egress set-up: %s", strerror(-r));
		attachment_release(eg, a);
		return r;
	}
	eg->n_att++;
	return 0;
}

unsigned egress_connect_port(const struct egress *eg)
{
	return eg->connect_port;
}

void egress_free(struct egress *eg)
{
	if (!eg)
		return;
	/* The proxy first: it reports every connection closed (held ones cancel their asks). */
	proxy_free(eg->proxy);
	resolver_free(eg->resolver);
	trace_timing_mark("egress free: proxy, resolver");
	approvals_unregister(eg->approvals);
	decisions_watch_free(eg->watch);
	while (eg->held) {
		struct held *h = eg->held;

		eg->held = h->next;
		free(h);
	}
	for (unsigned i = 0; i < eg->n_att; i++) {
		redirect_free(eg->att[i].redirect); /* detaches its programs */
		nft_egress_free(eg->att[i].rules);
		trace_timing_mark("egress free: nft table");
		netfilter_listeners_close(&eg->att[i].listeners);
		free(eg->att[i].sandbox);
		free(eg->att[i].project);
		free(eg->att[i].key);
	}
	if (eg->connect_fd >= 0)
		close(eg->connect_fd);
	while (eg->rule_sets) {
		struct rule_set *s = eg->rule_sets;

		eg->rule_sets = s->next;
		rule_set_free(s);
	}
	free(eg);
}
