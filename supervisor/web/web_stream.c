/* The event streams (SSE): /events (queue events, running commands) and /logs (the audit
 * log); see web.h. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/loop.h"
#include "supervisor/approval/approvals.h"
#include "supervisor/hostexec/hostexec.h"
#include "supervisor/web/web_internal.h"

#define MAX_EVENT_CLIENTS 256
#define LOG_BACKLOG_BYTES (64 * 1024)

struct stream_client {
	struct web *web;
	struct http_exchange *ex;
	enum stream_kind kind;
	char *filter; /* /logs?cloister= */
	struct stream_client *prev, *next;
};

/* ---- event streams ----------------------------------------------------------------------- */

/* Open event streams are people who can answer (approvals.h). */
static int on_approvers_timer(struct loop *loop, void *userdata)
{
	struct web *web = userdata;

	web->approvers_timer = NULL;
	approvals_set_approvers(web->approvals, APPROVER_DASHBOARD, web->n_events);
	return 0;
}

static void web_stream_drop(struct stream_client *c, bool end)
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
	/* Not from here: a drop can happen while web_broadcast() walks the list, and a change of
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
	web_stream_drop(c, false);
}

/* Write to one client; a client that does not keep up is dropped. Returns false when dropped. */
static bool stream_send(struct stream_client *c, const char *data, size_t len)
{
	if (http_stream_write(c->ex, data, len) < 0) {
		web_stream_drop(c, true);
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

static void web_broadcast(struct web *web, enum stream_kind kind, const char *filter,
                          const char *event, const char *data, size_t len)
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

int web_on_heartbeat(struct loop *loop, void *userdata)
{
	struct web *web = userdata;
	static const char beat[] = "event: heartbeat\ndata: \n\n";

	web->heartbeat = NULL;
	for (struct stream_client *c = web->streams, *next; c; c = next) {
		next = c->next;
		stream_send(c, beat, sizeof(beat) - 1);
	}
	/* Without it, idle streams would go quiet: the next stream that opens arms it again. */
	if (loop_add_timer(loop, loop_now_ms() + web->config.heartbeat_ms, web_on_heartbeat, web,
	                   &web->heartbeat) < 0)
		web->heartbeat = NULL;
	return 0;
}

struct stream_client *web_stream_open(struct web *web, struct http_exchange *ex,
                                      enum stream_kind kind)
{
	struct stream_client *c;

	if (web->n_streams >= MAX_EVENT_CLIENTS) {
		web_respond_error(ex, 503, "too many event-stream clients");
		return NULL;
	}
	if (!web->heartbeat && loop_add_timer(web->loop, loop_now_ms() + web->config.heartbeat_ms,
	                                      web_on_heartbeat, web, &web->heartbeat) < 0) {
		web->heartbeat = NULL;
		web_respond_error(ex, 503, "no timer for the stream's heartbeat");
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		web_respond_error(ex, 500, "out of memory");
		return NULL;
	}
	http_exchange_add_header(ex, "Cache-Control", "no-cache");
	http_exchange_add_header(ex, "X-Accel-Buffering", "no");
	if (http_exchange_stream_start(ex, "text/event-stream") < 0) {
		free(c);
		web_respond_error(ex, 500, "cannot start the stream");
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
void web_on_queue_event(void *userdata, const struct queue_event *ev)
{
	struct web *web = userdata;
	int64_t off = web_wall_offset_ms();
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
			cJSON_AddStringToObject(
			        o, "type", web_is_command(ev->item->kind) ? "command" : "domain");
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
		web_broadcast(web, STREAM_EVENTS, NULL,
		              ev->type == QUEUE_EVENT_ADDED ? "request-added" : "request-removed",
		              text, strlen(text));
}

void web_on_audit_line(struct web *web, const char *sandbox, const char *line, size_t len)
{
	if (!web || web->n_streams == web->n_events)
		return;
	web_broadcast(web, STREAM_LOGS, sandbox, "log", line, len);
}

/* The tail of the audit log for a new /logs client, filtered by cloister. */
void web_send_log_backlog(struct web *web, struct stream_client *c)
{
	_cleanup_close_ int fd = -EBADF;
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	off_t start;
	ssize_t n;
	char *line, *end;

	if (!web->config.audit_path)
		return;
	/* The writer keeps automatic lines a moment: the file must hold them before it is read,
	 * or the new client would see them neither here nor in the stream. */
	if (web->ops && web->ops->audit_sync)
		web->ops->audit_sync(web->userdata);
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

/* A listed command started or ended: the dashboards hear it. */
void web_on_running_event(void *userdata, const char *event, const struct hostexec_running *r,
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
		web_broadcast(web, STREAM_EVENTS, NULL, event, text, strlen(text));
}

void web_stream_set_filter(struct stream_client *c, const char *filter)
{
	/* Without memory the stream shows every cloister's lines, which it may see anyway. */
	free(c->filter);
	c->filter = strdup(filter);
}

void web_streams_free(struct web *web)
{
	while (web->streams)
		web_stream_drop(web->streams, false);
}
