/* The host executor (guardian-api.md "Host Executor"): a TCP server on 127.0.0.1 that runs
 * commands for whoever presents the shared secret.
 *
 * One request per connection: a line of JSON (at most EXECUTOR_MAX_LINE bytes before the
 * newline), answered with one line of JSON, then the server closes. The secret is checked first
 * and in constant time; a request with a wrong or missing secret gets
 * {"status":"error","error":"invalid secret"} and runs nothing. A valid request runs without a
 * shell through the local executor (executor_client.h), so its answer is exactly what
 * executor_new_local() gives. Connections are bounded (the listener pauses at the limit) and a
 * client must send its request within the idle timeout. Log lines (when a log is given) name
 * the peer, the command and the outcome, never the secret or the environment. */
#ifndef CLOISTER_EXECUTOR_H
#define CLOISTER_EXECUTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"
#include "base/loop.h"

#define EXECUTOR_MAX_LINE                (1024 * 1024)
#define EXECUTOR_MAX_CONNECTIONS_DEFAULT 64
#define EXECUTOR_IDLE_TIMEOUT_MS_DEFAULT 30000

struct executor_server;

struct executor_server_options {
	const char *secret;       /* required: 1..CL_MESSAGE_MAX_SECRET bytes; copied */
	uint16_t port;            /* 0: a random free port */
	unsigned max_connections; /* 0: EXECUTOR_MAX_CONNECTIONS_DEFAULT */
	uint64_t idle_timeout_ms; /* 0: EXECUTOR_IDLE_TIMEOUT_MS_DEFAULT */
	FILE *log;                /* NULL: no log lines */
};

/* Listen on 127.0.0.1 and serve on loop. err says why on failure (e.g. the port is taken). */
int executor_server_new(struct loop *loop, const struct executor_server_options *opt,
                        struct cl_error *err, struct executor_server **ret);
uint16_t executor_server_port(const struct executor_server *server);
/* Stop listening, kill running commands (SIGKILL to their groups, reaped), close every
 * connection. NULL is fine. */
void executor_server_free(struct executor_server *server);

/* Constant-time comparison of a presented secret with the real one (time depends on neither
 * content nor the real secret's length). Both at most CL_MESSAGE_MAX_SECRET bytes. */
bool executor_secret_equal(const char *given, size_t given_len, const char *secret,
                           size_t secret_len);

/* `cloister-supervisor executor [--port N] [--secret-file PATH] [--idle-timeout-ms N]
 * [--max-connections N]`: the secret comes from CLOISTER_EXECUTOR_SECRET (removed from this
 * process's environment at once, so commands never inherit it) or from a file only its owner
 * can read, never from argv. Prints CLOISTER_EXECUTOR_PORT=<port> on stdout once listening;
 * exits 0 on SIGTERM or SIGINT after killing running commands; 64 on a usage error or without
 * a secret; 1 when it cannot listen. argv[0] is "executor". */
int executor_main(int argc, char **argv);

#endif
