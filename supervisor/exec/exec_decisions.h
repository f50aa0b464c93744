/* People's exec decisions wider than once, for one exec guard: kept for the session, and
 * written to the decisions file of the project or of every project.
 *
 * A decision (allow or deny; exact, program or pattern, exec_pattern.h) becomes an exec rule.
 * The rule joins this guard's own rule set at once, whatever its scope, so that a later exec
 * it covers is answered without asking: allowed, or denied with the person's reason (a
 * retrying agent gets its answer at once instead of a new card). A project or global
 * decision is also written to the decisions file, under its lock, atomically; the next run
 * reads it with the config (config.h), so that it holds there from the start.
 *
 * Only asks are looked up here: what the config allows or denies outright is not changed by a
 * decision of the session (a remembered denial is a deny rule in the next run's config, where
 * it beats allow rules as every deny does). Other supervisors that run at the same time read
 * the files again when they change (exec_decisions_watch()): a project or global decision made
 * in one run answers the asks of the others too, the waiting ones included, and `decisions rm`
 * of one made elsewhere takes it back there within a second (what this run decided itself it
 * keeps for the session, and the config read at the start keeps its copy). */
#ifndef CLOISTER_EXEC_DECISIONS_H
#define CLOISTER_EXEC_DECISIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

struct exec_decisions;
struct queue_item;
struct approval_decision;
struct policy_result;

/* DECISIONS_DIR (NULL: project and global decisions cannot be kept) and PROJECT (NULL: none)
 * are copied. -ENOMEM. */
int exec_decisions_new(const char *decisions_dir, const char *project, struct exec_decisions **ret);
void exec_decisions_free(struct exec_decisions *x);

/* Keep decision D on exec ITEM when its scope is wider than once. 0 (kept, or nothing to
 * keep); -EINVAL when what D covers cannot be a rule (a bad pattern: ERR says why); another
 * -errno when a project or global decision could not be written (it holds for the session
 * all the same). */
int exec_decisions_keep(struct exec_decisions *x, const struct queue_item *item,
                        const struct approval_decision *d, const char *sha256,
                        struct cl_error *err);

/* Check a decision before it is made: 0 when D on ITEM can be kept, -EINVAL with a reason.
 *
 * What a decision is pinned to (config.h's config_exec_rule): the file name of argv[0] the
 * exec had (a multi-call program's applet), and for an allow SHA256, the digest of the
 * file's content when it was asked (NULL: it could not be read, and an allow wider than once
 * is refused): a file copied over it later is asked again, in this run and in the next. */
int exec_decisions_validate(const struct queue_item *item, const struct approval_decision *d,
                            const char *sha256, struct cl_error *err);

/* An ask (*RES) that a kept decision covers becomes its allow or deny. The decisions files are
 * looked at first (a stat each: decisions_watch_check()), so that another run's decision of
 * a moment ago answers it. GIVEN and REAL are the
 * exec's two names (exec_decision.h), SHA256 its file's digest (NULL: unknown, pinned allows
 * do not match). True when *RES changed; res->content_changed set when an allow kept for
 * another content of the file would have covered it. */
bool exec_decisions_apply(struct exec_decisions *x, const char *given, const char *real,
                          const char *const *argv, size_t argc, bool truncated, const char *sha256,
                          struct policy_result *res);

struct loop;

/* Watch the global and project decisions files (decisions_watch.h: a stat of each every
 * second and before each ask, no inotify) and read them again, each under its lock, when one
 * changes; then CHANGED(USERDATA) from the loop (to look at the waiting asks again). A file
 * that does not parse keeps what was read before it. 0, or -errno with ERR. */
int exec_decisions_watch(struct exec_decisions *x, struct loop *loop,
                         void (*changed)(void *userdata), void *userdata, struct cl_error *err);
/* Read the files again now (what the watch does). */
int exec_decisions_reload(struct exec_decisions *x, struct cl_error *err);

/* How many decisions are kept (for tests and the verbose output). */
size_t exec_decisions_count(const struct exec_decisions *x);

#endif
