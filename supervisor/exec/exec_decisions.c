#include "supervisor/exec/exec_decisions.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/say.h"
#include "supervisor/approval/approvals.h"
#include "supervisor/approval/queue.h"
#include "supervisor/policy/config.h"
#include "supervisor/policy/config_files.h"
#include "supervisor/policy/decisions.h"
#include "supervisor/policy/decisions_watch.h"
#include "supervisor/policy/exec_decision.h"
#include "supervisor/policy/exec_pattern.h"
#include "supervisor/policy/policy.h"

/* Past this many kept decisions, more are refused (the agent cannot make a person decide
 * that often, but the bound keeps every lookup small). */
#define EXEC_DECISIONS_MAX 1024

struct exec_decisions {
	char *dir;
	char *project;
	/* The kept rules as a config of their own: allowlist, never asking, so that the policy
	 * says ALLOW for an allow rule that matches and DENY by a rule for a deny rule, and
	 * DENY by the setting (nothing kept covers it) otherwise. Each rule's origin file is a
	 * note of who decided what, with the reason, kept in rules->files. */
	struct config *rules;
	/* The decisions files as other runs change them (decisions_watch.h): what they decided
	 * for this project or every project after this one read its config. NULL: no config
	 * directory. */
	struct decisions_watch *watch;
};

int exec_decisions_new(const char *decisions_dir, const char *project, struct exec_decisions **ret)
{
	struct exec_decisions *x = calloc(1, sizeof(*x));

	if (!x)
		return -ENOMEM;
	x->rules = calloc(1, sizeof(*x->rules));
	x->dir = decisions_dir ? strdup(decisions_dir) : NULL;
	x->project = project ? strdup(project) : NULL;
	if (!x->rules || (decisions_dir && !x->dir) || (project && !x->project)) {
		exec_decisions_free(x);
		return -ENOMEM;
	}
	{
		struct cl_error err = {""};
		int r = decisions_watch_new(decisions_dir, project, &x->watch, &err);

		if (r < 0) {
			exec_decisions_free(x);
			return r;
		}
	}
	x->rules->exec.security = EXEC_SECURITY_ALLOWLIST;
	x->rules->exec.ask = EXEC_ASK_OFF;
	x->rules->exec.ask_fallback = EXEC_SECURITY_DENY;
	*ret = x;
	return 0;
}

void exec_decisions_free(struct exec_decisions *x)
{
	if (!x)
		return;
	decisions_watch_free(x->watch);
	config_free(x->rules);
	free(x->dir);
	free(x->project);
	free(x);
}

size_t exec_decisions_count(const struct exec_decisions *x)
{
	return x ? x->rules->exec.allow.n + x->rules->exec.deny.n : 0;
}

static enum exec_match match_of(const struct approval_decision *d)
{
	enum exec_match m = EXEC_MATCH_EXACT;

	if (d->match)
		(void)exec_match_from_string(d->match, &m);
	return m;
}

/* The file name argv[0] has, which a multi-call program acts on ("" for an empty argv). */
static const char *argv0_name(const struct queue_item *item)
{
	const char *a0 = item->argc > 0 ? item->argv[0] : "", *slash = strrchr(a0, '/');

	return slash ? slash + 1 : a0;
}

/* The rule decision D on ITEM makes, and its pins: *RET_ARGV0 the name argv[0] must have, and
 * for an allow *RET_SHA256 the content it must have (SHA256: the file's, NULL when it could
 * not be read, and then nothing wider than once is allowed). */
static int rule_of(const struct queue_item *item, const struct approval_decision *d,
                   const char *sha256, struct exec_pattern_rule *ret, const char **ret_argv0,
                   const char **ret_sha256, struct cl_error *err)
{
	enum exec_match m = EXEC_MATCH_EXACT;
	const char *a0 = argv0_name(item);

	if (d->match && exec_match_from_string(d->match, &m) < 0)
		return cl_error_set(err, -EINVAL, "match must be one of exact, program, pattern");
	if (!item->exe)
		return cl_error_set(err, -EINVAL, "this ask names no executable");
	/* Kept for the name it ran under: busybox allowed as `ls` is not busybox as `rm`. */
	*ret_argv0 = NULL;
	if (*a0) {
		if (strlen(a0) > 255)
			return cl_error_set(
			        err, -EINVAL,
			        "argv[0] is too long to keep with a decision; decide once");
		for (const char *p = a0; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return cl_error_set(
				        err, -EINVAL,
				        "argv[0] has a control character, which a decision "
				        "cannot keep; decide once");
		*ret_argv0 = a0;
	}
	/* An allow holds for the content a person was shown, not for whatever is later copied
	 * to that path. */
	*ret_sha256 = NULL;
	if (d->allow) {
		/* What config.c reads back: a malformed pin would make the file unreadable. */
		if (!sha256 || strlen(sha256) != CONFIG_SHA256_HEX ||
		    strspn(sha256, "0123456789abcdef") != CONFIG_SHA256_HEX)
			return cl_error_set(
			        err, -EINVAL,
			        "the file could not be read to keep its content with the "
			        "decision; allow it once");
		*ret_sha256 = sha256;
	}
	return exec_pattern_rule(item->exe, (const char *const *)item->argv, item->argc, m,
	                         d->pattern, ret, err);
}

int exec_decisions_validate(const struct queue_item *item, const struct approval_decision *d,
                            const char *sha256, struct cl_error *err)
{
	struct exec_pattern_rule rule = {0};
	const char *argv0, *pin;
	int r;

	if (d->scope == QUEUE_SCOPE_ONCE)
		return 0;
	r = rule_of(item, d, sha256, &rule, &argv0, &pin, err);
	exec_pattern_rule_done(&rule);
	return r < 0 ? r : 0;
}

/* Add RULE to the kept ones, its origin a note saying who decided what and why. */
static int add_rule(struct exec_decisions *x, bool allow, struct exec_pattern_rule *rule,
                    const char *argv0, const char *sha256, const char *note)
{
	_cleanup_free_ char *a0 = argv0 ? strdup(argv0) : NULL;
	_cleanup_free_ char *pin = sha256 ? strdup(sha256) : NULL;
	struct config_exec_list *list = allow ? &x->rules->exec.allow : &x->rules->exec.deny;
	struct config_exec_rule *items, *r;
	char **files;
	char msg[256];
	int rc;

	if (exec_decisions_count(x) >= EXEC_DECISIONS_MAX)
		return -E2BIG;
	if ((argv0 && !a0) || (sha256 && !pin))
		return -ENOMEM;
	items = reallocarray(list->items, list->n + 1, sizeof(*items));
	if (!items)
		return -ENOMEM;
	list->items = items;
	files = reallocarray(x->rules->files, x->rules->n_files + 1, sizeof(*files));
	if (!files)
		return -ENOMEM;
	x->rules->files = files;
	files[x->rules->n_files] = strdup(note);
	if (!files[x->rules->n_files])
		return -ENOMEM;
	r = &list->items[list->n];
	*r = (struct config_exec_rule){
	        .list = allow ? "decided.allow" : "decided.deny",
	        .index = (unsigned)list->n,
	        .origin = {.file = files[x->rules->n_files], .layer = CONFIG_LAYER_SESSION},
	};
	rc = config_regex_compile(rule->command, &r->command, msg, sizeof(msg));
	if (rc < 0) {
		free(files[x->rules->n_files]);
		return rc;
	}
	x->rules->n_files++;
	r->path_glob = TAKE_PTR(rule->path_glob);
	r->argv0 = TAKE_PTR(a0);
	r->sha256 = TAKE_PTR(pin);
	list->n++;
	return 0;
}

static int persist(struct exec_decisions *x, const struct queue_item *item, bool allow,
                   enum queue_scope scope, const struct exec_pattern_rule *rule, const char *argv0,
                   const char *sha256, struct cl_error *err)
{
	const char *project = item->project ? item->project : x->project;
	_cleanup_free_ char *path = NULL;
	struct decisions_entry e = {
	        .section = DECISIONS_EXEC,
	        .list = allow ? DECISIONS_ALLOW : DECISIONS_DENY,
	        .path_glob = rule->path_glob,
	        .command = rule->command,
	        .argv0 = argv0,
	        .sha256 = sha256,
	};
	int r;

	if (!x->dir)
		return cl_error_set(err, -ENOENT, "no config directory to keep decisions in");
	if (scope == QUEUE_SCOPE_PROJECT && !project)
		return cl_error_set(
		        err, -EINVAL,
		        "no project (start with --project NAME to keep project decisions)");
	r = decisions_prepare_dir(x->dir, err);
	if (r >= 0)
		r = decisions_path(x->dir, scope == QUEUE_SCOPE_PROJECT ? project : NULL, &path,
		                   err);
	if (r >= 0)
		r = decisions_update_entry(path, &e, err);
	if (r >= 0)
		say("%s %s in %s", allow ? "allowed" : "denied", item->summary, path);
	return r < 0 ? r : 0;
}

int exec_decisions_keep(struct exec_decisions *x, const struct queue_item *item,
                        const struct approval_decision *d, const char *sha256, struct cl_error *err)
{
	struct exec_pattern_rule rule = {0};
	char note[QUEUE_REASON_MAX + 128];
	const char *argv0, *pin;
	int r;

	if (d->scope == QUEUE_SCOPE_ONCE || item->kind != QUEUE_KIND_EXEC)
		return 0;
	r = rule_of(item, d, sha256, &rule, &argv0, &pin, err);
	if (r < 0)
		return r;
	snprintf(note, sizeof(note), "%s (%s, %s) by %s%s%s", d->allow ? "allowed" : "denied",
	         queue_scope_to_string(d->scope), exec_match_to_string(match_of(d)),
	         d->by ? d->by : "a person", d->reason && *d->reason ? ": " : "",
	         d->reason ? d->reason : "");
	/* Project and global decisions go to the file first: what the next run will read. The
	 * session keeps the decision either way. */
	if (d->scope == QUEUE_SCOPE_PROJECT || d->scope == QUEUE_SCOPE_GLOBAL)
		r = persist(x, item, d->allow, d->scope, &rule, argv0, pin, err);
	{
		int k = add_rule(x, d->allow, &rule, argv0, pin, note);

		if (k < 0 && r >= 0)
			r = cl_error_set(err, k,
			                 "the decision could not be kept for the session: %s",
			                 k == -E2BIG ? "too many decisions" : strerror(-k));
	}
	exec_pattern_rule_done(&rule);
	return r;
}

/* What the rules of SET say of the exec: 1 allow, 2 denied by a rule, 0 nothing; *RET. */
static int decide_in(const struct config *set, const char *given, const char *real,
                     const char *const *argv, size_t argc, bool truncated, const char *sha256,
                     struct policy_result *ret, bool *content_changed)
{
	struct cl_error err = {""};

	if (!set || set->exec.allow.n + set->exec.deny.n == 0)
		return 0;
	if (exec_decide_content(set, given, real, argv, argc, truncated, sha256, ret, &err) < 0)
		return 0;
	if (ret->content_changed)
		*content_changed = true;
	return ret->verdict == POLICY_ALLOW                       ? 1
	       : ret->verdict == POLICY_DENY && ret->by_deny_rule ? 2
	                                                          : 0;
}

bool exec_decisions_apply(struct exec_decisions *x, const char *given, const char *real,
                          const char *const *argv, size_t argc, bool truncated, const char *sha256,
                          struct policy_result *res)
{
	const struct config *sets[3];
	struct policy_result d, found;
	bool changed = false, have = false;
	struct cl_error err = {""};

	if (!x || res->verdict != POLICY_ASK)
		return false;
	/* Before a person is asked: what another run decided a moment ago answers it. A file
	 * that cannot be read keeps what was read before. */
	(void)decisions_watch_before_ask(x->watch, &err);
	sets[0] = x->rules;
	sets[1] = decisions_watch_project(x->watch);
	sets[2] = decisions_watch_global(x->watch);
	/* A denial in any set wins, as deny rules do; else the first allow. */
	for (size_t i = 0; i < 3; i++) {
		int k = decide_in(sets[i], given, real, argv, argc, truncated, sha256, &d,
		                  &changed);

		if (k == 2 || (k == 1 && !have)) {
			found = d;
			have = true;
		}
		if (k == 2)
			break;
	}
	/* A person allowed it, but for another content: say so on the card. */
	if (changed)
		res->content_changed = true;
	if (have) {
		d = found;
		res->verdict = d.verdict;
		res->by_deny_rule = false; /* a session decision, not the config's rule */
		res->origin = (struct config_origin){.layer = CONFIG_LAYER_SESSION};
		snprintf(res->rule, sizeof(res->rule), "%.200s, %.250s", d.rule,
		         d.origin.file ? d.origin.file : "");
		snprintf(res->reason, sizeof(res->reason), "%s",
		         d.origin.file ? d.origin.file : "");
		return true;
	}
	return false;
}

/* ---- the decisions files of other runs ---------------------------------------------------- */

int exec_decisions_reload(struct exec_decisions *x, struct cl_error *err)
{
	int r = decisions_watch_check(x->watch, err);

	return r < 0 ? r : 0;
}

int exec_decisions_watch(struct exec_decisions *x, struct loop *loop,
                         void (*changed)(void *userdata), void *userdata, struct cl_error *err)
{
	int r = decisions_watch_start(x->watch, loop, changed, userdata);

	if (r < 0)
		return cl_error_set(err, r, "decisions files: %s", strerror(-r));
	/* What was written between this run's config and the watch. */
	return exec_decisions_reload(x, err);
}
