/* A small HTTP/1.1 server on the supervisor's event loop, built on libmicrohttpd (external
 * epoll mode: MHD's epoll fd sits in our loop, so handlers run on the loop's thread and never
 * race the queue).
 *
 * The handler sees one complete request (headers and a bounded body) as an http_exchange and
 * answers in one of three ways:
 *   - at once: http_exchange_respond() before returning;
 *   - later: return without answering, then call http_exchange_respond() from any loop
 *     callback (the connection is suspended meanwhile; POST /request blocks this way). If the
 *     server stops first, the exchange's on_gone callback runs;
 *   - as a stream: http_exchange_stream_start(), then http_stream_write() as events come
 *     (Server-Sent Events), http_stream_end() to finish. Writes are bounded per client: a
 *     client that does not read gets -ENOBUFS and should be dropped.
 * An exchange stays valid until its on_gone callback ran (set one when keeping the pointer)
 * or, for an immediate answer, until the handler returns.
 *
 * Bodies over max_body get 413 and headers over the connection memory limit 431 before the
 * handler is called; methods, hosts and origins are the handler's business. */
#ifndef CLOISTER_HTTP_SERVER_H
#define CLOISTER_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct loop;
struct http_server;
struct http_exchange;

typedef void (*http_handler_fn)(void *userdata, struct http_exchange *ex);
/* The exchange ends: the client went away, the answer was sent, or the server stops. */
typedef void (*http_gone_fn)(void *userdata, struct http_exchange *ex);

struct http_server_config {
	const struct sockaddr_storage *addr; /* where, port 0: any free one; NULL: 127.0.0.1:0 */
	socklen_t addr_len;
	bool port_fallback;       /* when the port is taken, take any free one instead of failing */
	unsigned max_connections; /* 0: 512 */
	size_t max_body;          /* 0: 64 KiB */
	size_t max_stream_queue;  /* bytes queued per stream client; 0: 256 KiB */
	unsigned idle_timeout_s;  /* 0: 60 */
};

/* Listen and register with LOOP. Returns 0, -EADDRINUSE (port taken, no fallback), or another
 * -errno. */
int http_server_new(struct loop *loop, const struct http_server_config *config,
                    http_handler_fn handler, void *userdata, struct http_server **ret);
/* Stops listening, ends every stream and pending exchange (their on_gone runs). NULL is fine. */
void http_server_free(struct http_server *srv);
uint16_t http_server_port(const struct http_server *srv);

/* The request. Strings stay valid as long as the exchange. */
const char *http_exchange_method(const struct http_exchange *ex);
const char *http_exchange_path(const struct http_exchange *ex); /* without the query */
/* A header by case-insensitive name; NULL when absent. */
const char *http_exchange_header(const struct http_exchange *ex, const char *name);
/* How many times the header NAME (case-insensitive) came. */
unsigned http_exchange_header_count(const struct http_exchange *ex, const char *name);
/* A query argument (URL-decoded); NULL when absent. */
const char *http_exchange_query(const struct http_exchange *ex, const char *name);
/* The body, NUL-terminated (an embedded NUL may exist: use *ret_len). */
const char *http_exchange_body(const struct http_exchange *ex, size_t *ret_len);

/* Track an exchange the handler keeps: FN runs once when it ends (never from inside
 * http_exchange_respond / http_stream_end called by the owner itself). */
void http_exchange_set_gone(struct http_exchange *ex, http_gone_fn fn, void *userdata);

/* Add a response header (before responding). Returns 0 or -ENOMEM. */
int http_exchange_add_header(struct http_exchange *ex, const char *name, const char *value);
/* Answer with STATUS and a copy of BODY. Each exchange is answered once: later calls return
 * -EALREADY. Returns 0 or -errno. */
int http_exchange_respond(struct http_exchange *ex, unsigned status, const char *content_type,
                          const void *body, size_t len);

/* Start a streamed 200 answer. Returns 0 or -errno. */
int http_exchange_stream_start(struct http_exchange *ex, const char *content_type);
/* Queue bytes to a stream. -ENOBUFS when the client's queue is full (drop it with
 * http_stream_end), -EPIPE when it already ended. */
int http_stream_write(struct http_exchange *ex, const void *data, size_t len);
/* Finish the stream after what is queued; the exchange then ends. */
void http_stream_end(struct http_exchange *ex);

#endif
