#include "supervisor/policy/policy.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "protocol/protocol.h"
#include "supervisor/policy/path_glob.h"

const char *policy_verdict_to_string(enum policy_verdict verdict)
{
	switch (verdict) {
	case POLICY_ALLOW:
		return "allow";
	case POLICY_DENY:
		return "deny";
	case POLICY_ASK:
		return "ask";
	}
	return "?";
}

__attribute__((format(printf, 4, 5))) static void decide(struct policy_result *res,
                                                         enum policy_verdict verdict,
                                                         const struct config_origin *origin,
                                                         const char *reason_fmt, ...)
{
	va_list ap;

	res->verdict = verdict;
	if (verdict != POLICY_ASK)
		res->fallback = verdict;
	if (origin)
		res->origin = *origin;
	va_start(ap, reason_fmt);
	vsnprintf(res->reason, sizeof(res->reason), reason_fmt, ap);
	va_end(ap);
}

static void set_subject(struct policy_result *res, const char *subject)
{
	size_t len = strlen(subject);

	if (len < sizeof(res->subject)) {
		memcpy(res->subject, subject, len + 1);
		return;
	}
	/* Only for display; matching always sees the whole string. */
	memcpy(res->subject, subject, sizeof(res->subject) - 4);
	strcpy(res->subject + sizeof(res->subject) - 4, "...");
}

/* ---- exec -------------------------------------------------------------------------------- */

/* Absolute, no empty, "." or ".." component, no trailing slash. */
static bool path_is_normal(const char *path)
{
	const char *p = path;

	if (path[0] != '/' || path[1] == '\0')
		return false;
	while (*p == '/') {
		const char *next = strchrnul(p + 1, '/');
		size_t len = (size_t)(next - (p + 1));

		if (len == 0 || (len == 1 && p[1] == '.') ||
		    (len == 2 && p[1] == '.' && p[2] == '.'))
			return false;
		p = next;
	}
	return true;
}

static void describe_exec_rule(const struct config_exec_rule *rule, char *buf, size_t size)
{
	int n;

	if (rule->tree) {
		snprintf(buf, size, "%s: \"%.400s\" and below", rule->list, rule->path_glob);
		return;
	}
	n = snprintf(buf, size, "%s[%u]", rule->list, rule->index);

	if (n < 0 || (size_t)n >= size)
		return;
	if (rule->path_glob)
		n += snprintf(buf + n, size - (size_t)n, " path \"%.200s\"", rule->path_glob);
	if ((size_t)n < size && rule->command.source)
		n += snprintf(buf + n, size - (size_t)n, " command \"%.200s\"",
		              rule->command.source);
	if ((size_t)n < size && rule->argv0)
		n += snprintf(buf + n, size - (size_t)n, " argv0 \"%.60s\"", rule->argv0);
	if ((size_t)n < size && rule->sha256)
		snprintf(buf + n, size - (size_t)n, " sha256 %.12s…", rule->sha256);
}

/* The canonical commands an exec's `command:` rules are matched against. by_path names the
 * program by its file (argv[0] is the caller's to choose). A multi-call program acts on
 * argv[0] instead (`execve("/usr/bin/git", ["git-clean", "log", "-fdx"])` runs git clean), so
 * when argv[0]'s file name differs, by_argv0 is the command under that name and rules must
 * hold for both. Only the first argc arguments fit (CL_QUOTE_MAX_OUTPUT, CL_QUOTE_MAX_ARGC);
 * truncated says the strings hold a prefix of argv. */
struct exec_commands {
	char *by_path;
	char *by_argv0; /* NULL: argv[0] names the same file */
	const char *argv0_name;
	size_t argc;
	bool truncated;
};

static void exec_commands_done(struct exec_commands *c)
{
	free(c->by_path);
	free(c->by_argv0);
}

static const char *file_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* How many leading arguments fit the canonical command's limits (0: not even the first). */
static size_t args_that_fit(const char *const *args, size_t argc)
{
	size_t total = 0, n = 0;

	for (; n < argc && n < CL_QUOTE_MAX_ARGC; n++) {
		size_t len = strlen(args[n]);

		if (len > CL_QUOTE_MAX_OUTPUT)
			break;
		total += (n > 0) + cl_quote_arg_length(args[n], len);
		if (total > CL_QUOTE_MAX_OUTPUT)
			break;
	}
	return n;
}

static int exec_commands_build(const char *path, const char *const *argv, size_t argc,
                               bool truncated, struct exec_commands *ret, struct cl_error *err)
{
	/* An empty argv is legal: the kernel then runs the program with argv = {""}. */
	static const char *const empty_argv[] = {""};
	_cleanup_free_ const char **args = NULL;
	struct exec_commands c = {.truncated = truncated};
	size_t n, m;
	int r;

	if (argc == 0) {
		argv = empty_argv;
		argc = 1;
	}
	if (!*file_name(path))
		return cl_error_set(err, -EINVAL, "executable path \"%s\" has no file name", path);
	args = calloc(argc, sizeof(*args));
	if (!args)
		return cl_error_set(err, -ENOMEM, "out of memory");
	memcpy(args, argv, argc * sizeof(*args));
	c.argv0_name = file_name(argv[0]);

	args[0] = c.argv0_name;
	n = args_that_fit(args, argc);
	args[0] = file_name(path);
	m = args_that_fit(args, argc);
	if (m < n)
		n = m;
	if (n == 0)
		return cl_error_set(err, -E2BIG, "argv[0] is too long to build a command from");
	c.argc = n;
	c.truncated = truncated || n < argc;

	r = cl_quote_strv(args, n, err, &c.by_path);
	if (r >= 0 && strcmp(c.argv0_name, args[0]) != 0) {
		args[0] = c.argv0_name;
		r = cl_quote_strv(args, n, err, &c.by_argv0);
	}
	if (r < 0) {
		exec_commands_done(&c);
		return r;
	}
	*ret = c;
	return 0;
}

/* 1 match, 0 no match, <0 the regex could not be evaluated. An allow rule's regex must match
 * every form of the command and can never be shown to match a truncated one; for a deny
 * rule one form is enough. */
static int exec_rule_matches(const struct config_exec_rule *rule, const char *path,
                             const struct exec_commands *cmds, bool deny)
{
	int r;

	if (rule->tree) {
		size_t len = strlen(rule->path_glob);

		return strncmp(path, rule->path_glob, len) == 0 &&
		       (path[len] == '\0' || path[len] == '/');
	}
	if (rule->argv0 && strcmp(rule->argv0, cmds->argv0_name) != 0)
		return 0;
	if (rule->path_glob && !path_glob_match(rule->path_glob, path))
		return 0;
	if (!rule->command.code)
		return 1;
	if (cmds->truncated && !deny)
		return 0;
	r = config_regex_match(&rule->command, cmds->by_path);
	if (cmds->by_argv0 && r == (deny ? 0 : 1))
		r = config_regex_match(&rule->command, cmds->by_argv0);
	return r;
}

static void describe_setting(char *buf, size_t size, const char *key, const char *value)
{
	snprintf(buf, size, "%s=%s", key, value);
}

/* Say what a person deciding must know beyond the command line. */
static void note_exec_details(struct policy_result *res, const struct exec_commands *cmds,
                              size_t argc)
{
	size_t len = strlen(res->reason);

	if (cmds->by_argv0)
		snprintf(res->reason + len, sizeof(res->reason) - len,
		         " (argv[0] is \"%.100s\", which a multi-call program acts on)",
		         cmds->argv0_name);
	len = strlen(res->reason);
	if (cmds->truncated)
		snprintf(res->reason + len, sizeof(res->reason) - len,
		         " (only the first %zu of %s%zu arguments could be checked)", cmds->argc,
		         cmds->argc < argc ? "" : "more than ", argc);
}

static int check_exec(const struct config *cfg, const char *path, const char *const *argv,
                      size_t argc, bool truncated, const char *sha256, struct policy_result *ret,
                      struct cl_error *err)
{
	_cleanup_(exec_commands_done) struct exec_commands cmds = {0};
	const struct config_exec_rule *allowed = NULL, *unsure = NULL;
	struct policy_result res = {0};
	int r;

	r = exec_commands_build(path, argv, argc, truncated, &cmds, err);
	if (r < 0)
		return r;
	set_subject(&res, cmds.by_path);

	if (!path_is_normal(path)) {
		snprintf(res.rule, sizeof(res.rule), "executable path check");
		decide(&res, POLICY_DENY, NULL,
		       "the executable path \"%.200s\" is not absolute and normalised, so no rule "
		       "can be trusted to match it",
		       path);
		*ret = res;
		return 0;
	}

	for (size_t i = 0; i < cfg->exec.deny.n; i++) {
		const struct config_exec_rule *rule = &cfg->exec.deny.items[i];
		/* An unevaluable deny regex counts as a match: errors never let an exec through. */
		r = exec_rule_matches(rule, path, &cmds, true);
		if (r != 0) {
			describe_exec_rule(rule, res.rule, sizeof(res.rule));
			decide(&res, POLICY_DENY, &rule->origin,
			       "%s matches a deny rule; deny rules win over every allow rule",
			       path);
			res.by_deny_rule = true;
			note_exec_details(&res, &cmds, argc);
			*ret = res;
			return 0;
		}
		/* The rest of a truncated command might still match this rule. */
		if (cmds.truncated && !unsure && rule->command.code &&
		    (!rule->path_glob || path_glob_match(rule->path_glob, path)))
			unsure = rule;
	}

	for (size_t i = 0; i < cfg->exec.allow.n && !allowed; i++) {
		const struct config_exec_rule *rule = &cfg->exec.allow.items[i];

		if (exec_rule_matches(rule, path, &cmds, false) != 1)
			continue;
		/* A rule pinned to a content holds for that content only. */
		if (rule->sha256 && !sha256)
			res.pin_wanted = true;
		else if (rule->sha256 && strcmp(rule->sha256, sha256) != 0)
			res.content_changed = true;
		else
			allowed = rule;
	}

	switch (cfg->exec.ask_fallback) {
	case EXEC_SECURITY_DENY:
		res.fallback = POLICY_DENY;
		break;
	case EXEC_SECURITY_ALLOWLIST:
		res.fallback = allowed ? POLICY_ALLOW : POLICY_DENY;
		break;
	case EXEC_SECURITY_FULL:
		res.fallback = POLICY_ALLOW;
		break;
	}

	switch (cfg->exec.security) {
	case EXEC_SECURITY_DENY:
		describe_setting(res.rule, sizeof(res.rule), "exec.security", "deny");
		decide(&res, POLICY_DENY, &cfg->exec.security_at.origin,
		       "exec.security is deny: no program may be run");
		break;
	case EXEC_SECURITY_FULL:
		if (cfg->exec.ask == EXEC_ASK_ALWAYS) {
			describe_setting(res.rule, sizeof(res.rule), "exec.ask", "always");
			decide(&res, POLICY_ASK, &cfg->exec.ask_at.origin,
			       "exec.security is full but exec.ask is always: every exec is asked");
		} else {
			describe_setting(res.rule, sizeof(res.rule), "exec.security", "full");
			decide(&res, POLICY_ALLOW, &cfg->exec.security_at.origin,
			       "exec.security is full: every program not denied may run");
		}
		break;
	case EXEC_SECURITY_ALLOWLIST:
		if (allowed && cfg->exec.ask == EXEC_ASK_ALWAYS) {
			describe_exec_rule(allowed, res.rule, sizeof(res.rule));
			decide(&res, POLICY_ASK, &allowed->origin,
			       "an allow rule matches, but exec.ask is always: every exec is "
			       "asked");
		} else if (allowed) {
			describe_exec_rule(allowed, res.rule, sizeof(res.rule));
			decide(&res, POLICY_ALLOW, &allowed->origin, "%s matches an allow rule",
			       path);
		} else if (cfg->exec.ask == EXEC_ASK_OFF) {
			describe_setting(res.rule, sizeof(res.rule), "exec.ask", "off");
			decide(&res, POLICY_DENY, &cfg->exec.ask_at.origin,
			       "no allow rule matched and exec.ask is off");
		} else {
			describe_setting(res.rule, sizeof(res.rule), "exec.ask",
			                 exec_ask_to_string(cfg->exec.ask));
			decide(&res, POLICY_ASK, &cfg->exec.ask_at.origin,
			       "no allow rule matched; exec.ask is %s, so a person decides",
			       exec_ask_to_string(cfg->exec.ask));
		}
		break;
	}
	if (unsure) {
		/* A deny rule could not be ruled out: never allow without a person. */
		res.fallback = POLICY_DENY;
		if (res.verdict == POLICY_ALLOW) {
			describe_exec_rule(unsure, res.rule, sizeof(res.rule));
			if (cfg->exec.ask == EXEC_ASK_OFF) {
				decide(&res, POLICY_DENY, &unsure->origin,
				       "the argument list is too long to rule out this deny rule, "
				       "and exec.ask is off");
				res.by_deny_rule = true;
			} else
				decide(&res, POLICY_ASK, &unsure->origin,
				       "the argument list is too long to rule out this deny rule, "
				       "so a person decides");
		}
	}
	note_exec_details(&res, &cmds, argc);
	*ret = res;
	return 0;
}

int policy_check_exec(const struct config *cfg, const char *path, const char *const *argv,
                      size_t argc, struct policy_result *ret, struct cl_error *err)
{
	return check_exec(cfg, path, argv, argc, false, NULL, ret, err);
}

int policy_check_exec_prefix(const struct config *cfg, const char *path, const char *const *argv,
                             size_t argc, struct policy_result *ret, struct cl_error *err)
{
	return check_exec(cfg, path, argv, argc, true, NULL, ret, err);
}

int policy_check_exec_content(const struct config *cfg, const char *path, const char *const *argv,
                              size_t argc, bool truncated, const char *sha256,
                              struct policy_result *ret, struct cl_error *err)
{
	return check_exec(cfg, path, argv, argc, truncated, sha256, ret, err);
}

/* ---- hostexec ---------------------------------------------------------------------------- */

static const struct config_pattern_rule *first_match(const struct config_pattern_list *list,
                                                     const char *command)
{
	for (size_t i = 0; i < list->n; i++)
		if (config_regex_match(&list->items[i].regex, command) == 1)
			return &list->items[i];
	return NULL;
}

int policy_check_hostexec(const struct config *cfg, const char *command, struct policy_result *ret,
                          struct cl_error *err)
{
	struct policy_result res = {.fallback = POLICY_DENY};
	const struct config_pattern_rule *rule;

	set_subject(&res, command);
	rule = first_match(&cfg->hostexec.auto_approve, command);
	if (rule) {
		snprintf(res.rule, sizeof(res.rule), "%s[%u] pattern \"%.400s\"", rule->list,
		         rule->index, rule->regex.source);
		snprintf(res.pattern, sizeof(res.pattern), "%s", rule->regex.source);
		decide(&res, POLICY_ALLOW, &rule->origin,
		       "the command matches an auto_approve pattern");
		*ret = res;
		return 0;
	}
	rule = first_match(&cfg->hostexec.manual_approve, command);
	if (rule) {
		snprintf(res.rule, sizeof(res.rule), "%s[%u] pattern \"%.400s\"", rule->list,
		         rule->index, rule->regex.source);
		snprintf(res.pattern, sizeof(res.pattern), "%s", rule->regex.source);
		decide(&res, POLICY_ASK, &rule->origin,
		       "the command matches a manual_approve pattern, so a person decides");
		*ret = res;
		return 0;
	}
	snprintf(res.rule, sizeof(res.rule), "no hostexec pattern matched");
	/* Cloister's exact wording: clients may show or match it. */
	decide(&res, POLICY_DENY, NULL, "Command doesn't match allowlist");
	*ret = res;
	return 0;
}

/* ---- domains ----------------------------------------------------------------------------- */

/* The first entry of LIST that matches QUERY: a deny list's patterns cover every depth below
 * their apex, an allow list's one level; with EXACT only entries naming a host (no pattern). */
/* SKIP: a mask of (1 << config_layer) whose rules are left out. */
static const struct config_domain_rule *domain_match(const struct config_domain_list *list,
                                                     unsigned skip, const struct domain_spec *query,
                                                     bool deny, bool exact)
{
	for (size_t i = 0; list && i < list->n; i++)
		if (!(skip & (1U << list->items[i].origin.layer)) &&
		    (!exact || !list->items[i].spec.wildcard) &&
		    (deny ? domain_spec_matches_deny(&list->items[i].spec, query)
		          : domain_spec_matches(&list->items[i].spec, query)))
			return &list->items[i];
	return NULL;
}

/* An allow pattern that would have covered QUERY but for its depth (a.b.example.com under
 * "*.example.com"): worth naming in the reason of an unlisted domain. */
static const struct config_domain_rule *deeper_than_allowed(const struct config_domain_list *list,
                                                            unsigned skip,
                                                            const struct domain_spec *query)
{
	for (size_t i = 0; list && i < list->n; i++) {
		const struct domain_spec *rule = &list->items[i].spec;

		if (skip & (1U << list->items[i].origin.layer))
			continue;
		if ((rule->port == 0 || rule->port == query->port) &&
		    domain_spec_depth_below(rule, query) > 1)
			return &list->items[i];
	}
	return NULL;
}

static void describe_domain_rule(const struct config_domain_rule *rule, char *buf, size_t size)
{
	char spec[DOMAIN_HOST_MAX + 16];

	if (domain_spec_format(&rule->spec, spec, sizeof(spec)) < 0)
		snprintf(spec, sizeof(spec), "?");
	snprintf(buf, size, "%s[%u] %s \"%s\"", rule->list, rule->index,
	         rule->spec.wildcard ? "pattern" : "domain", spec);
}

int policy_check_domain(const struct config *cfg, const struct policy_session *session,
                        const char *host, struct policy_result *ret, struct cl_error *err)
{
	return policy_check_domain_in(cfg, &session, 1, host, ret, err);
}

int policy_check_domain_in(const struct config *cfg, const struct policy_session *const *sessions,
                           size_t n, const char *host, struct policy_result *ret,
                           struct cl_error *err)
{
	return policy_check_domain_except(cfg, 0, sessions, n, host, ret, err);
}

int policy_check_domain_except(const struct config *cfg, unsigned skip_layers,
                               const struct policy_session *const *sessions, size_t n,
                               const char *host, struct policy_result *ret, struct cl_error *err)
{
	struct policy_result res = {.fallback = POLICY_DENY};
	const struct config_domain_rule *rule;
	struct domain_spec query;
	int r;

	r = domain_spec_parse(host, false, &query, err);
	if (r < 0)
		return r;
	r = domain_spec_format(&query, res.subject, sizeof(res.subject));
	if (r < 0)
		return cl_error_set(err, r, "cannot format \"%s\"", host);

	/* Denials win over approvals at every scope. */
	rule = domain_match(&cfg->proxy.deny, skip_layers, &query, true, false);
	for (size_t i = 0; !rule && i < n; i++)
		if (sessions[i])
			rule = domain_match(&sessions[i]->deny, 0, &query, true, false);
	if (rule) {
		describe_domain_rule(rule, res.rule, sizeof(res.rule));
		if (rule->spec.wildcard)
			decide(&res, POLICY_DENY, &rule->origin,
			       "%s is denied (%s decision): a denied pattern covers %s and its "
			       "subdomains at every depth; denials win over approvals",
			       res.subject, config_layer_to_string(rule->origin.layer),
			       rule->spec.host);
		else
			decide(&res, POLICY_DENY, &rule->origin,
			       "%s is denied (%s decision); denials win over approvals",
			       res.subject, config_layer_to_string(rule->origin.layer));
		*ret = res;
		return 0;
	}
	/* An entry naming the host itself, wherever it is listed, is the one that decides: it
	 * says more than a pattern that also matches (and it is what exact_host needs). */
	for (int exact = 1; exact >= 0 && !rule; exact--) {
		rule = domain_match(&cfg->proxy.allow, skip_layers, &query, false, exact);
		for (size_t i = 0; !rule && i < n; i++)
			if (sessions[i])
				rule = domain_match(&sessions[i]->allow, 0, &query, false, exact);
	}
	if (rule) {
		describe_domain_rule(rule, res.rule, sizeof(res.rule));
		if (rule->spec.wildcard)
			decide(&res, POLICY_ALLOW, &rule->origin,
			       "%s is allowed (%s): an allowed pattern covers %s and one subdomain "
			       "level",
			       res.subject, config_layer_to_string(rule->origin.layer),
			       rule->spec.host);
		else
			decide(&res, POLICY_ALLOW, &rule->origin, "%s is allowed (%s)", res.subject,
			       config_layer_to_string(rule->origin.layer));
		res.exact_host = !rule->spec.wildcard;
		*ret = res;
		return 0;
	}
	snprintf(res.rule, sizeof(res.rule), "proxy.unlisted_domain_behavior=%s",
	         unlisted_behavior_to_string(cfg->proxy.unlisted));
	{
		const struct config_domain_rule *near =
		        deeper_than_allowed(&cfg->proxy.allow, skip_layers, &query);
		char why[DOMAIN_HOST_MAX + 160] = "";

		for (size_t i = 0; !near && i < n; i++)
			if (sessions[i])
				near = deeper_than_allowed(&sessions[i]->allow, 0, &query);
		if (near)
			snprintf(why, sizeof(why),
			         " (the allowed pattern \"*.%s\" covers one subdomain level only)",
			         near->spec.host);
		if (cfg->proxy.unlisted == UNLISTED_REJECT)
			decide(&res, POLICY_DENY, &cfg->proxy.unlisted_at.origin,
			       "%s is not in the allowlist%s and unlisted domains are rejected%s",
			       res.subject, why,
			       cfg->proxy.unlisted_at.origin.line == 0 &&
			                       cfg->proxy.unlisted_at.origin.file
			               ? " (unlisted_domain_behavior is not set in the config "
			                 "file, "
			                 "which means reject, as in Cloister)"
			               : "");
		else
			decide(&res, POLICY_ASK, &cfg->proxy.unlisted_at.origin,
			       "%s is not in the allowlist%s, so a person decides (denied after "
			       "%llu "
			       "s without an answer)",
			       res.subject, why,
			       (unsigned long long)(cfg->proxy.approval_timeout_ms / 1000));
	}
	*ret = res;
	return 0;
}
