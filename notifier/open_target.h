/* Reading an open notification (open, openat, creat with a flag that writes; filter.h): what
 * the process asked to open, with which flags and mode, where from, and who it is.
 *
 * As for execs (target.h): /proc/PID is opened first and the notification checked valid after,
 * so everything read belongs to the process that asked; the path is read bounded (PATH_MAX).
 * The path is made absolute lexically (path.h) from the process's cwd or dirfd, as /proc shows
 * them: a name for the policy and a person to read, never opened as it is (the caller resolves
 * it). Nothing is decided here. */
#ifndef CLOISTER_NOTIFIER_OPEN_TARGET_H
#define CLOISTER_NOTIFIER_OPEN_TARGET_H

#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "notifier/proc_status.h"

struct notifier;

#define OPEN_TARGET_MAX_CMDLINE 4096

struct open_target {
	uint64_t id;
	pid_t pid;      /* in the supervisor's pid namespace */
	int dirfd;      /* openat's; AT_FDCWD for open and creat */
	int flags;      /* creat: O_CREAT | O_WRONLY | O_TRUNC */
	mode_t mode;    /* with O_CREAT or O_TMPFILE */
	char *path;     /* as passed */
	char *abs_path; /* absolute, lexically joined with the cwd or the dirfd's path */
	char *cwd;      /* read for a relative path, else by notifier_read_open_process (or NULL) */
	int piddir;     /* /proc/PID, for notifier_read_open_process */

	/* notifier_read_open_process: */
	bool process_read;
	mode_t umask;
	struct proc_status ids; /* its credentials: fsuid, fsgid, groups */
	char exe[256];          /* its executable, "" when unknown */
	char **argv;            /* its command line (cut at OPEN_TARGET_MAX_CMDLINE bytes) */
	size_t argc;
};

void open_target_free(struct open_target *t);
CL_DEFINE_TRIVIAL_CLEANUP(struct open_target *, open_target_free)

/* Read REQ: the open itself (what an allowed open needs: no more). 0 and *RET; -ESRCH when the
 * notification is gone (nothing to answer); other -errno with ERR (the caller must still answer
 * REQ), the kernel's own answer where it is one: -EFAULT an unreadable path, -ENAMETOOLONG, -ENOENT
 * an empty path, -EBADF a dirfd that is not open, -ENOTDIR one that is no directory; others
 * (-ENOMEM…) are ours. */
int notifier_read_open(struct notifier *n, const struct seccomp_notif *req,
                       struct open_target **ret, struct cl_error *err);

/* Then who asks, for an ask or a refusal: ids, umask, executable and command line (once).
 * 0; -ESRCH when the notification is gone; -errno. */
int notifier_read_open_process(struct notifier *n, struct open_target *t);

#endif
