/* Starting the command of an approved shim call: the thin syscall shell of the shim server.
 *
 * Mirror strategy (target_pid > 0): in a forked child, enter the target process's user, mount,
 * pid, net, uts, ipc and cgroup namespaces (those that differ from ours; one setns() on a
 * pidfd), fork again when the pid namespace changed, confirm the cwd on the real filesystem
 * (openat2 of the part below the worktree with RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS), look
 * the tool up, drop to the caller's uid, gid and groups and exec it. The tool is the
 * `<tool>.original` install-shim.sh locked away, else the first `<tool>` on PATH outside the
 * shim directory that is not the shim itself. A locked original is mode 0750 root:<lock
 * group>, so the lock group joins the command's groups: the command may run what its caller
 * may not.
 * Host strategy (target_pid 0): the same without namespaces or the privilege drop: the
 * command runs as the supervisor, in the worktree.
 *
 * The child leads a new session, so kill(-pid, …) reaches everything it starts (in the
 * target's pid namespace too); it dies with the supervisor (PR_SET_PDEATHSIG). stdin is
 * /dev/null; stdout and stderr are pipes. A failure in the child is one line on its stderr
 * ("cloister: npm: not found on PATH") and exit 126 (cannot run) or 127 (not found). */
#ifndef CLOISTER_SHIM_SPAWN_H
#define CLOISTER_SHIM_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SHIM_SPAWN_MAX_GROUPS 64

struct shim_spawn_request {
	pid_t target_pid;         /* mirror: a process of the target container; 0: host */
	int target_pidfd;         /* its pidfd (taken early, so a reused pid cannot fool us) */
	const char *worktree;     /* absolute, as the target's mount namespace sees it */
	const char *cwd_relative; /* from path_boundary_check(): "." or "a/b" */
	const char *tool;         /* name to look up */
	char *const *argv;        /* argv[0] as the tool should see it */
	char *const *env;         /* already scrubbed */
	const char *path;         /* PATH to search; NULL: a standard one */
	const char *shim_dir;     /* skipped while searching, e.g. "/cloister/bin"; may be NULL */
	bool drop_privileges;     /* mirror: become uid/gid/groups before exec */
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	size_t ngroups;
};

struct shim_spawn_result {
	pid_t pid; /* leader of the command's session and process group */
	int pidfd;
	int stdout_fd; /* read ends, O_NONBLOCK | O_CLOEXEC */
	int stderr_fd;
};

/* Fork the command. Returns 0 and fills *ret (the caller owns the three fds), or -errno:
 * -ESRCH when the target process is gone, -EINVAL for a bad request. */
int shim_spawn(const struct shim_spawn_request *req, struct shim_spawn_result *ret);

/* The supplementary groups of process PID, from /proc/PID/status (at most max). */
int shim_spawn_read_groups(pid_t pid, gid_t *groups, size_t max, size_t *ret_n);

#endif
