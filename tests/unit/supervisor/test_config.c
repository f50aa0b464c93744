/* Config loading: Cloister's file set, merging, every kind of error with its position. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "supervisor/policy/config.h"
#include "supervisor/policy/config_files.h"
#include "supervisor/policy/yaml_doc.h"

static struct config_source src(const char *name, const char *text)
{
	return (struct config_source){
	        .name = name,
	        .data = text,
	        .len = text ? strlen(text) : 0,
	        .present = text != NULL,
	};
}

/* Load the four files (NULL: absent); fail the test on a load error. */
static struct config *load4(const char *global, const char *project, const char *gdec,
                            const char *pdec, bool lenient)
{
	struct config_sources s = {
	        .global = src("config.yaml", global),
	        .project = src("projects/p.yaml", project),
	        .global_decisions = src("decisions/global.yaml", gdec),
	        .project_decisions = src("decisions/projects/p.yaml", pdec),
	};
	struct config_load_options o = {.lenient = lenient};
	struct cl_error err = {""};
	struct config *cfg = NULL;

	if (config_load(&s, &o, &cfg, &err) < 0)
		fail_msg("load failed: %s", err.msg);
	return cfg;
}

/* A task limit: 1 to PID_MAX_LIMIT, or off; nothing else, so a typo never means "no limit". */
static void test_pids_max_values(void **state)
{
	static const struct {
		const char *text;
		int r;
		uint64_t value;
	} cases[] = {
	        {"1", 0, 1},
	        {"64", 0, 64},
	        {"4096", 0, 4096},
	        {"4194304", 0, 4194304},
	        {"off", 0, 0},
	        {"0", -EINVAL, 0},
	        {"4194305", -EINVAL, 0},
	        {"-1", -EINVAL, 0},
	        {"", -EINVAL, 0},
	        {"64k", -EINVAL, 0},
	        {" 64", -EINVAL, 0},
	        {"OFF", -EINVAL, 0},
	        {"99999999999999999999999", -EINVAL, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 12345;

		assert_int_equal(config_parse_pids_max(cases[i].text, &v), cases[i].r);
		assert_true(v == (cases[i].r == 0 ? cases[i].value : 12345));
	}
}

/* The built-in config limits the tasks; config.yaml overrides it, a project file too. */
static void test_pids_max_default_and_overrides(void **state)
{
	_cleanup_(config_freep) struct config *builtin = load4(NULL, NULL, NULL, NULL, false);
	_cleanup_(config_freep) struct config *global =
	        load4("limits:\n  pids_max: 128\n", NULL, NULL, NULL, false);
	_cleanup_(config_freep) struct config *project = load4(
	        "limits:\n  pids_max: 128\n", "limits:\n  pids_max: off\n", NULL, NULL, false);

	(void)state;
	assert_true(builtin->limits.pids_max == 4096);
	assert_int_equal(builtin->limits.pids_max_at.origin.layer, CONFIG_LAYER_BUILTIN);
	assert_true(global->limits.pids_max == 128);
	assert_int_equal(global->limits.pids_max_at.origin.layer, CONFIG_LAYER_GLOBAL);
	assert_true(project->limits.pids_max == 0);
	assert_int_equal(project->limits.pids_max_at.origin.layer, CONFIG_LAYER_PROJECT);
}

static int load_error(enum config_file_kind kind, const char *text, bool lenient,
                      struct cl_error *err)
{
	const char *name = kind == CONFIG_FILE_GLOBAL    ? "config.yaml"
	                   : kind == CONFIG_FILE_PROJECT ? "projects/p.yaml"
	                                                 : "decisions/global.yaml";
	struct config_source s = src(name, text);
	struct config_load_options o = {.lenient = lenient};
	struct config *cfg = NULL;
	int r;

	r = config_parse_file(kind, CONFIG_LAYER_GLOBAL, &s, &o, &cfg, err);
	config_free(cfg);
	return r;
}

/* Entries of L that some file wrote (the always-allowed base list aside). */
static size_t n_written(const struct config_domain_list *l)
{
	size_t n = 0;

	for (size_t i = 0; i < l->n; i++)
		n += l->items[i].origin.layer != CONFIG_LAYER_BASE;
	return n;
}

/* Entries of the built-in's proxy.allow (without the always-allowed ones). */
static size_t builtin_proxy_allow(void)
{
	_cleanup_(config_freep) struct config *cfg = load4(NULL, NULL, NULL, NULL, false);

	return n_written(&cfg->proxy.allow);
}

static void assert_no_warnings(const struct config *cfg)
{
	for (size_t i = 0; i < cfg->n_warnings; i++)
		print_error("unexpected warning: %s\n", cfg->warnings[i]);
	assert_int_equal(cfg->n_warnings, 0);
}

static bool has_domain(const struct config_domain_list *l, const char *host, bool wildcard,
                       const char **ret_file)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->items[i].spec.host, host) == 0 &&
		    l->items[i].spec.wildcard == wildcard) {
			if (ret_file)
				*ret_file = l->items[i].origin.file;
			return true;
		}
	return false;
}

/* ---- valid files ------------------------------------------------------------------------- */

static void test_builtin_default_parses_cleanly_and_serves_without_files(void **state)
{
	_cleanup_(config_freep) struct config *cfg = load4(NULL, NULL, NULL, NULL, false);

	assert_no_warnings(cfg);
	assert_int_equal(cfg->exec.security, EXEC_SECURITY_ALLOWLIST);
	assert_int_equal(cfg->exec.ask, EXEC_ASK_ON_MISS);
	assert_int_equal(cfg->exec.ask_fallback, EXEC_SECURITY_DENY);
	assert_string_equal(cfg->exec.security_at.origin.file, "<built-in>");
	assert_int_equal(cfg->exec.security_at.origin.layer, CONFIG_LAYER_BUILTIN);
	assert_true(cfg->exec.allow.n > 10);
	assert_true(cfg->exec.deny.n > 0);
	assert_int_equal(cfg->proxy.unlisted, UNLISTED_REQUEST_APPROVAL);
	assert_int_equal(cfg->proxy.approval_timeout_ms, 60000);
	assert_int_equal(cfg->request.timeout_ms, 300000);
	assert_true(has_domain(&cfg->proxy.allow, "api.anthropic.com", false, NULL));
	assert_true(has_domain(&cfg->proxy.allow, "registry.npmjs.org", false, NULL));
	assert_true(has_domain(&cfg->proxy.allow, "pypi.org", false, NULL));
	assert_true(cfg->hostexec.auto_approve.n >= 1);
	assert_string_equal(cfg->hostexec.auto_approve.items[0].regex.source,
	                    "^docker compose ps$");
	assert_true(cfg->hostexec.manual_approve.n >= 3);
	assert_int_equal(cfg->n_files, 1);
	assert_string_equal(cfg->files[0], "<built-in>");
}

static void test_builtin_default_parses_on_its_own_without_warnings(void **state)
{
	struct config_source s = {
	        .name = "<built-in>",
	        .data = (const char *)cloister_default_config,
	        .len = cloister_default_config_len,
	        .present = true,
	};
	struct cl_error err = {""};
	_cleanup_(config_freep) struct config *cfg = NULL;

	assert_int_equal(cloister_default_config[cloister_default_config_len], '\0');
	if (config_parse_file(CONFIG_FILE_GLOBAL, CONFIG_LAYER_BUILTIN, &s, NULL, &cfg, &err) < 0)
		fail_msg("%s", err.msg);
	assert_no_warnings(cfg);
	assert_true(cfg->exec.section_present);
}

static void test_global_file_lists_extend_builtin_and_unset_scalars_keep_builtin(void **state)
{
	_cleanup_(config_freep) struct config *cfg = load4("proxy:\n"
	                                                   "  allow:\n"
	                                                   "    - domain: example.com\n",
	                                                   NULL, NULL, NULL, false);
	size_t builtin = builtin_proxy_allow(), last;

	assert_true(builtin > 0);
	/* The built-in's entries first, then the file's. */
	assert_int_equal(n_written(&cfg->proxy.allow), builtin + 1);
	assert_string_equal(cfg->proxy.allow.items[0].origin.file, "<built-in>");
	last = builtin;
	assert_string_equal(cfg->proxy.allow.items[last].spec.host, "example.com");
	assert_string_equal(cfg->proxy.allow.items[last].origin.file, "config.yaml");
	assert_int_equal(cfg->proxy.allow.items[last].origin.line, 3);
	assert_int_equal(cfg->proxy.allow.items[last].origin.column, 15);
	assert_true(cfg->proxy.defaults);
	/* Scalars the file leaves out come from the built-in, with its origin... */
	assert_int_equal(cfg->proxy.approval_timeout_ms, 60000);
	assert_string_equal(cfg->proxy.approval_timeout_at.origin.file, "<built-in>");
	/* ...but for unlisted_domain_behavior, which Cloister reads as reject when left out. */
	assert_int_equal(cfg->proxy.unlisted, UNLISTED_REJECT);
	assert_string_equal(cfg->proxy.unlisted_at.origin.file, "config.yaml");
	assert_int_equal(cfg->proxy.unlisted_at.origin.line, 0);
	/* The hostexec lists it leaves out are empty: they replace the built-in's (Cloister)... */
	assert_int_equal(cfg->hostexec.auto_approve.n, 0);
	/* ...and the built-in's exec section stays. */
	assert_true(cfg->exec.allow.n > 10);
	assert_string_equal(cfg->exec.allow.items[0].origin.file, "<built-in>");
}

static void test_global_file_lists_replace_builtin_with_defaults_false(void **state)
{
	_cleanup_(config_freep) struct config *cfg = load4("proxy:\n"
	                                                   "  defaults: false\n"
	                                                   "  allow:\n"
	                                                   "    - domain: example.com\n",
	                                                   NULL, NULL, NULL, false);

	assert_int_equal(n_written(&cfg->proxy.allow), 1);
	assert_string_equal(cfg->proxy.allow.items[0].spec.host, "example.com");
	assert_int_equal(cfg->proxy.deny.n, 0);
	assert_false(cfg->proxy.defaults);
	assert_string_equal(cfg->proxy.defaults_at.origin.file, "config.yaml");
	assert_int_equal(cfg->proxy.defaults_at.origin.line, 2);
	/* proxy's switch leaves exec alone. */
	assert_true(cfg->exec.allow.n > 10);
	assert_true(cfg->exec.defaults);
}

static void test_global_exec_lists_extend_and_scalars_it_writes_replace_the_builtins(void **state)
{
	_cleanup_(config_freep) struct config *cfg = load4("exec:\n"
	                                                   "  security: full\n"
	                                                   "  allow:\n"
	                                                   "    - path: /opt/tool\n",
	                                                   NULL, NULL, NULL, false);
	_cleanup_(config_freep) struct config *only = load4("exec:\n"
	                                                    "  defaults: false\n"
	                                                    "  allow:\n"
	                                                    "    - path: /opt/tool\n",
	                                                    NULL, NULL, NULL, false);

	assert_int_equal(cfg->exec.security, EXEC_SECURITY_FULL);
	assert_string_equal(cfg->exec.security_at.origin.file, "config.yaml");
	assert_int_equal(cfg->exec.security_at.origin.line, 2);
	assert_int_equal(cfg->exec.ask, EXEC_ASK_ON_MISS); /* unset: built-in */
	/* The built-in's rules, then the file's. */
	assert_true(cfg->exec.allow.n > 10);
	assert_string_equal(cfg->exec.allow.items[0].origin.file, "<built-in>");
	assert_string_equal(cfg->exec.allow.items[cfg->exec.allow.n - 1].path_glob, "/opt/tool");
	assert_true(cfg->exec.deny.n > 0);
	assert_string_equal(cfg->exec.deny.items[0].origin.file, "<built-in>");
	/* defaults: false: the file's lists alone, an absent one empty. */
	assert_int_equal(only->exec.allow.n, 1);
	assert_string_equal(only->exec.allow.items[0].path_glob, "/opt/tool");
	assert_int_equal(only->exec.deny.n, 0);
	assert_false(only->exec.defaults);
	/* proxy's lists stay extended. */
	assert_true(n_written(&only->proxy.allow) == builtin_proxy_allow());
}

static void test_global_exec_lists_are_dropped_only_with_defaults_false(void **state)
{
	_cleanup_(config_freep) struct config *keep =
	        load4("exec:\n  ask: always\n  allow: []\n  deny: ~\n", NULL, NULL, NULL, false);
	_cleanup_(config_freep) struct config *drop =
	        load4("exec:\n  defaults: no\n", NULL, NULL, NULL, false);

	assert_true(keep->exec.allow.n > 10);
	assert_true(keep->exec.deny.n > 0);
	assert_int_equal(keep->exec.ask, EXEC_ASK_ALWAYS);
	assert_int_equal(drop->exec.allow.n, 0);
	assert_int_equal(drop->exec.deny.n, 0);
}

static void test_defaults_switch_only_in_config_yaml(void **state)
{
	struct cl_error err = {""};

	assert_int_equal(load_error(CONFIG_FILE_PROJECT, "exec:\n  defaults: false\n", false, &err),
	                 -EINVAL);
	assert_non_null(strstr(err.msg, "only config.yaml says whether the built-in lists"));
	assert_int_equal(load_error(CONFIG_FILE_GLOBAL, "exec:\n  defaults: maybe\n", false, &err),
	                 -EINVAL);
	assert_non_null(strstr(err.msg, "expected true or false"));
}

static void test_decisions_file_exec_entries_append_to_exec_lists(void **state)
{
	const char *gdec = "exec:\n"
	                   "  allow:\n"
	                   "    - path: /usr/bin/git\n"
	                   "      command: \"\\\\Agit status\\\\z\"\n"
	                   "  deny:\n"
	                   "    - path: /usr/bin/curl\n";
	_cleanup_(config_freep) struct config *cfg = load4(NULL, NULL, gdec, NULL, false);
	const struct config_exec_rule *a = &cfg->exec.allow.items[cfg->exec.allow.n - 1];
	const struct config_exec_rule *d = &cfg->exec.deny.items[cfg->exec.deny.n - 1];

	assert_no_warnings(cfg);
	assert_string_equal(a->path_glob, "/usr/bin/git");
	assert_string_equal(a->command.source, "\\Agit status\\z");
	assert_int_equal(a->origin.layer, CONFIG_LAYER_GLOBAL_DECISIONS);
	assert_string_equal(d->path_glob, "/usr/bin/curl");
	assert_int_equal(d->origin.layer, CONFIG_LAYER_GLOBAL_DECISIONS);
}

static void test_project_extends_global_and_both_decision_forms_merge(void **state)
{
	const char *global = "proxy:\n"
	                     "  allow:\n"
	                     "    - domain: a.example\n"
	                     "  unlisted_domain_behavior: reject\n"
	                     "  defaults: false\n"
	                     "hostexec:\n"
	                     "  auto_approve:\n"
	                     "    - pattern: \"^make$\"\n"
	                     "exec:\n"
	                     "  defaults: false\n"
	                     "  ask: off\n"
	                     "  allow:\n"
	                     "    - path: /usr/bin/make\n";
	const char *project = "remote: git@github.com:me/p.git\n"
	                      "root: ~/src/p\n"
	                      "refs: [~/src/lib]\n"
	                      "proxy:\n"
	                      "  allow:\n"
	                      "    - pattern: \"*.b.example\"\n"
	                      "  deny:\n"
	                      "    - domain: c.example\n"
	                      "hostexec:\n"
	                      "  manual_approve:\n"
	                      "    - pattern: \"^git push\"\n"
	                      "commands:\n"
	                      "  auto_approve:\n"
	                      "    - pattern: \"^make test$\"\n"
	                      "exec:\n"
	                      "  ask: always\n"
	                      "  deny:\n"
	                      "    - command: \"^make install\"\n";
	const char *gdec = "proxy:\n"
	                   "  allow:\n"
	                   "    - domain: d.example\n"
	                   "  deny:\n"
	                   "    - pattern: \"*.i.example\"\n";
	const char *pdec = "domains: [e.example]\n"
	                   "patterns: [\"*.f.example\"]\n"
	                   "denied_domains: [g.example]\n"
	                   "denied_patterns: [\"*.h.example\"]\n";
	_cleanup_(config_freep) struct config *cfg = load4(global, project, gdec, pdec, false);
	const char *file = NULL;

	assert_no_warnings(cfg);
	assert_int_equal(n_written(&cfg->proxy.allow), 5);
	assert_true(has_domain(&cfg->proxy.allow, "a.example", false, &file));
	assert_string_equal(file, "config.yaml");
	assert_true(has_domain(&cfg->proxy.allow, "b.example", true, &file));
	assert_string_equal(file, "projects/p.yaml");
	assert_true(has_domain(&cfg->proxy.allow, "d.example", false, &file));
	assert_string_equal(file, "decisions/global.yaml");
	assert_true(has_domain(&cfg->proxy.allow, "e.example", false, &file));
	assert_string_equal(file, "decisions/projects/p.yaml");
	assert_true(has_domain(&cfg->proxy.allow, "f.example", true, NULL));
	assert_int_equal(cfg->proxy.deny.n, 4);
	assert_true(has_domain(&cfg->proxy.deny, "c.example", false, NULL));
	assert_true(has_domain(&cfg->proxy.deny, "g.example", false, NULL));
	assert_true(has_domain(&cfg->proxy.deny, "h.example", true, NULL));
	assert_true(has_domain(&cfg->proxy.deny, "i.example", true, NULL));
	assert_int_equal(cfg->proxy.deny.items[0].origin.layer, CONFIG_LAYER_PROJECT);
	assert_int_equal(cfg->proxy.deny.items[3].origin.layer, CONFIG_LAYER_PROJECT_DECISIONS);
	assert_string_equal(cfg->proxy.deny.items[3].list, "denied_patterns");
	assert_int_equal(cfg->proxy.unlisted, UNLISTED_REJECT);

	/* Global patterns first, then the project's (both spellings of the section). */
	assert_int_equal(cfg->hostexec.auto_approve.n, 2);
	assert_string_equal(cfg->hostexec.auto_approve.items[0].regex.source, "^make$");
	assert_string_equal(cfg->hostexec.auto_approve.items[1].regex.source, "^make test$");
	assert_int_equal(cfg->hostexec.manual_approve.n, 1);

	/* Project exec scalars override, lists extend. */
	assert_int_equal(cfg->exec.ask, EXEC_ASK_ALWAYS);
	assert_string_equal(cfg->exec.ask_at.origin.file, "projects/p.yaml");
	assert_int_equal(cfg->exec.allow.n, 1);
	/* The global file dropped the built-in's (defaults: false): the project's alone. */
	assert_int_equal(cfg->exec.deny.n, 1);
	assert_int_equal(cfg->exec.deny.items[0].origin.layer, CONFIG_LAYER_PROJECT);
	assert_int_equal(cfg->n_files, 5);
}

static void test_real_cloister_files_load_without_warnings(void **state)
{
	const char *global = "proxy:\n"
	                     "  listen: \":3128\"\n"
	                     "  allow:\n"
	                     "    - domain: \"golang.org\"\n"
	                     "    - pattern: \"*.googleapis.com\"\n"
	                     "  deny:\n"
	                     "    - domain: evil.example\n"
	                     "  unlisted_domain_behavior: \"request_approval\"\n"
	                     "  approval_timeout: \"60s\"\n"
	                     "  rate_limit: 120\n"
	                     "  max_request_bytes: 10485760\n"
	                     "request:\n"
	                     "  listen: \":9998\"\n"
	                     "  timeout: \"5m\"\n"
	                     "approval:\n"
	                     "  listen: \"127.0.0.1:9999\"\n"
	                     "  auto_approve:\n"
	                     "    - pattern: \"^docker compose ps$\"\n"
	                     "  manual_approve:\n"
	                     "    - pattern: \"^docker compose (up|down|restart|build).*$\"\n"
	                     "devcontainer:\n"
	                     "  enabled: true\n"
	                     "  features:\n"
	                     "    allow:\n"
	                     "      - \"ghcr.io/devcontainers/features/*\"\n"
	                     "  blocked_mounts:\n"
	                     "    - \"~/.ssh\"\n"
	                     "agents:\n"
	                     "  claude:\n"
	                     "    command: \"claude\"\n"
	                     "    env: [\"ANTHROPIC_*\", \"CLAUDE_*\"]\n"
	                     "    auth_method: token\n"
	                     "    token: sk-secret-value\n"
	                     "    skip_permissions: true\n"
	                     "  codex:\n"
	                     "    command: codex\n"
	                     "    config_mount: ~/.codex\n"
	                     "    api_key: sk-other\n"
	                     "defaults:\n"
	                     "  image: \"\"\n"
	                     "  shell: /bin/bash\n"
	                     "  user: cloister\n"
	                     "  agent: claude\n"
	                     "log:\n"
	                     "  file: ~/.local/share/cloister/audit.log\n"
	                     "  stdout: true\n"
	                     "  level: info\n"
	                     "  per_cloister: true\n"
	                     "  per_cloister_dir: ~/.local/share/cloister/logs/\n";
	_cleanup_(config_freep) struct config *cfg = load4(global, NULL, NULL, NULL, false);

	assert_no_warnings(cfg);
	/* Extending the built-in's lists (a Cloister file has no `defaults:`); an entry the
	 * built-in has too is kept once, with the built-in's origin. */
	assert_true(n_written(&cfg->proxy.allow) >= builtin_proxy_allow() + 1);
	assert_true(has_domain(&cfg->proxy.allow, "googleapis.com", true, NULL));
	assert_true(has_domain(&cfg->proxy.allow, "golang.org", false, NULL));
	assert_int_equal(cfg->proxy.deny.n, 1);
	assert_string_equal(cfg->proxy.listen.text, ":3128");
	assert_int_equal(cfg->proxy.rate_limit, 120);
	assert_int_equal(cfg->proxy.max_request_bytes, 10485760);
	assert_string_equal(cfg->hostexec.listen.text, "127.0.0.1:9999");
	assert_int_equal(cfg->hostexec.auto_approve.n, 1);
	assert_int_equal(cfg->hostexec.manual_approve.n, 1);
}

static void test_missing_and_empty_files_are_empty(void **state)
{
	_cleanup_(config_freep) struct config *cfg =
	        load4("", "# nothing\n", "---\n", "~\n", false);

	assert_no_warnings(cfg);
	/* An empty global file is a global file: the built-in's lists stay, and its absent
	 * unlisted_domain_behavior means reject, as in Cloister. */
	assert_int_equal(n_written(&cfg->proxy.allow), builtin_proxy_allow());
	assert_int_equal(cfg->proxy.unlisted, UNLISTED_REJECT);
	assert_true(cfg->exec.allow.n > 0);
}

/* ---- errors ------------------------------------------------------------------------------ */

static void test_each_error_names_file_line_column_and_what_was_expected(void **state)
{
	static const struct {
		enum config_file_kind kind;
		const char *yaml;
		const char *want; /* exact message, or its prefix when it ends in '*' */
	} cases[] = {
	        {CONFIG_FILE_GLOBAL, "proxy:\n  allow:\n    - domain: a.example\n    - [x]\n",
	         "config.yaml:4:7: proxy.allow[1]: expected a mapping with \"domain\" or "
	         "\"pattern\", got a sequence"},
	        {CONFIG_FILE_GLOBAL, "proxy: [1]\n",
	         "config.yaml:1:8: proxy: expected a mapping, got a sequence"},
	        {CONFIG_FILE_GLOBAL, "proxy:\n  allow: yes\n",
	         "config.yaml:2:10: proxy.allow: expected a list, got a scalar"},
	        {CONFIG_FILE_GLOBAL, "proxy:\n  listen: [a]\n",
	         "config.yaml:2:11: proxy.listen: expected a string, got a sequence"},
	        {CONFIG_FILE_GLOBAL, "exec:\n  security: paranoid\n",
	         "config.yaml:2:13: exec.security: expected one of deny, allowlist, full, got "
	         "\"paranoid\""},
	        {CONFIG_FILE_GLOBAL, "exec:\n  ask: sometimes\n",
	         "config.yaml:2:8: exec.ask: expected one of off, on-miss, always, got "
	         "\"sometimes\""},
	        {CONFIG_FILE_GLOBAL, "proxy:\n  unlisted_domain_behavior: allow\n",
	         "config.yaml:2:29: proxy.unlisted_domain_behavior: expected one of reject, "
	         "request_approval, got \"allow\""},
	        {CONFIG_FILE_GLOBAL, "hostexec:\n  auto_approve:\n    - pattern: \"^(git\"\n",
	         "config.yaml:3:16: hostexec.auto_approve[0].pattern: invalid regular expression "
	         "\"^(git\": missing closing parenthesis at offset 5"},
	        {CONFIG_FILE_PROJECT, "exec:\n  allow:\n    - command: \"[a-\"\n",
	         "projects/p.yaml:3:16: exec.allow[0].command: invalid regular expression*"},
	        {CONFIG_FILE_GLOBAL, "hostexec:\n  manual_approve:\n    - pattern: \"\"\n",
	         "config.yaml:3:16: hostexec.manual_approve[0].pattern: expected a regular "
	         "expression, got an empty string"},
	        {CONFIG_FILE_GLOBAL, "proxy:\n  allow:\n    - domain: \"bad domain\"\n",
	         "config.yaml:3:15: proxy.allow[0].domain: expected a domain name, got*"},
	        {CONFIG_FILE_GLOBAL, "proxy:\n  deny:\n    - domain: \"*.x.example\"\n",
	         "config.yaml:3:15: proxy.deny[0].domain: expected a domain name, got*"},
	        {CONFIG_FILE_DECISIONS, "denied_patterns: [\"a.*.example\"]\n",
	         "decisions/global.yaml:1:19: denied_patterns[0]: expected a domain pattern like "
	         "\"*.example.com\", got*"},
	        {CONFIG_FILE_DECISIONS, "domains: [{a: b}]\n",
	         "decisions/global.yaml:1:11: domains[0]: expected a string, got a mapping"},
	        {CONFIG_FILE_GLOBAL,
	         "proxy:\n  allow:\n    - domain: a.example\n      pattern: "
	         "\"*.b.example\"\n",
	         "config.yaml:3:7: proxy.allow[0]: expected either \"domain\" or \"pattern\", not "
	         "both"},
	        {CONFIG_FILE_GLOBAL, "proxy:\n  allow:\n    - {}\n",
	         "config.yaml:3:7: proxy.allow[0]: expected a mapping with \"domain\" or "
	         "\"pattern\""},
	        {CONFIG_FILE_GLOBAL, "exec:\n  deny:\n    - path: bin/nc\n",
	         "config.yaml:3:13: exec.deny[0].path: expected an absolute path glob (starting "
	         "with '/'), got \"bin/nc\""},
	        /* "**" inside a component would act as one "*", and a deny would miss deeper
	         * files: it must stand alone. */
	        {CONFIG_FILE_GLOBAL, "exec:\n  deny:\n    - path: \"/opt/x**\"\n",
	         "config.yaml:3:13: exec.deny[0].path: \"**\" must be a whole path component "
	         "(\"/a/**/b\", \"/a/**\"); '*' alone never crosses '/', got \"/opt/x**\""},
	        {CONFIG_FILE_GLOBAL, "exec:\n  deny:\n    - {}\n",
	         "config.yaml:3:7: exec.deny[0]: expected a mapping with \"path\" and/or "
	         "\"command\""},
	        {CONFIG_FILE_GLOBAL, "proxy:\n  approval_timeout: soon\n",
	         "config.yaml:2:21: proxy.approval_timeout: expected a duration like \"60s\", "
	         "\"5m\" or \"1h30m\", got \"soon\""},
	        {CONFIG_FILE_GLOBAL, "proxy:\n  rate_limit: -1\n",
	         "config.yaml:2:15: proxy.rate_limit: expected a non-negative integer, got \"-1\""},
	        {CONFIG_FILE_GLOBAL, "proxy:\n  rate_limit: \"12\"\n",
	         "config.yaml:2:15: proxy.rate_limit: expected a non-negative integer, got \"12\""},
	        {CONFIG_FILE_GLOBAL, "limits:\n  pids_max: 0\n",
	         "config.yaml:2:13: limits.pids_max: expected a number of tasks from 1 to 4194304, "
	         "or off, got \"0\""},
	        {CONFIG_FILE_GLOBAL, "limits:\n  pids_max: 4194305\n",
	         "config.yaml:2:13: limits.pids_max: expected a number of tasks from 1 to 4194304, "
	         "or off, got \"4194305\""},
	        {CONFIG_FILE_PROJECT, "limits:\n  pids_max: \"64\"\n",
	         "projects/p.yaml:2:13: limits.pids_max: expected a number of tasks from 1 to "
	         "4194304, or off, got \"64\""},
	        {CONFIG_FILE_GLOBAL, "limits:\n  pid_max: 64\n",
	         "config.yaml:2:3: limits.pid_max: unknown key; expected one of pids_max"},
	        {CONFIG_FILE_GLOBAL, "request:\n  listen: localhost\n",
	         "config.yaml:2:11: request.listen: expected host:port or :port (port 1-65535), "
	         "got \"localhost\""},
	        {CONFIG_FILE_GLOBAL, "a: &x 1\nb: *x\n",
	         "config.yaml:1:4: anchors and aliases are not allowed"},
	        {CONFIG_FILE_GLOBAL, "proxy: &p {}\n",
	         "config.yaml:1:8: anchors and aliases are not allowed"},
	        {CONFIG_FILE_GLOBAL, "proxy:\n  allow: []\nproxy: {}\n",
	         "config.yaml:3:1: duplicate key \"proxy\""},
	        {CONFIG_FILE_GLOBAL, "? [a]\n: b\n",
	         "config.yaml:1:3: a mapping key must be a scalar"},
	        {CONFIG_FILE_GLOBAL, "proxy: {}\n---\nproxy: {}\n",
	         "config.yaml:2:1: only one YAML document is allowed in a config file"},
	        {CONFIG_FILE_GLOBAL, "- a\n- b\n",
	         "config.yaml:1:1: expected a mapping at the top level, got a sequence"},
	        {CONFIG_FILE_GLOBAL, "proxy: \"a\\0b\"\n",
	         "config.yaml:1:8: a scalar contains a NUL character"},
	        {CONFIG_FILE_GLOBAL, "proxy:\n  allow: [\n",
	         "config.yaml:3:1: invalid YAML: did not find expected node content while parsing "
	         "a flow node"},
	        {CONFIG_FILE_GLOBAL, "proxy:\n\tallow: []\n", "config.yaml:2:1: invalid YAML:*"},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct cl_error err = {""};
		const char *want = cases[i].want;
		size_t wlen = strlen(want);
		int r = load_error(cases[i].kind, cases[i].yaml, false, &err);

		if (r != -EINVAL)
			fail_msg("case %zu: expected -EINVAL, got %d (%s)", i, r, err.msg);
		if (want[wlen - 1] == '*' ? strncmp(err.msg, want, wlen - 1) != 0
		                          : strcmp(err.msg, want) != 0)
			fail_msg("case %zu:\n  got:  %s\n  want: %s", i, err.msg, want);
	}
}

static void test_agent_secrets_never_appear_in_messages(void **state)
{
	struct config_sources s = {
	        .global = src("config.yaml", "agents:\n"
	                                     "  claude:\n"
	                                     "    token: sk-very-secret\n"
	                                     "    tokn: sk-also-secret\n"
	                                     "proxy: [oops]\n"),
	};
	struct cl_error err = {""};
	struct config *cfg = NULL;

	assert_int_equal(config_load(&s, NULL, &cfg, &err), -EINVAL);
	assert_null(strstr(err.msg, "secret"));
	assert_null(cfg);
}

static void test_too_deep_nesting_is_rejected(void **state)
{
	char yaml[256] = "proxy: ";
	struct cl_error err = {""};

	for (int i = 0; i < 40; i++)
		strcat(yaml, "[");
	assert_int_equal(load_error(CONFIG_FILE_GLOBAL, yaml, false, &err), -EINVAL);
	assert_string_equal(err.msg, "config.yaml:1:39: nesting too deep (the limit is 32 levels)");
}

static void test_oversized_input_and_too_many_items_are_rejected(void **state)
{
	_cleanup_free_ char *big = malloc(YDOC_MAX_BYTES + 2);
	_cleanup_free_ char *many = NULL;
	struct cl_error err = {""};
	size_t len = 0;

	assert_non_null(big);
	memset(big, '#', YDOC_MAX_BYTES + 1);
	big[YDOC_MAX_BYTES + 1] = '\0';
	assert_int_equal(load_error(CONFIG_FILE_GLOBAL, big, false, &err), -EFBIG);
	assert_string_equal(err.msg, "config.yaml: file is larger than 1048576 bytes");

	many = malloc(10 + 4 * 10001 + 2);
	assert_non_null(many);
	len = (size_t)sprintf(many, "domains: [");
	for (int i = 0; i < 10001; i++)
		len += (size_t)sprintf(many + len, "a%s", i < 10000 ? ", " : "]");
	assert_int_equal(load_error(CONFIG_FILE_DECISIONS, many, false, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "too many items in a sequence (the limit is 10000)"));
}

/* Cloister's parser refuses unknown keys (its KnownFields), so a typo is never silently
 * ignored; its test cases are the first rows. */
static void test_unknown_keys_are_errors_with_their_position_in_every_file_kind(void **state)
{
	static const struct {
		enum config_file_kind kind;
		const char *yaml, *message;
	} cases[] = {
	        /* Cloister's parse tests: listenn, auto_aprove, unknownfield, alow. */
	        {CONFIG_FILE_GLOBAL, "proxy:\n  listenn: \":3128\"\n",
	         "config.yaml:2:3: proxy.listenn: unknown key; expected one of listen, allow, "
	         "deny, unlisted_domain_behavior, approval_timeout, rate_limit, "
	         "max_request_bytes, defaults"},
	        {CONFIG_FILE_GLOBAL,
	         "hostexec:\n  listen: \"127.0.0.1:9999\"\n  auto_aprove:\n    - pattern: "
	         "\"^test$\"\n",
	         "config.yaml:3:3: hostexec.auto_aprove: unknown key; expected one of listen, "
	         "auto_approve, manual_approve"},
	        {CONFIG_FILE_PROJECT, "remote: git@github.com:me/p.git\nunknownfield: \"value\"\n",
	         "projects/p.yaml:2:1: unknownfield: unknown key; expected one of remote, root, "
	         "refs, proxy, hostexec, commands, exec, fs, limits"},
	        {CONFIG_FILE_PROJECT, "proxy:\n  alow:\n    - domain: example.com\n",
	         "projects/p.yaml:2:3: proxy.alow: unknown key; expected one of allow, deny"},
	        /* Every level and form: top level, list entries, agents, both decisions forms. */
	        {CONFIG_FILE_GLOBAL, "unlisted_domain_behavior: reject\n",
	         "config.yaml:1:1: unlisted_domain_behavior: unknown key; expected one of proxy, "
	         "request, hostexec, approval, exec, fs, limits, devcontainer, agents, defaults, "
	         "log"},
	        {CONFIG_FILE_GLOBAL, "proxy:\n  allow:\n    - domain: a.example\n      note: hi\n",
	         "config.yaml:4:7: proxy.allow[0].note: unknown key; expected \"domain\" or "
	         "\"pattern\""},
	        {CONFIG_FILE_PROJECT,
	         "hostexec:\n  auto_approve:\n    - pattern: \"^x$\"\n      comment: why\n",
	         "projects/p.yaml:4:7: hostexec.auto_approve[0].comment: unknown key; expected "
	         "\"pattern\""},
	        {CONFIG_FILE_GLOBAL, "agents:\n  claude:\n    comand: claude\n",
	         "config.yaml:3:5: agents.claude.comand: unknown key; expected one of command, "
	         "config_mount, env, auth_method, token, api_key, skip_permissions"},
	        {CONFIG_FILE_GLOBAL, "log:\n  levle: info\n",
	         "config.yaml:2:3: log.levle: unknown key; expected one of file, stdout, level, "
	         "per_cloister, per_cloister_dir"},
	        {CONFIG_FILE_DECISIONS, "proxy:\n  allow: []\n  alow: []\n",
	         "decisions/global.yaml:3:3: proxy.alow: unknown key; expected one of allow, "
	         "deny"},
	        {CONFIG_FILE_DECISIONS, "domains: [a.example]\npaterns: [\"*.b.example\"]\n",
	         "decisions/global.yaml:2:1: paterns: unknown key; expected one of proxy, domains, "
	         "patterns, denied_domains, denied_patterns, exec, fs"},
	        /* A key of another file kind: a decisions file cannot loosen exec security. */
	        {CONFIG_FILE_DECISIONS, "exec:\n  security: full\n",
	         "decisions/global.yaml:2:3: exec.security: unknown key; expected one of allow, "
	         "deny"},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct cl_error err = {""};

		if (load_error(cases[i].kind, cases[i].yaml, false, &err) != -EINVAL)
			fail_msg("case %zu loaded", i);
		if (strcmp(err.msg, cases[i].message) != 0)
			fail_msg("case %zu:\n  got:  %s\n  want: %s", i, err.msg, cases[i].message);
	}
}

static void test_lenient_mode_turns_unknown_keys_into_warnings(void **state)
{
	_cleanup_(config_freep) struct config *cfg = load4("proxy:\n"
	                                                   "  allow: []\n"
	                                                   "  colour: red\n"
	                                                   "unlisted_domain_behavior: reject\n",
	                                                   "hostexec:\n"
	                                                   "  auto_approve:\n"
	                                                   "    - pattern: \"^x$\"\n"
	                                                   "      comment: why\n",
	                                                   NULL, NULL, true);

	assert_int_equal(cfg->n_warnings, 3);
	assert_string_equal(cfg->warnings[0],
	                    "config.yaml:3:3: proxy.colour: unknown key (ignored: --lenient)");
	assert_string_equal(
	        cfg->warnings[1],
	        "config.yaml:4:1: unlisted_domain_behavior: unknown key (ignored: --lenient)");
	assert_string_equal(cfg->warnings[2], "projects/p.yaml:4:7: hostexec.auto_approve[0]."
	                                      "comment: unknown key (ignored: --lenient)");
	/* The known parts still load. */
	assert_int_equal(cfg->hostexec.auto_approve.n, 1);
	assert_string_equal(cfg->hostexec.auto_approve.items[0].regex.source, "^x$");
}

/* Ignoring a misspelt deny list, or an unknown key holding one, would drop its denials: even
 * --lenient does not. */
static void test_a_typo_in_a_deny_key_never_drops_the_denials(void **state)
{
	static const struct {
		enum config_file_kind kind;
		const char *yaml, *where;
	} cases[] = {
	        {CONFIG_FILE_GLOBAL, "proxy:\n  dney:\n    - domain: evil.example\n",
	         "config.yaml:2:3: proxy.dney: unknown key"},
	        {CONFIG_FILE_GLOBAL, "proxy:\n  denny:\n    - domain: evil.example\n",
	         "config.yaml:2:3: proxy.denny: unknown key"},
	        {CONFIG_FILE_GLOBAL, "proxy:\n  Deny:\n    - domain: evil.example\n",
	         "config.yaml:2:3: proxy.Deny: unknown key"},
	        {CONFIG_FILE_PROJECT, "proxy:\n  deny_list:\n    - domain: evil.example\n",
	         "projects/p.yaml:2:3: proxy.deny_list: unknown key"},
	        /* deny under a misspelt parent, or at the wrong level */
	        {CONFIG_FILE_GLOBAL, "proxi:\n  deny:\n    - domain: evil.example\n",
	         "config.yaml:1:1: proxi: unknown key"},
	        {CONFIG_FILE_GLOBAL, "deny:\n  - domain: evil.example\n",
	         "config.yaml:1:1: deny: unknown key"},
	        {CONFIG_FILE_DECISIONS, "denied_domain: [evil.example]\n",
	         "decisions/global.yaml:1:1: denied_domain: unknown key"},
	        {CONFIG_FILE_DECISIONS, "deniedpatterns: [\"*.evil.example\"]\n",
	         "decisions/global.yaml:1:1: deniedpatterns: unknown key"},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		for (int lenient = 0; lenient < 2; lenient++) {
			struct cl_error err = {""};

			if (load_error(cases[i].kind, cases[i].yaml, lenient, &err) != -EINVAL)
				fail_msg("case %zu loaded (lenient %d)", i, lenient);
			if (strncmp(err.msg, cases[i].where, strlen(cases[i].where)) != 0)
				fail_msg("case %zu: %s", i, err.msg);
			if (lenient && !strstr(err.msg, "not ignored even with --lenient"))
				fail_msg("case %zu: %s", i, err.msg);
		}
	}
}

static void test_misspelt_exec_keys_fail_instead_of_dropping_a_rule(void **state)
{
	/* A warning would leave `dney:` ignored (the built-in deny list kept, the user's rules
	 * gone) and `comand:` would turn an allow rule for `git status` into one for all of git.
	 */
	static const struct {
		const char *yaml, *message;
	} cases[] = {
	        {"exec:\n  dney:\n    - path: /usr/bin/nc\n",
	         "config.yaml:2:3: exec.dney: unknown key; expected one of security, ask, "
	         "ask_fallback, allow, deny, defaults"},
	        {"exec:\n  allow:\n    - path: /usr/bin/git\n      comand: \"^git status$\"\n",
	         "config.yaml:4:7: exec.allow[0].comand: unknown key; expected \"path\" and/or "
	         "\"command\""},
	        {"exec:\n  deny:\n    - path: /usr/bin/nc\n      <<: {command: x}\n",
	         "config.yaml:4:7: exec.deny[0].<<: unknown key; expected \"path\" and/or "
	         "\"command\""},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct cl_error err = {""};

		assert_int_equal(load_error(CONFIG_FILE_GLOBAL, cases[i].yaml, false, &err),
		                 -EINVAL);
		assert_string_equal(err.msg, cases[i].message);
		/* --lenient does not make them skippable either */
		assert_int_equal(load_error(CONFIG_FILE_PROJECT, cases[i].yaml, true, &err),
		                 -EINVAL);
	}
}

static void test_allow_rule_with_a_command_but_no_path_warns(void **state)
{
	_cleanup_(config_freep) struct config *cfg = load4("exec:\n"
	                                                   "  defaults: false\n"
	                                                   "  allow:\n"
	                                                   "    - command: \"^git status$\"\n"
	                                                   "    - path: /usr/bin/git\n"
	                                                   "      command: \"^git diff$\"\n"
	                                                   "  deny:\n"
	                                                   "    - command: \"^rm \"\n",
	                                                   NULL, NULL, NULL, false);

	assert_int_equal(cfg->n_warnings, 1);
	assert_non_null(strstr(cfg->warnings[0], "config.yaml:4:7: exec.allow[0]: an allow rule "
	                                         "with a command but no path"));
	assert_int_equal(cfg->exec.allow.n, 2);
}

static void test_lenient_mode_skips_bad_regex_and_domain_with_a_warning(void **state)
{
	const char *yaml = "hostexec:\n"
	                   "  auto_approve:\n"
	                   "    - pattern: \"^(bad\"\n"
	                   "    - pattern: \"^good$\"\n"
	                   "proxy:\n"
	                   "  allow:\n"
	                   "    - domain: \"not a domain\"\n"
	                   "    - domain: ok.example\n";
	struct cl_error err = {""};
	_cleanup_(config_freep) struct config *cfg = NULL;

	/* Strict: the first bad entry fails the load. */
	assert_int_equal(load_error(CONFIG_FILE_GLOBAL, yaml, false, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "config.yaml:3:16: hostexec.auto_approve[0].pattern"));

	cfg = load4(yaml, NULL, NULL, NULL, true);
	assert_int_equal(cfg->hostexec.auto_approve.n, 1);
	assert_string_equal(cfg->hostexec.auto_approve.items[0].regex.source, "^good$");
	assert_int_equal(cfg->hostexec.auto_approve.items[0].index, 1);
	assert_int_equal(n_written(&cfg->proxy.allow), builtin_proxy_allow() + 1);
	assert_int_equal(cfg->n_warnings, 2);
	assert_non_null(strstr(cfg->warnings[0], "config.yaml:3:16: hostexec.auto_approve[0]."
	                                         "pattern: invalid regular expression"));
	assert_non_null(strstr(cfg->warnings[0], "(entry skipped)"));
	assert_non_null(strstr(cfg->warnings[1], "config.yaml:7:15: proxy.allow[0].domain"));
}

static void test_lenient_mode_never_skips_a_deny_entry(void **state)
{
	/* Skipping an invalid deny entry would let through what it was written to stop. */
	static const char *const yamls[] = {
	        "exec:\n  deny:\n    - path: /usr/bin/curl\n      command: \"^curl (bad\"\n",
	        "proxy:\n  deny:\n    - pattern: \"evil*.example\"\n",
	        "denied_domains: [\"bad domain\"]\n",
	};
	static const enum config_file_kind kinds[] = {CONFIG_FILE_GLOBAL, CONFIG_FILE_GLOBAL,
	                                              CONFIG_FILE_DECISIONS};

	for (size_t i = 0; i < ELEMENTSOF(yamls); i++) {
		struct cl_error err = {""};

		if (load_error(kinds[i], yamls[i], true, &err) != -EINVAL)
			fail_msg("case %zu loaded in lenient mode", i);
	}
	/* The allow side is still skipped, as Cloister does. */
	{
		_cleanup_(config_freep) struct config *cfg =
		        load4("exec:\n  defaults: false\n  allow:\n    - command: \"^x (bad\"\n"
		              "      path: /x\n",
		              NULL, NULL, NULL, true);
		assert_int_equal(cfg->exec.allow.n, 0);
		assert_int_equal(cfg->n_warnings, 1);
	}
}

static void test_lenient_mode_still_fails_on_wrong_types(void **state)
{
	struct cl_error err = {""};

	assert_int_equal(load_error(CONFIG_FILE_GLOBAL, "proxy: [1]\n", true, &err), -EINVAL);
	assert_int_equal(load_error(CONFIG_FILE_GLOBAL, "exec:\n  ask: maybe\n", true, &err),
	                 -EINVAL);
}

static void test_warnings_are_bounded(void **state)
{
	char yaml[8192] = "";
	_cleanup_(config_freep) struct config *cfg = NULL;

	for (int i = 0; i < 300; i++)
		sprintf(yaml + strlen(yaml), "k%d: 1\n", i);
	cfg = load4(yaml, NULL, NULL, NULL, true);
	assert_int_equal(cfg->n_warnings, CONFIG_MAX_WARNINGS + 1);
	assert_string_equal(cfg->warnings[CONFIG_MAX_WARNINGS],
	                    "config.yaml: too many warnings; the rest are not shown");
}

/* ---- Cloister's semantics ---------------------------------------------------------------- */

/* Cloister's validate tests, as rows: log.level and the agents section. */
static void test_log_level_and_agents_are_validated_with_cloisters_rules(void **state)
{
	static const struct {
		const char *yaml;
		const char *error; /* NULL: loads; else the exact message */
	} cases[] = {
	        {"log:\n  level: debug\n", NULL},
	        {"log:\n  level: info\n", NULL},
	        {"log:\n  level: warn\n", NULL},
	        {"log:\n  level: error\n", NULL},
	        {"log:\n  level: \"\"\n", NULL},
	        {"log:\n  level: verbose\n",
	         "config.yaml:2:10: log.level: expected one of debug, info, warn, error, got "
	         "\"verbose\""},
	        {"log:\n  level: INFO\n",
	         "config.yaml:2:10: log.level: expected one of debug, info, warn, error, got "
	         "\"INFO\""},
	        {"log:\n  level: wran\n",
	         "config.yaml:2:10: log.level: expected one of debug, info, warn, error, got "
	         "\"wran\""},
	        {"log:\n  level: trace\n",
	         "config.yaml:2:10: log.level: expected one of debug, info, warn, error, got "
	         "\"trace\""},
	        {"log:\n  stdout: maybe\n",
	         "config.yaml:2:11: log.stdout: expected true or false, got \"maybe\""},
	        {"log:\n  per_cloister: \"true\"\n",
	         "config.yaml:2:17: log.per_cloister: expected true or false, got \"true\""},
	        {"agents:\n  claude: {}\n", NULL},
	        {"agents:\n  claude:\n    auth_method: token\n    token: my-token\n", NULL},
	        {"agents:\n  claude:\n    auth_method: api_key\n    api_key: sk-ant-123\n", NULL},
	        {"agents:\n  claude:\n    auth_method: \"\"\n", NULL},
	        {"agents:\n  claude:\n    auth_method: oauth\n",
	         "config.yaml:3:18: agents.claude.auth_method: expected one of token, api_key, got "
	         "\"oauth\""},
	        {"agents:\n  claude:\n    auth_method: tokens\n",
	         "config.yaml:3:18: agents.claude.auth_method: expected one of token, api_key, got "
	         "\"tokens\""},
	        {"agents:\n  claude:\n    auth_method: TOKEN\n",
	         "config.yaml:3:18: agents.claude.auth_method: expected one of token, api_key, got "
	         "\"TOKEN\""},
	        {"agents:\n  claude:\n    auth_method: token\n",
	         "config.yaml:3:18: agents.claude.token: required when auth_method is \"token\""},
	        {"agents:\n  claude:\n    auth_method: token\n    token: \"\"\n",
	         "config.yaml:4:12: agents.claude.token: required when auth_method is \"token\""},
	        {"agents:\n  codex:\n    auth_method: api_key\n",
	         "config.yaml:3:18: agents.codex.api_key: required when auth_method is "
	         "\"api_key\""},
	        {"agents:\n  codex:\n    auth_method: api_key\n    api_key: \"\"\n",
	         "config.yaml:4:14: agents.codex.api_key: required when auth_method is "
	         "\"api_key\""},
	        {"agents:\n  claude:\n    env: ANTHROPIC_API_KEY\n",
	         "config.yaml:3:10: agents.claude.env: expected a list, got a scalar"},
	        {"agents:\n  claude:\n    skip_permissions: sometimes\n",
	         "config.yaml:3:23: agents.claude.skip_permissions: expected true or false, got "
	         "\"sometimes\""},
	        {"devcontainer:\n  enabled: yes\n", NULL},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct cl_error err = {""};
		int r = load_error(CONFIG_FILE_GLOBAL, cases[i].yaml, false, &err);

		if (!cases[i].error && r < 0)
			fail_msg("case %zu: %s", i, err.msg);
		if (cases[i].error && (r != -EINVAL || strcmp(err.msg, cases[i].error) != 0))
			fail_msg("case %zu:\n  got:  %d %s\n  want: %s", i, r, err.msg,
			         cases[i].error);
	}
}

/* What Cloister's guardian drops without a word (an empty entry, a pattern that is not
 * "*.something") is dropped here with a warning; a deny entry is never dropped. */
static void test_entries_cloister_skips_are_skipped_with_a_warning(void **state)
{
	static const struct {
		enum config_file_kind kind;
		const char *yaml;
		size_t allow, deny;
		const char *warning; /* prefix of the one warning */
	} cases[] = {
	        {CONFIG_FILE_GLOBAL,
	         "proxy:\n  allow:\n    - domain: \"\"\n    - domain: a.example\n", 1, 0,
	         "config.yaml:3:15: proxy.allow[0].domain: empty entry skipped"},
	        {CONFIG_FILE_GLOBAL, "proxy:\n  allow:\n    - domain: ~\n", 0, 0,
	         "config.yaml:3:15: proxy.allow[0].domain: empty entry skipped"},
	        {CONFIG_FILE_GLOBAL, "proxy:\n  deny:\n    - pattern: \"\"\n", 0, 0,
	         "config.yaml:3:16: proxy.deny[0].pattern: empty entry skipped"},
	        {CONFIG_FILE_GLOBAL,
	         "proxy:\n  allow:\n    - domain: \"\"\n      pattern: \"*.a.example\"\n", 1, 0,
	         NULL},
	        {CONFIG_FILE_GLOBAL, "proxy:\n  allow:\n    - pattern: example.com\n", 0, 0,
	         "config.yaml:3:16: proxy.allow[0].pattern: \"example.com\" is not a pattern (a "
	         "pattern starts with \"*.\"): entry skipped"},
	        {CONFIG_FILE_DECISIONS, "patterns: [example.com, \"*.b.example\"]\n", 1, 0,
	         "decisions/global.yaml:1:12: patterns[0]: \"example.com\" is not a pattern"},
	        {CONFIG_FILE_DECISIONS, "domains: [\"\", ok.example]\n", 1, 0,
	         "decisions/global.yaml:1:11: domains[0]: empty entry skipped"},
	        /* A deny entry keeps denying the name it spells. */
	        {CONFIG_FILE_GLOBAL, "proxy:\n  deny:\n    - pattern: evil.example\n", 0, 1,
	         "config.yaml:3:16: proxy.deny[0].pattern: \"evil.example\" is not a pattern (a "
	         "pattern starts with \"*.\"): kept as the exact domain"},
	        {CONFIG_FILE_DECISIONS, "denied_patterns: [evil.example]\n", 0, 1,
	         "decisions/global.yaml:1:19: denied_patterns[0]: \"evil.example\" is not a "
	         "pattern"},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct config_source source = src("x", cases[i].yaml);
		struct cl_error err = {""};
		_cleanup_(config_freep) struct config *cfg = NULL;

		source.name = cases[i].kind == CONFIG_FILE_GLOBAL ? "config.yaml"
		                                                  : "decisions/global.yaml";
		if (config_parse_file(cases[i].kind, CONFIG_LAYER_GLOBAL, &source, NULL, &cfg,
		                      &err) < 0)
			fail_msg("case %zu: %s", i, err.msg);
		if (cfg->proxy.allow.n != cases[i].allow || cfg->proxy.deny.n != cases[i].deny)
			fail_msg("case %zu: %zu allowed, %zu denied", i, cfg->proxy.allow.n,
			         cfg->proxy.deny.n);
		if (!cases[i].warning) {
			assert_no_warnings(cfg);
			continue;
		}
		if (cfg->n_warnings != 1 ||
		    strncmp(cfg->warnings[0], cases[i].warning, strlen(cases[i].warning)) != 0)
			fail_msg("case %zu: %zu warnings, first: %s", i, cfg->n_warnings,
			         cfg->n_warnings ? cfg->warnings[0] : "");
	}
	{
		/* The kept deny entry denies that exact name, not its subdomains. */
		_cleanup_(config_freep) struct config *cfg = load4(
		        "proxy:\n  deny:\n    - pattern: evil.example\n", NULL, NULL, NULL, false);
		assert_int_equal(cfg->proxy.deny.n, 1);
		assert_false(cfg->proxy.deny.items[0].spec.wildcard);
		assert_string_equal(cfg->proxy.deny.items[0].spec.host, "evil.example");
	}
	{
		/* An empty hostexec pattern stays an error (Cloister would auto-approve every
		 * command with it); --lenient skips it, so it never approves anything. */
		const char *yaml = "hostexec:\n  auto_approve:\n    - pattern: \"\"\n";
		struct cl_error err = {""};
		_cleanup_(config_freep) struct config *cfg = NULL;

		assert_int_equal(load_error(CONFIG_FILE_GLOBAL, yaml, false, &err), -EINVAL);
		cfg = load4(yaml, NULL, NULL, NULL, true);
		assert_int_equal(cfg->hostexec.auto_approve.n, 0);
	}
}

static void test_always_allowed_domains_lie_beneath_every_config(void **state)
{
	static const char *const layouts[][4] = {
	        {NULL, NULL, NULL, NULL},
	        {"proxy:\n  defaults: false\n", NULL, NULL, NULL},
	        {"proxy:\n  defaults: false\n  allow: []\n", "proxy:\n  allow: []\n", "", ""},
	};

	for (size_t i = 0; i < ELEMENTSOF(layouts); i++) {
		_cleanup_(config_freep) struct config *cfg =
		        load4(layouts[i][0], layouts[i][1], layouts[i][2], layouts[i][3], false);

		for (size_t d = 0; config_base_domains[d]; d++) {
			const char *file = NULL;

			if (!has_domain(&cfg->proxy.allow, config_base_domains[d], false, &file))
				fail_msg("layout %zu: %s not allowed", i, config_base_domains[d]);
			/* Where no file lists it, the base list is its origin. */
			if (layouts[i][0] && strcmp(file, CONFIG_BASE_NAME) != 0)
				fail_msg("layout %zu: %s from %s", i, config_base_domains[d], file);
		}
	}
	{
		/* Listed by a file: once, with the file's origin. Denied: still listed, and the
		 * deny wins (test_policy). */
		_cleanup_(config_freep) struct config *cfg =
		        load4("proxy:\n  defaults: false\n  allow:\n    - domain: api.openai.com\n"
		              "  deny:\n    - domain: storage.googleapis.com\n",
		              NULL, NULL, NULL, false);
		size_t n = 0;
		const char *file = NULL;

		for (size_t k = 0; k < cfg->proxy.allow.n; k++)
			n += strcmp(cfg->proxy.allow.items[k].spec.host, "api.openai.com") == 0;
		assert_int_equal(n, 1);
		assert_true(has_domain(&cfg->proxy.allow, "api.openai.com", false, &file));
		assert_string_equal(file, "config.yaml");
		assert_true(has_domain(&cfg->proxy.allow, "storage.googleapis.com", false, &file));
		assert_string_equal(file, CONFIG_BASE_NAME);
		assert_int_equal(cfg->proxy.allow.items[cfg->proxy.allow.n - 1].origin.layer,
		                 CONFIG_LAYER_BASE);
		assert_true(has_domain(&cfg->proxy.deny, "storage.googleapis.com", false, NULL));
	}
}

static void test_unlisted_behavior_left_out_of_a_config_file_means_reject(void **state)
{
	static const struct {
		const char *global, *project;
		enum unlisted_behavior want;
		const char *file;
		unsigned line;
	} cases[] = {
	        {NULL, NULL, UNLISTED_REQUEST_APPROVAL, "<built-in>", 125}, /* no file: ask */
	        {NULL, "proxy:\n  allow: []\n", UNLISTED_REQUEST_APPROVAL, "<built-in>", 125},
	        {"", NULL, UNLISTED_REJECT, "config.yaml", 0},
	        {"proxy:\n  approval_timeout: 30s\n", NULL, UNLISTED_REJECT, "config.yaml", 0},
	        {"proxy:\n  unlisted_domain_behavior: request_approval\n", NULL,
	         UNLISTED_REQUEST_APPROVAL, "config.yaml", 2},
	        {"proxy:\n  unlisted_domain_behavior: reject\n", NULL, UNLISTED_REJECT,
	         "config.yaml", 2},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_(config_freep) struct config *cfg =
		        load4(cases[i].global, cases[i].project, NULL, NULL, false);

		if (cfg->proxy.unlisted != cases[i].want)
			fail_msg("case %zu: %s", i,
			         unlisted_behavior_to_string(cfg->proxy.unlisted));
		assert_string_equal(cfg->proxy.unlisted_at.origin.file, cases[i].file);
		if (cases[i].line != 125)
			assert_int_equal(cfg->proxy.unlisted_at.origin.line, cases[i].line);
		else
			assert_true(cfg->proxy.unlisted_at.origin.line > 0);
	}
}

static void test_an_entry_in_several_files_is_kept_once(void **state)
{
	const char *global = "proxy:\n"
	                     "  defaults: false\n"
	                     "  allow:\n"
	                     "    - domain: a.example\n"
	                     "    - pattern: \"*.b.example\"\n"
	                     "    - domain: a.example:443\n"
	                     "  deny:\n"
	                     "    - domain: evil.example\n"
	                     "hostexec:\n"
	                     "  auto_approve:\n"
	                     "    - pattern: \"^make$\"\n";
	const char *project = "proxy:\n"
	                      "  allow:\n"
	                      "    - domain: A.Example.\n"
	                      "    - pattern: \"*.b.example\"\n"
	                      "    - domain: b.example\n"
	                      "  deny:\n"
	                      "    - domain: evil.example\n"
	                      "hostexec:\n"
	                      "  auto_approve:\n"
	                      "    - pattern: \"^make$\"\n"
	                      "    - pattern: \"^make test$\"\n";
	_cleanup_(config_freep) struct config *cfg =
	        load4(global, project, "domains: [a.example]\n", NULL, false);

	/* a.example, *.b.example, a.example:443 (another port), b.example (not the pattern). */
	assert_int_equal(n_written(&cfg->proxy.allow), 4);
	assert_string_equal(cfg->proxy.allow.items[0].origin.file, "config.yaml");
	assert_string_equal(cfg->proxy.allow.items[3].spec.host, "b.example");
	assert_string_equal(cfg->proxy.allow.items[3].origin.file, "projects/p.yaml");
	assert_int_equal(cfg->proxy.deny.n, 1);
	assert_string_equal(cfg->proxy.deny.items[0].origin.file, "config.yaml");
	assert_int_equal(cfg->hostexec.auto_approve.n, 2);
	assert_string_equal(cfg->hostexec.auto_approve.items[1].regex.source, "^make test$");
}

/* ---- values ------------------------------------------------------------------------------ */

static void test_project_names_that_could_escape_the_directory_are_rejected(void **state)
{
	static const struct {
		const char *name;
		bool ok;
	} cases[] = {
	        {"my-api", true},       {"my_api.v2", true}, {"a+b@c", true},    {"", false},
	        {".", false},           {"..", false},       {".hidden", false}, {"a/b", false},
	        {"../etc", false},      {"a..b", false},     {"a b", false},     {"a\\b", false},
	        {"caf\xc3\xa9", false}, {"a\nb", false},
	};
	char longname[200];

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct cl_error err = {""};
		int r = config_project_name_check(cases[i].name, &err);
		if ((r == 0) != cases[i].ok)
			fail_msg("\"%s\": expected %s, got %d (%s)", cases[i].name,
			         cases[i].ok ? "ok" : "rejection", r, err.msg);
	}
	memset(longname, 'a', 129);
	longname[129] = '\0';
	assert_int_equal(config_project_name_check(longname, NULL), -EINVAL);
	longname[128] = '\0';
	assert_int_equal(config_project_name_check(longname, NULL), 0);
}

static void test_go_durations_parse_to_milliseconds(void **state)
{
	static const struct {
		const char *text;
		int ok;
		uint64_t ms;
	} cases[] = {
	        {"60s", 1, 60000},
	        {"5m", 1, 300000},
	        {"1h30m", 1, 5400000},
	        {"1.5h", 1, 5400000},
	        {"250ms", 1, 250},
	        {"0", 1, 0},
	        {"1m30s", 1, 90000},
	        {"1500us", 1, 1},
	        {"2\xc2\xb5s", 1, 0},
	        {"", 0, 0},
	        {"60", 0, 0},
	        {"s", 0, 0},
	        {"-5s", 0, 0},
	        {"5 s", 0, 0},
	        {"5d", 0, 0},
	        {"9999999h", 0, 0},
	        {"99999999999999999999s", 0, 0},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		uint64_t ms = 12345;
		int r = config_parse_duration(cases[i].text, &ms);
		if ((r == 0) != cases[i].ok)
			fail_msg("\"%s\": expected %s, got %d", cases[i].text,
			         cases[i].ok ? "ok" : "error", r);
		if (cases[i].ok && ms != cases[i].ms)
			fail_msg("\"%s\": expected %llu ms, got %llu", cases[i].text,
			         (unsigned long long)cases[i].ms, (unsigned long long)ms);
		if (!cases[i].ok && ms != 12345)
			fail_msg("\"%s\": output written on failure", cases[i].text);
	}
}

/* ---- files ------------------------------------------------------------------------------- */

static void test_config_dir_option_beats_xdg_which_beats_home(void **state)
{
	static const struct {
		const char *opt, *xdg, *home, *want;
	} cases[] = {
	        {"/etc/cl", "/x", "/home/u", "/etc/cl"},
	        {NULL, "/x", "/home/u", "/x/cloister"},
	        {"", "/x", "/home/u", "/x/cloister"},
	        {NULL, NULL, "/home/u", "/home/u/.config/cloister"},
	        {NULL, "", "/home/u", "/home/u/.config/cloister"},
	        {NULL, "relative", "/home/u", "/home/u/.config/cloister"},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_free_ char *dir = NULL;
		struct cl_error err = {""};

		if (config_files_dir(cases[i].opt, cases[i].xdg, cases[i].home, &dir, &err) < 0)
			fail_msg("case %zu: %s", i, err.msg);
		assert_string_equal(dir, cases[i].want);
	}
	{
		char *dir = NULL;
		struct cl_error err = {""};
		assert_int_equal(config_files_dir(NULL, NULL, NULL, &dir, &err), -ENOENT);
		assert_null(dir);
		assert_non_null(strstr(err.msg, "--config-dir"));
	}
}

static void write_file(const char *dir, const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "we");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void test_files_are_read_from_the_directory_and_missing_ones_are_empty(void **state)
{
	char dir[] = "/tmp/cloister-test-config-XXXXXX";
	char sub[600];
	_cleanup_(config_freep) struct config *cfg = NULL;
	_cleanup_(config_files_freep) struct config_files *files = NULL;
	struct cl_error err = {""};

	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/projects", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	snprintf(sub, sizeof(sub), "%s/decisions", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	write_file(dir, "projects/web.yaml", "proxy:\n  allow:\n    - domain: web.example\n");
	write_file(dir, "decisions/global.yaml", "denied_domains: [bad.example]\n");

	assert_int_equal(config_files_read(dir, "web", &files, &err), 0);
	assert_false(files->sources.global.present);
	assert_true(files->sources.project.present);
	assert_true(files->sources.global_decisions.present);
	assert_false(files->sources.project_decisions.present);

	assert_int_equal(config_load_dir(dir, "web", NULL, &cfg, &err), 0);
	/* No config.yaml: the built-in's allowlist, plus the project's entry. */
	assert_true(has_domain(&cfg->proxy.allow, "api.anthropic.com", false, NULL));
	assert_true(has_domain(&cfg->proxy.allow, "web.example", false, NULL));
	assert_true(has_domain(&cfg->proxy.deny, "bad.example", false, NULL));
	assert_non_null(strstr(cfg->proxy.deny.items[0].origin.file, "/decisions/global.yaml"));

	/* A bad project name never reaches a path. */
	config_files_free(TAKE_PTR(files));
	assert_int_equal(config_files_read(dir, "../web", &files, &err), -EINVAL);
	assert_null(files);

	/* A directory where a file should be is an error, named. */
	snprintf(sub, sizeof(sub), "%s/config.yaml", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	assert_int_equal(config_files_read(dir, NULL, &files, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "config.yaml: not a regular file"));
	rmdir(sub);

	/* An oversized file is refused before parsing. */
	{
		_cleanup_free_ char *big = malloc(YDOC_MAX_BYTES + 10);
		assert_non_null(big);
		memset(big, '#', YDOC_MAX_BYTES + 9);
		big[YDOC_MAX_BYTES + 9] = '\0';
		write_file(dir, "config.yaml", big);
		assert_int_equal(config_files_read(dir, NULL, &files, &err), -EFBIG);
		assert_non_null(strstr(err.msg, "config.yaml: file is larger than"));
	}

	snprintf(sub, sizeof(sub), "rm -rf '%s'", dir);
	assert_int_equal(system(sub), 0);
}

static void test_world_writable_config_file_is_refused(void **state)
{
	/* Any local user could rewrite such a policy, so it is not one. */
	char dir[] = "/tmp/cloister-test-config-XXXXXX";
	char sub[600];
	_cleanup_(config_files_freep) struct config_files *files = NULL;
	struct cl_error err = {""};

	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/decisions", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	write_file(dir, "decisions/global.yaml", "denied_domains: [bad.example]\n");
	snprintf(sub, sizeof(sub), "%s/decisions/global.yaml", dir);
	assert_int_equal(chmod(sub, 0666), 0);
	assert_int_equal(config_files_read(dir, NULL, &files, &err), -EPERM);
	assert_non_null(strstr(err.msg, "decisions/global.yaml: writable by every user"));
	assert_int_equal(chmod(sub, 0664), 0);
	assert_int_equal(config_files_read(dir, NULL, &files, &err), 0);
	assert_true(files->sources.global_decisions.present);

	snprintf(sub, sizeof(sub), "rm -rf '%s'", dir);
	assert_int_equal(system(sub), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_builtin_default_parses_cleanly_and_serves_without_files),
	        cmocka_unit_test(test_builtin_default_parses_on_its_own_without_warnings),
	        cmocka_unit_test(
	                test_global_file_lists_extend_builtin_and_unset_scalars_keep_builtin),
	        cmocka_unit_test(test_global_file_lists_replace_builtin_with_defaults_false),
	        cmocka_unit_test(test_defaults_switch_only_in_config_yaml),
	        cmocka_unit_test(test_decisions_file_exec_entries_append_to_exec_lists),
	        cmocka_unit_test(
	                test_global_exec_lists_extend_and_scalars_it_writes_replace_the_builtins),
	        cmocka_unit_test(test_global_exec_lists_are_dropped_only_with_defaults_false),
	        cmocka_unit_test(test_project_extends_global_and_both_decision_forms_merge),
	        cmocka_unit_test(test_real_cloister_files_load_without_warnings),
	        cmocka_unit_test(test_missing_and_empty_files_are_empty),
	        cmocka_unit_test(test_each_error_names_file_line_column_and_what_was_expected),
	        cmocka_unit_test(test_agent_secrets_never_appear_in_messages),
	        cmocka_unit_test(test_too_deep_nesting_is_rejected),
	        cmocka_unit_test(test_oversized_input_and_too_many_items_are_rejected),
	        cmocka_unit_test(
	                test_unknown_keys_are_errors_with_their_position_in_every_file_kind),
	        cmocka_unit_test(test_lenient_mode_turns_unknown_keys_into_warnings),
	        cmocka_unit_test(test_a_typo_in_a_deny_key_never_drops_the_denials),
	        cmocka_unit_test(test_lenient_mode_skips_bad_regex_and_domain_with_a_warning),
	        cmocka_unit_test(test_misspelt_exec_keys_fail_instead_of_dropping_a_rule),
	        cmocka_unit_test(test_allow_rule_with_a_command_but_no_path_warns),
	        cmocka_unit_test(test_lenient_mode_never_skips_a_deny_entry),
	        cmocka_unit_test(test_lenient_mode_still_fails_on_wrong_types),
	        cmocka_unit_test(test_warnings_are_bounded),
	        cmocka_unit_test(test_log_level_and_agents_are_validated_with_cloisters_rules),
	        cmocka_unit_test(test_entries_cloister_skips_are_skipped_with_a_warning),
	        cmocka_unit_test(test_always_allowed_domains_lie_beneath_every_config),
	        cmocka_unit_test(test_unlisted_behavior_left_out_of_a_config_file_means_reject),
	        cmocka_unit_test(test_an_entry_in_several_files_is_kept_once),
	        cmocka_unit_test(test_project_names_that_could_escape_the_directory_are_rejected),
	        cmocka_unit_test(test_go_durations_parse_to_milliseconds),
	        cmocka_unit_test(test_config_dir_option_beats_xdg_which_beats_home),
	        cmocka_unit_test(test_files_are_read_from_the_directory_and_missing_ones_are_empty),
	        cmocka_unit_test(test_world_writable_config_file_is_refused),
	        cmocka_unit_test(test_pids_max_values),
	        cmocka_unit_test(test_pids_max_default_and_overrides),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
