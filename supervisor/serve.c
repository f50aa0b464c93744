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
	const char *config_dir;
	const char *project;
	const char *name;
	const char *shim_socket;
	const char *shim_listen;
	const char *worktree;
	const char *listen[3];
	const char *executor;
	enum shim_strategy strategy;
	pid_t target_pid;
	uint64_t ask_timeout_ms;
	const char *seccomp_socket; /* the OCI listenerPath; NULL: none */
	const char *hook_socket;    /* the createRuntime hook's socket; NULL: none */
	const char *listen_proxy;   /* the CONNECT proxy; "off": none */
	const char *hosts_file;
	int64_t audit_rate, audit_burst; /* hub_options' */
	bool no_shim;
	bool verbose;
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
	struct hub *hub;
	struct approvals *approvals; /* the hub's */
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
	return sv->opt.project && !strcmp(project, sv->opt.project);
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
	        .verbose = sv->opt.verbose,
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
	const char *project = id->project[0] ? id->project : sv->opt.project;

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
	        .name = sv->opt.name,
	        .project = sv->opt.project,
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

static const struct hub_owner_ops serve_owner_ops = {
        .sandboxes = owner_sandboxes,
};

static int on_signal(struct loop *loop, int sig, void *userdata)
{
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
	      "  --audit-rate N|off, --audit-burst N\n"
	      "                         automatic audit lines per sandbox, as for `run`\n"
	      "  --listen-approval A, --listen-tokens A, --listen-request A, --executor HOST:PORT\n"
	      "                         as for `run`\n"
	      "  -v, --verbose / -q, --quiet\n",
	      out);
}

static int parse_options(int argc, char **argv, struct serve_options *o)
{
	enum {
		OPT_CONFIG_DIR = 256,
		OPT_PROJECT,
		OPT_NAME,
		OPT_WORKTREE,
		OPT_SHIM_SOCKET,
		OPT_SHIM_LISTEN,
		OPT_NO_SHIM,
		OPT_STRATEGY,
		OPT_TARGET_PID,
		OPT_TIMEOUT,
		OPT_LISTEN_APPROVAL,
		OPT_LISTEN_TOKENS,
		OPT_LISTEN_REQUEST,
		OPT_EXECUTOR,
		OPT_SECCOMP_SOCKET,
		OPT_HOOK_SOCKET,
		OPT_LISTEN_PROXY,
		OPT_HOSTS,
		OPT_AUDIT_RATE,
		OPT_AUDIT_BURST,
	};
	static const struct option longopts[] = {
	        {"config-dir", required_argument, NULL, OPT_CONFIG_DIR},
	        {"project", required_argument, NULL, OPT_PROJECT},
	        {"name", required_argument, NULL, OPT_NAME},
	        {"worktree", required_argument, NULL, OPT_WORKTREE},
	        {"shim-socket", required_argument, NULL, OPT_SHIM_SOCKET},
	        {"shim-listen", required_argument, NULL, OPT_SHIM_LISTEN},
	        {"no-shim", no_argument, NULL, OPT_NO_SHIM},
	        {"strategy", required_argument, NULL, OPT_STRATEGY},
	        {"target-pid", required_argument, NULL, OPT_TARGET_PID},
	        {"ask-timeout", required_argument, NULL, OPT_TIMEOUT},
	        {"listen-approval", required_argument, NULL, OPT_LISTEN_APPROVAL},
	        {"listen-tokens", required_argument, NULL, OPT_LISTEN_TOKENS},
	        {"listen-request", required_argument, NULL, OPT_LISTEN_REQUEST},
	        {"executor", required_argument, NULL, OPT_EXECUTOR},
	        {"seccomp-socket", required_argument, NULL, OPT_SECCOMP_SOCKET},
	        {"hook-socket", required_argument, NULL, OPT_HOOK_SOCKET},
	        {"listen-proxy", required_argument, NULL, OPT_LISTEN_PROXY},
	        {"hosts", required_argument, NULL, OPT_HOSTS},
	        {"audit-rate", required_argument, NULL, OPT_AUDIT_RATE},
	        {"audit-burst", required_argument, NULL, OPT_AUDIT_BURST},
	        {"verbose", no_argument, NULL, 'v'},
	        {"quiet", no_argument, NULL, 'q'},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	int c;

	o->name = "serve";
	o->shim_socket = SHIM_SERVER_DEFAULT_SOCKET;
	o->strategy = SHIM_STRATEGY_HOST;
	o->listen_proxy = "127.0.0.1:3128";
	optind = 1;
	while ((c = getopt_long(argc, argv, "vqh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_CONFIG_DIR:
			o->config_dir = optarg;
			break;
		case OPT_PROJECT:
			o->project = optarg;
			break;
		case OPT_NAME:
			o->name = optarg;
			break;
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
		case OPT_TIMEOUT:
			if (config_parse_duration(optarg, &o->ask_timeout_ms) < 0 ||
			    o->ask_timeout_ms == 0) {
				fprintf(stderr,
				        PROG ": serve: --ask-timeout: \"%s\" is not a duration\n",
				        optarg);
				return -EINVAL;
			}
			break;
		case OPT_LISTEN_APPROVAL:
		case OPT_LISTEN_TOKENS:
		case OPT_LISTEN_REQUEST:
			o->listen[c - OPT_LISTEN_APPROVAL] = optarg;
			break;
		case OPT_EXECUTOR:
			o->executor = optarg;
			break;
		case OPT_SECCOMP_SOCKET:
			o->seccomp_socket = optarg;
			break;
		case OPT_HOOK_SOCKET:
			o->hook_socket = optarg;
			break;
		case OPT_LISTEN_PROXY:
			o->listen_proxy = optarg;
			break;
		case OPT_HOSTS:
			o->hosts_file = optarg;
			break;
		case OPT_AUDIT_RATE:
		case OPT_AUDIT_BURST:
			if (audit_limit_parse(optarg, c == OPT_AUDIT_RATE,
			                      c == OPT_AUDIT_RATE ? &o->audit_rate
			                                          : &o->audit_burst) < 0) {
				fprintf(stderr,
				        PROG ": serve: --audit-%s takes a number of lines (1 to "
				             "1000000)%s, not \"%s\"\n",
				        c == OPT_AUDIT_RATE ? "rate" : "burst",
				        c == OPT_AUDIT_RATE ? " or off" : "", optarg);
				return -EINVAL;
			}
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'q':
			say_set_quiet(true);
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
	return 0;
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
		tokens_register(hub_tokens(sv->hub), sv->shim_token, sv->opt.name, sv->opt.project,
		                sc.worktree);
	}
	/* The socket's directory, as the default path needs it. */
	if (sc.unix_path && !strncmp(sc.unix_path, "/var/run/cloister/", 18))
		(void)mkdir("/var/run/cloister", 0755);
	/* Decided like hostexec requests (shim_calls.h). */
	r = shim_calls_new(hub_hostexec(sv->hub), sv->opt.name, sv->opt.project, &sv->shim_calls);
	if (r < 0)
		return r;
	r = shim_server_new(sv->loop, &sc, &shim_calls_ops, sv->shim_calls, &err, &sv->shim);
	if (r < 0) {
		fprintf(stderr, PROG ": serve: shim listener: %s\n", err.msg);
		return r;
	}
	shim_calls_set_server(sv->shim_calls, sv->shim);
	if (sv->opt.verbose || isatty(STDERR_FILENO)) {
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
	_cleanup_free_ char *dir = NULL;
	struct config_load_options lo = {0};
	struct cl_error err = {""};
	sigset_t sigs;
	int r;

	r = parse_options(argc, argv, &sv.opt);
	if (r != 0)
		return r > 0 ? 0 : CLI_EXIT_USAGE;
	if (sv.opt.project && config_project_name_check(sv.opt.project, &err) < 0) {
		fprintf(stderr, PROG ": serve: --project: %s\n", err.msg);
		return CLI_EXIT_USAGE;
	}
	r = config_files_dir(sv.opt.config_dir, getenv("XDG_CONFIG_HOME"), getenv("HOME"), &dir,
	                     &err);
	if (r >= 0)
		r = config_load_dir(dir, sv.opt.project, &lo, &sv.config, &err);
	sv.config_dir = dir;
	if (r < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return CLI_EXIT_CONFIG;
	}
	sv.started_wall_ms = audit_log_now_ms();
	r = loop_new(&sv.loop);
	if (r >= 0) {
		struct hub_options ho = {
		        .config = sv.config,
		        .name = sv.opt.name,
		        .config_dir = dir,
		        .project = sv.opt.project,
		        .exec_timeout_ms = sv.opt.ask_timeout_ms,
		        .exec_fallback = QUEUE_FALLBACK_DENY,
		        .listen = {sv.opt.listen[0], sv.opt.listen[1], sv.opt.listen[2]},
		        .executor = sv.opt.executor,
		        .always_attended = true,
		        .audit_rate = sv.opt.audit_rate,
		        .audit_burst = sv.opt.audit_burst,
		        .verbose = sv.opt.verbose,
		};

		r = hub_new(sv.loop, &ho, &serve_owner_ops, &sv, &sv.hub);
	}
	if (r >= 0) {
		sv.approvals = hub_approvals(sv.hub);
		{
			const struct web *web = hub_web(sv.hub);
			struct egress_config ec = {
			        .config = sv.config,
			        .tokens = hub_tokens(sv.hub),
			        .api_ports = {web ? web_approval_port(web) : 0,
			                      web ? web_tokens_port(web) : 0},
			        .decisions_dir = dir,
			        .project = sv.opt.project,
			        .project_config = egress_project_config,
			        .project_config_userdata = &sv,
			        .connect_listen = strcmp(sv.opt.listen_proxy, "off")
			                                  ? sv.opt.listen_proxy
			                                  : NULL,
			        .hosts_file = sv.opt.hosts_file,
			        .verbose = sv.opt.verbose,
			};

			r = egress_new(sv.loop, sv.approvals, &ec, &err, &sv.egress);
			if (r < 0)
				fprintf(stderr, PROG ": serve: %s\n", err.msg);
			else if (egress_connect_port(sv.egress) &&
			         (sv.opt.verbose || isatty(STDERR_FILENO)))
				say("CONNECT proxy at 127.0.0.1:%u",
				    egress_connect_port(sv.egress));
		}
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
		else if (sv.opt.verbose || isatty(STDERR_FILENO))
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
		else if (sv.opt.verbose || isatty(STDERR_FILENO))
			say("containers: egress hook on %s", sv.opt.hook_socket);
	}
	if (r >= 0) {
		sigemptyset(&sigs);
		sigaddset(&sigs, SIGINT);
		sigaddset(&sigs, SIGTERM);
		sigaddset(&sigs, SIGHUP);
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
	hub_free(sv.hub);
	loop_free(sv.loop);
	project_configs_free(&sv);
	config_free(sv.config);
	explicit_bzero(sv.shim_token, sizeof(sv.shim_token));
	return r < 0 ? 1 : 0;
}
