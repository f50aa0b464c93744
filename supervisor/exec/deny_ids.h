/* The files `path:` deny rules name, by identity (device and inode).
 *
 * A hard link of a denied program is that program under a name no glob sees, so an exec's file
 * is also looked up here: a match gives the denied name, which the policy then checks as if the
 * exec had used it (exec_decide_alias). This is the thin I/O layer around that lookup; the
 * policy stays pure.
 *
 * At load every exec.deny rule's absolute path glob is expanded on the host (glob(3), as
 * fnmatch in the policy sees it); each match that is a regular file (symlinks followed) is held
 * open (O_PATH), so its inode cannot be freed and its number reused while we rely on it.
 *
 * Re-checked when a file changes (a package upgrade renames a new inode over the old one): a
 * hard link of a denied program has at least two names, so an exec of a file with more than
 * one link that is not in the set makes us look whether a directory of the matches (or of
 * their symlink chains, /etc/alternatives) changed since the globs were expanded (its mtime),
 * and expand them again if so. Files with one link — nearly every exec — cost one lookup.
 * Replaced files stay in the set: a hard link made before the upgrade is still the denied
 * program. (inotify would tell us at once, but closing it waits for an RCU grace period, some
 * 15 ms of every run's exit.)
 *
 * What is not covered: a copy (a new inode), a denied file renamed away after an upgrade
 * replaced it (root only), and more than DENY_IDS_MAX files (the rest is matched by name only;
 * deny_ids_truncated says so). */
#ifndef CLOISTER_SUPERVISOR_DENY_IDS_H
#define CLOISTER_SUPERVISOR_DENY_IDS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/error.h"

#define DENY_IDS_MAX  4096
#define DENY_IDS_DIRS 256

struct config;
struct deny_ids;

/* Expand CONFIG's exec.deny path globs. 0 and *ret (possibly holding no file); -errno with err
 * on failure (out of memory). CONFIG must outlive *ret. */
int deny_ids_new(const struct config *config, struct deny_ids **ret, struct cl_error *err);
void deny_ids_free(struct deny_ids *d);

/* The denied name of the file (ST_DEV, ST_INO, ST_NLINK as stat gives them), or NULL. A file
 * with more than one link that is not known makes the globs expand again if a directory they
 * cover changed (a few stat calls; see above). */
const char *deny_ids_find(struct deny_ids *d, dev_t st_dev, ino_t st_ino, nlink_t st_nlink);

/* More files matched than DENY_IDS_MAX: those beyond are matched by name only. */
bool deny_ids_truncated(const struct deny_ids *d);

#endif
