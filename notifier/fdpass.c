#include "notifier/fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/cleanup.h"

/* Room for more fds than we accept, so that extra ones are seen (and closed) instead of being
 * dropped silently with MSG_CTRUNC. */
#define FDPASS_MAX_SEEN 8

int fdpass_send(int sock, int fd, const void *data, size_t len)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} control;
	static const char zero = 0;
	struct iovec iov = {.iov_base = (void *)(len ? data : &zero), .iov_len = len ? len : 1};
	struct msghdr msg = {
	        .msg_iov = &iov,
	        .msg_iovlen = 1,
	        .msg_control = control.buf,
	        .msg_controllen = sizeof(control.buf),
	};
	struct cmsghdr *cmsg;
	ssize_t n;

	if (fd < 0)
		return -EBADF;
	memset(&control, 0, sizeof(control));
	cmsg = CMSG_FIRSTHDR(&msg);
	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	cmsg->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n != iov.iov_len)
		return -EMSGSIZE;
	return 0;
}

int fdpass_recv(int sock, void *buf, size_t size, size_t *ret_len, int *ret_fd)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * FDPASS_MAX_SEEN)];
	} control;
	char dummy;
	struct iovec iov = {.iov_base = size ? buf : &dummy, .iov_len = size ? size : 1};
	struct msghdr msg = {
	        .msg_iov = &iov,
	        .msg_iovlen = 1,
	        .msg_control = control.buf,
	        .msg_controllen = sizeof(control.buf),
	};
	int fds[FDPASS_MAX_SEEN];
	size_t nfds = 0;
	ssize_t n;
	int r = 0;

	memset(&control, 0, sizeof(control));
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		size_t k;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
			r = -EBADMSG;
			continue;
		}
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k && nfds < FDPASS_MAX_SEEN; i++)
			memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
	}
	if (n == 0 && nfds == 0)
		r = -ECONNRESET;
	else if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		r = -EMSGSIZE;
	else if (nfds != 1)
		r = r ? r : -EBADMSG;
	if (r < 0) {
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		return r;
	}
	if (ret_len)
		*ret_len = size ? (size_t)n : 0;
	*ret_fd = fds[0];
	return 0;
}
