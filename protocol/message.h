/* Messages ⇄ JSON, strictly validated (cJSON underneath, via json_strict).
 *
 * Every parser takes (buffer, length), rejects what it does not understand with -EINVAL (or
 * -E2BIG for a limit) and a message naming the field: "argv[3]: expected a string",
 * "uid: expected an integer in 0..4294967294", "env: more than 4096 entries", "cwd: required".
 * Strings may hold any bytes but NUL (rejected, even as "\u0000", see json_strict.h); duplicate
 * keys, too deep nesting and oversized input are rejected. Unknown fields are ignored, so that
 * a newer peer can add fields. Serializers validate the struct the same way (a struct they accept
 * always parses back equal) and return a malloc'd, compact JSON string without a newline.
 * Free functions accept NULL. */
#ifndef CLOISTER_MESSAGE_H
#define CLOISTER_MESSAGE_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "protocol/frame.h"
#include "protocol/quote.h"

/* Limits. Bytes of JSON in a request message; the frame limit, so that any frame can be parsed. */
#define CL_MESSAGE_MAX_INPUT CL_FRAME_REQUEST_MAX_DEFAULT
/* JSON nesting, unknown fields included; the messages themselves need 3. */
#define CL_MESSAGE_MAX_DEPTH 8
/* JSON values in one message: bounds the memory cJSON uses (~64 bytes a value). */
#define CL_MESSAGE_MAX_VALUES 65536
/* Entries in argv / args: as many as the canonical command string takes. */
#define CL_MESSAGE_MAX_ARGC CL_QUOTE_MAX_ARGC
/* One argument or environment entry, as Linux's MAX_ARG_STRLEN. */
#define CL_MESSAGE_MAX_ARG_BYTES (128 * 1024)
/* Environment entries. */
#define CL_MESSAGE_MAX_ENV 4096
/* cwd, workdir, command: PATH_MAX - 1. */
#define CL_MESSAGE_MAX_PATH 4095
/* Tool name: NAME_MAX. */
#define CL_MESSAGE_MAX_NAME 255
/* Executor shared secret. */
#define CL_MESSAGE_MAX_SECRET 1024
/* uid and gid: (uid_t)-1 is excluded, it means "no change" to the kernel. */
#define CL_MESSAGE_MAX_ID 4294967294u

/* ---- exec request: the shim's request, the JSON of a request frame ---------------------------
 *
 *   {"tool": "npm", "argv": ["npm", "install"], "cwd": "/app",
 *    "env": ["PATH=/usr/bin", "HOME=/home/agent"], "uid": 1000, "gid": 1000}
 *
 *   tool  required  string, the name the shim was invoked as (basename of its argv[0]): 1..255
 *                   bytes, no '/', not "." or ".."
 *   argv  required  array of 1..16384 strings, each at most 128 KiB; argv[0] as the shim got it
 *   cwd   required  string, an absolute path of at most 4095 bytes
 *   env   required  array of at most 4096 "KEY=VALUE" strings (as in environ(7); KEY non-empty,
 *                   the first '=' ends it), each at most 128 KiB; may be empty
 *   uid   required  integer in 0..4294967294
 *   gid   required  integer in 0..4294967294
 *   token optional  string of 1..1024 bytes: the supervisor's token, which a TCP listener
 *                   requires (see frame.h); written only when set. A unix listener knows its
 *                   caller from the socket and ignores it.
 *
 * cl_exec_request_to_json() and cl_exec_request_validate() live in message_exec.c, which does
 * not use cJSON, so that the static shim links them without it.
 */
struct cl_exec_request {
	char *tool;
	char **argv; /* argc entries and a NULL */
	size_t argc;
	char *cwd;
	char **env; /* envc entries and a NULL */
	size_t envc;
	uint32_t uid;
	uint32_t gid;
	char *token; /* NULL when absent */
};

int cl_exec_request_parse(const char *json, size_t len, struct cl_error *err,
                          struct cl_exec_request **ret_req);
int cl_exec_request_to_json(const struct cl_exec_request *req, struct cl_error *err,
                            char **ret_json);
void cl_exec_request_free(struct cl_exec_request *req);
/* The checks the parser and the serializer apply to a struct: 0 or -EINVAL/-E2BIG naming the
 * field. */
int cl_exec_request_validate(const struct cl_exec_request *req, struct cl_error *err);

/* ---- host executor request (guardian-api.md "Host Executor"), one line on the wire ----------
 *
 *   {"secret": "…", "request": {"command": "docker", "args": ["compose", "up"],
 *    "workdir": "/home/user/repo", "env": {"DOCKER_HOST": "unix:///…"}, "timeout_ms": 300000}}
 *
 *   secret              required  string of 1..1024 bytes
 *   request             required  object
 *   request.command     required  non-empty string of at most 4095 bytes
 *   request.args        optional  array of at most 16384 strings (default empty), 128 KiB each
 *   request.workdir     optional  absolute path of at most 4095 bytes
 *   request.env         optional  object of at most 4096 string values; names non-empty without
 *                                 '='; each "NAME=VALUE" at most 128 KiB
 *   request.timeout_ms  optional  integer in 1..86400000 (default 300000)
 * Serializing omits workdir when NULL and env when empty; args and timeout_ms are always written.
 */
#define CL_EXECUTOR_TIMEOUT_DEFAULT_MS 300000
#define CL_EXECUTOR_TIMEOUT_MAX_MS     86400000

struct cl_env_pair {
	char *name;
	char *value;
};

struct cl_executor_request {
	char *secret;
	char *command;
	char **args; /* argc entries and a NULL */
	size_t argc;
	char *workdir; /* NULL when absent */
	struct cl_env_pair *env;
	size_t envc;
	uint32_t timeout_ms;
};

int cl_executor_request_parse(const char *json, size_t len, struct cl_error *err,
                              struct cl_executor_request **ret_req);
int cl_executor_request_to_json(const struct cl_executor_request *req, struct cl_error *err,
                                char **ret_json);
void cl_executor_request_free(struct cl_executor_request *req);

/* ---- host executor response ------------------------------------------------------------------
 *
 *   {"status": "completed", "exit_code": 0, "stdout": "…", "stderr": ""}
 *   {"status": "timeout", "exit_code": -1, "stdout": "partial…", "stderr": ""}
 *   {"status": "error", "error": "invalid secret"}
 *
 *   status     required  "completed", "timeout" or "error"
 *   exit_code  completed/timeout: required integer in -2147483648..2147483647
 *   stdout     completed/timeout: optional string of at most 1 MiB (default "")
 *   stderr     completed/timeout: optional string of at most 1 MiB (default "")
 *   error      error: required string of at most 64 KiB
 * Fields that do not belong to the status are ignored when parsing and never written.
 * Output containing NUL bytes cannot be carried: the executor must replace them first. */
#define CL_EXECUTOR_RESPONSE_MAX_INPUT (16 * 1024 * 1024) /* JSON escapes output up to 6x */
#define CL_EXECUTOR_MAX_OUTPUT         (1024 * 1024)
#define CL_EXECUTOR_MAX_ERROR          (64 * 1024)

enum cl_executor_status {
	CL_EXECUTOR_COMPLETED,
	CL_EXECUTOR_TIMEOUT,
	CL_EXECUTOR_ERROR,
};

struct cl_executor_response {
	enum cl_executor_status status;
	int32_t exit_code; /* completed, timeout */
	char *stdout_text; /* completed, timeout: never NULL after parsing */
	char *stderr_text; /* completed, timeout: never NULL after parsing */
	char *error;       /* error */
};

int cl_executor_response_parse(const char *json, size_t len, struct cl_error *err,
                               struct cl_executor_response **ret_resp);
int cl_executor_response_to_json(const struct cl_executor_response *resp, struct cl_error *err,
                                 char **ret_json);
void cl_executor_response_free(struct cl_executor_response *resp);

#endif
