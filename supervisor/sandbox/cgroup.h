/* The sandbox's cgroup v2 leaf: find the cgroup2 mount, create a leaf per sandbox, move a
 * process in, freeze/thaw, kill, remove, and clean up the leaves of supervisors that died.
 *
 * Layout: <parent>/<name>-<pidns inode>-<supervisor pid>-<supervisor start time>, where <parent>
 * is normally <cgroup2 mount>/cloister (see cgroup_default_parent()). The name carries the
 * supervisor's identity so a later supervisor can tell whether the owner is still alive
 * (pid + start time are unique within one boot; cgroupfs does not survive a reboot) and remove
 * the leaves of a crashed one.
 *
 * The parsers (mountinfo, /proc/PID/stat, /proc/PID/cgroup, cgroup.events, leaf names) are pure
 * and unit-tested; the rest is a thin shell over cgroupfs. */
#ifndef CLOISTER_SUPERVISOR_CGROUP_H
#define CLOISTER_SUPERVISOR_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

/* ---- pure parsers ------------------------------------------------------------------------ */

/* One line of /proc/PID/mountinfo, parsed in place (the strings point into the line, octal
 * escapes such as \040 are decoded). */
struct mountinfo_entry {
	int mount_id;
	int parent_id;
	const char *root;        /* root of the mount inside its filesystem */
	const char *mount_point; /* where it is mounted, in this mount namespace */
	const char *fstype;
	const char *source;
	const char *super_options; /* "rw,pids" for a cgroup v1 mount; "" when the line has none */
};

/* Parse one NUL-terminated line (without the newline), modifying it. -EINVAL if malformed. */
int mountinfo_parse_line(char *line, struct mountinfo_entry *ret);

/* The whole of /proc/self/mountinfo, malloc'd and NUL-terminated, in *ret_text. */
int mountinfo_read_self(char **ret_text);

/* Find the cgroup2 mount in mountinfo text. When several exist, the first whose root is "/"
 * wins (a bind mount of a subtree is a worse choice), else the first. Copies the mount point
 * and the root into the buffers. -ENOENT when there is no cgroup2 mount, -ENAMETOOLONG when a
 * buffer is too small, -EINVAL on a malformed line. */
int cgroup_find_cgroup2_in_mountinfo(const char *text, char *ret_mount, size_t mount_size,
                                     char *ret_root, size_t root_size);

/* Find the cgroup v1 hierarchy that holds CONTROLLER (one of its super options, e.g. "pids"):
 * hybrid hierarchies keep the pids and memory controllers there. Copies the mount point.
 * -ENOENT when there is none, -ENAMETOOLONG, -EINVAL on a malformed line. */
int cgroup_find_v1_in_mountinfo(const char *text, const char *controller, char *ret_mount,
                                size_t size);

/* Whether CONTROLLER is one of the space-separated words of TEXT (cgroup.controllers,
 * cgroup.subtree_control). */
bool cgroup_controllers_has(const char *text, const char *controller);

/* The start time (field 22, clock ticks after boot) from the text of /proc/PID/stat. The comm
 * field may contain spaces and parentheses; parsing starts after the last ')'. */
int proc_stat_parse_start_time(const char *text, uint64_t *ret);

/* The cgroup2 path ("0::/a/b" line) from the text of /proc/PID/cgroup, copied to ret. */
int proc_cgroup_parse_unified(const char *text, char *ret, size_t size);

/* The value of KEY ("populated", "frozen") in cgroup.events text. -ENOENT if absent. */
int cgroup_events_parse(const char *text, const char *key, int *ret);

/* Identity of the supervisor that owns a sandbox leaf. */
struct cgroup_owner {
	uint64_t pidns_ino; /* inode of the owner's pid namespace: pids only compare within one */
	pid_t pid;
	uint64_t start_time;
};

/* Format "<name>-<pidns>-<pid>-<start>" into buf. NAME is sanitized: characters other than
 * [A-Za-z0-9_.] become '_' and it is cut to 64 bytes, so any caller string gives a safe single
 * path component. -ENAMETOOLONG if buf is too small. */
int cgroup_leaf_name_format(const char *name, const struct cgroup_owner *owner, char *buf,
                            size_t size);

/* Parse a leaf name back into its owner. -EINVAL if the name is not one of ours. */
int cgroup_leaf_name_parse(const char *leaf, struct cgroup_owner *ret);

/* Whether a leaf owned by OWNER is stale: given what is known about OWNER's pid now, i.e.
 * whether it exists in our pid namespace (alive) and with which start time. A leaf of another
 * pid namespace is never judged stale (we cannot see its pids). */
bool cgroup_owner_is_stale(const struct cgroup_owner *owner, uint64_t our_pidns_ino, bool alive,
                           uint64_t current_start_time);

/* ---- cgroupfs ---------------------------------------------------------------------------- */

/* The cgroup2 mount point of this mount namespace, from /proc/self/mountinfo. */
int cgroup_find_cgroup2(char *ret_mount, size_t size);

/* The directory under which sandbox leaves go, malloc'ed into *ret:
 *  - root: <cgroup2>/cloister. One well-known place, outside any service manager's units, so a
 *    later supervisor finds the leaves of every crashed one wherever it was started from; and a
 *    directory that holds no process itself, so controllers (memory, pids) can be enabled for
 *    the leaves later ("no internal processes" rule).
 *  - not root: <cgroup2>/<our own cgroup>/cloister, because a non-root process can only move
 *    processes within a subtree delegated to it (write access to the common ancestor's
 *    cgroup.procs), i.e. below its own cgroup. */
int cgroup_default_parent(char **ret);

/* This process's identity as a leaf owner. */
int cgroup_owner_self(struct cgroup_owner *ret);

struct cgroup;

/* Create PARENT (mode 0755, if missing) and a new leaf in it named after NAME and OWNER. If the
 * name is taken (a second sandbox of the same supervisor), ".2", ".3"… is appended to NAME. */
int cgroup_create(const char *parent, const char *name, const struct cgroup_owner *owner,
                  struct cgroup **ret, struct cl_error *err);

const char *cgroup_path(const struct cgroup *cg);
/* An O_DIRECTORY fd of the leaf (for clone3 CLONE_INTO_CGROUP); owned by cg. */
int cgroup_dir_fd(const struct cgroup *cg);
/* The cgroup id (inode of the leaf directory on cgroup2), what BPF's
 * bpf_get_current_cgroup_id() returns for its processes. */
uint64_t cgroup_id(const struct cgroup *cg);

/* Freeze (true) or thaw the leaf; with a freeze, wait up to timeout_ms for cgroup.events to say
 * frozen 1 (-ETIMEDOUT otherwise; the freeze request stays in force). */
int cgroup_freeze(struct cgroup *cg, bool frozen, int timeout_ms);

/* SIGKILL every process in the leaf and its descendants (cgroup.kill). */
int cgroup_kill(struct cgroup *cg);

/* Kill, wait up to timeout_ms until nothing is left in it, remove the leaf (and any cgroups
 * the sandbox created below it), free cg. NULL is accepted. Returns the first error; cg is
 * freed in every case. */
int cgroup_destroy(struct cgroup *cg, int timeout_ms);

/* Limit the tasks (processes and threads together) of the leaf and everything below it to MAX:
 * pids.max, with the pids controller enabled from the cgroup2 root down to the leaf's parent
 * where it is not yet (the parent holds no process, so the "no internal processes" rule
 * allows it). On a hybrid hierarchy, where the controller stays with cgroup v1 and cannot be
 * enabled in cgroup2, a companion leaf of the same name in the v1 pids hierarchy holds the
 * limit (root only: nobody delegates v1), over a child of it where the sandbox's tasks go (an
 * agent that mounts the hierarchy again in a cgroup namespace of its own sees only that child):
 * cgroup_attach_companions() moves the sandbox's first process there; both are removed with
 * the leaf. -EOPNOTSUPP (ERR says why) when neither
 * can be had. Sets *ret_legacy to whether the v1 companion holds it. */
int cgroup_limit_pids(struct cgroup *cg, uint64_t max, bool *ret_legacy, struct cl_error *err);

/* cgroup_limit_pids()'s first half: enable the pids controller in cgroup.subtree_control of
 * MOUNT (the cgroup2 mount point) and of every directory below it down to LEAF's parent, where
 * it is not yet. -EOPNOTSUPP when a level's cgroup.controllers lacks it, -EINVAL when LEAF is
 * not below MOUNT; ERR names the file. */
int cgroup_enable_pids_above(const char *mount, const char *leaf, struct cl_error *err);

/* Move PID (0: the calling process) into the v1 companion leaves (cgroup_limit_pids); nothing
 * without one. Call it before PID forks: its children are born where it is. */
int cgroup_attach_companions(struct cgroup *cg, pid_t pid);

/* How many forks and clones the pids limit refused so far (pids.events "max"), in *ret. */
int cgroup_pids_refused(struct cgroup *cg, uint64_t *ret);

/* An fd of pids.events (owned by cg) that polls POLLPRI when the count above changes, or
 * -ENOENT without a pids limit. */
int cgroup_pids_events_fd(struct cgroup *cg);

/* Kill and remove every leaf under PARENT whose owner is stale (dead, or its pid reused by
 * another process). Returns the number removed; leaves that could not be removed are left for
 * the next time and do not make it fail. A missing PARENT removes nothing. */
int cgroup_cleanup_stale(const char *parent, int timeout_ms);

/* The same for the v1 companion leaves (their processes are gone with the cgroup2 leaves
 * removed first): the empty ones are removed. A missing hierarchy removes nothing. */
int cgroup_cleanup_stale_companions(int timeout_ms);

/* Kill and remove the leaf at PATH (a directory), e.g. one found by a caller. */
int cgroup_remove_path(const char *path, int timeout_ms);

#endif
