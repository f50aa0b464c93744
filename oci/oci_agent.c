#include "oci/oci_agent.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "oci/oci_socket.h"
#include "base/loop.h"

#define DEFAULT_TIMEOUT_MS      5000
#define DEFAULT_MAX_CONNECTIONS 32
#define FIRST_BUFFER            4096

struct agent_conn {
	struct oci_agent *agent;
	int fd;
	pid_t peer_pid;
	char *buf;
	size_t len, size;
	int fds[OCI_MAX_FDS];
	size_t n_fds;
	struct loop_timer *timer;
	struct agent_conn *next;
};

struct oci_agent {
	struct loop *loop;
	struct oci_socket sock;
	struct oci_agent_options opts;
	struct agent_conn *conns;
	unsigned n_conns;
};

int oci_check_seccomp_fd(int fd)
{
	char link[64], name[64];
	uint64_t id = 0;
	ssize_t n;

	if (fd < 0)
		return -EBADF;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, name, sizeof(name) - 1);
	if (n < 0)
		return errno == ENOENT ? -EBADF : -errno;
	name[n] = '\0';
	if (strcmp(name, "anon_inode:seccomp notify") != 0)
		return -ENOTTY;
	/* Id 0 is never pending: a listener answers ENOENT; anything else (another anon inode
	 * that happens to share the name) ENOTTY or EINVAL. */
	if (ioctl(fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0 || errno != ENOENT)
		return -ENOTTY;
	return 0;
}

static void report(struct oci_agent *a, int error, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void report(struct oci_agent *a, int error, const char *fmt, ...)
{
	char msg[CL_ERROR_MAX];
	va_list ap;

	if (!a->opts.on_error)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	a->opts.on_error(a->opts.userdata, error, msg);
}

static void conn_free(struct agent_conn *c)
{
	struct oci_agent *a = c->agent;

	for (struct agent_conn **p = &a->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	a->n_conns--;
	if (c->timer)
		loop_cancel_timer(a->loop, c->timer);
	loop_del_fd(a->loop, c->fd);
	close(c->fd);
	for (size_t i = 0; i < c->n_fds; i++)
		close(c->fds[i]);
	free(c->buf);
	free(c);
}

/* Read what is there: data into buf, fds into c->fds. 1 progress, 0 end of stream, -EAGAIN
 * nothing yet, other -errno (with report) for a message we refuse. */
static int conn_read(struct agent_conn *c)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * (OCI_MAX_FDS + 1))];
	} control;
	struct iovec iov;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	int r = 0;
	ssize_t n;

	if (c->len == c->size) {
		size_t size = c->size ? c->size * 2 : FIRST_BUFFER;
		char *buf;

		if (size > OCI_STATE_MAX_BYTES)
			size = OCI_STATE_MAX_BYTES;
		if (size == c->size) {
			report(c->agent, -E2BIG, "message longer than %d bytes",
			       OCI_STATE_MAX_BYTES);
			return -E2BIG;
		}
		buf = realloc(c->buf, size);
		if (!buf) {
			report(c->agent, -ENOMEM, "out of memory");
			return -ENOMEM;
		}
		c->buf = buf;
		c->size = size;
	}
	iov.iov_base = c->buf + c->len;
	iov.iov_len = c->size - c->len;
	msg.msg_control = control.buf;
	msg.msg_controllen = sizeof(control.buf);
	memset(&control, 0, sizeof(control));
	do
		n = recvmsg(c->fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == EWOULDBLOCK)
			return -EAGAIN;
		r = -errno;
		report(c->agent, r, "connection: %s", strerror(-r));
		return r;
	}

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		size_t k;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) {
			r = -EBADMSG;
			continue;
		}
		k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (c->n_fds < OCI_MAX_FDS)
				c->fds[c->n_fds++] = fd;
			else {
				close(fd);
				r = -E2BIG;
			}
		}
	}
	if (msg.msg_flags & MSG_CTRUNC) {
		report(c->agent, -EMSGSIZE, "more than %d fds", OCI_MAX_FDS);
		return -EMSGSIZE;
	}
	if (r == -E2BIG)
		report(c->agent, r, "more than %d fds", OCI_MAX_FDS);
	else if (r < 0)
		report(c->agent, r, "control message other than SCM_RIGHTS");
	if (r < 0)
		return r;
	c->len += (size_t)n;
	return n > 0 ? 1 : 0;
}

/* The message is complete (len bytes of JSON, then only whitespace): check and hand over. */
static void conn_finish(struct agent_conn *c, size_t len)
{
	struct oci_agent *a = c->agent;
	_cleanup_(oci_state_freep) struct oci_state *s = NULL;
	struct cl_error err = {{0}};
	struct oci_identity id;
	int r, lfd;

	for (size_t i = len; i < c->len; i++)
		if (!strchr(" \t\r\n", c->buf[i])) {
			report(a, -EINVAL, "bytes after the message");
			return;
		}
	r = oci_process_state_parse(c->buf, len, &err, &s);
	if (r < 0) {
		report(a, r, "%s", err.msg);
		return;
	}
	if (s->n_fds != c->n_fds) {
		report(a, -EBADMSG, "container %s: fds names %zu fds, %zu arrived", s->id, s->n_fds,
		       c->n_fds);
		return;
	}
	r = oci_state_identity(s, &id, &err);
	if (r < 0) {
		report(a, r, "container %s: %s", s->id, err.msg);
		return;
	}
	lfd = c->fds[s->seccomp_fd_index];
	r = oci_check_seccomp_fd(lfd);
	if (r < 0) {
		report(a, r, "container %s: fds[%d] is not a seccomp listener", s->id,
		       s->seccomp_fd_index);
		return;
	}
	/* Hand the listener over; other fds (none from runc today) are not ours to keep. */
	c->fds[s->seccomp_fd_index] = c->fds[--c->n_fds];
	a->opts.on_container(a->opts.userdata, s, &id, lfd, c->peer_pid);
}

static int on_conn(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct agent_conn *c = userdata;

	for (;;) {
		int r = conn_read(c), len;

		if (r == -EAGAIN)
			return 0;
		if (r < 0) { /* said by conn_read */
			conn_free(c);
			return 0;
		}
		len = oci_message_length(c->buf, c->len);
		if (len > 0) {
			conn_finish(c, (size_t)len);
			conn_free(c);
			return 0;
		}
		if (len == -E2BIG)
			report(c->agent, len, "message longer than %d bytes", OCI_STATE_MAX_BYTES);
		else if (len < 0)
			report(c->agent, len, "message is not a JSON object");
		if (len < 0) {
			conn_free(c);
			return 0;
		}
		if (r == 0) {
			if (c->len > 0 || c->n_fds > 0)
				report(c->agent, -EBADMSG,
				       "connection closed before a whole message");
			conn_free(c);
			return 0;
		}
	}
}

static int on_conn_timeout(struct loop *loop, void *userdata)
{
	struct agent_conn *c = userdata;

	c->timer = NULL; /* fired: the loop frees it */
	report(c->agent, -ETIMEDOUT, "no whole message within %llu ms",
	       (unsigned long long)c->agent->opts.timeout_ms);
	conn_free(c);
	return 0;
}

static int on_listen(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct oci_agent *a = userdata;

	for (;;) {
		struct agent_conn *c;
		pid_t pid = 0;
		int cfd = oci_socket_accept(&a->sock, &pid), r;

		if (cfd == -EAGAIN)
			return 0;
		if (cfd == -EPERM) {
			report(a, cfd, "refused a peer that is neither root nor our user");
			continue;
		}
		if (cfd < 0) {
			/* EMFILE and the like: say it, and try again at the next event. */
			report(a, cfd, "accept: %s", strerror(-cfd));
			return 0;
		}
		if (a->n_conns >= a->opts.max_connections) {
			report(a, -EBUSY, "more than %u connections at once",
			       a->opts.max_connections);
			close(cfd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(cfd);
			return 0;
		}
		c->agent = a;
		c->fd = cfd;
		c->peer_pid = pid;
		r = loop_add_fd(a->loop, cfd, EPOLLIN, on_conn, c);
		if (r >= 0)
			r = loop_add_timer(a->loop, loop_now_ms() + a->opts.timeout_ms,
			                   on_conn_timeout, c, &c->timer);
		c->next = a->conns;
		a->conns = c;
		a->n_conns++;
		if (r < 0) {
			report(a, r, "loop: %s", strerror(-r));
			conn_free(c);
		}
	}
}

int oci_agent_new(struct loop *loop, const struct oci_agent_options *opts, struct oci_agent **ret,
                  struct cl_error *err)
{
	struct oci_agent *a;
	int r;

	if (!opts->on_container)
		return cl_error_set(err, -EINVAL, "no container callback");
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->loop = loop;
	a->opts = *opts;
	a->opts.path = NULL;
	if (!a->opts.timeout_ms)
		a->opts.timeout_ms = DEFAULT_TIMEOUT_MS;
	if (!a->opts.max_connections)
		a->opts.max_connections = DEFAULT_MAX_CONNECTIONS;
	a->sock.fd = -EBADF;
	r = oci_socket_listen(opts->path, SOCK_STREAM, &a->sock, err);
	if (r < 0) {
		free(a);
		return r;
	}
	r = loop_add_fd(loop, a->sock.fd, EPOLLIN, on_listen, a);
	if (r < 0) {
		oci_socket_close(&a->sock);
		free(a);
		return cl_error_set(err, r, "loop: %s", strerror(-r));
	}
	*ret = a;
	return 0;
}

void oci_agent_free(struct oci_agent *a)
{
	if (!a)
		return;
	while (a->conns)
		conn_free(a->conns);
	if (a->sock.fd >= 0)
		loop_del_fd(a->loop, a->sock.fd);
	oci_socket_close(&a->sock);
	free(a);
}

const char *oci_agent_path(const struct oci_agent *a)
{
	return a->sock.path;
}
