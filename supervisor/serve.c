/* The daemon for containers and shims; see serve.h. */
#include "supervisor/serve.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "oci/oci_agent.h"
#include "oci/oci_hook_server.h"
#include "supervisor/approval/audit_limit.h"
#include "supervisor/approval/audit_log.h"
#include "supervisor/cli_policy.h"
#include "supervisor/egress/egress.h"
#include "supervisor/exec/exec_guard.h"
#include "supervisor/policy/config.h"
#include "supervisor/policy/config_files.h"
#include "supervisor/approval/approvals.h"
#include "supervisor/frontend.h"
#include "base/loop.h"
#include "base/say.h"
#include "supervisor/approval/metrics.h"
#include "supervisor/policy/policy.h"
#include "supervisor/hostexec/shim_calls.h"
#include "supervisor/hostexec/shim_server.h"
#include "supervisor/approval/tokens.h"

struct serve_options {
	struct frontend_options common; /* what run takes too */
	const char *shim_socket;
	const char *shim_listen;
	const char *worktree;
	enum shim_strategy strategy;
	pid_t target_pid;
	const char *seccomp_socket; /* the OCI listenerPath; NULL: none */
	const char *hook_socket;    /* the createRuntime hook's socket; NULL: none */
	bool no_shim;
};

/* A container runc started with our seccomp profile: one guard per listener (its create,
 * and each `runc exec` session). Its config is the project's. */
struct container {
	char *id;
	char *name;
	char *project;
	struct config *config; /* the project's, or NULL: the daemon's */
	struct exec_guard **guards;
	size_t n_guards;
	struct container *next;
};

/* The config of a project other than the daemon's, for its containers' connections: loaded
 * again (with the newest decisions) each time one of its containers starts. */
struct project_config {
	struct project_config *next;
	char *project;
	struct config *config;
};

struct serve {
	struct serve_options opt;
	struct config *config;
	struct project_config *project_configs;
	struct loop *loop;
	struct frontend *fe;
	struct frontend_setup setup;
	struct approvals *approvals; /* the front end's */
	struct shim_calls *shim_calls;
	struct shim_server *shim;
	struct oci_agent *oci;
	struct oci_hook_server *hooks;
	struct egress *egress;
	struct container *containers;
	char *config_dir;
	char shim_token[TOKEN_MAX_LEN + 1];
	uint64_t started_wall_ms;
};

/* ---- containers (OCI seccomp agent) ------------------------------------------------------ */

static void container_free(struct container *c)
{
	for (size_t i = 0; i < c->n_guards; i++)
		exec_guard_free(c->guards[i]);
	free(c->guards);
	config_free(c->config);
	free(c->id);
	free(c->name);
	free(c->project);
	free(c);
}

static void on_guard_gone(void *userdata, struct exec_guard *eg)
{
	struct serve *sv = userdata;

	for (struct container **p = &sv->containers; *p; p = &(*p)->next) {
		struct container *c = *p;

		for (size_t i = 0; i < c->n_guards; i++) {
			if (c->guards[i] != eg)
				continue;
			exec_guard_free(eg);
			c->guards[i] = c->guards[--c->n_guards];
			if (c->n_guards == 0) {
				say("container %s (%s): every process is gone", c->id, c->name);
				*p = c->next;
				/* Its netns goes too: the listeners and rules made for it. */
				if (sv->egress)
					(void)egress_detach(sv->egress, c->id);
				container_free(c);
			}
			return;
		}
	}
}

/* PROJECT is the daemon's own (--project): its config is sv->config. */
static bool own_project(const struct serve *sv, const char *project)
{
	return sv->opt.common.project && !strcmp(project, sv->opt.common.project);
}

static struct container *container_get(struct serve *sv, const struct oci_state *st,
                                       const struct oci_identity *id)
{
	struct container *c;
	struct cl_error err = {""};
	struct config_load_options lo = {0};

	for (c = sv->containers; c; c = c->next)
		if (!strcmp(c->id, st->id))
			return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->id = strdup(st->id);
	c->name = strdup(id->name);
	c->project = id->project[0] ? strdup(id->project) : NULL;
	if (!c->id || !c->name || (id->project[0] && !c->project)) {
		container_free(c);
		return NULL;
	}
	/* A project of its own: its config and decisions decide its execs. */
	if (c->project && !own_project(sv, c->project) &&
	    config_load_dir(sv->config_dir, c->project, &lo, &c->config, &err) < 0) {
		say("container %s: project %s: %s", st->id, c->project, err.msg);
		container_free(c);
		return NULL;
	}
	c->next = sv->containers;
	sv->containers = c;
	return c;
}

static void on_container(void *userdata, const struct oci_state *st, const struct oci_identity *id,
                         int listener_fd, pid_t peer_pid)
{
	struct serve *sv = userdata;
	struct container *c = container_get(sv, st, id);
	struct exec_guard_config gc;
	struct exec_guard *eg, **grown;
	int r;

	if (!c) {
		/* Closing the listener fails the container's execs: closed, not open. */
		close(listener_fd);
		return;
	}
	gc = (struct exec_guard_config){
	        .name = c->name,
	        .project = c->project,
	        .config = c->config ? c->config : sv->config,
	        .verbose = sv->opt.common.verbose,
	        .decisions_dir = sv->config_dir,
	        .gone = on_guard_gone,
	        .gone_userdata = sv,
	};
	grown = realloc(c->guards, (c->n_guards + 1) * sizeof(*grown));
	if (grown)
		c->guards = grown;
	r = grown ? exec_guard_new(sv->loop, sv->approvals, listener_fd, &gc, &eg) : -ENOMEM;
	if (!grown)
		close(listener_fd);
	if (r < 0) {
		say("container %s: cannot watch its execs: %s", st->id, strerror(-r));
		/* A container with no listener left is not tracked. */
		if (c->n_guards == 0) {
			for (struct container **p = &sv->containers; *p; p = &(*p)->next)
				if (*p == c) {
					*p = c->next;
					break;
				}
			container_free(c);
		}
		return;
	}
	c->guards[c->n_guards++] = eg;
	say("container %s (%s%s%s): %s, execs decided by policy", st->id, c->name,
	    c->project ? ", project " : "", c->project ? c->project : "",
	    st->status == OCI_STATUS_RUNNING ? "an exec session" : "started");
}

static void on_oci_error(void *userdata, int error, const char *msg)
{
	say("seccomp agent: %s", msg);
}

static struct project_config *project_config_find(struct serve *sv, const char *project)
{
	for (struct project_config *p = sv->project_configs; p; p = p->next)
		if (!strcmp(p->project, project))
			return p;
	return NULL;
}

/* (Re)load PROJECT's config for egress. */
static int project_config_load(struct serve *sv, const char *project, struct cl_error *err)
{
	struct project_config *p = project_config_find(sv, project);
	struct config_load_options lo = {0};
	struct config *cfg = NULL;
	int r;

	r = config_load_dir(sv->config_dir, project, &lo, &cfg, err);
	if (r < 0)
		return r;
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p || !(p->project = strdup(project))) {
			free(p);
			config_free(cfg);
			return cl_error_set(err, -ENOMEM, "out of memory");
		}
		p->next = sv->project_configs;
		sv->project_configs = p;
	}
	config_free(p->config);
	p->config = cfg;
	return 0;
}

/* egress_config.project_config: the daemon's own project is its config; another one's is
 * loaded once (a container's hook reloads it), and a project whose config does not load
 * denies. */
static int egress_project_config(void *userdata, const char *project, const struct config **ret,
                                 struct cl_error *err)
{
	struct serve *sv = userdata;
	struct project_config *p;
	int r;

	if (own_project(sv, project)) {
		*ret = NULL;
		return 0;
	}
	p = project_config_find(sv, project);
	if (!p) {
		r = project_config_load(sv, project, err);
		if (r < 0)
			return r;
		p = project_config_find(sv, project);
	}
	*ret = p->config;
	return 0;
}

static void project_configs_free(struct serve *sv)
{
	while (sv->project_configs) {
		struct project_config *p = sv->project_configs;

		sv->project_configs = p->next;
		config_free(p->config);
		free(p->project);
		free(p);
	}
}

/* The createRuntime hook hands over a container's netns before its process starts: it gets
 * the same route, rules and listeners as run's sandbox, and its project's config decides its
 * connections. A failure fails the start. */
static void on_hook_netns(void *userdata, struct oci_hook_request *req, const struct oci_state *st,
                          const struct oci_identity *id, int netns_fd)
{
	struct serve *sv = userdata;
	struct cl_error err = {""};
	int r = -ENOSYS;

	/* A container of no project is the daemon's project's, as for its execs' decisions. */
	const char *project = id->project[0] ? id->project : sv->opt.common.project;

	if (!sv->egress)
		cl_error_set(&err, r, "this supervisor has no egress proxy");
	else if (project && !own_project(sv, project))
		r = project_config_load(sv, project, &err);
	else
		r = 0;
	if (r >= 0 && sv->egress)
		r = egress_attach_netns_key(sv->egress, netns_fd, st->id, id->name, project, &err);
	if (r < 0)
		say("container %s: egress: %s", st->id, err.msg);
	else
		say("container %s (%s): egress through the proxy", st->id, id->name);
	oci_hook_request_reply(req, r < 0 ? r : 0, r < 0 ? err.msg : NULL);
}

static void on_hook_error(void *userdata, int error, const char *msg)
{
	say("createRuntime hook: %s", msg);
}

static unsigned owner_sandboxes(void *userdata, struct web_sandbox_info *out, unsigned max);

/* ---- the daemon -------------------------------------------------------------------------- */

static unsigned owner_sandboxes(void *userdata, struct web_sandbox_info *out, unsigned max)
{
	struct serve *sv = userdata;
	unsigned n = 0;

	if (max == 0)
		return 0;
	out[n++] = (struct web_sandbox_info){
	        .name = sv->opt.common.name,
	        .project = sv->opt.common.project,
	        .state = "running",
	        .pid = sv->opt.target_pid > 0 ? sv->opt.target_pid : -1,
	        .started_ms = sv->started_wall_ms,
	};
	for (struct container *c = sv->containers; c && n < max; c = c->next)
		out[n++] = (struct web_sandbox_info){
		        .name = c->name,
		        .project = c->project,
		        .state = "running",
		        .pid = -1,
		        .started_ms = sv->started_wall_ms,
		};
	return n;
}

static const struct frontend_owner_ops serve_owner_ops = {
        .sandboxes = owner_sandboxes,
};

static int on_signal(struct loop *loop, int sig, void *userdata)
{
	struct serve *sv = userdata;

	/* A SIGKILL may follow: the automatic audit lines still in memory go to the file now. */
	frontend_audit_sync(sv->fe);
	loop_exit(loop, 0);
	return 0;
}

static void usage(FILE *out)
{
	fputs("usage: " PROG " serve [OPTIONS]\n"
	      "\n"
	      "Serve the dashboard, the token API, the hostexec request server and the shim\n"
	      "listener for agents this process does not start (containers, the shim fallback).\n"
	      "Shim calls are decided by hostexec.auto_approve / manual_approve; asks wait for "
	      "the\n"
	      "dashboard or `" PROG " approve`.\n"
	      "\n"
	      "options:\n"
	      "  --config-dir DIR       config directory (default $XDG_CONFIG_HOME/cloister)\n"
	      "  --project NAME         also load projects/NAME.yaml and its decisions\n"
	      "  --name NAME            the name asks and logs show (default: serve)\n"
	      "  --worktree DIR         shim calls must have their cwd inside DIR (default: cwd)\n"
	      "  --shim-socket PATH     unix socket for shims (default " SHIM_SERVER_DEFAULT_SOCKET
	      ")\n"
	      "  --shim-listen A:PORT   also TCP for shims; the token is $CLOISTER_TOKEN\n"
	      "  --no-shim              no shim listener\n"
	      "  --strategy host|mirror run approved shim calls on the host (default) or inside\n"
	      "                         the caller's container, as the caller\n"
	      "  --target-pid PID       mirror: a process whose namespaces calls run in\n"
	      "  --seccomp-socket PATH  the OCI seccomp listenerPath: execs of containers runc\n"
	      "                         starts with docker/'s profile are decided here\n"
	      "  --hook-socket PATH     where cloister-oci-hook hands over a container's netns\n"
	      "                         for its egress rules\n"
	      "  --listen-proxy A       the CONNECT proxy (default 127.0.0.1:3128; \"off\")\n"
	      "  --hosts FILE           /etc/hosts-style names the proxy resolves before DNS\n"
	      "  --ask-timeout DUR      how long an ask waits (default 5m)\n"
	      "  --audit-rate N|off, --audit-burst N, --audit-delay DUR\n"
	      "                         automatic audit lines per sandbox, as for `run`\n"
	      "  --listen-approval A, --listen-tokens A, --listen-request A, --executor HOST:PORT\n"
	      "                         as for `run`\n"
	      "  -v, --verbose / -q, --quiet\n",
	      out);
}

static int parse_options(int argc, char **argv, struct serve_options *o)
{
	enum {
		OPT_WORKTREE = 256,
		OPT_SHIM_SOCKET,
		OPT_SHIM_LISTEN,
		OPT_NO_SHIM,
		OPT_STRATEGY,
		OPT_TARGET_PID,
		OPT_SECCOMP_SOCKET,
		OPT_HOOK_SOCKET,
	};
	static const struct option longopts[] = {
	        FRONTEND_LONGOPTS,
	        {"worktree", required_argument, NULL, OPT_WORKTREE},
	        {"shim-socket", required_argument, NULL, OPT_SHIM_SOCKET},
	        {"shim-listen", required_argument, NULL, OPT_SHIM_LISTEN},
	        {"no-shim", no_argument, NULL, OPT_NO_SHIM},
	        {"strategy", required_argument, NULL, OPT_STRATEGY},
	        {"target-pid", required_argument, NULL, OPT_TARGET_PID},
	        {"seccomp-socket", required_argument, NULL, OPT_SECCOMP_SOCKET},
	        {"hook-socket", required_argument, NULL, OPT_HOOK_SOCKET},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	int c, r;

	o->common.name = "serve";
	o->common.listen_proxy = "127.0.0.1:3128";
	o->shim_socket = SHIM_SERVER_DEFAULT_SOCKET;
	o->strategy = SHIM_STRATEGY_HOST;
	optind = 1;
	while ((c = getopt_long(argc, argv, "vqh", longopts, NULL)) != -1) {
		r = frontend_parse_option(&o->common, "serve", c, optarg);
		if (r < 0)
			return r;
		if (r > 0)
			continue;
		switch (c) {
		case OPT_WORKTREE:
			o->worktree = optarg;
			break;
		case OPT_SHIM_SOCKET:
			o->shim_socket = optarg;
			break;
		case OPT_SHIM_LISTEN:
			o->shim_listen = optarg;
			break;
		case OPT_NO_SHIM:
			o->no_shim = true;
			break;
		case OPT_STRATEGY:
			if (!strcmp(optarg, "host"))
				o->strategy = SHIM_STRATEGY_HOST;
			else if (!strcmp(optarg, "mirror"))
				o->strategy = SHIM_STRATEGY_MIRROR;
			else {
				fprintf(stderr,
				        PROG ": serve: --strategy must be host or mirror\n");
				return -EINVAL;
			}
			break;
		case OPT_TARGET_PID: {
			char *end;
			long v = strtol(optarg, &end, 10);

			if (*end || v <= 0 || v > INT_MAX) {
				fprintf(stderr, PROG ": serve: --target-pid needs a pid\n");
				return -EINVAL;
			}
			o->target_pid = (pid_t)v;
			break;
		}
		case OPT_SECCOMP_SOCKET:
			o->seccomp_socket = optarg;
			break;
		case OPT_HOOK_SOCKET:
			o->hook_socket = optarg;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return -EINVAL;
	}
	return frontend_check_options(&o->common, "serve");
}

static int start_shim(struct serve *sv)
{
	char cwd[PATH_MAX];
	struct shim_server_config sc = {
	        .unix_path = sv->opt.shim_socket,
	        .unix_mode = 0666,
	        .unix_owner = (uid_t)-1,
	        .unix_group = (gid_t)-1,
	        .tcp_listen = sv->opt.shim_listen,
	        .worktree = sv->opt.worktree,
	        .strategy = sv->opt.strategy,
	        .target_pid = sv->opt.target_pid,
	};
	struct cl_error err = {""};
	int r;

	if (!sc.worktree)
		sc.worktree = getcwd(cwd, sizeof(cwd));
	if (sv->opt.shim_listen) {
		const char *tok = getenv("CLOISTER_TOKEN");

		if (!tok || strlen(tok) < TOKEN_MIN_LEN || strlen(tok) > TOKEN_MAX_LEN) {
			fprintf(stderr, PROG ": serve: --shim-listen needs the shims' token in "
			                     "CLOISTER_TOKEN (16 to 256 characters)\n");
			return -EINVAL;
		}
		snprintf(sv->shim_token, sizeof(sv->shim_token), "%s", tok);
		unsetenv("CLOISTER_TOKEN");
		sc.token = sv->shim_token;
		/* The same token names this daemon to the request server. */
		tokens_register(frontend_tokens(sv->fe), sv->shim_token, sv->opt.common.name,
		                sv->opt.common.project, sc.worktree);
	}
	/* The socket's directory, as the default path needs it. */
	if (sc.unix_path && !strncmp(sc.unix_path, "/var/run/cloister/", 18))
		(void)mkdir("/var/run/cloister", 0755);
	/* Decided like hostexec requests (shim_calls.h). */
	r = shim_calls_new(frontend_hostexec(sv->fe), sv->opt.common.name, sv->opt.common.project,
	                   &sv->shim_calls);
	if (r < 0)
		return r;
	r = shim_server_new(sv->loop, &sc, &shim_calls_ops, sv->shim_calls, &err, &sv->shim);
	if (r < 0) {
		fprintf(stderr, PROG ": serve: shim listener: %s\n", err.msg);
		return r;
	}
	shim_calls_set_server(sv->shim_calls, sv->shim);
	if (sv->opt.common.verbose || isatty(STDERR_FILENO)) {
		if (sc.unix_path)
			say("shims: unix socket %s", sc.unix_path);
		if (sc.tcp_listen)
			say("shims: TCP port %u", shim_server_tcp_port(sv->shim));
	}
	return 0;
}

int serve_main(int argc, char **argv)
{
	struct serve sv = {0};
	struct cl_error err = {""};
	sigset_t sigs;
	int r;

	r = parse_options(argc, argv, &sv.opt);
	if (r != 0)
		return r > 0 ? 0 : CLI_EXIT_USAGE;
	r = frontend_load_config(&sv.opt.common, false, &err, &sv.config, &sv.config_dir);
	if (r < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return CLI_EXIT_CONFIG;
	}
	sv.started_wall_ms = audit_log_now_ms();
	sv.setup = (struct frontend_setup){
	        .config = sv.config,
	        .name = sv.opt.common.name,
	        .config_dir = sv.config_dir,
	        .exec_fallback = QUEUE_FALLBACK_DENY,
	        .always_attended = true,
	};
	r = loop_new(&sv.loop);
	if (r >= 0) {
		r = frontend_new(sv.loop, &sv.opt.common, &sv.setup, &serve_owner_ops, &sv, &err,
		                 &sv.fe);
		if (r < 0)
			fprintf(stderr, PROG ": %s\n", err.msg);
	}
	if (r >= 0) {
		struct egress_config ec = {
		        .project_config = egress_project_config,
		        .project_config_userdata = &sv,
		};

		sv.approvals = frontend_approvals(sv.fe);
		/* Without egress, containers get no netns rules and no CONNECT proxy: the shim
		 * listener still serves, and without one that failure ends the daemon. */
		r = frontend_egress_new(sv.fe, &ec, &err, &sv.egress);
		if (r < 0)
			fprintf(stderr, PROG ": serve: %s\n", err.msg);
		if (!sv.opt.no_shim)
			r = start_shim(&sv);
	}
	if (r >= 0 && sv.opt.seccomp_socket) {
		struct oci_agent_options oo = {
		        .path = sv.opt.seccomp_socket,
		        .on_container = on_container,
		        .on_error = on_oci_error,
		        .userdata = &sv,
		};

		r = oci_agent_new(sv.loop, &oo, &sv.oci, &err);
		if (r < 0)
			fprintf(stderr, PROG ": serve: seccomp agent: %s\n", err.msg);
		else if (sv.opt.common.verbose || isatty(STDERR_FILENO))
			say("containers: seccomp agent on %s", sv.opt.seccomp_socket);
	}
	if (r >= 0 && sv.opt.hook_socket) {
		struct oci_hook_server_options ho = {
		        .path = sv.opt.hook_socket,
		        .on_netns = on_hook_netns,
		        .on_error = on_hook_error,
		        .userdata = &sv,
		};

		r = oci_hook_server_new(sv.loop, &ho, &sv.hooks, &err);
		if (r < 0)
			fprintf(stderr, PROG ": serve: hook socket: %s\n", err.msg);
		else if (sv.opt.common.verbose || isatty(STDERR_FILENO))
			say("containers: egress hook on %s", sv.opt.hook_socket);
	}
	if (r >= 0) {
		frontend_ending_signals(&sigs);
		r = loop_add_signals(sv.loop, &sigs, on_signal, &sv);
	}
	if (r >= 0)
		r = loop_run(sv.loop);
	/* Containers and shim calls first: cancelling them touches the queue. */
	oci_agent_free(sv.oci);
	oci_hook_server_free(sv.hooks);
	while (sv.containers) {
		struct container *c = sv.containers;

		sv.containers = c->next;
		container_free(c);
	}
	shim_server_free(sv.shim);
	egress_free(sv.egress);
	sv.egress = NULL;
	shim_calls_free(sv.shim_calls);
	frontend_free(sv.fe);
	loop_free(sv.loop);
	project_configs_free(&sv);
	config_free(sv.config);
	free(sv.config_dir);
	explicit_bzero(sv.shim_token, sizeof(sv.shim_token));
	return r < 0 ? 1 : 0;
}
