/* Environment scrubbing: what the default rules keep and drop, deny over allow, duplicates,
 * malformed entries and the bounds. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "supervisor/policy/env_scrub.h"

static void test_defaults_keep_ordinary_settings_and_drop_secrets_and_hooks(void **state)
{
	static const char *const kept[] = {"PATH", "HOME",           "LANG", "LC_ALL",
	                                   "TERM", "USER",           "TZ",   "npm_config_cache",
	                                   "CI",   "CLOISTER_SOCKET"};
	static const char *const dropped[] = {"GITHUB_TOKEN",
	                                      "OPENAI_API_KEY",
	                                      "DB_PASSWORD",
	                                      "AWS_ACCESS_KEY_ID",
	                                      "AWS_REGION",
	                                      "LD_PRELOAD",
	                                      "LD_LIBRARY_PATH",
	                                      "BASH_ENV",
	                                      "ENV",
	                                      "PROMPT_COMMAND",
	                                      "BASH_FUNC_ls%%",
	                                      "CLOISTER_TOKEN",
	                                      "NODE_OPTIONS",
	                                      "MY_SECRET",
	                                      "SSH_AUTH_SOCK",
	                                      "RANDOM_UNLISTED",
	                                      "npm_config__authToken",
	                                      "npm_config_//registry/:_authToken",
	                                      "github_token"};

	for (size_t i = 0; i < ELEMENTSOF(kept); i++)
		assert_int_equal(env_scrub_keeps(&env_scrub_default_rules, kept[i]), 1);
	for (size_t i = 0; i < ELEMENTSOF(dropped); i++) {
		if (env_scrub_keeps(&env_scrub_default_rules, dropped[i]) != 0)
			fail_msg("%s is kept", dropped[i]);
	}
	assert_int_equal(env_scrub_keeps(&env_scrub_default_rules, ""), 0);
}

static void test_scrub_keeps_order_first_duplicate_and_counts_drops(void **state)
{
	char *env[] = {"PATH=/usr/bin", "GITHUB_TOKEN=ghp_x", "=weird",       "noequals",
	               "HOME=/home/a",  "PATH=/evil",         "LANG=C.UTF-8", NULL};
	char **out = NULL;
	size_t n = 0, dropped = 0;
	struct cl_error err = {""};

	assert_int_equal(env_scrub(&env_scrub_default_rules, env, 7, &err, &out, &n, &dropped), 0);
	assert_int_equal(n, 3);
	assert_int_equal(dropped, 4);
	assert_string_equal(out[0], "PATH=/usr/bin");
	assert_string_equal(out[1], "HOME=/home/a");
	assert_string_equal(out[2], "LANG=C.UTF-8");
	assert_null(out[3]);
	env_scrub_free(out);
	env_scrub_free(NULL);
}

static void test_deny_wins_and_an_empty_allow_list_keeps_the_rest(void **state)
{
	static const char *const allow[] = {"*"};
	static const char *const deny[] = {"SECRET_*", "X"};
	struct env_scrub_rules only_deny = {.deny = deny, .n_deny = 2};
	struct env_scrub_rules both = {.allow = allow, .n_allow = 1, .deny = deny, .n_deny = 2};

	assert_int_equal(env_scrub_keeps(&only_deny, "ANYTHING"), 1);
	assert_int_equal(env_scrub_keeps(&only_deny, "SECRET_ONE"), 0);
	assert_int_equal(env_scrub_keeps(&both, "X"), 0);
	assert_int_equal(env_scrub_keeps(&both, "XY"), 1);
}

static void test_bounds_fail_the_whole_call(void **state)
{
	char *env[] = {"A=1", "B=22", "C=333", NULL};
	struct env_scrub_rules few = {.max_entries = 2};
	struct env_scrub_rules small = {.max_bytes = 9}; /* "A=1\0B=22\0" is 9 bytes */
	char **out = (char **)0x1;
	size_t n = 77, dropped = 77;
	struct cl_error err = {""};

	assert_int_equal(env_scrub(&few, env, 3, &err, &out, &n, &dropped), -E2BIG);
	assert_string_equal(err.msg, "environment: more than 2 variables kept");
	assert_int_equal(env_scrub(&small, env, 3, &err, &out, &n, &dropped), -E2BIG);
	assert_string_equal(err.msg, "environment: more than 9 bytes of variables kept");
	assert_ptr_equal(out, (char **)0x1);
	assert_int_equal(n, 77);

	small.max_bytes = 15;
	assert_int_equal(env_scrub(&small, env, 3, &err, &out, &n, &dropped), 0);
	assert_int_equal(n, 3);
	env_scrub_free(out);
}

static void test_agent_rules_drop_sockets_and_credentials_but_keep_the_model_keys(void **state)
{
	static const char *const kept[] = {"PATH",
	                                   "HOME",
	                                   "LD_PRELOAD",
	                                   "TERM",
	                                   "XDG_RUNTIME_DIR",
	                                   "RANDOM_UNLISTED",
	                                   "ANTHROPIC_API_KEY",
	                                   "OPENAI_API_KEY",
	                                   "GEMINI_API_KEY",
	                                   "CLAUDE_CODE_OAUTH_TOKEN"};
	static const char *const dropped[] = {"TMUX",
	                                      "TMUX_PANE",
	                                      "STY",
	                                      "SSH_AUTH_SOCK",
	                                      "SSH_AGENT_PID",
	                                      "GPG_AGENT_INFO",
	                                      "DBUS_SESSION_BUS_ADDRESS",
	                                      "DISPLAY",
	                                      "WAYLAND_DISPLAY",
	                                      "XAUTHORITY",
	                                      "GITHUB_TOKEN",
	                                      "github_token",
	                                      "MY_SECRET",
	                                      "DB_PASSWORD",
	                                      "AWS_ACCESS_KEY_ID",
	                                      "AWS_REGION",
	                                      "KRB5CCNAME",
	                                      "NVIM",
	                                      "VSCODE_IPC_HOOK_CLI",
	                                      "anthropic_api_key" /* the keep list is exact */,
	                                      "CLOISTER_API_TOKEN",
	                                      "CLOISTER_EXECUTOR_SECRET"};

	for (size_t i = 0; i < ELEMENTSOF(kept); i++)
		if (env_scrub_keeps(&env_scrub_agent_rules, kept[i]) != 1)
			fail_msg("%s is dropped", kept[i]);
	for (size_t i = 0; i < ELEMENTSOF(dropped); i++)
		if (env_scrub_keeps(&env_scrub_agent_rules, dropped[i]) != 0)
			fail_msg("%s is kept", dropped[i]);
}

/* The shim's host commands and the agent drop the same credentials, whatever their allow
 * lists (the shim's drops most names by not allowing them; the deny list is what holds
 * for a name an allow pattern matches, e.g. PIP_INDEX_URL under PIP_*). */
static void test_both_rule_sets_drop_the_same_credentials(void **state)
{
	static const char *const creds[] = {"GITHUB_TOKEN",
	                                    "github_token",
	                                    "TOKEN",
	                                    "A_TOKEN_B",
	                                    "MY_SECRET",
	                                    "SECRET",
	                                    "X_SECRET_Y",
	                                    "SIGNING_KEY",
	                                    "X_KEY_ID",
	                                    "OPENAI_API_KEY",
	                                    "DB_PASSWORD",
	                                    "PASSWORD",
	                                    "DB_PASSWD",
	                                    "GIT_CREDENTIALS",
	                                    "GIT_CREDENTIAL",
	                                    "AWS_REGION",
	                                    "AZURE_TENANT",
	                                    "KRB5CCNAME",
	                                    "SSH_AUTH_SOCK",
	                                    "GPG_AGENT_INFO",
	                                    "PIP_INDEX_URL",
	                                    "PIP_EXTRA_INDEX_URL",
	                                    "npm_config__auth",
	                                    "npm_config_//registry.example/:_authToken",
	                                    "GOOGLE_APPLICATION_CREDENTIALS"};
	const struct env_scrub_rules *sets[] = {&env_scrub_default_rules, &env_scrub_agent_rules};

	(void)state;
	for (size_t s = 0; s < ELEMENTSOF(sets); s++)
		for (size_t i = 0; i < ELEMENTSOF(creds); i++)
			if (env_scrub_keeps(sets[s], creds[i]) != 0 &&
			    /* the agent keeps its own provider's key on purpose */
			    !(sets[s] == &env_scrub_agent_rules &&
			      strcmp(creds[i], "OPENAI_API_KEY") == 0))
				fail_msg("%s is kept by the %s rules", creds[i],
				         s == 0 ? "shim's" : "agent's");
}

static void test_the_keep_list_wins_over_deny(void **state)
{
	static const char *const deny[] = {"*_TOKEN"}, *const keep[] = {"MY_TOKEN"};
	struct env_scrub_rules rules = {.deny = deny, .n_deny = 1, .keep = keep, .n_keep = 1};

	assert_int_equal(env_scrub_keeps(&rules, "MY_TOKEN"), 1);
	assert_int_equal(env_scrub_keeps(&rules, "OTHER_TOKEN"), 0);
	assert_int_equal(env_scrub_keeps(&rules, "my_token"), 0);
	assert_int_equal(env_scrub_keeps(&rules, ""), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_defaults_keep_ordinary_settings_and_drop_secrets_and_hooks),
	        cmocka_unit_test(test_scrub_keeps_order_first_duplicate_and_counts_drops),
	        cmocka_unit_test(test_deny_wins_and_an_empty_allow_list_keeps_the_rest),
	        cmocka_unit_test(test_bounds_fail_the_whole_call),
	        cmocka_unit_test(
	                test_agent_rules_drop_sockets_and_credentials_but_keep_the_model_keys),
	        cmocka_unit_test(test_both_rule_sets_drop_the_same_credentials),
	        cmocka_unit_test(test_the_keep_list_wins_over_deny),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
