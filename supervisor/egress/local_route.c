/* Route lookups for the proxy's "is this the host itself?"; see local_route.h. */
#include "supervisor/egress/local_route.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/cleanup.h"

/* A route reply is an rtmsg and a handful of attributes (IPv6 adds cache info): well under
 * this. A longer one is cut (MSG_TRUNC) and refused as malformed. */
#define REPLY_MAX 4096
/* Stale replies skipped before giving up (there is never more than one in practice: a reply
 * the previous lookup stopped reading after an error). */
#define MAX_SKIPPED 8
/* Answers kept, by address (direct-mapped: a new address takes its slot's place). */
#define CACHE_SLOTS 64
/* What changes whether an address is this host's: routes (the local table is where an
 * interface address becomes local), policy rules, addresses and links. */
#define WATCHED_GROUPS                                                               \
	(RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_IFADDR | \
	 RTMGRP_IPV6_ROUTE | (1u << (RTNLGRP_IPV4_RULE - 1)) | (1u << (RTNLGRP_IPV6_RULE - 1)))

struct cached {
	bool used, local;
	uint8_t family;
	uint8_t addr[16];
};

struct local_route {
	int fd;
	uint32_t seq;
	int watch_fd; /* the groups above; -EBADF: no cache, every lookup asks the kernel */
	struct cached cache[CACHE_SLOTS];
};

/* A socket on the groups that announce a change, or -EBADF: then nothing is cached. The
 * kernel queues each announcement on it inside the syscall that made the change, after the
 * change itself, so a look at it right before a cached answer is used sees every change made
 * before that look (and a change racing the look would race a fresh lookup just the same). */
static int open_watch(void)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = WATCHED_GROUPS};
	_cleanup_close_ int fd = -EBADF;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -EBADF;
	return TAKE_FD(fd);
}

int local_route_new(struct local_route **ret)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	_cleanup_close_ int fd = -EBADF;
	struct local_route *lr;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	lr = calloc(1, sizeof(*lr));
	if (!lr)
		return -ENOMEM;
	lr->fd = TAKE_FD(fd);
	lr->watch_fd = open_watch();
	*ret = lr;
	return 0;
}

void local_route_free(struct local_route *lr)
{
	if (!lr)
		return;
	if (lr->fd >= 0)
		close(lr->fd);
	if (lr->watch_fd >= 0)
		close(lr->watch_fd);
	free(lr);
}

size_t local_route_request(int family, const void *addr, uint32_t seq, void *buf, size_t size)
{
	size_t alen = family == AF_INET ? 4 : family == AF_INET6 ? 16 : 0;
	size_t head = NLMSG_ALIGN(NLMSG_LENGTH(sizeof(struct rtmsg)));
	size_t total = head + RTA_SPACE(alen);
	struct nlmsghdr nh = {
	        .nlmsg_len = (uint32_t)total,
	        .nlmsg_type = RTM_GETROUTE,
	        .nlmsg_flags = NLM_F_REQUEST,
	        .nlmsg_seq = seq,
	};
	struct rtmsg rt = {
	        .rtm_family = (unsigned char)family,
	        .rtm_dst_len = (unsigned char)(alen * 8),
	};
	struct rtattr dst = {.rta_len = (unsigned short)RTA_LENGTH(alen), .rta_type = RTA_DST};

	if (!alen || size < total)
		return 0;
	memset(buf, 0, total);
	memcpy(buf, &nh, sizeof(nh));
	memcpy((char *)buf + NLMSG_HDRLEN, &rt, sizeof(rt));
	memcpy((char *)buf + head, &dst, sizeof(dst));
	memcpy((char *)buf + head + RTA_LENGTH(0), addr, alen);
	return total;
}

int local_route_parse_reply(const void *buf, size_t len, uint32_t seq, bool *ret_local)
{
	struct nlmsghdr nh;
	struct rtmsg rt;

	/* One message per datagram: the kernel answers a lookup with exactly one. */
	if (len < NLMSG_HDRLEN)
		return -EBADMSG;
	memcpy(&nh, buf, sizeof(nh));
	if (nh.nlmsg_len < NLMSG_HDRLEN || nh.nlmsg_len > len)
		return -EBADMSG;
	if (nh.nlmsg_seq != seq)
		return 0;
	if (nh.nlmsg_type == NLMSG_ERROR) {
		struct nlmsgerr e;

		if (nh.nlmsg_len < NLMSG_LENGTH(sizeof(e)))
			return -EBADMSG;
		memcpy(&e, (const char *)buf + NLMSG_HDRLEN, sizeof(e));
		/* error 0 is an acknowledgement, never an answer to a lookup. */
		return e.error < 0 && e.error > -4096 ? e.error : -EBADMSG;
	}
	if (nh.nlmsg_type != RTM_NEWROUTE || nh.nlmsg_len < NLMSG_LENGTH(sizeof(rt)))
		return -EBADMSG;
	memcpy(&rt, (const char *)buf + NLMSG_HDRLEN, sizeof(rt));
	/* Broadcast is delivered here too; anycast is an IPv6 anycast address of this host. */
	*ret_local = rt.rtm_type == RTN_LOCAL || rt.rtm_type == RTN_ANYCAST ||
	             rt.rtm_type == RTN_BROADCAST;
	return 1;
}

/* Did anything change since the last look? Reads every announcement queued (their content
 * does not matter) and says whether there was one, or an error: an overflow (ENOBUFS) means
 * announcements were lost, anything else that the socket cannot be trusted. The usual answer,
 * nothing queued, costs one recv() that says EAGAIN. */
static bool changed(struct local_route *lr)
{
	bool any = false;

	for (;;) {
		uint8_t sink[REPLY_MAX];
		ssize_t n = recv(lr->watch_fd, sink, sizeof(sink), MSG_DONTWAIT | MSG_TRUNC);

		if (n >= 0) {
			any = true;
			continue;
		}
		if (errno == EAGAIN)
			return any;
		if (errno != EINTR && errno != ENOBUFS) {
			/* Broken: ask the kernel every time from now on. */
			close(lr->watch_fd);
			lr->watch_fd = -EBADF;
			return true;
		}
		any = true;
	}
}

static struct cached *slot_of(struct local_route *lr, int family, const uint8_t *a, size_t alen)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (size_t i = 0; i < alen; i++)
		h = (h ^ a[i]) * 16777619u;
	h ^= (uint32_t)family;
	return &lr->cache[h % CACHE_SLOTS];
}

static int ask_kernel(struct local_route *lr, int family, const void *a)
{
	uint8_t req[128], reply[REPLY_MAX];
	size_t len;
	uint32_t seq = ++lr->seq;

	len = local_route_request(family, a, seq, req, sizeof(req));
	if (!len)
		return -EINVAL;
	if (send(lr->fd, req, len, MSG_NOSIGNAL) != (ssize_t)len)
		return errno ? -errno : -EIO;
	for (int skipped = 0; skipped <= MAX_SKIPPED; skipped++) {
		bool local = false;
		ssize_t n = recv(lr->fd, reply, sizeof(reply), MSG_DONTWAIT | MSG_TRUNC);
		int r;

		if (n < 0)
			return errno == EINTR ? -EAGAIN : -errno; /* EAGAIN: no answer yet */
		if ((size_t)n > sizeof(reply))
			return -EBADMSG;
		r = local_route_parse_reply(reply, (size_t)n, seq, &local);
		if (r == 0)
			continue;
		if (r == -ENETUNREACH || r == -EHOSTUNREACH || r == -EACCES || r == -EAFNOSUPPORT)
			return 0;
		return r < 0 ? r : local;
	}
	return -EBADMSG;
}

int local_route_is_local(struct local_route *lr, const struct sockaddr *addr)
{
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	const uint8_t *a;
	size_t alen;
	struct cached *c;
	int r;

	if (addr->sa_family == AF_INET) {
		memcpy(&sin, addr, sizeof(sin));
		a = (const uint8_t *)&sin.sin_addr;
		alen = 4;
	} else if (addr->sa_family == AF_INET6) {
		memcpy(&sin6, addr, sizeof(sin6));
		a = (const uint8_t *)&sin6.sin6_addr;
		alen = 16;
	} else {
		return -EAFNOSUPPORT;
	}
	if (lr->watch_fd < 0)
		return ask_kernel(lr, addr->sa_family, a);
	if (changed(lr))
		memset(lr->cache, 0, sizeof(lr->cache));
	c = slot_of(lr, addr->sa_family, a, alen);
	if (c->used && c->family == addr->sa_family && !memcmp(c->addr, a, alen))
		return c->local;
	r = ask_kernel(lr, addr->sa_family, a);
	if (r >= 0 && lr->watch_fd >= 0) {
		*c = (struct cached){
		        .used = true, .local = r > 0, .family = (uint8_t)addr->sa_family};
		memcpy(c->addr, a, alen);
	}
	return r;
}

bool local_route_caches(const struct local_route *lr)
{
	return lr->watch_fd >= 0;
}
