/* Inside supervisor/web/ (web.h is the folder's public header): the state the three servers
 * share, and what their files use of each other.
 *
 *   web.c          life cycle, the Host / token / Origin rules, JSON bodies and answers
 *   web_approval.c the approval server: the dashboard, /pending, decisions, /status,
 *                  /metrics, /running, the kill switch
 *   web_stream.c   /events and /logs (SSE): queue events, audit lines, running commands
 *   web_tokens.c   the token API and the labels it sets
 *   web_request.c  the request server: POST /request through the hostexec front end */
#ifndef CLOISTER_WEB_INTERNAL_H
#define CLOISTER_WEB_INTERNAL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "supervisor/approval/queue.h"
#include "supervisor/web/http_server.h"
#include "supervisor/web/web.h"

struct hostexec_running;
struct labels;
struct stream_client;
struct request;

#define MAX_SANDBOXES_LISTED 64

enum stream_kind {
	STREAM_EVENTS,
	STREAM_LOGS,
};

struct web {
	struct loop *loop;
	struct approvals *approvals;
	const struct queue *queue; /* approvals_queue(): read only */
	struct hostexec *hostexec; /* requests and the running list */
	struct tokens *tokens;
	struct labels *labels; /* branch and agent per sandbox, for /pending */
	struct metrics *metrics;
	struct web_config config;
	const struct web_ops *ops;
	void *userdata;
	struct http_server *approval, *token_srv, *request_srv;
	struct stream_client *streams;
	unsigned n_events; /* STREAM_EVENTS clients */
	unsigned n_streams;
	struct request *requests;
	struct loop_timer *approvers_timer;
	bool observing;
	bool freeing;
	struct loop_timer *heartbeat;
	char origins[3][64];
	/* Ports of peer dashboards seen (peers.h): a peer's open tab keeps working after its
	 * supervisor ended, as long as nothing else listens on its port. */
	uint16_t peer_ports[16];
	unsigned n_peer_ports;
};

/* ---- web.c ------------------------------------------------------------------------------- */

/* Wall-clock minus loop milliseconds: the queue's times as wall-clock ones. */
int64_t web_wall_offset_ms(void);
void web_format_rfc3339(int64_t wall_ms, char buf[static 32]);
/* Answer OBJ (taken) as JSON with STATUS; {"error": MESSAGE}. */
void web_respond_json(struct http_exchange *ex, unsigned status, cJSON *obj);
void web_respond_error(struct http_exchange *ex, unsigned status, const char *message);
/* The DNS-rebinding, token and CSRF rules (web.h): true when the request may go on,
 * otherwise it has been answered. */
bool web_request_allowed(struct web *web, struct http_exchange *ex, bool dashboard, bool public);
/* OPTIONS: the CORS preflight of a peer dashboard's POST (peers.h), else 403. */
void web_preflight(struct web *web, struct http_exchange *ex);
/* GET /?token=…: the dashboard's login link; true when answered. */
bool web_dashboard_login(struct web *web, struct http_exchange *ex);
/* The body as a JSON object ({} for an empty one when EMPTY_OK); NULL after answering 400. */
cJSON *web_body_object(struct http_exchange *ex, bool empty_ok);
/* "/approve/ID" → "ID" when PATH starts with PREFIX and the rest is one segment. */
const char *web_path_arg(const char *path, const char *prefix);

/* ---- web_approval.c ------------------------------------------------------------------------ */

void web_on_approval(void *userdata, struct http_exchange *ex);
/* A command's kind (everything but a domain). */
bool web_is_command(enum queue_kind kind);
/* The JSON object of a queue item as /pending shows it (guardian-api.md fields plus kind,
 * pid, exe, cwd, args, interpreter, expires). WALL_OFFSET_MS turns the queue's monotonic
 * times into wall-clock ones. A command's branch and agent come from LABELS (NULL: ""). */
cJSON *web_item_json(const struct queue_item *item, int64_t wall_offset_ms,
                     const struct labels *labels);

/* ---- web_stream.c ---------------------------------------------------------------------------- */

/* An event stream (/events) or the audit log's (/logs, FILTER a cloister's name or NULL);
 * NULL after answering. */
struct stream_client *web_stream_open(struct web *web, struct http_exchange *ex,
                                      enum stream_kind kind);
void web_stream_set_filter(struct stream_client *c, const char *filter);
/* The tail of the audit log, to a new /logs client. */
void web_send_log_backlog(struct web *web, struct stream_client *c);
/* Every queue event to /events (an observer of the approvals service), every running
 * command's start and end (hostexec's listener). */
void web_on_queue_event(void *userdata, const struct queue_event *ev);
void web_on_running_event(void *userdata, const char *event, const struct hostexec_running *r,
                          const char *status);
/* The heartbeat timer's callback; every stream ended (web_free). */
int web_on_heartbeat(struct loop *loop, void *userdata);
void web_streams_free(struct web *web);

/* ---- web_tokens.c ---------------------------------------------------------------------------- */

void web_on_tokens(void *userdata, struct http_exchange *ex);

/* ---- web_request.c --------------------------------------------------------------------------- */

void web_on_request(void *userdata, struct http_exchange *ex);
/* Every request answered no more: asks withdrawn, commands stopped (web_free). */
void web_requests_free(struct web *web);

#endif
