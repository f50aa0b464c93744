/* Reading an exec notification: what the target asked to run, in the sandbox's view.
 *
 * Habits (Linux samples/seccomp/user-trap.c, LXC): open /proc/PID first, then check that the
 * notification is still valid (so the pid was not reused in between and everything read through
 * the open dir belongs to the right process), read with bounded sizes, check validity again at
 * the end. The target lives in its own mount namespace: files are resolved as the kernel will
 * for it (resolve.h: below its /proc/PID/root, from its cwd or dirfd, /proc/self and magic
 * links as it sees them), never against the supervisor's root. With a view set on the notifier
 * (notifier_set_view, view.h), each file is also checked against the sandbox's own view.
 *
 * Nothing is decided here: a path that does not resolve, a file that is not executable or that
 * is another file in the sandbox's view is only reported (with the errno the kernel would give,
 * so the caller can answer the exec itself). */
#ifndef CLOISTER_NOTIFIER_TARGET_H
#define CLOISTER_NOTIFIER_TARGET_H

#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/sysmacros.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "base/cleanup.h"
#include "base/error.h"

struct notifier;

#define EXEC_MAX_ARGS       4096
#define EXEC_MAX_ARGV_BYTES (1024 * 1024)

/* Whether a file reached in the target's view is the same file in the sandbox's own view. */
enum exec_view_check {
	EXEC_VIEW_UNCHECKED = 0, /* no view set on the notifier */
	EXEC_VIEW_SAME,   /* its mount is one of the view's, or its name there is this file */
	EXEC_VIEW_OTHER,  /* its name is another file in the view */
	EXEC_VIEW_ABSENT, /* its name is nothing in the view (view_error says why) */
};

/* A file the exec would run (the program, or a script's interpreter). */
struct exec_file {
	bool exists;     /* it resolved in the target's view */
	int error;       /* why not, as the kernel would say (ENOENT, ENOTDIR, ELOOP, EACCES,
	                  * EBADF…) when !exists */
	bool regular;    /* S_ISREG */
	bool executable; /* regular, an x bit for the target's fsuid/fsgid, mount not noexec */
	mode_t mode;
	uid_t uid;
	gid_t gid;
	dev_t dev; /* st_dev as user space sees it */
	ino_t ino;
	nlink_t nlink;
	/* What changes with the content, which (dev, ino) does not: a file rewritten in place
	 * keeps its inode but gets a new ctime (the kernel's own clock; a user cannot set it
	 * back) and usually a new size. ctime in ns since the epoch. */
	uint64_t ctime_ns;
	uint64_t size;
	uint32_t kdev;   /* the executing superblock's dev in the kernel's internal encoding:
	                  * what BPF reads from inode->i_sb->s_dev. Not always st_dev: on
	                  * overlayfs and btrfs it comes from the file's mount (mountinfo) */
	char *real_path; /* the opened file's name, symlinks resolved, as /proc shows it (in the
	                  * mount namespace of the file's mount); NULL when unknown */
	uint64_t mnt_id; /* the mount it was reached through */
	enum exec_view_check view;
	int view_error; /* EXEC_VIEW_ABSENT: what looking its name up in the view gave */
};

struct exec_target {
	uint64_t id; /* notification id */
	pid_t pid;   /* in the supervisor's pid namespace */
	bool execveat;
	int dirfd;       /* execveat's dirfd (AT_FDCWD for execve) */
	int flags;       /* execveat's flags */
	bool empty_path; /* AT_EMPTY_PATH with "": the file is dirfd itself (fexecve, memfd) */
	bool nofollow;   /* AT_SYMLINK_NOFOLLOW: a final symlink fails with ELOOP */

	char *path;      /* as passed ("" for empty_path) */
	char *abs_path;  /* absolute, lexically joined with cwd or dirfd's path; for empty_path
	                  * the link text of /proc/PID/fd/N (a memfd: "/memfd:NAME (deleted)") */
	char *cwd;       /* readlink /proc/PID/cwd (NULL after a lean read: see below) */
	char *root_link; /* a lean read's: the target's root from ours, NULL when ours */

	char **argv; /* argc strings, NULL-terminated */
	size_t argc;
	size_t argv_bytes;
	bool argv_truncated; /* over EXEC_MAX_ARGS / EXEC_MAX_ARGV_BYTES: argv is a prefix and no
	                      * rule on the whole command line can be matched */
	bool argv_fault;     /* an argv pointer or string was unreadable (the kernel will fail
	                      * the exec with EFAULT) */

	/* The target's ids, filled when the file exists ((uid_t)-1 otherwise: PATH probes skip
	 * the cost). Effective ids come from /proc/PID's owner (always the task's euid/egid);
	 * /proc/PID/status (~20 µs for a new process) is read only when the exec permission
	 * check needs the fs ids and groups (partial x bits). ids_exact: status was read and
	 * uid/gid are the real ids; otherwise uid/gid repeat euid/egid. */
	uid_t uid, euid;
	gid_t gid, egid;
	bool ids_exact;

	struct exec_file file;
	int file_fd; /* an O_PATH fd of that file as it was read, -1 when none; exec_target_free
	              * closes it unless the caller took it (set it to -1) */

	bool script;  /* the file starts with a "#!" line the kernel accepts */
	char *interp; /* its interpreter (as written) and optional argument; NULL if none */
	char *interp_arg;
	struct exec_file
	        interp_file; /* the kernel's exec check sees this inode, not the script's */
	int interp_fd;       /* the same for the interpreter (O_PATH), -1 when none */
};

void exec_target_free(struct exec_target *t);
CL_DEFINE_TRIVIAL_CLEANUP(struct exec_target *, exec_target_free)

/* Read the execve/execveat notification req (received from n). Returns 0 and *ret;
 * -ENOENT when the notification is no longer valid (the target died or the pid was reused:
 * nothing to answer); other -errno with a message in err (a path that is unreadable, too long,
 * not an exec syscall…). On any error other than -ENOENT the caller must still answer req. */
int notifier_read_exec(struct notifier *n, const struct seccomp_notif *req,
                       struct exec_target **ret, struct cl_error *err);

/* The same without what only the exec's record needs: the cwd (unless a relative path or
 * interpreter needs it) and the ids (uid stays (uid_t)-1) — two lookups in /proc of a pid new
 * to it, the costliest part of a read. For an exec whose audit line will not be written (over
 * the rate). notifier_read_exec_record() reads them later if they turn out to be needed (an
 * ask), while the target still waits: 0, -ENOENT when it is gone, other -errno with err. */
int notifier_read_exec_lean(struct notifier *n, const struct seccomp_notif *req,
                            struct exec_target **ret, struct cl_error *err);

/* What a read may leave out, for the exec fast path (an exec answered at once must wait for
 * nothing it does not need). EXEC_READ_RECORD: the cwd and the ids (as notifier_read_exec
 * reads them; without it, as notifier_read_exec_lean). Without EXEC_READ_NAMES, a file's
 * real_path is left NULL unless the lookup settled it for free (no symlink on the way): its
 * name costs a readlink of our own fd, which notifier_read_exec_names() does later — at any
 * time, even after the exec was answered, since the fd is ours and stays the very file that
 * was read. The view check (view.h) reads the name itself when it needs it. */
#define EXEC_READ_RECORD 1u
#define EXEC_READ_NAMES  2u
int notifier_read_exec_some(struct notifier *n, const struct seccomp_notif *req, unsigned what,
                            struct exec_target **ret, struct cl_error *err);
/* Fill the real_path of T's program (and with INTERP, of a script's interpreter) when a read
 * left it out, from the fds T holds. No notification involved: valid after the answer. 0, or
 * -ENOMEM; a name that cannot be read stays NULL (as in a full read). */
int notifier_read_exec_names(struct notifier *n, struct exec_target *t, bool interp);
int notifier_read_exec_record(struct notifier *n, const struct seccomp_notif *req,
                              struct exec_target *t, struct cl_error *err);

/* Who connects where, for attributing a connection the proxy sees to a process (the
 * decision is never taken here: netfilter and the proxy enforce). */
struct connect_target {
	pid_t pid;
	struct sockaddr_storage addr; /* AF_INET or AF_INET6 */
	char exe[256];                /* the process's executable, "" when unknown */
	char cmdline[512];            /* its argv, NUL-separated (cut at a whole string) */
	size_t cmdline_len;           /* bytes used, 0 when unknown */
};

/* Fill T's pid, exe and cmdline from /proc/PID (exe "" and cmdline_len 0 for what cannot be
 * read: a process gone, or not ours to read). T's addr is left as it is. */
void connect_target_read_process(struct connect_target *t, pid_t pid);

/* Read the connect notification REQ: the address (when it is IPv4 or IPv6), the process's
 * executable and command line, confirmed by NOTIF_ID_VALID afterwards. 0 and *ret; -ENOENT
 * when the notification is gone; -EAFNOSUPPORT for another family (unix sockets…); -EFAULT.
 * The caller answers REQ (CONTINUE) whatever this returns. */
int notifier_read_connect(struct notifier *n, const struct seccomp_notif *req,
                          struct connect_target *ret);

/* The kernel's internal dev_t (MAJOR << 20 | MINOR), as in inode->i_sb->s_dev. */
static inline uint32_t exec_kernel_dev(dev_t dev)
{
	return ((uint32_t)major(dev) << 20) | ((uint32_t)minor(dev) & 0xfffff);
}

#endif
