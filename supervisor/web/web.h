/* The local HTTP APIs of guardian-api.md, on the supervisor's loop:
 *
 *   approval server  127.0.0.1:9999  dashboard, /pending, /approve, /deny, domain decisions,
 *                                    /events (SSE), /logs (SSE of the audit log), /metrics,
 *                                    /status, /sandboxes/{name}/{pause,resume,kill}
 *   token API        127.0.0.1:9997  POST/GET /tokens, DELETE /tokens/{token}
 *   request server   127.0.0.1:9998  POST /request (hostexec), X-Cloister-Token
 *
 * Safety: a Host header that is not a loopback name gets 403 (DNS rebinding). Every request
 * but the dashboard's page and static files (reading too: /pending, /events, /logs carry the
 * agent's argv) needs the per-run API token, as `Authorization: Bearer …` or the dashboard's
 * session cookie, else 401; the request server needs a registered X-Cloister-Token before it
 * answers anything, else 401. A foreign Origin or a cross-site fetch gets 403 even with the
 * token (CSRF). Bodies are bounded and parsed strictly; errors are {"error": "..."} with a
 * 4xx.
 *
 * Decisions go through the approvals service (approvals.h); web observes its events (the
 * /events streams) and counts its open event streams as approvers. A POST /request is decided
 * and run by the hostexec front end (hostexec.h), whose running commands /running lists. */
#ifndef CLOISTER_WEB_H
#define CLOISTER_WEB_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/error.h"
#include "supervisor/approval/queue.h"

struct loop;
struct approvals;
struct hostexec;
struct config;
struct tokens;
struct web;

struct web_sandbox_info {
	const char *name;
	const char *project;
	const char *state; /* "running", "paused", "stopped" */
	int64_t pid;
	uint64_t started_ms; /* wall clock */
};

struct web_ops {
	/* ACTION is "pause", "resume" or "kill". 0, -ENOENT (no such sandbox), other -errno. */
	int (*sandbox_action)(void *userdata, const char *name, const char *action);
	/* Fill OUT with up to MAX sandboxes; returns how many. */
	unsigned (*sandboxes)(void *userdata, struct web_sandbox_info *out, unsigned max);
	/* Write the audit lines still in memory, before /logs reads the file (NULL: none). */
	void (*audit_sync)(void *userdata);
};

struct web_listen {
	struct sockaddr_storage addr; /* port 0: any free one (guardian-api.md's are 9999, 9997,
	                               * 9998) */
	socklen_t len;                /* 0: 127.0.0.1, any free port */
	bool disabled;
};

struct web_config {
	struct web_listen approval;
	struct web_listen tokens;
	struct web_listen request;
	bool port_fallback;     /* a taken port is replaced by any free one */
	const char *api_token;  /* required for state changes without an Origin */
	const char *api_nonce;  /* the API file's nonce, for GET /api-proof (api_info.h) */
	const char *audit_path; /* for /logs; NULL: no backlog */
	uint64_t heartbeat_ms;  /* SSE heartbeat; 0: 30 s */
};

/* Requests are decided and run by HOSTEXEC, which must outlive WEB. */
int web_new(struct loop *loop, struct approvals *approvals, struct hostexec *hostexec,
            struct tokens *tokens, const struct web_config *config, const struct web_ops *ops,
            void *userdata, struct cl_error *err, struct web **ret);
void web_free(struct web *web);

/* The actual ports (after a fallback); 0 when disabled. */
uint16_t web_approval_port(const struct web *web);
uint16_t web_tokens_port(const struct web *web);
uint16_t web_request_port(const struct web *web);
unsigned web_event_clients(const struct web *web);

/* One audit line (ending in "\n") for SANDBOX, for the /logs streams. */
void web_on_audit_line(struct web *web, const char *sandbox, const char *line, size_t len);

/* SANDBOX's branch and agent in /pending ("main", "claude"); NULL or "": unknown. A cloister
 * registered through POST /tokens with a worktree gets that worktree's branch by itself. WEB
 * may be NULL (nothing is done). */
int web_set_labels(struct web *web, const char *sandbox, const char *branch, const char *agent);

#endif
