/* Directories the supervisor creates for its own files (config, decisions, audit log,
 * cgroups): mkdir -p, where only what is created gets MODE. */
#ifndef CLOISTER_DIRS_H
#define CLOISTER_DIRS_H

#include <sys/types.h>

/* Create PATH and its missing parents with MODE; existing ones are left as they are.
 * 0 or -errno. */
int dirs_make(const char *path, mode_t mode);

/* The same for PATH's parent directory (a file's). */
int dirs_make_parent(const char *path, mode_t mode);

#endif
