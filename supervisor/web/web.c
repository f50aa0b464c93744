/* The approval server, the token API and the request server; see web.h. */
#include "supervisor/web/web.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "protocol/json_strict.h"
#include "protocol/quote.h"
#include "supervisor/approval/approvals.h"
#include "supervisor/hostexec/hostexec.h"
#include "supervisor/policy/config.h"
#include "supervisor/policy/decisions.h"
#include "supervisor/policy/domain.h"
#include "supervisor/web/http_server.h"
#include "base/loop.h"
#include "supervisor/approval/metrics.h"
#include "supervisor/policy/policy.h"
#include "supervisor/approval/labels.h"
#include "supervisor/approval/tokens.h"
#include "supervisor/approval/worktree.h"
#include "supervisor/web/web_assets.h"

#define DEFAULT_HEARTBEAT_MS 30000
#define JSON_MAX_DEPTH       8
#define JSON_MAX_VALUES      20000
#define MAX_EVENT_CLIENTS    256
#define LOG_BACKLOG_BYTES    (64 * 1024)
#define MAX_SANDBOXES_LISTED 64
#define RECENT_LISTED        10

enum stream_kind {
	STREAM_EVENTS,
	STREAM_LOGS,
};

struct stream_client {
	struct web *web;
	struct http_exchange *ex;
	enum stream_kind kind;
	char *filter; /* /logs?cloister= */
	struct stream_client *prev, *next;
};

/* A POST /request: decided by the hostexec front end, waiting for a person, then for its
 * command. */
struct request {
	struct web *web;
	struct http_exchange *ex; /* NULL once the client is gone */
	char *sandbox;
	char **argv;
	size_t argc;
	char *workdir;
	struct hostexec_ask *ask; /* while a person is asked */
	struct hostexec_run *run; /* while its command runs */
	char status[16];          /* "auto_approved", "approved" */
	char pattern[512];
	struct request *prev, *next;
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
};

/* ---- small helpers ----------------------------------------------------------------------- */

static int64_t wall_offset_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - (int64_t)loop_now_ms();
}

static void format_rfc3339(int64_t wall_ms, char buf[static 32])
{
	time_t t = (time_t)(wall_ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void respond_json(struct http_exchange *ex, unsigned status, cJSON *obj)
{
	_cleanup_free_ char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;

	cJSON_Delete(obj);
	if (!text) {
		static const char oom[] = "{\"error\":\"out of memory\"}\n";

		http_exchange_respond(ex, 500, "application/json", oom, sizeof(oom) - 1);
		return;
	}
	size_t len = strlen(text);
	char *withnl = realloc(text, len + 2);

	if (withnl) {
		text = withnl;
		text[len++] = '\n';
		text[len] = '\0';
	}
	http_exchange_add_header(ex, "Cache-Control", "no-store");
	http_exchange_add_header(ex, "X-Content-Type-Options", "nosniff");
	http_exchange_respond(ex, status, "application/json", text, len);
}

static void respond_error(struct http_exchange *ex, unsigned status, const char *message)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "error", message);
	respond_json(ex, status, o);
}

/* Host names a loopback address ("127.0.0.1", "localhost", "[::1]", with any port). */
static bool host_is_loopback(const char *host)
{
	const char *end;
	size_t len;

	if (!host)
		return false;
	if (host[0] == '[') {
		end = strchr(host, ']');
		if (!end)
			return false;
		if ((size_t)(end - host - 1) != 3 || strncmp(host + 1, "::1", 3))
			return false;
		end++;
	} else {
		end = strchr(host, ':');
		if (!end)
			end = host + strlen(host);
		len = (size_t)(end - host);
		if (!((len == 9 && !strncasecmp(host, "localhost", 9)) ||
		      (len == 9 && !strncmp(host, "127.0.0.1", 9))))
			return false;
	}
	if (*end == '\0')
		return true;
	if (*end != ':' || !end[1])
		return false;
	for (const char *p = end + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return strlen(end + 1) <= 5;
}

static bool is_state_changing(const char *method)
{
	return strcmp(method, "GET") && strcmp(method, "HEAD") && strcmp(method, "OPTIONS");
}

#define SESSION_COOKIE "cloister_token"

static bool bearer_ok(const struct web *web, const struct http_exchange *ex)
{
	const char *auth = http_exchange_header(ex, "Authorization");

	if (!auth || !web->config.api_token || strncasecmp(auth, "Bearer ", 7))
		return false;
	return tokens_equal(auth + 7, web->config.api_token);
}

/* The dashboard's session: the cookie its login link set (HttpOnly, SameSite=Strict). */
static bool cookie_ok(const struct web *web, const struct http_exchange *ex)
{
	const char *c = http_exchange_header(ex, "Cookie");
	const size_t n = strlen(SESSION_COOKIE);

	while (c && web->config.api_token) {
		char value[TOKEN_MAX_LEN + 1];
		size_t len;

		c += strspn(c, " ;");
		if (!strncmp(c, SESSION_COOKIE, n) && c[n] == '=') {
			len = strcspn(c + n + 1, ";");
			if (len > TOKEN_MAX_LEN)
				return false;
			memcpy(value, c + n + 1, len);
			value[len] = '\0';
			return tokens_equal(value, web->config.api_token);
		}
		c = strchr(c, ';');
	}
	return false;
}

/* Missing or wrong credentials: 401, with the challenge RFC 9110 asks for. */
static void respond_unauthorized(struct http_exchange *ex, const char *message)
{
	http_exchange_add_header(ex, "WWW-Authenticate", "Bearer realm=\"cloister\"");
	respond_error(ex, 401, message);
}

/* The DNS-rebinding and CSRF rules of web.h. Every request but the PUBLIC ones (the login page
 * and the dashboard's static files) needs the API token, as a Bearer header (the CLI) or the
 * dashboard's session cookie (DASHBOARD): what the API answers is the agent's whole argv
 * stream, not for every local user; without it, 401. An Origin header proves nothing, any
 * local program can send one: an Origin that is not the dashboard's, or a cross-site fetch,
 * is refused (403) even with the token. Returns true when the request may go on; otherwise it
 * has been answered. */
static bool request_allowed(struct web *web, struct http_exchange *ex, bool dashboard, bool public)
{
	const char *origin = http_exchange_header(ex, "Origin");
	const char *site = http_exchange_header(ex, "Sec-Fetch-Site");

	if (!host_is_loopback(http_exchange_header(ex, "Host"))) {
		respond_error(ex, 403, "host not allowed");
		return false;
	}
	/* The first of two would decide; refuse the ambiguity. */
	if (http_exchange_header_count(ex, "Host") > 1 ||
	    http_exchange_header_count(ex, "Origin") > 1 ||
	    http_exchange_header_count(ex, "Cookie") > 1) {
		respond_error(ex, 400, "repeated Host, Origin or Cookie header");
		return false;
	}
	if (origin) {
		bool ok = false;

		for (size_t i = 0; dashboard && i < 3; i++)
			ok |= !strcmp(origin, web->origins[i]);
		if (!ok) {
			respond_error(ex, 403, "cross-origin request refused");
			return false;
		}
	}
	if (site && strcmp(site, "same-origin") && strcmp(site, "none")) {
		respond_error(ex, 403, "cross-site request refused");
		return false;
	}
	if ((!public || is_state_changing(http_exchange_method(ex))) && !bearer_ok(web, ex) &&
	    !(dashboard && cookie_ok(web, ex))) {
		respond_unauthorized(ex, "missing or wrong API token (Authorization: Bearer …, or "
		                         "open the dashboard through the login link the supervisor "
		                         "prints)");
		return false;
	}
	return true;
}

/* GET /?token=…: the dashboard's login link. A right token becomes the session cookie and a
 * redirect to the bare page (the token leaves the address bar and the history). */
static bool dashboard_login(struct web *web, struct http_exchange *ex)
{
	const char *token = http_exchange_query(ex, "token");
	char cookie[TOKEN_MAX_LEN + 96];

	if (!token)
		return false;
	if (!web->config.api_token || !tokens_equal(token, web->config.api_token)) {
		respond_unauthorized(ex, "wrong dashboard token");
		return true;
	}
	snprintf(cookie, sizeof(cookie), SESSION_COOKIE "=%s; Path=/; HttpOnly; SameSite=Strict",
	         web->config.api_token);
	http_exchange_add_header(ex, "Set-Cookie", cookie);
	http_exchange_add_header(ex, "Location", "/");
	http_exchange_add_header(ex, "Cache-Control", "no-store");
	http_exchange_add_header(ex, "Referrer-Policy", "no-referrer");
	explicit_bzero(cookie, sizeof(cookie));
	http_exchange_respond(ex, 303, "text/plain", "", 0);
	return true;
}

/* Parse the body as a JSON object. An empty body gives an empty object when EMPTY_OK.
 * Returns NULL after answering 400. */
static cJSON *body_object(struct http_exchange *ex, bool empty_ok)
{
	size_t len;
	const char *body = http_exchange_body(ex, &len);
	struct cl_error err = {0};
	cJSON *root = NULL;
	size_t i = 0;

	while (i < len && (body[i] == ' ' || body[i] == '\n' || body[i] == '\r' || body[i] == '\t'))
		i++;
	if (i == len) {
		if (empty_ok)
			return cJSON_CreateObject();
		respond_error(ex, 400, "request body required");
		return NULL;
	}
	if (cl_json_parse_strict(body, len, JSON_MAX_DEPTH, JSON_MAX_VALUES, &err, &root) < 0) {
		char msg[sizeof(err.msg) + 32];

		snprintf(msg, sizeof(msg), "invalid JSON body: %s", err.msg);
		respond_error(ex, 400, msg);
		return NULL;
	}
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		respond_error(ex, 400, "invalid JSON body: expected an object");
		return NULL;
	}
	return root;
}

/* "/approve/ID" → "ID" when PATH starts with PREFIX and the rest is one segment. */
static const char *path_arg(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(path, prefix, n) || !path[n] || strchr(path + n, '/'))
		return NULL;
	return path + n;
}

/* ---- JSON of queue items ----------------------------------------------------------------- */

static bool is_command(enum queue_kind kind)
{
	return kind != QUEUE_KIND_DOMAIN;
}

cJSON *web_item_json(const struct queue_item *item, int64_t wall_offset,
                     const struct labels *labels)
{
	cJSON *o = cJSON_CreateObject();
	const char *branch, *agent;
	char ts[32];

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "id", item->id);
	cJSON_AddStringToObject(o, "cloister", item->sandbox);
	cJSON_AddStringToObject(o, "project", item->project ? item->project : "");
	format_rfc3339((int64_t)item->created_ms + wall_offset, ts);
	if (is_command(item->kind)) {
		labels_get(labels, item->sandbox, &branch, &agent);
		cJSON_AddStringToObject(o, "branch", branch);
		cJSON_AddStringToObject(o, "agent", agent);
		cJSON_AddStringToObject(o, "cmd", item->summary);
		cJSON_AddStringToObject(o, "timestamp", ts);
	} else {
		cJSON_AddStringToObject(o, "domain", item->summary);
		cJSON_AddStringToObject(o, "timestamp", ts);
	}
	if (item->deadline_ms != UINT64_MAX) {
		format_rfc3339((int64_t)item->deadline_ms + wall_offset, ts);
		cJSON_AddStringToObject(o, "expires", ts);
		cJSON_AddNumberToObject(o, "expires_ms",
		                        (double)((int64_t)item->deadline_ms + wall_offset));
	}
	cJSON_AddNumberToObject(o, "created_ms", (double)((int64_t)item->created_ms + wall_offset));
	cJSON_AddStringToObject(o, "type", is_command(item->kind) ? "command" : "domain");
	cJSON_AddStringToObject(o, "kind", queue_kind_to_string(item->kind));
	if (item->pid >= 0)
		cJSON_AddNumberToObject(o, "pid", (double)item->pid);
	if (item->uid >= 0)
		cJSON_AddNumberToObject(o, "uid", (double)item->uid);
	if (item->exe)
		cJSON_AddStringToObject(o, "exe", item->exe);
	if (item->cwd)
		cJSON_AddStringToObject(o, "cwd", item->cwd);
	if (item->interpreter)
		cJSON_AddStringToObject(o, "interpreter", item->interpreter);
	if (item->argc) {
		cJSON *args = cJSON_AddArrayToObject(o, "args");

		for (size_t i = 0; args && i < item->argc; i++)
			cJSON_AddItemToArray(args, cJSON_CreateString(item->argv[i]));
	}
	if (item->n_waiters > 1)
		cJSON_AddNumberToObject(o, "waiters", (double)item->n_waiters);
	return o;
}

static cJSON *decided_json(const struct web *web, const struct queue_item *item,
                           int64_t wall_offset)
{
	cJSON *o = web_item_json(item, wall_offset, web->labels);
	char ts[32];

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "status", queue_state_to_string(item->state));
	cJSON_AddStringToObject(o, "decided_by", item->decided_by);
	cJSON_AddStringToObject(o, "reason", item->reason ? item->reason : "");
	cJSON_AddStringToObject(o, "scope", queue_scope_to_string(item->scope));
	format_rfc3339((int64_t)item->decided_ms + wall_offset, ts);
	cJSON_AddStringToObject(o, "decided_at", ts);
	return o;
}

/* ---- event streams ----------------------------------------------------------------------- */

/* Open event streams are people who can answer (approvals.h). */
static int on_approvers_timer(struct loop *loop, void *userdata)
{
	struct web *web = userdata;

	web->approvers_timer = NULL;
	approvals_set_approvers(web->approvals, APPROVER_DASHBOARD, web->n_events);
	return 0;
}

static void stream_drop(struct stream_client *c, bool end)
{
	struct web *web = c->web;

	if (c->prev)
		c->prev->next = c->next;
	else
		web->streams = c->next;
	if (c->next)
		c->next->prev = c->prev;
	web->n_streams--;
	if (c->kind == STREAM_EVENTS)
		web->n_events--;
	if (end && c->ex) {
		http_exchange_set_gone(c->ex, NULL, NULL);
		http_stream_end(c->ex);
	}
	/* Not from here: a drop can happen while broadcast() walks the list, and a change of
	 * approvers may decide asks, which broadcasts again. */
	if (c->kind == STREAM_EVENTS && !web->approvers_timer && !web->freeing &&
	    loop_add_timer(web->loop, 0, on_approvers_timer, web, &web->approvers_timer) < 0)
		web->approvers_timer = NULL; /* counted again when the next stream comes or goes */
	free(c->filter);
	free(c);
}

static void on_stream_gone(void *userdata, struct http_exchange *ex)
{
	struct stream_client *c = userdata;

	c->ex = NULL;
	stream_drop(c, false);
}

/* Write to one client; a client that does not keep up is dropped. Returns false when dropped. */
static bool stream_send(struct stream_client *c, const char *data, size_t len)
{
	if (http_stream_write(c->ex, data, len) < 0) {
		stream_drop(c, true);
		return false;
	}
	return true;
}

/* An SSE message: every line of DATA gets its own "data:" field. */
static char *sse_format(const char *event, const char *data, size_t len, size_t *ret_len)
{
	size_t lines = 1, cap, n = 0;
	char *out;

	for (size_t i = 0; i < len; i++)
		lines += data[i] == '\n';
	cap = strlen(event) + 16 + len + lines * 8 + 4;
	out = malloc(cap);
	if (!out)
		return NULL;
	n += (size_t)snprintf(out, cap, "event: %s\n", event);
	memcpy(out + n, "data: ", 6);
	n += 6;
	for (size_t i = 0; i < len; i++) {
		if (data[i] == '\n') {
			if (i + 1 == len)
				break; /* a trailing newline ends the last line */
			memcpy(out + n, "\ndata: ", 7);
			n += 7;
		} else if (data[i] != '\r') {
			out[n++] = data[i];
		}
	}
	out[n++] = '\n';
	out[n++] = '\n';
	out[n] = '\0';
	*ret_len = n;
	return out;
}

static void broadcast(struct web *web, enum stream_kind kind, const char *filter, const char *event,
                      const char *data, size_t len)
{
	size_t mlen;
	_cleanup_free_ char *msg = sse_format(event, data, len, &mlen);

	if (!msg)
		return;
	for (struct stream_client *c = web->streams, *next; c; c = next) {
		next = c->next;
		if (c->kind != kind)
			continue;
		if (kind == STREAM_LOGS && c->filter && (!filter || strcmp(c->filter, filter)))
			continue;
		stream_send(c, msg, mlen);
	}
}

static int on_heartbeat(struct loop *loop, void *userdata)
{
	struct web *web = userdata;
	static const char beat[] = "event: heartbeat\ndata: \n\n";

	web->heartbeat = NULL;
	for (struct stream_client *c = web->streams, *next; c; c = next) {
		next = c->next;
		stream_send(c, beat, sizeof(beat) - 1);
	}
	loop_add_timer(loop, loop_now_ms() + web->config.heartbeat_ms, on_heartbeat, web,
	               &web->heartbeat);
	return 0;
}

static struct stream_client *stream_open(struct web *web, struct http_exchange *ex,
                                         enum stream_kind kind)
{
	struct stream_client *c;

	if (web->n_streams >= MAX_EVENT_CLIENTS) {
		respond_error(ex, 503, "too many event-stream clients");
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		respond_error(ex, 500, "out of memory");
		return NULL;
	}
	http_exchange_add_header(ex, "Cache-Control", "no-cache");
	http_exchange_add_header(ex, "X-Accel-Buffering", "no");
	if (http_exchange_stream_start(ex, "text/event-stream") < 0) {
		free(c);
		respond_error(ex, 500, "cannot start the stream");
		return NULL;
	}
	c->web = web;
	c->ex = ex;
	c->kind = kind;
	c->next = web->streams;
	if (c->next)
		c->next->prev = c;
	web->streams = c;
	web->n_streams++;
	http_exchange_set_gone(ex, on_stream_gone, c);
	/* Counted before the first write, which may drop it (stream_drop uncounts it). */
	if (kind == STREAM_EVENTS)
		web->n_events++;
	/* Tell EventSource how soon to reconnect, and flush the headers now. */
	if (!stream_send(c, "retry: 2000\n\n", 13))
		return NULL;
	if (kind == STREAM_EVENTS)
		approvals_set_approvers(web->approvals, APPROVER_DASHBOARD, web->n_events);
	return c;
}

/* Every queue event, to the /events streams. */
static void on_queue_event(void *userdata, const struct queue_event *ev)
{
	struct web *web = userdata;
	int64_t off = wall_offset_ms();
	cJSON *o;
	_cleanup_free_ char *text = NULL;

	if (!web->n_events)
		return;
	if (ev->type == QUEUE_EVENT_ADDED) {
		if (ev->state != QUEUE_STATE_PENDING)
			return; /* decided at once by the fallback: never pending */
		o = web_item_json(ev->item, off, web->labels);
	} else {
		o = cJSON_CreateObject();
		if (o) {
			cJSON_AddStringToObject(o, "id", ev->item->id);
			cJSON_AddStringToObject(o, "cloister", ev->item->sandbox);
			cJSON_AddStringToObject(o, "project",
			                        ev->item->project ? ev->item->project : "");
			cJSON_AddStringToObject(o, "type",
			                        is_command(ev->item->kind) ? "command" : "domain");
			cJSON_AddStringToObject(o, "kind", queue_kind_to_string(ev->item->kind));
			cJSON_AddStringToObject(o, "status", queue_state_to_string(ev->state));
			cJSON_AddStringToObject(o, "summary", ev->item->summary);
			cJSON_AddStringToObject(o, "decided_by", ev->item->decided_by);
			cJSON_AddStringToObject(o, "reason",
			                        ev->item->reason ? ev->item->reason : "");
			cJSON_AddStringToObject(o, "scope", queue_scope_to_string(ev->item->scope));
		}
	}
	if (!o)
		return;
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (text)
		broadcast(web, STREAM_EVENTS, NULL,
		          ev->type == QUEUE_EVENT_ADDED ? "request-added" : "request-removed", text,
		          strlen(text));
}

void web_on_audit_line(struct web *web, const char *sandbox, const char *line, size_t len)
{
	if (!web || web->n_streams == web->n_events)
		return;
	broadcast(web, STREAM_LOGS, sandbox, "log", line, len);
}

/* The tail of the audit log for a new /logs client, filtered by cloister. */
static void send_log_backlog(struct web *web, struct stream_client *c)
{
	_cleanup_close_ int fd = -EBADF;
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	off_t start;
	ssize_t n;
	char *line, *end;

	if (!web->config.audit_path)
		return;
	fd = open(web->config.audit_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	start = st.st_size > LOG_BACKLOG_BYTES ? st.st_size - LOG_BACKLOG_BYTES : 0;
	buf = malloc(LOG_BACKLOG_BYTES + 1);
	if (!buf)
		return;
	n = pread(fd, buf, LOG_BACKLOG_BYTES, start);
	if (n <= 0)
		return;
	buf[n] = '\0';
	line = buf;
	if (start > 0) { /* skip the partial first line */
		line = strchr(buf, '\n');
		if (!line)
			return;
		line++;
	}
	for (; *line; line = end + 1) {
		end = strchr(line, '\n');
		if (!end)
			break; /* a line still being written */
		if (c->filter) {
			cJSON *o = cJSON_ParseWithLength(line, (size_t)(end - line));
			const cJSON *sb = cJSON_GetObjectItemCaseSensitive(o, "sandbox");
			bool keep = cJSON_IsString(sb) && !strcmp(sb->valuestring, c->filter);

			cJSON_Delete(o);
			if (!keep)
				continue;
		}
		size_t mlen;
		_cleanup_free_ char *msg = sse_format("log", line, (size_t)(end - line), &mlen);

		if (msg && !stream_send(c, msg, mlen))
			return;
	}
}

/* ---- running commands ------------------------------------------------------------------ */

/* A listed command started or ended: the dashboards hear it. */
static void on_running_event(void *userdata, const char *event, const struct hostexec_running *r,
                             const char *status)
{
	struct web *web = userdata;
	cJSON *o = cJSON_CreateObject();
	_cleanup_free_ char *text = NULL;

	if (!o)
		return;
	cJSON_AddStringToObject(o, "id", r->id);
	cJSON_AddStringToObject(o, "kind", r->kind);
	cJSON_AddStringToObject(o, "cloister", r->sandbox);
	cJSON_AddStringToObject(o, "cmd", r->summary);
	if (status)
		cJSON_AddStringToObject(o, "status", status);
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (text)
		broadcast(web, STREAM_EVENTS, NULL, event, text, strlen(text));
}

static void handle_running(struct web *web, struct http_exchange *ex)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "running");

	for (const struct hostexec_running *r = hostexec_running_first(web->hostexec); r;
	     r = hostexec_running_next(r)) {
		cJSON *it = cJSON_CreateObject();
		char ts[32];

		cJSON_AddStringToObject(it, "id", r->id);
		cJSON_AddStringToObject(it, "kind", r->kind);
		cJSON_AddStringToObject(it, "cloister", r->sandbox);
		cJSON_AddStringToObject(it, "cmd", r->summary);
		format_rfc3339(r->started_wall_ms, ts);
		cJSON_AddStringToObject(it, "started", ts);
		cJSON_AddItemToArray(arr, it);
	}
	respond_json(ex, 200, o);
}

static void handle_cancel(struct web *web, struct http_exchange *ex, const char *id)
{
	char idcopy[QUEUE_ID_LEN + 1];

	snprintf(idcopy, sizeof(idcopy), "%s", id);
	if (strlen(id) > QUEUE_ID_LEN || hostexec_running_cancel(web->hostexec, idcopy) < 0) {
		respond_error(ex, 404, "no running command with that id");
		return;
	}
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "status", "cancelled");
	cJSON_AddStringToObject(o, "id", idcopy);
	respond_json(ex, 200, o);
}

/* ---- approval server --------------------------------------------------------------------- */

static void handle_pending(struct web *web, struct http_exchange *ex, bool domains)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "requests");
	int64_t off = wall_offset_ms();

	for (const struct queue_item *it = queue_first(web->queue); it;
	     it = queue_next(web->queue, it)) {
		if (is_command(it->kind) == domains)
			continue;
		cJSON_AddItemToArray(arr, web_item_json(it, off, web->labels));
	}
	respond_json(ex, 200, o);
}

static void handle_decisions(struct web *web, struct http_exchange *ex)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "decisions");
	int64_t off = wall_offset_ms();
	const struct queue_item *it;

	for (size_t i = 0; i < RECENT_LISTED && (it = queue_recent(web->queue, i)); i++)
		cJSON_AddItemToArray(arr, decided_json(web, it, off));
	respond_json(ex, 200, o);
}

static cJSON *sandboxes_json(struct web *web)
{
	struct web_sandbox_info info[MAX_SANDBOXES_LISTED];
	unsigned n = web->ops->sandboxes
	                     ? web->ops->sandboxes(web->userdata, info, MAX_SANDBOXES_LISTED)
	                     : 0;
	cJSON *arr = cJSON_CreateArray();

	for (unsigned i = 0; arr && i < n; i++) {
		cJSON *s = cJSON_CreateObject();
		char ts[32];

		cJSON_AddStringToObject(s, "name", info[i].name);
		cJSON_AddStringToObject(s, "project", info[i].project ? info[i].project : "");
		cJSON_AddStringToObject(s, "state", info[i].state);
		if (info[i].pid > 0)
			cJSON_AddNumberToObject(s, "pid", (double)info[i].pid);
		format_rfc3339((int64_t)info[i].started_ms, ts);
		cJSON_AddStringToObject(s, "started", ts);
		cJSON_AddNumberToObject(s, "pending",
		                        (double)queue_count_sandbox(web->queue, info[i].name));
		cJSON_AddItemToArray(arr, s);
	}
	return arr;
}

static void handle_status(struct web *web, struct http_exchange *ex)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "status", "ok");
	cJSON_AddNumberToObject(o, "pending", (double)queue_count(web->queue));
	cJSON_AddNumberToObject(o, "approvers", queue_approvers(web->queue));
	cJSON_AddNumberToObject(o, "event_clients", web->n_events);
	cJSON_AddItemToObject(o, "sandboxes", sandboxes_json(web));
	respond_json(ex, 200, o);
}

static void handle_metrics(struct web *web, struct http_exchange *ex)
{
	struct metrics_gauges g = {0};
	_cleanup_free_ char *text = NULL;
	struct web_sandbox_info info[MAX_SANDBOXES_LISTED];
	int n;

	for (const struct queue_item *it = queue_first(web->queue); it;
	     it = queue_next(web->queue, it))
		if ((size_t)it->kind < 4)
			g.pending[it->kind]++;
	g.approvers = queue_approvers(web->queue);
	g.sse_clients = web->n_events;
	g.sandboxes = web->ops->sandboxes
	                      ? web->ops->sandboxes(web->userdata, info, MAX_SANDBOXES_LISTED)
	                      : 0;
	n = metrics_render(web->metrics, &g, &text);
	if (n < 0) {
		respond_error(ex, 500, "out of memory");
		return;
	}
	http_exchange_respond(ex, 200, "text/plain; version=0.0.4; charset=utf-8", text, (size_t)n);
}

static void handle_decide(struct web *web, struct http_exchange *ex, const char *id, bool allow)
{
	const struct queue_item *it = queue_lookup(web->queue, id);
	_cleanup_cjson_ cJSON *body = NULL;
	const cJSON *reason;
	char idcopy[QUEUE_ID_LEN + 1];
	struct approval_decision d;
	int r;

	if (!it || !is_command(it->kind)) {
		respond_error(ex, 404, "request not found");
		return;
	}
	body = body_object(ex, true);
	if (!body)
		return;
	reason = cJSON_GetObjectItemCaseSensitive(body, "reason");
	if (reason && !cJSON_IsString(reason) && !cJSON_IsNull(reason)) {
		respond_error(ex, 400, "reason must be a string");
		return;
	}
	snprintf(idcopy, sizeof(idcopy), "%s", id);
	d = (struct approval_decision){
	        .allow = allow,
	        .scope = QUEUE_SCOPE_ONCE,
	        .by = http_exchange_header(ex, "Origin") ? "web" : "cli",
	        .reason = cJSON_IsString(reason) && *reason->valuestring
	                          ? reason->valuestring
	                          : (allow ? NULL : "Command denied by user"),
	};
	r = approvals_decide(web->approvals, idcopy, &d, NULL);
	if (r == -EALREADY) {
		cJSON *o = cJSON_CreateObject();

		it = queue_lookup(web->queue, idcopy);
		cJSON_AddStringToObject(o, "error", "request already decided");
		cJSON_AddStringToObject(o, "id", idcopy);
		if (it)
			cJSON_AddStringToObject(o, "status", queue_state_to_string(it->state));
		respond_json(ex, 409, o);
		return;
	}
	if (r < 0) {
		respond_error(ex, r == -ENOENT ? 404 : 500,
		              r == -ENOENT ? "request not found" : strerror(-r));
		return;
	}
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "status", allow ? "approved" : "denied");
	cJSON_AddStringToObject(o, "id", idcopy);
	respond_json(ex, 200, o);
}

/* api.example.com → *.example.com; NULL for an address, a name that is not a DNS name, or
 * fewer than three labels (no "*.com"), as decisions_wildcard() decides. */
static char *wildcard_of(const char *domain)
{
	struct domain_spec spec, wild;
	char buf[DOMAIN_HOST_MAX + 8];

	if (domain_spec_parse(domain, false, &spec, NULL) < 0 ||
	    decisions_wildcard(&spec, &wild, NULL) < 0)
		return NULL;
	wild.port = 0;
	if (domain_spec_format(&wild, buf, sizeof(buf)) < 0)
		return NULL;
	return strdup(buf);
}

/* The host of "host:port" / "[v6]:port" / "host". */
static char *domain_host(const char *summary)
{
	const char *colon;

	if (summary[0] == '[') {
		const char *end = strchr(summary, ']');

		return end ? strndup(summary + 1, (size_t)(end - summary - 1)) : strdup(summary);
	}
	colon = strrchr(summary, ':');
	if (colon && strchr(summary, ':') == colon)
		return strndup(summary, (size_t)(colon - summary));
	return strdup(summary);
}

static void handle_decide_domain(struct web *web, struct http_exchange *ex, const char *id,
                                 bool allow)
{
	const struct queue_item *it = queue_find(web->queue, id);
	_cleanup_cjson_ cJSON *body = NULL;
	const cJSON *scope_j, *wild_j;
	enum queue_scope scope;
	_cleanup_free_ char *host = NULL, *pattern = NULL;
	struct cl_error err = {0};
	bool persisted_err = false;
	char idcopy[QUEUE_ID_LEN + 1];
	struct approval_decision d;
	int r;

	if (!it) {
		const struct queue_item *old = queue_lookup(web->queue, id);

		if (old && old->kind == QUEUE_KIND_DOMAIN)
			respond_error(ex, 409, "request already decided");
		else
			respond_error(ex, 404, "domain request not found");
		return;
	}
	if (it->kind != QUEUE_KIND_DOMAIN) {
		respond_error(ex, 404, "domain request not found");
		return;
	}
	body = body_object(ex, false);
	if (!body)
		return;
	scope_j = cJSON_GetObjectItemCaseSensitive(body, "scope");
	wild_j = cJSON_GetObjectItemCaseSensitive(body, "wildcard");
	if (!cJSON_IsString(scope_j) || queue_scope_from_string(scope_j->valuestring, &scope) < 0) {
		respond_error(ex, 400, "scope must be one of once, session, project, global");
		return;
	}
	if (wild_j && !cJSON_IsBool(wild_j)) {
		respond_error(ex, 400, "wildcard must be true or false");
		return;
	}
	host = domain_host(it->summary);
	if (!host) {
		respond_error(ex, 500, "out of memory");
		return;
	}
	if (cJSON_IsTrue(wild_j)) {
		pattern = wildcard_of(host);
		if (!pattern) {
			respond_error(ex, 400,
			              "no wildcard for a domain of fewer than three labels");
			return;
		}
	}
	/* The source that asked (egress) keeps session decisions in memory and writes project
	 * and global ones; a wildcard's pattern is known only here, so it goes with them. */
	d = (struct approval_decision){
	        .allow = allow,
	        .scope = scope,
	        .by = http_exchange_header(ex, "Origin") ? "web" : "cli",
	        .reason = allow ? NULL : "Domain denied by user",
	        .value = scope == QUEUE_SCOPE_ONCE ? NULL
	                 : pattern                 ? pattern
	                                           : host,
	        .is_pattern = pattern != NULL,
	};
	snprintf(idcopy, sizeof(idcopy), "%s", id);
	r = approvals_decide(web->approvals, idcopy, &d, &err);
	persisted_err = r == 1;
	if (r < 0) {
		respond_error(ex, r == -ENOENT ? 404 : 409,
		              r == -ENOENT ? "domain request not found"
		                           : "request already decided");
		return;
	}
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "status", allow ? "approved" : "denied");
	cJSON_AddStringToObject(o, "scope", queue_scope_to_string(scope));
	if (pattern)
		cJSON_AddStringToObject(o, "pattern", pattern);
	if (persisted_err)
		cJSON_AddStringToObject(o, "persistence_error", err.msg);
	respond_json(ex, 200, o);
}

static void handle_sandbox_action(struct web *web, struct http_exchange *ex, const char *rest)
{
	char name[256];
	const char *slash = strchr(rest, '/');
	const char *action;
	int r;

	if (!slash || (size_t)(slash - rest) >= sizeof(name) || slash == rest) {
		respond_error(ex, 404, "not found");
		return;
	}
	memcpy(name, rest, (size_t)(slash - rest));
	name[slash - rest] = '\0';
	action = slash + 1;
	if (strcmp(action, "pause") && strcmp(action, "resume") && strcmp(action, "kill")) {
		respond_error(ex, 404, "unknown action: use pause, resume or kill");
		return;
	}
	if (!web->ops->sandbox_action) {
		respond_error(ex, 404, "sandbox not found");
		return;
	}
	r = web->ops->sandbox_action(web->userdata, name, action);
	if (r == -ENOENT) {
		respond_error(ex, 404, "sandbox not found");
		return;
	}
	if (r < 0) {
		char msg[300];

		snprintf(msg, sizeof(msg), "cannot %s %s: %s", action, name, strerror(-r));
		respond_error(ex, 500, msg);
		return;
	}
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "status",
	                        !strcmp(action, "pause")    ? "paused"
	                        : !strcmp(action, "resume") ? "running"
	                                                    : "killed");
	cJSON_AddStringToObject(o, "name", name);
	respond_json(ex, 200, o);
}

static const struct web_asset *find_asset(const char *path)
{
	for (size_t i = 0; i < web_assets_count; i++)
		if (!strcmp(web_assets[i].path, path))
			return &web_assets[i];
	return NULL;
}

static bool serve_asset(struct http_exchange *ex, const char *path)
{
	const struct web_asset *a = find_asset(path);

	if (!a)
		return false;
	http_exchange_add_header(ex, "Cache-Control", "no-cache");
	http_exchange_add_header(ex, "X-Content-Type-Options", "nosniff");
	http_exchange_add_header(ex, "X-Frame-Options", "DENY");
	http_exchange_add_header(ex, "Referrer-Policy", "no-referrer");
	http_exchange_add_header(ex, "Content-Security-Policy",
	                         "default-src 'self'; connect-src 'self'; img-src 'self' data:; "
	                         "style-src 'self'; script-src 'self'; frame-ancestors 'none'; "
	                         "base-uri 'none'; form-action 'none'");
	http_exchange_respond(ex, 200, a->content_type, a->data, a->len);
	return true;
}

static void on_approval(void *userdata, struct http_exchange *ex)
{
	struct web *web = userdata;
	const char *method = http_exchange_method(ex);
	const char *path = http_exchange_path(ex);
	bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
	bool post = !strcmp(method, "POST");
	const char *arg;

	/* Only the page itself (the login link included) and its files go without the token:
	 * they say nothing about any sandbox. */
	if (!request_allowed(web, ex, true, get && (!strcmp(path, "/") || find_asset(path))))
		return;
	if (get) {
		if (!strcmp(path, "/pending"))
			handle_pending(web, ex, false);
		else if (!strcmp(path, "/pending-domains"))
			handle_pending(web, ex, true);
		else if (!strcmp(path, "/decisions"))
			handle_decisions(web, ex);
		else if (!strcmp(path, "/running"))
			handle_running(web, ex);
		else if (!strcmp(path, "/status"))
			handle_status(web, ex);
		else if (!strcmp(path, "/sandboxes")) {
			cJSON *o = cJSON_CreateObject();

			cJSON_AddItemToObject(o, "sandboxes", sandboxes_json(web));
			respond_json(ex, 200, o);
		} else if (!strcmp(path, "/metrics"))
			handle_metrics(web, ex);
		else if (!strcmp(path, "/events"))
			stream_open(web, ex, STREAM_EVENTS);
		else if (!strcmp(path, "/logs")) {
			const char *name = http_exchange_query(ex, "cloister");
			struct stream_client *c;

			if (name && strlen(name) > 255) {
				respond_error(ex, 400, "cloister name too long");
				return;
			}
			c = stream_open(web, ex, STREAM_LOGS);
			if (c && name && *name)
				c->filter = strdup(name);
			if (c)
				send_log_backlog(web, c);
		} else if (!strcmp(path, "/") && dashboard_login(web, ex)) {
			/* answered */
		} else if (!serve_asset(ex, path))
			respond_error(ex, 404, "not found");
		return;
	}
	if (post) {
		if ((arg = path_arg(path, "/approve/")))
			handle_decide(web, ex, arg, true);
		else if ((arg = path_arg(path, "/deny/")))
			handle_decide(web, ex, arg, false);
		else if ((arg = path_arg(path, "/approve-domain/")))
			handle_decide_domain(web, ex, arg, true);
		else if ((arg = path_arg(path, "/deny-domain/")))
			handle_decide_domain(web, ex, arg, false);
		else if (!strncmp(path, "/sandboxes/", 11))
			handle_sandbox_action(web, ex, path + 11);
		else if ((arg = path_arg(path, "/cancel/")))
			handle_cancel(web, ex, arg);
		else
			respond_error(ex, 404, "not found");
		return;
	}
	http_exchange_add_header(ex, "Allow", "GET, POST");
	respond_error(ex, 405, "method not allowed");
}

/* ---- token API --------------------------------------------------------------------------- */

/* A registered cloister's branch, for /pending: its worktree's checked-out branch now (it is
 * not followed afterwards). Its agent label is kept. */
static void label_worktree(struct web *web, const char *cloister, const char *worktree)
{
	char branch[LABELS_VALUE_MAX];
	const char *old_branch, *agent;

	if (worktree_git_branch(worktree, branch, sizeof(branch)) < 0)
		return;
	labels_get(web->labels, cloister, &old_branch, &agent);
	_cleanup_free_ char *keep = strdup(agent);

	if (keep)
		(void)labels_set(web->labels, cloister, branch, keep);
}

int web_set_labels(struct web *web, const char *sandbox, const char *branch, const char *agent)
{
	if (!web)
		return 0; /* no web server: nobody to tell */
	return labels_set(web->labels, sandbox, branch, agent);
}

static const char *opt_string(const cJSON *o, const char *key, bool *bad)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!v || cJSON_IsNull(v))
		return NULL;
	if (!cJSON_IsString(v)) {
		*bad = true;
		return NULL;
	}
	return v->valuestring;
}

static void on_tokens(void *userdata, struct http_exchange *ex)
{
	struct web *web = userdata;
	const char *method = http_exchange_method(ex);
	const char *path = http_exchange_path(ex);
	const char *arg;

	/* No dashboard here; listing tokens reveals secrets, so even GET needs the API token. */
	if (!request_allowed(web, ex, false, false))
		return;
	if (!strcmp(path, "/tokens") && !strcmp(method, "POST")) {
		_cleanup_cjson_ cJSON *body = body_object(ex, false);
		bool bad = false;
		const char *token, *cloister, *project, *worktree;
		int r;

		if (!body)
			return;
		token = opt_string(body, "token", &bad);
		cloister = opt_string(body, "cloister", &bad);
		project = opt_string(body, "project", &bad);
		worktree = opt_string(body, "worktree", &bad);
		if (bad || !token || !cloister) {
			respond_error(ex, 400, "token and cloister are required strings");
			return;
		}
		r = tokens_register(web->tokens, token, cloister, project, worktree);
		if (r >= 0 && worktree)
			label_worktree(web, cloister, worktree);
		if (r == -EINVAL) {
			respond_error(
			        ex, 400,
			        "invalid token or field (token: 16-256 printable characters)");
			return;
		}
		if (r < 0) {
			respond_error(ex, r == -ENOSPC ? 507 : 500,
			              r == -ENOSPC ? "too many tokens" : strerror(-r));
			return;
		}
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "status", "registered");
		respond_json(ex, 201, o);
		return;
	}
	if (!strcmp(path, "/tokens") && !strcmp(method, "GET")) {
		cJSON *o = cJSON_CreateObject();
		cJSON *arr = cJSON_AddArrayToObject(o, "tokens");

		for (size_t i = 0; i < tokens_count(web->tokens); i++) {
			const struct token_entry *e = tokens_at(web->tokens, i);
			cJSON *t = cJSON_CreateObject();

			cJSON_AddStringToObject(t, "token", e->token);
			cJSON_AddStringToObject(t, "cloister", e->cloister);
			cJSON_AddStringToObject(t, "project", e->project ? e->project : "");
			cJSON_AddStringToObject(t, "worktree", e->worktree ? e->worktree : "");
			cJSON_AddItemToArray(arr, t);
		}
		respond_json(ex, 200, o);
		return;
	}
	if ((arg = path_arg(path, "/tokens/")) && !strcmp(method, "DELETE")) {
		if (tokens_revoke(web->tokens, arg) < 0) {
			respond_error(ex, 404, "token not found");
			return;
		}
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "status", "revoked");
		respond_json(ex, 200, o);
		return;
	}
	if (!strcmp(path, "/tokens") || path_arg(path, "/tokens/")) {
		respond_error(ex, 405, "method not allowed");
		return;
	}
	respond_error(ex, 404, "not found");
}

/* ---- request server (hostexec) ----------------------------------------------------------- */

static void request_free(struct request *c)
{
	struct web *web = c->web;

	if (c->prev)
		c->prev->next = c->next;
	else if (web->requests == c)
		web->requests = c->next;
	if (c->next)
		c->next->prev = c->prev;
	for (size_t i = 0; c->argv && i < c->argc; i++)
		free(c->argv[i]);
	free(c->argv);
	free(c->workdir);
	free(c->sandbox);
	free(c);
}

/* The client hung up: what it waits for is withdrawn, and a command it started stops (an agent
 * must not leave host processes running by hanging up again and again). */
static void on_request_gone(void *userdata, struct http_exchange *ex)
{
	struct request *c = userdata;

	c->ex = NULL;
	hostexec_withdraw(c->ask);
	hostexec_run_abandon(c->run);
	request_free(c);
}

static void respond_command(struct http_exchange *ex, const char *status, const char *pattern,
                            const char *reason)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "status", status);
	if (pattern && *pattern)
		cJSON_AddStringToObject(o, "pattern", pattern);
	if (reason)
		cJSON_AddStringToObject(o, "reason", reason);
	respond_json(ex, 200, o);
}

/* Answer C's client (if it is still there) and forget C. */
static void request_answer(struct request *c, const char *status, const char *reason)
{
	if (c->ex) {
		http_exchange_set_gone(c->ex, NULL, NULL);
		respond_command(c->ex, status, NULL, reason);
	}
	request_free(c);
}

static void on_run_done(void *userdata, const struct hostexec_result *res)
{
	struct request *c = userdata;
	cJSON *o;

	c->run = NULL;
	if (!strcmp(res->status, "cancelled")) {
		request_answer(c, "error", "Command cancelled by user");
		return;
	}
	if (c->ex) {
		o = cJSON_CreateObject();
		if (!strcmp(res->status, "completed")) {
			cJSON_AddStringToObject(o, "status", c->status);
			if (c->pattern[0])
				cJSON_AddStringToObject(o, "pattern", c->pattern);
			cJSON_AddNumberToObject(o, "exit_code", res->exit_code);
			cJSON_AddStringToObject(o, "stdout",
			                        res->stdout_text ? res->stdout_text : "");
			cJSON_AddStringToObject(o, "stderr",
			                        res->stderr_text ? res->stderr_text : "");
		} else if (!strcmp(res->status, "timeout")) {
			cJSON_AddStringToObject(o, "status", "timeout");
			cJSON_AddStringToObject(o, "reason",
			                        res->error && *res->error
			                                ? res->error
			                                : "command execution timed out");
			cJSON_AddNumberToObject(o, "exit_code", res->exit_code);
			cJSON_AddStringToObject(o, "stdout",
			                        res->stdout_text ? res->stdout_text : "");
			cJSON_AddStringToObject(o, "stderr",
			                        res->stderr_text ? res->stderr_text : "");
		} else {
			cJSON_AddStringToObject(o, "status", "error");
			cJSON_AddStringToObject(o, "reason",
			                        res->error ? res->error : "execution failed");
		}
		http_exchange_set_gone(c->ex, NULL, NULL);
		respond_json(c->ex, 200, o);
	}
	request_free(c);
}

/* An approved request: its command runs, the client waits for the result. */
static void request_run(struct request *c, const char *status, const char *pattern)
{
	int r;

	snprintf(c->status, sizeof(c->status), "%s", status);
	snprintf(c->pattern, sizeof(c->pattern), "%s", pattern ? pattern : "");
	r = hostexec_run(c->web->hostexec, c->sandbox, (const char *const *)c->argv, c->argc,
	                 c->workdir, on_run_done, c, &c->run);
	if (r == -ENOSYS) {
		request_answer(c, "error", "command execution not configured");
	} else if (r < 0) {
		char msg[128];

		snprintf(msg, sizeof(msg), "cannot run the command: %s", strerror(-r));
		request_answer(c, "error", msg);
	}
}

/* Go's time.Duration format: "5m0s", "1h0m0s", "30s", "2m30.5s", "500ms". */
static void format_go_duration(uint64_t ms, char *buf, size_t size)
{
	uint64_t h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60, frac = ms % 1000;
	char secs[24];

	if (ms < 1000) {
		snprintf(buf, size, "%llums", (unsigned long long)ms);
		return;
	}
	if (frac) {
		int n = snprintf(secs, sizeof(secs), "%llu.%03llu", (unsigned long long)s,
		                 (unsigned long long)frac);

		while (n > 0 && secs[n - 1] == '0') /* Go prints no trailing zeros */
			secs[--n] = '\0';
	} else {
		snprintf(secs, sizeof(secs), "%llu", (unsigned long long)s);
	}
	if (h)
		snprintf(buf, size, "%lluh%llum%ss", (unsigned long long)h, (unsigned long long)m,
		         secs);
	else if (m)
		snprintf(buf, size, "%llum%ss", (unsigned long long)m, secs);
	else
		snprintf(buf, size, "%ss", secs);
}

/* The front end's answer, at once or once a person answered. */
static void request_decided(struct request *c, const struct hostexec_answer *a)
{
	char d[80], reason[128];

	switch (a->verdict) {
	case HOSTEXEC_ALLOWED:
		request_run(c, "auto_approved", a->pattern);
		return;
	case HOSTEXEC_APPROVED:
		request_run(c, "approved", NULL);
		return;
	case HOSTEXEC_TIMED_OUT:
		format_go_duration(a->waited_ms, d, sizeof(d));
		snprintf(reason, sizeof(reason), "No approval within %s", d);
		request_answer(c, "timeout", reason);
		return;
	case HOSTEXEC_DENIED:
	case HOSTEXEC_PENDING:
		break;
	}
	request_answer(c, "denied", a->reason);
}

static void on_answer(void *userdata, const struct hostexec_answer *a)
{
	struct request *c = userdata;

	c->ask = NULL;
	request_decided(c, a);
}

/* C with a copy of what it runs, listed, its client watched; NULL when out of memory. */
static struct request *request_new(struct web *web, struct http_exchange *ex,
                                   const struct token_entry *who, const char *const *argv,
                                   size_t argc)
{
	struct request *c = calloc(1, sizeof(*c));
	size_t i = 0;

	if (!c)
		return NULL;
	c->web = web;
	c->argc = argc;
	c->argv = calloc(argc + 1, sizeof(char *));
	c->workdir = who->worktree ? strdup(who->worktree) : NULL;
	c->sandbox = strdup(who->cloister);
	for (i = 0; c->argv && i < argc; i++)
		if (!(c->argv[i] = strdup(argv[i])))
			break;
	c->next = web->requests;
	if (c->next)
		c->next->prev = c;
	web->requests = c;
	if (!c->argv || !c->sandbox || i < argc || (who->worktree && !c->workdir)) {
		request_free(c);
		return NULL;
	}
	c->ex = ex;
	http_exchange_set_gone(ex, on_request_gone, c);
	return c;
}

static void on_request(void *userdata, struct http_exchange *ex)
{
	struct web *web = userdata;
	const struct token_entry *who;
	_cleanup_cjson_ cJSON *body = NULL;
	const cJSON *args_j;
	_cleanup_free_ char *command = NULL;
	_cleanup_free_ const char **argv = NULL;
	struct cl_error err = {0};
	struct hostexec_answer answer;
	struct request *c;
	size_t argc, i = 0;
	const cJSON *a;
	int r;

	/* Containers and scripts call here, never a browser. */
	if (http_exchange_header(ex, "Origin")) {
		respond_error(ex, 403, "cross-origin request refused");
		return;
	}
	/* The token before anything else: without it, nothing is answered but 401. */
	who = tokens_lookup(web->tokens, http_exchange_header(ex, "X-Cloister-Token"));
	if (!who) {
		respond_error(ex, 401, "missing or invalid X-Cloister-Token");
		return;
	}
	if (strcmp(http_exchange_path(ex), "/request")) {
		respond_error(ex, 404, "not found");
		return;
	}
	if (strcmp(http_exchange_method(ex), "POST")) {
		http_exchange_add_header(ex, "Allow", "POST");
		respond_error(ex, 405, "method not allowed");
		return;
	}
	body = body_object(ex, false);
	if (!body)
		return;
	args_j = cJSON_GetObjectItemCaseSensitive(body, "args");
	if (!cJSON_IsArray(args_j) || cJSON_GetArraySize(args_j) == 0) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "status", "error");
		cJSON_AddStringToObject(o, "reason",
		                        "args is required: a non-empty array of strings");
		cJSON_AddStringToObject(o, "error",
		                        "args is required: a non-empty array of strings");
		respond_json(ex, 400, o);
		return;
	}
	argc = (size_t)cJSON_GetArraySize(args_j);
	argv = calloc(argc + 1, sizeof(*argv));
	if (!argv) {
		respond_error(ex, 500, "out of memory");
		return;
	}
	cJSON_ArrayForEach(a, args_j)
	{
		if (!cJSON_IsString(a)) {
			respond_error(ex, 400, "every element of args must be a string");
			return;
		}
		argv[i++] = a->valuestring;
	}
	if (cl_quote_strv(argv, argc, &err, &command) < 0) {
		respond_error(ex, 400, err.msg[0] ? err.msg : "invalid args");
		return;
	}
	c = request_new(web, ex, who, argv, argc);
	if (!c) {
		respond_error(ex, 500, "out of memory");
		return;
	}
	/* The request blocks until the front end answers: at once, or once a person decided. */
	r = hostexec_decide(web->hostexec,
	                    &(struct hostexec_call){
	                            .kind = QUEUE_KIND_HOSTEXEC,
	                            .sandbox = who->cloister,
	                            .project = who->project,
	                            .command = command,
	                            .argv = argv,
	                            .argc = argc,
	                            .cwd = who->worktree,
	                            .pid = -1,
	                            .uid = -1,
	                    },
	                    on_answer, c, &err, &answer, &c->ask);
	if (r < 0) {
		http_exchange_set_gone(ex, NULL, NULL);
		request_free(c);
		respond_error(ex, 500, err.msg[0] ? err.msg : "policy error");
		return;
	}
	if (answer.verdict != HOSTEXEC_PENDING)
		request_decided(c, &answer);
}

/* ---- life cycle -------------------------------------------------------------------------- */

static int start_server(struct web *web, const struct web_listen *l, http_handler_fn fn,
                        struct http_server **ret, const char *what, struct cl_error *err)
{
	struct http_server_config hc = {
	        .address = l->address,
	        .port = l->port,
	        .port_fallback = web->config.port_fallback,
	        .max_body = 1024 * 1024,
	};
	int r;

	if (l->disabled)
		return 0;
	r = http_server_new(web->loop, &hc, fn, web, ret);
	if (r < 0)
		cl_error_set(err, r, "%s on %s:%u: %s", what, hc.address ? hc.address : "127.0.0.1",
		             (unsigned)hc.port, strerror(-r));
	return r;
}

static const struct approvals_observer_ops web_observer_ops = {
        .event = on_queue_event,
};

int web_new(struct loop *loop, struct approvals *approvals, struct hostexec *hostexec,
            struct tokens *tokens, const struct web_config *config, const struct web_ops *ops,
            void *userdata, struct cl_error *err, struct web **ret)
{
	struct web *web = calloc(1, sizeof(*web));
	uint16_t port;
	int r;

	if (!web)
		return -ENOMEM;
	web->loop = loop;
	web->approvals = approvals;
	web->queue = approvals_queue(approvals);
	web->hostexec = hostexec;
	web->tokens = tokens;
	web->metrics = approvals_metrics(approvals);
	web->config = *config;
	web->ops = ops;
	web->userdata = userdata;
	r = labels_new(&web->labels);
	if (r >= 0)
		r = approvals_observe(approvals, &web_observer_ops, web);
	if (r < 0) {
		web_free(web);
		return cl_error_set(err, r, "%s", strerror(-r));
	}
	web->observing = true;
	hostexec_set_listener(hostexec, on_running_event, web);
	if (!web->config.heartbeat_ms)
		web->config.heartbeat_ms = DEFAULT_HEARTBEAT_MS;
	r = start_server(web, &config->approval, on_approval, &web->approval, "approval server",
	                 err);
	if (r >= 0)
		r = start_server(web, &config->tokens, on_tokens, &web->token_srv, "token API",
		                 err);
	if (r >= 0)
		r = start_server(web, &config->request, on_request, &web->request_srv,
		                 "request server", err);
	if (r < 0) {
		web_free(web);
		return r;
	}
	port = web_approval_port(web);
	snprintf(web->origins[0], sizeof(web->origins[0]), "http://127.0.0.1:%u", port);
	snprintf(web->origins[1], sizeof(web->origins[1]), "http://localhost:%u", port);
	snprintf(web->origins[2], sizeof(web->origins[2]), "http://[::1]:%u", port);
	loop_add_timer(loop, loop_now_ms() + web->config.heartbeat_ms, on_heartbeat, web,
	               &web->heartbeat);
	*ret = web;
	return 0;
}

void web_free(struct web *web)
{
	if (!web)
		return;
	web->freeing = true;
	if (web->heartbeat)
		loop_cancel_timer(web->loop, web->heartbeat);
	if (web->approvers_timer)
		loop_cancel_timer(web->loop, web->approvers_timer);
	/* Servers end their exchanges: streams and requests are freed by their gone callbacks
	 * (a request's ask is withdrawn, its command stopped). */
	http_server_free(web->request_srv);
	http_server_free(web->token_srv);
	http_server_free(web->approval);
	while (web->streams)
		stream_drop(web->streams, false);
	while (web->requests)
		on_request_gone(web->requests, NULL);
	/* The dashboards it served answer and listen no more. */
	if (web->observing) {
		approvals_unobserve(web->approvals, &web_observer_ops, web);
		approvals_set_approvers(web->approvals, APPROVER_DASHBOARD, 0);
		hostexec_set_listener(web->hostexec, NULL, NULL);
	}
	labels_free(web->labels);
	free(web);
}

uint16_t web_approval_port(const struct web *web)
{
	return web->approval ? http_server_port(web->approval) : 0;
}

uint16_t web_tokens_port(const struct web *web)
{
	return web->token_srv ? http_server_port(web->token_srv) : 0;
}

uint16_t web_request_port(const struct web *web)
{
	return web->request_srv ? http_server_port(web->request_srv) : 0;
}

unsigned web_event_clients(const struct web *web)
{
	return web->n_events;
}
