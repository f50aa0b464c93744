/* What a sandbox takes away from the agent beyond its own namespaces, so that nothing but the
 * proxy is reachable, the next run's policy and audit trail stay out of reach, and a root agent
 * is contained too:
 *
 *   - sockets of the user's other programs: a private /tmp (a tmpfs; the working directory and
 *     the paths run must keep visible are re-bound into it), a private /run/user (with an empty
 *     runtime directory of the agent's own) and $XDG_RUNTIME_DIR, /run/dbus and the directory
 *     of $SSH_AUTH_SOCK hidden, /dev/null bound over every pathname socket of the host's
 *     socket table (read when the run starts) that the sandbox would still see and over every
 *     FIFO in /run and /dev (opened past a read-only mount); its own IPC namespace,
 *     /dev/shm and /dev/mqueue (SysV and POSIX shared memory and message queues of the
 *     host's processes);
 *   - a minimal /dev: null, zero, full, random, urandom, tty, ptmx, a devpts of its own (with a
 *     pty or without: the user's terminals are not there), fd links;
 *     no disks, consoles, input, sound, video, kvm or hugetlbfs;
 *   - the kernel's knobs: /proc/sys, /proc/sysrq-trigger, /proc/irq, /proc/bus, /proc/fs and
 *     /sys read-only, /proc/kcore and friends masked; its own cgroup namespace with a read-only
 *     cgroup2 rooted at its own leaf, so it cannot move itself out of the cgroup that the exec
 *     backstop and the egress hooks are attached to;
 *   - every parent directory of the protected ones (config, audit log, the hidden runtime
 *     directory) made a mount point, writable as before: a mount point cannot be renamed or
 *     removed (EBUSY), so no directory above them can be swapped for one the agent fills;
 *   - the file system (fs_confine.h, the `fs:` section): the tree read-only but fs.write,
 *     fs.protect read-only inside it, fs.hide covered; and Landlock's write rights granted
 *     only beneath fs.write, the private /tmp, /dev/shm, /dev/mqueue and runtime directories
 *     (device nodes in /dev and /proc's files stay writable as files);
 *   - privileges: NO_NEW_PRIVS, every capability set (bounding and ambient included) cut to
 *     confine_kept_capabilities(), the Landlock scopes the plan asks for.
 *
 * sandbox_confine_prepare() runs in the supervisor before the sandbox starts (it reads the
 * host's socket table, which a new network namespace would not show, and resolves paths);
 * the other calls run in the sandbox's init, in its new mount namespace, in the order of
 * their declarations, before the agent is forked. */
#ifndef CLOISTER_SUPERVISOR_SANDBOX_CONFINE_H
#define CLOISTER_SUPERVISOR_SANDBOX_CONFINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "supervisor/sandbox/fs_confine.h"

/* More host sockets than this: the run refuses to start rather than leave some uncovered. */
#define SANDBOX_CONFINE_MAX_SOCKETS 4096

struct sandbox_confine_request {
	/* Paths the agent must keep seeing at their place when they live under /tmp: the config
	 * and audit directories, $HOME, the paths named on the agent's command line. NULL-
	 * terminated, or NULL. The working directory is always kept. */
	const char *const *keep_visible;
	/* Directories whose parents are made mount points: the config and audit directories,
	 * the hidden runtime directory. NULL-terminated, or NULL. */
	const char *const *protect;
	const char *ssh_auth_sock; /* the caller's $SSH_AUTH_SOCK, or NULL */
	const char *runtime_dir;   /* the caller's $XDG_RUNTIME_DIR, or NULL */
	const char *tmpdir;        /* the caller's $TMPDIR, created empty in a private /tmp */
	bool host_network;         /* capabilities: no NET_BIND_SERVICE on the host's network */
	uint64_t landlock_scopes;  /* CL_LANDLOCK_SCOPE_* to apply (landlock.h) */
	/* The file system's mount layer and the plan of Landlock's write rules; taken over by
	 * sandbox_confine_prepare (freed with the plan, also on failure), or NULL: the file
	 * system stays as it is. */
	struct fs_confine *fs;
	uint64_t landlock_fs; /* CL_LANDLOCK_FS_* to handle (0: no Landlock file rules) */
};

struct sandbox_confine;

/* What the plan does, for `run -v`. */
struct sandbox_confine_summary {
	bool private_tmp;    /* false when the working directory is /tmp itself */
	size_t tmp_kept;     /* paths under /tmp re-bound into the private /tmp */
	size_t host_sockets; /* pathname sockets in the host's table, covered where visible */
	size_t pinned;       /* parent directories made mount points */
	uint64_t kept_caps;  /* capabilities kept */
	uint64_t landlock_scopes;
	uint64_t landlock_fs;
};

/* Build the plan. -E2BIG when the host has more than SANDBOX_CONFINE_MAX_SOCKETS pathname
 * sockets; -errno with err filled on other failures. */
int sandbox_confine_prepare(const struct sandbox_confine_request *req, struct sandbox_confine **ret,
                            struct cl_error *err);
void sandbox_confine_summarize(const struct sandbox_confine *c,
                               struct sandbox_confine_summary *ret);
/* The file system's plan in C (NULL: none), for fs_confine_take_sweep(). */
struct fs_confine *sandbox_confine_fs(struct sandbox_confine *c);
void sandbox_confine_free(struct sandbox_confine *c);
CL_DEFINE_TRIVIAL_CLEANUP(struct sandbox_confine *, sandbox_confine_free)

/* ---- in the sandbox's init ---------------------------------------------------------------- */

/* Its own IPC and cgroup namespaces (the init is in its cgroup leaf already). Before /proc is
 * mounted: /proc/sysvipc then shows the new IPC namespace. */
int sandbox_confine_namespaces(const struct sandbox_confine *c, struct cl_error *err);

/* Every mount of the plan but the socket covers: /proc and /sys protections and the cgroup2
 * view, /dev, the private /tmp, the runtime directories, the hidden socket directories and the
 * pinned parents. After /proc and /sys are mounted, before the read-only and hidden paths of
 * sandbox_opts. */
int sandbox_confine_mounts(const struct sandbox_confine *c, struct cl_error *err);

/* /dev/null over each host socket still visible as a socket at its path. After every other
 * mount, so what is hidden anyway costs nothing. */
int sandbox_confine_cover_sockets(const struct sandbox_confine *c, struct cl_error *err);

/* NO_NEW_PRIVS, Landlock, then the capability sets. Last, before the seccomp filter. */
int sandbox_confine_privileges(const struct sandbox_confine *c, struct cl_error *err);

#endif
