/* Facts about a worktree on disk, for labels (labels.h). */
#ifndef CLOISTER_WORKTREE_H
#define CLOISTER_WORKTREE_H

#include <stddef.h>

/* The git branch checked out at DIR or the closest directory above it that has a .git (a
 * directory, or a file "gitdir: PATH" as in linked worktrees), as labels_parse_git_head names
 * it. Reads at most a few small files; follows no more than 64 levels up. -ENOENT when DIR is
 * in no git worktree, -EINVAL for a HEAD it cannot read, other -errno from the file system. */
int worktree_git_branch(const char *dir, char *ret, size_t size);

#endif
