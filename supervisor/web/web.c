/* The HTTP APIs' life cycle and the rules every request meets; see web.h and
 * web_internal.h. */
#include "supervisor/web/web.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/cleanup.h"
#include "base/loop.h"
#include "protocol/address.h"
#include "protocol/json_strict.h"
#include "supervisor/approval/approvals.h"
#include "supervisor/approval/labels.h"
#include "supervisor/approval/tokens.h"
#include "supervisor/hostexec/hostexec.h"
#include "supervisor/web/peers.h"
#include "supervisor/web/web_internal.h"

#define DEFAULT_HEARTBEAT_MS 30000
#define JSON_MAX_DEPTH       8
#define JSON_MAX_VALUES      20000

/* ---- small helpers ----------------------------------------------------------------------- */

int64_t web_wall_offset_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - (int64_t)loop_now_ms();
}

void web_format_rfc3339(int64_t wall_ms, char buf[static 32])
{
	time_t t = (time_t)(wall_ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void web_respond_json(struct http_exchange *ex, unsigned status, cJSON *obj)
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

void web_respond_error(struct http_exchange *ex, unsigned status, const char *message)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "error", message);
	web_respond_json(ex, status, o);
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
	web_respond_error(ex, 401, message);
}

/* Is ORIGIN a peer's dashboard (peers.h)? Or was it one, whose supervisor has ended since
 * while its tab stays open: then nothing may listen on its port now (a program of another
 * user that took the port is no peer). */
static bool peer_origin(struct web *web, const char *origin)
{
	uint16_t port = peers_origin_port(origin);

	if (!port)
		return false;
	if (peers_origin_ok(origin, web_approval_port(web))) {
		for (unsigned i = 0; i < web->n_peer_ports; i++)
			if (web->peer_ports[i] == port)
				return true;
		web->peer_ports[web->n_peer_ports++ % ELEMENTSOF(web->peer_ports)] = port;
		if (web->n_peer_ports > ELEMENTSOF(web->peer_ports))
			web->n_peer_ports = ELEMENTSOF(web->peer_ports);
		return true;
	}
	for (unsigned i = 0; i < web->n_peer_ports; i++)
		if (web->peer_ports[i] == port)
			return !peers_port_held(port);
	return false;
}

/* A peer's page may read the answer, with the cookie (CORS). */
static void web_allow_peer(struct http_exchange *ex, const char *origin)
{
	http_exchange_add_header(ex, "Access-Control-Allow-Origin", origin);
	http_exchange_add_header(ex, "Access-Control-Allow-Credentials", "true");
	http_exchange_add_header(ex, "Vary", "Origin");
}

/* OPTIONS from a peer's page before its POST with a JSON body (a CORS preflight, which carries
 * no cookie): the methods and the header it may send. Anyone else: 403. */
void web_preflight(struct web *web, struct http_exchange *ex)
{
	const char *origin = http_exchange_header(ex, "Origin");

	if (!host_is_loopback(http_exchange_header(ex, "Host")) ||
	    http_exchange_header_count(ex, "Origin") != 1 || !peer_origin(web, origin)) {
		web_respond_error(ex, 403, "cross-origin request refused");
		return;
	}
	web_allow_peer(ex, origin);
	http_exchange_add_header(ex, "Access-Control-Allow-Methods", "GET, POST");
	http_exchange_add_header(ex, "Access-Control-Allow-Headers", "Content-Type");
	http_exchange_add_header(ex, "Access-Control-Max-Age", "60");
	http_exchange_respond(ex, 204, NULL, "", 0);
}

/* The DNS-rebinding and CSRF rules of web.h. Every request but the PUBLIC ones (the login page
 * and the dashboard's static files) needs the API token, as a Bearer header (the CLI) or the
 * dashboard's session cookie (DASHBOARD): what the API answers is the agent's whole argv
 * stream, not for every local user; without it, 401. An Origin header proves nothing, any
 * local program can send one: an Origin that is not the dashboard's or a peer's (peers.h), or
 * a cross-site fetch, is refused (403) even with the token. Returns true when the request may go
 * on; otherwise it has been answered. */
bool web_request_allowed(struct web *web, struct http_exchange *ex, bool dashboard, bool public)
{
	const char *origin = http_exchange_header(ex, "Origin");
	const char *site = http_exchange_header(ex, "Sec-Fetch-Site");
	bool peer = false;

	if (!host_is_loopback(http_exchange_header(ex, "Host"))) {
		web_respond_error(ex, 403, "host not allowed");
		return false;
	}
	/* The first of two would decide; refuse the ambiguity. */
	if (http_exchange_header_count(ex, "Host") > 1 ||
	    http_exchange_header_count(ex, "Origin") > 1 ||
	    http_exchange_header_count(ex, "Cookie") > 1) {
		web_respond_error(ex, 400, "repeated Host, Origin or Cookie header");
		return false;
	}
	if (origin) {
		bool ok = false;

		for (size_t i = 0; dashboard && i < 3; i++)
			ok |= !strcmp(origin, web->origins[i]);
		/* The dashboard of another supervisor of ours shows our asks too (peers.h). */
		if (!ok && dashboard && peer_origin(web, origin))
			ok = peer = true;
		if (!ok) {
			web_respond_error(ex, 403, "cross-origin request refused");
			return false;
		}
	}
	/* Another port of 127.0.0.1 is the same site, not the same origin: only a peer's. */
	if (site && strcmp(site, "same-origin") && strcmp(site, "none") &&
	    !(peer && !strcmp(site, "same-site"))) {
		web_respond_error(ex, 403, "cross-site request refused");
		return false;
	}
	if (peer)
		web_allow_peer(ex, origin);
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
bool web_dashboard_login(struct web *web, struct http_exchange *ex)
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
cJSON *web_body_object(struct http_exchange *ex, bool empty_ok)
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
		web_respond_error(ex, 400, "request body required");
		return NULL;
	}
	if (cl_json_parse_strict(body, len, JSON_MAX_DEPTH, JSON_MAX_VALUES, &err, &root) < 0) {
		char msg[sizeof(err.msg) + 32];

		snprintf(msg, sizeof(msg), "invalid JSON body: %s", err.msg);
		web_respond_error(ex, 400, msg);
		return NULL;
	}
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		web_respond_error(ex, 400, "invalid JSON body: expected an object");
		return NULL;
	}
	return root;
}

/* "/approve/ID" → "ID" when PATH starts with PREFIX and the rest is one segment. */
const char *web_path_arg(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(path, prefix, n) || !path[n] || strchr(path + n, '/'))
		return NULL;
	return path + n;
}

/* ---- life cycle -------------------------------------------------------------------------- */

static int start_server(struct web *web, const struct web_listen *l, http_handler_fn fn,
                        struct http_server **ret, const char *what, struct cl_error *err)
{
	struct http_server_config hc = {
	        .addr = l->len ? &l->addr : NULL,
	        .addr_len = l->len,
	        .port_fallback = web->config.port_fallback,
	        .max_body = 1024 * 1024,
	};
	char where[CL_ADDRESS_MAX] = "127.0.0.1:0";
	int r;

	if (l->disabled)
		return 0;
	r = http_server_new(web->loop, &hc, fn, web, ret);
	if (r < 0) {
		if (l->len)
			cl_address_format(&l->addr, where, sizeof(where));
		cl_error_set(err, r, "%s on %s: %s", what, where, strerror(-r));
	}
	return r;
}

static const struct approvals_observer_ops web_observer_ops = {
        .event = web_on_queue_event,
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
	hostexec_set_listener(hostexec, web_on_running_event, web);
	if (!web->config.heartbeat_ms)
		web->config.heartbeat_ms = DEFAULT_HEARTBEAT_MS;
	r = start_server(web, &config->approval, web_on_approval, &web->approval, "approval server",
	                 err);
	if (r >= 0)
		r = start_server(web, &config->tokens, web_on_tokens, &web->token_srv, "token API",
		                 err);
	if (r >= 0)
		r = start_server(web, &config->request, web_on_request, &web->request_srv,
		                 "request server", err);
	if (r < 0) {
		web_free(web);
		return r;
	}
	port = web_approval_port(web);
	snprintf(web->origins[0], sizeof(web->origins[0]), "http://127.0.0.1:%u", port);
	snprintf(web->origins[1], sizeof(web->origins[1]), "http://localhost:%u", port);
	snprintf(web->origins[2], sizeof(web->origins[2]), "http://[::1]:%u", port);
	r = loop_add_timer(loop, loop_now_ms() + web->config.heartbeat_ms, web_on_heartbeat, web,
	                   &web->heartbeat);
	if (r < 0) {
		web->heartbeat = NULL;
		web_free(web);
		return cl_error_set(err, r, "the event streams' heartbeat: %s", strerror(-r));
	}
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
	web_streams_free(web);
	web_requests_free(web);
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
