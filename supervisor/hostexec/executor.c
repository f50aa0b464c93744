#include "supervisor/hostexec/executor.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/tcp_listen.h"
#include "base/say.h"
#include "protocol/json_strict.h"
#include "protocol/message.h"
#include "supervisor/hostexec/executor_client.h"

#define EXECUTOR_PROG PROG " executor"
#define SECRET_ENV    "CLOISTER_EXECUTOR_SECRET"
#define LINGER_MS     2000
#define EXIT_USAGE    64
#define EXIT_LISTEN   1

enum conn_state {
	CONN_READING,
	CONN_RUNNING,
	CONN_WRITING,
	CONN_LINGER, /* answered; reading what the client still sends until it closes */
};

struct conn {
	struct executor_server *server;
	struct conn *prev, *next;
	int fd;
	bool registered;
	enum conn_state state;
	char peer[64];
	char *in;
	size_t in_len, in_size;
	char *out;
	size_t out_len, out_off;
	struct executor_job *job;
	struct loop_timer *timer;
	uint64_t started_ms;
	char what[160]; /* for the log: the command, printable */
};

struct executor_server {
	struct loop *loop;
	int listen_fd;
	bool listening; /* listen_fd is in the loop */
	uint16_t port;
	char *secret;
	size_t secret_len;
	unsigned max_conns;
	unsigned nconns;
	uint64_t idle_ms;
	FILE *log;
	struct executor *local;
	struct conn *conns;
};

bool executor_secret_equal(const char *given, size_t given_len, const char *secret,
                           size_t secret_len)
{
	/* Every byte of the given secret is looked at, whatever the real one is; the real one is
	 * indexed modulo its length so that its length does not decide how long this takes. */
	volatile unsigned char diff = given_len != secret_len;

	if (secret_len == 0)
		return false;
	for (size_t i = 0; i < given_len; i++)
		diff |= (unsigned char)given[i] ^ (unsigned char)secret[i % secret_len];
	return diff == 0;
}

static void log_line(struct executor_server *s, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

static void log_line(struct executor_server *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->log)
		return;
	fputs("executor: ", s->log);
	va_start(ap, fmt);
	vfprintf(s->log, fmt, ap);
	va_end(ap);
	fputc('\n', s->log);
	fflush(s->log);
}

/* ---- connections ----------------------------------------------------------------------------- */

static int on_listen(struct loop *loop, int fd, uint32_t events, void *userdata);
static int on_conn_io(struct loop *loop, int fd, uint32_t events, void *userdata);

static void set_listening(struct executor_server *s, bool on)
{
	if (s->listening == on || s->listen_fd < 0)
		return;
	if (on)
		s->listening = loop_add_fd(s->loop, s->listen_fd, EPOLLIN, on_listen, s) == 0;
	else {
		loop_del_fd(s->loop, s->listen_fd);
		s->listening = false;
	}
}

static void conn_close(struct conn *c)
{
	struct executor_server *s = c->server;

	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (c->timer)
		loop_cancel_timer(s->loop, c->timer);
	executor_job_cancel(c->job);
	if (c->registered)
		loop_del_fd(s->loop, c->fd);
	close(c->fd);
	if (c->in)
		explicit_bzero(c->in, c->in_len); /* the request carried the secret */
	free(c->in);
	free(c->out);
	free(c);
	s->nconns--;
	set_listening(s, true);
}

static int on_conn_timeout(struct loop *loop, void *userdata)
{
	struct conn *c = userdata;

	c->timer = NULL;
	if (c->state == CONN_READING)
		log_line(c->server, "%s: no complete request in time, closing", c->peer);
	else if (c->state == CONN_WRITING)
		log_line(c->server, "%s: client does not read its response, closing", c->peer);
	conn_close(c);
	return 0;
}

static void conn_arm_timer(struct conn *c, uint64_t ms)
{
	if (c->timer)
		loop_cancel_timer(c->server->loop, c->timer);
	c->timer = NULL;
	if (ms &&
	    loop_add_timer(c->server->loop, loop_now_ms() + ms, on_conn_timeout, c, &c->timer) < 0)
		c->timer = NULL;
}

static int conn_watch(struct conn *c, uint32_t events)
{
	int r;

	if (c->registered)
		return loop_mod_fd(c->server->loop, c->fd, events);
	r = loop_add_fd(c->server->loop, c->fd, events, on_conn_io, c);
	if (r == 0)
		c->registered = true;
	return r;
}

static void conn_unwatch(struct conn *c)
{
	if (c->registered)
		loop_del_fd(c->server->loop, c->fd);
	c->registered = false;
}

/* Send resp (consumed) and close after it. */
static void conn_respond(struct conn *c, struct cl_executor_response *resp)
{
	struct cl_error err = {{0}};
	char *json = NULL;
	size_t len;

	if (!resp || cl_executor_response_to_json(resp, &err, &json) < 0) {
		/* Cannot happen for what we build (text is bounded and valid); say something. */
		free(json);
		json = strdup("{\"status\":\"error\",\"error\":\"executor: cannot encode the "
		              "response\"}");
	}
	cl_executor_response_free(resp);
	if (!json) {
		conn_close(c);
		return;
	}
	len = strlen(json);
	c->out = realloc(json, len + 1);
	if (!c->out) {
		free(json);
		conn_close(c);
		return;
	}
	c->out[len] = '\n';
	c->out_len = len + 1;
	c->out_off = 0;
	c->state = CONN_WRITING;
	conn_arm_timer(c, c->server->idle_ms);
	if (conn_watch(c, EPOLLOUT) < 0)
		conn_close(c);
}

static void conn_respond_error(struct conn *c, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

static void conn_respond_error(struct conn *c, const char *fmt, ...)
{
	struct cl_executor_response *resp = calloc(1, sizeof(*resp));
	va_list ap;

	if (resp) {
		resp->status = CL_EXECUTOR_ERROR;
		va_start(ap, fmt);
		if (vasprintf(&resp->error, fmt, ap) < 0)
			resp->error = NULL;
		va_end(ap);
		if (!resp->error) {
			free(resp);
			resp = NULL;
		}
	}
	conn_respond(c, resp);
}

static void on_job_done(struct cl_executor_response *resp, void *userdata)
{
	struct conn *c = userdata;
	uint64_t ms = loop_now_ms() - c->started_ms;

	c->job = NULL;
	if (resp->status == CL_EXECUTOR_ERROR)
		log_line(c->server, "%s: %s: error: %s", c->peer, c->what, resp->error);
	else
		log_line(c->server, "%s: %s: %s, exit %d, %llu ms", c->peer, c->what,
		         resp->status == CL_EXECUTOR_TIMEOUT ? "timeout" : "completed",
		         resp->exit_code, (unsigned long long)ms);
	conn_respond(c, resp);
}

/* 1: the line is JSON whose "secret" is right; 0: JSON without the right secret; <0: not JSON. */
static int presented_secret_ok(struct executor_server *s, const char *line, size_t len,
                               struct cl_error *err)
{
	_cleanup_cjson_ cJSON *root = NULL;
	const cJSON *secret;
	int r;

	r = cl_json_parse_strict(line, len, CL_MESSAGE_MAX_DEPTH, CL_MESSAGE_MAX_VALUES, err,
	                         &root);
	if (r < 0)
		return r;
	secret = cJSON_GetObjectItemCaseSensitive(root, "secret");
	if (!cJSON_IsString(secret) || strlen(secret->valuestring) > CL_MESSAGE_MAX_SECRET)
		return 0;
	return executor_secret_equal(secret->valuestring, strlen(secret->valuestring), s->secret,
	                             s->secret_len);
}

static void conn_handle_line(struct conn *c, size_t len)
{
	struct executor_server *s = c->server;
	struct cl_executor_request *req = NULL;
	struct cl_error err = {{0}};
	int r;

	conn_unwatch(c);
	r = cl_executor_request_parse(c->in, len, &err, &req);
	if (r < 0) {
		struct cl_error err2 = {{0}};
		/* Check the secret anyway, so that only an authenticated peer learns what is wrong
		 * with its request beyond "not JSON". */
		int ok = presented_secret_ok(s, c->in, len, &err2);

		if (ok == 0) {
			log_line(s, "%s: invalid secret", c->peer);
			conn_respond_error(c, "invalid secret");
		} else {
			log_line(s, "%s: invalid request: %s", c->peer, err.msg);
			conn_respond_error(c, "invalid request: %s", err.msg);
		}
		return;
	}
	if (!executor_secret_equal(req->secret, strlen(req->secret), s->secret, s->secret_len)) {
		cl_executor_request_free(req);
		log_line(s, "%s: invalid secret", c->peer);
		conn_respond_error(c, "invalid secret");
		return;
	}
	{
		char name[128];

		cl_json_printable(req->command, strlen(req->command), name, sizeof(name));
		snprintf(c->what, sizeof(c->what), "exec \"%s\" with %zu args", name, req->argc);
	}
	c->state = CONN_RUNNING;
	c->started_ms = loop_now_ms();
	conn_arm_timer(c, 0); /* the command has its own timeout */
	r = executor_submit(s->local, req, on_job_done, c, &c->job);
	cl_executor_request_free(req);
	if (r < 0) {
		log_line(s, "%s: %s: cannot start: %s", c->peer, c->what, strerror(-r));
		conn_respond_error(c, "executor: %s", strerror(-r));
	}
}

static void conn_read_request(struct conn *c)
{
	for (;;) {
		size_t before = c->in_len;
		char *nl;
		ssize_t n;

		if (c->in_len == c->in_size) {
			size_t size = c->in_size ? c->in_size * 2 : 4096;
			char *p;

			if (size > EXECUTOR_MAX_LINE + 1)
				size = EXECUTOR_MAX_LINE + 1;
			if (size == c->in_size) {
				log_line(c->server, "%s: request line longer than %d bytes",
				         c->peer, EXECUTOR_MAX_LINE);
				conn_respond_error(c, "invalid request: line longer than %d bytes",
				                   EXECUTOR_MAX_LINE);
				return;
			}
			p = realloc(c->in, size);
			if (!p) {
				conn_close(c);
				return;
			}
			c->in = p;
			c->in_size = size;
		}
		n = recv(c->fd, c->in + c->in_len, c->in_size - c->in_len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0) {
			conn_close(c);
			return;
		}
		if (n == 0) {
			/* The client closed its side: what it sent is the request, if anything. */
			if (c->in_len == 0)
				conn_close(c);
			else
				conn_handle_line(c, c->in_len);
			return;
		}
		c->in_len += (size_t)n;
		nl = memchr(c->in + before, '\n', c->in_len - before);
		if (nl) {
			conn_handle_line(c, (size_t)(nl - c->in));
			return;
		}
	}
}

static void conn_write(struct conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			conn_arm_timer(c, c->server->idle_ms);
			return;
		}
		if (n < 0) {
			conn_close(c);
			return;
		}
		c->out_off += (size_t)n;
	}
	/* All sent: half-close so the client sees the end, and read until it closes. Closing with
	 * unread input would reset the connection and could destroy the response in flight. */
	shutdown(c->fd, SHUT_WR);
	c->state = CONN_LINGER;
	conn_arm_timer(c, c->server->idle_ms < LINGER_MS ? c->server->idle_ms : LINGER_MS);
	if (conn_watch(c, EPOLLIN) < 0)
		conn_close(c);
}

static void conn_linger(struct conn *c)
{
	char buf[4096];

	for (;;) {
		ssize_t n = recv(c->fd, buf, sizeof(buf), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			conn_close(c);
			return;
		}
	}
}

static int on_conn_io(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct conn *c = userdata;

	switch (c->state) {
	case CONN_READING:
		conn_read_request(c);
		break;
	case CONN_WRITING:
		conn_write(c);
		break;
	case CONN_LINGER:
		conn_linger(c);
		break;
	case CONN_RUNNING:
		break;
	}
	return 0;
}

static int on_listen(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct executor_server *s = userdata;

	while (s->nconns < s->max_conns) {
		struct sockaddr_in peer;
		socklen_t plen = sizeof(peer);
		struct conn *c;
		char ip[INET_ADDRSTRLEN] = "?";
		int cfd =
		        accept4(fd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (cfd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN)
				log_line(s, "accept: %s", strerror(errno));
			return 0;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(cfd);
			continue;
		}
		c->server = s;
		c->fd = cfd;
		c->state = CONN_READING;
		inet_ntop(AF_INET, &peer.sin_addr, ip, sizeof(ip));
		snprintf(c->peer, sizeof(c->peer), "%s:%u", ip, (unsigned)ntohs(peer.sin_port));
		c->next = s->conns;
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
		s->nconns++;
		if (conn_watch(c, EPOLLIN) < 0) {
			conn_close(c);
			continue;
		}
		conn_arm_timer(c, s->idle_ms);
	}
	/* At the limit: leave new clients in the backlog until a connection ends. */
	set_listening(s, false);
	return 0;
}

/* ---- the server ------------------------------------------------------------------------------ */

int executor_server_new(struct loop *loop, const struct executor_server_options *opt,
                        struct cl_error *err, struct executor_server **ret)
{
	struct sockaddr_in addr = {.sin_family = AF_INET,
	                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	                           .sin_port = htons(opt->port)};
	struct sockaddr_storage ss = {0};
	struct tcp_listen_options lo = {.backlog = 128};
	struct executor_server *s;
	int r;
	size_t slen;

	if (!opt || !opt->secret)
		return cl_error_set(err, -EINVAL, "executor: a secret is required");
	slen = strlen(opt->secret);
	if (slen == 0 || slen > CL_MESSAGE_MAX_SECRET)
		return cl_error_set(err, -EINVAL, "executor: the secret must be 1..%d bytes",
		                    CL_MESSAGE_MAX_SECRET);
	s = calloc(1, sizeof(*s));
	if (!s)
		return cl_error_set(err, -ENOMEM, "out of memory");
	s->loop = loop;
	s->listen_fd = -EBADF;
	s->max_conns =
	        opt->max_connections ? opt->max_connections : EXECUTOR_MAX_CONNECTIONS_DEFAULT;
	s->idle_ms = opt->idle_timeout_ms ? opt->idle_timeout_ms : EXECUTOR_IDLE_TIMEOUT_MS_DEFAULT;
	s->log = opt->log;
	s->secret = strdup(opt->secret);
	s->secret_len = slen;
	if (!s->secret || executor_new_local(loop, &s->local) < 0) {
		executor_server_free(s);
		return cl_error_set(err, -ENOMEM, "out of memory");
	}
	memcpy(&ss, &addr, sizeof(addr));
	r = tcp_listen(&ss, sizeof(addr), &lo, &s->listen_fd, &s->port);
	if (r < 0) {
		executor_server_free(s);
		return cl_error_set(err, r, "executor: listen on 127.0.0.1:%u: %s",
		                    (unsigned)opt->port, strerror(-r));
	}
	set_listening(s, true);
	if (!s->listening) {
		executor_server_free(s);
		return cl_error_set(err, -ENOMEM, "executor: cannot watch the listening socket");
	}
	*ret = s;
	return 0;
}

uint16_t executor_server_port(const struct executor_server *server)
{
	return server->port;
}

void executor_server_free(struct executor_server *s)
{
	if (!s)
		return;
	set_listening(s, false);
	cl_closep(&s->listen_fd);
	s->listen_fd = -EBADF;
	/* Kill and reap every running command first (no callbacks), then drop the clients. */
	executor_free(s->local);
	s->local = NULL;
	for (struct conn *c = s->conns; c; c = c->next)
		c->job = NULL;
	while (s->conns)
		conn_close(s->conns);
	if (s->secret)
		explicit_bzero(s->secret, s->secret_len);
	free(s->secret);
	free(s);
}

/* ---- the command ----------------------------------------------------------------------------- */

static void usage(FILE *out)
{
	fputs("usage: cloister-supervisor executor [OPTIONS]\n"
	      "\n"
	      "Run host commands for the guardian: TCP on 127.0.0.1, one JSON request per\n"
	      "connection, authenticated by a shared secret. Prints CLOISTER_EXECUTOR_PORT=<port>\n"
	      "once listening.\n"
	      "\n"
	      "The secret comes from the environment variable " SECRET_ENV " (removed\n"
	      "from this process's environment at once) or from --secret-file; never from argv.\n"
	      "\n"
	      "options:\n"
	      "  --port N               listen on port N (default: a random free port)\n"
	      "  --secret-file PATH     read the secret from PATH (mode 0600 or stricter)\n"
	      "  --idle-timeout-ms N    close a client that sends no request in N ms (30000)\n"
	      "  --max-connections N    serve at most N clients at once (64)\n"
	      "  -h, --help             show this help\n",
	      out);
}

static int parse_number(const char *opt, const char *s, unsigned long long max,
                        unsigned long long *ret)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (!s[0] || *end || errno || v > max || s[0] == '-') {
		fprintf(stderr, EXECUTOR_PROG ": %s: expected a number in 0..%llu, got \"%s\"\n",
		        opt, max, s);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

/* The secret from PATH: a regular file only its owner may read or write; one trailing newline
 * is dropped. */
static int read_secret_file(const char *path, char **ret)
{
	char buf[CL_MESSAGE_MAX_SECRET + 3];
	_cleanup_close_ int fd = -EBADF;
	struct stat st;
	size_t len = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, EXECUTOR_PROG ": --secret-file %s: %m\n", path);
		return -errno;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, EXECUTOR_PROG ": --secret-file %s: not a regular file\n", path);
		return -EINVAL;
	}
	if (st.st_mode & 077) {
		fprintf(stderr,
		        EXECUTOR_PROG
		        ": --secret-file %s: mode %04o lets group or others read or write it; "
		        "chmod 600 it\n",
		        path, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	for (;;) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, EXECUTOR_PROG ": --secret-file %s: %m\n", path);
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == sizeof(buf))
			break;
	}
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len > 0 && buf[len - 1] == '\r')
		len--;
	if (len == 0 || len > CL_MESSAGE_MAX_SECRET || memchr(buf, '\0', len)) {
		fprintf(stderr,
		        EXECUTOR_PROG
		        ": --secret-file %s: the secret must be 1..%d bytes without NUL\n",
		        path, CL_MESSAGE_MAX_SECRET);
		explicit_bzero(buf, sizeof(buf));
		return -EINVAL;
	}
	*ret = strndup(buf, len);
	explicit_bzero(buf, sizeof(buf));
	return *ret ? 0 : -ENOMEM;
}

static int on_signal(struct loop *loop, int sig, void *userdata)
{
	struct executor_server *s = userdata;

	log_line(s, "stopping on %s", sig == SIGINT ? "SIGINT" : "SIGTERM");
	loop_exit(loop, 0);
	return 0;
}

int executor_main(int argc, char **argv)
{
	struct executor_server_options opt = {.log = stderr};
	struct executor_server *server = NULL;
	struct cl_error err = {{0}};
	const char *secret_file = NULL;
	_cleanup_free_ char *secret = NULL;
	struct loop *loop = NULL;
	const char *env;
	sigset_t sigs;
	int r;

	/* First of all: children must never inherit the secret. */
	env = getenv(SECRET_ENV);
	if (env && env[0])
		secret = strdup(env);
	if (env)
		explicit_bzero((char *)env, strlen(env));
	unsetenv(SECRET_ENV);
	if (env && env[0] && !secret) {
		fprintf(stderr, EXECUTOR_PROG ": out of memory\n");
		return EXIT_LISTEN;
	}

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		unsigned long long v;

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return 0;
		}
		if (i + 1 >= argc ||
		    (strcmp(a, "--port") != 0 && strcmp(a, "--secret-file") != 0 &&
		     strcmp(a, "--idle-timeout-ms") != 0 && strcmp(a, "--max-connections") != 0)) {
			if (strncmp(a, "--secret", 8) == 0 && strcmp(a, "--secret-file") != 0)
				fprintf(stderr, EXECUTOR_PROG
				        ": the secret is never taken from the command "
				        "line; use " SECRET_ENV " or --secret-file\n");
			else
				fprintf(stderr, EXECUTOR_PROG ": %s \"%s\"\n",
				        i + 1 >= argc && a[0] == '-' ? "missing value for"
				                                     : "unknown argument",
				        a);
			usage(stderr);
			return EXIT_USAGE;
		}
		if (strcmp(a, "--secret-file") == 0) {
			secret_file = argv[++i];
			continue;
		}
		if (strcmp(a, "--port") == 0) {
			if (parse_number(a, argv[++i], 65535, &v) < 0)
				return EXIT_USAGE;
			opt.port = (uint16_t)v;
		} else if (strcmp(a, "--idle-timeout-ms") == 0) {
			if (parse_number(a, argv[++i], 86400000, &v) < 0 || v == 0)
				return EXIT_USAGE;
			opt.idle_timeout_ms = v;
		} else {
			if (parse_number(a, argv[++i], 4096, &v) < 0 || v == 0)
				return EXIT_USAGE;
			opt.max_connections = (unsigned)v;
		}
	}
	if (secret_file) {
		if (secret) {
			fprintf(stderr, EXECUTOR_PROG ": give the secret in " SECRET_ENV
			                              " or with --secret-file, not both\n");
			return EXIT_USAGE;
		}
		if (read_secret_file(secret_file, &secret) < 0)
			return EXIT_USAGE;
	}
	if (!secret) {
		fprintf(stderr,
		        EXECUTOR_PROG ": no secret: set " SECRET_ENV
		                      " or pass --secret-file PATH; refusing to run commands "
		                      "for anyone\n");
		return EXIT_USAGE;
	}
	if (strlen(secret) > CL_MESSAGE_MAX_SECRET) {
		fprintf(stderr, EXECUTOR_PROG ": the secret is longer than %d bytes\n",
		        CL_MESSAGE_MAX_SECRET);
		return EXIT_USAGE;
	}
	opt.secret = secret;

	signal(SIGPIPE, SIG_IGN);
	r = loop_new(&loop);
	if (r < 0) {
		fprintf(stderr, EXECUTOR_PROG ": %s\n", strerror(-r));
		return EXIT_LISTEN;
	}
	r = executor_server_new(loop, &opt, &err, &server);
	explicit_bzero(secret, strlen(secret));
	if (r < 0) {
		fprintf(stderr, EXECUTOR_PROG ": %s\n", err.msg);
		loop_free(loop);
		return EXIT_LISTEN;
	}
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	r = loop_add_signals(loop, &sigs, on_signal, server);
	if (r < 0) {
		fprintf(stderr, EXECUTOR_PROG ": signals: %s\n", strerror(-r));
		executor_server_free(server);
		loop_free(loop);
		return EXIT_LISTEN;
	}
	printf("CLOISTER_EXECUTOR_PORT=%u\n", (unsigned)executor_server_port(server));
	fflush(stdout);
	log_line(server, "listening on 127.0.0.1:%u", (unsigned)executor_server_port(server));

	r = loop_run(loop);
	executor_server_free(server);
	loop_free(loop);
	if (r < 0) {
		fprintf(stderr, EXECUTOR_PROG ": %s\n", strerror(-r));
		return EXIT_LISTEN;
	}
	return 0;
}
