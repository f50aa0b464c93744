/* The approval server: the dashboard and its files, /pending, decisions, /status, /metrics,
 * /running and the kill switch; see web.h. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/loop.h"
#include "protocol/json_strict.h"
#include "supervisor/approval/approvals.h"
#include "supervisor/approval/labels.h"
#include "supervisor/approval/metrics.h"
#include "supervisor/hostexec/hostexec.h"
#include "supervisor/policy/decisions.h"
#include "supervisor/policy/domain.h"
#include "supervisor/policy/exec_pattern.h"
#include "supervisor/web/api_info.h"
#include "supervisor/web/peers.h"
#include "supervisor/web/web_assets.h"
#include "supervisor/web/web_internal.h"

#define RECENT_LISTED 10

/* ---- JSON of queue items ----------------------------------------------------------------- */

bool web_is_command(enum queue_kind kind)
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
	web_format_rfc3339((int64_t)item->created_ms + wall_offset, ts);
	if (web_is_command(item->kind)) {
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
		web_format_rfc3339((int64_t)item->deadline_ms + wall_offset, ts);
		cJSON_AddStringToObject(o, "expires", ts);
		cJSON_AddNumberToObject(o, "expires_ms",
		                        (double)((int64_t)item->deadline_ms + wall_offset));
	}
	cJSON_AddNumberToObject(o, "created_ms", (double)((int64_t)item->created_ms + wall_offset));
	cJSON_AddStringToObject(o, "type", web_is_command(item->kind) ? "command" : "domain");
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
	if (item->note)
		cJSON_AddStringToObject(o, "note", item->note);
	if (item->argc) {
		cJSON *args = cJSON_AddArrayToObject(o, "args");

		for (size_t i = 0; args && i < item->argc; i++)
			cJSON_AddItemToArray(args, cJSON_CreateString(item->argv[i]));
	}
	if (item->n_waiters > 1)
		cJSON_AddNumberToObject(o, "waiters", (double)item->n_waiters);
	/* What a decision wider than once can cover: the program, or a pattern to edit. */
	if (item->kind == QUEUE_KIND_EXEC && item->exe) {
		_cleanup_free_ char *pattern = NULL;
		cJSON *sug = cJSON_AddObjectToObject(o, "suggested");

		if (sug) {
			cJSON_AddStringToObject(sug, "program", item->exe);
			if (exec_pattern_suggest(item->exe, (const char *const *)item->argv,
			                         item->argc, &pattern, NULL) >= 0)
				cJSON_AddStringToObject(sug, "pattern", pattern);
		}
	}
	return o;
}

static cJSON *web_decided_json(const struct web *web, const struct queue_item *item,
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
	web_format_rfc3339((int64_t)item->decided_ms + wall_offset, ts);
	cJSON_AddStringToObject(o, "decided_at", ts);
	return o;
}

static void web_handle_running(struct web *web, struct http_exchange *ex)
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
		web_format_rfc3339(r->started_wall_ms, ts);
		cJSON_AddStringToObject(it, "started", ts);
		cJSON_AddItemToArray(arr, it);
	}
	web_respond_json(ex, 200, o);
}

static void web_handle_cancel(struct web *web, struct http_exchange *ex, const char *id)
{
	char idcopy[QUEUE_ID_LEN + 1];

	snprintf(idcopy, sizeof(idcopy), "%s", id);
	if (strlen(id) > QUEUE_ID_LEN || hostexec_running_cancel(web->hostexec, idcopy) < 0) {
		web_respond_error(ex, 404, "no running command with that id");
		return;
	}
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "status", "cancelled");
	cJSON_AddStringToObject(o, "id", idcopy);
	web_respond_json(ex, 200, o);
}

/* ---- approval server --------------------------------------------------------------------- */

static void handle_pending(struct web *web, struct http_exchange *ex, bool domains)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "requests");
	int64_t off = web_wall_offset_ms();

	for (const struct queue_item *it = queue_first(web->queue); it;
	     it = queue_next(web->queue, it)) {
		if (web_is_command(it->kind) == domains)
			continue;
		cJSON_AddItemToArray(arr, web_item_json(it, off, web->labels));
	}
	web_respond_json(ex, 200, o);
}

/* GET /api-proof?challenge=HEX: this supervisor knows the nonce of the API file that names it
 * (api_info.h), shown as an HMAC of the client's challenge. Without the token: the client asks
 * before it trusts the server with the token. */
static void handle_api_proof(struct web *web, struct http_exchange *ex)
{
	const char *challenge = http_exchange_query(ex, "challenge");
	char proof[65];
	cJSON *o;

	if (!web->config.api_nonce || !challenge ||
	    api_info_proof(web->config.api_nonce, challenge, proof) < 0) {
		web_respond_error(ex, 400, "challenge must be 1 to 128 lowercase hex characters");
		return;
	}
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "proof", proof);
	web_respond_json(ex, 200, o);
}

static void add_peer(const struct api_info *info, void *userdata)
{
	cJSON *arr = userdata, *p;
	const cJSON *known;

	cJSON_ArrayForEach(known, arr) /* two files may name one address (other namespaces) */
	{
		if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(known, "url")), info->url))
			return;
	}
	p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "url", info->url);
	cJSON_AddStringToObject(p, "name", info->name);
	cJSON_AddNumberToObject(p, "pid", (double)info->pid);
	cJSON_AddItemToArray(arr, p);
}

/* GET /peers: the other dashboards of this user (peers.h), whose asks this page shows too. */
static void handle_peers(struct web *web, struct http_exchange *ex)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "peers");

	if (arr)
		(void)peers_list(web_approval_port(web), add_peer, arr);
	web_respond_json(ex, 200, o);
}

static void handle_decisions(struct web *web, struct http_exchange *ex)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "decisions");
	int64_t off = web_wall_offset_ms();
	const struct queue_item *it;

	for (size_t i = 0; i < RECENT_LISTED && (it = queue_recent(web->queue, i)); i++)
		cJSON_AddItemToArray(arr, web_decided_json(web, it, off));
	web_respond_json(ex, 200, o);
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
		web_format_rfc3339((int64_t)info[i].started_ms, ts);
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
	web_respond_json(ex, 200, o);
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
		web_respond_error(ex, 500, "out of memory");
		return;
	}
	http_exchange_respond(ex, 200, "text/plain; version=0.0.4; charset=utf-8", text, (size_t)n);
}

/* An optional string member KEY of BODY: 1 and *ret, 0 absent (or null), -1 not a string. */
static int opt_string(const cJSON *body, const char *key, const char **ret)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(body, key);

	if (!j || cJSON_IsNull(j))
		return 0;
	if (!cJSON_IsString(j))
		return -1;
	*ret = j->valuestring;
	return 1;
}

static void handle_decide(struct web *web, struct http_exchange *ex, const char *id, bool allow)
{
	const struct queue_item *it = queue_lookup(web->queue, id);
	_cleanup_cjson_ cJSON *body = NULL;
	const char *reason = NULL, *scope_s = NULL, *match_s = NULL, *pattern = NULL;
	enum queue_scope scope = QUEUE_SCOPE_ONCE;
	enum exec_match match = EXEC_MATCH_EXACT;
	char idcopy[QUEUE_ID_LEN + 1];
	struct cl_error err = {""};
	struct approval_decision d;
	int r;

	if (!it || !web_is_command(it->kind)) {
		web_respond_error(ex, 404, "request not found");
		return;
	}
	body = web_body_object(ex, true);
	if (!body)
		return;
	if (opt_string(body, "reason", &reason) < 0) {
		web_respond_error(ex, 400, "reason must be a string");
		return;
	}
	/* No body, or no scope: once, as before scopes (old clients unchanged). */
	if (opt_string(body, "scope", &scope_s) < 0 ||
	    (scope_s && queue_scope_from_string(scope_s, &scope) < 0)) {
		web_respond_error(ex, 400, "scope must be one of once, session, project, global");
		return;
	}
	if (opt_string(body, "match", &match_s) < 0 ||
	    (match_s && exec_match_from_string(match_s, &match) < 0)) {
		web_respond_error(ex, 400, "match must be one of exact, program, pattern");
		return;
	}
	if (opt_string(body, "pattern", &pattern) < 0) {
		web_respond_error(ex, 400, "pattern must be a string");
		return;
	}
	/* A file ask's wider scope covers its path (files/write_ask.h), nothing to match. */
	if (scope != QUEUE_SCOPE_ONCE && it->kind != QUEUE_KIND_EXEC &&
	    it->kind != QUEUE_KIND_FILE) {
		web_respond_error(ex, 400, "only exec and file asks take a scope wider than once");
		return;
	}
	/* "exact" is what a file's scope covers anyway: a client that sends it for every card
	 * is right. */
	if (it->kind == QUEUE_KIND_FILE && ((match_s && match != EXEC_MATCH_EXACT) || pattern)) {
		web_respond_error(ex, 400,
		                  "a file ask's scope covers its path: no program or pattern");
		return;
	}
	if (match == EXEC_MATCH_PATTERN && !pattern) {
		web_respond_error(ex, 400, "match pattern needs a pattern");
		return;
	}
	if (pattern && match != EXEC_MATCH_PATTERN) {
		web_respond_error(ex, 400, "a pattern goes with match pattern");
		return;
	}
	snprintf(idcopy, sizeof(idcopy), "%s", id);
	d = (struct approval_decision){
	        .allow = allow,
	        .scope = scope,
	        .by = http_exchange_header(ex, "Origin") ? "web" : "cli",
	        .reason = reason && *reason ? reason : (allow ? NULL : "Command denied by user"),
	        .match = exec_match_to_string(match),
	        .pattern = pattern,
	};
	/* What the decision covers must be a rule before anything is decided: a source that
	 * cannot keep it refuses it (-EINVAL, ERR says why). */
	r = approvals_decide(web->approvals, idcopy, &d, &err);
	if (r == -EINVAL && err.msg[0]) {
		web_respond_error(ex, 400, err.msg);
		return;
	}
	if (r == -EALREADY) {
		cJSON *o = cJSON_CreateObject();

		it = queue_lookup(web->queue, idcopy);
		cJSON_AddStringToObject(o, "error", "request already decided");
		cJSON_AddStringToObject(o, "id", idcopy);
		if (it)
			cJSON_AddStringToObject(o, "status", queue_state_to_string(it->state));
		web_respond_json(ex, 409, o);
		return;
	}
	if (r < 0) {
		web_respond_error(ex, r == -ENOENT ? 404 : 500,
		                  r == -ENOENT ? "request not found" : strerror(-r));
		return;
	}
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "status", allow ? "approved" : "denied");
	cJSON_AddStringToObject(o, "id", idcopy);
	/* The Go tool's answer as it was, unless the body said a scope. */
	if (scope_s)
		cJSON_AddStringToObject(o, "scope", queue_scope_to_string(scope));
	if (scope != QUEUE_SCOPE_ONCE) {
		cJSON_AddStringToObject(o, "match", exec_match_to_string(match));
		if (pattern)
			cJSON_AddStringToObject(o, "pattern", pattern);
	}
	if (r == 1)
		cJSON_AddStringToObject(o, "persistence_error", err.msg);
	web_respond_json(ex, 200, o);
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
			web_respond_error(ex, 409, "request already decided");
		else
			web_respond_error(ex, 404, "domain request not found");
		return;
	}
	if (it->kind != QUEUE_KIND_DOMAIN) {
		web_respond_error(ex, 404, "domain request not found");
		return;
	}
	body = web_body_object(ex, false);
	if (!body)
		return;
	scope_j = cJSON_GetObjectItemCaseSensitive(body, "scope");
	wild_j = cJSON_GetObjectItemCaseSensitive(body, "wildcard");
	if (!cJSON_IsString(scope_j) || queue_scope_from_string(scope_j->valuestring, &scope) < 0) {
		web_respond_error(ex, 400, "scope must be one of once, session, project, global");
		return;
	}
	if (wild_j && !cJSON_IsBool(wild_j)) {
		web_respond_error(ex, 400, "wildcard must be true or false");
		return;
	}
	host = domain_host(it->summary);
	if (!host) {
		web_respond_error(ex, 500, "out of memory");
		return;
	}
	if (cJSON_IsTrue(wild_j)) {
		pattern = wildcard_of(host);
		if (!pattern) {
			web_respond_error(ex, 400,
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
		web_respond_error(ex, r == -ENOENT ? 404 : 409,
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
	web_respond_json(ex, 200, o);
}

static void handle_sandbox_action(struct web *web, struct http_exchange *ex, const char *rest)
{
	char name[256];
	const char *slash = strchr(rest, '/');
	const char *action;
	int r;

	if (!slash || (size_t)(slash - rest) >= sizeof(name) || slash == rest) {
		web_respond_error(ex, 404, "not found");
		return;
	}
	memcpy(name, rest, (size_t)(slash - rest));
	name[slash - rest] = '\0';
	action = slash + 1;
	if (strcmp(action, "pause") && strcmp(action, "resume") && strcmp(action, "kill")) {
		web_respond_error(ex, 404, "unknown action: use pause, resume or kill");
		return;
	}
	if (!web->ops->sandbox_action) {
		web_respond_error(ex, 404, "sandbox not found");
		return;
	}
	r = web->ops->sandbox_action(web->userdata, name, action);
	if (r == -ENOENT) {
		web_respond_error(ex, 404, "sandbox not found");
		return;
	}
	if (r < 0) {
		char msg[300];

		snprintf(msg, sizeof(msg), "cannot %s %s: %s", action, name, strerror(-r));
		web_respond_error(ex, 500, msg);
		return;
	}
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "status",
	                        !strcmp(action, "pause")    ? "paused"
	                        : !strcmp(action, "resume") ? "running"
	                                                    : "killed");
	cJSON_AddStringToObject(o, "name", name);
	web_respond_json(ex, 200, o);
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
	                         "default-src 'self'; connect-src 'self' http://127.0.0.1:*; "
	                         "img-src 'self' data:; "
	                         "style-src 'self'; script-src 'self'; frame-ancestors 'none'; "
	                         "base-uri 'none'; form-action 'none'");
	http_exchange_respond(ex, 200, a->content_type, a->data, a->len);
	return true;
}

void web_on_approval(void *userdata, struct http_exchange *ex)
{
	struct web *web = userdata;
	const char *method = http_exchange_method(ex);
	const char *path = http_exchange_path(ex);
	bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
	bool post = !strcmp(method, "POST");
	const char *arg;

	if (!strcmp(method, "OPTIONS")) {
		web_preflight(web, ex);
		return;
	}
	/* Only the page itself (the login link included) and its files go without the token:
	 * they say nothing about any sandbox. */
	if (!web_request_allowed(
	            web, ex, true,
	            get && (!strcmp(path, "/") || find_asset(path) || !strcmp(path, "/api-proof"))))
		return;
	if (get) {
		if (!strcmp(path, "/api-proof"))
			handle_api_proof(web, ex);
		else if (!strcmp(path, "/pending"))
			handle_pending(web, ex, false);
		else if (!strcmp(path, "/peers"))
			handle_peers(web, ex);
		else if (!strcmp(path, "/pending-domains"))
			handle_pending(web, ex, true);
		else if (!strcmp(path, "/decisions"))
			handle_decisions(web, ex);
		else if (!strcmp(path, "/running"))
			web_handle_running(web, ex);
		else if (!strcmp(path, "/status"))
			handle_status(web, ex);
		else if (!strcmp(path, "/sandboxes")) {
			cJSON *o = cJSON_CreateObject();

			cJSON_AddItemToObject(o, "sandboxes", sandboxes_json(web));
			web_respond_json(ex, 200, o);
		} else if (!strcmp(path, "/metrics"))
			handle_metrics(web, ex);
		else if (!strcmp(path, "/events"))
			web_stream_open(web, ex, STREAM_EVENTS);
		else if (!strcmp(path, "/logs")) {
			const char *name = http_exchange_query(ex, "cloister");
			struct stream_client *c;

			if (name && strlen(name) > 255) {
				web_respond_error(ex, 400, "cloister name too long");
				return;
			}
			c = web_stream_open(web, ex, STREAM_LOGS);
			if (c && name && *name)
				web_stream_set_filter(c, name);
			if (c)
				web_send_log_backlog(web, c);
		} else if (!strcmp(path, "/") && web_dashboard_login(web, ex)) {
			/* answered */
		} else if (!serve_asset(ex, path))
			web_respond_error(ex, 404, "not found");
		return;
	}
	if (post) {
		if ((arg = web_path_arg(path, "/approve/")))
			handle_decide(web, ex, arg, true);
		else if ((arg = web_path_arg(path, "/deny/")))
			handle_decide(web, ex, arg, false);
		else if ((arg = web_path_arg(path, "/approve-domain/")))
			handle_decide_domain(web, ex, arg, true);
		else if ((arg = web_path_arg(path, "/deny-domain/")))
			handle_decide_domain(web, ex, arg, false);
		else if (!strncmp(path, "/sandboxes/", 11))
			handle_sandbox_action(web, ex, path + 11);
		else if ((arg = web_path_arg(path, "/cancel/")))
			web_handle_cancel(web, ex, arg);
		else
			web_respond_error(ex, 404, "not found");
		return;
	}
	http_exchange_add_header(ex, "Allow", "GET, POST");
	web_respond_error(ex, 405, "method not allowed");
}
