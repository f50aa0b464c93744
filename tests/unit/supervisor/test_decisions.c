/* The decisions files: the text transformation (read back by config.c and the policy), the
 * wildcard helper, and the atomic, locked write with failures injected at every step. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "supervisor/policy/config.h"
#include "supervisor/policy/config_files.h"
#include "supervisor/policy/decisions.h"
#include "supervisor/policy/exec_pattern.h"
#include "supervisor/policy/policy.h"

static struct domain_spec spec(const char *text)
{
	struct domain_spec s;
	struct cl_error err = {{0}};

	if (domain_spec_parse(text, true, &s, &err) < 0)
		fail_msg("%s: %s", text, err.msg);
	return s;
}

/* Add TEXT_ENTRY (a pattern when it starts with "*.") to OLD; return the new text. */
static char *add(const char *old, enum decisions_list list, const char *entry, int want)
{
	struct domain_spec s = spec(entry);
	struct cl_error err = {{0}};
	char *text = NULL;
	int r = decisions_add("decisions.yaml", old ? old : "", old ? strlen(old) : 0, old != NULL,
	                      list, &s, &text, &err);

	if (r != want)
		fail_msg("adding %s: expected %d, got %d (%s)", entry, want, r, err.msg);
	return text;
}

/* Parse TEXT as a decisions file and return "allow: a b | deny: c" for comparison. */
static void summary(const char *text, char *out, size_t size)
{
	_cleanup_(config_freep) struct config *cfg = NULL;
	struct config_source src = {"d.yaml", text, strlen(text), true};
	struct cl_error err = {{0}};
	size_t len = 0;
	char f[300];

	if (config_parse_file(CONFIG_FILE_DECISIONS, CONFIG_LAYER_GLOBAL_DECISIONS, &src, NULL,
	                      &cfg, &err) < 0)
		fail_msg("output does not parse: %s\n%s", err.msg, text);
	assert_int_equal(cfg->n_warnings, 0);
	len += (size_t)snprintf(out + len, size - len, "allow:");
	for (size_t i = 0; i < cfg->proxy.allow.n; i++) {
		domain_spec_format(&cfg->proxy.allow.items[i].spec, f, sizeof(f));
		len += (size_t)snprintf(out + len, size - len, " %s", f);
	}
	len += (size_t)snprintf(out + len, size - len, " | deny:");
	for (size_t i = 0; i < cfg->proxy.deny.n; i++) {
		domain_spec_format(&cfg->proxy.deny.items[i].spec, f, sizeof(f));
		len += (size_t)snprintf(out + len, size - len, " %s", f);
	}
}

static void check_summary(const char *text, const char *want)
{
	char got[2048];

	summary(text, got, sizeof(got));
	if (strcmp(got, want) != 0)
		fail_msg("expected \"%s\", got \"%s\" from:\n%s", want, got, text);
}

static void test_first_entry_creates_a_file_config_reads(void **state)
{
	_cleanup_free_ char *text = add(NULL, DECISIONS_ALLOW, "api.example.com", 1);

	check_summary(text, "allow: api.example.com | deny:");
	assert_non_null(strstr(text, "proxy:\n  allow:\n    - domain: \"api.example.com\"\n"));
	/* An empty existing file is no different. */
	_cleanup_free_ char *again = add("", DECISIONS_DENY, "*.evil.com", 1);
	check_summary(again, "allow: | deny: *.evil.com");
	assert_non_null(strstr(again, "    - pattern: \"*.evil.com\"\n"));
}

static void test_the_policy_sees_an_added_decision(void **state)
{
	_cleanup_free_ char *text = add(NULL, DECISIONS_ALLOW, "*.newservice.test", 1);
	_cleanup_free_ char *both = add(text, DECISIONS_DENY, "bad.newservice.test", 1);
	struct config_sources sources = {
	        .global_decisions = {"decisions/global.yaml", both, strlen(both), true}};
	_cleanup_(config_freep) struct config *cfg = NULL;
	struct policy_result res;
	struct cl_error err = {{0}};

	assert_int_equal(config_load(&sources, NULL, &cfg, &err), 0);
	assert_int_equal(policy_check_domain(cfg, NULL, "api.newservice.test:443", &res, &err), 0);
	assert_int_equal(res.verdict, POLICY_ALLOW);
	assert_int_equal(res.origin.layer, CONFIG_LAYER_GLOBAL_DECISIONS);
	assert_int_equal(policy_check_domain(cfg, NULL, "bad.newservice.test", &res, &err), 0);
	assert_int_equal(res.verdict, POLICY_DENY);
}

static void test_existing_entries_are_kept_in_order_without_duplicates(void **state)
{
	const char *old = "# my notes\n"
	                  "proxy:\n"
	                  "  allow:\n"
	                  "    - domain: b.example\n"
	                  "    - pattern: \"*.c.example\"\n"
	                  "    - domain: B.Example.\n"
	                  "  deny:\n"
	                  "    - domain: evil.example:443\n";
	_cleanup_free_ char *text = add(old, DECISIONS_ALLOW, "a.example", 1);

	check_summary(text, "allow: b.example *.c.example a.example | deny: evil.example:443");
	/* Adding what is there changes nothing but the form. */
	_cleanup_free_ char *same = add(text, DECISIONS_ALLOW, "*.C.example", 0);
	assert_string_equal(same, text);
	/* The same name in the other list is a different decision (and deny wins later). */
	_cleanup_free_ char *deny = add(text, DECISIONS_DENY, "b.example", 1);
	check_summary(deny,
	              "allow: b.example *.c.example a.example | deny: evil.example:443 b.example");
	/* An entry with a port is not the entry without one. */
	_cleanup_free_ char *port = add(deny, DECISIONS_DENY, "evil.example", 1);
	check_summary(port, "allow: b.example *.c.example a.example | deny: evil.example:443 "
	                    "b.example evil.example");
}

static void test_older_flat_lists_become_entries(void **state)
{
	const char *old = "domains:\n  - one.example\n"
	                  "patterns:\n  - \"*.two.example\"\n"
	                  "denied_domains:\n  - three.example\n"
	                  "denied_patterns:\n  - \"*.four.example\"\n";
	_cleanup_free_ char *text = add(old, DECISIONS_ALLOW, "five.example", 1);

	check_summary(text, "allow: one.example *.two.example five.example | deny: "
	                    "three.example *.four.example");
	assert_null(strstr(text, "domains:"));
}

static void test_awkward_names_are_quoted_so_yaml_keeps_them(void **state)
{
	_cleanup_free_ char *a = add(NULL, DECISIONS_ALLOW, "null", 1);
	_cleanup_free_ char *b = add(a, DECISIONS_ALLOW, "[2001:db8::1]:443", 1);
	_cleanup_free_ char *c = add(b, DECISIONS_ALLOW, "true", 1);
	_cleanup_free_ char *d = add(c, DECISIONS_ALLOW, "10.0.0.1", 1);

	check_summary(d, "allow: null [2001:db8::1]:443 true 10.0.0.1 | deny:");
}

static void test_unreadable_or_unknown_content_is_not_rewritten(void **state)
{
	static const char *const bad[] = {
	        "proxy: [",
	        "proxy:\n  allow:\n    - domain: \"exa mple.com\"\n",
	        "proxy:\n  allow: yes\n",
	        "notes: keep me\nproxy:\n  allow: []\n",
	        "proxy:\n  allow:\n    - domain: a.example\n      comment: why\n",
	        "proxy:\n  allow:\n    - &x {domain: a.example}\n    - *x\n",
	        /* unknown keys, in both forms: Cloister refuses them too */
	        "proxy:\n  deny: []\n  alow: []\n",
	        "domains: [a.example]\ndenied_domans: [b.example]\n",
	};
	struct domain_spec s = spec("new.example");

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cl_error err = {{0}};
		char *text = (char *)"untouched";
		int r = decisions_add("d.yaml", bad[i], strlen(bad[i]), true, DECISIONS_ALLOW, &s,
		                      &text, &err);

		if (r != -EINVAL)
			fail_msg("case %zu accepted (%d)", i, r);
		assert_string_equal(text, "untouched");
		assert_non_null(strstr(err.msg, "d.yaml"));
	}
}

/* Exec entries: written beside the domains, read back as the same rule (backslashes and
 * quotes of the regex survive YAML), removed again; the domains stay as they were. */
static void test_exec_entries_are_added_read_back_and_removed(void **state)
{
	static const char *const argv[] = {"echo", "a \"quoted\" \\ arg", "it's"};
	struct exec_pattern_rule rule = {0};
	struct cl_error err = {{0}};
	_cleanup_free_ char *with_domain = add(NULL, DECISIONS_ALLOW, "example.com", 1);
	_cleanup_free_ char *t1 = NULL, *t2 = NULL, *t3 = NULL;
	_cleanup_(config_freep) struct config *cfg = NULL;
	struct decisions_entry e = {.section = DECISIONS_EXEC, .list = DECISIONS_ALLOW};

	assert_int_equal(
	        exec_pattern_rule("/usr/bin/echo", argv, 3, EXEC_MATCH_EXACT, NULL, &rule, &err),
	        0);
	e.path_glob = rule.path_glob;
	e.command = rule.command;
	assert_int_equal(decisions_edit("d.yaml", with_domain, strlen(with_domain), true, &e, NULL,
	                                &t1, &err),
	                 1);
	/* Again: already there. */
	assert_int_equal(decisions_edit("d.yaml", t1, strlen(t1), true, &e, NULL, &t2, &err), 0);
	{
		struct config_source src = {"d.yaml", t1, strlen(t1), true};
		struct policy_result res;

		if (config_parse_file(CONFIG_FILE_DECISIONS, CONFIG_LAYER_GLOBAL_DECISIONS, &src,
		                      NULL, &cfg, &err) < 0)
			fail_msg("%s\n%s", err.msg, t1);
		assert_int_equal(cfg->exec.allow.n, 1);
		assert_string_equal(cfg->exec.allow.items[0].path_glob, rule.path_glob);
		assert_string_equal(cfg->exec.allow.items[0].command.source, rule.command);
		assert_int_equal(cfg->proxy.allow.n, 1);
		cfg->exec.security = EXEC_SECURITY_ALLOWLIST;
		cfg->exec.ask = EXEC_ASK_ON_MISS;
		assert_int_equal(policy_check_exec(cfg, "/usr/bin/echo", argv, 3, &res, &err), 0);
		assert_int_equal(res.verdict, POLICY_ALLOW);
	}
	/* Removed: the domain stays. */
	assert_int_equal(decisions_edit("d.yaml", t1, strlen(t1), true, NULL, &e, &t3, &err), 1);
	assert_null(strstr(t3, "/usr/bin/echo"));
	assert_non_null(strstr(t3, "example.com"));
	exec_pattern_rule_done(&rule);
}

static void test_file_entries_are_added_read_back_and_removed(void **state)
{
	struct cl_error err = {{0}};
	_cleanup_free_ char *with_domain = add(NULL, DECISIONS_ALLOW, "example.com", 1);
	_cleanup_free_ char *t1 = NULL, *t2 = NULL, *t3 = NULL, *t4 = NULL;
	_cleanup_(config_freep) struct config *cfg = NULL;
	struct decisions_entry file = {.section = DECISIONS_FS,
	                               .list = DECISIONS_ALLOW,
	                               .fs_path = "/home/u/a \"quoted\" name"};
	struct decisions_entry dir = {.section = DECISIONS_FS,
	                              .list = DECISIONS_ALLOW,
	                              .fs_path = "/home/u/.cache/tool/"};
	(void)state;

	assert_int_equal(decisions_edit("d.yaml", with_domain, strlen(with_domain), true, &file,
	                                NULL, &t1, &err),
	                 1);
	assert_int_equal(decisions_edit("d.yaml", t1, strlen(t1), true, &dir, NULL, &t2, &err), 1);
	/* Again: already there. */
	assert_int_equal(decisions_edit("d.yaml", t2, strlen(t2), true, &dir, NULL, &t3, &err), 0);
	{
		struct config_source src = {"d.yaml", t2, strlen(t2), true};

		if (config_parse_file(CONFIG_FILE_DECISIONS, CONFIG_LAYER_GLOBAL_DECISIONS, &src,
		                      NULL, &cfg, &err) < 0)
			fail_msg("%s\n%s", err.msg, t2);
		assert_int_equal(cfg->fs.allow.n, 2);
		assert_string_equal(cfg->fs.allow.items[0].pattern, file.fs_path);
		assert_string_equal(cfg->fs.allow.items[1].pattern, dir.fs_path);
		/* Answers of the ask, never writable paths. */
		assert_int_equal(cfg->fs.write.n, 0);
		assert_int_equal(cfg->proxy.allow.n, 1);
	}
	/* Removed: the other entries stay. */
	assert_int_equal(decisions_edit("d.yaml", t2, strlen(t2), true, NULL, &file, &t4, &err), 1);
	assert_null(strstr(t4, "quoted"));
	assert_non_null(strstr(t4, "/home/u/.cache/tool/"));
	assert_non_null(strstr(t4, "example.com"));
}

static void test_a_file_entry_must_be_a_literal_absolute_path(void **state)
{
	static const char *const bad[] = {"relative", "~/.toolrc", "/home/*/x",
	                                  "/a/../b",  "/a//b",     "/a/[x]"};
	struct cl_error err = {{0}};
	(void)state;

	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct decisions_entry e = {
		        .section = DECISIONS_FS, .list = DECISIONS_ALLOW, .fs_path = bad[i]};
		_cleanup_free_ char *text = NULL;
		_cleanup_free_ char *yaml = NULL;
		_cleanup_(config_freep) struct config *cfg = NULL;
		struct config_source src;

		if (decisions_edit("d.yaml", "", 0, false, &e, NULL, &text, &err) != -EINVAL)
			fail_msg("%s was accepted", bad[i]);
		/* Nor read from a file someone edited. */
		assert_true(asprintf(&yaml, "fs:\n  allow:\n    - \"%s\"\n", bad[i]) > 0);
		src = (struct config_source){"d.yaml", yaml, strlen(yaml), true};
		if (config_parse_file(CONFIG_FILE_DECISIONS, CONFIG_LAYER_GLOBAL_DECISIONS, &src,
		                      NULL, &cfg, &err) != -EINVAL)
			fail_msg("%s was read", bad[i]);
	}
	/* fs.allow is the decisions files' alone. */
	{
		static const char yaml[] = "fs:\n  allow:\n    - \"/home/u/.toolrc\"\n";
		struct config_source src = {"config.yaml", yaml, strlen(yaml), true};
		_cleanup_(config_freep) struct config *cfg = NULL;

		assert_int_equal(config_parse_file(CONFIG_FILE_GLOBAL, CONFIG_LAYER_GLOBAL, &src,
		                                   NULL, &cfg, &err),
		                 -EINVAL);
	}
}

/* Pinned exec entries: argv0 and sha256 are written and read back, the policy allows only
 * the content pinned (and says when another content would have been allowed), and the same
 * rule decided again on a new content replaces its pin instead of adding an entry. */
static void test_pinned_exec_entries(void **state)
{
#define PIN_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define PIN_B "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
	static const char *const argv[] = {"ls", "/tmp"}, *other[] = {"rm", "/tmp"};
	struct exec_pattern_rule rule = {0};
	struct cl_error err = {{0}};
	_cleanup_free_ char *t1 = NULL, *t2 = NULL;
	_cleanup_(config_freep) struct config *cfg = NULL;
	struct decisions_entry e = {.section = DECISIONS_EXEC, .list = DECISIONS_ALLOW};
	struct config_source src = {"d.yaml", NULL, 0, true};
	struct policy_result res;

	assert_int_equal(exec_pattern_rule("/usr/bin/busybox", argv, 2, EXEC_MATCH_PROGRAM, NULL,
	                                   &rule, &err),
	                 0);
	e.path_glob = rule.path_glob;
	e.command = rule.command;
	e.argv0 = "ls";
	e.sha256 = PIN_A;
	assert_int_equal(decisions_edit("d.yaml", NULL, 0, false, &e, NULL, &t1, &err), 1);
	e.sha256 = PIN_B;
	assert_int_equal(decisions_edit("d.yaml", t1, strlen(t1), true, &e, NULL, &t2, &err), 1);
	assert_null(strstr(t2, PIN_A));
	src.data = t2;
	src.len = strlen(t2);
	if (config_parse_file(CONFIG_FILE_DECISIONS, CONFIG_LAYER_GLOBAL_DECISIONS, &src, NULL,
	                      &cfg, &err) < 0)
		fail_msg("%s\n%s", err.msg, t2);
	assert_int_equal(cfg->exec.allow.n, 1);
	assert_string_equal(cfg->exec.allow.items[0].argv0, "ls");
	assert_string_equal(cfg->exec.allow.items[0].sha256, PIN_B);
	cfg->exec.security = EXEC_SECURITY_ALLOWLIST;
	cfg->exec.ask = EXEC_ASK_ON_MISS;
	/* Content unknown: not allowed, and the caller is told a digest would count. */
	assert_int_equal(policy_check_exec(cfg, "/usr/bin/busybox", argv, 2, &res, &err), 0);
	assert_int_equal(res.verdict, POLICY_ASK);
	assert_true(res.pin_wanted);
	assert_int_equal(policy_check_exec_content(cfg, "/usr/bin/busybox", argv, 2, false, PIN_B,
	                                           &res, &err),
	                 0);
	assert_int_equal(res.verdict, POLICY_ALLOW);
	assert_int_equal(policy_check_exec_content(cfg, "/usr/bin/busybox", argv, 2, false, PIN_A,
	                                           &res, &err),
	                 0);
	assert_int_equal(res.verdict, POLICY_ASK);
	assert_true(res.content_changed);
	/* Another applet of the same file, same content: not this decision. */
	assert_int_equal(policy_check_exec_content(cfg, "/usr/bin/busybox", other, 2, false, PIN_B,
	                                           &res, &err),
	                 0);
	assert_int_equal(res.verdict, POLICY_ASK);
	assert_false(res.content_changed);
	exec_pattern_rule_done(&rule);
}

/* A pin config.c cannot trust is refused, not dropped: a deny rule's sha256, a bad digest, an
 * argv0 with a slash. */
static void test_bad_pins_are_refused(void **state)
{
	static const char *const bad[] = {
	        "exec:\n  deny:\n    - path: \"/x\"\n      sha256: \"" PIN_A "\"\n",
	        "exec:\n  allow:\n    - path: \"/x\"\n      sha256: \"ABC\"\n",
	        "exec:\n  allow:\n    - path: \"/x\"\n      argv0: \"a/b\"\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct config_source src = {"d.yaml", bad[i], strlen(bad[i]), true};
		struct config *cfg = NULL;
		struct cl_error err = {{0}};

		assert_true(config_parse_file(CONFIG_FILE_DECISIONS, CONFIG_LAYER_GLOBAL_DECISIONS,
		                              &src, NULL, &cfg, &err) < 0);
		config_free(cfg);
	}
}

static void test_wildcard_needs_three_labels(void **state)
{
	static const struct {
		const char *domain;
		const char *want; /* NULL: refused */
	} cases[] = {
	        {"api.example.com", "*.example.com"},
	        {"assets.cdn.example.com", "*.cdn.example.com"},
	        {"api.example.com:443", "*.example.com:443"},
	        {"example.com", NULL},
	        {"localhost", NULL},
	        {"10.0.0.1", NULL},
	        {"[::1]", NULL},
	        {"*.example.com", NULL},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct domain_spec in = spec(cases[i].domain), out;
		struct cl_error err = {{0}};
		char text[300];
		int r = decisions_wildcard(&in, &out, &err);

		if (!cases[i].want) {
			if (r != -EINVAL)
				fail_msg("%s: got a wildcard", cases[i].domain);
			continue;
		}
		assert_int_equal(r, 0);
		domain_spec_format(&out, text, sizeof(text));
		assert_string_equal(text, cases[i].want);
		/* The result is what parsing its text gives (so duplicates are found). */
		struct domain_spec parsed = spec(text);
		assert_memory_equal(&parsed, &out, sizeof(out));
	}
}

static void test_paths_follow_cloisters_layout(void **state)
{
	_cleanup_free_ char *g = NULL, *p = NULL;
	char *bad = NULL;

	assert_int_equal(decisions_path("/c", NULL, &g, NULL), 0);
	assert_string_equal(g, "/c/decisions/global.yaml");
	assert_int_equal(decisions_path("/c", "my-api", &p, NULL), 0);
	assert_string_equal(p, "/c/decisions/projects/my-api.yaml");
	assert_int_equal(decisions_path("/c", "../x", &bad, NULL), -EINVAL);
	assert_null(bad);
}

/* ---- files ---------------------------------------------------------------------------------- */

static char tmpdir[64];

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int setup_dir(void **state)
{
	strcpy(tmpdir, "/tmp/cloister-decisions-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
	return nftw(tmpdir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static char *slurp(const char *path)
{
	char *data = NULL;
	size_t len;
	struct cl_error err = {{0}};

	if (config_file_read(path, &data, &len, &err) <= 0)
		return NULL;
	return data;
}

/* Names in DIR other than the target and its lock (temporary files left behind). */
static int stray_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (strstr(e->d_name, ".tmp-"))
			n++;
	closedir(d);
	return n;
}

static void test_write_creates_private_dirs_and_a_0600_file(void **state)
{
	char path[400], dir[256];
	struct stat st;
	_cleanup_free_ char *back = NULL;

	snprintf(dir, sizeof(dir), "%s/cfg/decisions/projects", tmpdir);
	snprintf(path, sizeof(path), "%s/p.yaml", dir);
	umask(022);
	assert_int_equal(decisions_write_atomic(path, "proxy: {}\n", NULL), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	back = slurp(path);
	assert_string_equal(back, "proxy: {}\n");
	assert_int_equal(stray_files(dir), 0);
}

static void test_a_failure_at_any_step_leaves_the_old_file(void **state)
{
	static const enum decisions_step steps[] = {
	        DECISIONS_STEP_MKDIR, DECISIONS_STEP_CREATE, DECISIONS_STEP_WRITE,
	        DECISIONS_STEP_FSYNC, DECISIONS_STEP_RENAME,
	};
	char path[400], dir[256];

	snprintf(dir, sizeof(dir), "%s/fail", tmpdir);
	snprintf(path, sizeof(path), "%s/global.yaml", dir);
	assert_int_equal(decisions_write_atomic(path, "old\n", NULL), 0);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		struct cl_error err = {{0}};
		_cleanup_free_ char *back = NULL;

		assert_int_equal(decisions_write_atomic_failing_at(path, "new\n", steps[i], &err),
		                 -EIO);
		assert_true(err.msg[0] != '\0');
		back = slurp(path);
		assert_string_equal(back, "old\n");
		if (stray_files(dir) != 0)
			fail_msg("step %d left a temporary file", (int)steps[i]);
	}
	/* After the rename only the directory sync can fail: the new text is in place. */
	assert_int_equal(
	        decisions_write_atomic_failing_at(path, "new\n", DECISIONS_STEP_FSYNC_DIR, NULL),
	        -EIO);
	_cleanup_free_ char *back = slurp(path);
	assert_string_equal(back, "new\n");
}

static void test_a_crash_before_the_rename_leaves_the_old_file(void **state)
{
	char path[400], dir[256], stale[300];
	FILE *f;
	struct domain_spec s = spec("after-crash.example");
	_cleanup_free_ char *back = NULL;

	snprintf(dir, sizeof(dir), "%s/crash", tmpdir);
	snprintf(path, sizeof(path), "%s/global.yaml", dir);
	assert_int_equal(decisions_update(path, DECISIONS_ALLOW, &s, NULL), 1);
	/* What a crash between write and rename leaves: a half-written temporary file. */
	snprintf(stale, sizeof(stale), "%s/.global.yaml.tmp-ABC123", dir);
	f = fopen(stale, "w");
	assert_non_null(f);
	fputs("proxy:\n  allow:\n    - domain: \"half", f);
	fclose(f);
	back = slurp(path);
	check_summary(back, "allow: after-crash.example | deny:");
	/* The next update neither reads nor trips over it. */
	s = spec("next.example");
	assert_int_equal(decisions_update(path, DECISIONS_ALLOW, &s, NULL), 1);
	free(back);
	back = slurp(path);
	check_summary(back, "allow: after-crash.example next.example | deny:");
}

static void test_update_adds_once_and_refuses_a_broken_file(void **state)
{
	char path[256];
	struct domain_spec s = spec("once.example");
	struct stat before, after;
	struct cl_error err = {{0}};
	FILE *f;

	snprintf(path, sizeof(path), "%s/once/global.yaml", tmpdir);
	assert_int_equal(decisions_update(path, DECISIONS_ALLOW, &s, NULL), 1);
	assert_int_equal(stat(path, &before), 0);
	assert_int_equal(decisions_update(path, DECISIONS_ALLOW, &s, NULL), 0);
	assert_int_equal(stat(path, &after), 0);
	assert_int_equal(before.st_ino, after.st_ino); /* not rewritten */

	f = fopen(path, "w");
	assert_non_null(f);
	fputs("proxy: [\n", f);
	fclose(f);
	assert_int_equal(decisions_update(path, DECISIONS_ALLOW, &s, &err), -EINVAL);
	_cleanup_free_ char *back = slurp(path);
	assert_string_equal(back, "proxy: [\n");
}

static void test_concurrent_writers_keep_each_others_entries(void **state)
{
	enum { WRITERS = 2, EACH = 25 };
	char path[256];
	pid_t pids[WRITERS];
	_cleanup_free_ char *text = NULL;
	_cleanup_(config_freep) struct config *cfg = NULL;

	snprintf(path, sizeof(path), "%s/race/decisions/global.yaml", tmpdir);
	for (int w = 0; w < WRITERS; w++) {
		pids[w] = fork();
		assert_true(pids[w] >= 0);
		if (pids[w] == 0) {
			for (int i = 0; i < EACH; i++) {
				char name[64];
				struct domain_spec s;

				snprintf(name, sizeof(name), "w%d-%d.example", w, i);
				if (domain_spec_parse(name, false, &s, NULL) < 0 ||
				    decisions_update(path, i % 2 ? DECISIONS_DENY : DECISIONS_ALLOW,
				                     &s, NULL) != 1)
					_exit(1);
			}
			_exit(0);
		}
	}
	for (int w = 0; w < WRITERS; w++) {
		int status;
		assert_int_equal(waitpid(pids[w], &status, 0), pids[w]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	text = slurp(path);
	struct config_source src = {"race.yaml", text, strlen(text), true};
	assert_int_equal(config_parse_file(CONFIG_FILE_DECISIONS, CONFIG_LAYER_GLOBAL_DECISIONS,
	                                   &src, NULL, &cfg, NULL),
	                 0);
	assert_int_equal(cfg->proxy.allow.n + cfg->proxy.deny.n, WRITERS * EACH);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* Cloister's older approvals/ directory: read in place while decisions/ does not exist, said
 * once, never renamed; before the first save it is copied whole to decisions/, so that the
 * one new file never hides the others. */
static void test_approvals_dir_is_read_in_place_and_copied_before_the_first_save(void **state)
{
	char cfgdir[300], sub[400];
	struct cl_error err = {{0}};
	struct policy_result res;
	struct domain_spec s = spec("new.example");
	_cleanup_free_ char *path = NULL, *back = NULL;

	snprintf(cfgdir, sizeof(cfgdir), "%s/approvals-cfg", tmpdir);
	assert_int_equal(mkdir(cfgdir, 0700), 0);
	snprintf(sub, sizeof(sub), "%s/approvals", cfgdir);
	assert_int_equal(mkdir(sub, 0700), 0);
	snprintf(sub, sizeof(sub), "%s/approvals/projects", cfgdir);
	assert_int_equal(mkdir(sub, 0700), 0);
	/* The old flat form, as Cloister wrote it there. */
	snprintf(sub, sizeof(sub), "%s/approvals/global.yaml", cfgdir);
	write_text(sub, "domains: [old.example]\ndenied_domains: [evil.example]\n");
	snprintf(sub, sizeof(sub), "%s/approvals/projects/web.yaml", cfgdir);
	write_text(sub, "patterns: [\"*.web.example\"]\n");
	snprintf(sub, sizeof(sub), "%s/approvals/projects/other.yaml", cfgdir);
	write_text(sub, "denied_patterns: [\"*.other.example\"]\n");

	for (int round = 0; round < 2; round++) {
		_cleanup_(config_freep) struct config *cfg = NULL;
		bool said = false;

		assert_int_equal(config_load_dir(cfgdir, "web", NULL, &cfg, &err), 0);
		for (size_t i = 0; i < cfg->n_warnings; i++)
			said |= strstr(cfg->warnings[i],
			               "/approvals: read in place of decisions/") != NULL;
		assert_true(said == (round == 0)); /* said once per process */
		assert_int_equal(policy_check_domain(cfg, NULL, "old.example", &res, &err), 0);
		assert_int_equal(res.verdict, POLICY_ALLOW);
		assert_non_null(strstr(res.origin.file, "/approvals/global.yaml"));
		assert_int_equal(policy_check_domain(cfg, NULL, "evil.example", &res, &err), 0);
		assert_int_equal(res.verdict, POLICY_DENY);
		assert_int_equal(policy_check_domain(cfg, NULL, "a.web.example", &res, &err), 0);
		assert_int_equal(res.verdict, POLICY_ALLOW);
	}

	/* The first save: approvals/ is copied to decisions/, then the entry added there. */
	assert_int_equal(decisions_prepare_dir(cfgdir, &err), 1);
	assert_int_equal(decisions_prepare_dir(cfgdir, &err), 0); /* once */
	assert_int_equal(decisions_path(cfgdir, "web", &path, &err), 0);
	assert_int_equal(decisions_update(path, DECISIONS_ALLOW, &s, &err), 1);
	back = slurp(path);
	check_summary(back, "allow: *.web.example new.example | deny:");
	{
		_cleanup_(config_freep) struct config *cfg = NULL;

		assert_int_equal(config_load_dir(cfgdir, "other", NULL, &cfg, &err), 0);
		for (size_t i = 0; i < cfg->n_warnings; i++)
			assert_null(strstr(cfg->warnings[i], "approvals"));
		/* Every other file came along: the global denial, the other project's. */
		assert_int_equal(policy_check_domain(cfg, NULL, "evil.example", &res, &err), 0);
		assert_int_equal(res.verdict, POLICY_DENY);
		assert_non_null(strstr(res.origin.file, "/decisions/global.yaml"));
		assert_int_equal(policy_check_domain(cfg, NULL, "x.y.other.example", &res, &err),
		                 0);
		assert_int_equal(res.verdict, POLICY_DENY);
	}
	/* approvals/ is as it was. */
	free(back);
	snprintf(sub, sizeof(sub), "%s/approvals/global.yaml", cfgdir);
	back = slurp(sub);
	assert_string_equal(back, "domains: [old.example]\ndenied_domains: [evil.example]\n");
	free(back);
	snprintf(sub, sizeof(sub), "%s/approvals/projects/web.yaml", cfgdir);
	back = slurp(sub);
	assert_string_equal(back, "patterns: [\"*.web.example\"]\n");
	{
		/* No temporary directory left behind. */
		DIR *d = opendir(cfgdir);
		struct dirent *e;

		assert_non_null(d);
		while ((e = readdir(d)))
			assert_null(strstr(e->d_name, ".decisions.tmp"));
		closedir(d);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_first_entry_creates_a_file_config_reads),
	        cmocka_unit_test(test_the_policy_sees_an_added_decision),
	        cmocka_unit_test(test_existing_entries_are_kept_in_order_without_duplicates),
	        cmocka_unit_test(test_older_flat_lists_become_entries),
	        cmocka_unit_test(test_awkward_names_are_quoted_so_yaml_keeps_them),
	        cmocka_unit_test(test_unreadable_or_unknown_content_is_not_rewritten),
	        cmocka_unit_test(test_exec_entries_are_added_read_back_and_removed),
	        cmocka_unit_test(test_file_entries_are_added_read_back_and_removed),
	        cmocka_unit_test(test_a_file_entry_must_be_a_literal_absolute_path),
	        cmocka_unit_test(test_pinned_exec_entries),
	        cmocka_unit_test(test_bad_pins_are_refused),
	        cmocka_unit_test(test_wildcard_needs_three_labels),
	        cmocka_unit_test(test_paths_follow_cloisters_layout),
	        cmocka_unit_test(test_write_creates_private_dirs_and_a_0600_file),
	        cmocka_unit_test(test_a_failure_at_any_step_leaves_the_old_file),
	        cmocka_unit_test(test_a_crash_before_the_rename_leaves_the_old_file),
	        cmocka_unit_test(test_update_adds_once_and_refuses_a_broken_file),
	        cmocka_unit_test(test_concurrent_writers_keep_each_others_entries),
	        cmocka_unit_test(
	                test_approvals_dir_is_read_in_place_and_copied_before_the_first_save),
	};

	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
