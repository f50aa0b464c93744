/* Running a host command for the request server and the shim's host strategy, behind one
 * interface with two implementations:
 *
 *   local   in this process, through command.c (captured output, the executor's limits);
 *   remote  through a `cloister-supervisor executor` process over TCP (guardian-api.md "Host
 *           Executor"): one connection per job, non-blocking on the loop.
 *
 * Both give the same struct cl_executor_response for the same request (the executor process
 * itself runs its jobs with the local implementation):
 *   completed  exit_code 0..255, or 128+N for a death by signal N; stdout and stderr as text
 *              (at most 200 000 bytes each kept, head + marker + tail, valid UTF-8, no NUL)
 *   timeout    exit_code -1, the output written before the kill
 *   error      exec: "nope": executable file not found in $PATH, chdir …, invalid secret,
 *              or (remote) why the executor could not be reached or answered badly.
 * The request's secret is ignored: a remote executor sends its own. */
#ifndef CLOISTER_EXECUTOR_CLIENT_H
#define CLOISTER_EXECUTOR_CLIENT_H

#include <stdint.h>

#include "base/error.h"
#include "protocol/message.h"
#include "base/loop.h"

/* Extra time a remote job waits for its response beyond the request's timeout_ms. */
#define EXECUTOR_REMOTE_GRACE_MS 30000

struct executor;
struct executor_job;

/* Called exactly once per job that is not cancelled, from the loop (never from inside
 * executor_submit()). resp is the callback's: free it with cl_executor_response_free(). The job
 * handle is gone by then. */
typedef void (*executor_done_fn)(struct cl_executor_response *resp, void *userdata);

int executor_new_local(struct loop *loop, struct executor **ret);

/* host is a numeric address or a name, resolved here, once (this may block: call it at start,
 * not from a handler). secret is copied. err says why on failure. */
int executor_new_remote(struct loop *loop, const char *host, uint16_t port, const char *secret,
                        struct cl_error *err, struct executor **ret);

/* Start a job. Returns 0 (and sets *ret_job when ret_job is not NULL; the handle stays valid
 * until the callback runs or the job is cancelled); -EINVAL when req or done is NULL; -ENOMEM.
 * Everything else, a command that cannot start included, comes as an error response. */
int executor_submit(struct executor *ex, const struct cl_executor_request *req,
                    executor_done_fn done, void *userdata, struct executor_job **ret_job);

/* Forget the job: its callback is never called. A local command gets SIGTERM, then SIGKILL
 * after a grace (command_cancel()); a remote job's connection is closed, which the executor
 * does not act on (its command runs until it ends or times out). */
void executor_job_cancel(struct executor_job *job);

/* Cancel every job without callbacks (local commands are killed and reaped) and free. */
void executor_free(struct executor *ex);

#endif
