/* What the exec guard makes of the policy's verdict for one exec before it answers (pure: no
 * fds, no clock, NOW is passed in). The policy (policy/exec_decision.h) knows the config; these
 * rewrites know what only the guard knows, in this order:
 *
 *   1. the sandbox's own view: a file (or a script's interpreter) that is not the file at its
 *      name in the sandbox's view (the agent mounted another over it in a namespace of its
 *      own, notifier/view.h) is denied, whatever the policy allowed or would ask;
 *   2. earlier answers, for an ask only: "always" for this file and command in this session
 *      allows it; a denial of the same exec by the same process a moment ago (a shell trying
 *      the next PATH entry) denies it again without asking;
 *   3. an ask while the agent is being terminated is denied: nobody is asked any more.
 *
 * Each rewrite names itself in the result's rule (origin.file NULL: no config line decided).
 * Allowed execs cost a switch on the view check here and no lookup: the answers are looked up
 * only for an ask. */
#ifndef CLOISTER_EXEC_VERDICT_H
#define CLOISTER_EXEC_VERDICT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct exec_target;
struct policy_result;
struct exec_answers;

/* Bounds: "always" answers kept for the session, and denials remembered for a moment. */
#define EXEC_ANSWERS_SESSION_MAX 4096
#define EXEC_ANSWERS_RECENT      16
#define EXEC_ANSWERS_RECENT_MS   3000

/* What people answered, for one sandbox. KEY names an exec exactly (exec_guard.c builds it):
 * its real file, the files as they were read (device, inode, ctime, size) and a digest of its
 * whole argv, argv[0] included; never a display string, which is cut and names the program by
 * its file (a multi-call program acts on argv[0]). */
int exec_answers_new(struct exec_answers **ret_answers);
void exec_answers_free(struct exec_answers *a);
/* "Always": KEY is allowed for the rest of the session (past the bound, once only). */
void exec_answers_allow_always(struct exec_answers *a, const char *key);
/* KEY was denied to PID at NOW_MS. */
void exec_answers_denied(struct exec_answers *a, const char *key, pid_t pid, uint64_t now_ms);

/* Rewrite *RES (the policy's verdict for T) as above. KEY is T's key, needed only when the
 * verdict is an ask (NULL otherwise); A may be NULL (no answers yet). */
void exec_verdict_rewrite(const struct exec_target *t, const struct exec_answers *a,
                          const char *key, bool terminating, uint64_t now_ms,
                          struct policy_result *res);

#endif
