/* A listening TCP socket; see tcp_listen.h. */
#include "base/tcp_listen.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "base/cleanup.h"

/* The port of ADDR, in host order; SET: set it to PORT first. */
static uint16_t port_of(struct sockaddr_storage *addr, bool set, uint16_t port)
{
	if (addr->ss_family == AF_INET6) {
		struct sockaddr_in6 a6;

		memcpy(&a6, addr, sizeof(a6));
		if (set) {
			a6.sin6_port = htons(port);
			memcpy(addr, &a6, sizeof(a6));
		}
		return ntohs(a6.sin6_port);
	}
	struct sockaddr_in a4;

	memcpy(&a4, addr, sizeof(a4));
	if (set) {
		a4.sin_port = htons(port);
		memcpy(addr, &a4, sizeof(a4));
	}
	return ntohs(a4.sin_port);
}

static int listen_once(const struct sockaddr_storage *addr, socklen_t len,
                       const struct tcp_listen_options *opts, int *ret_fd, uint16_t *ret_port)
{
	_cleanup_close_ int fd = -EBADF;
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	int one = 1;

	if (addr->ss_family != AF_INET && addr->ss_family != AF_INET6)
		return -EAFNOSUPPORT;
	fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		return -errno;
	if (addr->ss_family == AF_INET6 && opts->v6only &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
		return -errno;
	if (bind(fd, (const struct sockaddr *)addr, len) < 0 ||
	    listen(fd, opts->backlog > 0 ? opts->backlog : SOMAXCONN) < 0 ||
	    getsockname(fd, (struct sockaddr *)&bound, &blen) < 0)
		return -errno;
	*ret_port = port_of(&bound, false, 0);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int tcp_listen(const struct sockaddr_storage *addr, socklen_t len,
               const struct tcp_listen_options *opts, int *ret_fd, uint16_t *ret_port)
{
	struct sockaddr_storage any;
	unsigned port;
	int r = listen_once(addr, len, opts, ret_fd, ret_port);

	if (r != -EADDRINUSE || !opts->port_fallback)
		return r;
	memcpy(&any, addr, sizeof(any));
	port = port_of(&any, false, 0);
	if (port == 0)
		return r;
	/* The next free port first: a second run's dashboard is on 10000 when 9999 is taken, where
	 * a person looks for it; any port only when the next ones are all taken. */
	for (unsigned i = 1; i <= TCP_LISTEN_NEXT_PORTS && port + i <= UINT16_MAX; i++) {
		port_of(&any, true, (uint16_t)(port + i));
		r = listen_once(&any, len, opts, ret_fd, ret_port);
		if (r != -EADDRINUSE)
			return r;
	}
	port_of(&any, true, 0);
	return listen_once(&any, len, opts, ret_fd, ret_port);
}
