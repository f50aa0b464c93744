/* The hub: what every front end of the supervisor shares around the one approval queue.
 *
 * `run` (a sandbox of its own) and `serve` (a daemon for containers and shims) both need the
 * same things around the queue: draining its resolutions and events after every change, the
 * timer for its deadlines, the audit log, the metrics, the dashboard and local APIs (web.h)
 * with the token registry, the executor for host commands, the file the CLI client finds us
 * by, and the count of people who can answer. The hub owns those; the front ends own what
 * waits on an item (a seccomp notification, a shim call, a held connection) and get each
 * resolution of their kind through a resolver callback.
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
 * web_ops), and how it learns a domain decision of scope session, project or global (VALUE a
 * domain, or a pattern when IS_PATTERN) so that it applies at once. Project and global ones
 * are also written to the decisions files by the hub (decisions.h). Any may be NULL. */
struct hub_owner_ops {
	int (*sandbox_action)(void *userdata, const char *name, const char *action);
	unsigned (*sandboxes)(void *userdata, struct web_sandbox_info *out, unsigned max);
	void (*domain_rule)(void *userdata, const struct queue_item *item, bool allow,
	                    enum queue_scope scope, const char *value, bool is_pattern);
};

typedef void (*hub_resolve_fn)(void *userdata, const struct queue_resolution *res);
/* Called once at the end of every drain (e.g. to redraw a terminal prompt). */
typedef void (*hub_drained_fn)(void *userdata);
/* The owner's own timer work, e.g. checking that waiting processes are still alive. Called
 * with NOW_MS at every tick, before the queue expires what is due; and with NOW_MS =
 * UINT64_MAX only to ask when the owner next wants a tick. Returns that time (UINT64_MAX:
 * no need). */
typedef uint64_t (*hub_tick_fn)(void *userdata, uint64_t now_ms);

/* Creates the queue, opens the audit log (a failure is said and tolerated), starts the web
 * servers unless no_web, and writes the CLI's API file. Errors are said on stderr. */
int hub_new(struct loop *loop, const struct hub_options *opts, const struct hub_owner_ops *ops,
            void *userdata, struct hub **ret);
/* Cancels what the hub runs (executor jobs), stops the servers, removes the API file. */
void hub_free(struct hub *hub);

struct queue *hub_queue(struct hub *hub);
struct metrics *hub_metrics(struct hub *hub);
struct tokens *hub_tokens(struct hub *hub);
struct web *hub_web(struct hub *hub);
/* The audit log's directory, or NULL when there is none. */
const char *hub_audit_dir(const struct hub *hub);
/* This run's cloister token (registered for the request server), hex. */
const char *hub_cloister_token(const struct hub *hub);

void hub_set_resolver(struct hub *hub, enum queue_kind kind, hub_resolve_fn fn, void *userdata);
void hub_set_drained(struct hub *hub, hub_drained_fn fn, void *userdata);
void hub_set_tick(struct hub *hub, hub_tick_fn fn, void *userdata);

/* Apply what the last queue calls produced: resolutions to their resolvers, events to the
 * audit log, the metrics and the dashboard; then re-arm the timer. Call after every queue
 * change. */
void hub_drain(struct hub *hub);
/* Re-arm the timer after the owner's wishes changed (see hub_tick_fn). */
void hub_schedule(struct hub *hub);

/* Write one audit line (and show it on /logs). An automatic one (rec->automatic) is subject
 * to the per-sandbox rate: over it, it is counted and the count written later as one
 * "suppressed" record (when the limit lifts, or at hub_free). */
void hub_audit(struct hub *hub, const struct audit_record *rec);

/* People who can answer besides the dashboards (a terminal: 1). */
void hub_set_local_approvers(struct hub *hub, unsigned count);

#endif
