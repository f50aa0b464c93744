/* See fs_policy.h. */
#include "supervisor/policy/fs_policy.h"

#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "supervisor/policy/path_boundary.h"

/* The variables a pattern may start with; "~" is {home}. */
static const struct {
	const char *name;
	size_t offset;
} vars_table[] = {
        {"{home}", offsetof(struct fs_vars, home)},
        {"{worktree}", offsetof(struct fs_vars, worktree)},
        {"~", offsetof(struct fs_vars, home)},
};

/* The length of the variable PATTERN starts with (and its index in *ret_index), 0 for an
 * absolute pattern, -1 when it starts with neither. A variable is followed by "/" or the end. */
static int leading_var(const char *pattern, size_t *ret_index)
{
	if (pattern[0] == '/')
		return 0;
	for (size_t i = 0; i < ELEMENTSOF(vars_table); i++) {
		size_t len = strlen(vars_table[i].name);

		if (strncmp(pattern, vars_table[i].name, len) == 0 &&
		    (pattern[len] == '\0' || pattern[len] == '/')) {
			*ret_index = i;
			return (int)len;
		}
	}
	return -1;
}

int fs_pattern_check(const char *pattern, char *msg, size_t size)
{
	size_t index, len = strlen(pattern);
	int skip;
	const char *p;

	if (len == 0) {
		snprintf(msg, size, "expected a path, got an empty string");
		return -EINVAL;
	}
	if (len > CONFIG_MAX_PATTERN) {
		snprintf(msg, size, "path longer than %d bytes", CONFIG_MAX_PATTERN);
		return -EINVAL;
	}
	skip = leading_var(pattern, &index);
	if (skip < 0) {
		snprintf(msg, size,
		         "expected an absolute path, or one starting with ~, {home} or {worktree}, "
		         "got \"%.200s\"",
		         pattern);
		return -EINVAL;
	}
	/* Components after the variable (or the leading '/'). */
	for (p = pattern + skip; *p;) {
		const char *end;
		size_t n;

		if (*p == '/')
			p++;
		end = strchrnul(p, '/');
		n = (size_t)(end - p);
		if (n == 0 && *end == '\0')
			break; /* a trailing '/': a directory (or "/" itself) */
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) {
			snprintf(msg, size,
			         "\"%.200s\" has an empty, \".\" or \"..\" component; write the "
			         "path plainly",
			         pattern);
			return -EINVAL;
		}
		if (memmem(p, n, "**", 2)) {
			snprintf(msg, size,
			         "\"**\" is not recursive here (a '*' never crosses '/', and a "
			         "pattern covers everything below what it matches), got \"%.200s\"",
			         pattern);
			return -EINVAL;
		}
		if (memchr(p, '{', n) || memchr(p, '}', n)) {
			snprintf(msg, size,
			         "\"%.200s\": a variable ({home}, {worktree}) may only start the "
			         "path",
			         pattern);
			return -EINVAL;
		}
		p = end;
	}
	return 0;
}

int fs_pattern_expand(const char *pattern, const struct fs_vars *vars, char **ret_path,
                      bool *ret_dir)
{
	char msg[64];
	_cleanup_free_ char *joined = NULL, *norm = NULL;
	const char *base = "";
	size_t index = 0, len = strlen(pattern);
	int skip, r;

	r = fs_pattern_check(pattern, msg, sizeof(msg));
	if (r < 0)
		return r;
	skip = leading_var(pattern, &index);
	if (skip > 0) {
		base = *(const char *const *)((const char *)vars + vars_table[index].offset);
		if (!base)
			return -ENOENT;
		if (base[0] != '/')
			return -EINVAL;
	}
	if (asprintf(&joined, "%s%s", base, pattern + skip) < 0)
		return -ENOMEM;
	if (strlen(joined) >= PATH_MAX)
		return -ENAMETOOLONG;
	/* Only the base can hold "//" or a trailing '/'; the pattern was checked. */
	r = path_normalize(joined, NULL, &norm);
	if (r < 0)
		return r;
	*ret_dir = len > 1 && pattern[len - 1] == '/';
	*ret_path = TAKE_PTR(norm);
	return 0;
}

static size_t count_components(const char *path)
{
	size_t n = 0;

	for (const char *p = path; *p; p++)
		if (*p == '/' && p[1] != '\0')
			n++;
	return n;
}

bool fs_pattern_is_glob(const char *expanded)
{
	return strpbrk(expanded, "*?[") != NULL;
}

bool fs_pattern_covers(const char *expanded, const char *path)
{
	size_t want = count_components(expanded), seen = 0;
	char prefix[PATH_MAX];
	size_t i;

	if (strcmp(expanded, "/") == 0)
		return true;
	/* Only the ancestor with as many components as the pattern can match: no '*' crosses
	 * a '/'. */
	for (i = 0; path[i]; i++)
		if (path[i] == '/' && i > 0 && ++seen == want)
			break;
	if (seen + (path[i] == '\0' && i > 1) < want)
		return false;
	if (i >= sizeof(prefix))
		return false;
	memcpy(prefix, path, i);
	prefix[i] = '\0';
	return fnmatch(expanded, prefix, FNM_PATHNAME) == 0;
}

/* The first entry of LIST that covers PATH, or NULL. Patterns naming a variable VARS lacks
 * match nothing. */
static int first_cover(const struct config_fs_list *list, const struct fs_vars *vars,
                       const char *path, const struct config_fs_rule **ret)
{
	for (size_t i = 0; i < list->n; i++) {
		_cleanup_free_ char *expanded = NULL;
		bool dir;
		int r = fs_pattern_expand(list->items[i].pattern, vars, &expanded, &dir);

		if (r == -ENOENT)
			continue;
		if (r < 0)
			return r;
		if (fs_pattern_covers(expanded, path)) {
			*ret = &list->items[i];
			return 1;
		}
	}
	return 0;
}

const char *fs_verdict_to_string(enum fs_verdict v)
{
	switch (v) {
	case FS_ALLOW:
		return "allow";
	case FS_ASK:
		return "ask";
	case FS_DENY_HIDE:
		return "deny (hidden)";
	case FS_DENY_PROTECT:
		return "deny (protected)";
	case FS_DENY_OUTSIDE:
		return "deny (outside fs.write)";
	}
	return "?";
}

static void rule_reason(struct fs_result *res, const char *path, const char *what)
{
	const struct config_fs_rule *rule = res->rule;

	snprintf(res->reason, sizeof(res->reason), "%.100s %s: %s[%u] \"%.60s\" (%s:%u)", path,
	         what, rule->list, rule->index, rule->pattern,
	         rule->origin.file ? rule->origin.file : "?", rule->origin.line);
}

int fs_policy_check(const struct config *cfg, const struct fs_vars *vars, const char *path,
                    bool write, struct fs_result *ret, struct cl_error *err)
{
	_cleanup_free_ char *norm = NULL;
	struct fs_result res = {0};
	int r;

	r = path_normalize(path, err, &norm);
	if (r < 0)
		return r;
	if ((r = first_cover(&cfg->fs.hide, vars, norm, &res.rule)) < 0)
		goto fail;
	if (r > 0) {
		res.verdict = FS_DENY_HIDE;
		rule_reason(&res, norm, "is hidden");
		*ret = res;
		return 0;
	}
	if (!write) {
		res.verdict = FS_ALLOW;
		snprintf(res.reason, sizeof(res.reason),
		         "%.150s is readable: reads are free outside fs.hide", norm);
		*ret = res;
		return 0;
	}
	if ((r = first_cover(&cfg->fs.protect, vars, norm, &res.rule)) < 0)
		goto fail;
	if (r > 0) {
		res.verdict = FS_DENY_PROTECT;
		rule_reason(&res, norm, "is read-only");
		*ret = res;
		return 0;
	}
	if ((r = first_cover(&cfg->fs.write, vars, norm, &res.rule)) < 0)
		goto fail;
	if (r > 0) {
		res.verdict = FS_ALLOW;
		rule_reason(&res, norm, "is writable");
		*ret = res;
		return 0;
	}
	res.rule = NULL;
	/* The private /tmp, less what the sandbox keeps of the host's there (a home or a
	 * worktree under /tmp is the host's, seen through). */
	if (cfg->fs.tmp == FS_TMP_PRIVATE && fs_pattern_covers("/tmp", norm) &&
	    !(vars->home && fs_pattern_covers(vars->home, norm)) &&
	    !(vars->worktree && fs_pattern_covers(vars->worktree, norm))) {
		res.verdict = FS_ALLOW;
		res.setting = &cfg->fs.tmp_at;
		snprintf(res.reason, sizeof(res.reason),
		         "%.150s is writable: fs.tmp: private (an empty /tmp of the sandbox's own)",
		         norm);
		*ret = res;
		return 0;
	}
	if (cfg->fs.ask == FS_ASK_ON_WRITE) {
		res.verdict = FS_ASK;
		res.setting = &cfg->fs.ask_at;
		snprintf(res.reason, sizeof(res.reason),
		         "%.150s is outside fs.write: fs.ask: on-write asks the user", norm);
	} else {
		res.verdict = FS_DENY_OUTSIDE;
		res.setting = cfg->fs.ask_at.text ? &cfg->fs.ask_at : NULL;
		snprintf(res.reason, sizeof(res.reason), "%.200s is outside fs.write", norm);
	}
	*ret = res;
	return 0;
fail:
	return cl_error_set(err, r, "%s: %s", res.rule ? res.rule->pattern : path, strerror(-r));
}
