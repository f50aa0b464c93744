/* Connection attribution for the egress proxy without a seccomp notification per connect(2):
 * eBPF programs (connattr.bpf.c) attached to the sandbox's cgroup note, at each TCP connect,
 * the calling process under the client's local (address, port) — the peer the proxy's
 * accept() returns. connattr_lookup() reads it back when a domain card needs the process.
 *
 * The map is never pinned and its fd stays in the supervisor: a process of the sandbox could
 * reach it only by id (BPF_MAP_GET_FD_BY_ID), which needs CAP_SYS_ADMIN in the initial user
 * namespace.
 *
 * Limits: an entry is the latest connection's from that client end (a connection whose
 * caller was not kept clears it); the hooks follow the cgroup a socket was created in, so a
 * socket created outside the sandbox's cgroup (none of the agent's) is not noted; the pid is
 * read back later, when the card is made: a process that ended by then is not named.
 * Needs root (CAP_BPF, CAP_NET_ADMIN). */
#ifndef CLOISTER_CONNATTR_H
#define CLOISTER_CONNATTR_H

#include <sys/socket.h>
#include <sys/types.h>

#include "base/error.h"

struct connattr;

/* Load the programs (not attached yet). -EOPNOTSUPP outside the initial pid namespace (the
 * kernel notes pids there); -EPERM without the privilege. */
int connattr_open(struct connattr **ret, struct cl_error *err);

/* Attach them to the cgroup (an O_DIRECTORY fd of a cgroup2 directory; its descendants too).
 * All or nothing. -EBUSY if already attached. */
int connattr_attach(struct connattr *c, int cgroup_fd, struct cl_error *err);

/* The process (thread group id and thread id, in the initial pid namespace) that opened the
 * TCP connection whose client end is PEER (what accept() returned). -ENOENT when none is
 * known; -EAFNOSUPPORT / -EINVAL for a bad peer. */
int connattr_lookup(const struct connattr *c, const struct sockaddr *peer, socklen_t peer_len,
                    pid_t *ret_tgid, pid_t *ret_pid);

/* Detach and unload. NULL is accepted. */
void connattr_free(struct connattr *c);

#endif
