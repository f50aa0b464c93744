/* command.c with real processes: exit statuses, exec failures with Go's messages, workdir,
 * a workdir kept beneath a root, environment merge and the PATH it searches, timeout with partial
 * output, bounded capture, streaming order, cancel (SIGTERM, then SIGKILL), backpressure, no fd
 * leaked into the child, default signal state in the child, background jobs killed at exit on
 * request, and no zombie left behind. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "supervisor/hostexec/capture.h"
#include "supervisor/hostexec/command.h"
#include "base/loop.h"

static char *base_env[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C", "KEEP=kept", "OVER=old",
                           NULL};

struct run {
	struct loop *loop;
	struct command *cmd;
	struct command_result res;
	bool done;
	char *streamed[3];
	size_t streamed_len[3];
	char order[64]; /* streams in the order chunks arrived: 'o' / 'e' */
	size_t chunks;
	bool pause_once;
	uint64_t pause_ms; /* 0: 200 */
	uint64_t started_ms, ended_ms;
};

static void on_done(struct command *cmd, struct command_result *res, void *userdata)
{
	struct run *run = userdata;

	assert_false(run->done);
	run->done = true;
	run->res = *res;
	/* Take the texts: the command frees what is left. */
	res->stdout_text = NULL;
	res->stderr_text = NULL;
	run->ended_ms = loop_now_ms();
	loop_exit(run->loop, 0);
}

static int resume(struct loop *loop, void *userdata)
{
	struct run *run = userdata;

	command_pause_output(run->cmd, false);
	return 0;
}

static void on_output(struct command *cmd, enum command_stream s, const void *data, size_t len,
                      void *userdata)
{
	struct run *run = userdata;

	assert_true(len > 0);
	run->streamed[s] = realloc(run->streamed[s], run->streamed_len[s] + len + 1);
	memcpy(run->streamed[s] + run->streamed_len[s], data, len);
	run->streamed_len[s] += len;
	run->streamed[s][run->streamed_len[s]] = '\0';
	if (run->chunks < sizeof(run->order) - 1)
		run->order[run->chunks] = s == COMMAND_STDOUT ? 'o' : 'e';
	run->chunks++;
	if (run->pause_once) {
		run->pause_once = false;
		command_pause_output(cmd, true);
		assert_int_equal(
		        loop_add_timer(run->loop,
		                       loop_now_ms() + (run->pause_ms ? run->pause_ms : 200),
		                       resume, run, NULL),
		        0);
	}
}

static int safety_timeout(struct loop *loop, void *userdata)
{
	fail_msg("the command did not finish in time");
	return -ETIME;
}

static void no_child_left(void)
{
	/* Every process this program started has been reaped. */
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

/* Start spec (its callbacks and userdata are filled in) and run the loop until it is done. */
static void run_spec(struct run *run, struct command_spec *spec)
{
	struct cl_error err = {{0}};
	struct loop_timer *safety;

	memset(run, 0, sizeof(*run));
	assert_int_equal(loop_new(&run->loop), 0);
	spec->on_done = on_done;
	spec->userdata = run;
	if (!spec->base_env)
		spec->base_env = base_env;
	run->started_ms = loop_now_ms();
	if (command_start(run->loop, spec, &err, &run->cmd) < 0)
		fail_msg("command_start: %s", err.msg);
	assert_int_equal(
	        loop_add_timer(run->loop, loop_now_ms() + 20000, safety_timeout, NULL, &safety), 0);
	assert_int_equal(loop_run(run->loop), 0);
	assert_true(run->done);
	loop_cancel_timer(run->loop, safety);
	command_free(run->cmd);
	loop_free(run->loop);
	no_child_left();
}

static void run_free(struct run *run)
{
	free(run->res.stdout_text);
	free(run->res.stderr_text);
	for (int i = 0; i < 3; i++)
		free(run->streamed[i]);
}

static void run_argv(struct run *run, char *const *argv)
{
	struct command_spec spec = {.file = argv[0], .argv = argv};

	run_spec(run, &spec);
}

static void test_exit_codes_including_death_by_signal(void **state)
{
	static const struct {
		const char *script;
		int code;
	} cases[] = {
	        {"exit 0", 0},       {"exit 1", 1},          {"exit 255", 255},
	        {"kill -9 $$", 137}, {"kill -TERM $$", 143},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[] = {"sh", "-c", (char *)cases[i].script, NULL};
		struct run run;

		run_argv(&run, argv);
		assert_int_equal(run.res.status, COMMAND_COMPLETED);
		assert_int_equal(run.res.exit_code, cases[i].code);
		assert_string_equal(run.res.stdout_text, "");
		/* Done when the process and its pipes are, not after the drain wait. */
		assert_true(run.ended_ms - run.started_ms < COMMAND_DRAIN_MS);
		run_free(&run);
	}
}

static void test_output_of_both_streams_is_captured(void **state)
{
	char *argv[] = {"sh", "-c", "echo out; echo err >&2; printf 'a\\000b\\377'", NULL};
	struct run run;

	run_argv(&run, argv);
	assert_int_equal(run.res.status, COMMAND_COMPLETED);
	assert_string_equal(run.res.stdout_text, "out\na\xef\xbf\xbd"
	                                         "b\xef\xbf\xbd");
	assert_string_equal(run.res.stderr_text, "err\n");
	assert_int_equal(run.res.stdout_bytes, 8);
	assert_int_equal(run.res.stderr_bytes, 4);
	run_free(&run);
}

static void expect_start_error(struct command_spec *spec, int code, const char *msg)
{
	struct cl_error err = {{0}};
	struct command *cmd = NULL;
	struct loop *loop;

	assert_int_equal(loop_new(&loop), 0);
	spec->on_done = on_done;
	if (!spec->base_env)
		spec->base_env = base_env;
	assert_int_equal(command_start(loop, spec, &err, &cmd), code);
	assert_null(cmd);
	assert_string_equal(err.msg, msg);
	loop_free(loop);
	no_child_left();
}

static void test_missing_executable_reports_go_style_error(void **state)
{
	struct command_spec spec = {.file = "cloister-no-such-program"};

	expect_start_error(&spec, -ENOENT,
	                   "exec: \"cloister-no-such-program\": executable file not found "
	                   "in $PATH");
	spec.file = "/nonexistent/prog";
	expect_start_error(&spec, -ENOENT,
	                   "fork/exec /nonexistent/prog: no such file or directory");
	spec.file = "/etc/passwd";
	expect_start_error(&spec, -EACCES, "fork/exec /etc/passwd: permission denied");
}

static void test_path_comes_from_the_merged_environment(void **state)
{
	char *no_path_env[] = {"PATH=/nonexistent", NULL};
	struct cl_env_pair fix = {"PATH", "/nonexistent:/usr/bin:/bin"};
	char *argv[] = {"true", NULL};
	struct command_spec spec = {.file = "true", .argv = argv, .base_env = no_path_env};
	struct run run;

	expect_start_error(&spec, -ENOENT, "exec: \"true\": executable file not found in $PATH");
	spec.env = &fix;
	spec.envc = 1;
	run_spec(&run, &spec);
	assert_int_equal(run.res.status, COMMAND_COMPLETED);
	assert_int_equal(run.res.exit_code, 0);
	run_free(&run);
}

static void test_relative_path_entries_are_not_searched(void **state)
{
	char dir[] = "/tmp/cloister-cmd-XXXXXX", bin[64], prog[96];
	char *env[] = {"PATH=bin::.", NULL};
	struct command_spec spec = {.file = "myprog", .base_env = env, .workdir = dir};
	int fd;

	assert_non_null(mkdtemp(dir));
	snprintf(bin, sizeof(bin), "%s/bin", dir);
	assert_int_equal(mkdir(bin, 0755), 0);
	snprintf(prog, sizeof(prog), "%s/myprog", bin);
	fd = open(prog, O_WRONLY | O_CREAT | O_CLOEXEC, 0755);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "#!/bin/sh\nexit 0\n", 17), 17);
	close(fd);
	expect_start_error(&spec, -ENOENT, "exec: \"myprog\": executable file not found in $PATH");
	/* The same file by an absolute entry is found. */
	{
		char path[128];
		struct cl_env_pair p = {"PATH", path};
		struct run run;

		snprintf(path, sizeof(path), "/nonexistent:%s", bin);
		spec.env = &p;
		spec.envc = 1;
		run_spec(&run, &spec);
		assert_int_equal(run.res.exit_code, 0);
		run_free(&run);
	}
	unlink(prog);
	rmdir(bin);
	rmdir(dir);
}

static void test_file_found_but_not_executable_is_permission_denied(void **state)
{
	char dir[] = "/tmp/cloister-cmd-XXXXXX", prog[64], path[96];
	char *env[] = {path, NULL};
	struct command_spec spec = {.file = "noexec", .base_env = env};
	int fd;

	assert_non_null(mkdtemp(dir));
	snprintf(prog, sizeof(prog), "%s/noexec", dir);
	snprintf(path, sizeof(path), "PATH=%s", dir);
	fd = open(prog, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	/* root bypasses permission bits but not a missing execute bit on a regular file. */
	expect_start_error(&spec, -EACCES, "exec: \"noexec\": permission denied");
	unlink(prog);
	rmdir(dir);
}

static void test_workdir_is_used_and_a_missing_one_is_an_error(void **state)
{
	char *argv[] = {"pwd", NULL};
	struct command_spec spec = {.file = "pwd", .argv = argv, .workdir = "/usr/share"};
	struct run run;

	run_spec(&run, &spec);
	assert_string_equal(run.res.stdout_text, "/usr/share\n");
	run_free(&run);
	spec.workdir = "/nonexistent/dir";
	expect_start_error(&spec, -ENOENT, "chdir /nonexistent/dir: no such file or directory");
}

static void test_workdir_root_keeps_the_cwd_beneath_it(void **state)
{
	char dir[] = "/tmp/cloister-cmd-XXXXXX", sub[64], link[64], want[80], msg[128];
	char *argv[] = {"pwd", NULL};
	struct command_spec spec = {.file = "pwd", .argv = argv, .workdir_root = dir};
	struct run run;

	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	snprintf(link, sizeof(link), "%s/out", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(symlink("/usr", link), 0);

	spec.workdir = "sub";
	run_spec(&run, &spec);
	snprintf(want, sizeof(want), "%s\n", sub);
	assert_string_equal(run.res.stdout_text, want);
	run_free(&run);
	spec.workdir = NULL; /* the root itself */
	run_spec(&run, &spec);
	snprintf(want, sizeof(want), "%s\n", dir);
	assert_string_equal(run.res.stdout_text, want);
	run_free(&run);

	/* A symlink or ".." out of the root is refused, not followed. */
	spec.workdir = "out";
	snprintf(msg, sizeof(msg), "chdir %s/out: invalid cross-device link", dir);
	expect_start_error(&spec, -EXDEV, msg);
	spec.workdir = "sub/../..";
	snprintf(msg, sizeof(msg), "chdir %s/sub/../..: invalid cross-device link", dir);
	expect_start_error(&spec, -EXDEV, msg);
	spec.workdir_root = "relative";
	expect_start_error(&spec, -EINVAL, "command: workdir_root must be absolute");

	unlink(link);
	rmdir(sub);
	rmdir(dir);
}

static void test_environment_overrides_replace_and_add(void **state)
{
	struct cl_env_pair over[] = {{"OVER", "new"}, {"ADDED", "a=b"}};
	char *argv[] = {"env", NULL};
	struct command_spec spec = {.file = "env", .argv = argv, .env = over, .envc = 2};
	struct run run;

	run_spec(&run, &spec);
	assert_string_equal(run.res.stdout_text, "PATH=/usr/local/bin:/usr/bin:/bin\nLC_ALL=C\n"
	                                         "KEEP=kept\nOVER=new\nADDED=a=b\n");
	run_free(&run);
}

static void test_env_merge_drops_duplicates_of_overridden_names(void **state)
{
	char *base[] = {"A=1", "B=2", "A=3", "AB=4", NULL};
	struct cl_env_pair over[] = {{"A", "9"}};
	char **env;

	assert_int_equal(command_env_merge(base, over, 1, &env), 0);
	assert_string_equal(env[0], "B=2");
	assert_string_equal(env[1], "AB=4");
	assert_string_equal(env[2], "A=9");
	assert_null(env[3]);
	command_env_free(env);
}

static void test_timeout_kills_the_group_and_keeps_partial_output(void **state)
{
	/* The grandchild sleep is in the same group and holds the pipes: it must die too. */
	char *argv[] = {"sh", "-c", "echo partial; echo oops >&2; sleep 30; echo never", NULL};
	struct command_spec spec = {.file = "sh", .argv = argv, .timeout_ms = 300};
	struct run run;

	run_spec(&run, &spec);
	assert_int_equal(run.res.status, COMMAND_TIMEOUT);
	assert_int_equal(run.res.exit_code, -1);
	assert_string_equal(run.res.stdout_text, "partial\n");
	assert_string_equal(run.res.stderr_text, "oops\n");
	assert_true(run.ended_ms - run.started_ms >= 300);
	assert_true(run.ended_ms - run.started_ms < 3000);
	run_free(&run);
}

static void test_large_output_is_capped_with_marker(void **state)
{
	char *argv[] = {"sh", "-c", "yes 0123456789abcdef | head -c 3000000; echo END", NULL};
	struct run run;

	run_argv(&run, argv);
	assert_int_equal(run.res.exit_code, 0);
	assert_int_equal(run.res.stdout_bytes, 3000004);
	assert_true(strlen(run.res.stdout_text) <= CAPTURE_MAX_DEFAULT + 64);
	assert_non_null(strstr(run.res.stdout_text, "\n[... 2800004 bytes truncated ...]\n"));
	assert_int_equal(strncmp(run.res.stdout_text, "0123456789abcdef\n0123", 21), 0);
	assert_string_equal(run.res.stdout_text + strlen(run.res.stdout_text) - 4, "END\n");
	run_free(&run);
}

static void test_custom_capture_limits(void **state)
{
	char *argv[] = {"sh", "-c", "printf 0123456789", NULL};
	struct command_spec spec = {
	        .file = "sh", .argv = argv, .capture_max = 6, .capture_tail = 2};
	struct run run;

	run_spec(&run, &spec);
	assert_string_equal(run.res.stdout_text, "0123\n[... 4 bytes truncated ...]\n89");
	run_free(&run);
}

static void test_streaming_keeps_order_within_each_stream(void **state)
{
	char *argv[] = {"sh", "-c",
	                "for i in 1 2 3 4 5 6 7 8; do echo out$i; echo err$i >&2; sleep 0.01; done",
	                NULL};
	struct command_spec spec = {.file = "sh", .argv = argv, .on_output = on_output};
	struct run run;

	run_spec(&run, &spec);
	assert_int_equal(run.res.status, COMMAND_COMPLETED);
	assert_null(run.res.stdout_text);
	assert_null(run.res.stderr_text);
	assert_string_equal(run.streamed[COMMAND_STDOUT],
	                    "out1\nout2\nout3\nout4\nout5\nout6\nout7\nout8\n");
	assert_string_equal(run.streamed[COMMAND_STDERR],
	                    "err1\nerr2\nerr3\nerr4\nerr5\nerr6\nerr7\nerr8\n");
	/* With a pause between lines, chunks arrive as they are written: both streams alternate. */
	assert_true(run.chunks >= 8);
	assert_non_null(strstr(run.order, "oe"));
	assert_int_equal(run.res.stdout_bytes, 40);
	run_free(&run);
}

/* Like run_spec, but the consumer pauses the output on the first chunk for pause_ms. */
static void run_paused(struct run *run, struct command_spec *spec, uint64_t pause_ms)
{
	struct cl_error err = {{0}};

	memset(run, 0, sizeof(*run));
	assert_int_equal(loop_new(&run->loop), 0);
	spec->on_output = on_output;
	spec->on_done = on_done;
	spec->userdata = run;
	spec->base_env = base_env;
	run->pause_once = true;
	run->pause_ms = pause_ms;
	run->started_ms = loop_now_ms();
	if (command_start(run->loop, spec, &err, &run->cmd) < 0)
		fail_msg("command_start: %s", err.msg);
	assert_int_equal(loop_run(run->loop), 0);
	command_free(run->cmd);
	loop_free(run->loop);
	no_child_left();
}

static void test_paused_output_loses_nothing(void **state)
{
	char *argv[] = {"sh", "-c", "head -c 1000000 /dev/zero; echo tail >&2", NULL};
	struct command_spec spec = {.file = "sh", .argv = argv};
	struct run run;

	run_paused(&run, &spec, 200);
	assert_int_equal(run.res.exit_code, 0);
	assert_int_equal(run.streamed_len[COMMAND_STDOUT], 1000000);
	assert_string_equal(run.streamed[COMMAND_STDERR], "tail\n");
	assert_true(run.ended_ms - run.started_ms >= 200);
	run_free(&run);
}

static void test_output_paused_past_the_exit_is_not_cut_by_the_drain_wait(void **state)
{
	/* The command exits while its last line waits in the pipe, paused longer than
	 * COMMAND_DRAIN_MS: the line is the command's, not a straggler's. */
	char *argv[] = {"sh", "-c", "echo first; sleep 0.1; echo last", NULL};
	struct command_spec spec = {.file = "sh", .argv = argv};
	struct run run;

	run_paused(&run, &spec, COMMAND_DRAIN_MS + 400);
	assert_int_equal(run.res.exit_code, 0);
	assert_string_equal(run.streamed[COMMAND_STDOUT], "first\nlast\n");
	assert_true(run.ended_ms - run.started_ms >= COMMAND_DRAIN_MS + 400);
	run_free(&run);
}

static int cancel_soon(struct loop *loop, void *userdata)
{
	struct run *run = userdata;

	command_cancel(run->cmd);
	command_cancel(run->cmd); /* twice is harmless */
	return 0;
}

static void run_and_cancel(struct run *run, char *const *argv, uint64_t grace_ms)
{
	struct command_spec spec = {.file = argv[0], .argv = argv, .kill_grace_ms = grace_ms};
	struct cl_error err = {{0}};

	memset(run, 0, sizeof(*run));
	assert_int_equal(loop_new(&run->loop), 0);
	spec.on_done = on_done;
	spec.userdata = run;
	spec.base_env = base_env;
	run->started_ms = loop_now_ms();
	if (command_start(run->loop, &spec, &err, &run->cmd) < 0)
		fail_msg("command_start: %s", err.msg);
	assert_int_equal(loop_add_timer(run->loop, loop_now_ms() + 100, cancel_soon, run, NULL), 0);
	assert_int_equal(loop_run(run->loop), 0);
	command_free(run->cmd);
	loop_free(run->loop);
	no_child_left();
}

static void test_cancel_sends_sigterm_then_sigkill(void **state)
{
	char *polite[] = {"sleep", "30", NULL};
	char *stubborn[] = {"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done",
	                    NULL};
	struct run run;

	run_and_cancel(&run, polite, 5000);
	assert_int_equal(run.res.status, COMMAND_CANCELLED);
	assert_int_equal(run.res.exit_code, 143);
	assert_true(run.ended_ms - run.started_ms < 2000);
	run_free(&run);

	run_and_cancel(&run, stubborn, 300);
	assert_int_equal(run.res.status, COMMAND_CANCELLED);
	assert_int_equal(run.res.exit_code, 137);
	assert_string_equal(run.res.stdout_text, "ready\n");
	assert_true(run.ended_ms - run.started_ms >= 400);
	run_free(&run);
}

static void test_no_fd_leaks_and_stdin_is_dev_null(void **state)
{
	/* An fd without O_CLOEXEC, as a careless parent of the supervisor would leave. */
	int leaked = dup(STDERR_FILENO);
	char *argv[] = {"sh", "-c", "ls /proc/self/fd; readlink /proc/self/fd/0", NULL};
	struct run run;

	assert_true(leaked > 2);
	run_argv(&run, argv);
	/* ls's own directory fd is 3 */
	assert_string_equal(run.res.stdout_text, "0\n1\n2\n3\n/dev/null\n");
	close(leaked);
	run_free(&run);
}

static void test_child_gets_default_signals_and_empty_mask(void **state)
{
	char *argv[] = {"grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status", NULL};
	sigset_t block, old;
	struct run run;

	/* The kernel's struct sigaction: glibc will not touch signal 32, its own. */
	struct {
		void *handler;
		unsigned long flags;
		void *restorer;
		uint64_t mask;
	} ign = {.handler = SIG_IGN}, saved32;

	/* The supervisor blocks what its signalfd reads and ignores SIGPIPE; whoever started it
	 * may have left even glibc's internal signal 32 ignored (seen under make check). */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &old);
	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(syscall(SYS_rt_sigaction, 32, &ign, &saved32, sizeof(ign.mask)), 0);
	run_argv(&run, argv);
	assert_int_equal(syscall(SYS_rt_sigaction, 32, &saved32, NULL, sizeof(ign.mask)), 0);
	signal(SIGPIPE, SIG_DFL);
	sigprocmask(SIG_SETMASK, &old, NULL);
	assert_string_equal(run.res.stdout_text, "SigBlk:\t0000000000000000\n"
	                                         "SigIgn:\t0000000000000000\n");
	run_free(&run);
}

static void test_background_holder_of_the_pipe_does_not_hang(void **state)
{
	/* sh exits at once; the sleep it left holds stdout. The result comes after the drain. */
	char *argv[] = {"sh", "-c", "sleep 30 & echo $!", NULL};
	struct run run;
	pid_t bg;

	run_argv(&run, argv);
	assert_int_equal(run.res.status, COMMAND_COMPLETED);
	assert_int_equal(run.res.exit_code, 0);
	bg = (pid_t)atoi(run.res.stdout_text);
	assert_true(bg > 0);
	assert_true(run.ended_ms - run.started_ms >= COMMAND_DRAIN_MS);
	assert_true(run.ended_ms - run.started_ms < COMMAND_DRAIN_MS + 1500);
	kill(bg, SIGKILL); /* not our child: init reaps it */
	run_free(&run);
}

static bool process_is_dead(pid_t pid)
{
	char path[64], line[256];
	bool dead = true;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return true;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "State:", 6) == 0)
			dead = strchr(line, 'Z') !=
			       NULL; /* orphaned: a zombie until init reaps it */
	fclose(f);
	return dead;
}

static void test_kill_group_at_exit_ends_background_jobs(void **state)
{
	char *argv[] = {"sh", "-c", "sleep 30 & echo $!", NULL};
	struct command_spec spec = {.file = "sh", .argv = argv, .kill_group_at_exit = true};
	struct run run;
	pid_t bg;

	run_spec(&run, &spec);
	assert_int_equal(run.res.exit_code, 0);
	bg = (pid_t)atoi(run.res.stdout_text);
	assert_true(bg > 0);
	/* The sleep died with its leader, so its end of the pipe closed: no drain wait. */
	assert_true(run.ended_ms - run.started_ms < COMMAND_DRAIN_MS);
	/* Its pipe closes a moment before the kernel marks it a zombie. */
	for (int i = 0; i < 100 && !process_is_dead(bg); i++)
		usleep(10000);
	assert_true(process_is_dead(bg));
	run_free(&run);
}

static void test_free_of_a_running_command_kills_and_reaps(void **state)
{
	char *argv[] = {"sleep", "30", NULL};
	struct command_spec spec = {
	        .file = "sleep", .argv = argv, .on_done = on_done, .base_env = base_env};
	struct cl_error err = {{0}};
	struct command *cmd;
	struct loop *loop;
	pid_t pid;

	assert_int_equal(loop_new(&loop), 0);
	assert_int_equal(command_start(loop, &spec, &err, &cmd), 0);
	pid = command_pid(cmd);
	assert_int_equal(kill(pid, 0), 0);
	command_free(cmd);
	assert_int_equal(kill(pid, 0), -1);
	assert_int_equal(errno, ESRCH);
	loop_free(loop);
	no_child_left();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_exit_codes_including_death_by_signal),
	        cmocka_unit_test(test_output_of_both_streams_is_captured),
	        cmocka_unit_test(test_missing_executable_reports_go_style_error),
	        cmocka_unit_test(test_path_comes_from_the_merged_environment),
	        cmocka_unit_test(test_relative_path_entries_are_not_searched),
	        cmocka_unit_test(test_file_found_but_not_executable_is_permission_denied),
	        cmocka_unit_test(test_workdir_is_used_and_a_missing_one_is_an_error),
	        cmocka_unit_test(test_workdir_root_keeps_the_cwd_beneath_it),
	        cmocka_unit_test(test_environment_overrides_replace_and_add),
	        cmocka_unit_test(test_env_merge_drops_duplicates_of_overridden_names),
	        cmocka_unit_test(test_timeout_kills_the_group_and_keeps_partial_output),
	        cmocka_unit_test(test_large_output_is_capped_with_marker),
	        cmocka_unit_test(test_custom_capture_limits),
	        cmocka_unit_test(test_streaming_keeps_order_within_each_stream),
	        cmocka_unit_test(test_paused_output_loses_nothing),
	        cmocka_unit_test(test_output_paused_past_the_exit_is_not_cut_by_the_drain_wait),
	        cmocka_unit_test(test_cancel_sends_sigterm_then_sigkill),
	        cmocka_unit_test(test_no_fd_leaks_and_stdin_is_dev_null),
	        cmocka_unit_test(test_child_gets_default_signals_and_empty_mask),
	        cmocka_unit_test(test_background_holder_of_the_pipe_does_not_hang),
	        cmocka_unit_test(test_kill_group_at_exit_ends_background_jobs),
	        cmocka_unit_test(test_free_of_a_running_command_kills_and_reaps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
