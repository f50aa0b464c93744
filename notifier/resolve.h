/* Resolving an exec's path the way the kernel will for the process that asked.
 *
 * We resolve below the target's root (its /proc/PID/root) and from its cwd or dirfd, which
 * openat2(RESOLVE_IN_ROOT) does in one call. What it cannot do is procfs as the target sees it:
 * /proc/self and /proc/thread-self name the process that looks (for us, nobody in the sandbox's
 * pid namespace: ENOENT), and magic links (/proc/PID/fd/N, exe, cwd, root) are refused in a
 * scoped lookup. /dev/fd/N, /proc/self/fd/N, /proc/thread-self/fd/N and /proc/<its pid>/fd/N
 * are all ways to name an open file. So:
 *
 *   1. openat2(RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS): a hit or a miss without a symlink on the
 *      way is what the kernel sees too (PATH probing: one call per candidate).
 *   2. with symlinks (RESOLVE_IN_ROOT): a hit is trusted — through procfs it could only have
 *      ended at a procfs entry, never executable for anyone; a miss is trusted only if 1 missed
 *      before meeting any symlink.
 *   3. otherwise a walk of our own, one component at a time: symlinks read and followed (at
 *      most 40, ".." stopping at the target's root), "self" and "thread-self" in a procfs root
 *      replaced by the target's ids in that procfs's pid namespace, and other procfs links
 *      followed as the kernel follows magic links.
 *
 * A failure is the errno the kernel would give the exec (ENOENT, ENOTDIR, ELOOP, EACCES…), so
 * the caller can answer it without letting the kernel look again. Kernel-facing; the ids come
 * from the caller (proc_status). */
#ifndef CLOISTER_NOTIFIER_RESOLVE_H
#define CLOISTER_NOTIFIER_RESOLVE_H

#include <stdbool.h>
#include <sys/types.h>

struct proc_status;

struct resolve_target {
	int root; /* the target's root directory (O_PATH): absolute paths start, ".." stops here */
	int piddir; /* its /proc/TID directory in our procfs, or -EBADF: then named by pid */
	pid_t pid;  /* with piddir -EBADF: its TID in our pid namespace */
	/* Its /proc/TID/status, read on first use: only a "self" in a procfs needs it. */
	int (*status)(void *userdata, const struct proc_status **ret);
	void *userdata;
};

/* A final symlink fails with ELOOP (execveat's AT_SYMLINK_NOFOLLOW). */
#define RESOLVE_EXEC_NOFOLLOW 1u

/* Resolve PATH (non-empty) for the target: absolute from its root, relative from BASE (a
 * directory fd of the target's: its cwd, an execveat dirfd). BASE_NAME is BASE's path in the
 * target's view when known (NULL otherwise): with it, a relative path is tried in one call
 * below the root. Returns an O_PATH | O_CLOEXEC fd of the file, or the -errno the kernel
 * would fail the lookup with. */
int resolve_exec_path(const struct resolve_target *t, int base, const char *base_name,
                      const char *path, unsigned flags);

/* The same, with a hint on the order of steps 1 and 2: *SYMLINKS true tries step 2 first (one
 * call instead of two for a path through a symlink, as /bin/x is on a merged /usr; a miss then
 * costs both). On return, *SYMLINKS says whether the path went through a symlink, as a hint
 * for the next path in the same directory. The hint never changes the result, only its cost.
 *
 * RET_NAME (may be NULL): when the file was found through no symlink and no magic link at all
 * (step 1), its name below the target's root, made tidy (path.h): every component was a real
 * directory and each ".." its real parent, so it is the name the kernel would show for the
 * fd from that root (as /proc/self/fd/N does when that root is ours), without a readlink.
 * Else *RET_NAME is left as it was (NULL for the caller to read the name itself). */
int resolve_exec_path_hinted(const struct resolve_target *t, int base, const char *base_name,
                             const char *path, unsigned flags, bool *symlinks, char **ret_name);

/* Step 3 alone (for tests and for what step 1 and 2 cannot judge). */
int resolve_walk(const struct resolve_target *t, int base, const char *path, unsigned flags);

#endif
