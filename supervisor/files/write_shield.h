/* The files and directories no write ask may reach, by identity: fs.hide and fs.protect as
 * they resolve when the run starts (symlinks followed: a hidden ~/.aws that links to
 * ~/dotfiles/aws shields the dotfiles), and Cloister's own files (config directories, the
 * audit log's directory, the API files and dashboard secret, the supervisor's executable).
 *
 * Checked by (device, inode), never by name: a file is shielded when it, or a directory
 * above it in the host's view, is one of them, however the agent named it (symlinks, "..",
 * a bind mount of the same directory elsewhere). A file with more than one name (hard links)
 * is refused as well: a card can show one name only, and a hard link to a shielded file
 * would be shielded by no directory above it. */
#ifndef CLOISTER_FILES_WRITE_SHIELD_H
#define CLOISTER_FILES_WRITE_SHIELD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

struct write_shield;

int write_shield_new(struct write_shield **ret);
void write_shield_free(struct write_shield *s);

/* Shield what PATH names now (symlinks followed), described by WHAT ("fs.hide[2] \"~/.aws\"",
 * "Cloister's audit log"). A PATH that does not resolve adds nothing: 0. -ENOMEM. */
int write_shield_add(struct write_shield *s, const char *path, const char *what);

/* Is DEV:INO shielded? Its description, or NULL. */
const char *write_shield_find(const struct write_shield *s, dev_t dev, ino_t ino);

/* Why a write to the file FILE (its stat; NULL: it does not exist yet) in the directory DIRFD
 * (an fd of the host's view) must be refused: the description of the shielded file or
 * directory it is, or is under, or a reason of its own (several names, a directory above it
 * that cannot be checked), into WHY (SIZE bytes). true: refuse; false: nothing shields it. */
bool write_shield_covers(const struct write_shield *s, int dirfd, const struct stat *file,
                         char *why, size_t size);

#endif
