/* Path globs of `path:` rules (pure, no I/O).
 *
 * A glob is matched against an absolute, normalised path, one component at a time:
 *   - `*` matches any characters of one component (never a '/'), a leading '.' included;
 *     `?` one character; `[...]` a set, as fnmatch(3) with FNM_PATHNAME; `\x` is x itself;
 *   - two stars, only as a whole component, match any number of whole components:
 *       "/a/<two stars>/b" matches /a/b, /a/x/b, /a/x/y/b (zero or more in between);
 *       a trailing "/a/<two stars>" matches everything under /a (one or more components),
 *       never /a itself;
 *     never part of a component: "/a/x<two stars>" is refused (path_glob_check()).
 * (Written "<two stars>" here because the two characters would end this comment.)
 * A glob without `**` is fnmatch(GLOB, PATH, FNM_PATHNAME) exactly, as before `**` existed. */
#ifndef CLOISTER_PATH_GLOB_H
#define CLOISTER_PATH_GLOB_H

#include <stdbool.h>

/* Is GLOB usable? 0, or -EINVAL with a reason in WHY (static text): a `**` that is not a
 * whole component, or more than PATH_GLOB_MAX_STARSTAR of them. */
#define PATH_GLOB_MAX_STARSTAR 8
int path_glob_check(const char *glob, const char **why);

/* Does GLOB match PATH? */
bool path_glob_match(const char *glob, const char *path);

#endif
