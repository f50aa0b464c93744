/* Internal to the OCI servers (oci_agent.h, oci_hook_server.h): their unix listening sockets.
 *
 * Only root (the runtime, its hooks) and the supervisor's own user may talk to them: the socket
 * is mode 0600 in a directory created 0700, and every accepted peer's SO_PEERCRED uid is checked
 * as well (a socket inherited through a bind mount keeps working, its mode does not). */
#ifndef CLOISTER_NOTIFIER_OCI_SOCKET_H
#define CLOISTER_NOTIFIER_OCI_SOCKET_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "base/error.h"

struct oci_socket {
	int fd; /* listening, non-blocking, O_CLOEXEC */
	char *path;
	dev_t dev; /* of the socket file we bound: unlink only that one */
	ino_t ino;
};

/* Create the missing directories of path's parent (0700), remove a stale socket at path (one
 * nobody listens on; anything else there is -EEXIST, a live one -EADDRINUSE), bind a socket of
 * type (SOCK_STREAM, SOCK_SEQPACKET) there with mode 0600 and listen. */
int oci_socket_listen(const char *path, int type, struct oci_socket *ret, struct cl_error *err);

/* Close it and unlink the path if it is still the file we bound. Accepts a zeroed/closed one. */
void oci_socket_close(struct oci_socket *s);

/* Accept one connection (non-blocking, O_CLOEXEC) and check its peer: uid 0 or ours.
 * Returns the fd and the peer's pid in *ret_pid; -EAGAIN when none waits; -EPERM for a peer
 * that may not talk to us (its connection is closed); other -errno. */
int oci_socket_accept(const struct oci_socket *s, pid_t *ret_pid);

#endif
