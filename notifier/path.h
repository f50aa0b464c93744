/* Lexical path joining for exec events, in the sandbox's view. No filesystem access.
 *
 * The joined path is the name the agent used, made absolute and tidied ("//" and "." dropped,
 * ".." applied lexically). It is what a person reads and what path rules match; it is not
 * symlink-resolved (the kernel-resolved name is exec_file.real_path, see notifier/target.h). */
#ifndef CLOISTER_NOTIFIER_PATH_H
#define CLOISTER_NOTIFIER_PATH_H

#include <stddef.h>

/* Join rel onto base and normalise. An absolute rel ignores base; a relative one needs an
 * absolute base. ".." never climbs above "/". A trailing "/" on rel is kept (exec of "x/"
 * fails with ENOTDIR in the kernel, and a rule for "x" must not appear to match it).
 *
 * Returns 0 and a malloc'd string in *ret_path; -EINVAL for an empty rel or a relative base;
 * -ENAMETOOLONG when the result would not fit PATH_MAX; -ENOMEM. */
int path_join(const char *base, const char *rel, char **ret_path);

#endif
