#include "supervisor/hostexec/command.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "protocol/json_strict.h"
#include "supervisor/hostexec/capture.h"
#include "base/child_setup.h"

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

extern char **environ;

#define DEFAULT_PATH     "/bin:/usr/bin"
#define READ_CHUNK       65536
#define READS_PER_EVENT  4
#define CHILD_STACK_SIZE (256 * 1024)

struct command {
	struct loop *loop;
	pid_t pid;
	int pidfd;
	int fds[3];         /* indexed by enum command_stream; [0] unused */
	bool registered[3]; /* fds[i] is in the loop */
	bool paused;
	bool exited; /* the pidfd fired: the process is a zombie until reaped */
	bool reaped;
	bool done;
	bool cancelled;
	bool timed_out;
	bool kill_group_at_exit;
	int exit_code;
	struct capture *capture[3];
	uint64_t bytes[3];
	struct loop_timer *timeout_timer;
	struct loop_timer *kill_timer;
	struct loop_timer *drain_timer;
	uint64_t kill_grace_ms;
	command_output_fn on_output;
	command_done_fn on_done;
	void *userdata;
};

/* ---- environment ------------------------------------------------------------------------- */

void command_env_free(char **env)
{
	if (!env)
		return;
	for (char **e = env; *e; e++)
		free(*e);
	free(env);
}

static bool entry_has_name(const char *entry, const char *name)
{
	size_t n = strlen(name);

	return strncmp(entry, name, n) == 0 && entry[n] == '=';
}

int command_env_merge(char *const *base, const struct cl_env_pair *env, size_t envc,
                      char ***ret_env)
{
	char **out;
	size_t n = 0, o = 0;

	if (!base)
		base = environ;
	while (base && base[n])
		n++;
	out = calloc(n + envc + 1, sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		bool overridden = false;

		for (size_t j = 0; j < envc && !overridden; j++)
			overridden = entry_has_name(base[i], env[j].name);
		if (overridden)
			continue;
		if (!(out[o++] = strdup(base[i])))
			goto oom;
	}
	for (size_t j = 0; j < envc; j++) {
		size_t ln = strlen(env[j].name), lv = strlen(env[j].value);
		char *e = malloc(ln + lv + 2);

		if (!e)
			goto oom;
		memcpy(e, env[j].name, ln);
		e[ln] = '=';
		memcpy(e + ln + 1, env[j].value, lv + 1);
		out[o++] = e;
	}
	*ret_env = out;
	return 0;
oom:
	command_env_free(out);
	return -ENOMEM;
}

/* ---- the child (runs on its own stack, sharing the parent's memory until it execs) ---------- */

enum child_stage {
	STAGE_NONE,
	STAGE_SETUP,
	STAGE_CHDIR,
	STAGE_EXEC,   /* exec of candidates[failed] failed with err */
	STAGE_LOOKUP, /* no candidate could be executed: err is ENOENT or EACCES */
};

struct child_args {
	char *const *candidates;
	size_t ncandidates;
	bool search; /* candidates come from PATH */
	char *const *argv;
	char *const *envp;
	const char *workdir;
	const char *workdir_root;
	int stdio[3];
	/* written by the child, read by the parent once clone() returns */
	volatile int err;
	volatile int stage;
	volatile size_t failed;
};

static bool lookup_goes_on(int e)
{
	/* As execvp: these mean "not here", keep looking. */
	return e == ENOENT || e == ENOTDIR || e == ENAMETOOLONG || e == ESTALE || e == ENODEV ||
	       e == ETIMEDOUT || e == ELOOP;
}

/* Only raw syscalls through libc wrappers here: no allocation, no stdio, no locks, since the
 * parent's memory (and its thread's errno) are shared until execve. */
static int child_main(void *arg)
{
	struct child_args *a = arg;
	bool saw_eacces = false;

	/* The parent blocked every signal around clone(), so none of its handlers can run on
	 * this stack before they are reset here. */
	child_setup_reset_signals();

	if (setpgid(0, 0) < 0)
		goto setup_failed;
	for (int i = 0; i < 3; i++)
		if (dup2(a->stdio[i], i) < 0)
			goto setup_failed;
	/* Everything is O_CLOEXEC already; this also covers fds inherited from whoever started the
	 * supervisor. Failure is harmless (old kernel): nothing else leaks by our doing. */
	syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);

	if (a->workdir_root) {
		int fd = child_setup_open_beneath(a->workdir_root, a->workdir ? a->workdir : ".");

		if (fd < 0 || fchdir(fd) < 0) {
			a->err = fd < 0 ? -fd : errno;
			a->stage = STAGE_CHDIR;
			_exit(127);
		}
	} else if (a->workdir && chdir(a->workdir) < 0) {
		a->err = errno;
		a->stage = STAGE_CHDIR;
		_exit(127);
	}
	for (size_t i = 0; i < a->ncandidates; i++) {
		int e;

		execve(a->candidates[i], a->argv, a->envp);
		e = errno;
		if (a->search && e == EACCES) {
			saw_eacces = true;
			continue;
		}
		if (a->search && lookup_goes_on(e))
			continue;
		a->err = e;
		a->failed = i;
		a->stage = STAGE_EXEC;
		_exit(127);
	}
	a->err = saw_eacces ? EACCES : ENOENT;
	a->stage = STAGE_LOOKUP;
	_exit(127);

setup_failed:
	a->err = errno;
	a->stage = STAGE_SETUP;
	_exit(127);
}

/* ---- spawning ---------------------------------------------------------------------------- */

/* The paths to try: FILE itself when it has a '/', else DIR/FILE for each absolute PATH entry. */
static int build_candidates(const char *file, char *const *envp, char ***ret, size_t *ret_n,
                            bool *ret_search)
{
	const char *path = NULL, *p;
	size_t n = 0, flen = strlen(file);
	char **c;

	if (strchr(file, '/')) {
		c = calloc(2, sizeof(*c));
		if (!c || !(c[0] = strdup(file))) {
			free(c);
			return -ENOMEM;
		}
		*ret = c;
		*ret_n = 1;
		*ret_search = false;
		return 0;
	}
	for (char *const *e = envp; *e && !path; e++)
		if (strncmp(*e, "PATH=", 5) == 0)
			path = *e + 5;
	if (!path)
		path = DEFAULT_PATH;
	for (p = path; *p; p++)
		n += *p == ':';
	c = calloc(n + 2, sizeof(*c));
	if (!c)
		return -ENOMEM;
	n = 0;
	for (p = path;;) {
		const char *end = strchrnul(p, ':');
		size_t dlen = (size_t)(end - p);

		if (dlen > 0 && p[0] == '/') {
			bool slash = p[dlen - 1] == '/';
			char *s = malloc(dlen + 1 + flen + 1);

			if (!s) {
				command_env_free(c);
				return -ENOMEM;
			}
			memcpy(s, p, dlen);
			if (!slash)
				s[dlen++] = '/';
			memcpy(s + dlen, file, flen + 1);
			c[n++] = s;
		}
		if (!*end)
			break;
		p = end + 1;
	}
	*ret = c;
	*ret_n = n;
	*ret_search = true;
	return 0;
}

/* Errno text as Go prints it: strerror, lower case first letter. */
static const char *go_strerror(int e, char *buf, size_t size)
{
	const char *s = strerrordesc_np(e);

	if (!s) {
		snprintf(buf, size, "errno %d", e);
		return buf;
	}
	snprintf(buf, size, "%s", s);
	if (buf[0] >= 'A' && buf[0] <= 'Z' && buf[1] >= 'a' && buf[1] <= 'z')
		buf[0] = (char)(buf[0] - 'A' + 'a');
	return buf;
}

static int spawn_error(const struct child_args *a, const char *file, struct cl_error *err)
{
	char name[256], what[256], why[128];

	go_strerror(a->err, why, sizeof(why));
	switch (a->stage) {
	case STAGE_CHDIR:
		cl_json_printable(a->workdir ? a->workdir : ".",
		                  strlen(a->workdir ? a->workdir : "."), what, sizeof(what));
		if (a->workdir_root) {
			cl_json_printable(a->workdir_root, strlen(a->workdir_root), name,
			                  sizeof(name));
			return cl_error_set(err, -a->err, "chdir %s/%s: %s", name, what, why);
		}
		return cl_error_set(err, -a->err, "chdir %s: %s", what, why);
	case STAGE_EXEC:
		cl_json_printable(a->candidates[a->failed], strlen(a->candidates[a->failed]), what,
		                  sizeof(what));
		return cl_error_set(err, -a->err, "fork/exec %s: %s", what, why);
	case STAGE_LOOKUP:
		cl_json_printable(file, strlen(file), name, sizeof(name));
		if (a->err == EACCES)
			return cl_error_set(err, -EACCES, "exec: \"%s\": permission denied", name);
		return cl_error_set(err, -ENOENT,
		                    "exec: \"%s\": executable file not found in $PATH", name);
	default:
		return cl_error_set(err, -a->err, "setting up the child: %s", why);
	}
}

/* Move *fd above 0..2, so that the child's dup2() onto 0..2 never meets one of its sources. */
static int fd_above_stdio(int *fd)
{
	int nfd;

	if (*fd > STDERR_FILENO)
		return 0;
	nfd = fcntl(*fd, F_DUPFD_CLOEXEC, 3);
	if (nfd < 0)
		return -errno;
	close(*fd);
	*fd = nfd;
	return 0;
}

static int reap(struct command *cmd, bool block)
{
	siginfo_t si = {0};

	if (cmd->reaped)
		return 0;
	while (waitid((idtype_t)P_PIDFD, (id_t)cmd->pidfd, &si, WEXITED | (block ? 0 : WNOHANG)) <
	       0) {
		if (errno != EINTR)
			return -errno;
	}
	if (si.si_pid == 0)
		return -EAGAIN;
	cmd->reaped = true;
	if (si.si_code == CLD_EXITED)
		cmd->exit_code = si.si_status;
	else
		cmd->exit_code = 128 + si.si_status;
	return 0;
}

static void signal_group(struct command *cmd, int sig)
{
	/* The group is safe to address until the leader is reaped (its pid cannot be reused);
	 * the pidfd reaches the leader even if it left the group. */
	if (cmd->reaped)
		return;
	syscall(SYS_pidfd_send_signal, cmd->pidfd, sig, NULL, 0);
	kill(-cmd->pid, sig);
}

/* ---- the loop side ----------------------------------------------------------------------- */

static void close_stream(struct command *cmd, int s)
{
	if (cmd->fds[s] < 0)
		return;
	if (cmd->registered[s])
		loop_del_fd(cmd->loop, cmd->fds[s]);
	cmd->registered[s] = false;
	close(cmd->fds[s]);
	cmd->fds[s] = -EBADF;
}

static void cancel_timer(struct command *cmd, struct loop_timer **t)
{
	if (*t)
		loop_cancel_timer(cmd->loop, *t);
	*t = NULL;
}

static void finish(struct command *cmd)
{
	struct command_result res = {0};
	void *userdata = cmd->userdata;
	command_done_fn on_done = cmd->on_done;

	/* The pidfd fired, so the process is a zombie and this does not block. */
	if (reap(cmd, false) < 0)
		reap(cmd, true);
	cancel_timer(cmd, &cmd->timeout_timer);
	cancel_timer(cmd, &cmd->kill_timer);
	cancel_timer(cmd, &cmd->drain_timer);
	close_stream(cmd, COMMAND_STDOUT);
	close_stream(cmd, COMMAND_STDERR);
	cmd->done = true;

	if (cmd->timed_out) {
		res.status = COMMAND_TIMEOUT;
		res.exit_code = -1;
	} else {
		res.status = cmd->cancelled ? COMMAND_CANCELLED : COMMAND_COMPLETED;
		res.exit_code = cmd->exit_code;
	}
	res.stdout_bytes = cmd->bytes[COMMAND_STDOUT];
	res.stderr_bytes = cmd->bytes[COMMAND_STDERR];
	if (!cmd->on_output) {
		/* Out of memory here leaves empty text rather than losing the exit status. */
		if (capture_finish_text(cmd->capture[COMMAND_STDOUT], &res.stdout_text, NULL) < 0)
			res.stdout_text = strdup("");
		if (capture_finish_text(cmd->capture[COMMAND_STDERR], &res.stderr_text, NULL) < 0)
			res.stderr_text = strdup("");
	}
	/* on_done may free cmd: nothing touches it afterwards. */
	on_done(cmd, &res, userdata);
	free(res.stdout_text);
	free(res.stderr_text);
}

static void maybe_finish(struct command *cmd)
{
	if (!cmd->done && cmd->exited && cmd->fds[COMMAND_STDOUT] < 0 &&
	    cmd->fds[COMMAND_STDERR] < 0)
		finish(cmd);
}

static int on_pipe(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct command *cmd = userdata;
	int s = fd == cmd->fds[COMMAND_STDOUT] ? COMMAND_STDOUT : COMMAND_STDERR;
	char buf[READ_CHUNK];

	for (int i = 0; i < READS_PER_EVENT && !cmd->paused; i++) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0) {
			/* End of file, or an error that will not go away: this stream is over. */
			close_stream(cmd, s);
			maybe_finish(cmd);
			return 0;
		}
		cmd->bytes[s] += (uint64_t)n;
		if (cmd->on_output)
			cmd->on_output(cmd, (enum command_stream)s, buf, (size_t)n, cmd->userdata);
		else
			(void)capture_append(cmd->capture[s], buf, (size_t)n);
	}
	return 0;
}

static int on_drain_timeout(struct loop *loop, void *userdata)
{
	struct command *cmd = userdata;

	cmd->drain_timer = NULL;
	if (!cmd->done)
		finish(cmd);
	return 0;
}

/* After the exit, wait a while for whatever else holds the pipes, but not while the consumer
 * has paused the output: what is in the pipes then is the command's, and still to come. */
static void arm_drain(struct command *cmd)
{
	if (!cmd->exited || cmd->done || cmd->paused || cmd->drain_timer ||
	    (cmd->fds[COMMAND_STDOUT] < 0 && cmd->fds[COMMAND_STDERR] < 0))
		return;
	if (loop_add_timer(cmd->loop, loop_now_ms() + COMMAND_DRAIN_MS, on_drain_timeout, cmd,
	                   &cmd->drain_timer) < 0)
		cmd->drain_timer = NULL;
}

static int on_exit_event(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct command *cmd = userdata;

	/* Level-triggered and readable until reaped: stop watching; reaping waits for the pipes
	 * so that the process group stays addressable meanwhile. */
	loop_del_fd(loop, cmd->pidfd);
	cmd->exited = true;
	cancel_timer(cmd, &cmd->timeout_timer);
	if (cmd->kill_group_at_exit)
		signal_group(cmd, SIGKILL); /* the zombie leader keeps the group ours */
	arm_drain(cmd);
	maybe_finish(cmd);
	return 0;
}

static int on_timeout(struct loop *loop, void *userdata)
{
	struct command *cmd = userdata;

	cmd->timeout_timer = NULL;
	cmd->timed_out = true;
	signal_group(cmd, SIGKILL);
	return 0;
}

static int on_kill_grace(struct loop *loop, void *userdata)
{
	struct command *cmd = userdata;

	cmd->kill_timer = NULL;
	signal_group(cmd, SIGKILL);
	return 0;
}

void command_cancel(struct command *cmd)
{
	if (!cmd || cmd->done || cmd->exited || cmd->cancelled || cmd->timed_out)
		return;
	cmd->cancelled = true;
	signal_group(cmd, SIGTERM);
	if (loop_add_timer(cmd->loop, loop_now_ms() + cmd->kill_grace_ms, on_kill_grace, cmd,
	                   &cmd->kill_timer) < 0) {
		cmd->kill_timer = NULL;
		signal_group(cmd, SIGKILL);
	}
}

static int watch_stream(struct command *cmd, int s)
{
	int r;

	if (cmd->fds[s] < 0 || cmd->registered[s])
		return 0;
	r = loop_add_fd(cmd->loop, cmd->fds[s], EPOLLIN, on_pipe, cmd);
	if (r < 0)
		return r;
	cmd->registered[s] = true;
	return 0;
}

void command_pause_output(struct command *cmd, bool paused)
{
	if (!cmd || cmd->done || cmd->paused == paused)
		return;
	cmd->paused = paused;
	for (int s = COMMAND_STDOUT; s <= COMMAND_STDERR; s++) {
		if (paused && cmd->registered[s]) {
			loop_del_fd(cmd->loop, cmd->fds[s]);
			cmd->registered[s] = false;
		} else if (!paused) {
			(void)watch_stream(cmd, s);
		}
	}
	if (paused)
		cancel_timer(cmd, &cmd->drain_timer);
	else
		arm_drain(cmd);
}

int command_pid(const struct command *cmd)
{
	return cmd->pid;
}

void command_free(struct command *cmd)
{
	if (!cmd)
		return;
	if (!cmd->reaped && cmd->pidfd >= 0) {
		signal_group(cmd, SIGKILL);
		reap(cmd, true);
	}
	if (!cmd->exited && cmd->pidfd >= 0)
		loop_del_fd(cmd->loop, cmd->pidfd);
	cancel_timer(cmd, &cmd->timeout_timer);
	cancel_timer(cmd, &cmd->kill_timer);
	cancel_timer(cmd, &cmd->drain_timer);
	close_stream(cmd, COMMAND_STDOUT);
	close_stream(cmd, COMMAND_STDERR);
	cl_closep(&cmd->pidfd);
	capture_free(cmd->capture[COMMAND_STDOUT]);
	capture_free(cmd->capture[COMMAND_STDERR]);
	free(cmd);
}

CL_DEFINE_TRIVIAL_CLEANUP(struct command *, command_free)
CL_DEFINE_TRIVIAL_CLEANUP(char **, command_env_free)

static void close_pair(int p[2])
{
	cl_closep(&p[0]);
	cl_closep(&p[1]);
}

int command_start(struct loop *loop, const struct command_spec *spec, struct cl_error *err,
                  struct command **ret)
{
	_cleanup_(command_freep) struct command *cmd = NULL;
	_cleanup_(command_env_freep) char **envp = NULL;
	_cleanup_(command_env_freep) char **candidates = NULL;
	_cleanup_close_ int devnull = -EBADF;
	int out[2] = {-EBADF, -EBADF}, errp[2] = {-EBADF, -EBADF};
	char *default_argv[2] = {NULL, NULL};
	struct child_args a = {0};
	sigset_t all, old;
	void *stack;
	int pidfd = -EBADF, r;
	pid_t pid;

	if (!spec || !spec->file || !spec->file[0] || !spec->on_done)
		return cl_error_set(err, -EINVAL, "command: file and on_done are required");
	if (spec->argv && !spec->argv[0])
		return cl_error_set(err, -EINVAL, "command: argv is empty");
	if (spec->workdir_root && spec->workdir_root[0] != '/')
		return cl_error_set(err, -EINVAL, "command: workdir_root must be absolute");

	cmd = calloc(1, sizeof(*cmd));
	if (!cmd)
		return cl_error_set(err, -ENOMEM, "out of memory");
	cmd->loop = loop;
	cmd->pidfd = -EBADF;
	cmd->fds[0] = cmd->fds[1] = cmd->fds[2] = -EBADF;
	cmd->kill_grace_ms =
	        spec->kill_grace_ms ? spec->kill_grace_ms : COMMAND_KILL_GRACE_MS_DEFAULT;
	cmd->kill_group_at_exit = spec->kill_group_at_exit;
	cmd->on_output = spec->on_output;
	cmd->on_done = spec->on_done;
	cmd->userdata = spec->userdata;
	if (!cmd->on_output) {
		for (int s = COMMAND_STDOUT; s <= COMMAND_STDERR; s++) {
			r = capture_new(spec->capture_max, spec->capture_tail, &cmd->capture[s]);
			if (r < 0)
				return cl_error_set(err, r, "command: bad capture limits");
		}
	}

	r = command_env_merge(spec->base_env, spec->env, spec->envc, &envp);
	if (r < 0)
		return cl_error_set(err, r, "out of memory");
	r = build_candidates(spec->file, envp, &candidates, &a.ncandidates, &a.search);
	if (r < 0)
		return cl_error_set(err, r, "out of memory");

	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0)
		return cl_error_set(err, -errno, "open /dev/null: %m");
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		r = -errno;
		close_pair(out);
		close_pair(errp);
		return cl_error_set(err, r, "pipe: %s", strerror(-r));
	}
	/* Only our ends are non-blocking: the child's writes must block on a full pipe. */
	if (fcntl(out[0], F_SETFL, O_NONBLOCK) < 0 || fcntl(errp[0], F_SETFL, O_NONBLOCK) < 0 ||
	    (r = fd_above_stdio(&devnull)) < 0 || (r = fd_above_stdio(&out[1])) < 0 ||
	    (r = fd_above_stdio(&errp[1])) < 0) {
		r = r < 0 ? r : -errno;
		close_pair(out);
		close_pair(errp);
		return cl_error_set(err, r, "pipe: %s", strerror(-r));
	}
	cmd->fds[COMMAND_STDOUT] = out[0];
	cmd->fds[COMMAND_STDERR] = errp[0];

	default_argv[0] = (char *)spec->file;
	a.candidates = candidates;
	a.argv = spec->argv ? spec->argv : default_argv;
	a.envp = envp;
	a.workdir = spec->workdir;
	a.workdir_root = spec->workdir_root;
	a.stdio[0] = devnull;
	a.stdio[1] = out[1];
	a.stdio[2] = errp[1];

	stack = mmap(NULL, CHILD_STACK_SIZE, PROT_READ | PROT_WRITE,
	             MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED) {
		r = -errno;
		cl_closep(&out[1]);
		cl_closep(&errp[1]);
		return cl_error_set(err, r, "mmap: %s", strerror(-r));
	}
	/* CLONE_VM | CLONE_VFORK: the parent sleeps until the child execs or exits, so spawning
	 * costs no copy of our page tables, and the child reports a failure in shared memory
	 * before the parent looks. Signals stay blocked around it (see child_main). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = child_setup_clone_vm(child_main, (char *)stack + CHILD_STACK_SIZE,
	                           CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD, &a, &pidfd);
	r = pid < 0 ? -errno : 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	munmap(stack, CHILD_STACK_SIZE);
	cl_closep(&out[1]);
	cl_closep(&errp[1]);
	if (r < 0)
		return cl_error_set(err, r, "clone: %s", strerror(-r));
	cmd->pid = pid;
	cmd->pidfd = pidfd;

	if (a.stage != STAGE_NONE) {
		/* The child exited with 127 without running anything; collect it. */
		reap(cmd, true);
		return spawn_error(&a, spec->file, err);
	}

	r = loop_add_fd(loop, cmd->pidfd, EPOLLIN, on_exit_event, cmd);
	if (r < 0)
		return cl_error_set(err, r, "loop: %s", strerror(-r));
	if ((r = watch_stream(cmd, COMMAND_STDOUT)) < 0 ||
	    (r = watch_stream(cmd, COMMAND_STDERR)) < 0)
		return cl_error_set(err, r, "loop: %s", strerror(-r));
	if (spec->timeout_ms > 0) {
		r = loop_add_timer(loop, loop_now_ms() + spec->timeout_ms, on_timeout, cmd,
		                   &cmd->timeout_timer);
		if (r < 0)
			return cl_error_set(err, r, "loop: %s", strerror(-r));
	}
	*ret = TAKE_PTR(cmd);
	return 0;
}
