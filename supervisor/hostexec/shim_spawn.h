/* Starting the command of an approved shim call with the mirror strategy: the thin syscall
 * shell of the shim server for what needs a forked child of its own.
 *
 * In the child, enter the target process's user, mount, pid, net, uts, ipc and cgroup
 * namespaces (those that differ from ours; one setns() on a pidfd), fork again when the pid
 * namespace changed, enter the cwd on the target's filesystem beneath the worktree
 * (child_setup.h), look the tool up (shim_find_tool), drop to the caller's uid, gid and groups
 * and exec it. A locked original is mode 0750 root:<lock group>, so the lock group joins the
 * command's groups: the command may run what its caller may not.
 *
 * The child leads a new session, so kill(-pid, …) reaches everything it starts (in the
 * target's pid namespace too); it dies with the supervisor (PR_SET_PDEATHSIG). stdin is
 * /dev/null; stdout and stderr are pipes. A failure in the child is one line on its stderr
 * ("cloister: npm: not found on PATH (outside /cloister/bin)") and exit 126 (cannot run) or
 * 127 (not found).
 *
 * The host strategy needs none of this: the server runs it through command.h. */
#ifndef CLOISTER_SHIM_SPAWN_H
#define CLOISTER_SHIM_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SHIM_SPAWN_MAX_GROUPS 64

struct shim_spawn_request {
	pid_t target_pid;         /* a process of the target container */
	int target_pidfd;         /* its pidfd (taken early, so a reused pid cannot fool us) */
	const char *worktree;     /* absolute, as the target's mount namespace sees it */
	const char *cwd_relative; /* from path_boundary_check(): "." or "a/b" */
	const char *tool;         /* name to look up */
	char *const *argv;        /* argv[0] as the tool should see it */
	char *const *env;         /* already scrubbed */
	const char *path;         /* PATH to search; NULL: a standard one */
	const char *shim_dir;     /* skipped while searching, e.g. "/cloister/bin"; may be NULL */
	uid_t uid;                /* become uid/gid/groups before exec */
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

/* The executable a shim call of TOOL runs: the `<tool>.original` install-shim.sh locked away
 * anywhere on PATH (NULL or empty: a standard one), else the first `<tool>`; relative PATH
 * entries, SHIM_DIR (may be NULL) and the shim binary itself under any name are skipped.
 * Fills out (size bytes) and *ret_locked_gid (the original's group, or (gid_t)-1); returns 0,
 * or -ENOENT. Looks at the filesystem of whoever calls it (the mirror child: the target's). */
int shim_find_tool(const char *path, const char *shim_dir, const char *tool, char *out, size_t size,
                   gid_t *ret_locked_gid);

/* The supplementary groups of process PID, from /proc/PID/status (at most max). */
int shim_spawn_read_groups(pid_t pid, gid_t *groups, size_t max, size_t *ret_n);

#endif
