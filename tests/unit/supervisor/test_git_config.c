/* git's config files read for what they name: the syntax (sections, subsections, quotes,
 * escapes, continuations, comments), what each variable names, and a command's words. */
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
#include "supervisor/sandbox/git_config.h"

struct seen {
	char text[4096];
	size_t len;
};

static int record(const char *section, const char *sub, const char *key, const char *value,
                  void *userdata)
{
	struct seen *s = userdata;
	int n = snprintf(s->text + s->len, sizeof(s->text) - s->len, "%s|%s|%s|%s\n", section,
	                 sub ? sub : "-", key, value ? value : "(true)");

	assert_true(n > 0 && (size_t)n < sizeof(s->text) - s->len);
	s->len += (size_t)n;
	return 0;
}

static const char *parse(const char *text, int expect)
{
	static struct seen s;

	memset(&s, 0, sizeof(s));
	assert_int_equal(git_config_parse(text, strlen(text), record, &s), expect);
	return s.text;
}

static void test_sections_and_values(void **state)
{
	assert_string_equal(parse("[Core]\n\tHooksPath = .githooks\n"
	                          "[include]\n  path = ../team.gitconfig ; a comment\n"
	                          "[includeIf \"gitdir:~/work/\"]\n\tpath = work.inc\n"
	                          "[filter \"Tidy\"]\n\tclean = sh tools/clean.sh %f # comment\n"
	                          "[alias] st = !scripts/st.sh\n"
	                          "[core]\n\tbare\n",
	                          0),
	                    "core|-|hookspath|.githooks\n"
	                    "include|-|path|../team.gitconfig\n"
	                    "includeif|gitdir:~/work/|path|work.inc\n"
	                    "filter|Tidy|clean|sh tools/clean.sh %f\n"
	                    "alias|-|st|!scripts/st.sh\n"
	                    "core|-|bare|(true)\n");
}

static void test_quotes_escapes_continuations(void **state)
{
	/* A '#' inside quotes is the value's; a trailing backslash continues the line; the old
	 * [section.sub] form; a subsection with an escaped quote. */
	assert_string_equal(parse("[core]\n\tfsmonitor = \"scripts/a b.sh # not a comment\"\n"
	                          "\tsshCommand = ssh \\\n  -i key\n"
	                          "[diff.Tool]\n\tcommand = x\\ty\n"
	                          "[remote \"o\\\"r\"]\n\turl = u   \n",
	                          0),
	                    "core|-|fsmonitor|scripts/a b.sh # not a comment\n"
	                    "core|-|sshcommand|ssh   -i key\n"
	                    "diff|tool|command|x\ty\n"
	                    "remote|o\"r|url|u\n");
}

static void test_bad_lines_stop(void **state)
{
	/* git refuses these files whole: nothing after the bad line counts. */
	static const char *const bad[] = {
	        "key = before any section\n",
	        "[core\n",
	        "[core]\n\tfsmonitor = \"unterminated\n",
	        "[core]\n\tfsmonitor = a\\q\n",
	        "[core]\n\t1key = x\n",
	        "[sec \"sub\n",
	        "[]\n",
	        "[core]\n\tkey junk\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct seen s = {0};

		if (git_config_parse(bad[i], strlen(bad[i]), record, &s) != -EINVAL)
			fail_msg("accepted: %s", bad[i]);
	}
	/* A NUL or a value without its end never reads past the buffer. */
	assert_int_equal(git_config_parse("[a]\nb = c\\", 10, record, &(struct seen){0}), -EINVAL);
	assert_string_equal(parse("\xef\xbb\xbf[a]\nb\n", 0), "a|-|b|(true)\n");
}

static void test_named(void **state)
{
	assert_int_equal(git_config_named("include", NULL, "path", "x"), GIT_NAMED_INCLUDE);
	assert_int_equal(git_config_named("includeif", "onbranch:main", "path", "x"),
	                 GIT_NAMED_INCLUDE);
	assert_int_equal(git_config_named("include", "sub", "path", "x"), GIT_NAMED_NONE);
	assert_int_equal(git_config_named("core", NULL, "hookspath", ".githooks"),
	                 GIT_NAMED_HOOKS_DIR);
	assert_int_equal(git_config_named("core", NULL, "fsmonitor", "scripts/w"),
	                 GIT_NAMED_PROGRAM);
	assert_int_equal(git_config_named("filter", "lfs", "process", "git-lfs"),
	                 GIT_NAMED_PROGRAM);
	assert_int_equal(git_config_named("diff", "pdf", "textconv", "pdftotext"),
	                 GIT_NAMED_PROGRAM);
	assert_int_equal(git_config_named("alias", NULL, "st", "!scripts/st.sh"),
	                 GIT_NAMED_PROGRAM);
	/* An alias without '!' is git's own subcommand. */
	assert_int_equal(git_config_named("alias", NULL, "co", "checkout"), GIT_NAMED_NONE);
	assert_int_equal(git_config_named("user", NULL, "name", "x"), GIT_NAMED_NONE);
	assert_int_equal(git_config_named("core", NULL, "fsmonitor", NULL), GIT_NAMED_NONE);
}

static int word(const char *w, void *userdata)
{
	struct seen *s = userdata;
	int n = snprintf(s->text + s->len, sizeof(s->text) - s->len, "[%s]", w);

	s->len += (size_t)n;
	return 0;
}

static void test_command_words(void **state)
{
	struct seen s = {0};

	assert_int_equal(git_command_words("!sh -c 'scripts/a b.sh' tools/x.sh;./y|z>out %f "
	                                   "$HOME/q \"w\"\\ v",
	                                   word, &s),
	                 0);
	assert_string_equal(s.text, "[sh][scripts/a b.sh][tools/x.sh][./y][z][out][w v]");
	memset(&s, 0, sizeof(s));
	assert_int_equal(git_command_words("  ", word, &s), 0);
	assert_string_equal(s.text, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_sections_and_values),
	        cmocka_unit_test(test_quotes_escapes_continuations),
	        cmocka_unit_test(test_bad_lines_stop),
	        cmocka_unit_test(test_named),
	        cmocka_unit_test(test_command_words),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
