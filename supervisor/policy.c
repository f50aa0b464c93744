#include "supervisor/policy.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/cleanup.h"
#include "protocol/protocol.h"

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

int policy_exec_command(const char *path, const char *const *argv, size_t argc, char **ret_command,
                        struct cl_error *err)
{
	_cleanup_free_ const char **args = NULL;
	const char *base = strrchr(path, '/');

	if (argc == 0)
		return cl_error_set(err, -EINVAL, "no arguments");
	base = base ? base + 1 : path;
	if (!*base)
		return cl_error_set(err, -EINVAL, "executable path \"%s\" has no file name", path);
	args = calloc(argc, sizeof(*args));
	if (!args)
		return cl_error_set(err, -ENOMEM, "out of memory");
	args[0] = base;
	for (size_t i = 1; i < argc; i++)
		args[i] = argv[i];
	return cl_quote_strv(args, argc, err, ret_command);
}

static void describe_exec_rule(const struct config_exec_rule *rule, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s[%u]", rule->list, rule->index);

	if (n < 0 || (size_t)n >= size)
		return;
	if (rule->path_glob)
		n += snprintf(buf + n, size - (size_t)n, " path \"%.200s\"", rule->path_glob);
	if ((size_t)n < size && rule->command.source)
		snprintf(buf + n, size - (size_t)n, " command \"%.200s\"", rule->command.source);
}

/* 1 match, 0 no match, <0 the regex could not be evaluated. */
static int exec_rule_matches(const struct config_exec_rule *rule, const char *path,
                             const char *command)
{
	if (rule->path_glob && fnmatch(rule->path_glob, path, FNM_PATHNAME) != 0)
		return 0;
	if (rule->command.code)
		return config_regex_match(&rule->command, command);
	return 1;
}

static void describe_setting(char *buf, size_t size, const char *key, const char *value)
{
	snprintf(buf, size, "%s=%s", key, value);
}

int policy_check_exec(const struct config *cfg, const char *path, const char *const *argv,
                      size_t argc, struct policy_result *ret, struct cl_error *err)
{
	_cleanup_free_ char *command = NULL;
	const struct config_exec_rule *allowed = NULL;
	struct policy_result res = {0};
	int r;

	r = policy_exec_command(path, argv, argc, &command, err);
	if (r < 0)
		return r;
	set_subject(&res, command);

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
		if (exec_rule_matches(rule, path, command) != 0) {
			describe_exec_rule(rule, res.rule, sizeof(res.rule));
			decide(&res, POLICY_DENY, &rule->origin,
			       "%s matches a deny rule; deny rules win over every allow rule",
			       path);
			*ret = res;
			return 0;
		}
	}

	for (size_t i = 0; i < cfg->exec.allow.n && !allowed; i++)
		if (exec_rule_matches(&cfg->exec.allow.items[i], path, command) == 1)
			allowed = &cfg->exec.allow.items[i];

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
	*ret = res;
	return 0;
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
		decide(&res, POLICY_ALLOW, &rule->origin,
		       "the command matches an auto_approve pattern");
		*ret = res;
		return 0;
	}
	rule = first_match(&cfg->hostexec.manual_approve, command);
	if (rule) {
		snprintf(res.rule, sizeof(res.rule), "%s[%u] pattern \"%.400s\"", rule->list,
		         rule->index, rule->regex.source);
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

static const struct config_domain_rule *domain_match(const struct config_domain_list *list,
                                                     const struct domain_spec *query)
{
	for (size_t i = 0; list && i < list->n; i++)
		if (domain_spec_matches(&list->items[i].spec, query))
			return &list->items[i];
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
	rule = domain_match(&cfg->proxy.deny, &query);
	if (!rule && session)
		rule = domain_match(&session->deny, &query);
	if (rule) {
		describe_domain_rule(rule, res.rule, sizeof(res.rule));
		decide(&res, POLICY_DENY, &rule->origin,
		       "%s is denied (%s decision); denials win over approvals", res.subject,
		       config_layer_to_string(rule->origin.layer));
		*ret = res;
		return 0;
	}
	rule = domain_match(&cfg->proxy.allow, &query);
	if (!rule && session)
		rule = domain_match(&session->allow, &query);
	if (rule) {
		describe_domain_rule(rule, res.rule, sizeof(res.rule));
		decide(&res, POLICY_ALLOW, &rule->origin, "%s is allowed (%s)", res.subject,
		       config_layer_to_string(rule->origin.layer));
		*ret = res;
		return 0;
	}
	snprintf(res.rule, sizeof(res.rule), "proxy.unlisted_domain_behavior=%s",
	         unlisted_behavior_to_string(cfg->proxy.unlisted));
	if (cfg->proxy.unlisted == UNLISTED_REJECT)
		decide(&res, POLICY_DENY, &cfg->proxy.unlisted_at.origin,
		       "%s is not in the allowlist and unlisted domains are rejected", res.subject);
	else
		decide(&res, POLICY_ASK, &cfg->proxy.unlisted_at.origin,
		       "%s is not in the allowlist, so a person decides (denied after %llu s "
		       "without an answer)",
		       res.subject, (unsigned long long)(cfg->proxy.approval_timeout_ms / 1000));
	*ret = res;
	return 0;
}
