/* Where a write open lands, found as the agent sees it and checked against the host's view.
 *
 * The name is resolved in the agent's view: below its root (/proc/PID/root), from its cwd or
 * its openat dirfd, its symlinks followed as the kernel would for an open (notifier/resolve.h
 * for the directory, the final symlink here: not with O_NOFOLLOW, nor O_CREAT|O_EXCL). The
 * directory found there is then opened in the supervisor's view by the name the agent's view
 * gives it, and both must be the same directory (device and inode), the file in it too (or
 * absent from both). Only then may the supervisor open it for the agent: from the host's
 * directory, whose mount is writable where the sandbox's is not, but which is the very
 * directory the agent named.
 *
 * Where the two views differ — a private mount of the sandbox (its runtime directory, its
 * /tmp), a hidden path covered, a name that exists in one and not the other — the supervisor
 * must not open anything: the kernel's layers (mounts, Landlock) decide, as for any open. */
#ifndef CLOISTER_FILES_WRITE_TARGET_H
#define CLOISTER_FILES_WRITE_TARGET_H

#include <stdbool.h>
#include <sys/stat.h>

struct resolve_target;

struct write_target {
	int view_dir;    /* the file's directory in the agent's view (O_PATH) */
	int host_dir;    /* the same directory in the host's view (O_PATH): where to open */
	char *last;      /* the file's name in it ("." for O_TMPFILE: the directory itself) */
	char *path;      /* its path in the agent's view: what a person is asked about */
	char *host_path; /* its path in the host's view (the same unless bind mounts differ) */
	bool exists;
	struct stat st; /* when it exists (lstat: a regular file) */
};

/* 1 from write_target_find: the views differ, or the open is no regular file's; the kernel
 * decides. */
#define WRITE_TARGET_KERNEL 1

/* Find where the open of PATH with FLAGS lands for the process RT describes (BASE: its cwd or
 * dirfd, for a relative PATH). 0 and *RET (write_target_done frees it); WRITE_TARGET_KERNEL;
 * -ELOOP, -ENOMEM. */
int write_target_find(const struct resolve_target *rt, int base, const char *path, int flags,
                      struct write_target *ret);
void write_target_done(struct write_target *t);

/* After the open: is FD's file still the one the agent's view shows at T's name? */
bool write_target_is(const struct write_target *t, int fd);

#endif
