/* The hostexec front end: the one place where a command that an agent asks the host to run is
 * decided, whichever way it came — POST /request on the request server (web/), or a call of
 * cloister-shim (shim_calls.h) — and where the commands running now are kept.
 *
 * Deciding (hostexec_decide): the canonical command against hostexec.auto_approve and
 * manual_approve (policy.h). auto_approve allows at once, no match denies at once ("Command
 * doesn't match allowlist"), manual_approve asks a person through the approvals service (a
 * `hostexec` or `shim` item) until an answer, the timeout, or the caller withdraws. Every
 * verdict is one audit line and one count: the policy's here, an ask's by the queue.
 *
 * Running (hostexec_run): an approved request's command goes to the runner — the executor
 * (executor_client.h: in this process, or a `cloister-supervisor executor`) — without a shell,
 * and its result comes back once. Shim calls run in the shim server itself; either way, what
 * runs is listed (GET /running) and can be cancelled by id (POST /cancel/ID), and whoever
 * shows the list hears each start and end (hostexec_set_listener).
 *
 * Single-threaded, on the caller's loop. */
#ifndef CLOISTER_HOSTEXEC_H
#define CLOISTER_HOSTEXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "supervisor/approval/queue.h"

struct loop;
struct config;
struct approvals;
struct executor;
struct hostexec;
struct hostexec_ask;
struct hostexec_run;

/* ---- deciding ------------------------------------------------------------------------------ */

/* One command asked for. Strings are copied where kept. */
struct hostexec_call {
	enum queue_kind kind;    /* QUEUE_KIND_HOSTEXEC or QUEUE_KIND_SHIM */
	const char *sandbox;     /* the cloister it comes from */
	const char *project;     /* may be NULL */
	const char *command;     /* canonical (cl_quote_strv of argv) */
	const char *const *argv; /* argc strings */
	size_t argc;
	const char *exe; /* a shim call's tool; NULL */
	const char *cwd; /* where it runs; NULL */
	int64_t pid;     /* -1: unknown */
	int64_t uid;     /* -1: unknown */
};

enum hostexec_verdict {
	HOSTEXEC_ALLOWED,   /* by auto_approve: PATTERN is the pattern that matched */
	HOSTEXEC_APPROVED,  /* by a person */
	HOSTEXEC_DENIED,    /* by the policy, a person or a bound of the queue: REASON says why */
	HOSTEXEC_TIMED_OUT, /* nobody answered within WAITED_MS */
	HOSTEXEC_PENDING,   /* a person is asked: the answer comes later */
};

struct hostexec_answer {
	enum hostexec_verdict verdict;
	const char *pattern; /* ALLOWED */
	const char *reason;  /* DENIED */
	uint64_t waited_ms;  /* TIMED_OUT */
};

/* ANSWER is valid during the call only. */
typedef void (*hostexec_answer_fn)(void *userdata, const struct hostexec_answer *answer);

/* Decide CALL into *RET_ANSWER (valid until the next call on HX). An answer known at once
 * (ALLOWED, DENIED, and an ask the fallback decided because nobody can answer) is returned
 * there; PENDING: FN(USERDATA, …) is called once later with APPROVED, DENIED or TIMED_OUT,
 * unless hostexec_withdraw(*RET_ASK) comes first. -errno with ERR when the policy cannot be
 * evaluated. */
int hostexec_decide(struct hostexec *hx, const struct hostexec_call *call, hostexec_answer_fn fn,
                    void *userdata, struct cl_error *err, struct hostexec_answer *ret_answer,
                    struct hostexec_ask **ret_ask);
/* The caller of a pending ask went away: the ask is withdrawn, FN is never called. */
void hostexec_withdraw(struct hostexec_ask *ask);

/* ---- running -------------------------------------------------------------------------------- */

/* How a command ended, as the executor reports it. STATUS: "completed", "timeout", "error", or
 * "cancelled" (from the dashboard). */
struct hostexec_result {
	const char *status;
	int exit_code;
	const char *stdout_text;
	const char *stderr_text;
	const char *error;
};

typedef void (*hostexec_done_fn)(void *userdata, const struct hostexec_result *result);

/* What runs a request's command: RUN calls DONE once, later (never from inside RUN), unless
 * CANCEL(JOB) comes first. 0, or -errno when it could not start (DONE is then not called).
 * CANCEL may be NULL (a command then runs to its end and is not listed). */
struct hostexec_runner {
	int (*run)(void *userdata, const char *const *argv, size_t argc, const char *workdir,
	           uint64_t timeout_ms, hostexec_done_fn done, void *done_userdata, void **ret_job);
	void (*cancel)(void *userdata, void *job);
};

/* Run ARGV (an approved request of SANDBOX) in WORKDIR (may be NULL): DONE(USERDATA, …) is
 * called once with its result ("cancelled" when the dashboard cancels it), unless
 * hostexec_run_abandon(*RET_RUN) comes first. 0, or -ENOSYS (no runner), -ENOMEM, or the
 * runner's -errno (nothing runs then). */
int hostexec_run(struct hostexec *hx, const char *sandbox, const char *const *argv, size_t argc,
                 const char *workdir, hostexec_done_fn done, void *userdata,
                 struct hostexec_run **ret_run);
/* Nobody wants the result any more (the client hung up): the command is stopped where the
 * runner can, and DONE is never called. */
void hostexec_run_abandon(struct hostexec_run *run);

/* ---- the running list ------------------------------------------------------------------------ */

typedef void (*hostexec_cancel_fn)(void *userdata, uint64_t handle);

struct hostexec_running {
	char id[QUEUE_ID_LEN + 1]; /* random, names it on the API */
	char kind[16];             /* "hostexec", "shim" */
	const char *sandbox;
	const char *summary; /* the command */
	int64_t started_wall_ms;
};

/* List a command that runs now; CANCEL(USERDATA, HANDLE) stops it. *RET_ID (QUEUE_ID_LEN + 1
 * bytes, may be NULL) names it. 0 or -ENOMEM. */
int hostexec_running_add(struct hostexec *hx, const char *kind, const char *sandbox,
                         const char *summary, hostexec_cancel_fn cancel, void *userdata,
                         uint64_t handle, char *ret_id);
/* It ended (STATUS: "completed", "cancelled", "exit 3" …): unlisted. Unknown ones are
 * ignored. */
void hostexec_running_remove(struct hostexec *hx, hostexec_cancel_fn cancel, uint64_t handle,
                             const char *status);
/* Newest first; NULL at the end. Valid until the list changes. */
const struct hostexec_running *hostexec_running_first(const struct hostexec *hx);
const struct hostexec_running *hostexec_running_next(const struct hostexec_running *r);
/* Cancel the command listed as ID: 0, or -ENOENT. Its end unlists it. */
int hostexec_running_cancel(struct hostexec *hx, const char *id);

/* Each start ("command-started", STATUS NULL) and end ("command-finished") of a listed
 * command. FN NULL: nobody. */
typedef void (*hostexec_listener_fn)(void *userdata, const char *event,
                                     const struct hostexec_running *r, const char *status);
void hostexec_set_listener(struct hostexec *hx, hostexec_listener_fn fn, void *userdata);

/* ---- life cycle --------------------------------------------------------------------------- */

struct hostexec_config {
	const struct config *config; /* hostexec.auto_approve, manual_approve */
	/* What runs approved requests: EXECUTOR, or RUNNER (with RUNNER_USERDATA) in its place;
	 * neither: requests are decided but cannot run ("command execution not configured"). */
	struct executor *executor;
	const struct hostexec_runner *runner;
	void *runner_userdata;
	uint64_t command_timeout_ms; /* how long a request's command may run; 0: 5 min */
};

/* -ENOMEM. */
int hostexec_new(struct loop *loop, struct approvals *approvals,
                 const struct hostexec_config *config, struct hostexec **ret_hostexec);
/* Withdraws its asks (their callbacks are not called) and abandons what runs. NULL is fine. */
void hostexec_free(struct hostexec *hx);

#endif
