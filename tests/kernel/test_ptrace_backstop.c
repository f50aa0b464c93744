/* supervisor/ptrace_backstop against the real kernel: a seized process and everything it forks
 * may exec only what was approved; anything else is killed at the exec stop, before its first
 * instruction, and reported; the tracer's death takes its tracees along. Runs as any user (a
 * process may trace its own uid's children here: no Yama). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "supervisor/exec/args_digest.h"
#include "supervisor/exec/ptrace_backstop.h"

static char *const envp[] = {"PATH=/usr/bin:/bin", NULL};

/* A child that waits for a byte on a pipe, then runs fn. */
struct child {
	pid_t pid;
	int go;
};

static struct child start_child(void (*fn)(void))
{
	struct child c;
	int p[2];

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	c.pid = fork();
	assert_true(c.pid >= 0);
	if (c.pid == 0) {
		char b;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[1]);
		if (read(p[0], &b, 1) != 1)
			_exit(99);
		fn();
		_exit(98);
	}
	close(p[0]);
	c.go = p[1];
	return c;
}

/* Run fn in a child the tracer seized; the child's exec is expected to have ARGV (as the
 * supervisor says before it lets an exec through), or nothing when ARGV is NULL. */
static int run_child_args(struct ptrace_backstop *pb, void (*fn)(void), const char *const *argv,
                          size_t argc)
{
	struct cl_error err = {""};
	struct child c = start_child(fn);
	struct backstop_args a;
	uint64_t key[2];
	int status;

	if (ptrace_backstop_seize(pb, c.pid, &err) < 0)
		fail_msg("seize: %s", err.msg);
	if (argv) {
		ptrace_backstop_args_key(pb, key);
		args_digest_of_exec(key, argv, argc, false, false, &a);
		assert_int_equal(ptrace_backstop_expect_args(pb, c.pid, &a), 0);
	}
	assert_int_equal(write(c.go, "g", 1), 1);
	close(c.go);
	assert_int_equal(waitpid(c.pid, &status, 0), c.pid);
	return status;
}

static void exec_true(void);

/* The child's exec as it is: what exec_true and exec_false run. */
static int run_child(struct ptrace_backstop *pb, void (*fn)(void))
{
	static const char *const true_argv[] = {"true"}, *const false_argv[] = {"false"};

	return run_child_args(pb, fn, fn == exec_true ? true_argv : false_argv, 1);
}

static void exec_true(void)
{
	char *argv[] = {"true", NULL};

	execve("/bin/true", argv, envp);
}

static void exec_false(void)
{
	char *argv[] = {"false", NULL};

	execve("/bin/false", argv, envp);
}

/* A grandchild execs false; the child reports how it ended. */
static void fork_then_exec_false(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		exec_false();
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		_exit(97);
	_exit(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? 0 : 1);
}

static int count_event(const struct backstop_event *ev, void *userdata)
{
	struct stat *st = userdata;

	if (ev->action == BACKSTOP_KILLED && ev->st_ino == st->st_ino && ev->st_dev == st->st_dev)
		st->st_nlink = 1000; /* seen */
	return 0;
}

static void wait_events(struct ptrace_backstop *pb, struct stat *want)
{
	struct pollfd p = {.fd = ptrace_backstop_events_fd(pb), .events = POLLIN};

	want->st_nlink = 0;
	for (int i = 0; i < 50 && want->st_nlink != 1000; i++) {
		if (poll(&p, 1, 100) > 0)
			assert_true(ptrace_backstop_consume_events(pb, count_event, want) >= 0);
	}
}

static void test_approved_exec_runs_and_another_is_killed_and_reported(void **state)
{
	struct ptrace_backstop *pb = NULL;
	struct cl_error err = {""};
	struct backstop_version tv;
	struct stat t, f;
	int status;

	assert_int_equal(stat("/bin/true", &t), 0);
	assert_int_equal(stat("/bin/false", &f), 0);
	tv = backstop_stat_version(&t);
	if (ptrace_backstop_start(&pb, &err) < 0)
		fail_msg("start: %s", err.msg);
	assert_int_equal(ptrace_backstop_allow(pb, t.st_dev, t.st_ino, &tv), 0);
	assert_int_equal(ptrace_backstop_allow(pb, t.st_dev, t.st_ino, &tv), 0); /* idempotent */
	ptrace_backstop_free(pb);

	/* One tracer seizes one process (the agent): a fresh one per case. */
	assert_int_equal(ptrace_backstop_start(&pb, &err), 0);
	assert_int_equal(ptrace_backstop_allow(pb, t.st_dev, t.st_ino, &tv), 0);
	status = run_child(pb, exec_true);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ptrace_backstop_free(pb);

	assert_int_equal(ptrace_backstop_start(&pb, &err), 0);
	assert_int_equal(ptrace_backstop_allow(pb, t.st_dev, t.st_ino, &tv), 0);
	status = run_child(pb, exec_false);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	wait_events(pb, &f);
	assert_int_equal(f.st_nlink, 1000);
	ptrace_backstop_free(pb);

	/* The approved file with other arguments than decided on, or with none decided: killed. */
	static const char *const other[] = {"true", "--other"};
	assert_int_equal(ptrace_backstop_start(&pb, &err), 0);
	assert_int_equal(ptrace_backstop_allow(pb, t.st_dev, t.st_ino, &tv), 0);
	status = run_child_args(pb, exec_true, other, 2);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	wait_events(pb, &t);
	assert_int_equal(t.st_nlink, 1000);
	ptrace_backstop_free(pb);
	assert_int_equal(ptrace_backstop_start(&pb, &err), 0);
	assert_int_equal(ptrace_backstop_allow(pb, t.st_dev, t.st_ino, &tv), 0);
	status = run_child_args(pb, exec_true, NULL, 0);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	ptrace_backstop_free(pb);
}

static char tmp_prog[64];

static void exec_tmp_prog(void)
{
	char *argv[] = {"prog", NULL};

	execve(tmp_prog, argv, envp);
}

/* DST gets SRC's content, in place (same inode). */
static void rewrite(const char *src, const char *dst, int flags)
{
	char buf[65536];
	ssize_t n;
	int in = open(src, O_RDONLY | O_CLOEXEC),
	    out = open(dst, O_WRONLY | O_CLOEXEC | flags, 0755);

	assert_true(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	assert_int_equal(close(out), 0);
}

/* A file rewritten in place keeps its inode, not its ctime: killed; approved as it is now,
 * it runs. */
static void test_a_file_rewritten_in_place_is_killed(void **state)
{
	static const char *const argv[] = {"prog"};
	struct ptrace_backstop *pb = NULL;
	struct cl_error err = {""};
	struct backstop_version v;
	struct stat st, now;
	int status, fd;

	snprintf(tmp_prog, sizeof(tmp_prog), "/tmp/cloister-test-ptrace-XXXXXX");
	fd = mkstemp(tmp_prog);
	assert_true(fd >= 0);
	assert_int_equal(fchmod(fd, 0755), 0);
	close(fd);
	rewrite("/bin/true", tmp_prog, O_TRUNC);
	assert_int_equal(stat(tmp_prog, &st), 0);
	v = backstop_stat_version(&st);
	rewrite("/bin/false", tmp_prog, O_TRUNC);
	assert_int_equal(stat(tmp_prog, &now), 0);
	assert_true(now.st_ino == st.st_ino);

	assert_int_equal(ptrace_backstop_start(&pb, &err), 0);
	assert_int_equal(ptrace_backstop_allow(pb, st.st_dev, st.st_ino, &v), 0);
	status = run_child_args(pb, exec_tmp_prog, argv, 1);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	ptrace_backstop_free(pb);

	v = backstop_stat_version(&now);
	assert_int_equal(ptrace_backstop_start(&pb, &err), 0);
	assert_int_equal(ptrace_backstop_allow(pb, now.st_dev, now.st_ino, &v), 0);
	status = run_child_args(pb, exec_tmp_prog, argv, 1);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1); /* false ran */
	ptrace_backstop_free(pb);
	unlink(tmp_prog);
}

static void test_a_grandchild_is_followed(void **state)
{
	struct ptrace_backstop *pb = NULL;
	struct cl_error err = {""};
	int status;

	assert_int_equal(ptrace_backstop_start(&pb, &err), 0);
	status = run_child(pb, fork_then_exec_false);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0); /* its child was killed */
	ptrace_backstop_free(pb);
}

static void sleep_forever(void)
{
	for (;;)
		pause();
}

static void test_the_tracers_death_kills_its_tracees(void **state)
{
	struct ptrace_backstop *pb = NULL;
	struct cl_error err = {""};
	struct child c;
	int status;

	assert_int_equal(ptrace_backstop_start(&pb, &err), 0);
	c = start_child(sleep_forever);
	assert_int_equal(ptrace_backstop_seize(pb, c.pid, &err), 0);
	assert_int_equal(write(c.go, "g", 1), 1);
	close(c.go);
	ptrace_backstop_free(pb); /* kills the tracer */
	assert_int_equal(waitpid(c.pid, &status, 0), c.pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

static void test_a_process_traced_already_cannot_be_seized(void **state)
{
	struct ptrace_backstop *a = NULL, *b = NULL;
	struct cl_error err = {""};
	struct child c;
	int status;

	assert_int_equal(ptrace_backstop_start(&a, &err), 0);
	assert_int_equal(ptrace_backstop_start(&b, &err), 0);
	c = start_child(sleep_forever);
	assert_int_equal(ptrace_backstop_seize(a, c.pid, &err), 0);
	assert_int_equal(ptrace_backstop_seize(b, c.pid, &err), -EPERM);
	assert_non_null(strstr(err.msg, "cannot trace"));
	kill(c.pid, SIGKILL);
	close(c.go);
	assert_int_equal(waitpid(c.pid, &status, 0), c.pid);
	ptrace_backstop_free(b);
	ptrace_backstop_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_approved_exec_runs_and_another_is_killed_and_reported),
	        cmocka_unit_test(test_a_file_rewritten_in_place_is_killed),
	        cmocka_unit_test(test_a_grandchild_is_followed),
	        cmocka_unit_test(test_the_tracers_death_kills_its_tracees),
	        cmocka_unit_test(test_a_process_traced_already_cannot_be_seized),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
