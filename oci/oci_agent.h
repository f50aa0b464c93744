/* The OCI seccomp agent: the socket a seccomp profile's listenerPath names.
 *
 * The runtime (runc ≥ 1.1) connects once per process it gives the filter to (the container's
 * init at create, each `runc exec` later), sends one message — the state JSON of oci_state.h
 * with the listener fd (SCM_RIGHTS) — and never reads. It keeps its end open until it exits
 * (`runc run` does so for the container's life), so a message is complete when its JSON object
 * is, not at end of stream. If the socket is absent runc refuses to start the container; once
 * the supervisor holding the listener dies, the container's notified syscalls fail with ENOSYS:
 * fail closed both ways.
 *
 * For each connection, on the caller's loop and without blocking: read the message (bounded by
 * OCI_STATE_MAX_BYTES, within a timeout), receive the fds it names with MSG_CMSG_CLOEXEC (more
 * fds than "fds" names, or fds of a kind other than SCM_RIGHTS, reject the message: every fd
 * received is closed), parse it strictly, check that the "seccompFd" really is a seccomp
 * listener, work out the container's name, hand {state, identity, listener fd} to the owner
 * and close the connection. A refused connection is reported to the owner's error callback
 * (only the edges log) and changes nothing. */
#ifndef CLOISTER_NOTIFIER_OCI_AGENT_H
#define CLOISTER_NOTIFIER_OCI_AGENT_H

#include <stdint.h>
#include <sys/types.h>

#include "oci/oci_state.h"
#include "base/cleanup.h"
#include "base/error.h"

struct loop;
struct oci_agent;

/* A listener arrived. listener_fd is the owner's from now on (notifier_new() it, or close it);
 * state and id are valid only during the call. peer_pid is the runtime's pid (SO_PEERCRED). */
typedef void (*oci_agent_container_fn)(void *userdata, const struct oci_state *state,
                                       const struct oci_identity *id, int listener_fd,
                                       pid_t peer_pid);
/* A connection was refused: error is a negative errno, msg says why ("fds: no \"seccompFd\"",
 * "fd 0 is not a seccomp listener", "timed out"). */
typedef void (*oci_agent_error_fn)(void *userdata, int error, const char *msg);

struct oci_agent_options {
	const char *path; /* absolute; its missing directories are created 0700 */
	oci_agent_container_fn on_container;
	oci_agent_error_fn on_error; /* may be NULL */
	void *userdata;
	uint64_t timeout_ms;      /* per connection; 0: 5000 */
	unsigned max_connections; /* at once; 0: 32. More are refused at once */
};

/* Listen at opts->path (mode 0600; a stale socket there is replaced, a live one is -EADDRINUSE)
 * and serve on loop. */
int oci_agent_new(struct loop *loop, const struct oci_agent_options *opts, struct oci_agent **ret,
                  struct cl_error *err);

/* Stop: close the connections in progress (the runtimes' starts then fail) and the socket, and
 * unlink the path. NULL is accepted. */
void oci_agent_free(struct oci_agent *a);
CL_DEFINE_TRIVIAL_CLEANUP(struct oci_agent *, oci_agent_free)

const char *oci_agent_path(const struct oci_agent *a);

/* Is fd a seccomp user-notification listener? 0 yes; -EBADF not an fd; -ENOTTY another kind
 * of file. Asks the kernel (SECCOMP_IOCTL_NOTIF_ID_VALID with id 0: ENOENT only from a
 * listener) and the fd's name ("anon_inode:seccomp notify"). */
int oci_check_seccomp_fd(int fd);

#endif
