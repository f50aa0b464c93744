/* The hostexec front end; see hostexec.h. */
#include "supervisor/hostexec/hostexec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/cleanup.h"
#include "base/loop.h"
#include "protocol/message.h"
#include "protocol/quote.h"
#include "supervisor/approval/approvals.h"
#include "supervisor/approval/audit.h"
#include "supervisor/approval/audit_log.h"
#include "supervisor/hostexec/executor_client.h"
#include "supervisor/policy/policy.h"

#define DEFAULT_COMMAND_MS (5 * 60 * 1000)

struct hostexec_ask {
	struct hostexec *hx;
	uint64_t cookie;
	hostexec_answer_fn fn;
	void *userdata;
	bool deciding; /* inside hostexec_decide: the answer is returned, not called back */
	bool answered;
	struct hostexec_answer answer; /* when answered while deciding */
	char reason[QUEUE_REASON_MAX];
	struct hostexec_ask *prev, *next;
};

struct hostexec_run {
	struct hostexec *hx;
	hostexec_done_fn done;
	void *userdata;
	void *job;      /* the runner's */
	bool listed;    /* on the running list */
	bool abandoned; /* the runner could not stop it: its end is dropped */
	struct hostexec_run *prev, *next;
};

struct running {
	struct hostexec_running pub;
	char *sandbox;
	char *summary;
	hostexec_cancel_fn cancel;
	void *userdata;
	uint64_t handle;
	struct running *next;
};

struct hostexec {
	struct loop *loop;
	struct approval_source *approvals;
	const struct config *config;
	struct executor *executor;
	const struct hostexec_runner *runner;
	void *runner_userdata;
	uint64_t command_timeout_ms;
	struct hostexec_ask *asks;
	uint64_t next_cookie;
	struct hostexec_run *runs;
	struct running *running;
	hostexec_listener_fn listener;
	void *listener_userdata;
	char pattern[512]; /* of the last ALLOWED answer */
	char reason[512];  /* of the last DENIED answer */
};

/* ---- deciding ------------------------------------------------------------------------------ */

static void ask_free(struct hostexec_ask *ask)
{
	struct hostexec *hx = ask->hx;

	if (ask->prev)
		ask->prev->next = ask->next;
	else if (hx->asks == ask)
		hx->asks = ask->next;
	if (ask->next)
		ask->next->prev = ask->prev;
	free(ask);
}

/* The queue decided a hostexec or shim item: answer its asks. */
static void on_resolved(void *userdata, const struct queue_item *item, const uint64_t *cookies,
                        size_t n)
{
	struct hostexec *hx = userdata;

	for (size_t i = 0; i < n; i++) {
		struct hostexec_ask *ask;
		struct hostexec_answer a = {.verdict = HOSTEXEC_DENIED};

		for (ask = hx->asks; ask && ask->cookie != cookies[i]; ask = ask->next)
			;
		if (!ask || ask->answered)
			continue;
		if (item->state == QUEUE_STATE_APPROVED) {
			a.verdict = HOSTEXEC_APPROVED;
		} else if (item->state == QUEUE_STATE_TIMED_OUT) {
			a.verdict = HOSTEXEC_TIMED_OUT;
			a.waited_ms = item->deadline_ms - item->created_ms;
		} else {
			snprintf(ask->reason, sizeof(ask->reason), "%s",
			         item->reason && *item->reason ? item->reason
			                                       : "Command denied by user");
			a.reason = ask->reason;
		}
		if (ask->deciding) {
			ask->answered = true;
			ask->answer = a;
			continue;
		}
		ask->fn(ask->userdata, &a);
		ask_free(ask);
	}
}

static const struct approval_source_ops hostexec_source_ops = {.resolved = on_resolved};

/* The policy's verdict: one audit line, one count. */
static void audit_verdict(struct hostexec *hx, const struct hostexec_call *call,
                          const struct policy_result *pr, enum audit_verdict verdict)
{
	struct audit_record rec = {
	        .time_ms = audit_log_now_ms(),
	        .sandbox = call->sandbox,
	        .project = call->project,
	        .kind = queue_kind_to_string(call->kind),
	        .pid = call->pid,
	        .uid = call->uid,
	        .exe = call->exe,
	        .argv = call->argv,
	        .argc = call->argc,
	        .cwd = call->cwd,
	        .summary = call->command,
	        .verdict = verdict,
	        .rule = pr->rule[0] ? pr->rule : NULL,
	        .decided_by = "policy",
	        .latency_ms = -1,
	        .reason = pr->reason,
	        .automatic = true, /* the agent can repeat it at will */
	};

	approvals_verdict(hx->approvals, &rec);
}

int hostexec_decide(struct hostexec *hx, const struct hostexec_call *call, hostexec_answer_fn fn,
                    void *userdata, struct cl_error *err, struct hostexec_answer *ret_answer,
                    struct hostexec_ask **ret_ask)
{
	struct policy_result pr;
	struct hostexec_ask *ask;
	struct queue_request qr;
	int r;

	r = policy_check_hostexec(hx->config, call->command, &pr, err);
	if (r < 0)
		return r;
	if (pr.verdict == POLICY_ALLOW) {
		audit_verdict(hx, call, &pr, AUDIT_ALLOW);
		snprintf(hx->pattern, sizeof(hx->pattern), "%s", pr.pattern);
		*ret_answer = (struct hostexec_answer){.verdict = HOSTEXEC_ALLOWED,
		                                       .pattern = hx->pattern};
		return 0;
	}
	if (pr.verdict == POLICY_DENY) {
		audit_verdict(hx, call, &pr, AUDIT_DENY);
		*ret_answer = (struct hostexec_answer){.verdict = HOSTEXEC_DENIED,
		                                       .reason = "Command doesn't match allowlist"};
		return 0;
	}

	/* manual_approve: a person decides. */
	ask = calloc(1, sizeof(*ask));
	if (!ask)
		return cl_error_set(err, -ENOMEM, "out of memory");
	ask->hx = hx;
	ask->cookie = hx->next_cookie++;
	ask->fn = fn;
	ask->userdata = userdata;
	ask->deciding = true;
	ask->next = hx->asks;
	if (ask->next)
		ask->next->prev = ask;
	hx->asks = ask;
	qr = (struct queue_request){
	        .kind = call->kind,
	        .sandbox = call->sandbox,
	        .project = call->project,
	        .summary = call->command,
	        .exe = call->exe,
	        .argv = call->argv,
	        .argc = call->argc,
	        .cwd = call->cwd,
	        .pid = call->pid,
	        .uid = call->uid,
	        .allowlist_matched = false,
	        .cookie = ask->cookie,
	};
	r = approvals_ask(hx->approvals, &qr, NULL);
	ask->deciding = false;
	if (r < 0) {
		snprintf(hx->reason, sizeof(hx->reason), "%s", queue_strerror(r));
		*ret_answer =
		        (struct hostexec_answer){.verdict = HOSTEXEC_DENIED, .reason = hx->reason};
		ask_free(ask);
		return 0;
	}
	if (ask->answered) {
		/* Nobody can answer: the fallback decided at once. */
		*ret_answer = ask->answer;
		if (ask->answer.reason) {
			snprintf(hx->reason, sizeof(hx->reason), "%s", ask->answer.reason);
			ret_answer->reason = hx->reason;
		}
		ask_free(ask);
		return 0;
	}
	*ret_answer = (struct hostexec_answer){.verdict = HOSTEXEC_PENDING};
	*ret_ask = ask;
	return 0;
}

void hostexec_withdraw(struct hostexec_ask *ask)
{
	struct hostexec *hx;
	uint64_t cookie;

	if (!ask)
		return;
	hx = ask->hx;
	cookie = ask->cookie;
	/* Gone first: the withdrawal's own resolution has no waiter to answer anyway. */
	ask_free(ask);
	(void)approvals_withdraw(hx->approvals, cookie);
}

/* ---- the running list ------------------------------------------------------------------------ */

static void tell(struct hostexec *hx, const char *event, const struct running *r,
                 const char *status)
{
	if (hx->listener)
		hx->listener(hx->listener_userdata, event, &r->pub, status);
}

int hostexec_running_add(struct hostexec *hx, const char *kind, const char *sandbox,
                         const char *summary, hostexec_cancel_fn cancel, void *userdata,
                         uint64_t handle, char *ret_id)
{
	struct running *r = calloc(1, sizeof(*r));
	uint8_t raw[QUEUE_ID_LEN / 2];

	if (!r)
		return -ENOMEM;
	r->sandbox = strdup(sandbox ? sandbox : "");
	r->summary = strdup(summary ? summary : "");
	if (!r->sandbox || !r->summary || getrandom(raw, sizeof(raw), 0) != sizeof(raw)) {
		free(r->sandbox);
		free(r->summary);
		free(r);
		return -ENOMEM;
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(r->pub.id + 2 * i, 3, "%02x", raw[i]);
	snprintf(r->pub.kind, sizeof(r->pub.kind), "%s", kind);
	r->pub.sandbox = r->sandbox;
	r->pub.summary = r->summary;
	r->pub.started_wall_ms = (int64_t)audit_log_now_ms();
	r->cancel = cancel;
	r->userdata = userdata;
	r->handle = handle;
	r->next = hx->running;
	hx->running = r;
	tell(hx, "command-started", r, NULL);
	if (ret_id)
		memcpy(ret_id, r->pub.id, sizeof(r->pub.id));
	return 0;
}

static void running_free(struct running *r)
{
	free(r->sandbox);
	free(r->summary);
	free(r);
}

void hostexec_running_remove(struct hostexec *hx, hostexec_cancel_fn cancel, uint64_t handle,
                             const char *status)
{
	for (struct running **p = &hx->running; *p; p = &(*p)->next) {
		struct running *r = *p;

		if (r->cancel != cancel || r->handle != handle)
			continue;
		*p = r->next;
		tell(hx, "command-finished", r, status);
		running_free(r);
		return;
	}
}

const struct hostexec_running *hostexec_running_first(const struct hostexec *hx)
{
	return hx->running ? &hx->running->pub : NULL;
}

const struct hostexec_running *hostexec_running_next(const struct hostexec_running *r)
{
	const struct running *full = (const struct running *)r; /* pub is the first member */

	return full->next ? &full->next->pub : NULL;
}

int hostexec_running_cancel(struct hostexec *hx, const char *id)
{
	for (struct running *r = hx->running; r; r = r->next)
		if (!strcmp(r->pub.id, id)) {
			/* The owner ends it; its hostexec_running_remove() unlists it. */
			r->cancel(r->userdata, r->handle);
			return 0;
		}
	return -ENOENT;
}

void hostexec_set_listener(struct hostexec *hx, hostexec_listener_fn fn, void *userdata)
{
	hx->listener = fn;
	hx->listener_userdata = userdata;
}

/* ---- running a request's command --------------------------------------------------------- */

static void run_free(struct hostexec_run *run)
{
	struct hostexec *hx = run->hx;

	if (run->prev)
		run->prev->next = run->next;
	else if (hx->runs == run)
		hx->runs = run->next;
	if (run->next)
		run->next->prev = run->prev;
	free(run);
}

static void cancel_listed(void *userdata, uint64_t handle);

static void on_run_done(void *userdata, const struct hostexec_result *result)
{
	struct hostexec_run *run = userdata;

	if (run->listed)
		hostexec_running_remove(run->hx, cancel_listed, (uint64_t)(uintptr_t)run,
		                        result->status);
	if (!run->abandoned)
		run->done(run->userdata, result);
	run_free(run);
}

/* The dashboard's Cancel: the command is stopped, and its caller hears so. */
static void cancel_listed(void *userdata, uint64_t handle)
{
	struct hostexec_run *run = (struct hostexec_run *)(uintptr_t)handle;
	struct hostexec *hx = run->hx;
	struct hostexec_result res = {.status = "cancelled", .exit_code = -1};

	hx->runner->cancel(hx->runner_userdata, run->job);
	hostexec_running_remove(hx, cancel_listed, handle, "cancelled");
	run->done(run->userdata, &res);
	run_free(run);
}

int hostexec_run(struct hostexec *hx, const char *sandbox, const char *const *argv, size_t argc,
                 const char *workdir, hostexec_done_fn done, void *userdata,
                 struct hostexec_run **ret_run)
{
	struct hostexec_run *run;
	int r;

	if (!hx->runner)
		return -ENOSYS;
	run = calloc(1, sizeof(*run));
	if (!run)
		return -ENOMEM;
	run->hx = hx;
	run->done = done;
	run->userdata = userdata;
	run->next = hx->runs;
	if (run->next)
		run->next->prev = run;
	hx->runs = run;
	r = hx->runner->run(hx->runner_userdata, argv, argc, workdir, hx->command_timeout_ms,
	                    on_run_done, run, &run->job);
	if (r < 0) {
		run_free(run);
		return r;
	}
	if (hx->runner->cancel) {
		_cleanup_free_ char *cmd = NULL;

		/* Cancellable from the dashboard while it runs (best effort: not listing it only
		 * takes the button away). */
		if (cl_quote_strv(argv, argc, NULL, &cmd) >= 0)
			run->listed =
			        hostexec_running_add(hx, "hostexec", sandbox, cmd, cancel_listed,
			                             hx, (uint64_t)(uintptr_t)run, NULL) >= 0;
	}
	*ret_run = run;
	return 0;
}

void hostexec_run_abandon(struct hostexec_run *run)
{
	struct hostexec *hx;

	if (!run)
		return;
	hx = run->hx;
	/* Without a way to stop it, it runs to its end, which nobody hears. */
	if (!hx->runner->cancel || !run->job) {
		run->abandoned = true;
		return;
	}
	hx->runner->cancel(hx->runner_userdata, run->job);
	if (run->listed)
		hostexec_running_remove(hx, cancel_listed, (uint64_t)(uintptr_t)run, "cancelled");
	run_free(run);
}

/* ---- the executor as the runner ---------------------------------------------------------------
 */

struct executor_run {
	hostexec_done_fn done;
	void *userdata;
	struct executor_job *job;
};

static void on_executor_done(struct cl_executor_response *resp, void *userdata)
{
	struct executor_run *er = userdata;
	struct hostexec_result res = {
	        .status = resp->status == CL_EXECUTOR_COMPLETED ? "completed"
	                  : resp->status == CL_EXECUTOR_TIMEOUT ? "timeout"
	                                                        : "error",
	        .exit_code = resp->exit_code,
	        .stdout_text = resp->stdout_text,
	        .stderr_text = resp->stderr_text,
	        .error = resp->error,
	};

	er->done(er->userdata, &res);
	cl_executor_response_free(resp);
	free(er);
}

/* An approved command: to the executor, without a shell. */
static int executor_run(void *userdata, const char *const *argv, size_t argc, const char *workdir,
                        uint64_t timeout_ms, hostexec_done_fn done, void *done_userdata,
                        void **ret_job)
{
	struct hostexec *hx = userdata;
	struct cl_executor_request req = {
	        .command = (char *)argv[0],
	        .args = (char **)argv + 1,
	        .argc = argc - 1,
	        .workdir = (char *)workdir,
	        .timeout_ms = timeout_ms > CL_EXECUTOR_TIMEOUT_MAX_MS ? CL_EXECUTOR_TIMEOUT_MAX_MS
	                      : timeout_ms                            ? (uint32_t)timeout_ms
	                                   : CL_EXECUTOR_TIMEOUT_DEFAULT_MS,
	};
	struct executor_run *er;
	int r;

	if (argc == 0)
		return -EINVAL;
	er = calloc(1, sizeof(*er));
	if (!er)
		return -ENOMEM;
	er->done = done;
	er->userdata = done_userdata;
	r = executor_submit(hx->executor, &req, on_executor_done, er, &er->job);
	if (r < 0) {
		free(er);
		return r;
	}
	*ret_job = er;
	return 0;
}

static void executor_cancel(void *userdata, void *job)
{
	struct executor_run *er = job;

	/* Its callback is never called now: the job's wrapper goes here. */
	executor_job_cancel(er->job);
	free(er);
}

static const struct hostexec_runner executor_runner = {
        .run = executor_run,
        .cancel = executor_cancel,
};

/* ---- life cycle --------------------------------------------------------------------------- */

int hostexec_new(struct loop *loop, struct approvals *approvals,
                 const struct hostexec_config *config, struct hostexec **ret_hostexec)
{
	struct hostexec *hx = calloc(1, sizeof(*hx));
	int r;

	if (!hx)
		return -ENOMEM;
	hx->loop = loop;
	hx->config = config->config;
	hx->executor = config->executor;
	hx->runner = config->runner;
	hx->runner_userdata = config->runner_userdata;
	if (!hx->runner && hx->executor) {
		hx->runner = &executor_runner;
		hx->runner_userdata = hx;
	}
	hx->command_timeout_ms =
	        config->command_timeout_ms ? config->command_timeout_ms : DEFAULT_COMMAND_MS;
	r = approvals_register(approvals, &hostexec_source_ops, hx, &hx->approvals);
	if (r < 0) {
		free(hx);
		return r;
	}
	*ret_hostexec = hx;
	return 0;
}

void hostexec_free(struct hostexec *hx)
{
	if (!hx)
		return;
	/* Its asks are cancelled, unheard. */
	approvals_unregister(hx->approvals);
	while (hx->asks)
		ask_free(hx->asks);
	while (hx->runs) {
		struct hostexec_run *run = hx->runs;

		if (run->job && hx->runner->cancel)
			hx->runner->cancel(hx->runner_userdata, run->job);
		run_free(run);
	}
	while (hx->running) {
		struct running *r = hx->running;

		hx->running = r->next;
		running_free(r);
	}
	free(hx);
}
