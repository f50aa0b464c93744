/* Who listens on a TCP port, from the kernel's socket table; see listeners.h. */
#include "supervisor/web/listeners.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"

/* include/net/tcp_states.h, not exported to user space. */
#define TCP_STATE_LISTEN 10
/* A dump's datagrams are at most 32 KiB (netlink's own cap on a dump's buffer). */
#define ANSWER_BUF (32 * 1024)
/* Datagrams read per question at most: the kernel sends the one port's listeners, a few. */
#define MAX_READS 64

int listeners_request(int family, uint16_t port, uint32_t seq, void *buf, size_t size)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
	} msg = {
	        .nlh =
	                {
	                        .nlmsg_len = sizeof(msg),
	                        .nlmsg_type = SOCK_DIAG_BY_FAMILY,
	                        .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
	                        .nlmsg_seq = seq,
	                },
	        /* The state and the port are the kernel's filter: with LISTEN alone it walks
	         * its listening sockets only, never the established and TIME_WAIT ones. */
	        .req =
	                {
	                        .sdiag_family = (uint8_t)family,
	                        .sdiag_protocol = IPPROTO_TCP,
	                        .idiag_states = 1U << TCP_STATE_LISTEN,
	                        .id.idiag_sport = htons(port),
	                        .id.idiag_cookie = {INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE},
	                },
	};

	if (size < sizeof(msg))
		return -ENOBUFS;
	memcpy(buf, &msg, sizeof(msg));
	return (int)sizeof(msg);
}

/* Does the socket M count as WHERE's listener of PORT? (The kernel filtered already; a reply
 * is read as data all the same.) */
static bool counts(const struct inet_diag_msg *m, uint16_t port, enum listeners_where where)
{
	if (m->idiag_state != TCP_STATE_LISTEN || ntohs(m->id.idiag_sport) != port)
		return false;
	if (where == LISTENERS_ANY)
		return m->idiag_family == AF_INET || m->idiag_family == AF_INET6;
	return m->idiag_family == AF_INET && m->id.idiag_src[0] == htonl(INADDR_LOOPBACK);
}

int listeners_parse(const void *buf, size_t len, uint32_t seq, uint16_t port,
                    enum listeners_where where, struct listeners_answer *ans)
{
	const struct nlmsghdr *nlh = buf;
	/* NLMSG_OK and NLMSG_NEXT want an int. */
	int left = len > INT32_MAX ? INT32_MAX : (int)len;

	for (; NLMSG_OK(nlh, left); nlh = NLMSG_NEXT(nlh, left)) {
		if (nlh->nlmsg_seq != seq)
			continue;
		if (nlh->nlmsg_type == NLMSG_DONE) {
			ans->done = true;
			return 0;
		}
		if (nlh->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(nlh);

			if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
				return -EBADMSG;
			if (e->error == 0)
				continue; /* an acknowledgement */
			return e->error < 0 && e->error > -4096 ? e->error : -EBADMSG;
		}
		if (nlh->nlmsg_type != SOCK_DIAG_BY_FAMILY)
			continue;
		if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
			return -EBADMSG;
		const struct inet_diag_msg *m = NLMSG_DATA(nlh);

		if (counts(m, port, where) && !ans->found) {
			ans->found = true;
			ans->uid = (uid_t)m->idiag_uid;
		}
	}
	/* Bytes left that make no message: a cut or forged datagram. */
	return left > 0 ? -EBADMSG : 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* One family's question, answered by DEADLINE (ms of now_ms()). */
static int ask(int family, uint16_t port, enum listeners_where where, uint64_t deadline,
               struct listeners_answer *ans)
{
	_cleanup_close_ int fd = -EBADF;
	_cleanup_free_ void *buf = NULL;
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	char req[LISTENERS_REQUEST_SIZE];
	const uint32_t seq = 1; /* a socket of its own: one question on it */
	int n, r;

	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	buf = malloc(ANSWER_BUF);
	if (!buf)
		return -ENOMEM;
	n = listeners_request(family, port, seq, req, sizeof(req));
	if (n < 0)
		return n;
	if (sendto(fd, req, (size_t)n, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	for (unsigned i = 0; i < MAX_READS && !ans->done && !ans->found; i++) {
		uint64_t t = now_ms();
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		struct sockaddr_nl from;
		socklen_t fromlen = sizeof(from);
		ssize_t got;

		if (t >= deadline)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)(deadline - t));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		got = recvfrom(fd, buf, ANSWER_BUF, MSG_DONTWAIT | MSG_TRUNC,
		               (struct sockaddr *)&from, &fromlen);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got < 0)
			return -errno;
		if (fromlen != sizeof(from) || from.nl_pid != 0)
			continue; /* only the kernel answers */
		if ((size_t)got > ANSWER_BUF)
			return -EMSGSIZE;
		r = listeners_parse(buf, (size_t)got, seq, port, where, ans);
		if (r < 0)
			return r;
	}
	return ans->found || ans->done ? 0 : -ETIMEDOUT;
}

int listeners_find(uint16_t port, enum listeners_where where, uid_t *ret_uid)
{
	static const int families[] = {AF_INET, AF_INET6};
	uint64_t deadline = now_ms() + LISTENERS_TIMEOUT_MS;

	for (size_t i = 0; i < (where == LISTENERS_ANY ? 2U : 1U); i++) {
		struct listeners_answer ans = {0};
		int r = ask(families[i], port, where, deadline, &ans);

		/* No IPv6 in this kernel or namespace: nothing listens there. */
		if (families[i] == AF_INET6 && (r == -ENOENT || r == -EAFNOSUPPORT))
			continue;
		if (r < 0)
			return r;
		if (ans.found) {
			if (ret_uid)
				*ret_uid = ans.uid;
			return 0;
		}
	}
	return -ENOENT;
}
