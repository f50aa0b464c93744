/* The shim listener: see shim_server.h.
 *
 * Over 900 lines on purpose: one call's life on the loop — its request decoded and checked, the
 * owner's answer, the command run by either strategy, its output streamed back under the cap,
 * its cancellation — over one struct shim_call that every part touches. What could stand alone is
 * apart already: command.c (the host strategy's process), shim_spawn.c (the mirror's),
 * output_cap.c, env_scrub.c, path_boundary.c, and the decisions (hostexec.c). */
#include "supervisor/hostexec/shim_server.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "protocol/address.h"
#include "base/cleanup.h"
#include "base/tcp_listen.h"
#include "protocol/frame.h"
#include "protocol/quote.h"
#include "supervisor/hostexec/command.h"
#include "supervisor/hostexec/output_cap.h"
#include "supervisor/policy/path_boundary.h"
#include "supervisor/hostexec/shim_spawn.h"

#define READ_CHUNK      (64 * 1024)
#define OUT_HIGH_WATER  (1024 * 1024)
#define EXIT_DRAIN_MS   1000
#define DEFAULT_SHIMDIR "/cloister/bin"

enum call_state {
	CALL_READING,  /* the request frame is arriving */
	CALL_DECIDING, /* ops->decide() was called, no answer yet */
	CALL_PENDING,  /* ack 2 sent */
	CALL_RUNNING,  /* ack 0 sent, command running */
	CALL_CLOSING,  /* last bytes queued; close once flushed */
};

struct shim_call {
	struct shim_server *server;
	struct shim_call *next, *prev;
	uint64_t id;
	int fd;
	enum call_state state;
	bool tcp;
	bool peer_gone;
	bool freed_by_handler; /* set when a handler must not touch the call again */
	struct loop_timer *timer;
	struct cl_frame_decoder dec;

	/* peer */
	pid_t peer_pid;
	int peer_pidfd;
	uid_t uid;
	gid_t gid;

	/* request */
	struct cl_exec_request *req;
	char *command;
	char **env;
	size_t envc;
	size_t env_dropped;
	char *cwd_relative;
	struct shim_call_info info;

	/* outgoing bytes */
	uint8_t *out;
	size_t out_len, out_off, out_cap;

	/* the command: host strategy through command.h, mirror through shim_spawn.h */
	struct command *cmd;
	pid_t pid;
	int pidfd;
	int pipe_fd[2]; /* stdout, stderr read ends */
	struct output_cap cap[2];
	bool exited;
	bool killed;
	bool timed_out;
	int32_t status;
};

struct shim_server {
	struct loop *loop;
	struct shim_server_config config;
	char *unix_path;
	char *worktree;
	char *token;
	char *shim_dir;
	struct shim_server_ops ops;
	void *userdata;
	int unix_fd;
	int tcp_fd;
	uint16_t tcp_port;
	struct shim_call *calls;
	size_t ncalls;
	uint64_t next_id;
};

static int call_handler(struct loop *loop, int fd, uint32_t events, void *userdata);
static int pipe_handler(struct loop *loop, int fd, uint32_t events, void *userdata);
static int pidfd_handler(struct loop *loop, int fd, uint32_t events, void *userdata);

/* ---- calls: lifetime ---------------------------------------------------------------------- */

static void call_close_fd(struct shim_call *c, int *fd)
{
	if (*fd >= 0) {
		loop_del_fd(c->server->loop, *fd);
		close(*fd);
		*fd = -EBADF;
	}
}

/* Mirror: kill the command's process group and reap its leader (blocking; only at teardown or
 * once the leader has exited). */
static void call_reap(struct shim_call *c, bool wait)
{
	if (c->pid > 0 && !c->exited) {
		kill(-c->pid, SIGKILL);
		if (wait) {
			while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
				;
			c->exited = true;
		}
	}
}

static void call_free(struct shim_call *c)
{
	struct shim_server *s = c->server;

	if (c->timer)
		loop_cancel_timer(s->loop, c->timer);
	command_free(c->cmd);
	call_reap(c, true);
	call_close_fd(c, &c->pidfd);
	call_close_fd(c, &c->pipe_fd[0]);
	call_close_fd(c, &c->pipe_fd[1]);
	call_close_fd(c, &c->fd);
	cl_closep(&c->peer_pidfd);
	cl_frame_decoder_done(&c->dec);
	output_cap_done(&c->cap[0]);
	output_cap_done(&c->cap[1]);
	cl_exec_request_free(c->req);
	free(c->command);
	env_scrub_free(c->env);
	free(c->cwd_relative);
	free(c->out);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->calls = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->ncalls--;
	free(c);
}

static void call_finished(struct shim_call *c, int32_t status)
{
	if (c->server->ops.finished)
		c->server->ops.finished(c->server->userdata, c->id, status);
}

/* ---- calls: output -------------------------------------------------------------------------- */

static int call_flush(struct shim_call *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
		                 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			return -errno;
		}
		c->out_off += (size_t)n;
	}
	if (c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	return 0;
}

/* The loop could not change what it watches for the call (loop_mod_fd failed). Before the
 * command runs, the registrations stay as they were (every mask has EPOLLIN and EPOLLRDHUP: a
 * hang-up is still seen) and the next update tries again. While it runs, the command's output
 * could no longer be paused or resumed: end the call as if the shim had hung up (nothing more
 * is sent, the command is stopped, its exit or the drain's timeout frees the call). Never
 * frees the call itself: the caller may be inside the owner's or the command's callback. */
static void call_lost_loop(struct shim_call *c)
{
	if (c->state != CALL_RUNNING)
		return;
	c->peer_gone = true;
	if (c->fd >= 0)
		call_close_fd(c, &c->fd);
	if (c->cmd) {
		command_cancel(c->cmd);
	} else if (!c->exited && !c->killed) {
		c->killed = true;
		kill(-c->pid, SIGKILL);
	}
	for (int i = 0; i < 2; i++)
		call_close_fd(c, &c->pipe_fd[i]);
}

static void call_update_events(struct shim_call *c)
{
	/* Back-pressure: stop reading the command's output while the shim is slow (a shim that
	 * is gone takes no more, so the output drains then). */
	bool slow = !c->peer_gone && c->out_len - c->out_off > OUT_HIGH_WATER;
	int r = 0;

	if (c->cmd)
		command_pause_output(c->cmd, slow);
	for (int i = 0; i < 2 && r >= 0; i++)
		if (c->pipe_fd[i] >= 0)
			r = loop_mod_fd(c->server->loop, c->pipe_fd[i], slow ? 0 : EPOLLIN);
	if (r >= 0 && c->fd >= 0)
		r = loop_mod_fd(c->server->loop, c->fd,
		                EPOLLIN | EPOLLRDHUP | (c->out_len > c->out_off ? EPOLLOUT : 0));
	if (r < 0)
		call_lost_loop(c);
}

static int call_queue(struct shim_call *c, const void *data, size_t len)
{
	if (c->peer_gone)
		return 0;
	if (c->out_len + len > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 4096;
		uint8_t *p;

		while (cap < c->out_len + len)
			cap *= 2;
		p = realloc(c->out, cap);
		if (!p)
			return -ENOMEM;
		c->out = p;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, data, len);
	c->out_len += len;
	return 0;
}

static int call_queue_byte(struct shim_call *c, uint8_t b)
{
	return call_queue(c, &b, 1);
}

/* Stream frames of at most CL_FRAME_STREAM_MAX_DEFAULT bytes each. */
static int call_queue_output(struct shim_call *c, enum cl_frame_type type, const uint8_t *p,
                             size_t len)
{
	uint8_t hdr[CL_FRAME_STREAM_HEADER_SIZE];
	int r;

	while (len > 0) {
		size_t n = len > CL_FRAME_STREAM_MAX_DEFAULT ? CL_FRAME_STREAM_MAX_DEFAULT : len;

		hdr[0] = (uint8_t)type;
		hdr[1] = (uint8_t)(n >> 24);
		hdr[2] = (uint8_t)(n >> 16);
		hdr[3] = (uint8_t)(n >> 8);
		hdr[4] = (uint8_t)n;
		r = call_queue(c, hdr, sizeof(hdr));
		if (r >= 0)
			r = call_queue(c, p, n);
		if (r < 0)
			return r;
		p += n;
		len -= n;
	}
	return 0;
}

static void call_queue_text(struct shim_call *c, enum cl_frame_type type, const char *text)
{
	(void)call_queue_output(c, type, (const uint8_t *)text, strlen(text));
}

/* Send what is queued, then close. */
static void call_close_after_flush(struct shim_call *c)
{
	c->state = CALL_CLOSING;
	if (c->timer) {
		loop_cancel_timer(c->server->loop, c->timer);
		c->timer = NULL;
	}
}

static void call_deny(struct shim_call *c, const char *reason)
{
	char line[1100];

	snprintf(line, sizeof(line), "%s\n", reason && *reason ? reason : "denied");
	(void)call_queue_byte(c, CL_ACK_DENIED);
	call_queue_text(c, CL_FRAME_STDERR, line);
	call_close_after_flush(c);
}

static void call_queue_exit(struct shim_call *c, int32_t status)
{
	uint8_t frame[CL_FRAME_STREAM_HEADER_SIZE + CL_FRAME_EXIT_PAYLOAD_SIZE];

	if (cl_frame_encode_exit(status, frame, sizeof(frame)) > 0)
		(void)call_queue(c, frame, sizeof(frame));
}

/* After the command's side moved: free a call that has said everything, else send what can go
 * and watch for the rest. Returns true when the call was freed. */
static bool call_settle(struct shim_call *c)
{
	if (c->state == CALL_CLOSING && (c->peer_gone || c->out_len == c->out_off)) {
		call_free(c);
		return true;
	}
	if (call_flush(c) < 0)
		c->peer_gone = true;
	call_update_events(c);
	return false;
}

/* ---- running ---------------------------------------------------------------------------- */

/* Mirror only: command.h keeps the host strategy's timeout. */
static int command_timeout(struct loop *loop, void *userdata)
{
	struct shim_call *c = userdata;

	c->timer = NULL;
	if (c->state == CALL_RUNNING && !c->exited) {
		c->timed_out = true;
		c->killed = true;
		kill(-c->pid, SIGKILL);
	}
	return 0;
}

static void call_end_run(struct shim_call *c);

static int drain_timeout(struct loop *loop, void *userdata)
{
	struct shim_call *c = userdata;

	c->timer = NULL;
	/* Something the command left behind still holds the pipes: stop waiting for it. */
	call_end_run(c);
	call_settle(c);
	return 0;
}

/* A chunk of the command's stdout (i 0) or stderr (1): the part under the cap goes out now. */
static void call_output(struct shim_call *c, int i, const uint8_t *data, size_t len)
{
	int64_t live = output_cap_feed(&c->cap[i], data, len);

	if (live > 0)
		(void)call_queue_output(c, i == 0 ? CL_FRAME_STDOUT : CL_FRAME_STDERR, data,
		                        (size_t)live);
}

static void pipe_read(struct shim_call *c, int i)
{
	static uint8_t buf[READ_CHUNK];

	while (c->pipe_fd[i] >= 0) {
		ssize_t n = read(c->pipe_fd[i], buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			call_close_fd(c, &c->pipe_fd[i]);
			return;
		}
		call_output(c, i, buf, (size_t)n);
		if (c->out_len - c->out_off > OUT_HIGH_WATER)
			return;
	}
}

/* The command has exited and its pipes are closed (or the drain timed out): send the tails,
 * the exit frame, and close. */
static void call_end_run(struct shim_call *c)
{
	int32_t status;

	if (c->state != CALL_RUNNING)
		return;
	for (int i = 0; i < 2; i++) {
		_cleanup_free_ uint8_t *rest = NULL;
		size_t len = 0;

		if (c->pipe_fd[i] >= 0)
			pipe_read(c, i);
		call_close_fd(c, &c->pipe_fd[i]);
		if (output_cap_finish(&c->cap[i], &rest, &len) == 0 && len > 0)
			(void)call_queue_output(c, i == 0 ? CL_FRAME_STDOUT : CL_FRAME_STDERR, rest,
			                        len);
	}
	status = c->timed_out ? -1 : c->status;
	if (c->timed_out)
		call_queue_text(c, CL_FRAME_STDERR,
		                "cloister: the command timed out and was killed\n");
	call_queue_exit(c, status);
	call_finished(c, status);
	call_close_after_flush(c);
}

static int pipe_handler(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct shim_call *c = userdata;
	int i = fd == c->pipe_fd[0] ? 0 : 1;

	pipe_read(c, i);
	if (c->exited && c->pipe_fd[0] < 0 && c->pipe_fd[1] < 0) {
		if (c->timer) {
			loop_cancel_timer(loop, c->timer);
			c->timer = NULL;
		}
		call_end_run(c);
	}
	call_settle(c);
	return 0;
}

static int pidfd_handler(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct shim_call *c = userdata;
	siginfo_t si = {0};

	/* Whatever the leader left running dies with it; the zombie keeps the group id ours. */
	kill(-c->pid, SIGKILL);
	if (waitid(P_PIDFD, (id_t)c->pidfd, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
		return 0;
	c->exited = true;
	c->status = si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
	call_close_fd(c, &c->pidfd);
	if (c->timer)
		loop_cancel_timer(loop, c->timer);
	c->timer = NULL;
	/* Without the drain's timer, what the command left behind could hold the pipes forever:
	 * end the run now then. */
	if ((c->pipe_fd[0] < 0 && c->pipe_fd[1] < 0) ||
	    loop_add_timer(loop, loop_now_ms() + EXIT_DRAIN_MS, drain_timeout, c, &c->timer) < 0)
		call_end_run(c);
	call_settle(c);
	return 0;
}

static char *env_lookup(char *const *env, const char *name)
{
	size_t n = strlen(name);

	for (; env && *env; env++)
		if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
			return *env + n + 1;
	return NULL;
}

/* ---- host strategy: command.h ---------------------------------------------------------- */

static void host_output(struct command *cmd, enum command_stream stream, const void *data,
                        size_t len, void *userdata)
{
	struct shim_call *c = userdata;

	call_output(c, stream == COMMAND_STDOUT ? 0 : 1, data, len);
	call_settle(c); /* never frees: the call is still running */
}

static void host_done(struct command *cmd, struct command_result *res, void *userdata)
{
	struct shim_call *c = userdata;

	/* A cancelled command reports what it died of: 143 after the SIGTERM, 137 when it needed
	 * the SIGKILL, or its own exit status when it handled the SIGTERM. */
	c->timed_out = res->status == COMMAND_TIMEOUT;
	c->status = res->exit_code;
	c->exited = true;
	command_free(cmd);
	c->cmd = NULL;
	call_end_run(c);
	call_settle(c);
}

/* Runs as the supervisor, in the cwd beneath the worktree, with the tool found as the mirror
 * finds it (here, on the host's filesystem: no container to look into). */
/* The host's own search path: a caller's PATH would name the program the host runs. */
#define HOST_PATH    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define HOST_ENV_MAX 32

/* Of the caller's environment, only what shapes output and not behaviour reaches a host
 * command: a caller's HOME, GOFLAGS, npm_config_*, KUBECONFIG… would point a host tool at
 * files the agent wrote. */
static bool host_env_passes(const char *entry)
{
	static const char *const names[] = {
	        "TERM=", "LANG=", "TZ=", "COLUMNS=", "LINES=", "NO_COLOR=", "LC_"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strncmp(entry, names[i], strlen(names[i])))
			return true;
	return false;
}

static int host_start(struct shim_call *c, char *const *argv, char *msg, size_t size)
{
	struct shim_server *s = c->server;
	struct cl_error err = {""};
	char exe[PATH_MAX], real[PATH_MAX];
	struct cl_env_pair env[HOST_ENV_MAX];
	char *names[HOST_ENV_MAX] = {NULL};
	size_t envc = 0, wlen = strlen(s->worktree);
	const char *path = getenv("PATH");
	gid_t locked_gid;
	int r;

	if (shim_find_tool(path && *path ? path : HOST_PATH, s->shim_dir, c->req->tool, exe,
	                   sizeof(exe), &locked_gid) < 0) {
		snprintf(msg, size, "cloister: %s: not found on the host's PATH (outside %s)\n",
		         c->req->tool, s->shim_dir);
		return 127;
	}
	/* Never a program the agent could have written. */
	if (!realpath(exe, real) ||
	    (!strncmp(real, s->worktree, wlen) && (real[wlen] == '/' || real[wlen] == '\0'))) {
		snprintf(msg, size, "cloister: %.64s: refusing %.400s inside the worktree\n",
		         c->req->tool, exe);
		return 126;
	}
	for (size_t i = 0; c->env && c->env[i] && envc < HOST_ENV_MAX; i++) {
		const char *eq = strchr(c->env[i], '=');

		if (!eq || !host_env_passes(c->env[i]))
			continue;
		names[envc] = strndup(c->env[i], (size_t)(eq - c->env[i]));
		if (!names[envc])
			break;
		env[envc].name = names[envc];
		env[envc].value = (char *)eq + 1;
		envc++;
	}
	r = command_start(s->loop,
	                  &(struct command_spec){
	                          .file = exe,
	                          .argv = argv,
	                          .workdir_root = s->worktree,
	                          .workdir = c->cwd_relative,
	                          .base_env = NULL, /* the supervisor's own */
	                          .env = env,
	                          .envc = envc,
	                          .timeout_ms = s->config.timeout_ms
	                                                ? s->config.timeout_ms
	                                                : SHIM_SERVER_TIMEOUT_DEFAULT_MS,
	                          .kill_grace_ms = s->config.kill_grace_ms,
	                          .kill_group_at_exit = true,
	                          .on_output = host_output,
	                          .on_done = host_done,
	                          .userdata = c,
	                  },
	                  &err, &c->cmd);
	for (size_t i = 0; i < envc; i++)
		free(names[i]);
	if (r < 0) {
		snprintf(msg, size, "cloister: %s: cannot start: %s\n", c->req->tool, err.msg);
		return 126; /* as a shell does for a program it found but could not run */
	}
	return 0;
}

/* ---- mirror strategy: shim_spawn.h ------------------------------------------------------ */

static int mirror_start(struct shim_call *c, char *const *argv, char *msg, size_t size)
{
	struct shim_server *s = c->server;
	struct shim_spawn_request sr = {0};
	struct shim_spawn_result res;
	gid_t groups[SHIM_SPAWN_MAX_GROUPS];
	_cleanup_close_ int tfd = -EBADF;
	size_t ngroups = 0;
	int r;

	sr.worktree = s->worktree;
	sr.cwd_relative = c->cwd_relative;
	sr.tool = c->req->tool;
	sr.argv = argv;
	sr.env = c->env;
	sr.path = env_lookup(c->env, "PATH");
	sr.shim_dir = s->shim_dir;
	if (s->config.target_pid > 0) {
		sr.target_pid = s->config.target_pid;
		tfd = (int)syscall(SYS_pidfd_open, sr.target_pid, 0);
		sr.target_pidfd = tfd;
	} else {
		sr.target_pid = c->peer_pid;
		sr.target_pidfd = c->peer_pidfd;
	}
	if (sr.target_pid > 0 && c->peer_pid > 0)
		(void)shim_spawn_read_groups(c->peer_pid, groups, ELEMENTSOF(groups), &ngroups);
	sr.uid = c->uid;
	sr.gid = c->gid;
	sr.groups = groups;
	sr.ngroups = ngroups;
	r = sr.target_pid <= 0 || sr.target_pidfd < 0 ? -ESRCH : shim_spawn(&sr, &res);
	if (r < 0) {
		snprintf(msg, size, "cloister: %s: cannot start: %s\n", c->req->tool,
		         r == -ESRCH ? "the target container is gone" : strerror(-r));
		return -1;
	}
	c->pid = res.pid;
	c->pidfd = res.pidfd;
	c->pipe_fd[0] = res.stdout_fd;
	c->pipe_fd[1] = res.stderr_fd;
	if (c->timer)
		loop_cancel_timer(s->loop, c->timer);
	c->timer = NULL;
	if (loop_add_fd(s->loop, c->pidfd, EPOLLIN, pidfd_handler, c) < 0 ||
	    loop_add_fd(s->loop, c->pipe_fd[0], EPOLLIN, pipe_handler, c) < 0 ||
	    loop_add_fd(s->loop, c->pipe_fd[1], EPOLLIN, pipe_handler, c) < 0 ||
	    loop_add_timer(s->loop,
	                   loop_now_ms() + (s->config.timeout_ms ? s->config.timeout_ms
	                                                         : SHIM_SERVER_TIMEOUT_DEFAULT_MS),
	                   command_timeout, c, &c->timer) < 0) {
		/* Without the loop (or without its timeout) we cannot follow it: kill it, and
		 * close what was registered (a reaped pidfd stays readable); the exit frame says
		 * -1. */
		c->timed_out = true;
		call_reap(c, true);
		c->exited = true;
		call_close_fd(c, &c->pidfd);
		call_close_fd(c, &c->pipe_fd[0]);
		call_close_fd(c, &c->pipe_fd[1]);
		return 0;
	}
	return 0;
}

/* The call was allowed: ack it and start the command. A command that cannot start ends the
 * call with a line on stderr and the exit status STATUS a *_start() returned. */
static void call_start(struct shim_call *c)
{
	char **argv, msg[700];
	int status;

	argv = calloc(c->req->argc + 1, sizeof(*argv));
	if (!argv) {
		call_deny(c, "cloister: out of memory");
		return;
	}
	memcpy(argv, c->req->argv, c->req->argc * sizeof(*argv));
	argv[0] = c->req->tool; /* what the policy saw; multi-call binaries need it too */
	c->state = CALL_RUNNING;
	if (c->server->config.strategy == SHIM_STRATEGY_MIRROR)
		status = mirror_start(c, argv, msg, sizeof(msg));
	else
		status = host_start(c, argv, msg, sizeof(msg));
	free(argv);

	(void)call_queue_byte(c, CL_ACK_ALLOWED);
	if (status != 0) {
		call_queue_text(c, CL_FRAME_STDERR, msg);
		call_queue_exit(c, status);
		call_finished(c, status);
		call_close_after_flush(c);
	} else if (c->exited) {
		call_end_run(c);
	}
}

/* ---- the owner's answer ------------------------------------------------------------------- */

int shim_call_answer(struct shim_call *c, enum shim_verdict verdict, const char *reason)
{
	if (c->state != CALL_DECIDING && c->state != CALL_PENDING)
		return -EINVAL;
	if (verdict == SHIM_PENDING) {
		if (c->state != CALL_DECIDING)
			return -EINVAL;
		c->state = CALL_PENDING;
		(void)call_queue_byte(c, CL_ACK_PENDING);
	} else if (verdict == SHIM_DENY) {
		call_deny(c, reason);
		call_finished(c, SHIM_SERVER_STATUS_DENIED);
	} else if (verdict == SHIM_ALLOW) {
		call_start(c);
	} else {
		return -EINVAL;
	}
	/* Flushing happens from the loop: the owner may be inside decide(), and the call must
	 * outlive this function. */
	call_update_events(c);
	if (c->fd >= 0 && loop_mod_fd(c->server->loop, c->fd, EPOLLIN | EPOLLRDHUP | EPOLLOUT) < 0)
		call_lost_loop(c);
	return 0;
}

/* ---- requests ----------------------------------------------------------------------------- */

/* Equal in time that depends only on the length of the secret we hold. */
static bool token_equal(const char *ours, const char *theirs)
{
	size_t a = strlen(ours), b = theirs ? strnlen(theirs, CL_MESSAGE_MAX_SECRET + 1) : 0;
	unsigned char diff = (unsigned char)(a != b);

	for (size_t i = 0; i < a; i++)
		diff |= (unsigned char)(ours[i] ^ (i < b ? theirs[i] : 0));
	return diff == 0;
}

static void call_request(struct shim_call *c, const uint8_t *json, size_t len)
{
	struct shim_server *s = c->server;
	struct cl_error err = {""};
	char msg[700];
	int r;

	r = cl_exec_request_parse((const char *)json, len, &err, &c->req);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "cloister: bad request: %s", err.msg);
		call_deny(c, msg);
		call_finished(c, SHIM_SERVER_STATUS_BROKEN);
		return;
	}
	if (c->tcp) {
		bool ok = token_equal(s->token, c->req->token);

		if (!ok) {
			call_deny(c, "cloister: the token is missing or wrong");
			call_finished(c, SHIM_SERVER_STATUS_BROKEN);
			return;
		}
		c->uid = c->req->uid;
		c->gid = c->req->gid;
		if (c->uid == 0 && s->config.strategy == SHIM_STRATEGY_MIRROR &&
		    !s->config.allow_root) {
			call_deny(c, "cloister: running as root over TCP is not allowed");
			call_finished(c, SHIM_SERVER_STATUS_BROKEN);
			return;
		}
	} else if (c->req->uid != c->uid || c->req->gid != c->gid) {
		snprintf(msg, sizeof(msg),
		         "cloister: the request claims uid %u gid %u but the caller is uid %u "
		         "gid %u",
		         c->req->uid, c->req->gid, (unsigned)c->uid, (unsigned)c->gid);
		call_deny(c, msg);
		call_finished(c, SHIM_SERVER_STATUS_BROKEN);
		return;
	}

	r = path_boundary_check(s->worktree, c->req->cwd, &err, &c->cwd_relative);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "cloister: %s", err.msg);
		call_deny(c, msg);
		call_finished(c, SHIM_SERVER_STATUS_DENIED);
		return;
	}
	r = env_scrub(s->config.env_rules ? s->config.env_rules : &env_scrub_default_rules,
	              c->req->env, c->req->envc, &err, &c->env, &c->envc, &c->env_dropped);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "cloister: %s", err.msg);
		call_deny(c, msg);
		call_finished(c, SHIM_SERVER_STATUS_BROKEN);
		return;
	}
	{
		/* The command as the policy sees it: argv[0] is the tool the shim was called as. */
		const char **argv = calloc(c->req->argc, sizeof(*argv));

		if (!argv) {
			call_deny(c, "cloister: out of memory");
			return;
		}
		memcpy(argv, c->req->argv, c->req->argc * sizeof(*argv));
		argv[0] = c->req->tool;
		r = cl_quote_strv(argv, c->req->argc, &err, &c->command);
		free(argv);
		if (r < 0) {
			snprintf(msg, sizeof(msg), "cloister: %s", err.msg);
			call_deny(c, msg);
			call_finished(c, SHIM_SERVER_STATUS_BROKEN);
			return;
		}
	}
	c->info = (struct shim_call_info){
	        .id = c->id,
	        .request = c->req,
	        .command = c->command,
	        .env = c->env,
	        .envc = c->envc,
	        .env_dropped = c->env_dropped,
	        .tcp = c->tcp,
	        .peer_pid = c->peer_pid,
	        .uid = c->uid,
	        .gid = c->gid,
	};
	/* After the request only cancel frames may come. */
	cl_frame_decoder_done(&c->dec);
	cl_frame_decoder_init(&c->dec, CL_FRAME_MODE_STREAM, 16);
	c->state = CALL_DECIDING;
	if (c->timer)
		loop_cancel_timer(s->loop, c->timer);
	c->timer = NULL;
	s->ops.decide(s->userdata, c, &c->info);
}

/* The shim cancelled or hung up. Returns true when the call was freed. */
static bool call_cancel(struct shim_call *c, bool hung_up)
{
	struct shim_server *s = c->server;

	if (hung_up)
		c->peer_gone = true;
	switch (c->state) {
	case CALL_READING:
		call_finished(c, SHIM_SERVER_STATUS_BROKEN);
		call_free(c);
		return true;
	case CALL_DECIDING:
	case CALL_PENDING:
		if (s->ops.cancelled)
			s->ops.cancelled(s->userdata, c, c->id);
		call_finished(c, SHIM_SERVER_STATUS_BROKEN);
		if (hung_up) {
			call_free(c);
			return true;
		}
		(void)call_queue_byte(c, CL_ACK_DENIED);
		call_queue_text(c, CL_FRAME_STDERR, "cloister: cancelled\n");
		call_close_after_flush(c);
		return false;
	case CALL_RUNNING:
		if (c->cmd) {
			command_cancel(c->cmd); /* SIGTERM, SIGKILL after the grace */
		} else if (!c->exited && !c->killed) {
			c->killed = true;
			kill(-c->pid, SIGKILL);
		}
		return false;
	case CALL_CLOSING:
		if (hung_up) {
			call_free(c);
			return true;
		}
		return false;
	}
	return false;
}

static int request_timeout(struct loop *loop, void *userdata)
{
	struct shim_call *c = userdata;

	c->timer = NULL;
	if (c->state == CALL_READING) {
		call_finished(c, SHIM_SERVER_STATUS_BROKEN);
		call_free(c);
	}
	return 0;
}

/* Feed what the shim sent. Returns true when the call was freed. */
static bool call_input(struct shim_call *c, const uint8_t *p, size_t len)
{
	struct cl_error err = {""};

	while (len > 0 || c->state == CALL_READING) {
		struct cl_frame f;
		size_t used = 0;
		int r = cl_frame_decoder_feed(&c->dec, p, len, &err, &used, &f);

		if (r < 0) {
			if (c->state == CALL_READING) {
				char msg[600];

				snprintf(msg, sizeof(msg), "cloister: bad request: %s", err.msg);
				call_deny(c, msg);
				call_finished(c, SHIM_SERVER_STATUS_BROKEN);
				return false;
			}
			/* Anything but a cancel after the request: treat it as one. */
			return call_cancel(c, true);
		}
		p += used;
		len -= used;
		if (r == 0)
			return false;
		if (c->state == CALL_READING) {
			call_request(c, f.payload, f.len);
			continue;
		}
		if (f.type != CL_FRAME_CANCEL)
			return call_cancel(c, true);
		if (call_cancel(c, false))
			return true;
	}
	return false;
}

static int call_handler(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct shim_call *c = userdata;
	static uint8_t buf[READ_CHUNK];

	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
		ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			/* spurious */
		} else if (n <= 0) {
			if (call_cancel(c, true))
				return 0;
		} else if (c->state == CALL_CLOSING) {
			/* Ignore late bytes; the call is ending. */
		} else if (call_input(c, buf, (size_t)n)) {
			return 0;
		}
	}
	if (!c->peer_gone && call_flush(c) < 0) {
		if (call_cancel(c, true))
			return 0;
	}
	if (c->state == CALL_CLOSING && (c->peer_gone || c->out_len == c->out_off) &&
	    (c->pid <= 0 || c->exited)) {
		call_free(c);
		return 0;
	}
	if (c->peer_gone && c->fd >= 0)
		call_close_fd(c, &c->fd);
	call_update_events(c);
	return 0;
}

/* ---- listeners ------------------------------------------------------------------------------ */

static int accept_handler(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct shim_server *s = userdata;
	size_t max = s->config.max_calls ? s->config.max_calls : SHIM_SERVER_MAX_CALLS_DEFAULT;

	for (;;) {
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct shim_call *c;

		if (cfd < 0)
			return 0; /* EAGAIN, or a connection that died in the backlog */
		if (s->ncalls >= max) {
			close(cfd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(cfd);
			continue;
		}
		c->server = s;
		c->fd = cfd;
		c->pidfd = c->pipe_fd[0] = c->pipe_fd[1] = c->peer_pidfd = -EBADF;
		c->id = ++s->next_id;
		c->tcp = fd == s->tcp_fd;
		cl_frame_decoder_init(&c->dec, CL_FRAME_MODE_REQUEST, 0);
		output_cap_init(&c->cap[0], s->config.output_max, s->config.output_tail);
		output_cap_init(&c->cap[1], s->config.output_max, s->config.output_tail);
		if (!c->tcp) {
			struct ucred cred;
			socklen_t len = sizeof(cred);

			if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
				close(cfd);
				free(c);
				continue;
			}
			c->peer_pid = cred.pid;
			c->uid = cred.uid;
			c->gid = cred.gid;
			/* Pin the caller now: its pid must not be reused under us. */
			c->peer_pidfd = (int)syscall(SYS_pidfd_open, cred.pid, 0);
		} else {
			int one = 1;

			(void)setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		}
		c->next = s->calls;
		if (s->calls)
			s->calls->prev = c;
		s->calls = c;
		s->ncalls++;
		if (loop_add_fd(loop, cfd, EPOLLIN | EPOLLRDHUP, call_handler, c) < 0 ||
		    loop_add_timer(loop, loop_now_ms() + SHIM_SERVER_REQUEST_TIMEOUT_MS,
		                   request_timeout, c, &c->timer) < 0) {
			call_free(c);
			continue;
		}
	}
}

static int listen_unix(struct shim_server *s, struct cl_error *err)
{
	const struct shim_server_config *cfg = &s->config;
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	_cleanup_close_ int fd = -EBADF;
	struct stat st;

	if (strlen(s->unix_path) >= sizeof(sun.sun_path))
		return cl_error_set(err, -ENAMETOOLONG, "shim socket path %s is too long",
		                    s->unix_path);
	strcpy(sun.sun_path, s->unix_path);
	if (lstat(s->unix_path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return cl_error_set(err, -EEXIST, "%s exists and is not a socket",
			                    s->unix_path);
		unlink(s->unix_path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return cl_error_set(err, -errno, "socket: %s", strerror(errno));
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
		return cl_error_set(err, -errno, "bind %s: %s", s->unix_path, strerror(errno));
	/* Mode and owner before listen(): until then nobody can connect. */
	if (chmod(s->unix_path, cfg->unix_mode ? cfg->unix_mode : 0666) < 0 ||
	    ((cfg->unix_owner != (uid_t)-1 || cfg->unix_group != (gid_t)-1) &&
	     lchown(s->unix_path, cfg->unix_owner, cfg->unix_group) < 0)) {
		int e = errno;

		unlink(s->unix_path);
		return cl_error_set(err, -e, "set mode/owner of %s: %s", s->unix_path, strerror(e));
	}
	if (listen(fd, 64) < 0) {
		int e = errno;

		unlink(s->unix_path);
		return cl_error_set(err, -e, "listen %s: %s", s->unix_path, strerror(e));
	}
	s->unix_fd = TAKE_FD(fd);
	return 0;
}

static int listen_tcp(struct shim_server *s, struct cl_error *err)
{
	struct sockaddr_storage ss;
	struct tcp_listen_options lo = {.backlog = 64};
	socklen_t len;
	int r;

	r = cl_address_parse_listen(s->config.tcp_listen, err, &ss, &len);
	if (r < 0) {
		cl_error_prefix(err, "shim TCP listener");
		return r;
	}
	r = tcp_listen(&ss, len, &lo, &s->tcp_fd, &s->tcp_port);
	if (r < 0)
		return cl_error_set(err, r, "listen on %s: %s", s->config.tcp_listen, strerror(-r));
	return 0;
}

void shim_server_free(struct shim_server *s)
{
	if (!s)
		return;
	while (s->calls) {
		struct shim_call *c = s->calls;

		if ((c->state == CALL_DECIDING || c->state == CALL_PENDING) && s->ops.cancelled)
			s->ops.cancelled(s->userdata, c, c->id);
		call_free(c);
	}
	if (s->unix_fd >= 0) {
		loop_del_fd(s->loop, s->unix_fd);
		close(s->unix_fd);
		unlink(s->unix_path);
	}
	if (s->tcp_fd >= 0) {
		loop_del_fd(s->loop, s->tcp_fd);
		close(s->tcp_fd);
	}
	free(s->unix_path);
	free(s->worktree);
	if (s->token) {
		explicit_bzero(s->token, strlen(s->token));
		free(s->token);
	}
	free(s->shim_dir);
	free(s);
}

CL_DEFINE_TRIVIAL_CLEANUP(struct shim_server *, shim_server_free)

int shim_server_new(struct loop *loop, const struct shim_server_config *config,
                    const struct shim_server_ops *ops, void *userdata, struct cl_error *err,
                    struct shim_server **ret)
{
	_cleanup_(shim_server_freep) struct shim_server *s = NULL;
	int r;

	if (!ops || !ops->decide)
		return cl_error_set(err, -EINVAL, "shim server: no decide callback");
	if (!config->unix_path && !config->tcp_listen)
		return cl_error_set(err, -EINVAL, "shim server: no listener configured");
	if (config->tcp_listen && (!config->token || !config->token[0]))
		return cl_error_set(err, -EINVAL, "shim server: a TCP listener needs a token");
	if (!config->worktree || config->worktree[0] != '/')
		return cl_error_set(err, -EINVAL, "shim server: the worktree must be absolute");
	if (config->output_tail > config->output_max && config->output_max)
		return cl_error_set(err, -EINVAL, "shim server: output tail above the maximum");

	s = calloc(1, sizeof(*s));
	if (!s)
		return cl_error_set(err, -ENOMEM, "out of memory");
	s->loop = loop;
	s->config = *config;
	s->ops = *ops;
	s->userdata = userdata;
	s->unix_fd = s->tcp_fd = -EBADF;
	r = path_normalize(config->worktree, err, &s->worktree);
	if (r < 0)
		return r;
	s->shim_dir = strdup(config->shim_dir ? config->shim_dir : DEFAULT_SHIMDIR);
	s->unix_path = config->unix_path ? strdup(config->unix_path) : NULL;
	s->token = config->token ? strdup(config->token) : NULL;
	if (!s->shim_dir || (config->unix_path && !s->unix_path) || (config->token && !s->token))
		return cl_error_set(err, -ENOMEM, "out of memory");
	/* Pointers into the caller's memory must not outlive the call. */
	s->config.unix_path = s->config.tcp_listen = s->config.token = NULL;
	s->config.worktree = s->config.shim_dir = NULL;

	if (s->unix_path) {
		r = listen_unix(s, err);
		if (r < 0)
			return r;
		r = loop_add_fd(loop, s->unix_fd, EPOLLIN, accept_handler, s);
		if (r < 0)
			return cl_error_set(err, r, "loop: %s", strerror(-r));
	}
	if (config->tcp_listen) {
		s->config.tcp_listen = config->tcp_listen;
		r = listen_tcp(s, err);
		s->config.tcp_listen = NULL;
		if (r < 0)
			return r;
		r = loop_add_fd(loop, s->tcp_fd, EPOLLIN, accept_handler, s);
		if (r < 0)
			return cl_error_set(err, r, "loop: %s", strerror(-r));
	}
	*ret = TAKE_PTR(s);
	return 0;
}

unsigned shim_server_tcp_port(const struct shim_server *s)
{
	return s->tcp_port;
}

int shim_server_cancel(struct shim_server *server, uint64_t id)
{
	for (struct shim_call *c = server->calls; c; c = c->next) {
		if (c->id != id)
			continue;
		if (c->state != CALL_RUNNING)
			return -EALREADY;
		call_cancel(c, false);
		return 0;
	}
	return -ENOENT;
}
