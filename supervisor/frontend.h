/* What `run` (a sandbox of its own) and `serve` (a daemon for containers and shims) share:
 *
 *   - the options both take (FRONTEND_LONGOPTS), parsed and checked in one place;
 *   - the config: the directory found, the files loaded and merged, warnings said;
 *   - the services around the agents they supervise: the audit log (audit_log.h), the
 *     approvals service (approvals.h), the token registry, the hostexec front end
 *     (hostexec.h) with its executor, the dashboard and local APIs (web.h) and the file the
 *     CLI client finds them by (api_info.h);
 *   - egress (egress.h) with what it takes from all of these.
 *
 * Each command adds what it alone has: run a sandbox, its exec guard and terminal; serve the
 * shim listener and containers. The sources of asks (exec guards, egress, hostexec) register
 * with the approvals service themselves; the front end forwards nothing.
 *
 * Single-threaded, on the caller's loop. Errors come back in a struct cl_error, as the
 * command prints them after PROG ": ". */
#ifndef CLOISTER_FRONTEND_H
#define CLOISTER_FRONTEND_H

#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "supervisor/approval/queue.h"
#include "supervisor/web/web.h"

struct loop;
struct config;
struct frontend;
struct approvals;
struct audit_record;
struct egress;
struct egress_config;
struct hostexec;
struct tokens;

/* ---- the options run and serve share ------------------------------------------------------- */

struct frontend_options {
	const char *config_dir;   /* --config-dir; NULL: $XDG_CONFIG_HOME/cloister */
	const char *project;      /* --project */
	const char *name;         /* --name: the sandbox's, or the daemon's */
	uint64_t ask_timeout_ms;  /* --ask-timeout for commands; 0: the queue's (5 min) */
	const char *listen[3];    /* --listen-approval, -tokens, -request; NULL: defaults */
	const char *executor;     /* --executor HOST:PORT; NULL: commands run in this process */
	const char *listen_proxy; /* --listen-proxy ADDR:PORT; NULL or "off": no CONNECT proxy */
	const char *hosts_file;   /* --hosts */
	/* --audit-rate, --audit-burst (audit_log.h): 0 the default, < 0 no limit. */
	int64_t audit_rate;
	int64_t audit_burst;
	/* --audit-delay: how long automatic audit lines may wait in memory (audit_log.h); 0 the
	 * default, < 0 none (each written at once). */
	int64_t audit_delay_ms;
	bool verbose; /* -v; -q is say_set_quiet() */
};

enum {
	FRONTEND_OPT_CONFIG_DIR = 0x1000, /* apart from the commands' own codes */
	FRONTEND_OPT_PROJECT,
	FRONTEND_OPT_NAME,
	FRONTEND_OPT_ASK_TIMEOUT,
	FRONTEND_OPT_LISTEN_APPROVAL,
	FRONTEND_OPT_LISTEN_TOKENS,
	FRONTEND_OPT_LISTEN_REQUEST,
	FRONTEND_OPT_EXECUTOR,
	FRONTEND_OPT_LISTEN_PROXY,
	FRONTEND_OPT_HOSTS,
	FRONTEND_OPT_AUDIT_RATE,
	FRONTEND_OPT_AUDIT_BURST,
	FRONTEND_OPT_AUDIT_DELAY,
};

/* The entries of a struct option array for the options above, -v and -q. */
#define FRONTEND_LONGOPTS                                                                   \
	{"config-dir", required_argument, NULL, FRONTEND_OPT_CONFIG_DIR},                   \
	        {"project", required_argument, NULL, FRONTEND_OPT_PROJECT},                 \
	        {"name", required_argument, NULL, FRONTEND_OPT_NAME},                       \
	        {"ask-timeout", required_argument, NULL, FRONTEND_OPT_ASK_TIMEOUT},         \
	        {"listen-approval", required_argument, NULL, FRONTEND_OPT_LISTEN_APPROVAL}, \
	        {"listen-tokens", required_argument, NULL, FRONTEND_OPT_LISTEN_TOKENS},     \
	        {"listen-request", required_argument, NULL, FRONTEND_OPT_LISTEN_REQUEST},   \
	        {"executor", required_argument, NULL, FRONTEND_OPT_EXECUTOR},               \
	        {"listen-proxy", required_argument, NULL, FRONTEND_OPT_LISTEN_PROXY},       \
	        {"hosts", required_argument, NULL, FRONTEND_OPT_HOSTS},                     \
	        {"audit-rate", required_argument, NULL, FRONTEND_OPT_AUDIT_RATE},           \
	        {"audit-burst", required_argument, NULL, FRONTEND_OPT_AUDIT_BURST},         \
	        {"audit-delay", required_argument, NULL, FRONTEND_OPT_AUDIT_DELAY},         \
	        {"verbose", no_argument, NULL, 'v'},                                        \
	{                                                                                   \
		"quiet", no_argument, NULL, 'q'                                             \
	}

/* Take option C (with ARG) of COMMAND ("run", "serve") when it is one of the above: 1 taken,
 * 0 not one of them, -EINVAL after saying why. */
int frontend_parse_option(struct frontend_options *o, const char *command, int c, const char *arg);
/* Once every option is parsed: -EINVAL after saying why (a project name that cannot be a
 * file name). */
int frontend_check_options(const struct frontend_options *o, const char *command);

/* The effective config of O's config directory and project (lenient: LENIENT), its warnings
 * said; the directory, absolute (it is mounted read-only for the agent and written by
 * decisions by that name), in *RET_DIR. -errno with ERR. */
int frontend_load_config(const struct frontend_options *o, bool lenient, struct cl_error *err,
                         struct config **ret_config, char **ret_dir);

/* INT, TERM and HUP: what ends both commands. */
void frontend_ending_signals(sigset_t *set);

/* ---- the services --------------------------------------------------------------------------- */

/* What differs between the commands. */
struct frontend_setup {
	const struct config *config; /* timeouts, hostexec patterns, request.listen */
	const char *name;            /* the sandbox's or the daemon's: the CLI client shows it */
	const char *config_dir;      /* where project and global decisions are written */
	enum queue_fallback exec_fallback;
	bool no_web;          /* no dashboard, no local APIs */
	bool always_attended; /* --ask web and serve: asks wait for the dashboard or the CLI */
};

/* What the owner answers for the dashboard's sandbox view and kill switch (see struct
 * web_ops). Either may be NULL. */
struct frontend_owner_ops {
	int (*sandbox_action)(void *userdata, const char *name, const char *action);
	unsigned (*sandboxes)(void *userdata, struct web_sandbox_info *out, unsigned max);
};

/* Opens the audit log (a failure is said and tolerated), starts the approvals service, the
 * hostexec front end, the web servers unless no_web, and writes the CLI's API file. O and S
 * must outlive the front end. -errno with ERR. */
int frontend_new(struct loop *loop, const struct frontend_options *o,
                 const struct frontend_setup *s, const struct frontend_owner_ops *ops,
                 void *userdata, struct cl_error *err, struct frontend **ret_frontend);
/* Stops the servers and what hostexec runs, removes the API file. Free every source of asks
 * (egress, exec guards, shim calls) first. NULL is fine. */
void frontend_free(struct frontend *fe);

struct approvals *frontend_approvals(struct frontend *fe);
struct hostexec *frontend_hostexec(struct frontend *fe);
struct tokens *frontend_tokens(struct frontend *fe);
/* NULL with no_web. */
struct web *frontend_web(struct frontend *fe);
/* The audit log's directory, or NULL when there is none. */
const char *frontend_audit_dir(const struct frontend *fe);
/* Write the automatic audit lines still in memory: an ending signal came, and a SIGKILL may
 * follow it (audit_log_sync). NULL is fine. */
void frontend_audit_sync(struct frontend *fe);
/* The port of --executor HOST:PORT (0: the executor runs in this process). */
uint16_t frontend_executor_port(const struct frontend *fe);

/* Egress on the front end: EC's command-specific part (who, project_config, real_ip) is the
 * caller's; the front end fills in the config, tokens, the API ports never dialled, the
 * decisions, the CONNECT proxy and the hosts file, and says where the CONNECT proxy is.
 * -errno with ERR. */
int frontend_egress_new(struct frontend *fe, struct egress_config *ec, struct cl_error *err,
                        struct egress **ret_egress);

#endif
