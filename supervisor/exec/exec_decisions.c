#include "supervisor/exec/exec_decisions.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/loop.h"
#include "base/say.h"
#include "supervisor/approval/approvals.h"
#include "supervisor/approval/queue.h"
#include "supervisor/policy/config.h"
#include "supervisor/policy/config_files.h"
#include "supervisor/policy/decisions.h"
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
	/* The decisions files as read since the start (exec_decisions_watch()): what other runs
	 * decided for this project or every project after this one read its config. NULL: not
	 * read. Same settings as RULES. */
	struct config *shared[2]; /* global, project */
	struct loop *loop;
	int inotify_fd;
	void (*changed)(void *userdata);
	void *changed_userdata;
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
	x->inotify_fd = -1;
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
	if (x->inotify_fd >= 0) {
		if (x->loop)
			(void)loop_del_fd(x->loop, x->inotify_fd);
		close(x->inotify_fd);
	}
	config_free(x->shared[0]);
	config_free(x->shared[1]);
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

bool exec_decisions_apply(const struct exec_decisions *x, const char *given, const char *real,
                          const char *const *argv, size_t argc, bool truncated, const char *sha256,
                          struct policy_result *res)
{
	const struct config *sets[3];
	struct policy_result d, found;
	bool changed = false, have = false;

	if (!x || res->verdict != POLICY_ASK)
		return false;
	sets[0] = x->rules;
	sets[1] = x->shared[1];
	sets[2] = x->shared[0];
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

/* Read PATH (absent: an empty set) under a shared lock of its "<PATH>.lock", as the writers
 * take it exclusively (decisions.h), as a rule set of the settings above. */
static int read_shared(const char *path, enum config_layer layer, struct config **ret,
                       struct cl_error *err)
{
	_cleanup_free_ char *lock_path = NULL, *data = NULL;
	_cleanup_close_ int lock = -EBADF;
	_cleanup_(config_freep) struct config *cfg = NULL;
	struct config_source src = {.name = path};
	size_t len = 0;
	int r;

	if (asprintf(&lock_path, "%s.lock", path) < 0) {
		lock_path = NULL;
		return cl_error_set(err, -ENOMEM, "out of memory");
	}
	lock = open(lock_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (lock >= 0)
		while (flock(lock, LOCK_SH) < 0 && errno == EINTR)
			;
	r = config_file_read(path, &data, &len, err);
	if (r < 0)
		return r;
	src.data = data;
	src.len = len;
	src.present = r > 0;
	r = config_parse_file(CONFIG_FILE_DECISIONS, layer, &src, NULL, &cfg, err);
	if (r < 0)
		return r;
	cfg->exec.security = EXEC_SECURITY_ALLOWLIST;
	cfg->exec.ask = EXEC_ASK_OFF;
	cfg->exec.ask_fallback = EXEC_SECURITY_DENY;
	*ret = TAKE_PTR(cfg);
	return 0;
}

/* Watch DIR, DIR/decisions and DIR/decisions/projects, those that exist (again: one may have
 * appeared since). */
static void watch_dirs(struct exec_decisions *x)
{
	static const char *const subs[] = {"", "/decisions", "/decisions/projects"};
	char path[PATH_MAX];

	for (size_t i = 0; i < 3; i++) {
		if (snprintf(path, sizeof(path), "%s%s", x->dir, subs[i]) >= (int)sizeof(path))
			continue;
		(void)inotify_add_watch(x->inotify_fd, path,
		                        IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE |
		                                IN_ONLYDIR);
	}
}

int exec_decisions_reload(struct exec_decisions *x, struct cl_error *err)
{
	struct config *fresh[2] = {NULL, NULL};
	int r = 0;

	if (!x->dir)
		return 0;
	for (int i = 0; i < 2 && r >= 0; i++) {
		_cleanup_free_ char *path = NULL;

		if (i == 1 && !x->project)
			break;
		r = decisions_path(x->dir, i == 1 ? x->project : NULL, &path, err);
		if (r >= 0)
			r = read_shared(path,
			                i ? CONFIG_LAYER_PROJECT_DECISIONS
			                  : CONFIG_LAYER_GLOBAL_DECISIONS,
			                &fresh[i], err);
	}
	if (r < 0) {
		/* A file that does not parse now (being edited by hand): keep what held. */
		config_free(fresh[0]);
		config_free(fresh[1]);
		return r;
	}
	for (int i = 0; i < 2; i++) {
		config_free(x->shared[i]);
		x->shared[i] = fresh[i];
	}
	return 0;
}

static int on_inotify(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct exec_decisions *x = userdata;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct cl_error err = {""};
	bool any = false;

	(void)loop;
	(void)events;
	while (read(fd, buf, sizeof(buf)) > 0)
		any = true;
	if (!any)
		return 0;
	watch_dirs(x);
	if (exec_decisions_reload(x, &err) < 0) {
		say("decisions files not read again: %s", err.msg);
		return 0;
	}
	if (x->changed)
		x->changed(x->changed_userdata);
	return 0;
}

int exec_decisions_watch(struct exec_decisions *x, struct loop *loop,
                         void (*changed)(void *userdata), void *userdata, struct cl_error *err)
{
	int r;

	if (!x->dir)
		return 0;
	x->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (x->inotify_fd < 0)
		return cl_error_set(err, -errno, "inotify: %m");
	watch_dirs(x);
	r = loop_add_fd(loop, x->inotify_fd, EPOLLIN, on_inotify, x);
	if (r < 0) {
		close(x->inotify_fd);
		x->inotify_fd = -1;
		return cl_error_set(err, r, "inotify on the loop: %s", strerror(-r));
	}
	x->loop = loop;
	x->changed = changed;
	x->changed_userdata = userdata;
	/* What was written between this run's config and the watch. */
	return exec_decisions_reload(x, err);
}
