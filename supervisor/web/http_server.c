/* libmicrohttpd in external-epoll mode on our loop; see http_server.h. */
#include "supervisor/web/http_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/tcp_listen.h"
#include "protocol/address.h"
#include "base/loop.h"

#define DEFAULT_MAX_CONNECTIONS 512
#define DEFAULT_MAX_BODY        (64 * 1024)
#define DEFAULT_STREAM_QUEUE    (256 * 1024)
#define DEFAULT_IDLE_TIMEOUT_S  60
#define MAX_HEADERS_ADDED       16

struct header {
	char *name;
	char *value;
};

struct http_exchange {
	struct http_server *srv;
	struct MHD_Connection *conn;
	struct http_exchange *prev, *next;
	char *method;
	char *path;
	char *body;
	size_t body_len;
	bool body_too_large;
	bool dispatched;
	bool suspended;
	bool ended; /* MHD told us it is over */
	/* While suspended, MHD does not watch the socket: we do, to see the client leave. */
	bool watching;
	int watch_fd;

	http_gone_fn gone;
	void *gone_userdata;

	/* The answer, once chosen. */
	bool answered;
	unsigned status;
	char *content_type;
	void *resp_body;
	size_t resp_len;
	struct header headers[MAX_HEADERS_ADDED];
	unsigned n_headers;

	/* Streams. */
	bool streaming;
	bool stream_ended;
	char *sbuf;
	size_t slen, scap;
};

struct http_server {
	struct loop *loop;
	struct MHD_Daemon *daemon;
	int epoll_fd;
	struct loop_timer *timer;
	http_handler_fn handler;
	void *userdata;
	struct http_server_config config;
	uint16_t port;
	char authority[64];
	unsigned connections;
	struct http_exchange *exchanges;
	bool stopping;
	bool kicked; /* a run "now" is scheduled */
};

static void exchange_unlink(struct http_exchange *ex)
{
	struct http_server *srv = ex->srv;

	if (ex->prev)
		ex->prev->next = ex->next;
	else if (srv->exchanges == ex)
		srv->exchanges = ex->next;
	if (ex->next)
		ex->next->prev = ex->prev;
	ex->prev = ex->next = NULL;
}

static void exchange_free(struct http_exchange *ex)
{
	if (!ex)
		return;
	free(ex->method);
	free(ex->path);
	free(ex->body);
	free(ex->content_type);
	free(ex->resp_body);
	for (unsigned i = 0; i < ex->n_headers; i++) {
		free(ex->headers[i].name);
		free(ex->headers[i].value);
	}
	free(ex->sbuf);
	free(ex);
}

static void exchange_gone(struct http_exchange *ex)
{
	http_gone_fn fn = ex->gone;

	ex->gone = NULL;
	if (fn)
		fn(ex->gone_userdata, ex);
}

static void kick(struct http_server *srv);

static void exchange_unwatch(struct http_exchange *ex)
{
	if (!ex->watching)
		return;
	ex->watching = false;
	loop_del_fd(ex->srv->loop, ex->watch_fd);
}

static void exchange_resume(struct http_exchange *ex)
{
	exchange_unwatch(ex);
	if (ex->suspended && ex->conn) {
		ex->suspended = false;
		MHD_resume_connection(ex->conn);
		/* MHD's epoll fd does not become readable for a resume made outside MHD_run in
		 * external-epoll mode: run it again from the loop, at once. */
		kick(ex->srv);
	}
}

/* The client closed its end while its exchange waited (a deferred answer, an idle stream):
 * it is gone, as Go's server cancels a request whose connection reads EOF. The owner learns it
 * now (a blocked POST /request cancels its ask) and MHD finishes the connection. */
static int on_hangup(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct http_exchange *ex = userdata;

	exchange_unwatch(ex);
	exchange_gone(ex);
	ex->stream_ended = true;
	exchange_resume(ex);
	return 0;
}

static void exchange_suspend(struct http_exchange *ex)
{
	const union MHD_ConnectionInfo *ci;

	ex->suspended = true;
	MHD_suspend_connection(ex->conn);
	ci = MHD_get_connection_info(ex->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci && !ex->watching && !ex->srv->stopping &&
	    loop_add_fd(ex->srv->loop, ci->connect_fd, EPOLLRDHUP, on_hangup, ex) == 0) {
		ex->watch_fd = ci->connect_fd;
		ex->watching = true;
	}
}

/* ---- timers and the loop ----------------------------------------------------------------- */

static void arm_timer(struct http_server *srv);

static int on_timer(struct loop *loop, void *userdata)
{
	struct http_server *srv = userdata;

	srv->timer = NULL;
	srv->kicked = false;
	MHD_run(srv->daemon);
	arm_timer(srv);
	return 0;
}

static void arm_timer(struct http_server *srv)
{
	MHD_UNSIGNED_LONG_LONG timeout;

	if (srv->kicked)
		return; /* a run at once is due anyway */
	if (srv->timer) {
		loop_cancel_timer(srv->loop, srv->timer);
		srv->timer = NULL;
	}
	/* Without the timer, MHD's timeouts wait for the next event on its fd, which arms it
	 * again. */
	if (MHD_get_timeout(srv->daemon, &timeout) == MHD_YES &&
	    loop_add_timer(srv->loop, loop_now_ms() + timeout, on_timer, srv, &srv->timer) < 0)
		srv->timer = NULL;
}

static void kick(struct http_server *srv)
{
	if (srv->kicked || srv->stopping)
		return;
	if (srv->timer) {
		loop_cancel_timer(srv->loop, srv->timer);
		srv->timer = NULL;
	}
	srv->kicked = loop_add_timer(srv->loop, 0, on_timer, srv, &srv->timer) == 0;
}

static int on_epoll(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct http_server *srv = userdata;

	MHD_run(srv->daemon);
	arm_timer(srv);
	return 0;
}

/* ---- MHD callbacks ----------------------------------------------------------------------- */

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct http_exchange *ex = cls;
	size_t n;

	if (ex->slen == 0) {
		if (ex->stream_ended || ex->srv->stopping)
			return MHD_CONTENT_READER_END_OF_STREAM;
		/* Nothing to send: park the connection until http_stream_write wakes it. */
		exchange_suspend(ex);
		return 0;
	}
	n = ex->slen < max ? ex->slen : max;
	memcpy(buf, ex->sbuf, n);
	memmove(ex->sbuf, ex->sbuf + n, ex->slen - n);
	ex->slen -= n;
	return (ssize_t)n;
}

static enum MHD_Result queue_answer(struct http_exchange *ex)
{
	struct MHD_Response *resp;
	enum MHD_Result r;

	if (ex->streaming)
		resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_reader,
		                                         ex, NULL);
	else
		resp = MHD_create_response_from_buffer(ex->resp_len, ex->resp_body,
		                                       MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	if (ex->content_type)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ex->content_type);
	for (unsigned i = 0; i < ex->n_headers; i++)
		MHD_add_response_header(resp, ex->headers[i].name, ex->headers[i].value);
	r = MHD_queue_response(ex->conn, ex->status, resp);
	MHD_destroy_response(resp);
	return r;
}

static enum MHD_Result plain_error(struct MHD_Connection *conn, unsigned status, const char *msg)
{
	char body[256];
	struct MHD_Response *resp;
	enum MHD_Result r;
	int n = snprintf(body, sizeof(body), "{\"error\":\"%s\"}\n", msg);

	resp = MHD_create_response_from_buffer((size_t)n, body, MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	r = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return r;
}

/* The request's Content-Length, 0 without one; UINT64_MAX when it is not a plain number
 * (libmicrohttpd refuses those itself, but then it is surely too large). */
static uint64_t announced_length(struct MHD_Connection *conn)
{
	const char *v =
	        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	uint64_t n = 0;

	if (!v)
		return 0;
	for (; *v; v++) {
		if (*v < '0' || *v > '9' || n > (UINT64_MAX - 9) / 10)
			return UINT64_MAX;
		n = n * 10 + (uint64_t)(*v - '0');
	}
	return n;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
	struct http_server *srv = cls;
	struct http_exchange *ex = *req_cls;

	if (!ex) {
		if (srv->stopping)
			return MHD_NO;
		ex = calloc(1, sizeof(*ex));
		if (!ex)
			return MHD_NO;
		ex->srv = srv;
		ex->conn = conn;
		ex->method = strdup(method);
		ex->path = strdup(url);
		if (!ex->method || !ex->path) {
			exchange_free(ex);
			return MHD_NO;
		}
		ex->next = srv->exchanges;
		if (ex->next)
			ex->next->prev = ex;
		srv->exchanges = ex;
		*req_cls = ex;
		/* A body announced larger than we take is refused before a byte of it is read
		 * (and before "100 Continue"): nobody waits for it, nothing is buffered. */
		if (announced_length(conn) > srv->config.max_body) {
			ex->dispatched = true;
			return plain_error(conn, MHD_HTTP_CONTENT_TOO_LARGE,
			                   "request body too large");
		}
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		size_t n = *upload_data_size;

		*upload_data_size = 0;
		if (ex->body_too_large || ex->body_len + n > srv->config.max_body) {
			ex->body_too_large = true;
			return MHD_YES; /* keep reading; answer 413 at the end */
		}
		char *b = realloc(ex->body, ex->body_len + n + 1);

		if (!b)
			return MHD_NO;
		memcpy(b + ex->body_len, upload_data, n);
		ex->body = b;
		ex->body_len += n;
		ex->body[ex->body_len] = '\0';
		return MHD_YES;
	}
	if (ex->answered)
		return queue_answer(ex); /* resumed after a deferred answer */
	if (ex->dispatched) {
		/* Resumed without an answer (server stopping). */
		return plain_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "server stopping");
	}
	ex->dispatched = true;
	if (ex->body_too_large)
		return plain_error(conn, MHD_HTTP_CONTENT_TOO_LARGE, "request body too large");
	if (!ex->body) {
		ex->body = strdup("");
		if (!ex->body)
			return MHD_NO;
	}
	srv->handler(srv->userdata, ex);
	if (ex->answered)
		return queue_answer(ex);
	/* Deferred: park the connection until http_exchange_respond. */
	exchange_suspend(ex);
	return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
	struct http_exchange *ex = *req_cls;

	if (!ex)
		return;
	*req_cls = NULL;
	ex->ended = true;
	ex->conn = NULL;
	exchange_unwatch(ex);
	exchange_unlink(ex);
	exchange_gone(ex);
	exchange_free(ex);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
	struct http_server *srv = cls;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED)
		srv->connections++;
	else if (srv->connections > 0)
		srv->connections--;
}

/* ---- public ------------------------------------------------------------------------------ */

int http_server_new(struct loop *loop, const struct http_server_config *config,
                    http_handler_fn handler, void *userdata, struct http_server **ret)
{
	struct http_server *srv;
	const union MHD_DaemonInfo *info;
	struct sockaddr_storage loopback;
	const struct sockaddr_storage *addr = config->addr;
	socklen_t addr_len = config->addr_len;
	struct tcp_listen_options lo = {
	        .backlog = 128,
	        .v6only = true,
	        .port_fallback = config->port_fallback,
	};
	int fd = -EBADF;
	int r;

	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	srv->loop = loop;
	srv->handler = handler;
	srv->userdata = userdata;
	srv->config = *config;
	srv->epoll_fd = -EBADF;
	if (!srv->config.max_connections)
		srv->config.max_connections = DEFAULT_MAX_CONNECTIONS;
	if (!srv->config.max_body)
		srv->config.max_body = DEFAULT_MAX_BODY;
	if (!srv->config.max_stream_queue)
		srv->config.max_stream_queue = DEFAULT_STREAM_QUEUE;
	if (!srv->config.idle_timeout_s)
		srv->config.idle_timeout_s = DEFAULT_IDLE_TIMEOUT_S;

	if (!addr) {
		(void)cl_address_parse_local("0", NULL, &loopback, &addr_len);
		addr = &loopback;
	}
	r = tcp_listen(addr, addr_len, &lo, &fd, &srv->port);
	if (r < 0) {
		free(srv);
		return r;
	}
	{
		struct sockaddr_storage bound = *addr;

		/* The address asked for, with the port the kernel gave. */
		cl_address_set_port(&bound, srv->port);
		cl_address_format(&bound, srv->authority, sizeof(srv->authority));
	}

	srv->daemon = MHD_start_daemon(
	        MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL, on_request, srv,
	        MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
	        MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv, MHD_OPTION_CONNECTION_LIMIT,
	        (unsigned int)srv->config.max_connections, MHD_OPTION_CONNECTION_TIMEOUT,
	        (unsigned int)srv->config.idle_timeout_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
	        (size_t)(64 * 1024), MHD_OPTION_END);
	if (!srv->daemon) {
		close(fd);
		free(srv);
		return -EIO;
	}
	info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info) {
		http_server_free(srv);
		return -EIO;
	}
	srv->epoll_fd = info->epoll_fd;
	r = loop_add_fd(loop, srv->epoll_fd, EPOLLIN, on_epoll, srv);
	if (r < 0) {
		srv->epoll_fd = -EBADF;
		http_server_free(srv);
		return r;
	}
	arm_timer(srv);
	*ret = srv;
	return 0;
}

void http_server_free(struct http_server *srv)
{
	if (!srv)
		return;
	srv->stopping = true;
	/* Owners drop their pointers first; then every parked connection is woken to finish. */
	for (struct http_exchange *ex = srv->exchanges; ex; ex = ex->next)
		exchange_gone(ex);
	for (struct http_exchange *ex = srv->exchanges; ex; ex = ex->next) {
		ex->stream_ended = true;
		exchange_resume(ex);
	}
	if (srv->timer)
		loop_cancel_timer(srv->loop, srv->timer);
	if (srv->epoll_fd >= 0)
		loop_del_fd(srv->loop, srv->epoll_fd);
	if (srv->daemon) {
		MHD_run(srv->daemon);
		MHD_stop_daemon(srv->daemon);
	}
	free(srv);
}

uint16_t http_server_port(const struct http_server *srv)
{
	return srv->port;
}

const char *http_exchange_method(const struct http_exchange *ex)
{
	return ex->method;
}

const char *http_exchange_path(const struct http_exchange *ex)
{
	return ex->path;
}

const char *http_exchange_header(const struct http_exchange *ex, const char *name)
{
	if (!ex->conn)
		return NULL;
	return MHD_lookup_connection_value(ex->conn, MHD_HEADER_KIND, name);
}

struct header_count {
	const char *name;
	unsigned n;
};

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
	struct header_count *hc = cls;

	if (key && !strcasecmp(key, hc->name))
		hc->n++;
	return MHD_YES;
}

unsigned http_exchange_header_count(const struct http_exchange *ex, const char *name)
{
	struct header_count hc = {.name = name};

	if (ex->conn)
		MHD_get_connection_values(ex->conn, MHD_HEADER_KIND, count_header, &hc);
	return hc.n;
}

const char *http_exchange_query(const struct http_exchange *ex, const char *name)
{
	if (!ex->conn)
		return NULL;
	return MHD_lookup_connection_value(ex->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *http_exchange_body(const struct http_exchange *ex, size_t *ret_len)
{
	if (ret_len)
		*ret_len = ex->body_len;
	return ex->body ? ex->body : "";
}

void http_exchange_set_gone(struct http_exchange *ex, http_gone_fn fn, void *userdata)
{
	ex->gone = fn;
	ex->gone_userdata = userdata;
}

int http_exchange_add_header(struct http_exchange *ex, const char *name, const char *value)
{
	struct header *h;

	if (ex->answered)
		return -EALREADY;
	if (ex->n_headers >= MAX_HEADERS_ADDED)
		return -E2BIG;
	h = &ex->headers[ex->n_headers];
	h->name = strdup(name);
	h->value = strdup(value);
	if (!h->name || !h->value) {
		free(h->name);
		free(h->value);
		return -ENOMEM;
	}
	ex->n_headers++;
	return 0;
}

static int set_content_type(struct http_exchange *ex, const char *content_type)
{
	if (!content_type)
		return 0;
	ex->content_type = strdup(content_type);
	return ex->content_type ? 0 : -ENOMEM;
}

int http_exchange_respond(struct http_exchange *ex, unsigned status, const char *content_type,
                          const void *body, size_t len)
{
	if (ex->answered || ex->ended)
		return -EALREADY;
	if (set_content_type(ex, content_type) < 0)
		return -ENOMEM;
	ex->resp_body = malloc(len ? len : 1);
	if (!ex->resp_body)
		return -ENOMEM;
	if (len)
		memcpy(ex->resp_body, body, len);
	ex->resp_len = len;
	ex->status = status;
	ex->answered = true;
	/* The owner answered: it is done with the exchange. */
	ex->gone = NULL;
	exchange_resume(ex);
	return 0;
}

int http_exchange_stream_start(struct http_exchange *ex, const char *content_type)
{
	if (ex->answered || ex->ended)
		return -EALREADY;
	if (set_content_type(ex, content_type) < 0)
		return -ENOMEM;
	ex->status = MHD_HTTP_OK;
	ex->streaming = true;
	ex->answered = true;
	exchange_resume(ex);
	return 0;
}

int http_stream_write(struct http_exchange *ex, const void *data, size_t len)
{
	if (!ex->streaming || ex->stream_ended || ex->ended)
		return -EPIPE;
	if (ex->slen + len > ex->srv->config.max_stream_queue)
		return -ENOBUFS;
	if (ex->slen + len > ex->scap) {
		size_t cap = ex->scap ? ex->scap : 4096;
		char *b;

		while (cap < ex->slen + len)
			cap *= 2;
		b = realloc(ex->sbuf, cap);
		if (!b)
			return -ENOMEM;
		ex->sbuf = b;
		ex->scap = cap;
	}
	memcpy(ex->sbuf + ex->slen, data, len);
	ex->slen += len;
	exchange_resume(ex);
	return 0;
}

void http_stream_end(struct http_exchange *ex)
{
	if (!ex->streaming || ex->stream_ended)
		return;
	ex->stream_ended = true;
	ex->gone = NULL;
	exchange_resume(ex);
}
