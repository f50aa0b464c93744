/* Landlock for the sandbox: probe the kernel's ABI, build a ruleset, restrict the calling
 * process (and everything it starts) with it.
 *
 * The ruleset holds scopes (ABI >= 6): LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (the agent cannot
 * connect or send to an abstract unix socket created outside its domain, which matters on the
 * host's network, where those sockets are the host's) and LANDLOCK_SCOPE_SIGNAL (it cannot
 * signal a process outside its domain); and the file system's write rights (ABI >= 1): every
 * right that changes a file or a directory is handled, and granted only beneath the plan's
 * paths. Reading and executing are not handled: they stay free (fs.hide is the mount
 * layer's). Landlock has no deny rule, so it cannot keep a protected path read-only inside a
 * writable one: that is the mount layer's alone.
 *
 * Landlock is unprivileged and stackable; restricting needs NO_NEW_PRIVS (or CAP_SYS_ADMIN),
 * and nothing can lift a restriction once applied. */
#ifndef CLOISTER_SUPERVISOR_LANDLOCK_H
#define CLOISTER_SUPERVISOR_LANDLOCK_H

#include <stddef.h>
#include <stdint.h>

/* Debian 12's <linux/landlock.h> predates scopes (ABI 6). */
#define CL_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define CL_LANDLOCK_SCOPE_SIGNAL               (1ULL << 1)

/* LANDLOCK_ACCESS_FS_*, by value: older headers lack the later ones. */
#define CL_LANDLOCK_FS_WRITE_FILE  (1ULL << 1)
#define CL_LANDLOCK_FS_REMOVE_DIR  (1ULL << 4)
#define CL_LANDLOCK_FS_REMOVE_FILE (1ULL << 5)
#define CL_LANDLOCK_FS_MAKE_CHAR   (1ULL << 6)
#define CL_LANDLOCK_FS_MAKE_DIR    (1ULL << 7)
#define CL_LANDLOCK_FS_MAKE_REG    (1ULL << 8)
#define CL_LANDLOCK_FS_MAKE_SOCK   (1ULL << 9)
#define CL_LANDLOCK_FS_MAKE_FIFO   (1ULL << 10)
#define CL_LANDLOCK_FS_MAKE_BLOCK  (1ULL << 11)
#define CL_LANDLOCK_FS_MAKE_SYM    (1ULL << 12)
#define CL_LANDLOCK_FS_REFER       (1ULL << 13) /* ABI 2 */
#define CL_LANDLOCK_FS_TRUNCATE    (1ULL << 14) /* ABI 3 */
#define CL_LANDLOCK_FS_IOCTL_DEV   (1ULL << 15) /* ABI 5 */

/* A directory (or file) beneath which RIGHTS are granted. */
struct landlock_path_rule {
	const char *path;
	uint64_t rights; /* CL_LANDLOCK_FS_*; masked to the handled ones, and for a file to the
	                    rights a file can have */
};

/* What the sandbox asks Landlock for. */
struct landlock_plan {
	uint64_t scoped;     /* CL_LANDLOCK_SCOPE_* */
	uint64_t handled_fs; /* CL_LANDLOCK_FS_*: 0 leaves the file system alone */
	const struct landlock_path_rule *rules;
	size_t n_rules;
};

/* The kernel's Landlock ABI version (>= 1), 0 when Landlock is absent or disabled (ENOSYS,
 * EOPNOTSUPP), or -errno when the probe failed otherwise. No effect on the caller. */
int landlock_abi(void);

/* The scopes an ABI supports (pure): 0 below ABI 6. */
uint64_t landlock_scopes_supported(int abi);

/* The write rights an ABI can handle (pure): 0 below ABI 1. */
uint64_t landlock_fs_write_rights(int abi);

/* Restrict the calling thread with PLAN (the caller sets NO_NEW_PRIVS first, and applies it in
 * a single-threaded process so every later thread and child inherits it). A plan with nothing
 * in it is a no-op. -EOPNOTSUPP when the kernel cannot do what the plan asks (no Landlock, or
 * a scope the ABI lacks): the caller decided from landlock_abi() what to ask for, so this only
 * happens if the kernel changed its mind. A rule's path that does not exist is skipped; another
 * failure to open it or add it fails with -errno and *ret_failed_path (when not NULL) naming
 * it. */
int landlock_restrict(const struct landlock_plan *plan, const char **ret_failed_path);

#endif
