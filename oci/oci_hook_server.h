/* The supervisor's end of cloister-oci-hook (protocol/oci_hook.h): receives a container's state
 * and network namespace before the container's process starts, lets the owner set the netns up
 * (netfilter/: routes, nftables egress rules, in-netns listeners), and answers the hook, which
 * fails the container's start unless the answer is ok.
 *
 * On the caller's loop, without blocking. Each connection: one SOCK_SEQPACKET message within a
 * timeout, with exactly one fd (MSG_CMSG_CLOEXEC; a message with none or more, or a truncated
 * one, is refused and its fds closed); the state is parsed strictly (oci_state_parse); the fd
 * must be a network namespace (NS_GET_NSTYPE) other than the supervisor's own (setting up the
 * host's namespace as a sandbox would cut the host off: a container on the host network is
 * refused). Refusals are answered to the hook (so its start fails with the reason) and reported
 * to the owner's error callback. */
#ifndef CLOISTER_NOTIFIER_OCI_HOOK_SERVER_H
#define CLOISTER_NOTIFIER_OCI_HOOK_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "oci/oci_state.h"
#include "base/cleanup.h"
#include "base/error.h"

struct loop;
struct oci_hook_server;
struct oci_hook_request;

/* A container's netns arrived. netns_fd belongs to req (dup it to keep it); state and id live
 * as long as req. The owner must answer with oci_hook_request_reply() exactly once, at once or
 * later from the loop (the hook waits up to its own timeout, 10 s by default). */
typedef void (*oci_hook_netns_fn)(void *userdata, struct oci_hook_request *req,
                                  const struct oci_state *state, const struct oci_identity *id,
                                  int netns_fd);
typedef void (*oci_hook_error_fn)(void *userdata, int error, const char *msg);

struct oci_hook_server_options {
	const char *path; /* absolute; missing directories are created 0700 */
	oci_hook_netns_fn on_netns;
	oci_hook_error_fn on_error; /* may be NULL */
	void *userdata;
	uint64_t timeout_ms;      /* for the hook's message; 0: 5000 */
	unsigned max_connections; /* 0: 32 */
};

int oci_hook_server_new(struct loop *loop, const struct oci_hook_server_options *opts,
                        struct oci_hook_server **ret, struct cl_error *err);

/* Close the socket and every connection (a hook still waiting then fails its container's
 * start); requests not yet answered are freed: do not answer them afterwards. NULL is fine. */
void oci_hook_server_free(struct oci_hook_server *s);
CL_DEFINE_TRIVIAL_CLEANUP(struct oci_hook_server *, oci_hook_server_free)

/* Answer the hook: error 0 lets the container start; a negative errno with msg (may be NULL)
 * fails it, msg shown by runc. Frees req (and closes its netns fd). */
void oci_hook_request_reply(struct oci_hook_request *req, int error, const char *msg);

#endif
