#include "supervisor/exec_decision.h"

#include <string.h>

typedef int (*exec_check_fn)(const struct config *, const char *, const char *const *, size_t,
                             struct policy_result *, struct cl_error *);

/* policy_check_exec names the deciding deny rule "exec.deny[N] …"; other denials come from
 * settings (exec.security, exec.ask) that must be judged on the real file. */
static bool denied_by_rule(const struct policy_result *res)
{
	return res->verdict == POLICY_DENY && strncmp(res->rule, "exec.deny[", 10) == 0;
}

int exec_decide(const struct config *config, const char *given_path, const char *real_path,
                const char *const *argv, size_t argc, bool truncated, struct policy_result *ret,
                struct cl_error *err)
{
	exec_check_fn check = truncated ? policy_check_exec_prefix : policy_check_exec;
	struct policy_result given, real;
	int r;

	r = check(config, given_path, argv, argc, &given, err);
	if (r < 0)
		return r;
	if (!real_path || strcmp(real_path, given_path) == 0 || denied_by_rule(&given)) {
		*ret = given;
		return 0;
	}
	r = check(config, real_path, argv, argc, &real, err);
	if (r < 0)
		return r;
	*ret = real;
	return 0;
}
