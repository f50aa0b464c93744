#include "supervisor/policy/exec_decision.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

typedef int (*exec_check_fn)(const struct config *, const char *, const char *const *, size_t,
                             struct policy_result *, struct cl_error *);

int exec_decide(const struct config *config, const char *given_path, const char *real_path,
                const char *const *argv, size_t argc, bool truncated, struct policy_result *ret,
                struct cl_error *err)
{
	return exec_decide_content(config, given_path, real_path, argv, argc, truncated, NULL, ret,
	                           err);
}

int exec_decide_content(const struct config *config, const char *given_path, const char *real_path,
                        const char *const *argv, size_t argc, bool truncated, const char *sha256,
                        struct policy_result *ret, struct cl_error *err)
{
	struct policy_result given, real;
	int r;

	r = policy_check_exec_content(config, given_path, argv, argc, truncated, sha256, &given,
	                              err);
	if (r < 0)
		return r;
	if (!real_path || strcmp(real_path, given_path) == 0 || given.by_deny_rule) {
		*ret = given;
		return 0;
	}
	r = policy_check_exec_content(config, real_path, argv, argc, truncated, sha256, &real, err);
	if (r < 0)
		return r;
	*ret = real;
	return 0;
}

int exec_decide_alias(const struct config *config, const char *alias, const char *const *argv,
                      size_t argc, bool truncated, struct policy_result *res, struct cl_error *err)
{
	exec_check_fn check = truncated ? policy_check_exec_prefix : policy_check_exec;
	struct policy_result a;
	int r;

	if (res->by_deny_rule)
		return 0;
	r = check(config, alias, argv, argc, &a, err);
	if (r < 0)
		return r;
	if (!a.by_deny_rule)
		return 0;
	memcpy(a.subject, res->subject, sizeof(a.subject));
	snprintf(a.reason, sizeof(a.reason),
	         "the file run is %.200s under another name (a hard link), and a deny rule denies "
	         "%.200s",
	         alias, alias);
	*res = a;
	return 0;
}

static int strictness(enum policy_verdict v)
{
	return v == POLICY_DENY ? 2 : v == POLICY_ASK ? 1 : 0;
}

/* What RES becomes when nobody can answer. */
static enum policy_verdict unattended(const struct policy_result *res)
{
	return res->verdict == POLICY_ASK ? res->fallback : res->verdict;
}

int exec_decide_interpreter(const struct config *config, const char *interp_given,
                            const char *interp_real, const char *interp_arg, const char *script,
                            const char *const *argv, size_t argc, bool truncated,
                            struct policy_result *res, struct cl_error *err)
{
	_cleanup_free_ const char **iargv = NULL;
	const char *given = interp_given ? interp_given : interp_real;
	struct policy_result interp;
	bool fallback_allows;
	size_t n = 0;
	int r;

	if (!given)
		return cl_error_set(err, -EINVAL, "cannot tell which interpreter the script runs");
	iargv = calloc(argc + 3, sizeof(*iargv));
	if (!iargv)
		return cl_error_set(err, -ENOMEM, "out of memory");
	iargv[n++] = given;
	if (interp_arg)
		iargv[n++] = interp_arg;
	iargv[n++] = script;
	for (size_t i = 1; i < argc; i++)
		iargv[n++] = argv[i];
	r = exec_decide(config, given, interp_real, iargv, n, truncated, &interp, err);
	if (r < 0)
		return r;

	fallback_allows = unattended(res) == POLICY_ALLOW && unattended(&interp) == POLICY_ALLOW;
	if (strictness(interp.verdict) > strictness(res->verdict)) {
		res->verdict = interp.verdict;
		res->origin = interp.origin;
		/* Cut to fit: the subject (the script's command) stays what a person sees. */
		if (snprintf(res->rule, sizeof(res->rule), "interpreter %s: %s", given,
		             interp.rule) >= (int)sizeof(res->rule))
			res->rule[sizeof(res->rule) - 1] = '\0';
		if (snprintf(res->reason, sizeof(res->reason), "the script's interpreter: %s",
		             interp.reason) >= (int)sizeof(res->reason))
			res->reason[sizeof(res->reason) - 1] = '\0';
	}
	if (res->verdict == POLICY_ASK)
		res->fallback = fallback_allows ? POLICY_ALLOW : POLICY_DENY;
	return 0;
}
