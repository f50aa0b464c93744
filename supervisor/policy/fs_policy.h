/* The `fs:` policy (pure, no I/O): which paths the agent may write, which it cannot see, which
 * stay read-only even inside a writable one, and the verdict for one path.
 *
 * A pattern (fs.write, fs.hide, fs.protect) is absolute once expanded: it starts with "/",
 * "~" or "~/…" (the caller's home), "{home}" or "{worktree}" (run's directory, the project);
 * its components may hold glob characters (* ? [..]) that never cross a '/' ("one level":
 * there is no recursive "**"); "." and ".." components and empty ones ("//") are refused. A
 * trailing "/" marks a directory: in fs.write, `run` creates it (empty, 0700) when it is
 * missing, so a tool that has never run can still write its cache there.
 *
 * A pattern covers a path when it matches the path or one of its ancestors: "~/.ssh" covers
 * "~/.ssh/id_ed25519". Precedence, as deny rules beat allow rules: hide > protect > write. */
#ifndef CLOISTER_FS_POLICY_H
#define CLOISTER_FS_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "supervisor/policy/config.h"

/* What the variables of a pattern stand for: absolute, normalised paths. */
struct fs_vars {
	const char *home;     /* NULL: "~" and "{home}" patterns match nothing */
	const char *worktree; /* NULL: "{worktree}" patterns match nothing */
};

/* Is PATTERN well formed (see above)? 0, or -EINVAL with why in MSG (SIZE bytes). */
int fs_pattern_check(const char *pattern, char *msg, size_t size);

/* PATTERN with its variable expanded, into *ret_path (malloc'd, no trailing "/"), and whether
 * it ends in "/" in *ret_dir. -ENOENT when it names a variable VARS leaves NULL, -EINVAL for a
 * malformed pattern, -ENAMETOOLONG, -ENOMEM. */
int fs_pattern_expand(const char *pattern, const struct fs_vars *vars, char **ret_path,
                      bool *ret_dir);

/* Does the expanded pattern EXPANDED match PATH or one of PATH's ancestors? PATH is absolute
 * and normalised. */
bool fs_pattern_covers(const char *expanded, const char *path);

/* Does EXPANDED hold glob characters? */
bool fs_pattern_is_glob(const char *expanded);

enum fs_verdict {
	FS_ALLOW,
	FS_ASK,          /* a write outside fs.write with fs.ask: on-write */
	FS_DENY_HIDE,    /* hidden: reads as absent or empty, writes fail */
	FS_DENY_PROTECT, /* read-only, even inside a writable path */
	FS_DENY_OUTSIDE, /* a write outside fs.write (and fs.ask: off) */
};

struct fs_result {
	enum fs_verdict verdict;
	/* The deciding entry, or NULL: then SETTING says what decided ("fs.tmp: private", or
	 * NULL for "not in fs.write" / "reads are free"). */
	const struct config_fs_rule *rule;
	const struct config_scalar *setting;
	char reason[256]; /* one line for a person: "~/.ssh is hidden (fs.hide[0], <built-in>:12)"
	                   */
};

/* The verdict for reading (WRITE false) or writing PATH (absolute; normalised lexically here,
 * symlinks are the caller's to resolve). -EINVAL with ERR for a relative or malformed path,
 * -ENOMEM. */
int fs_policy_check(const struct config *cfg, const struct fs_vars *vars, const char *path,
                    bool write, struct fs_result *ret, struct cl_error *err);

const char *fs_verdict_to_string(enum fs_verdict v);

#endif
