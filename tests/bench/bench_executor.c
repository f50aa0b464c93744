/* bench_executor: the round trip of /bin/true through the executor client, against plain
 * fork+exec+wait.
 *
 *   native  fork + execve("/bin/true") + waitpid, stdio to /dev/null
 *   local   executor_new_local(): command.c (clone(CLONE_VM|CLONE_VFORK), pipes, pidfd, the
 *           loop), the response built as the executor builds it
 *   remote  executor_new_remote() to a `cloister-supervisor executor` process ($SUPERVISOR) on
 *           loopback: connect, JSON request, exec, JSON response, close
 * Blocks of each alternate; the median block gives the per-job figure and the ratio. */
#include "tests/bench/bench.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "protocol/message.h"
#include "supervisor/hostexec/executor.h"
#include "supervisor/hostexec/executor_client.h"
#include "base/loop.h"

#define JOBS   200
#define BLOCKS 5
#define SECRET "bench-executor-secret-0123456789"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Per-job microseconds of JOBS fork+exec+wait, or -1. */
static double native_block(void)
{
	char *argv[] = {"/bin/true", NULL};
	char *envp[] = {"PATH=/usr/bin:/bin", NULL};
	double t0 = now_us();

	for (int i = 0; i < JOBS; i++) {
		int status;
		pid_t pid = fork();

		if (pid < 0)
			return -1;
		if (pid == 0) {
			int null = open("/dev/null", O_RDWR | O_CLOEXEC);

			if (null >= 0) {
				dup2(null, 0);
				dup2(null, 1);
				dup2(null, 2);
			}
			execve(argv[0], argv, envp);
			_exit(127);
		}
		if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			return -1;
	}
	return (now_us() - t0) / JOBS;
}

struct chain {
	struct loop *loop;
	struct executor *ex;
	struct cl_executor_request req;
	int left;
	bool failed;
};

static void chain_next(struct chain *c);

static void chain_done(struct cl_executor_response *resp, void *userdata)
{
	struct chain *c = userdata;

	if (resp->status != CL_EXECUTOR_COMPLETED || resp->exit_code != 0) {
		if (!c->failed)
			printf("bench_executor: a job failed: %s\n",
			       resp->error ? resp->error : "non-zero exit");
		c->failed = true;
	}
	cl_executor_response_free(resp);
	chain_next(c);
}

static void chain_next(struct chain *c)
{
	if (c->left == 0 || c->failed) {
		loop_exit(c->loop, 0);
		return;
	}
	c->left--;
	if (executor_submit(c->ex, &c->req, chain_done, c, NULL) < 0) {
		c->failed = true;
		loop_exit(c->loop, 0);
	}
}

/* Per-job microseconds of JOBS jobs one after the other through ex, or -1. */
static double executor_block(struct loop *loop, struct executor *ex)
{
	struct chain c = {.loop = loop, .ex = ex, .left = JOBS};
	double t0;

	c.req.command = "/bin/true";
	c.req.timeout_ms = 10000;
	t0 = now_us();
	chain_next(&c);
	if (loop_run(loop) < 0 || c.failed)
		return -1;
	return (now_us() - t0) / JOBS;
}

/* Start `$SUPERVISOR executor`; its pid and port, or -1. */
static pid_t start_executor_process(const char *supervisor, unsigned *ret_port)
{
	char line[128] = "";
	int p[2];
	pid_t pid;
	FILE *f;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		dup2(p[1], STDOUT_FILENO);
		if (null >= 0)
			dup2(null, STDERR_FILENO);
		setenv("CLOISTER_EXECUTOR_SECRET", SECRET, 1);
		execl(supervisor, supervisor, "executor", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	f = fdopen(p[0], "r");
	if (!f || !fgets(line, sizeof(line), f) ||
	    sscanf(line, "CLOISTER_EXECUTOR_PORT=%u", ret_port) != 1) {
		if (f)
			fclose(f);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	fclose(f);
	return pid;
}

void bench_executor(void)
{
	const char *supervisor = getenv("SUPERVISOR");
	double nat[BLOCKS], loc[BLOCKS], rem[BLOCKS];
	struct executor_server *server = NULL;
	struct executor *local = NULL, *remote = NULL;
	struct cl_error err = {{0}};
	struct loop *loop = NULL;
	unsigned port = 0;
	pid_t ex_pid = -1;
	const char *where;
	char label[64];

	if (loop_new(&loop) < 0 || executor_new_local(loop, &local) < 0) {
		printf("bench_executor: failed: cannot set up a loop\n");
		goto out;
	}
	if (supervisor && supervisor[0]) {
		ex_pid = start_executor_process(supervisor, &port);
		if (ex_pid < 0) {
			printf("bench_executor: failed: cannot start %s executor\n", supervisor);
			goto out;
		}
		where = "process";
	} else {
		/* Without $SUPERVISOR (not run by make bench): a server on this loop. */
		struct executor_server_options opt = {.secret = SECRET};

		if (executor_server_new(loop, &opt, &err, &server) < 0) {
			printf("bench_executor: failed: %s\n", err.msg);
			goto out;
		}
		port = executor_server_port(server);
		where = "in-process server";
	}
	if (executor_new_remote(loop, "127.0.0.1", (uint16_t)port, SECRET, &err, &remote) < 0) {
		printf("bench_executor: failed: %s\n", err.msg);
		goto out;
	}

	/* Warm up each path once. */
	if (native_block() < 0 || executor_block(loop, local) < 0 ||
	    executor_block(loop, remote) < 0) {
		printf("bench_executor: failed: a warm-up block failed\n");
		goto out;
	}
	for (int b = 0; b < BLOCKS; b++) {
		nat[b] = native_block();
		loc[b] = executor_block(loop, local);
		rem[b] = executor_block(loop, remote);
		if (nat[b] < 0 || loc[b] < 0 || rem[b] < 0) {
			printf("bench_executor: failed: a block failed\n");
			goto out;
		}
	}
	qsort(nat, BLOCKS, sizeof(double), cmp_double);
	qsort(loc, BLOCKS, sizeof(double), cmp_double);
	qsort(rem, BLOCKS, sizeof(double), cmp_double);
	printf("bench_executor: /bin/true round trip, %d jobs x %d blocks, median block\n", JOBS,
	       BLOCKS);
	printf("bench_executor:   %-40s %8.1f us  1.00x\n", "fork+exec+wait (native)",
	       nat[BLOCKS / 2]);
	printf("bench_executor:   %-40s %8.1f us  %.2fx native\n", "local executor (command.c)",
	       loc[BLOCKS / 2], loc[BLOCKS / 2] / nat[BLOCKS / 2]);
	snprintf(label, sizeof(label), "remote executor (TCP, %s)", where);
	printf("bench_executor:   %-40s %8.1f us  %.2fx native, %.2fx local\n", label,
	       rem[BLOCKS / 2], rem[BLOCKS / 2] / nat[BLOCKS / 2],
	       rem[BLOCKS / 2] / loc[BLOCKS / 2]);
out:
	executor_free(remote);
	executor_free(local);
	executor_server_free(server);
	loop_free(loop);
	if (ex_pid > 0) {
		kill(ex_pid, SIGTERM);
		waitpid(ex_pid, NULL, 0);
	}
}
