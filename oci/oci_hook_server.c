#include "oci/oci_hook_server.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "notifier/fdpass.h"
#include "oci/oci_socket.h"
#include "protocol/oci_hook.h"
#include "base/loop.h"

#define DEFAULT_TIMEOUT_MS      5000
#define DEFAULT_MAX_CONNECTIONS 32

struct oci_hook_request {
	struct oci_hook_server *server;
	int fd;
	pid_t peer_pid;
	bool watching; /* fd registered on the loop (until the message arrived) */
	struct loop_timer *timer;
	struct oci_state *state;
	struct oci_identity id;
	int netns_fd;
	struct oci_hook_request *next;
};

struct oci_hook_server {
	struct loop *loop;
	struct oci_socket sock;
	struct oci_hook_server_options opts;
	struct oci_hook_request *reqs;
	unsigned n_reqs;
};

/* Is fd a network namespace other than ours? 0 yes; -EINVAL another kind of file or
 * namespace; -EEXIST our own network namespace. */
static int oci_check_netns_fd(int fd)
{
	struct stat st, self;
	int type = ioctl(fd, NS_GET_NSTYPE);

	if (type < 0)
		return errno == EBADF ? -EBADF : -EINVAL;
	if (type != CLONE_NEWNET)
		return -EINVAL;
	if (fstat(fd, &st) < 0 || stat("/proc/thread-self/ns/net", &self) < 0)
		return -errno;
	if (st.st_dev == self.st_dev && st.st_ino == self.st_ino)
		return -EEXIST;
	return 0;
}

static void report(struct oci_hook_server *s, int error, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void report(struct oci_hook_server *s, int error, const char *fmt, ...)
{
	char msg[CL_ERROR_MAX];
	va_list ap;

	if (!s->opts.on_error)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s->opts.on_error(s->opts.userdata, error, msg);
}

static void req_free(struct oci_hook_request *req)
{
	struct oci_hook_server *s = req->server;

	for (struct oci_hook_request **p = &s->reqs; *p; p = &(*p)->next)
		if (*p == req) {
			*p = req->next;
			break;
		}
	s->n_reqs--;
	if (req->timer)
		loop_cancel_timer(s->loop, req->timer);
	if (req->watching)
		loop_del_fd(s->loop, req->fd);
	close(req->fd);
	if (req->netns_fd >= 0)
		close(req->netns_fd);
	oci_state_free(req->state);
	free(req);
}

static void send_reply(int fd, bool ok, const char *msg)
{
	char buf[OCI_HOOK_REPLY_MAX];
	size_t len = oci_hook_reply_format(ok, msg, buf);

	/* A small message on a fresh socket: the buffer has room. A hook that went away gets
	 * nothing, and its container does not start anyway. */
	(void)!send(fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
}

void oci_hook_request_reply(struct oci_hook_request *req, int error, const char *msg)
{
	send_reply(req->fd, error >= 0, error >= 0 ? NULL : (msg ? msg : strerror(-error)));
	req_free(req);
}

/* Refuse: tell the hook and the owner. */
static void refuse(struct oci_hook_request *req, int error, const char *msg)
{
	report(req->server, error, "%s", msg);
	send_reply(req->fd, false, msg);
	req_free(req);
}

static int on_req(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct oci_hook_request *req = userdata;
	struct oci_hook_server *s = req->server;
	_cleanup_free_ char *buf = malloc(OCI_HOOK_MAX_STATE);
	struct cl_error err = {{0}};
	char msg[CL_ERROR_MAX + 64];
	size_t len = 0;
	int r, nfd = -EBADF;

	if (!buf) {
		refuse(req, -ENOMEM, "out of memory");
		return 0;
	}
	r = fdpass_recv(fd, buf, OCI_HOOK_MAX_STATE, &len, &nfd);
	if (r == -EAGAIN)
		return 0;
	if (r < 0) {
		snprintf(msg, sizeof(msg), "hook message: %s",
		         r == -EMSGSIZE  ? "too long"
		         : r == -EBADMSG ? "not exactly one fd"
		                         : strerror(-r));
		refuse(req, r, msg);
		return 0;
	}
	req->netns_fd = nfd;
	loop_del_fd(loop, fd);
	req->watching = false;
	loop_cancel_timer(loop, req->timer);
	req->timer = NULL;

	r = oci_state_parse(buf, len, &err, &req->state);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "hook state: %s", err.msg);
		refuse(req, r, msg);
		return 0;
	}
	r = oci_check_netns_fd(nfd);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "container %s: %s", req->state->id,
		         r == -EEXIST ? "shares the supervisor's network namespace (host network); "
		                        "cloister needs a network namespace of its own"
		                      : "the fd sent is not a network namespace");
		refuse(req, r, msg);
		return 0;
	}
	r = oci_state_identity(req->state, &req->id, &err);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "container %s: %s", req->state->id, err.msg);
		refuse(req, r, msg);
		return 0;
	}
	s->opts.on_netns(s->opts.userdata, req, req->state, &req->id, req->netns_fd);
	return 0;
}

static int on_req_timeout(struct loop *loop, void *userdata)
{
	struct oci_hook_request *req = userdata;

	req->timer = NULL;
	refuse(req, -ETIMEDOUT, "no hook message in time");
	return 0;
}

static int on_listen(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct oci_hook_server *s = userdata;

	for (;;) {
		struct oci_hook_request *req;
		pid_t pid = 0;
		int cfd = oci_socket_accept(&s->sock, &pid), r;

		if (cfd == -EAGAIN)
			return 0;
		if (cfd == -EPERM) {
			report(s, cfd, "refused a peer that is neither root nor our user");
			continue;
		}
		if (cfd < 0) {
			report(s, cfd, "accept: %s", strerror(-cfd));
			return 0;
		}
		if (s->n_reqs >= s->opts.max_connections) {
			report(s, -EBUSY, "more than %u hooks at once", s->opts.max_connections);
			send_reply(cfd, false, "supervisor busy");
			close(cfd);
			continue;
		}
		req = calloc(1, sizeof(*req));
		if (!req) {
			close(cfd);
			return 0;
		}
		req->server = s;
		req->fd = cfd;
		req->peer_pid = pid;
		req->netns_fd = -EBADF;
		req->next = s->reqs;
		s->reqs = req;
		s->n_reqs++;
		r = loop_add_fd(s->loop, cfd, EPOLLIN, on_req, req);
		req->watching = r >= 0;
		if (r >= 0)
			r = loop_add_timer(s->loop, loop_now_ms() + s->opts.timeout_ms,
			                   on_req_timeout, req, &req->timer);
		if (r < 0) {
			report(s, r, "loop: %s", strerror(-r));
			req_free(req);
		}
	}
}

int oci_hook_server_new(struct loop *loop, const struct oci_hook_server_options *opts,
                        struct oci_hook_server **ret, struct cl_error *err)
{
	struct oci_hook_server *s;
	int r;

	if (!opts->on_netns)
		return cl_error_set(err, -EINVAL, "no netns callback");
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->loop = loop;
	s->opts = *opts;
	s->opts.path = NULL;
	if (!s->opts.timeout_ms)
		s->opts.timeout_ms = DEFAULT_TIMEOUT_MS;
	if (!s->opts.max_connections)
		s->opts.max_connections = DEFAULT_MAX_CONNECTIONS;
	s->sock.fd = -EBADF;
	r = oci_socket_listen(opts->path, SOCK_SEQPACKET, &s->sock, err);
	if (r < 0) {
		free(s);
		return r;
	}
	r = loop_add_fd(loop, s->sock.fd, EPOLLIN, on_listen, s);
	if (r < 0) {
		oci_socket_close(&s->sock);
		free(s);
		return cl_error_set(err, r, "loop: %s", strerror(-r));
	}
	*ret = s;
	return 0;
}

void oci_hook_server_free(struct oci_hook_server *s)
{
	if (!s)
		return;
	while (s->reqs)
		req_free(s->reqs);
	if (s->sock.fd >= 0)
		loop_del_fd(s->loop, s->sock.fd);
	oci_socket_close(&s->sock);
	free(s);
}
