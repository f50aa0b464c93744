/* The hub: what `run` (a sandbox of its own) and `serve` (a daemon for containers and shims)
 * both set up around the approvals service (approvals.h): the audit log, the dashboard and
 * local APIs (web.h) with the token registry, the executor for host commands and the file the
 * CLI client finds us by. The sources of asks (exec guards, egress, shim calls) register with
 * the service themselves.
 *
 * Single-threaded, on the caller's loop. */
#ifndef CLOISTER_HUB_H
#define CLOISTER_HUB_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "supervisor/approval/audit.h"
#include "supervisor/approval/queue.h"
#include "supervisor/web/web.h"

struct loop;
struct config;
struct hub;
struct tokens;
struct metrics;

struct hub_options {
	const struct config *config; /* timeouts, hostexec patterns, request.listen */
	const char *name;            /* shown to the CLI client (a sandbox or "serve") */
	const char *config_dir;      /* where project/global domain decisions are written */
	const char *project;         /* the project's decisions file; NULL: none */
	uint64_t exec_timeout_ms;    /* 0: the queue's default */
	enum queue_fallback exec_fallback;
	bool no_web;           /* no dashboard, no local APIs */
	const char *listen[3]; /* approval, tokens, request "ADDR:PORT"; NULL: defaults */
	const char *executor;  /* "HOST:PORT" of an executor process; NULL: in-process */
	bool always_attended;  /* --ask web / serve: asks wait for the dashboard or CLI */
	/* The audit log's automatic lines (audit_limit.h), per sandbox: lines a second (0: the
	 * default, < 0: no limit) and at once (0: the default). */
	int64_t audit_rate;
	int64_t audit_burst;
	bool verbose;
};

/* What the owner answers for the dashboard's sandbox view and kill switch (see struct
 * web_ops). Either may be NULL. */
struct hub_owner_ops {
	int (*sandbox_action)(void *userdata, const char *name, const char *action);
	unsigned (*sandboxes)(void *userdata, struct web_sandbox_info *out, unsigned max);
};

/* Opens the audit log (a failure is said and tolerated), starts the approvals service, the
 * web servers unless no_web, and writes the CLI's API file. Errors are said on stderr. */
int hub_new(struct loop *loop, const struct hub_options *opts, const struct hub_owner_ops *ops,
            void *userdata, struct hub **ret);
/* Cancels what the hub runs (executor jobs), stops the servers, removes the API file.
 * Unregister every source of asks first. */
void hub_free(struct hub *hub);

struct approvals *hub_approvals(struct hub *hub);
struct hostexec *hub_hostexec(struct hub *hub);
struct tokens *hub_tokens(struct hub *hub);
struct web *hub_web(struct hub *hub);
/* The audit log's directory, or NULL when there is none. */
const char *hub_audit_dir(const struct hub *hub);
/* The port of --executor HOST:PORT (0: the executor runs in this process). */
uint16_t hub_executor_port(const struct hub *hub);
/* This run's cloister token (registered for the request server), hex. */
const char *hub_cloister_token(const struct hub *hub);

/* One audit line that is not a verdict (the backstop's events). */
void hub_audit(struct hub *hub, const struct audit_record *rec);

#endif
