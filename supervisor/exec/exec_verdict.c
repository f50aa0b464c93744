/* The exec guard's rewrites of the policy's verdict; see exec_verdict.h. */
#include "supervisor/exec/exec_verdict.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "notifier/target.h"
#include "supervisor/policy/policy.h"

struct exec_answers {
	char **session; /* answered "always" */
	size_t n_session;
	struct {
		char *key;
		pid_t pid;
		uint64_t until_ms;
	} recent[EXEC_ANSWERS_RECENT];
	unsigned next_recent;
};

int exec_answers_new(struct exec_answers **ret_answers)
{
	struct exec_answers *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	*ret_answers = a;
	return 0;
}

void exec_answers_free(struct exec_answers *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n_session; i++)
		free(a->session[i]);
	free(a->session);
	for (unsigned i = 0; i < EXEC_ANSWERS_RECENT; i++)
		free(a->recent[i].key);
	free(a);
}

static bool session_allows(const struct exec_answers *a, const char *key)
{
	for (size_t i = 0; i < a->n_session; i++)
		if (strcmp(a->session[i], key) == 0)
			return true;
	return false;
}

void exec_answers_allow_always(struct exec_answers *a, const char *key)
{
	char **grown;

	if (session_allows(a, key) || a->n_session >= EXEC_ANSWERS_SESSION_MAX)
		return;
	grown = reallocarray(a->session, a->n_session + 1, sizeof(*grown));
	if (!grown)
		return;
	a->session = grown;
	a->session[a->n_session] = strdup(key);
	if (a->session[a->n_session])
		a->n_session++;
}

void exec_answers_denied(struct exec_answers *a, const char *key, pid_t pid, uint64_t now_ms)
{
	unsigned i = a->next_recent++ % EXEC_ANSWERS_RECENT;
	char *copy = strdup(key);

	if (!copy)
		return;
	free(a->recent[i].key);
	a->recent[i].key = copy;
	a->recent[i].pid = pid;
	a->recent[i].until_ms = now_ms + EXEC_ANSWERS_RECENT_MS;
}

static bool recently_denied(const struct exec_answers *a, const char *key, pid_t pid,
                            uint64_t now_ms)
{
	for (unsigned i = 0; i < EXEC_ANSWERS_RECENT; i++)
		if (a->recent[i].key && a->recent[i].pid == pid && a->recent[i].until_ms > now_ms &&
		    strcmp(a->recent[i].key, key) == 0)
			return true;
	return false;
}

/* Why F (the program, or a script's interpreter: WHAT) may not run for being another file in
 * the sandbox's own view than in the process's, into BUF; false when it is the same file. */
static bool view_mismatch(const struct exec_file *f, const char *what, char *buf, size_t size)
{
	const char *name = f->real_path ? f->real_path : "(a file without a name)";

	switch (f->view) {
	case EXEC_VIEW_UNCHECKED:
	case EXEC_VIEW_SAME:
		return false;
	case EXEC_VIEW_OTHER:
		snprintf(buf, size, "%s%.300s is another file in this process's mount namespace",
		         what, name);
		return true;
	case EXEC_VIEW_ABSENT:
		snprintf(buf, size,
		         "%s%.300s exists only in this process's mount namespace, not in the "
		         "sandbox's (%s)",
		         what, name, strerror(f->view_error));
		return true;
	}
	return true;
}

/* Turn *RES into a denial when the file, or a script's interpreter, fails the view check. */
static void view_refusal(const struct exec_target *t, struct policy_result *res)
{
	char why[400];

	if (!view_mismatch(&t->file, "", why, sizeof(why)) &&
	    !(t->script && view_mismatch(&t->interp_file, "the interpreter ", why, sizeof(why))))
		return;
	res->verdict = POLICY_DENY;
	res->fallback = POLICY_DENY;
	res->by_deny_rule = false;
	res->origin.file = NULL;
	snprintf(res->rule, sizeof(res->rule), "%s", why);
	snprintf(res->reason, sizeof(res->reason),
	         "%s: a file mounted over a name in a namespace of its own is not the file the "
	         "policy allows under that name",
	         why);
}

/* The verdict V, decided by RULE rather than by a line of the config. */
static void settle(struct policy_result *res, enum policy_verdict v, const char *rule)
{
	res->verdict = v;
	snprintf(res->rule, sizeof(res->rule), "%s", rule);
	res->origin.file = NULL;
}

void exec_verdict_rewrite(const struct exec_target *t, const struct exec_answers *a,
                          const char *key, bool terminating, uint64_t now_ms,
                          struct policy_result *res)
{
	/* Whatever the policy would allow or ask about must be the file at its name in the
	 * sandbox's own view, not one the agent mounted there in a namespace of its own. */
	if (res->verdict != POLICY_DENY)
		view_refusal(t, res);
	if (res->verdict != POLICY_ASK)
		return;
	if (a && key && session_allows(a, key))
		settle(res, POLICY_ALLOW, "session: allowed always by a person");
	else if (a && key && recently_denied(a, key, t->pid, now_ms))
		settle(res, POLICY_DENY, "the same exec was denied a moment ago");
	else if (terminating)
		settle(res, POLICY_DENY, "the agent is being terminated");
}
