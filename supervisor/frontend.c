/* What run and serve share; see frontend.h. */
#include "supervisor/frontend.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "protocol/address.h"
#include "supervisor/web/api_info.h"
#include "supervisor/approval/approvals.h"
#include "supervisor/approval/audit_limit.h"
#include "supervisor/approval/audit_log.h"
#include "supervisor/egress/egress.h"
#include "supervisor/policy/config.h"
#include "supervisor/policy/config_files.h"
#include "supervisor/hostexec/executor_client.h"
#include "supervisor/hostexec/hostexec.h"
#include "base/loop.h"
#include "base/say.h"
#include "supervisor/approval/tokens.h"

#define API_TOKEN_BYTES 32
/* A dashboard reload must not hand its asks to the fallback. */
#define WEB_ORPHAN_GRACE_MS 10000

struct frontend {
	struct loop *loop;
	const struct frontend_options *opt;
	const struct frontend_setup *setup;
	const struct frontend_owner_ops *owner;
	void *owner_userdata;
	struct audit_log *audit;
	struct approvals *approvals;
	struct tokens *tokens;
	struct web *web;
	struct hostexec *hostexec;
	struct executor *executor;
	char *api_info_path;
	char api_token[2 * API_TOKEN_BYTES + 1];
	char cloister_token[2 * API_TOKEN_BYTES + 1];
	char api_nonce[2 * API_TOKEN_BYTES + 1];
	uint16_t executor_port; /* --executor's; 0: in this process */
};

/* ---- the options run and serve share ------------------------------------------------------ */

int frontend_parse_option(struct frontend_options *o, const char *command, int c, const char *arg)
{
	switch (c) {
	case FRONTEND_OPT_CONFIG_DIR:
		o->config_dir = arg;
		return 1;
	case FRONTEND_OPT_PROJECT:
		o->project = arg;
		return 1;
	case FRONTEND_OPT_NAME:
		o->name = arg;
		return 1;
	case FRONTEND_OPT_ASK_TIMEOUT:
		if (config_parse_duration(arg, &o->ask_timeout_ms) < 0 || o->ask_timeout_ms == 0) {
			fprintf(stderr,
			        PROG
			        ": %s: --ask-timeout: \"%s\" is not a duration like 30s or 5m\n",
			        command, arg);
			return -EINVAL;
		}
		return 1;
	case FRONTEND_OPT_LISTEN_APPROVAL:
	case FRONTEND_OPT_LISTEN_TOKENS:
	case FRONTEND_OPT_LISTEN_REQUEST:
		o->listen[c - FRONTEND_OPT_LISTEN_APPROVAL] = arg;
		return 1;
	case FRONTEND_OPT_EXECUTOR:
		o->executor = arg;
		return 1;
	case FRONTEND_OPT_LISTEN_PROXY:
		o->listen_proxy = arg;
		return 1;
	case FRONTEND_OPT_HOSTS:
		o->hosts_file = arg;
		return 1;
	case FRONTEND_OPT_AUDIT_RATE:
	case FRONTEND_OPT_AUDIT_BURST: {
		bool rate = c == FRONTEND_OPT_AUDIT_RATE;

		if (audit_limit_parse(arg, rate, rate ? &o->audit_rate : &o->audit_burst) < 0) {
			fprintf(stderr,
			        PROG
			        ": %s: --audit-%s takes a number of lines (1 to 1000000)%s, not "
			        "\"%s\"\n",
			        command, rate ? "rate" : "burst", rate ? " or off" : "", arg);
			return -EINVAL;
		}
		return 1;
	}
	case FRONTEND_OPT_AUDIT_DELAY: {
		uint64_t ms;

		if (config_parse_duration(arg, &ms) < 0 || ms > AUDIT_LOG_DELAY_MAX_MS) {
			fprintf(stderr,
			        PROG ": %s: --audit-delay: \"%s\" is not a duration from 0 to 60s "
			             "(like 20ms)\n",
			        command, arg);
			return -EINVAL;
		}
		o->audit_delay_ms = ms ? (int64_t)ms : -1;
		return 1;
	}
	case 'v':
		o->verbose = true;
		return 1;
	case 'q':
		say_set_quiet(true);
		return 1;
	}
	return 0;
}

int frontend_check_options(const struct frontend_options *o, const char *command)
{
	struct cl_error err = {""};

	if (o->project && config_project_name_check(o->project, &err) < 0) {
		fprintf(stderr, PROG ": %s: --project: %s\n", command, err.msg);
		return -EINVAL;
	}
	return 0;
}

int frontend_load_config(const struct frontend_options *o, bool lenient, struct cl_error *err,
                         struct config **ret_config, char **ret_dir)
{
	_cleanup_free_ char *dir = NULL, *home = config_files_home();
	struct config_load_options lo = {.lenient = lenient, .home = home};
	struct config *config = NULL;
	int r;

	r = config_files_dir(o->config_dir, getenv("XDG_CONFIG_HOME"), getenv("HOME"), &dir, err);
	if (r >= 0)
		r = config_load_dir(dir, o->project, &lo, &config, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < config->n_warnings; i++)
		fprintf(stderr, PROG ": warning: %s\n", config->warnings[i]);
	/* A relative --config-dir is taken from here, once: the directory is created, mounted
	 * read-only for the agent and written by decisions by that one absolute name. */
	if (dir[0] != '/') {
		char cwd[PATH_MAX];
		char *abs = NULL;

		if (!getcwd(cwd, sizeof(cwd)) || asprintf(&abs, "%s/%s", cwd, dir) < 0) {
			r = -errno;
			config_free(config);
			return cl_error_set(err, r, "--config-dir %s: cannot make it absolute: %s",
			                    dir, strerror(-r));
		}
		free(dir);
		dir = abs;
	}
	*ret_config = config;
	*ret_dir = TAKE_PTR(dir);
	return 0;
}

void frontend_ending_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
}

/* ---- audit ------------------------------------------------------------------------------- */

/* Every line written, to the dashboard's /logs streams. */
static void on_audit_line(void *userdata, const char *sandbox, const char *line, size_t len)
{
	struct frontend *fe = userdata;

	web_on_audit_line(fe->web, sandbox, line, len);
}

/* ---- web --------------------------------------------------------------------------------- */

static int web_sandbox_action(void *userdata, const char *name, const char *action)
{
	struct frontend *fe = userdata;

	if (!fe->owner->sandbox_action)
		return -ENOENT;
	return fe->owner->sandbox_action(fe->owner_userdata, name, action);
}

static unsigned web_sandboxes(void *userdata, struct web_sandbox_info *out, unsigned max)
{
	struct frontend *fe = userdata;

	if (!fe->owner->sandboxes)
		return 0;
	return fe->owner->sandboxes(fe->owner_userdata, out, max);
}

static void web_audit_sync(void *userdata)
{
	struct frontend *fe = userdata;

	audit_log_sync(fe->audit);
}

static const struct web_ops frontend_web_ops = {
        .sandbox_action = web_sandbox_action,
        .sandboxes = web_sandboxes,
        .audit_sync = web_audit_sync,
};

static void random_hex(char *out, size_t bytes)
{
	unsigned char raw[64];

	if (bytes > sizeof(raw) || getrandom(raw, bytes, 0) != (ssize_t)bytes) {
		out[0] = '\0';
		return;
	}
	for (size_t i = 0; i < bytes; i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
	explicit_bzero(raw, sizeof(raw));
}

static int setup_executor(struct frontend *fe, struct cl_error *err)
{
	struct cl_error why = {""};
	const char *secret = getenv("CLOISTER_EXECUTOR_SECRET");
	char host[256];
	int r;

	if (!fe->opt->executor)
		return executor_new_local(fe->loop, &fe->executor);
	/* A separate `cloister-supervisor executor`, e.g. outside a container. */
	if (cl_address_split(fe->opt->executor, NULL, host, sizeof(host), &fe->executor_port) < 0 ||
	    !secret || !*secret)
		return cl_error_set(err, -EINVAL,
		                    "--executor needs HOST:PORT and the secret in "
		                    "CLOISTER_EXECUTOR_SECRET");
	r = executor_new_remote(fe->loop, host, fe->executor_port, secret, &why, &fe->executor);
	/* What runs under us must not inherit the executor's secret. */
	unsetenv("CLOISTER_EXECUTOR_SECRET");
	if (r < 0)
		return cl_error_set(err, r, "--executor %s: %s", fe->opt->executor,
		                    why.msg[0] ? why.msg : strerror(-r));
	return 0;
}

/* Host commands: decided by the hostexec front end, run by the executor (none without web). */
static int setup_hostexec(struct frontend *fe, struct cl_error *err)
{
	struct hostexec_config hc = {
	        .config = fe->setup->config,
	        .executor = fe->executor,
	        .command_timeout_ms = fe->setup->config->request.timeout_ms,
	};

	int r = hostexec_new(fe->loop, fe->approvals, &hc, &fe->hostexec);

	return r < 0 ? cl_error_set(err, r, "hostexec: %s", strerror(-r)) : 0;
}

static int setup_web(struct frontend *fe, struct cl_error *err)
{
	struct web_config wc = {
	        .port_fallback = true,
	        .api_token = fe->api_token,
	        .api_nonce = fe->api_nonce,
	        .audit_path = audit_log_file(fe->audit),
	};
	const char *defaults[3] = {"127.0.0.1:9999", "127.0.0.1:9997", "127.0.0.1:9998"};
	struct web_listen *ls[3] = {&wc.approval, &wc.tokens, &wc.request};
	_cleanup_free_ char *dir = NULL;
	struct cl_error why = {""};
	struct api_info info = {0};
	bool fallback = false;
	char cwd[PATH_MAX];
	int r;

	/* request.listen / hostexec.listen in the config name the request server's address. */
	if (!fe->opt->listen[2] && fe->setup->config->request.listen.text)
		defaults[2] = fe->setup->config->request.listen.text;
	for (int i = 0; i < 3; i++) {
		const char *text = fe->opt->listen[i] ? fe->opt->listen[i] : defaults[i];

		ls[i]->disabled = !strcmp(text, "off");
		if (!ls[i]->disabled &&
		    cl_address_parse_local(text, NULL, &ls[i]->addr, &ls[i]->len) < 0)
			return cl_error_set(err, -EINVAL, "cannot listen on \"%s\": not ADDR:PORT",
			                    text);
	}
	/* The API token is the user's dashboard secret, shared by their supervisors (a dashboard
	 * that logged in keeps working across restarts); the directory is hidden from sandboxes. */
	r = api_info_dir_claim(&dir, &fallback);
	if (r >= 0 && fallback)
		say("note: /tmp/cloister-%u is another user's; the dashboard secret and the API "
		    "files are in %.*s instead",
		    (unsigned)geteuid(), (int)(strrchr(dir, '/') - dir), dir);
	if (r >= 0)
		r = api_info_secret(dir, fe->api_token, &why);
	if (r < 0)
		return cl_error_set(err, r, "the dashboard's secret: %s",
		                    why.msg[0] ? why.msg : strerror(-r));
	random_hex(fe->cloister_token, API_TOKEN_BYTES);
	random_hex(fe->api_nonce, API_TOKEN_BYTES);
	if (!fe->cloister_token[0] || !fe->api_nonce[0])
		return cl_error_set(err, -EIO, "no randomness for the cloister token");
	r = setup_executor(fe, err);
	if (r >= 0)
		r = setup_hostexec(fe, err);
	if (r >= 0)
		r = web_new(fe->loop, fe->approvals, fe->hostexec, fe->tokens, &wc,
		            &frontend_web_ops, fe, err, &fe->web);
	if (r < 0)
		return r;
	/* Our own identity for the request server (hostexec). */
	tokens_register(fe->tokens, fe->cloister_token, fe->setup->name, NULL,
	                getcwd(cwd, sizeof(cwd)) ? cwd : NULL);
	if (web_approval_port(fe->web)) {
		snprintf(info.url, sizeof(info.url), "http://127.0.0.1:%u",
		         web_approval_port(fe->web));
		/* The link logs the browser in (a cookie): only for the person at the terminal, or
		 * with -v. */
		if (fe->opt->verbose || isatty(STDERR_FILENO))
			say("dashboard at %s/?token=%s", info.url, fe->api_token);
	}
	if (web_tokens_port(fe->web))
		snprintf(info.tokens_url, sizeof(info.tokens_url), "http://127.0.0.1:%u",
		         web_tokens_port(fe->web));
	if (web_request_port(fe->web)) {
		char where[CL_ADDRESS_MAX];

		cl_address_set_port(&wc.request.addr, web_request_port(fe->web));
		cl_address_format(&wc.request.addr, where, sizeof(where));
		snprintf(info.request_url, sizeof(info.request_url), "http://%s", where);
	}
	snprintf(info.token, sizeof(info.token), "%s", fe->api_token);
	snprintf(info.name, sizeof(info.name), "%s", fe->setup->name);
	snprintf(info.nonce, sizeof(info.nonce), "%s", fe->api_nonce);
	info.pid = getpid();
	(void)api_info_start_time(info.pid, &info.start);
	r = api_info_write(dir, &info, &fe->api_info_path, &why);
	if (r < 0)
		say("warning: the CLI client will not find this supervisor: %s",
		    why.msg[0] ? why.msg : strerror(-r));
	explicit_bzero(&info, sizeof(info));
	return 0;
}

/* ---- life cycle -------------------------------------------------------------------------- */

int frontend_new(struct loop *loop, const struct frontend_options *o,
                 const struct frontend_setup *setup, const struct frontend_owner_ops *ops,
                 void *userdata, struct cl_error *err, struct frontend **ret_frontend)
{
	struct frontend *fe = calloc(1, sizeof(*fe));
	struct audit_log_options ao = {
	        .rate = o->audit_rate,
	        .burst = o->audit_burst,
	        .batch = o->audit_delay_ms >= 0,
	        .delay_ms = o->audit_delay_ms > 0 ? (uint64_t)o->audit_delay_ms : 0,
	};
	struct approvals_config ac = {0};
	struct queue_config *qc = &ac.queue;
	int r;

	if (!fe)
		return cl_error_set(err, -ENOMEM, "out of memory");
	fe->loop = loop;
	fe->opt = o;
	fe->setup = setup;
	fe->owner = ops;
	fe->owner_userdata = userdata;

	queue_config_init(qc);
	if (o->ask_timeout_ms)
		qc->timeout_ms[QUEUE_KIND_EXEC] = qc->timeout_ms[QUEUE_KIND_SHIM] =
		        qc->timeout_ms[QUEUE_KIND_FILE] = o->ask_timeout_ms;
	qc->fallback[QUEUE_KIND_EXEC] = qc->fallback[QUEUE_KIND_SHIM] = setup->exec_fallback;
	if (setup->config->request.timeout_ms)
		qc->timeout_ms[QUEUE_KIND_HOSTEXEC] = setup->config->request.timeout_ms;
	if (setup->config->proxy.approval_timeout_ms)
		qc->timeout_ms[QUEUE_KIND_DOMAIN] = setup->config->proxy.approval_timeout_ms;
	if (!setup->no_web)
		qc->orphan_grace_ms = WEB_ORPHAN_GRACE_MS;
	r = audit_log_new(loop, &ao, &fe->audit);
	if (r >= 0) {
		ac.audit = fe->audit;
		r = approvals_new(loop, &ac, &fe->approvals);
	}
	if (r >= 0)
		r = tokens_new(&fe->tokens);
	if (r < 0) {
		frontend_free(fe);
		return cl_error_set(err, r, "%s", strerror(-r));
	}
	audit_log_set_sink(fe->audit, on_audit_line, fe);
	r = setup->no_web ? setup_hostexec(fe, err) : setup_web(fe, err);
	if (r < 0) {
		frontend_free(fe);
		return r;
	}
	/* --ask web and serve: asks wait for the dashboard or the CLI client, who may come. */
	if (setup->always_attended && fe->web)
		approvals_set_approvers(fe->approvals, APPROVER_CLI, 1);
	*ret_frontend = fe;
	return 0;
}

void frontend_free(struct frontend *fe)
{
	if (!fe)
		return;
	/* Every count still pending, while the log and its streams are there; what comes later
	 * is written whole. */
	audit_log_flush(fe->audit);
	/* The API file before the listeners close: a file naming a port nobody holds would let
	 * whoever binds it next (a --net host agent) pass for this supervisor, a peer whose
	 * origin the user's other dashboards trust (peers.h). */
	api_info_remove(fe->api_info_path);
	/* Web first: its requests wait on hostexec's asks and runs, which wait on executor
	 * jobs. */
	web_free(fe->web);
	fe->web = NULL;
	hostexec_free(fe->hostexec);
	executor_free(fe->executor);
	audit_log_set_sink(fe->audit, NULL, NULL);
	tokens_free(fe->tokens);
	approvals_free(fe->approvals);
	free(fe->api_info_path);
	explicit_bzero(fe->api_token, sizeof(fe->api_token));
	explicit_bzero(fe->cloister_token, sizeof(fe->cloister_token));
	explicit_bzero(fe->api_nonce, sizeof(fe->api_nonce));
	audit_log_free(fe->audit);
	free(fe);
}

struct approvals *frontend_approvals(struct frontend *fe)
{
	return fe->approvals;
}

struct hostexec *frontend_hostexec(struct frontend *fe)
{
	return fe->hostexec;
}

struct tokens *frontend_tokens(struct frontend *fe)
{
	return fe->tokens;
}

struct web *frontend_web(struct frontend *fe)
{
	return fe->web;
}

const char *frontend_audit_dir(const struct frontend *fe)
{
	return audit_log_dir(fe->audit);
}

void frontend_audit_sync(struct frontend *fe)
{
	if (fe)
		audit_log_sync(fe->audit);
}

uint16_t frontend_executor_port(const struct frontend *fe)
{
	return fe->executor_port;
}

int frontend_egress_new(struct frontend *fe, struct egress_config *ec, struct cl_error *err,
                        struct egress **ret_egress)
{
	const struct frontend_options *o = fe->opt;
	int r;

	ec->config = fe->setup->config;
	ec->tokens = fe->tokens;
	ec->api_ports[0] = fe->web ? web_approval_port(fe->web) : 0;
	ec->api_ports[1] = fe->web ? web_tokens_port(fe->web) : 0;
	ec->decisions_dir = fe->setup->config_dir;
	ec->project = o->project;
	ec->connect_listen =
	        o->listen_proxy && strcmp(o->listen_proxy, "off") ? o->listen_proxy : NULL;
	ec->hosts_file = o->hosts_file;
	ec->verbose = o->verbose;
	r = egress_new(fe->loop, fe->approvals, ec, err, ret_egress);
	if (r < 0)
		return r;
	if (egress_connect_port(*ret_egress) && (o->verbose || isatty(STDERR_FILENO)))
		say("CONNECT proxy at 127.0.0.1:%u", egress_connect_port(*ret_egress));
	return 0;
}
