/* The request server: POST /request, decided and run by the hostexec front end; see web.h. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "protocol/json_strict.h"
#include "protocol/quote.h"
#include "supervisor/approval/tokens.h"
#include "supervisor/hostexec/hostexec.h"
#include "supervisor/web/web_internal.h"

/* A POST /request: decided by the hostexec front end, waiting for a person, then for its
 * command. */
struct request {
	struct web *web;
	struct http_exchange *ex; /* NULL once the client is gone */
	char *sandbox;
	char **argv;
	size_t argc;
	char *workdir;
	struct hostexec_ask *ask; /* while a person is asked */
	struct hostexec_run *run; /* while its command runs */
	char status[16];          /* "auto_approved", "approved" */
	char pattern[512];
	struct request *prev, *next;
};

/* ---- request server (hostexec) ----------------------------------------------------------- */

static void request_free(struct request *c)
{
	struct web *web = c->web;

	if (c->prev)
		c->prev->next = c->next;
	else if (web->requests == c)
		web->requests = c->next;
	if (c->next)
		c->next->prev = c->prev;
	for (size_t i = 0; c->argv && i < c->argc; i++)
		free(c->argv[i]);
	free(c->argv);
	free(c->workdir);
	free(c->sandbox);
	free(c);
}

/* The client hung up: what it waits for is withdrawn, and a command it started stops (an agent
 * must not leave host processes running by hanging up again and again). */
static void web_on_request_gone(void *userdata, struct http_exchange *ex)
{
	struct request *c = userdata;

	c->ex = NULL;
	hostexec_withdraw(c->ask);
	hostexec_run_abandon(c->run);
	request_free(c);
}

static void respond_command(struct http_exchange *ex, const char *status, const char *pattern,
                            const char *reason)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "status", status);
	if (pattern && *pattern)
		cJSON_AddStringToObject(o, "pattern", pattern);
	if (reason)
		cJSON_AddStringToObject(o, "reason", reason);
	web_respond_json(ex, 200, o);
}

/* Answer C's client (if it is still there) and forget C. */
static void request_answer(struct request *c, const char *status, const char *reason)
{
	if (c->ex) {
		http_exchange_set_gone(c->ex, NULL, NULL);
		respond_command(c->ex, status, NULL, reason);
	}
	request_free(c);
}

static void on_run_done(void *userdata, const struct hostexec_result *res)
{
	struct request *c = userdata;
	cJSON *o;

	c->run = NULL;
	if (!strcmp(res->status, "cancelled")) {
		request_answer(c, "error", "Command cancelled by user");
		return;
	}
	if (c->ex) {
		o = cJSON_CreateObject();
		if (!strcmp(res->status, "completed")) {
			cJSON_AddStringToObject(o, "status", c->status);
			if (c->pattern[0])
				cJSON_AddStringToObject(o, "pattern", c->pattern);
			cJSON_AddNumberToObject(o, "exit_code", res->exit_code);
			cJSON_AddStringToObject(o, "stdout",
			                        res->stdout_text ? res->stdout_text : "");
			cJSON_AddStringToObject(o, "stderr",
			                        res->stderr_text ? res->stderr_text : "");
		} else if (!strcmp(res->status, "timeout")) {
			cJSON_AddStringToObject(o, "status", "timeout");
			cJSON_AddStringToObject(o, "reason",
			                        res->error && *res->error
			                                ? res->error
			                                : "command execution timed out");
			cJSON_AddNumberToObject(o, "exit_code", res->exit_code);
			cJSON_AddStringToObject(o, "stdout",
			                        res->stdout_text ? res->stdout_text : "");
			cJSON_AddStringToObject(o, "stderr",
			                        res->stderr_text ? res->stderr_text : "");
		} else {
			cJSON_AddStringToObject(o, "status", "error");
			cJSON_AddStringToObject(o, "reason",
			                        res->error ? res->error : "execution failed");
		}
		http_exchange_set_gone(c->ex, NULL, NULL);
		web_respond_json(c->ex, 200, o);
	}
	request_free(c);
}

/* An approved request: its command runs, the client waits for the result. */
static void request_run(struct request *c, const char *status, const char *pattern)
{
	int r;

	snprintf(c->status, sizeof(c->status), "%s", status);
	snprintf(c->pattern, sizeof(c->pattern), "%s", pattern ? pattern : "");
	r = hostexec_run(c->web->hostexec, c->sandbox, (const char *const *)c->argv, c->argc,
	                 c->workdir, on_run_done, c, &c->run);
	if (r == -ENOSYS) {
		request_answer(c, "error", "command execution not configured");
	} else if (r < 0) {
		char msg[128];

		snprintf(msg, sizeof(msg), "cannot run the command: %s", strerror(-r));
		request_answer(c, "error", msg);
	}
}

/* Go's time.Duration format: "5m0s", "1h0m0s", "30s", "2m30.5s", "500ms". */
static void format_go_duration(uint64_t ms, char *buf, size_t size)
{
	uint64_t h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60, frac = ms % 1000;
	char secs[24];

	if (ms < 1000) {
		snprintf(buf, size, "%llums", (unsigned long long)ms);
		return;
	}
	if (frac) {
		int n = snprintf(secs, sizeof(secs), "%llu.%03llu", (unsigned long long)s,
		                 (unsigned long long)frac);

		while (n > 0 && secs[n - 1] == '0') /* Go prints no trailing zeros */
			secs[--n] = '\0';
	} else {
		snprintf(secs, sizeof(secs), "%llu", (unsigned long long)s);
	}
	if (h)
		snprintf(buf, size, "%lluh%llum%ss", (unsigned long long)h, (unsigned long long)m,
		         secs);
	else if (m)
		snprintf(buf, size, "%llum%ss", (unsigned long long)m, secs);
	else
		snprintf(buf, size, "%ss", secs);
}

/* The front end's answer, at once or once a person answered. */
static void request_decided(struct request *c, const struct hostexec_answer *a)
{
	char d[80], reason[128];

	switch (a->verdict) {
	case HOSTEXEC_ALLOWED:
		request_run(c, "auto_approved", a->pattern);
		return;
	case HOSTEXEC_APPROVED:
		request_run(c, "approved", NULL);
		return;
	case HOSTEXEC_TIMED_OUT:
		format_go_duration(a->waited_ms, d, sizeof(d));
		snprintf(reason, sizeof(reason), "No approval within %s", d);
		request_answer(c, "timeout", reason);
		return;
	case HOSTEXEC_DENIED:
	case HOSTEXEC_PENDING:
		break;
	}
	request_answer(c, "denied", a->reason);
}

static void on_answer(void *userdata, const struct hostexec_answer *a)
{
	struct request *c = userdata;

	c->ask = NULL;
	request_decided(c, a);
}

/* C with a copy of what it runs, listed, its client watched; NULL when out of memory. */
static struct request *request_new(struct web *web, struct http_exchange *ex,
                                   const struct token_entry *who, const char *const *argv,
                                   size_t argc)
{
	struct request *c = calloc(1, sizeof(*c));
	size_t i = 0;

	if (!c)
		return NULL;
	c->web = web;
	c->argc = argc;
	c->argv = calloc(argc + 1, sizeof(char *));
	c->workdir = who->worktree ? strdup(who->worktree) : NULL;
	c->sandbox = strdup(who->cloister);
	for (i = 0; c->argv && i < argc; i++)
		if (!(c->argv[i] = strdup(argv[i])))
			break;
	c->next = web->requests;
	if (c->next)
		c->next->prev = c;
	web->requests = c;
	if (!c->argv || !c->sandbox || i < argc || (who->worktree && !c->workdir)) {
		request_free(c);
		return NULL;
	}
	c->ex = ex;
	http_exchange_set_gone(ex, web_on_request_gone, c);
	return c;
}

void web_on_request(void *userdata, struct http_exchange *ex)
{
	struct web *web = userdata;
	const struct token_entry *who;
	_cleanup_cjson_ cJSON *body = NULL;
	const cJSON *args_j;
	_cleanup_free_ char *command = NULL;
	_cleanup_free_ const char **argv = NULL;
	struct cl_error err = {0};
	struct hostexec_answer answer;
	struct request *c;
	size_t argc, i = 0;
	const cJSON *a;
	int r;

	/* Containers and scripts call here, never a browser. */
	if (http_exchange_header(ex, "Origin")) {
		web_respond_error(ex, 403, "cross-origin request refused");
		return;
	}
	/* The token before anything else: without it, nothing is answered but 401. */
	who = tokens_lookup(web->tokens, http_exchange_header(ex, "X-Cloister-Token"));
	if (!who) {
		web_respond_error(ex, 401, "missing or invalid X-Cloister-Token");
		return;
	}
	if (strcmp(http_exchange_path(ex), "/request")) {
		web_respond_error(ex, 404, "not found");
		return;
	}
	if (strcmp(http_exchange_method(ex), "POST")) {
		http_exchange_add_header(ex, "Allow", "POST");
		web_respond_error(ex, 405, "method not allowed");
		return;
	}
	body = web_body_object(ex, false);
	if (!body)
		return;
	args_j = cJSON_GetObjectItemCaseSensitive(body, "args");
	if (!cJSON_IsArray(args_j) || cJSON_GetArraySize(args_j) == 0) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "status", "error");
		cJSON_AddStringToObject(o, "reason",
		                        "args is required: a non-empty array of strings");
		cJSON_AddStringToObject(o, "error",
		                        "args is required: a non-empty array of strings");
		web_respond_json(ex, 400, o);
		return;
	}
	argc = (size_t)cJSON_GetArraySize(args_j);
	argv = calloc(argc + 1, sizeof(*argv));
	if (!argv) {
		web_respond_error(ex, 500, "out of memory");
		return;
	}
	cJSON_ArrayForEach(a, args_j)
	{
		if (!cJSON_IsString(a)) {
			web_respond_error(ex, 400, "every element of args must be a string");
			return;
		}
		argv[i++] = a->valuestring;
	}
	if (cl_quote_strv(argv, argc, &err, &command) < 0) {
		web_respond_error(ex, 400, err.msg[0] ? err.msg : "invalid args");
		return;
	}
	c = request_new(web, ex, who, argv, argc);
	if (!c) {
		web_respond_error(ex, 500, "out of memory");
		return;
	}
	/* The request blocks until the front end answers: at once, or once a person decided. */
	r = hostexec_decide(web->hostexec,
	                    &(struct hostexec_call){
	                            .kind = QUEUE_KIND_HOSTEXEC,
	                            .sandbox = who->cloister,
	                            .project = who->project,
	                            .command = command,
	                            .argv = argv,
	                            .argc = argc,
	                            .cwd = who->worktree,
	                            .pid = -1,
	                            .uid = -1,
	                    },
	                    on_answer, c, &err, &answer, &c->ask);
	if (r < 0) {
		http_exchange_set_gone(ex, NULL, NULL);
		request_free(c);
		web_respond_error(ex, 500, err.msg[0] ? err.msg : "policy error");
		return;
	}
	if (answer.verdict != HOSTEXEC_PENDING)
		request_decided(c, &answer);
}

void web_requests_free(struct web *web)
{
	while (web->requests)
		web_on_request_gone(web->requests, NULL);
}
