/* What the dashboard and guardian-api.md's /pending say about a sandbox besides its name: the
 * git branch of its worktree and the agent it runs ("main", "claude"). A bounded map from
 * sandbox name to those two, kept by the web server; pure, no I/O.
 *
 * The values come from the agent's side (a branch is read from the worktree's .git/HEAD, which
 * the agent can write): they are shown as text, never trusted. */
#ifndef CLOISTER_LABELS_H
#define CLOISTER_LABELS_H

#include <stddef.h>

#define LABELS_MAX       256 /* sandboxes remembered; the oldest entry makes room */
#define LABELS_VALUE_MAX 128 /* bytes of a branch or an agent name; longer ones are cut */

struct labels;

int labels_new(struct labels **ret);
void labels_free(struct labels *l);

/* Remember BRANCH and AGENT (either may be NULL or "": unknown) for SANDBOX, replacing what was
 * there. -EINVAL for a NULL or empty SANDBOX, -ENOMEM. */
int labels_set(struct labels *l, const char *sandbox, const char *branch, const char *agent);

/* SANDBOX's branch and agent, "" when unknown; the strings live until the next labels_set. */
void labels_get(const struct labels *l, const char *sandbox, const char **ret_branch,
                const char **ret_agent);

/* The branch named by the text of a .git/HEAD file: "ref: refs/heads/NAME" gives NAME, a
 * detached HEAD (a commit id) its first 12 hex digits. -EINVAL for anything else (a cut or
 * foreign text); -ENAMETOOLONG when the name does not fit SIZE bytes. */
int labels_parse_git_head(const char *text, size_t len, char *ret, size_t size);

/* "gitdir: PATH" (a worktree's or submodule's .git file): PATH into RET. -EINVAL otherwise. */
int labels_parse_gitdir(const char *text, size_t len, char *ret, size_t size);

#endif
