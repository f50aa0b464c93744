#include "supervisor/hostexec/executor_client.h"

#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "supervisor/hostexec/command.h"

struct executor {
	struct loop *loop;
	bool remote;
	struct sockaddr_storage addr; /* remote */
	socklen_t addr_len;
	char addr_text[96];
	char *secret;
	struct executor_job *jobs;
};

struct executor_job {
	struct executor *ex;
	struct executor_job *prev, *next;
	executor_done_fn done;
	void *userdata;
	struct loop_timer *timer;           /* local: deliver `early`; remote: the deadline */
	struct cl_executor_response *early; /* local: an error known at submit time */
	struct command *cmd;                /* local, while running */
	bool cancelled;                     /* local: waiting for the cancelled command */
	int fd;                             /* remote */
	bool connected;
	char *out;
	size_t out_len, out_off;
	char *in;
	size_t in_len, in_size;
};

/* ---- common ---------------------------------------------------------------------------------- */

static void job_unlink(struct executor_job *job)
{
	struct executor *ex = job->ex;

	if (job->prev)
		job->prev->next = job->next;
	else if (ex->jobs == job)
		ex->jobs = job->next;
	if (job->next)
		job->next->prev = job->prev;
	job->prev = job->next = NULL;
}

/* Free what the job holds, without callbacks. */
static void job_free(struct executor_job *job)
{
	if (!job)
		return;
	if (job->timer)
		loop_cancel_timer(job->ex->loop, job->timer);
	command_free(job->cmd);
	if (job->fd >= 0) {
		loop_del_fd(job->ex->loop, job->fd);
		close(job->fd);
	}
	cl_executor_response_free(job->early);
	if (job->out)
		explicit_bzero(job->out, job->out_len); /* it holds the secret */
	free(job->out);
	free(job->in);
	free(job);
}

static struct cl_executor_response *error_response(const char *fmt, ...)
        __attribute__((format(printf, 1, 2)));

static struct cl_executor_response *error_response(const char *fmt, ...)
{
	struct cl_executor_response *resp = calloc(1, sizeof(*resp));
	va_list ap;
	int r;

	if (!resp)
		return NULL;
	resp->status = CL_EXECUTOR_ERROR;
	va_start(ap, fmt);
	r = vasprintf(&resp->error, fmt, ap);
	va_end(ap);
	if (r < 0) {
		free(resp);
		return NULL;
	}
	return resp;
}

/* Hand resp (NULL: out of memory) to the job's callback and free the job. */
static void job_complete(struct executor_job *job, struct cl_executor_response *resp)
{
	executor_done_fn done = job->done;
	void *userdata = job->userdata;

	if (!resp)
		resp = error_response("executor: out of memory");
	job_unlink(job);
	job_free(job);
	if (done && resp)
		done(resp, userdata);
	else
		cl_executor_response_free(resp);
}

static int deliver_early(struct loop *loop, void *userdata)
{
	struct executor_job *job = userdata;

	job->timer = NULL;
	job_complete(job, TAKE_PTR(job->early));
	return 0;
}

/* An answer known now, delivered from the loop. */
static int job_answer_soon(struct executor_job *job, struct cl_executor_response *resp)
{
	if (!resp)
		return -ENOMEM;
	job->early = resp;
	return loop_add_timer(job->ex->loop, 0, deliver_early, job, &job->timer);
}

/* ---- local ----------------------------------------------------------------------------------- */

static void on_command_done(struct command *cmd, struct command_result *res, void *userdata)
{
	struct executor_job *job = userdata;
	struct cl_executor_response *resp;

	if (job->cancelled) {
		job_unlink(job);
		job_free(job);
		return;
	}
	resp = calloc(1, sizeof(*resp));
	if (resp) {
		resp->status = res->status == COMMAND_TIMEOUT ? CL_EXECUTOR_TIMEOUT
		                                              : CL_EXECUTOR_COMPLETED;
		resp->exit_code = res->status == COMMAND_TIMEOUT ? -1 : res->exit_code;
		resp->stdout_text = TAKE_PTR(res->stdout_text);
		resp->stderr_text = TAKE_PTR(res->stderr_text);
	}
	job_complete(job, resp);
}

static int local_start(struct executor_job *job, const struct cl_executor_request *req)
{
	_cleanup_free_ char **argv = NULL;
	struct cl_error err = {{0}};
	struct command_spec spec = {0};

	if (!req->command || !req->command[0])
		return job_answer_soon(job, error_response("exec: no command"));
	argv = calloc(req->argc + 2, sizeof(*argv));
	if (!argv)
		return -ENOMEM;
	argv[0] = req->command;
	for (size_t i = 0; i < req->argc; i++)
		argv[i + 1] = req->args[i];
	spec.file = req->command;
	spec.argv = argv;
	spec.workdir = req->workdir;
	spec.env = req->env;
	spec.envc = req->envc;
	spec.timeout_ms = req->timeout_ms ? req->timeout_ms : CL_EXECUTOR_TIMEOUT_DEFAULT_MS;
	spec.on_done = on_command_done;
	spec.userdata = job;
	if (command_start(job->ex->loop, &spec, &err, &job->cmd) < 0)
		return job_answer_soon(job, error_response("%s", err.msg));
	return 0;
}

int executor_new_local(struct loop *loop, struct executor **ret)
{
	struct executor *ex = calloc(1, sizeof(*ex));

	if (!ex)
		return -ENOMEM;
	ex->loop = loop;
	*ret = ex;
	return 0;
}

/* ---- remote ---------------------------------------------------------------------------------- */

static void remote_fail(struct executor_job *job, const char *what, int e)
{
	job_complete(job, error_response("executor at %s: %s%s%s", job->ex->addr_text, what,
	                                 e ? ": " : "", e ? strerror(e) : ""));
}

static void remote_got_line(struct executor_job *job, size_t len)
{
	struct cl_executor_response *resp = NULL;
	struct cl_error err = {{0}};

	if (cl_executor_response_parse(job->in, len, &err, &resp) < 0) {
		job_complete(job, error_response("executor at %s: bad response: %s",
		                                 job->ex->addr_text, err.msg));
		return;
	}
	job_complete(job, resp);
}

static void remote_read(struct executor_job *job)
{
	for (;;) {
		char *nl;
		ssize_t n;

		if (job->in_len == job->in_size) {
			size_t size = job->in_size ? job->in_size * 2 : 16384;
			char *p;

			if (size > CL_EXECUTOR_RESPONSE_MAX_INPUT + 1)
				size = CL_EXECUTOR_RESPONSE_MAX_INPUT + 1;
			if (size == job->in_size) {
				remote_fail(job, "response longer than the limit", 0);
				return;
			}
			p = realloc(job->in, size);
			if (!p) {
				remote_fail(job, "reading the response", ENOMEM);
				return;
			}
			job->in = p;
			job->in_size = size;
		}
		n = recv(job->fd, job->in + job->in_len, job->in_size - job->in_len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0) {
			remote_fail(job, "reading the response", errno);
			return;
		}
		if (n == 0) {
			remote_fail(job, "connection closed without a response", 0);
			return;
		}
		nl = memchr(job->in + job->in_len, '\n', (size_t)n);
		job->in_len += (size_t)n;
		if (nl) {
			remote_got_line(job, (size_t)(nl - job->in));
			return;
		}
	}
}

static int on_remote_io(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct executor_job *job = userdata;

	if (!job->connected) {
		int e = 0;
		socklen_t l = sizeof(e);

		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l) < 0)
			e = errno;
		if (e) {
			remote_fail(job, "connect", e);
			return 0;
		}
		job->connected = true;
	}
	while (job->out_off < job->out_len) {
		ssize_t n = send(fd, job->out + job->out_off, job->out_len - job->out_off,
		                 MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n < 0) {
			remote_fail(job, "sending the request", errno);
			return 0;
		}
		job->out_off += (size_t)n;
		if (job->out_off == job->out_len) {
			int r = loop_mod_fd(loop, fd, EPOLLIN);

			/* Still watched for EPOLLOUT, the loop would call us again and again. */
			if (r < 0)
				remote_fail(job, "waiting for the response", -r);
			return 0;
		}
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		remote_read(job);
	return 0;
}

static int on_remote_deadline(struct loop *loop, void *userdata)
{
	struct executor_job *job = userdata;

	job->timer = NULL;
	remote_fail(job, "no response in time", 0);
	return 0;
}

static int remote_start(struct executor_job *job, const struct cl_executor_request *req)
{
	struct executor *ex = job->ex;
	struct cl_executor_request copy = *req;
	struct cl_error err = {{0}};
	_cleanup_free_ char *json = NULL;
	uint32_t timeout = req->timeout_ms ? req->timeout_ms : CL_EXECUTOR_TIMEOUT_DEFAULT_MS;
	size_t len;
	int r;

	copy.secret = ex->secret;
	copy.timeout_ms = timeout;
	if (cl_executor_request_to_json(&copy, &err, &json) < 0)
		return job_answer_soon(job, error_response("invalid request: %s", err.msg));
	len = strlen(json);
	job->out = malloc(len + 1);
	if (!job->out)
		return -ENOMEM;
	memcpy(job->out, json, len);
	job->out[len] = '\n';
	job->out_len = len + 1;
	/* The request holds the secret: do not leave copies lying around longer than needed. */
	explicit_bzero(json, len);

	job->fd = socket(ex->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (job->fd < 0)
		return job_answer_soon(job, error_response("executor at %s: socket: %s",
		                                           ex->addr_text, strerror(errno)));
	if (connect(job->fd, (const struct sockaddr *)&ex->addr, ex->addr_len) < 0 &&
	    errno != EINPROGRESS) {
		int e = errno;

		close(job->fd);
		job->fd = -EBADF;
		return job_answer_soon(job, error_response("executor at %s: connect: %s",
		                                           ex->addr_text, strerror(e)));
	}
	r = loop_add_fd(ex->loop, job->fd, EPOLLOUT, on_remote_io, job);
	if (r < 0) {
		close(job->fd);
		job->fd = -EBADF;
		return r;
	}
	return loop_add_timer(ex->loop, loop_now_ms() + timeout + EXECUTOR_REMOTE_GRACE_MS,
	                      on_remote_deadline, job, &job->timer);
}

int executor_new_remote(struct loop *loop, const char *host, uint16_t port, const char *secret,
                        struct cl_error *err, struct executor **ret)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	struct addrinfo *ai = NULL;
	struct executor *ex;
	char service[8];
	int r;

	if (!host || !secret || !secret[0] || strlen(secret) > CL_MESSAGE_MAX_SECRET)
		return cl_error_set(err, -EINVAL,
		                    "executor: host and a secret of 1..%d bytes "
		                    "are required",
		                    CL_MESSAGE_MAX_SECRET);
	snprintf(service, sizeof(service), "%u", (unsigned)port);
	r = getaddrinfo(host, service, &hints, &ai);
	if (r != 0)
		return cl_error_set(err, -EHOSTUNREACH, "executor: cannot resolve %s: %s", host,
		                    gai_strerror(r));
	ex = calloc(1, sizeof(*ex));
	if (!ex || !(ex->secret = strdup(secret)) || ai->ai_addrlen > sizeof(ex->addr)) {
		freeaddrinfo(ai);
		if (ex)
			free(ex->secret);
		free(ex);
		return cl_error_set(err, -ENOMEM, "out of memory");
	}
	memcpy(&ex->addr, ai->ai_addr, ai->ai_addrlen);
	ex->addr_len = ai->ai_addrlen;
	freeaddrinfo(ai);
	snprintf(ex->addr_text, sizeof(ex->addr_text), "%s%s%s:%u", strchr(host, ':') ? "[" : "",
	         host, strchr(host, ':') ? "]" : "", (unsigned)port);
	ex->loop = loop;
	ex->remote = true;
	*ret = ex;
	return 0;
}

/* ---- the interface --------------------------------------------------------------------------- */

int executor_submit(struct executor *ex, const struct cl_executor_request *req,
                    executor_done_fn done, void *userdata, struct executor_job **ret_job)
{
	struct executor_job *job;
	int r;

	if (!ex || !req || !done)
		return -EINVAL;
	job = calloc(1, sizeof(*job));
	if (!job)
		return -ENOMEM;
	job->ex = ex;
	job->fd = -EBADF;
	job->done = done;
	job->userdata = userdata;
	r = ex->remote ? remote_start(job, req) : local_start(job, req);
	if (r < 0) {
		job_free(job);
		return r;
	}
	job->next = ex->jobs;
	if (ex->jobs)
		ex->jobs->prev = job;
	ex->jobs = job;
	if (ret_job)
		*ret_job = job;
	return 0;
}

void executor_job_cancel(struct executor_job *job)
{
	if (!job)
		return;
	if (job->cmd) {
		/* Keep the job until the command is gone; it is freed without a callback. */
		job->cancelled = true;
		job->done = NULL;
		command_cancel(job->cmd);
		return;
	}
	job_unlink(job);
	job_free(job);
}

void executor_free(struct executor *ex)
{
	if (!ex)
		return;
	while (ex->jobs) {
		struct executor_job *job = ex->jobs;

		job_unlink(job);
		job_free(job);
	}
	if (ex->secret)
		explicit_bzero(ex->secret, strlen(ex->secret));
	free(ex->secret);
	free(ex);
}
