/* executor_client.h with both implementations against real processes: the local one and the
 * remote one talking to an executor server (executor.h) on the same loop over loopback TCP.
 * The same request must give the same response through both; the remote one adds the secret
 * check, connection failures, and concurrency. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "protocol/message.h"
#include "supervisor/hostexec/capture.h"
#include "supervisor/hostexec/executor.h"
#include "supervisor/hostexec/executor_client.h"
#include "base/loop.h"

#define SECRET "0123456789abcdef-test-secret"

struct env {
	struct loop *loop;
	struct executor_server *server;
	struct executor *local;
	struct executor *remote;
	int pending;
	bool in_submit;
};

struct slot {
	struct env *env;
	struct cl_executor_response *resp;
	uint64_t done_ms;
};

static int setup(void **state)
{
	struct executor_server_options opt = {.secret = SECRET, .idle_timeout_ms = 2000};
	struct cl_error err = {{0}};
	struct env *env = calloc(1, sizeof(*env));

	assert_non_null(env);
	assert_int_equal(loop_new(&env->loop), 0);
	if (executor_server_new(env->loop, &opt, &err, &env->server) < 0)
		fail_msg("server: %s", err.msg);
	assert_int_equal(executor_new_local(env->loop, &env->local), 0);
	if (executor_new_remote(env->loop, "127.0.0.1", executor_server_port(env->server), SECRET,
	                        &err, &env->remote) < 0)
		fail_msg("remote: %s", err.msg);
	*state = env;
	return 0;
}

static int teardown(void **state)
{
	struct env *env = *state;

	executor_free(env->remote);
	executor_free(env->local);
	executor_server_free(env->server);
	loop_free(env->loop);
	free(env);
	/* Every command was reaped. */
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	return 0;
}

static void on_done(struct cl_executor_response *resp, void *userdata)
{
	struct slot *slot = userdata;

	assert_false(slot->env->in_submit);
	assert_null(slot->resp);
	slot->resp = resp;
	slot->done_ms = loop_now_ms();
	if (--slot->env->pending == 0)
		loop_exit(slot->env->loop, 0);
}

static int safety(struct loop *loop, void *userdata)
{
	fail_msg("no response in time");
	return -ETIME;
}

static void submit(struct env *env, struct executor *ex, const struct cl_executor_request *req,
                   struct slot *slot, struct executor_job **job)
{
	slot->env = env;
	slot->resp = NULL;
	env->in_submit = true;
	assert_int_equal(executor_submit(ex, req, on_done, slot, job), 0);
	env->in_submit = false;
	env->pending++;
}

static void run_loop(struct env *env)
{
	struct loop_timer *t;

	assert_int_equal(loop_add_timer(env->loop, loop_now_ms() + 20000, safety, NULL, &t), 0);
	assert_int_equal(loop_run(env->loop), 0);
	loop_cancel_timer(env->loop, t);
}

static void assert_same_response(const struct cl_executor_response *a,
                                 const struct cl_executor_response *b)
{
	assert_int_equal(a->status, b->status);
	if (a->status == CL_EXECUTOR_ERROR) {
		assert_string_equal(a->error, b->error);
		return;
	}
	assert_int_equal(a->exit_code, b->exit_code);
	assert_string_equal(a->stdout_text, b->stdout_text);
	assert_string_equal(a->stderr_text, b->stderr_text);
}

/* Run req through both; return the local response (the caller frees it). */
static struct cl_executor_response *run_both(struct env *env, struct cl_executor_request *req)
{
	struct slot l = {0}, r = {0};

	submit(env, env->local, req, &l, NULL);
	submit(env, env->remote, req, &r, NULL);
	run_loop(env);
	assert_non_null(l.resp);
	assert_non_null(r.resp);
	assert_same_response(l.resp, r.resp);
	cl_executor_response_free(r.resp);
	return l.resp;
}

static void test_local_and_remote_give_identical_responses(void **state)
{
	struct env *env = *state;
	static char *a_out[] = {"-c", "echo out; echo err >&2; exit 3"};
	static char *a_sig[] = {"-c", "echo before; kill -9 $$"};
	static char *a_bin[] = {"-c", "printf 'nul\\000 bad\\377 ok\\303\\251'"};
	static char *a_env[] = {"-c", "printf '%s|%s' \"$EXTRA\" \"$HOME\""};
	static char *a_big[] = {"-c", "yes abcdefghijklmnopqrstuvwxyz | head -c 2000000"};
	static char *a_time[] = {"-c", "echo partial; sleep 20"};
	struct cl_env_pair extra[] = {{"EXTRA", "x y"}, {"HOME", "/nowhere"}};
	struct {
		struct cl_executor_request req;
		enum cl_executor_status status;
		int exit_code;
		const char *out;
		const char *err_or_stderr;
	} cases[] = {
	        {{.command = "sh", .args = a_out, .argc = 2},
	         CL_EXECUTOR_COMPLETED,
	         3,
	         "out\n",
	         "err\n"},
	        {{.command = "sh", .args = a_sig, .argc = 2},
	         CL_EXECUTOR_COMPLETED,
	         137,
	         "before\n",
	         ""},
	        {{.command = "sh", .args = a_bin, .argc = 2},
	         CL_EXECUTOR_COMPLETED,
	         0,
	         "nul\xef\xbf\xbd bad\xef\xbf\xbd ok\xc3\xa9",
	         ""},
	        {{.command = "sh", .args = a_env, .argc = 2, .env = extra, .envc = 2},
	         CL_EXECUTOR_COMPLETED,
	         0,
	         "x y|/nowhere",
	         ""},
	        {{.command = "pwd", .workdir = "/usr/share"},
	         CL_EXECUTOR_COMPLETED,
	         0,
	         "/usr/share\n",
	         ""},
	        {{.command = "sh", .args = a_time, .argc = 2, .timeout_ms = 300},
	         CL_EXECUTOR_TIMEOUT,
	         -1,
	         "partial\n",
	         ""},
	        {{.command = "cloister-nope"},
	         CL_EXECUTOR_ERROR,
	         0,
	         NULL,
	         "exec: \"cloister-nope\": executable file not found in $PATH"},
	        {{.command = "true", .workdir = "/nonexistent"},
	         CL_EXECUTOR_ERROR,
	         0,
	         NULL,
	         "chdir /nonexistent: no such file or directory"},
	        {{.command = "sh", .args = a_big, .argc = 2}, CL_EXECUTOR_COMPLETED, 0, NULL, ""},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cl_executor_response *resp = run_both(env, &cases[i].req);

		assert_int_equal(resp->status, cases[i].status);
		if (resp->status == CL_EXECUTOR_ERROR) {
			assert_string_equal(resp->error, cases[i].err_or_stderr);
		} else {
			assert_int_equal(resp->exit_code, cases[i].exit_code);
			if (cases[i].out)
				assert_string_equal(resp->stdout_text, cases[i].out);
			assert_string_equal(resp->stderr_text, cases[i].err_or_stderr);
		}
		if (i == sizeof(cases) / sizeof(cases[0]) - 1) {
			assert_true(strlen(resp->stdout_text) <= CAPTURE_MAX_DEFAULT + 64);
			assert_non_null(strstr(resp->stdout_text, " bytes truncated ...]\n"));
		}
		cl_executor_response_free(resp);
	}
}

static void test_wrong_secret_is_refused_and_runs_nothing(void **state)
{
	struct env *env = *state;
	char marker[] = "/tmp/cloister-exec-marker-XXXXXX";
	char *args[] = {marker};
	struct cl_executor_request req = {.command = "touch", .args = args, .argc = 1};
	struct cl_error err = {{0}};
	struct executor *bad;
	struct slot s = {0};
	int fd = mkstemp(marker);

	assert_true(fd >= 0);
	close(fd);
	unlink(marker);
	assert_int_equal(executor_new_remote(env->loop, "127.0.0.1",
	                                     executor_server_port(env->server), "wrong-secret",
	                                     &err, &bad),
	                 0);
	submit(env, bad, &req, &s, NULL);
	run_loop(env);
	assert_int_equal(s.resp->status, CL_EXECUTOR_ERROR);
	assert_string_equal(s.resp->error, "invalid secret");
	assert_int_equal(access(marker, F_OK), -1);
	cl_executor_response_free(s.resp);
	executor_free(bad);
}

static void test_unreachable_executor_is_an_error_response(void **state)
{
	struct env *env = *state;
	struct cl_executor_request req = {.command = "true"};
	struct sockaddr_in addr = {.sin_family = AF_INET};
	socklen_t alen = sizeof(addr);
	struct cl_error err = {{0}};
	struct executor *gone;
	struct slot s = {0};
	int fd;

	/* A port that was free a moment ago: bind, learn it, close. */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&addr, &alen), 0);
	close(fd);
	assert_int_equal(executor_new_remote(env->loop, "127.0.0.1", ntohs(addr.sin_port), SECRET,
	                                     &err, &gone),
	                 0);
	submit(env, gone, &req, &s, NULL);
	run_loop(env);
	assert_int_equal(s.resp->status, CL_EXECUTOR_ERROR);
	assert_non_null(strstr(s.resp->error, "connect: Connection refused"));
	cl_executor_response_free(s.resp);
	executor_free(gone);
}

static void test_remote_jobs_run_concurrently(void **state)
{
	struct env *env = *state;
	static char *args[] = {"-c", "sleep 0.4; echo done"};
	struct cl_executor_request req = {.command = "sh", .args = args, .argc = 2};
	struct slot s[6];
	uint64_t t0 = loop_now_ms();

	memset(s, 0, sizeof(s));
	for (int i = 0; i < 6; i++)
		submit(env, env->remote, &req, &s[i], NULL);
	run_loop(env);
	for (int i = 0; i < 6; i++) {
		assert_int_equal(s[i].resp->status, CL_EXECUTOR_COMPLETED);
		assert_string_equal(s[i].resp->stdout_text, "done\n");
		cl_executor_response_free(s[i].resp);
	}
	/* Six 0.4 s jobs one after another would take 2.4 s. */
	assert_true(loop_now_ms() - t0 < 2000);
}

static int stop_soon(struct loop *loop, void *userdata)
{
	loop_exit(loop, 0);
	return 0;
}

static void test_cancelled_jobs_never_call_back(void **state)
{
	struct env *env = *state;
	static char *args[] = {"-c", "sleep 30"};
	struct cl_executor_request req = {
	        .command = "sh", .args = args, .argc = 2, .timeout_ms = 600};
	struct executor_job *lj, *rj;
	struct slot l = {0}, r = {0}, after = {0};
	struct cl_executor_request t = {.command = "true"};

	submit(env, env->local, &req, &l, &lj);
	submit(env, env->remote, &req, &r, &rj);
	executor_job_cancel(lj);
	executor_job_cancel(rj);
	env->pending -= 2;
	/* Let the cancelled local command die and the server's timeout end the remote one. */
	assert_int_equal(loop_add_timer(env->loop, loop_now_ms() + 1200, stop_soon, NULL, NULL), 0);
	assert_int_equal(loop_run(env->loop), 0);
	assert_null(l.resp);
	assert_null(r.resp);
	/* The executor still works afterwards. */
	submit(env, env->local, &t, &after, NULL);
	run_loop(env);
	assert_int_equal(after.resp->exit_code, 0);
	cl_executor_response_free(after.resp);
}

static void test_secret_comparison(void **state)
{
	assert_true(executor_secret_equal("abc", 3, "abc", 3));
	assert_false(executor_secret_equal("abd", 3, "abc", 3));
	assert_false(executor_secret_equal("ab", 2, "abc", 3));
	assert_false(executor_secret_equal("abcabc", 6, "abc", 3));
	assert_false(executor_secret_equal("", 0, "abc", 3));
	assert_false(executor_secret_equal("", 0, "", 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_secret_comparison),
	        cmocka_unit_test_setup_teardown(test_local_and_remote_give_identical_responses,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_wrong_secret_is_refused_and_runs_nothing,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_unreachable_executor_is_an_error_response,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_remote_jobs_run_concurrently, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_cancelled_jobs_never_call_back, setup,
	                                        teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
