/* The approval server, token API and request server over real loopback HTTP: Host rebinding
 * and CSRF refusals, the JSON shapes of guardian-api.md, approve/deny/domain decisions with
 * their status codes, the token API, POST /request in every outcome, the SSE stream, /metrics,
 * the kill switch, bounds.
 *
 * The loop runs on the test's thread; HTTP clients run on worker threads and report through an
 * eventfd in the loop, whose handler stops loop_run with DONE (loop_exit cannot be used twice on
 * one loop: it is never reset). Assertions happen on the test's thread, after the worker ended. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "supervisor/policy/config.h"
#include "supervisor/web/http_client.h"
#include "base/loop.h"
#include "supervisor/approval/approvals.h"
#include "supervisor/hostexec/hostexec.h"
#include "supervisor/approval/metrics.h"
#include "supervisor/approval/queue.h"
#include "supervisor/approval/tokens.h"
#include "supervisor/web/web.h"

#define DONE       (-ECANCELED) /* what the eventfd handler stops loop_run with */
#define API_TOKEN  "api-token-for-the-tests-0123456789"
#define BEARER     "Authorization: Bearer " API_TOKEN "\r\n"
#define CTOKEN     "cloister-token-0123456789abcdef"
#define XTOKEN     "X-Cloister-Token: " CTOKEN "\r\n"
#define WORKTREE   "/work/tree"
#define MAX_RUNS   8
#define CLIENT_MS  10000
#define SSE_BUF    65536
#define HEARTBEAT  150
#define ONE_MIB    (1024 * 1024)
#define LONG_TIMEO 60000

static const char config_text[] = "hostexec:\n"
                                  "  auto_approve:\n"
                                  "    - pattern: \"^echo hello$\"\n"
                                  "  manual_approve:\n"
                                  "    - pattern: \"^make( .*)?$\"\n";

enum run_mode {
	RUN_OK,      /* completed, exit 3, stdout "ran ARGV", stderr "err" */
	RUN_FAIL,    /* the runner's run returns -EIO */
	RUN_TIMEOUT, /* the command times out */
	RUN_ERROR,   /* the executor reports an error */
};

struct pending_run {
	hostexec_done_fn done;
	void *done_userdata;
	char argv[256];
};

struct fx {
	struct loop *loop;
	struct approvals *ap;
	const struct queue *queue;   /* approvals_queue(ap) */
	struct approval_source *src; /* the test's asks (add_item) */
	struct tokens *tokens;
	struct config *config;
	struct web *web;
	struct hostexec *hostexec;
	struct web_ops ops;
	int efd;
	uint64_t hostexec_timeout_ms;

	/* the runner */
	enum run_mode run_mode;
	int runs;
	char run_argv[256];
	char run_workdir[256];
	uint64_t run_timeout_ms;
	struct pending_run pending[MAX_RUNS];
	unsigned n_pending;
	struct loop_timer *run_timer;

	/* the decided hook of the test's source, for decisions with a wider scope */
	bool persist_fail;
	int persists;
	bool p_allow;
	enum queue_scope p_scope;
	char p_value[256];
	bool p_is_pattern;
	char p_id[QUEUE_ID_LEN + 1];

	/* sandbox_action */
	char action[32];
	char action_name[64];

	/* the queue events observed, as "added:ID " / "removed:ID:STATE " */
	char events[8192];

	char aurl[64], turl[64], rurl[64];
	uint16_t aport, tport, rport;

	/* run_until */
	bool (*pred)(struct fx *fx, void *arg);
	void *pred_arg;
	uint64_t pred_deadline;
	bool pred_met;
};

/* ---- the owner's side: web_ops, and a source of asks ----------------------------------------- */

static void on_event(void *userdata, const struct queue_event *ev)
{
	struct fx *fx = userdata;
	size_t n = strlen(fx->events);

	if (ev->type == QUEUE_EVENT_ADDED)
		snprintf(fx->events + n, sizeof(fx->events) - n, "added:%s ", ev->item->id);
	else
		snprintf(fx->events + n, sizeof(fx->events) - n, "removed:%s:%s ", ev->item->id,
		         queue_state_to_string(ev->state));
}

static const struct approvals_observer_ops observer_ops = {.event = on_event};

static void on_resolved(void *userdata, const struct queue_item *item, const uint64_t *cookies,
                        size_t n)
{
}

static int op_sandbox_action(void *userdata, const char *name, const char *action)
{
	struct fx *fx = userdata;

	if (strcmp(name, "fake"))
		return -ENOENT;
	snprintf(fx->action, sizeof(fx->action), "%s", action);
	snprintf(fx->action_name, sizeof(fx->action_name), "%s", name);
	return 0;
}

static unsigned op_sandboxes(void *userdata, struct web_sandbox_info *out, unsigned max)
{
	if (max == 0)
		return 0;
	out[0] = (struct web_sandbox_info){
	        .name = "fake",
	        .project = "proj",
	        .state = "running",
	        .pid = 4242,
	        .started_ms = 1700000000000ULL,
	};
	return 1;
}

/* What egress does with a decision that names what it covers: the test records it. */
static int on_decided(void *userdata, const struct queue_item *item,
                      const struct approval_decision *d, struct cl_error *err)
{
	struct fx *fx = userdata;

	if (!d->value)
		return 0;
	fx->persists++;
	fx->p_allow = d->allow;
	fx->p_scope = d->scope;
	fx->p_is_pattern = d->is_pattern;
	snprintf(fx->p_value, sizeof(fx->p_value), "%s", d->value);
	snprintf(fx->p_id, sizeof(fx->p_id), "%s", item->id);
	if (fx->persist_fail)
		return cl_error_set(err, -EROFS, "decisions file is read-only");
	return 0;
}

static const struct approval_source_ops source_ops = {
        .resolved = on_resolved,
        .decided = on_decided,
};

static int on_run_timer(struct loop *loop, void *userdata)
{
	struct fx *fx = userdata;
	struct pending_run runs[MAX_RUNS];
	unsigned n = fx->n_pending;

	fx->run_timer = NULL;
	memcpy(runs, fx->pending, sizeof(runs));
	fx->n_pending = 0;
	for (unsigned i = 0; i < n; i++) {
		char out[300];
		struct hostexec_result res = {
		        .status = "completed",
		        .exit_code = 3,
		        .stdout_text = out,
		        .stderr_text = "err",
		};

		snprintf(out, sizeof(out), "ran %s", runs[i].argv);
		if (fx->run_mode == RUN_TIMEOUT) {
			res.status = "timeout";
			res.exit_code = -1;
		} else if (fx->run_mode == RUN_ERROR) {
			res.status = "error";
			res.error = "boom";
		}
		runs[i].done(runs[i].done_userdata, &res);
	}
	return 0;
}

static int op_run_command(void *userdata, const char *const *argv, size_t argc, const char *workdir,
                          uint64_t timeout_ms, hostexec_done_fn done, void *done_userdata,
                          void **ret_job)
{
	struct fx *fx = userdata;
	struct pending_run *p;

	fx->runs++;
	fx->run_argv[0] = '\0';
	for (size_t i = 0; i < argc; i++) {
		size_t n = strlen(fx->run_argv);

		snprintf(fx->run_argv + n, sizeof(fx->run_argv) - n, "%s%s", i ? " " : "", argv[i]);
	}
	snprintf(fx->run_workdir, sizeof(fx->run_workdir), "%s", workdir ? workdir : "(null)");
	fx->run_timeout_ms = timeout_ms;
	if (fx->run_mode == RUN_FAIL)
		return -EIO;
	assert_true(fx->n_pending < MAX_RUNS);
	p = &fx->pending[fx->n_pending++];
	p->done = done;
	p->done_userdata = done_userdata;
	*ret_job = p;
	snprintf(p->argv, sizeof(p->argv), "%s", fx->run_argv);
	/* Later, from the loop, as a real executor would answer. */
	if (!fx->run_timer)
		assert_int_equal(
		        loop_add_timer(fx->loop, loop_now_ms(), on_run_timer, fx, &fx->run_timer),
		        0);
	return 0;
}

/* ---- the fixture -------------------------------------------------------------------------- */

static int on_efd(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return -errno;
	return DONE;
}

static struct fx *fx_open(uint64_t hostexec_timeout_ms, bool with_run_command)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	struct approvals_config ac = {0};
	struct config_sources src = {
	        .global = {.name = "config.yaml",
	                   .data = config_text,
	                   .len = sizeof(config_text) - 1,
	                   .present = true},
	};
	struct config_load_options opts = {0};
	struct cl_error err = {""};
	struct web_config wc = {
	        .api_token = API_TOKEN,
	        .heartbeat_ms = HEARTBEAT,
	};
	int r;

	assert_non_null(fx);
	fx->ops = (struct web_ops){
	        .sandbox_action = op_sandbox_action,
	        .sandboxes = op_sandboxes,
	};
	fx->hostexec_timeout_ms = hostexec_timeout_ms;
	assert_int_equal(loop_new(&fx->loop), 0);
	fx->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(fx->efd >= 0);
	assert_int_equal(loop_add_fd(fx->loop, fx->efd, EPOLLIN, on_efd, fx), 0);

	queue_config_init(&ac.queue);
	ac.queue.timeout_ms[QUEUE_KIND_HOSTEXEC] = hostexec_timeout_ms;
	assert_int_equal(approvals_new(fx->loop, &ac, &fx->ap), 0);
	fx->queue = approvals_queue(fx->ap);
	assert_int_equal(approvals_observe(fx->ap, &observer_ops, fx), 0);
	assert_int_equal(approvals_register(fx->ap, &source_ops, fx, &fx->src), 0);
	/* The CLI counts as one permanent approver, as with `run --ask web`. */
	approvals_set_approvers(fx->ap, APPROVER_CLI, 1);

	assert_int_equal(tokens_new(&fx->tokens), 0);
	assert_int_equal(tokens_register(fx->tokens, CTOKEN, "sb1", "proj", WORKTREE), 0);

	if (config_load(&src, &opts, &fx->config, &err) < 0)
		fail_msg("config: %s", err.msg);
	/* Requests run through the test's runner (no cancel: nothing is listed as running). */
	static const struct hostexec_runner runner = {.run = op_run_command};
	struct hostexec_config hc = {
	        .config = fx->config,
	        .runner = with_run_command ? &runner : NULL,
	        .runner_userdata = fx,
	        .command_timeout_ms = 7000,
	};

	assert_int_equal(hostexec_new(fx->loop, fx->ap, &hc, &fx->hostexec), 0);
	r = web_new(fx->loop, fx->ap, fx->hostexec, fx->tokens, &wc, &fx->ops, fx, &err, &fx->web);
	if (r < 0)
		fail_msg("web_new: %s", err.msg);
	fx->aport = web_approval_port(fx->web);
	fx->tport = web_tokens_port(fx->web);
	fx->rport = web_request_port(fx->web);
	assert_true(fx->aport && fx->tport && fx->rport);
	assert_true(fx->aport != fx->tport && fx->tport != fx->rport && fx->aport != fx->rport);
	snprintf(fx->aurl, sizeof(fx->aurl), "http://127.0.0.1:%u", fx->aport);
	snprintf(fx->turl, sizeof(fx->turl), "http://127.0.0.1:%u", fx->tport);
	snprintf(fx->rurl, sizeof(fx->rurl), "http://127.0.0.1:%u", fx->rport);
	return fx;
}

static void fx_close(struct fx *fx)
{
	if (fx->run_timer)
		loop_cancel_timer(fx->loop, fx->run_timer);
	web_free(fx->web);
	fx->web = NULL;
	hostexec_free(fx->hostexec);
	/* Owed command completions have nowhere to go after web_free; they are not called. */
	approvals_unregister(fx->src);
	approvals_unobserve(fx->ap, &observer_ops, fx);
	approvals_free(fx->ap);
	tokens_free(fx->tokens);
	config_free(fx->config);
	loop_free(fx->loop);
	close(fx->efd);
	free(fx);
}

static int setup(void **state)
{
	*state = fx_open(LONG_TIMEO, true);
	return 0;
}

static int setup_short_timeout(void **state)
{
	*state = fx_open(1000, true);
	return 0;
}

static int setup_no_executor(void **state)
{
	*state = fx_open(LONG_TIMEO, false);
	return 0;
}

static int teardown(void **state)
{
	fx_close(*state);
	return 0;
}

/* ---- running workers while the loop runs --------------------------------------------------- */

struct job {
	void (*fn)(void *arg);
	void *arg;
	int efd;
};

static void *job_main(void *p)
{
	struct job *j = p;
	uint64_t one = 1;

	j->fn(j->arg);
	if (write(j->efd, &one, sizeof(one)) != sizeof(one))
		abort();
	return NULL;
}

/* Run FN(ARG) on a worker thread while the loop runs here, until it returns. */
static void fx_run(struct fx *fx, void (*fn)(void *arg), void *arg)
{
	struct job j = {fn, arg, fx->efd};
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, job_main, &j), 0);
	assert_int_equal(loop_run(fx->loop), DONE);
	assert_int_equal(pthread_join(t, NULL), 0);
}

static int on_pred_timer(struct loop *loop, void *userdata)
{
	struct fx *fx = userdata;
	uint64_t one = 1;

	if (fx->pred(fx, fx->pred_arg) || loop_now_ms() >= fx->pred_deadline) {
		fx->pred_met = fx->pred(fx, fx->pred_arg);
		if (write(fx->efd, &one, sizeof(one)) != sizeof(one))
			return -errno;
		return 0;
	}
	return loop_add_timer(loop, loop_now_ms() + 5, on_pred_timer, fx, NULL);
}

/* Run the loop until PRED holds (true) or TIMEOUT_MS passed (false). */
static bool run_until(struct fx *fx, bool (*pred)(struct fx *fx, void *arg), void *arg,
                      unsigned timeout_ms)
{
	fx->pred = pred;
	fx->pred_arg = arg;
	fx->pred_deadline = loop_now_ms() + timeout_ms;
	fx->pred_met = false;
	assert_int_equal(loop_add_timer(fx->loop, loop_now_ms(), on_pred_timer, fx, NULL), 0);
	assert_int_equal(loop_run(fx->loop), DONE);
	return fx->pred_met;
}

/* ---- HTTP from a worker --------------------------------------------------------------------- */

struct req {
	const char *url, *method, *path, *headers, *body;
	size_t body_len;
	int timeout_ms;
	int rc;
	struct http_response resp;
};

static void req_do(void *p)
{
	struct req *r = p;

	r->rc = http_client_request(r->url, r->method, r->path, r->headers, r->body,
	                            r->body ? (r->body_len ? r->body_len : strlen(r->body)) : 0,
	                            r->timeout_ms ? r->timeout_ms : CLIENT_MS, &r->resp);
}

static void *req_thread(void *p)
{
	req_do(p);
	return NULL;
}

static cJSON *parse_json(const char *body)
{
	cJSON *o = cJSON_Parse(body);

	if (!o)
		fail_msg("not JSON: %s", body);
	return o;
}

/* One request; returns the status and, when RET_JSON, the parsed body (which must be JSON). */
static int http(struct fx *fx, const char *url, const char *method, const char *path,
                const char *headers, const char *body, cJSON **ret_json)
{
	struct req r = {
	        .url = url, .method = method, .path = path, .headers = headers, .body = body};
	int status;

	fx_run(fx, req_do, &r);
	if (r.rc < 0)
		fail_msg("%s %s: %s", method, path, strerror(-r.rc));
	status = r.resp.status;
	if (ret_json)
		*ret_json = parse_json(r.resp.body);
	http_response_free(&r.resp);
	return status;
}

static const char *str_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsString(v)) {
		char *text = cJSON_PrintUnformatted(o);

		print_error("no string \"%s\" in %s\n", key, text ? text : "?");
		free(text);
		fail();
	}
	return v->valuestring;
}

static double num_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v))
		fail_msg("no number \"%s\"", key);
	return v->valuedouble;
}

static bool has(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key) != NULL;
}

/* A raw request (full control over Host, Origin …); returns the status and the whole response
 * (headers included) in *ret_text when given. REQUEST should say Connection: close. */
struct raw {
	uint16_t port;
	const char *text;
	size_t len;
	char *out;
	size_t out_len;
	int rc;
};

static void raw_do(void *p)
{
	struct raw *r = p;
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(r->port)};
	size_t cap = 65536;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = {.tv_sec = CLIENT_MS / 1000};

	r->rc = -EIO;
	r->out = calloc(1, cap + 1);
	if (fd < 0 || !r->out)
		return;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		goto out;
	for (size_t off = 0; off < r->len;) {
		ssize_t n = send(fd, r->text + off, r->len - off, MSG_NOSIGNAL);

		if (n <= 0)
			break; /* the server may answer and close before reading everything */
		off += (size_t)n;
	}
	for (;;) {
		ssize_t n;

		if (r->out_len == cap) {
			char *b = realloc(r->out, cap * 2 + 1);

			if (!b)
				goto out;
			r->out = b;
			cap *= 2;
		}
		n = recv(fd, r->out + r->out_len, cap - r->out_len, 0);
		if (n <= 0)
			break;
		r->out_len += (size_t)n;
	}
	r->out[r->out_len] = '\0';
	r->rc = 0;
out:
	close(fd);
}

static int raw_request(struct fx *fx, uint16_t port, const char *text, size_t len, char **ret_text)
{
	struct raw r = {.port = port, .text = text, .len = len ? len : strlen(text)};
	int status = -1;

	fx_run(fx, raw_do, &r);
	assert_int_equal(r.rc, 0);
	if (sscanf(r.out, "HTTP/1.%*1[01] %3d", &status) != 1)
		fail_msg("no status line in: %.200s", r.out);
	if (ret_text)
		*ret_text = r.out;
	else
		free(r.out);
	return status;
}

/* The body of a raw response (after the blank line). */
static const char *raw_body(const char *text)
{
	const char *p = strstr(text, "\r\n\r\n");

	return p ? p + 4 : "";
}

/* ---- queue helpers -------------------------------------------------------------------------- */

static void add_item(struct fx *fx, enum queue_kind kind, const char *summary, char id[static 13])
{
	static uint64_t cookie = 1;
	static const char *const argv[] = {"make", "a b", "it's"};
	struct queue_request rq = {
	        .kind = kind,
	        .sandbox = "sb1",
	        .project = "proj",
	        .summary = summary,
	        .pid = -1,
	        .uid = -1,
	        .cookie = cookie++,
	};

	if (kind == QUEUE_KIND_EXEC) {
		rq.exe = "/usr/bin/make";
		rq.argv = argv;
		rq.argc = 3;
		rq.cwd = "/home/agent/src";
		rq.pid = 1234;
		rq.uid = 1000;
	}
	assert_int_equal(approvals_ask(fx->src, &rq, id), QUEUE_ADD_NEW);
}

/* "2024-01-15T14:32:05Z", within a minute of now. */
static void assert_timestamp(const char *ts)
{
	struct tm tm = {0};
	const char *end = strptime(ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
	time_t t;

	assert_non_null(end);
	assert_int_equal(*end, '\0');
	assert_int_equal(strlen(ts), 20);
	t = timegm(&tm);
	assert_true(t > time(NULL) - 60 && t < time(NULL) + 600);
}

/* ---- Host (DNS rebinding) ------------------------------------------------------------------- */

static int get_with_host(struct fx *fx, uint16_t port, const char *path, const char *host)
{
	char text[512];

	snprintf(text, sizeof(text),
	         "GET %s HTTP/1.1\r\nHost: %s\r\n" BEARER "Connection: close\r\n\r\n", path, host);
	return raw_request(fx, port, text, 0, NULL);
}

static void test_host_rebinding(void **state)
{
	struct fx *fx = *state;
	char host[64];
	char *resp;

	assert_int_equal(get_with_host(fx, fx->aport, "/pending", "evil.com"), 403);
	snprintf(host, sizeof(host), "evil.com:%u", fx->aport);
	assert_int_equal(get_with_host(fx, fx->aport, "/pending", host), 403);
	/* A name that merely starts like a loopback one. */
	snprintf(host, sizeof(host), "localhost.evil.com:%u", fx->aport);
	assert_int_equal(get_with_host(fx, fx->aport, "/pending", host), 403);
	assert_int_equal(get_with_host(fx, fx->aport, "/pending", "127.0.0.1.nip.io"), 403);
	assert_int_equal(get_with_host(fx, fx->aport, "/pending", "127.0.0.2"), 403);
	assert_int_equal(get_with_host(fx, fx->aport, "/pending", "localhost:notaport"), 403);
	/* The token API is loopback-only the same way. */
	assert_int_equal(get_with_host(fx, fx->tport, "/tokens", "evil.com"), 403);
	/* Two Host headers (the first would pass): refused as ambiguous. */
	snprintf(host, sizeof(host), "127.0.0.1:%u\r\nHost: evil.com", fx->aport);
	assert_int_equal(get_with_host(fx, fx->aport, "/pending", host), 400);

	snprintf(host, sizeof(host), "localhost:%u", fx->aport);
	assert_int_equal(get_with_host(fx, fx->aport, "/pending", host), 200);
	snprintf(host, sizeof(host), "LOCALHOST:%u", fx->aport);
	assert_int_equal(get_with_host(fx, fx->aport, "/pending", host), 200);
	snprintf(host, sizeof(host), "127.0.0.1:%u", fx->aport);
	assert_int_equal(get_with_host(fx, fx->aport, "/pending", host), 200);
	snprintf(host, sizeof(host), "[::1]:%u", fx->aport);
	assert_int_equal(get_with_host(fx, fx->aport, "/pending", host), 200);
	assert_int_equal(get_with_host(fx, fx->aport, "/pending", "[::1]"), 200);
	assert_int_equal(get_with_host(fx, fx->aport, "/pending", "localhost"), 200);

	/* No Host at all, in HTTP/1.1 and 1.0: not a loopback name either. */
	assert_int_equal(raw_request(fx, fx->aport,
	                             "GET /pending HTTP/1.1\r\nConnection: close\r\n\r\n", 0, NULL),
	                 403);
	assert_int_equal(raw_request(fx, fx->aport, "GET /pending HTTP/1.0\r\n\r\n", 0, &resp),
	                 403);
	assert_non_null(strstr(raw_body(resp), "\"error\":\"host not allowed\""));
	free(resp);
}

/* ---- CSRF ----------------------------------------------------------------------------------- */

static void test_csrf(void **state)
{
	struct fx *fx = *state;
	char id[13], path[64], origin[128];
	const struct queue_item *it;
	cJSON *o;

	add_item(fx, QUEUE_KIND_EXEC, "make 'a b' 'it'\\''s'", id);
	snprintf(path, sizeof(path), "/approve/%s", id);

	/* A foreign Origin: refused, for reads as well. */
	assert_int_equal(
	        http(fx, fx->aurl, "POST", path, "Origin: http://evil.com\r\n" BEARER, NULL, &o),
	        403);
	assert_string_equal(str_of(o, "error"), "cross-origin request refused");
	cJSON_Delete(o);
	assert_int_equal(
	        http(fx, fx->aurl, "GET", "/pending", "Origin: http://evil.com\r\n", NULL, NULL),
	        403);
	assert_int_equal(http(fx, fx->aurl, "POST", path, "Origin: null\r\n", NULL, NULL), 403);
	/* The dashboard's host on another port is another origin. */
	snprintf(origin, sizeof(origin), "Origin: http://127.0.0.1:%u\r\n", fx->tport);
	assert_int_equal(http(fx, fx->aurl, "POST", path, origin, NULL, NULL), 403);

	/* No Origin: the API token is required for a state change; without it, 401. */
	assert_int_equal(http(fx, fx->aurl, "POST", path, NULL, NULL, &o), 401);
	assert_non_null(strstr(str_of(o, "error"), "API token"));
	cJSON_Delete(o);
	assert_int_equal(http(fx, fx->aurl, "POST", path,
	                      "Authorization: Bearer api-token-for-the-tests-012345678X\r\n", NULL,
	                      NULL),
	                 401);
	assert_int_equal(http(fx, fx->aurl, "POST", path, "Authorization: Bearer \r\n", NULL, NULL),
	                 401);
	assert_int_equal(http(fx, fx->aurl, "POST", path, "Authorization: Basic " API_TOKEN "\r\n",
	                      NULL, NULL),
	                 401);
	/* A browser's cross-site request without an Origin (Sec-Fetch-Site says so). */
	assert_int_equal(http(fx, fx->aurl, "POST", path, "Sec-Fetch-Site: cross-site\r\n" BEARER,
	                      NULL, NULL),
	                 403);
	assert_int_equal(http(fx, fx->aurl, "GET", "/pending",
	                      "Sec-Fetch-Site: same-site\r\n" BEARER, NULL, NULL),
	                 403);
	/* Nothing of the above decided anything. */
	it = queue_find(fx->queue, id);
	assert_non_null(it);
	assert_int_equal(it->state, QUEUE_STATE_PENDING);

	/* The dashboard's own Origin alone proves nothing (any local program can send it). */
	snprintf(origin, sizeof(origin), "Origin: http://localhost:%u\r\n", fx->aport);
	assert_int_equal(http(fx, fx->aurl, "POST", path, origin, NULL, NULL), 401);
	assert_int_equal(http(fx, fx->aurl, "GET", "/pending", origin, NULL, NULL), 401);
	/* Its login link: a wrong token is refused, the right one sets the session cookie. */
	assert_int_equal(
	        http(fx, fx->aurl, "GET", "/?token=wrong-token-0123456789", NULL, NULL, NULL), 401);
	assert_int_equal(http(fx, fx->aurl, "GET", "/?token=" API_TOKEN, NULL, NULL, NULL), 303);
	/* With the cookie (and its Origin) the dashboard decides; decided_by says "web". A
	 * wrong cookie is refused, and the cookie is no use to another origin. */
	{
		char hdr[512];

		snprintf(hdr, sizeof(hdr), "%sCookie: cloister_token=wrong-0123456789abcdef\r\n",
		         origin);
		assert_int_equal(http(fx, fx->aurl, "POST", path, hdr, NULL, NULL), 401);
		snprintf(hdr, sizeof(hdr),
		         "Origin: http://evil.example\r\nCookie: cloister_token=" API_TOKEN "\r\n");
		assert_int_equal(http(fx, fx->aurl, "POST", path, hdr, NULL, NULL), 403);
		snprintf(hdr, sizeof(hdr), "%sCookie: a=b; cloister_token=" API_TOKEN "\r\n",
		         origin);
		assert_int_equal(http(fx, fx->aurl, "POST", path, hdr, NULL, &o), 200);
	}
	assert_string_equal(str_of(o, "status"), "approved");
	assert_string_equal(str_of(o, "id"), id);
	cJSON_Delete(o);
	it = queue_lookup(fx->queue, id);
	assert_non_null(it);
	assert_int_equal(it->state, QUEUE_STATE_APPROVED);
	assert_string_equal(it->decided_by, "web");

	/* The right Bearer token: decided_by "cli". Same-origin fetch metadata is fine. */
	add_item(fx, QUEUE_KIND_EXEC, "make other", id);
	snprintf(path, sizeof(path), "/deny/%s", id);
	assert_int_equal(http(fx, fx->aurl, "POST", path, "Sec-Fetch-Site: same-origin\r\n" BEARER,
	                      NULL, &o),
	                 200);
	assert_string_equal(str_of(o, "status"), "denied");
	cJSON_Delete(o);
	it = queue_lookup(fx->queue, id);
	assert_int_equal(it->state, QUEUE_STATE_DENIED);
	assert_string_equal(it->decided_by, "cli");
	/* The dashboard's fetches: its Origin (any of its three spellings) and its cookie. */
	snprintf(origin, sizeof(origin),
	         "Origin: http://[::1]:%u\r\nCookie: cloister_token=" API_TOKEN "\r\n", fx->aport);
	assert_int_equal(http(fx, fx->aurl, "GET", "/status", origin, NULL, NULL), 200);
	snprintf(origin, sizeof(origin),
	         "Origin: http://127.0.0.1:%u\r\nCookie: cloister_token=" API_TOKEN "\r\n",
	         fx->aport);
	assert_int_equal(http(fx, fx->aurl, "GET", "/status", origin, NULL, NULL), 200);
}

/* ---- /pending and /pending-domains ---------------------------------------------------------- */

static void test_pending_shapes(void **state)
{
	struct fx *fx = *state;
	char exec_id[13], dom_id[13], host_id[13];
	const cJSON *reqs, *e, *args;
	cJSON *o;

	add_item(fx, QUEUE_KIND_EXEC, "make 'a b' 'it'\\''s'", exec_id);
	add_item(fx, QUEUE_KIND_DOMAIN, "docs.example.com:443", dom_id);
	add_item(fx, QUEUE_KIND_HOSTEXEC, "make all", host_id);

	assert_int_equal(http(fx, fx->aurl, "GET", "/pending", BEARER, NULL, &o), 200);
	reqs = cJSON_GetObjectItemCaseSensitive(o, "requests");
	assert_true(cJSON_IsArray(reqs));
	assert_int_equal(cJSON_GetArraySize(reqs), 2); /* commands only, oldest first */
	e = cJSON_GetArrayItem(reqs, 0);
	assert_string_equal(str_of(e, "id"), exec_id);
	assert_string_equal(str_of(e, "cloister"), "sb1");
	assert_string_equal(str_of(e, "project"), "proj");
	assert_string_equal(str_of(e, "branch"), "");
	assert_string_equal(str_of(e, "agent"), "");
	assert_string_equal(str_of(e, "cmd"), "make 'a b' 'it'\\''s'");
	assert_timestamp(str_of(e, "timestamp"));
	assert_string_equal(str_of(e, "kind"), "exec");
	assert_string_equal(str_of(e, "type"), "command");
	assert_int_equal((int)num_of(e, "pid"), 1234);
	assert_int_equal((int)num_of(e, "uid"), 1000);
	assert_string_equal(str_of(e, "exe"), "/usr/bin/make");
	assert_string_equal(str_of(e, "cwd"), "/home/agent/src");
	assert_timestamp(str_of(e, "expires"));
	args = cJSON_GetObjectItemCaseSensitive(e, "args");
	assert_int_equal(cJSON_GetArraySize(args), 3);
	assert_string_equal(cJSON_GetArrayItem(args, 0)->valuestring, "make");
	assert_string_equal(cJSON_GetArrayItem(args, 1)->valuestring, "a b");
	assert_string_equal(cJSON_GetArrayItem(args, 2)->valuestring, "it's");
	assert_false(has(e, "domain"));
	e = cJSON_GetArrayItem(reqs, 1);
	assert_string_equal(str_of(e, "id"), host_id);
	assert_string_equal(str_of(e, "kind"), "hostexec");
	assert_string_equal(str_of(e, "cmd"), "make all");
	assert_false(has(e, "pid")); /* unknown: absent, not -1 */
	assert_false(has(e, "exe"));
	cJSON_Delete(o);

	assert_int_equal(http(fx, fx->aurl, "GET", "/pending-domains", BEARER, NULL, &o), 200);
	reqs = cJSON_GetObjectItemCaseSensitive(o, "requests");
	assert_int_equal(cJSON_GetArraySize(reqs), 1);
	e = cJSON_GetArrayItem(reqs, 0);
	assert_string_equal(str_of(e, "id"), dom_id);
	assert_string_equal(str_of(e, "cloister"), "sb1");
	assert_string_equal(str_of(e, "project"), "proj");
	assert_string_equal(str_of(e, "domain"), "docs.example.com:443");
	assert_timestamp(str_of(e, "timestamp"));
	assert_timestamp(str_of(e, "expires"));
	assert_string_equal(str_of(e, "kind"), "domain");
	assert_string_equal(str_of(e, "type"), "domain");
	assert_false(has(e, "cmd"));
	cJSON_Delete(o);

	/* Empty lists are [] rather than absent. */
	approvals_cancel_sandbox(fx->ap, "sb1", NULL);
	assert_int_equal(http(fx, fx->aurl, "GET", "/pending-domains", BEARER, NULL, &o), 200);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "requests")), 0);
	cJSON_Delete(o);
	assert_int_equal(http(fx, fx->aurl, "GET", "/pending", BEARER, NULL, &o), 200);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "requests")), 0);
	cJSON_Delete(o);
}

/* ---- approve / deny ------------------------------------------------------------------------- */

static void test_approve_deny(void **state)
{
	struct fx *fx = *state;
	char a[13], d[13], dom[13], path[64];
	const struct queue_item *it;
	cJSON *o;

	add_item(fx, QUEUE_KIND_EXEC, "make a", a);
	add_item(fx, QUEUE_KIND_EXEC, "make d", d);
	add_item(fx, QUEUE_KIND_DOMAIN, "x.example.com", dom);

	/* Unknown ids, and a domain item on the command path. */
	assert_int_equal(http(fx, fx->aurl, "POST", "/approve/0123456789ab", BEARER, NULL, &o),
	                 404);
	assert_string_equal(str_of(o, "error"), "request not found");
	cJSON_Delete(o);
	assert_int_equal(http(fx, fx->aurl, "POST", "/deny/nope", BEARER, NULL, NULL), 404);
	snprintf(path, sizeof(path), "/approve/%s", dom);
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER, NULL, NULL), 404);
	assert_int_equal(http(fx, fx->aurl, "POST", "/approve/", BEARER, NULL, NULL), 404);
	snprintf(path, sizeof(path), "/approve/%s/x", a);
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER, NULL, NULL), 404);

	/* Bad bodies change nothing. */
	snprintf(path, sizeof(path), "/deny/%s", d);
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER, "{\"reason\": 5}", &o), 400);
	assert_true(has(o, "error"));
	cJSON_Delete(o);
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER, "{\"reason\": ", &o), 400);
	assert_non_null(strstr(str_of(o, "error"), "invalid JSON"));
	cJSON_Delete(o);
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER, "[1,2]", NULL), 400);
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER, "{\"a\":1,\"a\":2}", NULL), 400);
	assert_int_equal(queue_find(fx->queue, d)->state, QUEUE_STATE_PENDING);

	/* Deny with a reason: stored. */
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER,
	                      "{\"reason\": \"Package not needed\"}", &o),
	                 200);
	assert_string_equal(str_of(o, "status"), "denied");
	assert_string_equal(str_of(o, "id"), d);
	cJSON_Delete(o);
	it = queue_lookup(fx->queue, d);
	assert_int_equal(it->state, QUEUE_STATE_DENIED);
	assert_string_equal(it->reason, "Package not needed");

	/* Approve with an empty body (no Content-Type either). */
	snprintf(path, sizeof(path), "/approve/%s", a);
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER, NULL, &o), 200);
	assert_string_equal(str_of(o, "status"), "approved");
	assert_string_equal(str_of(o, "id"), a);
	cJSON_Delete(o);

	/* A second decision: 409, harmless; the outcome stays. */
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER, NULL, &o), 409);
	assert_string_equal(str_of(o, "status"), "approved");
	assert_string_equal(str_of(o, "id"), a);
	assert_true(has(o, "error"));
	cJSON_Delete(o);
	snprintf(path, sizeof(path), "/deny/%s", a);
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER, "{\"reason\":\"too late\"}", &o),
	                 409);
	assert_string_equal(str_of(o, "status"), "approved");
	cJSON_Delete(o);
	it = queue_lookup(fx->queue, a);
	assert_int_equal(it->state, QUEUE_STATE_APPROVED);
	assert_string_not_equal(it->reason, "too late");
	snprintf(path, sizeof(path), "/approve/%s", d);
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER, NULL, NULL), 409);
	assert_int_equal(queue_lookup(fx->queue, d)->state, QUEUE_STATE_DENIED);

	/* The owner was told: one ADDED and one REMOVED each, in order. */
	{
		char want[256];

		snprintf(want, sizeof(want), "added:%s added:%s added:%s removed:%s:denied ", a, d,
		         dom, d);
		assert_memory_equal(fx->events, want, strlen(want));
		assert_non_null(strstr(fx->events, "removed:"));
		snprintf(want, sizeof(want), "removed:%s:approved ", a);
		assert_non_null(strstr(fx->events, want));
	}

	/* /decisions lists them, newest first. */
	assert_int_equal(http(fx, fx->aurl, "GET", "/decisions", BEARER, NULL, &o), 200);
	{
		const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "decisions");

		assert_int_equal(cJSON_GetArraySize(arr), 2);
		assert_string_equal(str_of(cJSON_GetArrayItem(arr, 0), "id"), a);
		assert_string_equal(str_of(cJSON_GetArrayItem(arr, 0), "status"), "approved");
		assert_string_equal(str_of(cJSON_GetArrayItem(arr, 0), "decided_by"), "cli");
		assert_string_equal(str_of(cJSON_GetArrayItem(arr, 1), "reason"),
		                    "Package not needed");
		assert_timestamp(str_of(cJSON_GetArrayItem(arr, 1), "decided_at"));
	}
	cJSON_Delete(o);
}

/* ---- domain decisions ----------------------------------------------------------------------- */

static void test_domain_decisions(void **state)
{
	struct fx *fx = *state;
	char id[13], cmd[13], path[64];
	const struct queue_item *it;
	cJSON *o;

	add_item(fx, QUEUE_KIND_DOMAIN, "api.example.com:443", id);
	add_item(fx, QUEUE_KIND_EXEC, "make x", cmd);
	snprintf(path, sizeof(path), "/approve-domain/%s", id);

	/* scope is required and validated; nothing is decided or persisted meanwhile. */
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER, NULL, &o), 400);
	assert_true(has(o, "error"));
	cJSON_Delete(o);
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER, "{}", NULL), 400);
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER, "{\"scope\":\"forever\"}", &o),
	                 400);
	assert_non_null(strstr(str_of(o, "error"), "scope"));
	cJSON_Delete(o);
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER, "{\"scope\":1}", NULL), 400);
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER,
	                      "{\"scope\":\"project\",\"wildcard\":\"yes\"}", NULL),
	                 400);
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER, "{\"scope\":", NULL), 400);
	assert_int_equal(fx->persists, 0);
	assert_int_equal(queue_find(fx->queue, id)->state, QUEUE_STATE_PENDING);

	/* The command path's ids are not domain ids, and unknown ids are 404. */
	snprintf(path, sizeof(path), "/approve-domain/%s", cmd);
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER, "{\"scope\":\"once\"}", NULL),
	                 404);
	assert_int_equal(http(fx, fx->aurl, "POST", "/deny-domain/0123456789ab", BEARER,
	                      "{\"scope\":\"once\"}", NULL),
	                 404);

	/* Wildcard, project scope: the pattern in the answer and in what is persisted. */
	snprintf(path, sizeof(path), "/approve-domain/%s", id);
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER,
	                      "{\"scope\":\"project\",\"wildcard\":true}", &o),
	                 200);
	assert_string_equal(str_of(o, "status"), "approved");
	assert_string_equal(str_of(o, "scope"), "project");
	assert_string_equal(str_of(o, "pattern"), "*.example.com");
	assert_false(has(o, "persistence_error"));
	cJSON_Delete(o);
	assert_int_equal(fx->persists, 1);
	assert_true(fx->p_allow);
	assert_int_equal(fx->p_scope, QUEUE_SCOPE_PROJECT);
	assert_string_equal(fx->p_value, "*.example.com");
	assert_true(fx->p_is_pattern);
	assert_string_equal(fx->p_id, id);
	it = queue_lookup(fx->queue, id);
	assert_int_equal(it->state, QUEUE_STATE_APPROVED);
	assert_int_equal(it->scope, QUEUE_SCOPE_PROJECT);

	/* A second decision on it: 409, nothing persisted again. */
	snprintf(path, sizeof(path), "/deny-domain/%s", id);
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER, "{\"scope\":\"global\"}", NULL),
	                 409);
	assert_int_equal(fx->persists, 1);
	assert_int_equal(queue_lookup(fx->queue, id)->state, QUEUE_STATE_APPROVED);

	/* Deny, global, exact domain (the port is not part of it), persistence failing: the
	 * error is reported and the denial still happens. */
	add_item(fx, QUEUE_KIND_DOMAIN, "tracker.ads.example.net:443", id);
	fx->persist_fail = true;
	snprintf(path, sizeof(path), "/deny-domain/%s", id);
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER,
	                      "{\"scope\":\"global\",\"wildcard\":false}", &o),
	                 200);
	assert_string_equal(str_of(o, "status"), "denied");
	assert_string_equal(str_of(o, "scope"), "global");
	assert_false(has(o, "pattern"));
	assert_string_equal(str_of(o, "persistence_error"), "decisions file is read-only");
	cJSON_Delete(o);
	assert_int_equal(fx->persists, 2);
	assert_false(fx->p_allow);
	assert_int_equal(fx->p_scope, QUEUE_SCOPE_GLOBAL);
	assert_string_equal(fx->p_value, "tracker.ads.example.net");
	assert_false(fx->p_is_pattern);
	assert_int_equal(queue_lookup(fx->queue, id)->state, QUEUE_STATE_DENIED);
	fx->persist_fail = false;

	/* A two-label domain has no wildcard: 400, nothing decided. */
	add_item(fx, QUEUE_KIND_DOMAIN, "example.com", id);
	snprintf(path, sizeof(path), "/deny-domain/%s", id);
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER,
	                      "{\"scope\":\"project\",\"wildcard\":true}", &o),
	                 400);
	assert_true(has(o, "error"));
	cJSON_Delete(o);
	assert_int_equal(queue_find(fx->queue, id)->state, QUEUE_STATE_PENDING);
	assert_int_equal(fx->persists, 2);

	/* once: decided, not handed to the owner at all. */
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER, "{\"scope\":\"once\"}", &o), 200);
	assert_string_equal(str_of(o, "status"), "denied");
	assert_string_equal(str_of(o, "scope"), "once");
	cJSON_Delete(o);
	assert_int_equal(fx->persists, 2);
	it = queue_lookup(fx->queue, id);
	assert_int_equal(it->state, QUEUE_STATE_DENIED);
	assert_int_equal(it->scope, QUEUE_SCOPE_ONCE);

	/* An address has no wildcard either. */
	add_item(fx, QUEUE_KIND_DOMAIN, "10.1.2.3:443", id);
	snprintf(path, sizeof(path), "/approve-domain/%s", id);
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER,
	                      "{\"scope\":\"session\",\"wildcard\":true}", NULL),
	                 400);
	assert_int_equal(queue_find(fx->queue, id)->state, QUEUE_STATE_PENDING);
	assert_int_equal(fx->persists, 2);

	/* session: the owner learns it (to keep it in memory), with the bare host. */
	add_item(fx, QUEUE_KIND_DOMAIN, "[2001:db8::1]:443", id);
	snprintf(path, sizeof(path), "/approve-domain/%s", id);
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER, "{\"scope\":\"session\"}", &o),
	                 200);
	assert_string_equal(str_of(o, "scope"), "session");
	assert_false(has(o, "persistence_error"));
	cJSON_Delete(o);
	assert_int_equal(fx->persists, 3);
	assert_int_equal(fx->p_scope, QUEUE_SCOPE_SESSION);
	assert_string_equal(fx->p_value, "2001:db8::1");
	assert_false(fx->p_is_pattern);
	it = queue_lookup(fx->queue, id);
	assert_int_equal(it->state, QUEUE_STATE_APPROVED);
	assert_int_equal(it->scope, QUEUE_SCOPE_SESSION);
}

/* ---- token API ------------------------------------------------------------------------------ */

static void test_token_api(void **state)
{
	struct fx *fx = *state;
	const char *tok = "af3b2c1d00112233445566778899aabbccddeeff";
	char origin[128];
	const cJSON *arr, *e;
	cJSON *o;
	int found = 0;

	/* Every request needs the API token, even a read (the list holds secrets). */
	assert_int_equal(http(fx, fx->turl, "GET", "/tokens", NULL, NULL, &o), 401);
	assert_true(has(o, "error"));
	cJSON_Delete(o);
	assert_int_equal(http(fx, fx->turl, "POST", "/tokens", NULL,
	                      "{\"token\":\"af3b2c1d00112233445566778899aabb\",\"cloister\":\"c\"}",
	                      NULL),
	                 401);
	/* No Origin is accepted at all, not even the dashboard's. */
	assert_int_equal(http(fx, fx->turl, "GET", "/tokens", "Origin: http://evil.com\r\n" BEARER,
	                      NULL, NULL),
	                 403);
	snprintf(origin, sizeof(origin), "Origin: http://127.0.0.1:%u\r\n" BEARER, fx->aport);
	assert_int_equal(http(fx, fx->turl, "GET", "/tokens", origin, NULL, NULL), 403);
	snprintf(origin, sizeof(origin), "Origin: http://127.0.0.1:%u\r\n" BEARER, fx->tport);
	assert_int_equal(http(fx, fx->turl, "GET", "/tokens", origin, NULL, NULL), 403);
	assert_int_equal(tokens_count(fx->tokens), 1);

	/* Register. */
	{
		char body[512];

		snprintf(body, sizeof(body),
		         "{\"token\":\"%s\",\"cloister\":\"my-api-main\",\"project\":\"my-api\","
		         "\"worktree\":\"/home/user/repos/my-api\"}",
		         tok);
		assert_int_equal(http(fx, fx->turl, "POST", "/tokens", BEARER, body, &o), 201);
		assert_string_equal(str_of(o, "status"), "registered");
		cJSON_Delete(o);
	}
	assert_int_equal(tokens_count(fx->tokens), 2);

	/* Invalid: a short token, a missing cloister, wrong types, bad JSON. */
	assert_int_equal(http(fx, fx->turl, "POST", "/tokens", BEARER,
	                      "{\"token\":\"short\",\"cloister\":\"c\"}", &o),
	                 400);
	assert_true(has(o, "error"));
	cJSON_Delete(o);
	assert_int_equal(http(fx, fx->turl, "POST", "/tokens", BEARER,
	                      "{\"token\":\"has a space in it 0123456789\",\"cloister\":\"c\"}",
	                      NULL),
	                 400);
	assert_int_equal(http(fx, fx->turl, "POST", "/tokens", BEARER,
	                      "{\"token\":\"0123456789abcdef0123\"}", NULL),
	                 400);
	assert_int_equal(http(fx, fx->turl, "POST", "/tokens", BEARER,
	                      "{\"token\":\"0123456789abcdef0123\",\"cloister\":7}", NULL),
	                 400);
	assert_int_equal(http(fx, fx->turl, "POST", "/tokens", BEARER, "{\"token\":", &o), 400);
	assert_true(has(o, "error"));
	cJSON_Delete(o);
	assert_int_equal(http(fx, fx->turl, "POST", "/tokens", BEARER, NULL, NULL), 400);
	assert_int_equal(tokens_count(fx->tokens), 2);

	/* List. */
	assert_int_equal(http(fx, fx->turl, "GET", "/tokens", BEARER, NULL, &o), 200);
	arr = cJSON_GetObjectItemCaseSensitive(o, "tokens");
	assert_int_equal(cJSON_GetArraySize(arr), 2);
	cJSON_ArrayForEach(e, arr)
	{
		if (strcmp(str_of(e, "token"), tok))
			continue;
		found++;
		assert_string_equal(str_of(e, "cloister"), "my-api-main");
		assert_string_equal(str_of(e, "project"), "my-api");
		assert_string_equal(str_of(e, "worktree"), "/home/user/repos/my-api");
	}
	assert_int_equal(found, 1);
	cJSON_Delete(o);

	/* The new token works on the request server. */
	{
		char hdr[128];

		snprintf(hdr, sizeof(hdr), "X-Cloister-Token: %s\r\n", tok);
		assert_int_equal(http(fx, fx->rurl, "POST", "/request", hdr,
		                      "{\"args\":[\"rm\",\"-rf\",\"/\"]}", &o),
		                 200);
		assert_string_equal(str_of(o, "status"), "denied");
		cJSON_Delete(o);
	}

	/* Revoke: 200, then 404. */
	{
		char path[128];

		snprintf(path, sizeof(path), "/tokens/%s", tok);
		assert_int_equal(http(fx, fx->turl, "DELETE", path, NULL, NULL, NULL), 401);
		assert_int_equal(http(fx, fx->turl, "DELETE", path, BEARER, NULL, &o), 200);
		assert_string_equal(str_of(o, "status"), "revoked");
		cJSON_Delete(o);
		assert_int_equal(http(fx, fx->turl, "DELETE", path, BEARER, NULL, &o), 404);
		assert_string_equal(str_of(o, "error"), "token not found");
		cJSON_Delete(o);
		assert_int_equal(tokens_count(fx->tokens), 1);
		assert_null(tokens_lookup(fx->tokens, tok));
	}

	/* Wrong methods and paths. */
	assert_int_equal(http(fx, fx->turl, "PUT", "/tokens", BEARER, "{}", NULL), 405);
	assert_int_equal(http(fx, fx->turl, "GET", "/tokens/x", BEARER, NULL, NULL), 405);
	assert_int_equal(http(fx, fx->turl, "GET", "/pending", BEARER, NULL, NULL), 404);
}

/* ---- request server ------------------------------------------------------------------------- */

static void test_request_auth_and_validation(void **state)
{
	struct fx *fx = *state;
	cJSON *o;

	/* Token: missing, wrong, revoked-looking. */
	assert_int_equal(
	        http(fx, fx->rurl, "POST", "/request", NULL, "{\"args\":[\"echo\",\"hello\"]}", &o),
	        401);
	assert_true(has(o, "error"));
	cJSON_Delete(o);
	assert_int_equal(http(fx, fx->rurl, "POST", "/request",
	                      "X-Cloister-Token: cloister-token-0123456789abcdeX\r\n",
	                      "{\"args\":[\"echo\",\"hello\"]}", NULL),
	                 401);
	assert_int_equal(http(fx, fx->rurl, "POST", "/request", "X-Cloister-Token: \r\n",
	                      "{\"args\":[\"echo\",\"hello\"]}", NULL),
	                 401);
	/* The API token is not a cloister token. */
	assert_int_equal(http(fx, fx->rurl, "POST", "/request",
	                      "X-Cloister-Token: " API_TOKEN "\r\n",
	                      "{\"args\":[\"echo\",\"hello\"]}", NULL),
	                 401);
	/* A browser (any Origin) is refused before anything else. */
	assert_int_equal(http(fx, fx->rurl, "POST", "/request",
	                      "Origin: http://evil.com\r\n" XTOKEN,
	                      "{\"args\":[\"echo\",\"hello\"]}", &o),
	                 403);
	assert_true(has(o, "error"));
	cJSON_Delete(o);

	/* Bad requests: 400 with an "error". */
	assert_int_equal(http(fx, fx->rurl, "POST", "/request", XTOKEN, "{\"args\":[\"echo\",", &o),
	                 400);
	assert_non_null(strstr(str_of(o, "error"), "invalid JSON"));
	cJSON_Delete(o);
	assert_int_equal(http(fx, fx->rurl, "POST", "/request", XTOKEN, "{\"args\":[]}", &o), 400);
	assert_true(has(o, "error"));
	cJSON_Delete(o);
	assert_int_equal(
	        http(fx, fx->rurl, "POST", "/request", XTOKEN, "{\"cmd\":\"echo hello\"}", &o),
	        400);
	assert_true(has(o, "error"));
	cJSON_Delete(o);
	assert_int_equal(http(fx, fx->rurl, "POST", "/request", XTOKEN, NULL, &o), 400);
	assert_true(has(o, "error"));
	cJSON_Delete(o);
	assert_int_equal(
	        http(fx, fx->rurl, "POST", "/request", XTOKEN, "{\"args\":\"echo hello\"}", NULL),
	        400);
	assert_int_equal(
	        http(fx, fx->rurl, "POST", "/request", XTOKEN, "{\"args\":[\"echo\",1]}", &o), 400);
	assert_true(has(o, "error"));
	cJSON_Delete(o);
	assert_int_equal(http(fx, fx->rurl, "POST", "/request", XTOKEN,
	                      "{\"args\":[\"echo\",\"a\\u0000b\"]}", &o),
	                 400);
	assert_non_null(strstr(str_of(o, "error"), "NUL"));
	cJSON_Delete(o);
	assert_int_equal(http(fx, fx->rurl, "POST", "/request", XTOKEN, "[\"echo\"]", NULL), 400);

	/* Wrong path and method: said only to a token holder. */
	assert_int_equal(http(fx, fx->rurl, "POST", "/requests", XTOKEN, "{}", NULL), 404);
	assert_int_equal(http(fx, fx->rurl, "GET", "/request", XTOKEN, NULL, NULL), 405);
	assert_int_equal(http(fx, fx->rurl, "POST", "/requests", NULL, "{}", NULL), 401);
	assert_int_equal(http(fx, fx->rurl, "GET", "/request", NULL, NULL, NULL), 401);
	assert_int_equal(http(fx, fx->rurl, "GET", "/", NULL, NULL, NULL), 401);
	assert_int_equal(fx->runs, 0);
	assert_int_equal(queue_count(fx->queue), 0);
}

static void test_request_body_bound(void **state)
{
	struct fx *fx = *state;
	size_t n = ONE_MIB + 100;
	_cleanup_free_ char *body = malloc(n + 1);
	_cleanup_free_ char *text = NULL;
	char *resp;
	int len;

	assert_non_null(body);
	memset(body, ' ', n);
	memcpy(body, "{\"args\":[\"echo\",\"hello\"]}", 25);
	body[n] = '\0';
	len = asprintf(&text,
	               "POST /request HTTP/1.1\r\nHost: 127.0.0.1\r\n" XTOKEN
	               "Content-Type: application/json\r\nContent-Length: %zu\r\n"
	               "Connection: close\r\n\r\n%s",
	               n, body);
	assert_true(len > 0);
	assert_int_equal(raw_request(fx, fx->rport, text, (size_t)len, &resp), 413);
	assert_non_null(strstr(raw_body(resp), "\"error\""));
	free(resp);
	assert_int_equal(fx->runs, 0);

	/* Just under the bound: parsed (trailing spaces are fine JSON). */
	free(text);
	n = ONE_MIB;
	body[n] = '\0';
	len = asprintf(&text,
	               "POST /request HTTP/1.1\r\nHost: 127.0.0.1\r\n" XTOKEN
	               "Content-Type: application/json\r\nContent-Length: %zu\r\n"
	               "Connection: close\r\n\r\n%s",
	               n, body);
	assert_true(len > 0);
	assert_int_equal(raw_request(fx, fx->rport, text, (size_t)len, &resp), 200);
	assert_non_null(strstr(raw_body(resp), "\"status\":\"auto_approved\""));
	free(resp);

	/* Headers over the connection's memory: refused before the handler (431 or 413). */
	{
		size_t hn = 80 * 1024;
		_cleanup_free_ char *big = malloc(hn + 256);
		int status;

		assert_non_null(big);
		len = snprintf(big, 256, "GET /pending HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ");
		memset(big + len, 'a', hn);
		memcpy(big + len + hn, "\r\nConnection: close\r\n\r\n", 24);
		status = raw_request(fx, fx->aport, big, (size_t)len + hn + 23, NULL);
		assert_true(status == 431 || status == 413);
	}
}

static void test_request_auto_and_policy_denied(void **state)
{
	struct fx *fx = *state;
	cJSON *o;

	assert_int_equal(http(fx, fx->rurl, "POST", "/request", XTOKEN,
	                      "{\"args\":[\"echo\",\"hello\"]}", &o),
	                 200);
	assert_string_equal(str_of(o, "status"), "auto_approved");
	assert_string_equal(str_of(o, "pattern"), "^echo hello$");
	assert_int_equal((int)num_of(o, "exit_code"), 3);
	assert_string_equal(str_of(o, "stdout"), "ran echo hello");
	assert_string_equal(str_of(o, "stderr"), "err");
	cJSON_Delete(o);
	assert_int_equal(fx->runs, 1);
	assert_string_equal(fx->run_argv, "echo hello");
	assert_string_equal(fx->run_workdir, WORKTREE); /* the token's worktree */
	assert_int_equal(fx->run_timeout_ms, 7000);     /* hostexec_config.command_timeout_ms */
	assert_int_equal(queue_count(fx->queue), 0);    /* never queued */

	/* args are authoritative: a "cmd" that matches an auto pattern changes nothing. */
	assert_int_equal(http(fx, fx->rurl, "POST", "/request", XTOKEN,
	                      "{\"cmd\":\"echo hello\",\"args\":[\"rm\",\"-rf\",\"/\"]}", &o),
	                 200);
	assert_string_equal(str_of(o, "status"), "denied");
	assert_string_equal(str_of(o, "reason"), "Command doesn't match allowlist");
	assert_false(has(o, "exit_code"));
	cJSON_Delete(o);
	assert_int_equal(fx->runs, 1);
	/* ... and a "cmd" that would be denied does not stop an allowed args. */
	assert_int_equal(http(fx, fx->rurl, "POST", "/request", XTOKEN,
	                      "{\"cmd\":\"rm -rf /\",\"args\":[\"echo\",\"hello\"]}", &o),
	                 200);
	assert_string_equal(str_of(o, "status"), "auto_approved");
	assert_string_equal(str_of(o, "stdout"), "ran echo hello");
	cJSON_Delete(o);
	assert_int_equal(fx->runs, 2);

	/* Quoting is part of the match: "echo 'hello'" is echo hello; "echo 'hello there'" not. */
	assert_int_equal(http(fx, fx->rurl, "POST", "/request", XTOKEN,
	                      "{\"args\":[\"echo\",\"hello there\"]}", &o),
	                 200);
	assert_string_equal(str_of(o, "status"), "denied");
	cJSON_Delete(o);
	assert_int_equal(http(fx, fx->rurl, "POST", "/request", XTOKEN,
	                      "{\"args\":[\"echo\",\"hello\\n\"]}", &o),
	                 200);
	assert_string_equal(str_of(o, "status"), "denied");
	cJSON_Delete(o);
	assert_int_equal(fx->runs, 2);
	assert_int_equal(queue_count(fx->queue), 0);

	/* The executor's other outcomes. */
	fx->run_mode = RUN_TIMEOUT;
	assert_int_equal(http(fx, fx->rurl, "POST", "/request", XTOKEN,
	                      "{\"args\":[\"echo\",\"hello\"]}", &o),
	                 200);
	assert_string_equal(str_of(o, "status"), "timeout");
	assert_true(has(o, "reason"));
	cJSON_Delete(o);
	fx->run_mode = RUN_ERROR;
	assert_int_equal(http(fx, fx->rurl, "POST", "/request", XTOKEN,
	                      "{\"args\":[\"echo\",\"hello\"]}", &o),
	                 200);
	assert_string_equal(str_of(o, "status"), "error");
	assert_string_equal(str_of(o, "reason"), "boom");
	cJSON_Delete(o);
	fx->run_mode = RUN_FAIL;
	assert_int_equal(http(fx, fx->rurl, "POST", "/request", XTOKEN,
	                      "{\"args\":[\"echo\",\"hello\"]}", &o),
	                 200);
	assert_string_equal(str_of(o, "status"), "error");
	assert_non_null(strstr(str_of(o, "reason"), "cannot run the command"));
	cJSON_Delete(o);

	/* Metrics counted the policy's verdicts. */
	assert_true(approvals_metrics(fx->ap)->n_series >= 2);
}

static void test_request_no_executor(void **state)
{
	struct fx *fx = *state;
	cJSON *o;

	assert_int_equal(http(fx, fx->rurl, "POST", "/request", XTOKEN,
	                      "{\"args\":[\"echo\",\"hello\"]}", &o),
	                 200);
	assert_string_equal(str_of(o, "status"), "error");
	assert_string_equal(str_of(o, "reason"), "command execution not configured");
	cJSON_Delete(o);
}

/* A manual request: POST /request on one thread, poll /pending for its id, then decide. */
struct manual {
	struct fx *fx;
	const char *body;
	const char *decide; /* "/approve/" or "/deny/"; NULL: wait for the timeout */
	const char *decide_body;
	int client_ms; /* the blocking client's own timeout (0: default) */
	struct req request;
	char id[QUEUE_ID_LEN + 1];
	char pending_cmd[256];
	int decide_status;
	char decide_resp[256];
};

static void manual_flow(void *p)
{
	struct manual *m = p;
	struct fx *fx = m->fx;
	pthread_t t;

	m->request = (struct req){
	        .url = fx->rurl,
	        .method = "POST",
	        .path = "/request",
	        .headers = XTOKEN,
	        .body = m->body,
	        .timeout_ms = m->client_ms,
	};
	if (pthread_create(&t, NULL, req_thread, &m->request))
		return;
	for (int i = 0; i < 500 && !m->id[0]; i++) {
		struct http_response resp = {0};

		if (http_client_request(fx->aurl, "GET", "/pending", BEARER, NULL, 0, CLIENT_MS,
		                        &resp) == 0) {
			cJSON *o = cJSON_Parse(resp.body);
			const cJSON *e = cJSON_GetArrayItem(
			        cJSON_GetObjectItemCaseSensitive(o, "requests"), 0);
			const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
			const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(e, "cmd");

			if (cJSON_IsString(id) && cJSON_IsString(cmd)) {
				snprintf(m->id, sizeof(m->id), "%s", id->valuestring);
				snprintf(m->pending_cmd, sizeof(m->pending_cmd), "%s",
				         cmd->valuestring);
			}
			cJSON_Delete(o);
			http_response_free(&resp);
		}
		if (!m->id[0])
			usleep(10000);
	}
	if (m->decide && m->id[0]) {
		char path[64];
		struct http_response resp = {0};
		const char *body = m->decide_body;

		snprintf(path, sizeof(path), "%s%s", m->decide, m->id);
		if (http_client_request(fx->aurl, "POST", path, BEARER, body,
		                        body ? strlen(body) : 0, CLIENT_MS, &resp) == 0) {
			m->decide_status = resp.status;
			snprintf(m->decide_resp, sizeof(m->decide_resp), "%s", resp.body);
			http_response_free(&resp);
		}
	}
	pthread_join(t, NULL);
}

static cJSON *manual_result(struct manual *m)
{
	cJSON *o;

	if (m->request.rc < 0)
		fail_msg("POST /request: %s", strerror(-m->request.rc));
	assert_int_equal(m->request.resp.status, 200);
	o = parse_json(m->request.resp.body);
	http_response_free(&m->request.resp);
	return o;
}

static void test_request_manual_approved(void **state)
{
	struct fx *fx = *state;
	struct manual m = {.fx = fx,
	                   .body = "{\"cmd\":\"ignored\",\"args\":[\"make\",\"a b\"]}",
	                   .decide = "/approve/"};
	const struct queue_item *it;
	cJSON *o;

	fx_run(fx, manual_flow, &m);
	assert_true(m.id[0]);
	assert_string_equal(m.pending_cmd, "make 'a b'"); /* canonical, from args */
	assert_int_equal(m.decide_status, 200);
	assert_non_null(strstr(m.decide_resp, "\"status\":\"approved\""));
	o = manual_result(&m);
	assert_string_equal(str_of(o, "status"), "approved");
	assert_false(has(o, "pattern"));
	assert_int_equal((int)num_of(o, "exit_code"), 3);
	assert_string_equal(str_of(o, "stdout"), "ran make a b");
	assert_string_equal(str_of(o, "stderr"), "err");
	cJSON_Delete(o);
	assert_int_equal(fx->runs, 1);
	assert_string_equal(fx->run_argv, "make a b");
	assert_string_equal(fx->run_workdir, WORKTREE);
	it = queue_lookup(fx->queue, m.id);
	assert_non_null(it);
	assert_int_equal(it->kind, QUEUE_KIND_HOSTEXEC);
	assert_int_equal(it->state, QUEUE_STATE_APPROVED);
	assert_string_equal(it->sandbox, "sb1");
	assert_string_equal(it->project, "proj");
	assert_string_equal(it->cwd, WORKTREE);
	assert_int_equal(queue_count(fx->queue), 0);
}

static void test_request_manual_denied(void **state)
{
	struct fx *fx = *state;
	struct manual m = {.fx = fx,
	                   .body = "{\"args\":[\"make\",\"install\"]}",
	                   .decide = "/deny/",
	                   .decide_body = "{\"reason\":\"Package not needed\"}"};
	cJSON *o;

	fx_run(fx, manual_flow, &m);
	assert_int_equal(m.decide_status, 200);
	o = manual_result(&m);
	assert_string_equal(str_of(o, "status"), "denied");
	assert_string_equal(str_of(o, "reason"), "Package not needed");
	assert_false(has(o, "exit_code"));
	cJSON_Delete(o);
	assert_int_equal(fx->runs, 0);

	/* Without a reason: the documented default. */
	memset(&m, 0, sizeof(m));
	m = (struct manual){.fx = fx, .body = "{\"args\":[\"make\"]}", .decide = "/deny/"};
	fx_run(fx, manual_flow, &m);
	o = manual_result(&m);
	assert_string_equal(str_of(o, "status"), "denied");
	assert_string_equal(str_of(o, "reason"), "Command denied by user");
	cJSON_Delete(o);
	assert_int_equal(fx->runs, 0);
}

static void test_request_manual_timeout(void **state)
{
	struct fx *fx = *state;
	struct manual m = {.fx = fx, .body = "{\"args\":[\"make\",\"slow\"]}"};
	uint64_t start = loop_now_ms();
	const struct queue_item *it;
	cJSON *o;

	fx_run(fx, manual_flow, &m);
	assert_true(loop_now_ms() - start >= 1000);
	assert_true(m.id[0]);
	o = manual_result(&m);
	assert_string_equal(str_of(o, "status"), "timeout");
	assert_string_equal(str_of(o, "reason"), "No approval within 1s");
	cJSON_Delete(o);
	assert_int_equal(fx->runs, 0);
	it = queue_lookup(fx->queue, m.id);
	assert_int_equal(it->state, QUEUE_STATE_TIMED_OUT);
	assert_string_equal(it->decided_by, "timeout");
	/* A decision after the timeout is harmless. */
	{
		char path[64];

		snprintf(path, sizeof(path), "/approve/%s", m.id);
		assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER, NULL, NULL), 409);
	}
	assert_int_equal(fx->runs, 0);
}

static bool queue_empty(struct fx *fx, void *arg)
{
	return queue_count(fx->queue) == 0;
}

static void test_request_client_gone_cancels(void **state)
{
	struct fx *fx = *state;
	/* The client gives up after 300 ms: its ask is cancelled, nothing runs. */
	struct manual m = {.fx = fx, .body = "{\"args\":[\"make\",\"gone\"]}", .client_ms = 300};
	const struct queue_item *it;

	fx_run(fx, manual_flow, &m);
	assert_int_equal(m.request.rc, -ETIMEDOUT);
	assert_true(m.id[0]);
	assert_true(run_until(fx, queue_empty, NULL, 5000));
	it = queue_lookup(fx->queue, m.id);
	assert_non_null(it);
	assert_int_equal(it->state, QUEUE_STATE_CANCELLED);
	assert_int_equal(fx->runs, 0);
}

static void test_request_fallback_when_nobody_answers(void **state)
{
	struct fx *fx = *state;
	cJSON *o;

	/* No approver attached: ask_fallback (deny) decides at once. */
	approvals_set_approvers(fx->ap, APPROVER_CLI, 0);
	assert_int_equal(
	        http(fx, fx->rurl, "POST", "/request", XTOKEN, "{\"args\":[\"make\"]}", &o), 200);
	assert_string_equal(str_of(o, "status"), "denied");
	cJSON_Delete(o);
	assert_int_equal(fx->runs, 0);
	assert_int_equal(queue_count(fx->queue), 0);
}

/* ---- SSE ------------------------------------------------------------------------------------ */

struct sse {
	int fd;
	char buf[SSE_BUF];
	size_t len;
	bool eof;
};

static int on_sse(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct sse *s = userdata;
	ssize_t n = read(fd, s->buf + s->len, sizeof(s->buf) - 1 - s->len);

	if (n > 0) {
		s->len += (size_t)n;
		s->buf[s->len] = '\0';
	} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
		s->eof = true;
		loop_del_fd(loop, fd);
	}
	return 0;
}

static void sse_open_path(struct fx *fx, struct sse *s, const char *path, const char *extra)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(fx->aport)};
	char req[512];
	int n;

	memset(s, 0, sizeof(*s));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s->fd >= 0);
	assert_int_equal(connect(s->fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	n = snprintf(req, sizeof(req),
	             "GET %s HTTP/1.1\r\nHost: localhost:%u\r\nAccept: text/event-stream\r\n"
	             "%s\r\n",
	             path, fx->aport, extra ? extra : "");
	assert_int_equal(send(s->fd, req, (size_t)n, MSG_NOSIGNAL), n);
	assert_int_equal(loop_add_fd(fx->loop, s->fd, EPOLLIN, on_sse, s), 0);
}

static void sse_open(struct fx *fx, struct sse *s, const char *extra)
{
	sse_open_path(fx, s, "/events", extra);
}

static void sse_close(struct fx *fx, struct sse *s)
{
	if (!s->eof)
		loop_del_fd(fx->loop, s->fd);
	close(s->fd);
}

struct wait_text {
	struct sse *s;
	const char *needle;
};

static bool sse_has(struct fx *fx, void *arg)
{
	struct wait_text *w = arg;

	return strstr(w->s->buf, w->needle) != NULL;
}

static bool wait_sse(struct fx *fx, struct sse *s, const char *needle)
{
	struct wait_text w = {s, needle};

	return run_until(fx, sse_has, &w, 5000);
}

static bool clients_are(struct fx *fx, void *arg)
{
	/* Counted by web and reported to the approvals service (the CLI is one more). */
	return web_event_clients(fx->web) == *(unsigned *)arg &&
	       queue_approvers(fx->queue) == *(unsigned *)arg + 1;
}

/* The JSON of the first "event: NAME" whose data mentions ID. */
static cJSON *sse_event(const struct sse *s, const char *name, const char *id, size_t *ret_pos)
{
	char head[64];
	const char *p = s->buf;

	snprintf(head, sizeof(head), "event: %s\ndata: ", name);
	while ((p = strstr(p, head))) {
		const char *data = p + strlen(head);
		const char *end = strchr(data, '\n');
		_cleanup_free_ char *line = NULL;
		cJSON *o;

		assert_non_null(end);
		assert_int_equal(end[1], '\n'); /* one data line, then the blank line */
		line = strndup(data, (size_t)(end - data));
		o = parse_json(line);
		if (!strcmp(str_of(o, "id"), id)) {
			*ret_pos = (size_t)(p - s->buf);
			return o;
		}
		cJSON_Delete(o);
		p = end;
	}
	fail_msg("no %s event for %s in:\n%s", name, id, s->buf);
	return NULL;
}

static void test_sse_events(void **state)
{
	struct fx *fx = *state;
	struct sse s1, s2;
	char id1[13], id2[13], path[64];
	size_t p_retry, p_add1, p_add2, p_rm1, p_rm2;
	unsigned want;
	cJSON *o;

	sse_open(fx, &s1, BEARER);
	assert_true(wait_sse(fx, &s1, "retry: "));
	assert_non_null(strstr(s1.buf, "HTTP/1.1 200"));
	assert_non_null(strcasestr(s1.buf, "\r\nContent-Type: text/event-stream"));
	assert_non_null(strcasestr(s1.buf, "\r\nCache-Control: no-cache"));
	want = 1;
	assert_true(run_until(fx, clients_are, &want, 5000));
	assert_int_equal(queue_approvers(fx->queue), 2); /* the dashboard is an approver */

	add_item(fx, QUEUE_KIND_HOSTEXEC, "make sse", id1);
	add_item(fx, QUEUE_KIND_EXEC, "make 'a b' 'it'\\''s'", id2);
	assert_true(wait_sse(fx, &s1, id2));
	snprintf(path, sizeof(path), "/approve/%s", id1);
	assert_int_equal(http(fx, fx->aurl, "POST", path, BEARER, NULL, NULL), 200);
	assert_int_equal(approvals_decide(fx->ap, id2,
	                                  &(struct approval_decision){.allow = false,
	                                                              .scope = QUEUE_SCOPE_ONCE,
	                                                              .by = "tty",
	                                                              .reason = "no"},
	                                  NULL),
	                 0);
	assert_true(wait_sse(fx, &s1, "\"status\":\"denied\""));

	p_retry = (size_t)(strstr(s1.buf, "retry: ") - s1.buf);
	o = sse_event(&s1, "request-added", id1, &p_add1);
	assert_string_equal(str_of(o, "cmd"), "make sse");
	assert_string_equal(str_of(o, "kind"), "hostexec");
	assert_string_equal(str_of(o, "cloister"), "sb1");
	assert_timestamp(str_of(o, "timestamp"));
	cJSON_Delete(o);
	o = sse_event(&s1, "request-added", id2, &p_add2);
	assert_string_equal(str_of(o, "exe"), "/usr/bin/make");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "args")), 3);
	cJSON_Delete(o);
	o = sse_event(&s1, "request-removed", id1, &p_rm1);
	assert_string_equal(str_of(o, "status"), "approved");
	assert_string_equal(str_of(o, "decided_by"), "cli");
	assert_string_equal(str_of(o, "cloister"), "sb1"); /* the dashboard filters on it */
	assert_string_equal(str_of(o, "project"), "proj");
	cJSON_Delete(o);
	o = sse_event(&s1, "request-removed", id2, &p_rm2);
	assert_string_equal(str_of(o, "status"), "denied");
	assert_string_equal(str_of(o, "reason"), "no");
	assert_string_equal(str_of(o, "decided_by"), "tty");
	cJSON_Delete(o);
	assert_true(p_retry < p_add1);
	assert_true(p_add1 < p_add2);
	assert_true(p_add2 < p_rm1);
	assert_true(p_rm1 < p_rm2);

	/* Heartbeats keep the stream alive. */
	assert_true(wait_sse(fx, &s1, "event: heartbeat\n"));

	/* A second dashboard; each counts as an approver while connected. */
	sse_open(fx, &s2, BEARER);
	assert_true(wait_sse(fx, &s2, "retry: "));
	want = 2;
	assert_true(run_until(fx, clients_are, &want, 5000));
	assert_int_equal(queue_approvers(fx->queue), 3);
	sse_close(fx, &s1);
	want = 1;
	assert_true(run_until(fx, clients_are, &want, 5000));
	/* An event reaches the one left. */
	add_item(fx, QUEUE_KIND_DOMAIN, "late.example.com", id1);
	assert_true(wait_sse(fx, &s2, id1));
	assert_null(strstr(s2.buf, id2)); /* it came after id2's events */
	sse_close(fx, &s2);
	want = 0;
	assert_true(run_until(fx, clients_are, &want, 5000));
	assert_int_equal(queue_approvers(fx->queue), 1);

	/* A foreign page cannot listen. */
	sse_open(fx, &s1, "Origin: http://evil.com\r\n" BEARER);
	assert_true(wait_sse(fx, &s1, "\r\n\r\n"));
	assert_non_null(strstr(s1.buf, "HTTP/1.1 403"));
	sse_close(fx, &s1);
}

/* ---- /metrics, /status, the kill switch ----------------------------------------------------- */

static void test_metrics_endpoint(void **state)
{
	struct fx *fx = *state;
	char id[13];
	char *resp;
	const char *body;
	static const char *const expected[] = {
	        "# TYPE cloister_pending_requests gauge\n",
	        "\ncloister_pending_requests{kind=\"exec\"} 1\n",
	        "\ncloister_pending_requests{kind=\"domain\"} 2\n",
	        "\ncloister_pending_requests{kind=\"hostexec\"} 0\n",
	        "\ncloister_pending_requests{kind=\"shim\"} 0\n",
	        "# TYPE cloister_decisions_total counter\n",
	        "\ncloister_decisions_total{kind=\"hostexec\",verdict=\"allow\",source=\"policy\"} "
	        "2\n",
	        "\ncloister_decisions_total{kind=\"hostexec\",verdict=\"deny\",source=\"policy\"} "
	        "1\n",
	        "# TYPE cloister_decision_latency_seconds histogram\n",
	        "\ncloister_decision_latency_seconds_bucket{le=\"+Inf\"} 0\n",
	        "\ncloister_decision_latency_seconds_count 0\n",
	        "# TYPE cloister_notifications_total counter\n",
	        "\ncloister_approvers 1\n",
	        "\ncloister_event_stream_clients 0\n",
	        "\ncloister_sandboxes 1\n",
	};

	assert_int_equal(http(fx, fx->rurl, "POST", "/request", XTOKEN,
	                      "{\"args\":[\"echo\",\"hello\"]}", NULL),
	                 200);
	assert_int_equal(http(fx, fx->rurl, "POST", "/request", XTOKEN,
	                      "{\"args\":[\"echo\",\"hello\"]}", NULL),
	                 200);
	assert_int_equal(
	        http(fx, fx->rurl, "POST", "/request", XTOKEN, "{\"args\":[\"rm\"]}", NULL), 200);
	add_item(fx, QUEUE_KIND_EXEC, "make m", id);
	add_item(fx, QUEUE_KIND_DOMAIN, "a.example.com", id);
	add_item(fx, QUEUE_KIND_DOMAIN, "b.example.com", id);

	assert_int_equal(raw_request(fx, fx->aport,
	                             "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n" BEARER
	                             "Connection: close\r\n\r\n",
	                             0, &resp),
	                 200);
	assert_non_null(strcasestr(resp, "\r\nContent-Type: text/plain; version=0.0.4"));
	body = raw_body(resp);
	for (size_t i = 0; i < ELEMENTSOF(expected); i++)
		if (!strstr(body, expected[i]))
			fail_msg("missing %s in:\n%s", expected[i], body);
	free(resp);
}

static void test_sandboxes_and_status(void **state)
{
	struct fx *fx = *state;
	const cJSON *arr, *sb;
	char id[13];
	cJSON *o;

	add_item(fx, QUEUE_KIND_EXEC, "make st", id);
	assert_int_equal(http(fx, fx->aurl, "GET", "/sandboxes", BEARER, NULL, &o), 200);
	arr = cJSON_GetObjectItemCaseSensitive(o, "sandboxes");
	assert_int_equal(cJSON_GetArraySize(arr), 1);
	sb = cJSON_GetArrayItem(arr, 0);
	assert_string_equal(str_of(sb, "name"), "fake");
	assert_string_equal(str_of(sb, "project"), "proj");
	assert_string_equal(str_of(sb, "state"), "running");
	assert_int_equal((int)num_of(sb, "pid"), 4242);
	assert_string_equal(str_of(sb, "started"), "2023-11-14T22:13:20Z");
	assert_int_equal((int)num_of(sb, "pending"), 0); /* the item is sb1's, not fake's */
	cJSON_Delete(o);

	assert_int_equal(http(fx, fx->aurl, "GET", "/status", BEARER, NULL, &o), 200);
	assert_string_equal(str_of(o, "status"), "ok");
	assert_int_equal((int)num_of(o, "pending"), 1);
	assert_int_equal((int)num_of(o, "approvers"), 1);
	assert_int_equal((int)num_of(o, "event_clients"), 0);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "sandboxes")), 1);
	cJSON_Delete(o);

	/* The kill switch: a state change like any other. */
	assert_int_equal(http(fx, fx->aurl, "POST", "/sandboxes/fake/kill", NULL, NULL, NULL), 401);
	assert_string_equal(fx->action, "");
	assert_int_equal(http(fx, fx->aurl, "POST", "/sandboxes/fake/pause", BEARER, NULL, &o),
	                 200);
	assert_string_equal(str_of(o, "status"), "paused");
	assert_string_equal(str_of(o, "name"), "fake");
	cJSON_Delete(o);
	assert_string_equal(fx->action, "pause");
	assert_int_equal(http(fx, fx->aurl, "POST", "/sandboxes/fake/resume", BEARER, NULL, &o),
	                 200);
	assert_string_equal(str_of(o, "status"), "running");
	cJSON_Delete(o);
	assert_string_equal(fx->action, "resume");
	assert_int_equal(http(fx, fx->aurl, "POST", "/sandboxes/fake/kill", BEARER, NULL, &o), 200);
	assert_string_equal(str_of(o, "status"), "killed");
	cJSON_Delete(o);
	assert_string_equal(fx->action, "kill");
	assert_string_equal(fx->action_name, "fake");

	fx->action[0] = '\0';
	assert_int_equal(http(fx, fx->aurl, "POST", "/sandboxes/other/kill", BEARER, NULL, &o),
	                 404);
	assert_true(has(o, "error"));
	cJSON_Delete(o);
	assert_int_equal(http(fx, fx->aurl, "POST", "/sandboxes/fake/explode", BEARER, NULL, NULL),
	                 404);
	assert_int_equal(http(fx, fx->aurl, "POST", "/sandboxes/fake", BEARER, NULL, NULL), 404);
	assert_int_equal(http(fx, fx->aurl, "POST", "/sandboxes//kill", BEARER, NULL, NULL), 404);
	assert_int_equal(http(fx, fx->aurl, "POST", "/sandboxes/fake/kill/x", BEARER, NULL, NULL),
	                 404);
	assert_string_equal(fx->action, "");
}

static void test_paths_and_methods(void **state)
{
	struct fx *fx = *state;
	char *resp;
	cJSON *o;

	assert_int_equal(http(fx, fx->aurl, "GET", "/nope", BEARER, NULL, &o), 404);
	assert_string_equal(str_of(o, "error"), "not found");
	cJSON_Delete(o);
	assert_int_equal(http(fx, fx->aurl, "GET", "/nope", NULL, NULL, NULL), 401);
	assert_int_equal(http(fx, fx->aurl, "POST", "/nope", BEARER, NULL, NULL), 404);
	assert_int_equal(http(fx, fx->aurl, "POST", "/pending", BEARER, NULL, NULL), 404);
	assert_int_equal(http(fx, fx->aurl, "PUT", "/pending", BEARER, NULL, &o), 405);
	assert_true(has(o, "error"));
	cJSON_Delete(o);
	assert_int_equal(http(fx, fx->aurl, "DELETE", "/approve/0123456789ab", BEARER, NULL, NULL),
	                 405);
	/* Without the token, another method is refused first. */
	assert_int_equal(http(fx, fx->aurl, "DELETE", "/approve/0123456789ab", NULL, NULL, NULL),
	                 401);

	/* JSON answers are not cached or sniffed. */
	assert_int_equal(raw_request(fx, fx->aport,
	                             "GET /pending HTTP/1.1\r\nHost: 127.0.0.1\r\n" BEARER
	                             "Connection: close\r\n\r\n",
	                             0, &resp),
	                 200);
	assert_non_null(strcasestr(resp, "\r\nContent-Type: application/json"));
	assert_non_null(strcasestr(resp, "\r\nCache-Control: no-store"));
	assert_non_null(strcasestr(resp, "\r\nX-Content-Type-Options: nosniff"));
	free(resp);

	/* The dashboard: HTML at /, with a strict CSP; assets under /static/. */
	assert_int_equal(
	        raw_request(fx, fx->aport,
	                    "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", 0,
	                    &resp),
	        200);
	assert_non_null(strcasestr(resp, "\r\nContent-Type: text/html"));
	assert_non_null(strcasestr(resp, "\r\nContent-Security-Policy: default-src 'self'"));
	assert_non_null(strcasestr(resp, "\r\nX-Frame-Options: DENY"));
	free(resp);
	assert_int_equal(raw_request(fx, fx->aport,
	                             "GET /static/app.js HTTP/1.1\r\nHost: localhost\r\n"
	                             "Connection: close\r\n\r\n",
	                             0, NULL),
	                 200);
	assert_int_equal(http(fx, fx->aurl, "GET", "/static/nope.js", BEARER, NULL, NULL), 404);
	assert_int_equal(http(fx, fx->aurl, "GET", "/static/../web.c", BEARER, NULL, NULL), 404);
	/* Without the token not even that: only the real page and files are public. */
	assert_int_equal(http(fx, fx->aurl, "GET", "/static/nope.js", NULL, NULL, NULL), 401);
}

/* ---- reading needs the token ---------------------------------------------------------------- */

/* Any local user could read root's argv stream from the approval API: every GET but the page
 * and its files needs the API token, as the CLI's Bearer header or the dashboard's cookie. */
static void test_every_read_needs_the_token(void **state)
{
	static const char *const paths[] = {"/pending", "/pending-domains", "/decisions",
	                                    "/running", "/status",          "/sandboxes",
	                                    "/metrics", "/?other=1"};
	static const char *const streams[] = {"/events", "/logs", "/logs?cloister=sb1"};
	static const char cookie[] = "Cookie: cloister_token=" API_TOKEN "\r\n";
	struct fx *fx = *state;
	char id[13], *resp;
	cJSON *o;

	add_item(fx, QUEUE_KIND_EXEC, "make secret-argument", id);
	for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
		char req[512];
		int st;

		snprintf(req, sizeof(req),
		         "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		         "Connection: close\r\n\r\n",
		         paths[i]);
		st = raw_request(fx, fx->aport, req, 0, &resp);
		/* "/" with other parameters is the page itself: public, and it holds nothing. */
		if (!strcmp(paths[i], "/?other=1")) {
			assert_int_equal(st, 200);
			free(resp);
			continue;
		}
		if (st != 401)
			fail_msg("GET %s without a token: %d", paths[i], st);
		assert_non_null(strcasestr(resp, "\r\nWWW-Authenticate: Bearer"));
		o = parse_json(raw_body(resp));
		assert_non_null(strstr(str_of(o, "error"), "API token"));
		cJSON_Delete(o);
		assert_null(strstr(resp, "secret-argument"));
		free(resp);
		if (http(fx, fx->aurl, "GET", paths[i], BEARER, NULL, NULL) != 200 ||
		    http(fx, fx->aurl, "GET", paths[i], cookie, NULL, NULL) != 200)
			fail_msg("GET %s with the token is not 200", paths[i]);
		/* HEAD is a read like GET. */
		assert_int_equal(http(fx, fx->aurl, "HEAD", paths[i], NULL, NULL, NULL), 401);
	}
	for (size_t i = 0; i < ELEMENTSOF(streams); i++) {
		static const char *const creds[] = {"", BEARER, cookie};
		static const char *const want[] = {"HTTP/1.1 401", "HTTP/1.1 200", "HTTP/1.1 200"};

		for (size_t k = 0; k < ELEMENTSOF(creds); k++) {
			struct sse sse;

			sse_open_path(fx, &sse, streams[i], creds[k]);
			assert_true(wait_sse(fx, &sse, "\r\n\r\n"));
			if (strncmp(sse.buf, want[k], strlen(want[k])))
				fail_msg("GET %s (%zu): %.80s", streams[i], k, sse.buf);
			sse_close(fx, &sse);
		}
	}
	/* The page and its files are public: they hold no sandbox's data. */
	assert_int_equal(http(fx, fx->aurl, "GET", "/", NULL, NULL, NULL), 200);
	assert_int_equal(http(fx, fx->aurl, "HEAD", "/", NULL, NULL, NULL), 200);
	assert_int_equal(http(fx, fx->aurl, "GET", "/static/app.js", NULL, NULL, NULL), 200);
	assert_int_equal(http(fx, fx->aurl, "GET", "/static/util.js", NULL, NULL, NULL), 200);
	assert_int_equal(http(fx, fx->aurl, "GET", "/static/style.css", NULL, NULL, NULL), 200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_host_rebinding, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_csrf, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_every_read_needs_the_token, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_pending_shapes, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_approve_deny, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_domain_decisions, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_token_api, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_request_auth_and_validation, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_request_body_bound, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_request_auto_and_policy_denied, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_request_no_executor, setup_no_executor,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_request_manual_approved, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_request_manual_denied, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_request_manual_timeout, setup_short_timeout,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_request_client_gone_cancels, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_request_fallback_when_nobody_answers, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_sse_events, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_metrics_endpoint, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_sandboxes_and_status, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_paths_and_methods, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
