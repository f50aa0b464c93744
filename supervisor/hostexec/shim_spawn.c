#include "supervisor/hostexec/shim_spawn.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/child_setup.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define SHIM_BINARY  "cloister-shim"

static const struct {
	const char *name;
	int flag;
} namespaces[] = {
        {"user", CLONE_NEWUSER},     {"mnt", CLONE_NEWNS},  {"pid", CLONE_NEWPID},
        {"net", CLONE_NEWNET},       {"uts", CLONE_NEWUTS}, {"ipc", CLONE_NEWIPC},
        {"cgroup", CLONE_NEWCGROUP},
};

/* The namespaces of PID that are not ours: setns() refuses to "enter" the user namespace we
 * are already in, and entering the others again would be a no-op. */
static int foreign_namespaces(pid_t pid, int *ret_flags)
{
	int flags = 0;

	for (size_t i = 0; i < ELEMENTSOF(namespaces); i++) {
		char path[64];
		struct stat theirs, ours;

		snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, namespaces[i].name);
		if (stat(path, &theirs) < 0)
			return errno == ENOENT ? -ESRCH : -errno;
		snprintf(path, sizeof(path), "/proc/self/ns/%s", namespaces[i].name);
		if (stat(path, &ours) < 0)
			return -errno;
		if (theirs.st_dev != ours.st_dev || theirs.st_ino != ours.st_ino)
			flags |= namespaces[i].flag;
	}
	*ret_flags = flags;
	return 0;
}

int shim_spawn_read_groups(pid_t pid, gid_t *groups, size_t max, size_t *ret_n)
{
	_cleanup_fclose_ FILE *f = NULL;
	char path[64], line[4096];
	size_t n = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f)) {
		char *p, *end;

		if (strncmp(line, "Groups:", 7) != 0)
			continue;
		for (p = line + 7;; p = end) {
			unsigned long v;

			while (*p == ' ' || *p == '\t')
				p++;
			if (*p < '0' || *p > '9')
				break;
			errno = 0;
			v = strtoul(p, &end, 10);
			if (errno || v > UINT32_MAX - 1)
				return -EINVAL;
			if (n == max)
				return -E2BIG;
			groups[n++] = (gid_t)v;
		}
		*ret_n = n;
		return 0;
	}
	return -EINVAL;
}

/* ---- in the child: async-signal-safe-ish, no allocation ---------------------------------------
 */

__attribute__((noreturn, format(printf, 3, 4))) static void child_fail(int code, const char *tool,
                                                                       const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int n;

	n = snprintf(msg, sizeof(msg), "cloister: %s: ", tool);
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(msg))
		n += vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof(msg) - 2)
		n = (int)sizeof(msg) - 2;
	msg[n++] = '\n';
	(void)!write(STDERR_FILENO, msg, (size_t)n);
	_exit(code);
}

/* The shim itself, under whatever name: never run it (it would call us again). */
static bool is_shim(const char *path)
{
	char target[PATH_MAX];
	const char *base;

	if (!realpath(path, target))
		return false;
	base = strrchr(target, '/');
	return strcmp(base ? base + 1 : target, SHIM_BINARY) == 0;
}

static bool is_executable_file(const char *path, struct stat *st)
{
	return stat(path, st) == 0 && S_ISREG(st->st_mode) && (st->st_mode & 0111);
}

int shim_find_tool(const char *path, const char *shim_dir, const char *tool, char *out, size_t size,
                   gid_t *ret_locked_gid)
{
	if (!path || !*path)
		path = DEFAULT_PATH;
	for (int pass = 0; pass < 2; pass++) {
		const char *p = path;

		while (*p) {
			const char *colon = strchr(p, ':');
			size_t dlen = colon ? (size_t)(colon - p) : strlen(p);
			struct stat st;
			int n;

			/* Relative entries would be looked up in the caller's cwd: skip them. */
			if (dlen > 0 && p[0] == '/' &&
			    !(shim_dir && strlen(shim_dir) == dlen &&
			      strncmp(p, shim_dir, dlen) == 0)) {
				n = snprintf(out, size, "%.*s/%s%s", (int)dlen, p, tool,
				             pass == 0 ? ".original" : "");
				if (n > 0 && (size_t)n < size && is_executable_file(out, &st) &&
				    !is_shim(out)) {
					*ret_locked_gid = pass == 0 ? st.st_gid : (gid_t)-1;
					return 0;
				}
			}
			p += dlen;
			if (*p == ':')
				p++;
		}
	}
	return -ENOENT;
}

__attribute__((noreturn)) static void run_command(const struct shim_spawn_request *req)
{
	gid_t groups[SHIM_SPAWN_MAX_GROUPS + 1];
	size_t ngroups = 0;
	char exe[PATH_MAX];
	gid_t locked_gid = (gid_t)-1;
	int cwd;

	/* Opened as root, entered as the caller (fchdir checks the caller's search right). */
	cwd = child_setup_open_beneath(req->worktree, req->cwd_relative);
	if (cwd < 0)
		child_fail(126, req->tool, "the cwd is not a directory inside the worktree %s: %s",
		           req->worktree, strerror(-cwd));
	if (shim_find_tool(req->path, req->shim_dir, req->tool, exe, sizeof(exe), &locked_gid) < 0)
		child_fail(127, req->tool, "not found on PATH (outside %s)",
		           req->shim_dir ? req->shim_dir : "the shim directory");

	for (size_t i = 0; i < req->ngroups && i < SHIM_SPAWN_MAX_GROUPS; i++)
		groups[ngroups++] = req->groups[i];
	if (locked_gid != (gid_t)-1)
		groups[ngroups++] = locked_gid;
	if (setgroups(ngroups, groups) < 0 || setgid(req->gid) < 0 || setuid(req->uid) < 0)
		child_fail(126, req->tool, "cannot become uid %u gid %u: %s", (unsigned)req->uid,
		           (unsigned)req->gid, strerror(errno));
	/* Refuse to go on with privileges left: setuid must not be undoable. */
	if (req->uid != 0 && setuid(0) == 0)
		child_fail(126, req->tool, "could not drop privileges");
	if (fchdir(cwd) < 0)
		child_fail(126, req->tool, "cannot enter the cwd: %s", strerror(errno));
	execve(exe, req->argv, req->env);
	child_fail(errno == ENOENT ? 127 : 126, req->tool, "cannot run %s: %s", exe,
	           strerror(errno));
}

__attribute__((noreturn)) static void child(const struct shim_spawn_request *req, int ns_flags,
                                            int out_fd, int err_fd, pid_t parent)
{
	int null_fd;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(127);
	child_setup_reset_signals();
	setsid();
	null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
	    dup2(err_fd, STDERR_FILENO) < 0)
		_exit(126);

	if (ns_flags) {
		if (syscall(SYS_setns, req->target_pidfd, ns_flags) < 0)
			child_fail(126, req->tool, "cannot enter the target's namespaces: %s",
			           strerror(errno));
		if (ns_flags & CLONE_NEWPID) {
			/* Only children join a pid namespace: run the command in one, wait, and
			 * report its status as the shell would. */
			int status;
			pid_t pid = fork();

			if (pid < 0)
				child_fail(126, req->tool, "fork: %s", strerror(errno));
			if (pid == 0) {
				if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
					_exit(127);
				run_command(req);
			}
			while (waitpid(pid, &status, 0) < 0)
				if (errno != EINTR)
					_exit(126);
			if (WIFSIGNALED(status))
				_exit(128 + WTERMSIG(status));
			_exit(WEXITSTATUS(status));
		}
	}
	run_command(req);
}

int shim_spawn(const struct shim_spawn_request *req, struct shim_spawn_result *ret)
{
	_cleanup_close_ int out_r = -EBADF, out_w = -EBADF, err_r = -EBADF, err_w = -EBADF;
	int fds[2], ns_flags = 0, r, pidfd;
	pid_t parent = getpid(), pid;

	if (!req->worktree || req->worktree[0] != '/' || !req->cwd_relative || !req->tool ||
	    !req->argv || !req->argv[0] || !req->env)
		return -EINVAL;
	if (req->target_pid <= 0 || req->target_pidfd < 0)
		return -EINVAL;
	r = foreign_namespaces(req->target_pid, &ns_flags);
	if (r < 0)
		return r;
	/* The pid may have been reused while we looked: the pidfd says. */
	if (syscall(SYS_pidfd_send_signal, req->target_pidfd, 0, NULL, 0) < 0)
		return -ESRCH;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	out_r = fds[0];
	out_w = fds[1];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	err_r = fds[0];
	err_w = fds[1];

	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		child(req, ns_flags, out_w, err_w, parent);

	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		r = -errno;
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return r;
	}
	if (fcntl(out_r, F_SETFL, O_NONBLOCK) < 0 || fcntl(err_r, F_SETFL, O_NONBLOCK) < 0) {
		r = -errno;
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(pidfd);
		return r;
	}
	ret->pid = pid;
	ret->pidfd = pidfd;
	ret->stdout_fd = TAKE_FD(out_r);
	ret->stderr_fd = TAKE_FD(err_r);
	return 0;
}
