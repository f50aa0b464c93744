/* A listening TCP socket, the one way every server of the supervisor makes one (dashboard and
 * APIs, the CONNECT proxy, the shim listener, the host executor): non-blocking, close-on-exec,
 * SO_REUSEADDR, bound and listening, with the port the kernel chose when 0 was asked. */
#ifndef CLOISTER_TCP_LISTEN_H
#define CLOISTER_TCP_LISTEN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct tcp_listen_options {
	int backlog;        /* 0: SOMAXCONN */
	bool v6only;        /* IPV6_V6ONLY on an IPv6 address */
	bool port_fallback; /* a port that is taken is replaced by the next free one (of the
	                       TCP_LISTEN_NEXT_PORTS that follow it), else by any free one */
};

#define TCP_LISTEN_NEXT_PORTS 32

/* Listen on ADDR (LEN bytes, AF_INET or AF_INET6). Returns 0 with the fd in *RET_FD and the
 * port bound in *RET_PORT (another than asked only after a fallback), or -errno (-EADDRINUSE:
 * taken, without fallback). */
int tcp_listen(const struct sockaddr_storage *addr, socklen_t len,
               const struct tcp_listen_options *opts, int *ret_fd, uint16_t *ret_port);

#endif
