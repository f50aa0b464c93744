/* The path boundary: a shim call's cwd must lie inside the project's worktree (pure, no I/O).
 *
 * This is the lexical half: both paths must be absolute; they are normalised ("//" and "/./"
 * collapse, "/../" removes the previous component and never climbs above "/", a trailing "/"
 * goes) and compared component-wise, so "/app2" is not inside "/app". Lexical checks cannot see
 * symlinks: the caller then opens the relative part under the worktree with openat2(2) and
 * RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS to confirm it on the real filesystem. */
#ifndef CLOISTER_PATH_BOUNDARY_H
#define CLOISTER_PATH_BOUNDARY_H

#include "base/error.h"

/* Normalise absolute PATH into a malloc'd string (*ret_path). -EINVAL for an empty or relative
 * path, -ENAMETOOLONG past PATH_MAX - 1 bytes, -ENOMEM. */
int path_normalize(const char *path, struct cl_error *err, char **ret_path);

/* Is PATH inside ROOT (or ROOT itself)? On success *ret_relative is the part of PATH below
 * ROOT, malloc'd: "." for ROOT itself, else "a/b" without leading "/" — what openat2() takes
 * relative to a descriptor of ROOT. -EPERM with "cwd /etc is outside the worktree /app" when
 * it is not; -EINVAL / -ENAMETOOLONG / -ENOMEM as path_normalize() (the message names which
 * path). */
int path_boundary_check(const char *root, const char *path, struct cl_error *err,
                        char **ret_relative);

#endif
