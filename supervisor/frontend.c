/* The queue's surroundings shared by `run` and `serve`; see hub.h. */
#include "supervisor/frontend.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "protocol/address.h"
#include "supervisor/web/api_info.h"
#include "supervisor/approval/approvals.h"
#include "supervisor/approval/audit_log.h"
#include "supervisor/policy/config.h"
#include "supervisor/policy/decisions.h"
#include "supervisor/policy/domain.h"
#include "supervisor/hostexec/executor_client.h"
#include "supervisor/hostexec/hostexec.h"
#include "base/loop.h"
#include "base/say.h"
#include "supervisor/approval/metrics.h"
#include "supervisor/approval/tokens.h"

#define API_TOKEN_BYTES 32
/* A dashboard reload must not hand its asks to the fallback. */
#define WEB_ORPHAN_GRACE_MS 10000

struct hub {
	struct loop *loop;
	struct hub_options opt;
	const struct hub_owner_ops *owner;
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
	uint16_t executor_port; /* --executor's; 0: in this process */
};

/* ---- audit ------------------------------------------------------------------------------- */

/* Every line written, to the dashboard's /logs streams. */
static void on_audit_line(void *userdata, const char *sandbox, const char *line, size_t len)
{
	struct hub *hub = userdata;

	web_on_audit_line(hub->web, sandbox, line, len);
}

void hub_audit(struct hub *hub, const struct audit_record *rec)
{
	approvals_audit(hub->approvals, rec);
}

/* ---- web --------------------------------------------------------------------------------- */

static int web_sandbox_action(void *userdata, const char *name, const char *action)
{
	struct hub *hub = userdata;

	if (!hub->owner->sandbox_action)
		return -ENOENT;
	return hub->owner->sandbox_action(hub->owner_userdata, name, action);
}

static unsigned web_sandboxes(void *userdata, struct web_sandbox_info *out, unsigned max)
{
	struct hub *hub = userdata;

	if (!hub->owner->sandboxes)
		return 0;
	return hub->owner->sandboxes(hub->owner_userdata, out, max);
}

static const struct web_ops hub_web_ops = {
        .sandbox_action = web_sandbox_action,
        .sandboxes = web_sandboxes,
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

static int setup_executor(struct hub *hub)
{
	struct cl_error err = {""};
	const char *secret = getenv("CLOISTER_EXECUTOR_SECRET");
	char host[256];
	int r;

	if (!hub->opt.executor)
		return executor_new_local(hub->loop, &hub->executor);
	/* A separate `cloister-supervisor executor`, e.g. outside a container. */
	if (cl_address_split(hub->opt.executor, NULL, host, sizeof(host), &hub->executor_port) <
	            0 ||
	    !secret || !*secret) {
		fprintf(stderr, PROG ": --executor needs HOST:PORT and the secret in "
		                     "CLOISTER_EXECUTOR_SECRET\n");
		return -EINVAL;
	}
	r = executor_new_remote(hub->loop, host, hub->executor_port, secret, &err, &hub->executor);
	/* What runs under us must not inherit the executor's secret. */
	unsetenv("CLOISTER_EXECUTOR_SECRET");
	if (r < 0)
		fprintf(stderr, PROG ": --executor %s: %s\n", hub->opt.executor,
		        err.msg[0] ? err.msg : strerror(-r));
	return r;
}

/* Host commands: decided by the hostexec front end, run by the executor (none without web). */
static int setup_hostexec(struct hub *hub)
{
	struct hostexec_config hc = {
	        .config = hub->opt.config,
	        .executor = hub->executor,
	        .command_timeout_ms = hub->opt.config->request.timeout_ms,
	};

	return hostexec_new(hub->loop, hub->approvals, &hc, &hub->hostexec);
}

static int setup_web(struct hub *hub)
{
	struct web_config wc = {
	        .port_fallback = true,
	        .api_token = hub->api_token,
	        .audit_path = audit_log_file(hub->audit),
	};
	const char *defaults[3] = {"127.0.0.1:9999", "127.0.0.1:9997", "127.0.0.1:9998"};
	struct web_listen *ls[3] = {&wc.approval, &wc.tokens, &wc.request};
	_cleanup_free_ char *dir = NULL;
	struct cl_error err = {""};
	struct api_info info = {0};
	char cwd[PATH_MAX];
	int r;

	/* request.listen / hostexec.listen in the config name the request server's address. */
	if (!hub->opt.listen[2] && hub->opt.config->request.listen.text)
		defaults[2] = hub->opt.config->request.listen.text;
	for (int i = 0; i < 3; i++) {
		const char *text = hub->opt.listen[i] ? hub->opt.listen[i] : defaults[i];

		ls[i]->disabled = !strcmp(text, "off");
		if (!ls[i]->disabled &&
		    cl_address_parse_local(text, NULL, &ls[i]->addr, &ls[i]->len) < 0) {
			fprintf(stderr, PROG ": cannot listen on \"%s\": not ADDR:PORT\n", text);
			return -EINVAL;
		}
	}
	/* The API token is the user's dashboard secret, shared by their supervisors (a dashboard
	 * that logged in keeps working across restarts); the directory is hidden from sandboxes. */
	r = api_info_dir(&dir);
	if (r >= 0)
		r = api_info_secret(dir, hub->api_token, &err);
	if (r < 0) {
		fprintf(stderr, PROG ": the dashboard's secret: %s\n",
		        err.msg[0] ? err.msg : strerror(-r));
		return r;
	}
	random_hex(hub->cloister_token, API_TOKEN_BYTES);
	if (!hub->cloister_token[0])
		return -EIO;
	r = setup_executor(hub);
	if (r >= 0)
		r = setup_hostexec(hub);
	if (r < 0)
		return r;
	r = web_new(hub->loop, hub->approvals, hub->hostexec, hub->tokens, &wc, &hub_web_ops, hub,
	            &err, &hub->web);
	if (r < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return r;
	}
	/* Our own identity for the request server (hostexec). */
	tokens_register(hub->tokens, hub->cloister_token, hub->opt.name, NULL,
	                getcwd(cwd, sizeof(cwd)) ? cwd : NULL);
	if (web_approval_port(hub->web)) {
		snprintf(info.url, sizeof(info.url), "http://127.0.0.1:%u",
		         web_approval_port(hub->web));
		/* The link logs the browser in (a cookie): only for the person at the terminal, or
		 * with -v. */
		if (hub->opt.verbose || isatty(STDERR_FILENO))
			say("dashboard at %s/?token=%s", info.url, hub->api_token);
	}
	if (web_tokens_port(hub->web))
		snprintf(info.tokens_url, sizeof(info.tokens_url), "http://127.0.0.1:%u",
		         web_tokens_port(hub->web));
	if (web_request_port(hub->web)) {
		char where[CL_ADDRESS_MAX];

		cl_address_set_port(&wc.request.addr, web_request_port(hub->web));
		cl_address_format(&wc.request.addr, where, sizeof(where));
		snprintf(info.request_url, sizeof(info.request_url), "http://%s", where);
	}
	snprintf(info.token, sizeof(info.token), "%s", hub->api_token);
	snprintf(info.name, sizeof(info.name), "%s", hub->opt.name);
	info.pid = getpid();
	r = api_info_write(dir, &info, &hub->api_info_path, &err);
	if (r < 0)
		say("warning: the CLI client will not find this supervisor: %s",
		    err.msg[0] ? err.msg : strerror(-r));
	explicit_bzero(&info, sizeof(info));
	return 0;
}

/* ---- life cycle -------------------------------------------------------------------------- */

int hub_new(struct loop *loop, const struct hub_options *opts, const struct hub_owner_ops *ops,
            void *userdata, struct hub **ret)
{
	struct hub *hub = calloc(1, sizeof(*hub));
	struct audit_log_options ao = {.rate = opts->audit_rate, .burst = opts->audit_burst};
	struct approvals_config ac = {0};
	struct queue_config *qc = &ac.queue;
	int r;

	if (!hub)
		return -ENOMEM;
	hub->loop = loop;
	hub->opt = *opts;
	hub->owner = ops;
	hub->owner_userdata = userdata;

	queue_config_init(qc);
	if (opts->exec_timeout_ms)
		qc->timeout_ms[QUEUE_KIND_EXEC] = qc->timeout_ms[QUEUE_KIND_SHIM] =
		        opts->exec_timeout_ms;
	qc->fallback[QUEUE_KIND_EXEC] = qc->fallback[QUEUE_KIND_SHIM] = opts->exec_fallback;
	if (opts->config->request.timeout_ms)
		qc->timeout_ms[QUEUE_KIND_HOSTEXEC] = opts->config->request.timeout_ms;
	if (opts->config->proxy.approval_timeout_ms)
		qc->timeout_ms[QUEUE_KIND_DOMAIN] = opts->config->proxy.approval_timeout_ms;
	if (!opts->no_web)
		qc->orphan_grace_ms = WEB_ORPHAN_GRACE_MS;
	r = audit_log_new(loop, &ao, &hub->audit);
	if (r >= 0) {
		ac.audit = hub->audit;
		r = approvals_new(loop, &ac, &hub->approvals);
	}
	if (r >= 0)
		r = tokens_new(&hub->tokens);
	if (r < 0) {
		hub_free(hub);
		return r;
	}
	audit_log_set_sink(hub->audit, on_audit_line, hub);
	r = opts->no_web ? setup_hostexec(hub) : setup_web(hub);
	if (r < 0) {
		hub_free(hub);
		return r;
	}
	/* --ask web and serve: asks wait for the dashboard or the CLI client, who may come. */
	if (opts->always_attended && hub->web)
		approvals_set_approvers(hub->approvals, APPROVER_CLI, 1);
	*ret = hub;
	return 0;
}

void hub_free(struct hub *hub)
{
	if (!hub)
		return;
	/* Every count still pending, while the log and its streams are there; what comes later
	 * is written whole. */
	audit_log_flush(hub->audit);
	/* Web first: its requests wait on hostexec's asks and runs, which wait on executor
	 * jobs. */
	web_free(hub->web);
	hub->web = NULL;
	hostexec_free(hub->hostexec);
	executor_free(hub->executor);
	audit_log_set_sink(hub->audit, NULL, NULL);
	tokens_free(hub->tokens);
	approvals_free(hub->approvals);
	api_info_remove(hub->api_info_path);
	free(hub->api_info_path);
	explicit_bzero(hub->api_token, sizeof(hub->api_token));
	explicit_bzero(hub->cloister_token, sizeof(hub->cloister_token));
	audit_log_free(hub->audit);
	free(hub);
}

struct approvals *hub_approvals(struct hub *hub)
{
	return hub->approvals;
}

struct hostexec *hub_hostexec(struct hub *hub)
{
	return hub->hostexec;
}

struct tokens *hub_tokens(struct hub *hub)
{
	return hub->tokens;
}

struct web *hub_web(struct hub *hub)
{
	return hub->web;
}

const char *hub_audit_dir(const struct hub *hub)
{
	return audit_log_dir(hub->audit);
}

uint16_t hub_executor_port(const struct hub *hub)
{
	return hub->executor_port;
}

const char *hub_cloister_token(const struct hub *hub)
{
	return hub->cloister_token;
}
