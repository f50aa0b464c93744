/* The decisions files: domains and programs a person allowed or denied for a project or for
 * every project (Cloister's decisions/global.yaml and decisions/projects/<name>.yaml).
 *
 * Pure part: decisions_add() takes a file's text and one new entry and returns the new text,
 * in the form config.c reads:
 *     proxy:
 *       allow:
 *         - domain: "api.example.com"
 *         - pattern: "*.example.com"
 *       deny:
 *         - domain: "evil.com"
 *     exec:                      (once there is an exec decision; exec_pattern.h)
 *       allow:
 *         - path: "/usr/bin/git"
 *           command: "\\A(?:git) status(?: …)*\\z"
 *           argv0: "git"
 *           sha256: "9f86d0…"          (the file's content when it was allowed)
 *     fs:                        (once there is a write decision: fs.ask on-write)
 *       allow:
 *         - "/home/u/.toolrc"
 *         - "/home/u/.cache/tool/"       (a trailing "/": the whole directory)
 * Existing entries are kept in order (the older flat lists `domains`, `patterns`,
 * `denied_domains`, `denied_patterns` become entries of the same meaning), duplicates are
 * dropped, comments are not kept (as in Cloister). A file that does not parse, or that has
 * keys config.c does not know, is refused rather than rewritten without them.
 *
 * I/O part: decisions_update() adds an entry to a file under an exclusive flock on the
 * sibling "<file>.lock", so two supervisors never lose each other's additions, and writes it
 * with decisions_write_atomic(): parents created 0700, a temporary file in the same directory
 * (O_EXCL, O_CLOEXEC, mode 0600), fsync, rename over the file, fsync of the directory. A crash
 * at any point leaves either the old file or the new one, never a mix. The lock is waited for
 * DECISIONS_LOCK_WAIT_MS at most (whoever reads the config directory can hold it: -EWOULDBLOCK);
 * a reader needs no lock, since a write only ever renames a whole file in place. */
#ifndef CLOISTER_DECISIONS_H
#define CLOISTER_DECISIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "supervisor/policy/domain.h"

#define DECISIONS_LOCK_WAIT_MS 2000

enum decisions_list {
	DECISIONS_ALLOW, /* proxy.allow */
	DECISIONS_DENY,  /* proxy.deny */
};

/* One entry of a decisions file: a domain entry (proxy:) or an exec rule (exec:). */
enum decisions_section {
	DECISIONS_PROXY,
	DECISIONS_EXEC,
	DECISIONS_FS, /* fs.allow: list is DECISIONS_ALLOW */
};

struct decisions_entry {
	enum decisions_section section;
	enum decisions_list list;
	struct domain_spec domain; /* DECISIONS_PROXY */
	const char *path_glob;     /* DECISIONS_EXEC: either may be NULL, not both */
	const char *command;
	const char *argv0;   /* DECISIONS_EXEC: the pins (config.h's config_exec_rule), or NULL; */
	const char *sha256;  /* an entry differing only in sha256 replaces the one there */
	const char *fs_path; /* DECISIONS_FS: absolute, literal; a trailing "/" for a directory */
};

/* The new text of a decisions file (as decisions_add() below) with ADD added (may be NULL)
 * and DROP removed (may be NULL). Returns 1 when the text changed, 0 when not. */
int decisions_edit(const char *name, const char *text, size_t len, bool present,
                   const struct decisions_entry *add, const struct decisions_entry *drop,
                   char **ret_text, struct cl_error *err);

/* The new text of a decisions file whose current text is TEXT[0..LEN-1] (PRESENT false: no
 * file yet; TEXT is ignored) with ENTRY added to LIST. *ret_text is malloc'd. Returns 1 when
 * the entry was added, 0 when it was already there (the text is rewritten all the same);
 * -EINVAL with a message naming NAME (for messages) when the current text does not parse or
 * has unknown keys; -E2BIG past CONFIG_MAX_RULES entries; -ENOMEM. */
int decisions_add(const char *name, const char *text, size_t len, bool present,
                  enum decisions_list list, const struct domain_spec *entry, char **ret_text,
                  struct cl_error *err);

/* The wildcard entry of the dashboard's "apply to *.domain" box: api.example.com →
 * *.example.com (port kept). Refused with -EINVAL, as Cloister does, for a name of fewer than
 * three labels (no *.com from example.com), an IP address or an entry that already is one. */
int decisions_wildcard(const struct domain_spec *domain, struct domain_spec *ret,
                       struct cl_error *err);

/* DIR/decisions/global.yaml (PROJECT NULL) or DIR/decisions/projects/<PROJECT>.yaml, the
 * project name checked with config_project_name_check(). *ret_path is malloc'd. */
int decisions_path(const char *dir, const char *project, char **ret_path, struct cl_error *err);

/* Write TEXT to PATH atomically as described above. Errors name the step and the path. */
int decisions_write_atomic(const char *path, const char *text, struct cl_error *err);

/* Lock, read PATH (missing: empty), decisions_add(), write atomically when something was
 * added, unlock. Returns 1 added, 0 already there, or a negative errno with a message; on any
 * failure the file is as it was. */
int decisions_update(const char *path, enum decisions_list list, const struct domain_spec *entry,
                     struct cl_error *err);

/* As decisions_update() for any entry. */
int decisions_update_entry(const char *path, const struct decisions_entry *entry,
                           struct cl_error *err);

/* Remove ENTRY from PATH, under the lock, atomically. 1 removed, 0 not there (or no file). */
int decisions_remove(const char *path, const struct decisions_entry *entry, struct cl_error *err);

/* Before the first decision is saved under DIR: when DIR/decisions does not exist and
 * DIR/approvals (Cloister's older name for it) does, copy approvals/global.yaml and
 * approvals/projects/<name>.yaml to a new DIR/decisions, whole or not at all (a temporary
 * directory renamed into place), so that saving one decision never hides the others.
 * approvals/ is left as it is. Returns 1 when it copied, 0 when there was nothing to do (or
 * another process did it first), or a negative errno with a message. */
int decisions_prepare_dir(const char *dir, struct cl_error *err);

/* For tests: the steps of decisions_write_atomic(), and a version of it that fails with -EIO
 * at FAIL_AT as if that step had failed (cleaning up as it would then). */
enum decisions_step {
	DECISIONS_STEP_NONE,
	DECISIONS_STEP_MKDIR,
	DECISIONS_STEP_CREATE,
	DECISIONS_STEP_WRITE,
	DECISIONS_STEP_FSYNC,
	DECISIONS_STEP_RENAME,
	DECISIONS_STEP_FSYNC_DIR,
};
int decisions_write_atomic_failing_at(const char *path, const char *text,
                                      enum decisions_step fail_at, struct cl_error *err);

#endif
