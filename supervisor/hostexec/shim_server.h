/* The shim listener: serves cloister-shim calls (protocol/frame.h) on the supervisor's loop.
 *
 * Listeners: a unix socket (mode and owner set before listen(); the caller's pid, uid and gid
 * come from SO_PEERCRED and must match the uid and gid the request claims) and, optionally,
 * TCP on a numeric address, where the request must carry the token (compared in constant
 * time) and the claimed uid/gid are all there is.
 *
 * For each connection: one incremental request decoder (1 MiB limit, 10 s to send it), the
 * request parsed strictly, the cwd checked against the worktree (path_boundary.h), the
 * environment scrubbed (env_scrub.h), then the owner decides through ops->decide(). The owner
 * answers with shim_call_answer(), at once or later:
 *   SHIM_PENDING  ack 2: a person is being asked; answer ALLOW or DENY later;
 *   SHIM_ALLOW    ack 0 (or the second ack after a pending one), then the command runs with
 *                 the configured strategy, stdout and stderr stream back as frames, each
 *                 capped at 200 000 bytes with a 20 000-byte tail and a truncation marker
 *                 (output_cap.h), and an exit frame ends it;
 *   SHIM_DENY     ack 1 and the reason as a stderr frame; the connection closes.
 * Strategies: host runs the command as the supervisor through command.h (tool looked up with
 * shim_find_tool(), cwd resolved beneath the worktree); mirror enters the target container
 * and becomes the caller through shim_spawn.h. Either way, whatever the command leaves
 * running in its process group is killed when it exits.
 * A cancel frame or the shim hanging up withdraws a call still deciding or pending (the
 * owner hears ops->cancelled() and must drop the call) and ends a running command: host,
 * SIGTERM to its process group and SIGKILL after kill_grace_ms, and the exit frame says what
 * it died of (143 after SIGTERM, 137 after SIGKILL, or its own status if it handled the
 * SIGTERM); mirror, SIGKILL at once (137). A command past its timeout is killed (SIGKILL)
 * and ends with exit status -1.
 *
 * Handlers never block: every fd is non-blocking, output waits in a per-call buffer (and
 * the command's output is not read while that is over 1 MiB). */
#ifndef CLOISTER_SHIM_SERVER_H
#define CLOISTER_SHIM_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "protocol/message.h"
#include "supervisor/policy/env_scrub.h"
#include "base/loop.h"

#define SHIM_SERVER_DEFAULT_SOCKET     "/var/run/cloister/shim.sock"
#define SHIM_SERVER_MAX_CALLS_DEFAULT  64
#define SHIM_SERVER_TIMEOUT_DEFAULT_MS (5 * 60 * 1000)
#define SHIM_SERVER_REQUEST_TIMEOUT_MS 10000

enum shim_strategy {
	SHIM_STRATEGY_MIRROR, /* run inside the target container as the caller */
	SHIM_STRATEGY_HOST,   /* run on the host as the supervisor */
};

enum shim_verdict {
	SHIM_ALLOW,
	SHIM_DENY,
	SHIM_PENDING,
};

struct shim_server_config {
	/* Unix listener; NULL for none. An existing socket file there is replaced; any other
	 * file is an error. */
	const char *unix_path;
	mode_t unix_mode;       /* e.g. 0660; 0 means 0666 */
	uid_t unix_owner;       /* (uid_t)-1: leave */
	gid_t unix_group;       /* (gid_t)-1: leave */
	const char *tcp_listen; /* "127.0.0.1:7788" (port 0: any); NULL for none */
	const char *token;      /* required with tcp_listen */
	const char *worktree;   /* absolute: every call's cwd must be inside */
	enum shim_strategy strategy;
	/* Mirror: a process whose namespaces the command enters; 0: the calling shim's own
	 * (unix peers only; a TCP call then fails). */
	pid_t target_pid;
	const char *shim_dir; /* skipped when looking the tool up; NULL: "/cloister/bin" */
	/* Mirror over TCP: run as uid 0 when a request claims it (default: refused). */
	bool allow_root;
	const struct env_scrub_rules *env_rules; /* NULL: env_scrub_default_rules */
	size_t max_calls;                        /* connections at once; 0: default */
	uint32_t timeout_ms;                     /* per command; 0: default */
	uint32_t kill_grace_ms; /* host: SIGTERM to SIGKILL on a cancel; 0: command.h's */
	size_t output_max;      /* 0: 200 000 with a 20 000-byte tail */
	size_t output_tail;
};

/* What the owner sees of a call. Valid until the call is answered ALLOW or DENY, or
 * cancelled. */
struct shim_call_info {
	uint64_t id;                           /* unique in this server */
	const struct cl_exec_request *request; /* as the shim sent it (env unscrubbed) */
	const char *command;                   /* canonical command, argv[0] = the tool */
	char *const *env;                      /* scrubbed environment, NULL-terminated */
	size_t envc;
	size_t env_dropped;
	bool tcp;       /* false: a unix peer */
	pid_t peer_pid; /* unix: SO_PEERCRED; 0 over TCP */
	uid_t uid;      /* unix: SO_PEERCRED; TCP: claimed */
	gid_t gid;
};

struct shim_call;

struct shim_server_ops {
	/* A checked request awaits a verdict: call shim_call_answer() now or later. */
	void (*decide)(void *userdata, struct shim_call *call, const struct shim_call_info *info);
	/* A call deciding or pending was withdrawn (cancel frame, hang-up, server freed);
	 * the call pointer is invalid after this returns. May be NULL. */
	void (*cancelled)(void *userdata, struct shim_call *call, uint64_t id);
	/* A call ended: STATUS is the exit status sent (-1: timed out or failed to start),
	 * or SHIM_SERVER_STATUS_DENIED / _BROKEN. For the audit log; may be NULL. */
	void (*finished)(void *userdata, uint64_t id, int32_t status);
};

#define SHIM_SERVER_STATUS_DENIED (-126)
#define SHIM_SERVER_STATUS_BROKEN (-127) /* refused before deciding, or the shim hung up */

struct shim_server;

/* Start the listeners on LOOP. Fails with a message (bad address, bind failure, relative
 * worktree, TCP without a token, …); nothing stays open then. */
int shim_server_new(struct loop *loop, const struct shim_server_config *config,
                    const struct shim_server_ops *ops, void *userdata, struct cl_error *err,
                    struct shim_server **ret);

/* Close the listeners and every call: running commands are killed and reaped, deciding and
 * pending calls are reported through ops->cancelled. NULL is fine. Removes the socket file. */
void shim_server_free(struct shim_server *server);

/* Cancel the running command of call ID (the dashboard's Cancel): as a cancel frame from
 * the shim would. 0; -ENOENT when there is no such call; -EALREADY when it is not running. */
int shim_server_cancel(struct shim_server *server, uint64_t id);

/* The TCP port actually bound (for tcp_listen with port 0), or 0. */
unsigned shim_server_tcp_port(const struct shim_server *server);

/* Answer a call that is deciding (any verdict) or pending (ALLOW or DENY). REASON (may be
 * NULL) goes to the shim on a denial. Returns 0, or -EINVAL for a verdict the call's state
 * does not allow. After ALLOW or DENY the call belongs to the server again. */
int shim_call_answer(struct shim_call *call, enum shim_verdict verdict, const char *reason);

#endif
