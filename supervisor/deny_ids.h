/* The files `path:` deny rules name, by identity (device and inode).
 *
 * A hard link of a denied program is that program under a name no glob sees, so an exec's file
 * is also looked up here: a match gives the denied name, which the policy then checks as if the
 * exec had used it (exec_decide_alias). This is the thin I/O layer around that lookup; the
 * policy stays pure.
 *
 * At load every exec.deny rule's absolute path glob is expanded on the host (glob(3), as
 * fnmatch in the policy sees it); each match that is a regular file (symlinks followed) is held
 * open (O_PATH), so its inode cannot be freed and its number reused while we rely on it. inotify
 * watches the directories of the matches and of their symlink chains (/etc/alternatives): when
 * a file is created or renamed there (a package upgrade puts a new inode in place), the globs
 * are expanded again and new files added. Replaced files stay in the set: a hard link made
 * before the upgrade is still the denied program.
 *
 * What is not covered: a copy (a new inode), a file that appears under a glob in a directory
 * that did not exist at load, and more than DENY_IDS_MAX files (the rest is matched by name
 * only; deny_ids_truncated says so). */
#ifndef CLOISTER_SUPERVISOR_DENY_IDS_H
#define CLOISTER_SUPERVISOR_DENY_IDS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "protocol/error.h"

#define DENY_IDS_MAX     4096
#define DENY_IDS_WATCHES 256

struct config;
struct deny_ids;

/* Expand CONFIG's exec.deny path globs and start watching. 0 and *ret (possibly holding no
 * file); -errno with err on failure (out of memory; inotify unavailable is not a failure:
 * then nothing is re-checked, see deny_ids_fd). CONFIG must outlive *ret. */
int deny_ids_new(const struct config *config, struct deny_ids **ret, struct cl_error *err);
void deny_ids_free(struct deny_ids *d);

/* The inotify fd to poll (EPOLLIN), -1 when nothing is watched. */
int deny_ids_fd(const struct deny_ids *d);

/* The fd polled readable: read the events and, if a watched directory changed, expand the
 * globs again. Returns how many files were added, or -errno. */
int deny_ids_refresh(struct deny_ids *d);

/* The denied name of the file (ST_DEV, ST_INO as stat gives them), or NULL. */
const char *deny_ids_lookup(const struct deny_ids *d, dev_t st_dev, ino_t st_ino);

size_t deny_ids_count(const struct deny_ids *d);
/* More files matched than DENY_IDS_MAX: those beyond are matched by name only. */
bool deny_ids_truncated(const struct deny_ids *d);

#endif
