#include "supervisor/policy/exec_pattern.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/utf8.h"
#include "protocol/quote.h"
#include "supervisor/policy/config.h"

/* The characters quote.h writes without quotes, as a regex class body. */
#define SIMPLE_CLASS "A-Za-z0-9_./:@+=\\-"
/* The text of one argument inside single quotes: any character but a quote, or '\''. */
#define QUOTED_CHAR "(?:[^']|'\\\\'')"
/* One argument of the canonical command, quoted or not. */
#define ANY_WORD "(?:[" SIMPLE_CLASS "]+|'" QUOTED_CHAR "*')"

const char *exec_match_to_string(enum exec_match m)
{
	switch (m) {
	case EXEC_MATCH_EXACT:
		return "exact";
	case EXEC_MATCH_PROGRAM:
		return "program";
	case EXEC_MATCH_PATTERN:
		return "pattern";
	}
	return "?";
}

int exec_match_from_string(const char *s, enum exec_match *ret)
{
	for (enum exec_match m = EXEC_MATCH_EXACT; m <= EXEC_MATCH_PATTERN; m++)
		if (strcmp(s, exec_match_to_string(m)) == 0) {
			*ret = m;
			return 0;
		}
	return -EINVAL;
}

void exec_pattern_rule_done(struct exec_pattern_rule *r)
{
	free(r->path_glob);
	free(r->command);
	r->path_glob = r->command = NULL;
}

/* ---- a growing string ------------------------------------------------------------------- */

struct sbuf {
	char *p;
	size_t len, size;
	bool oom;
};

static void put_n(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->size) {
		size_t size = (b->len + n + 1) * 2;
		char *p = realloc(b->p, size);

		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->size = size;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void put(struct sbuf *b, const char *s)
{
	put_n(b, s, strlen(s));
}

/* One literal byte of valid UTF-8 text, as a regex matching it. */
static void put_regex_literal(struct sbuf *b, unsigned char c)
{
	char buf[8];

	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	    c >= 0x80) {
		buf[0] = (char)c;
		put_n(b, buf, 1);
	} else if (c < 0x20 || c == 0x7f) {
		snprintf(buf, sizeof(buf), "\\x{%02x}", c);
		put(b, buf);
	} else {
		/* A backslash before any other ASCII character is that character. */
		buf[0] = '\\';
		buf[1] = (char)c;
		put_n(b, buf, 2);
	}
}

static bool is_utf8(const char *s)
{
	while (*s) {
		size_t n = cl_utf8_decode(s, NULL);

		if (n == 0)
			return false;
		s += n;
	}
	return true;
}

static bool is_simple_char(unsigned char c)
{
	return cl_quote_arg_is_simple((const char *)&c, 1);
}

static const char *file_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* The quoted form of ARG, as a regex matching exactly it. */
static int put_quoted_literal(struct sbuf *b, const char *arg, struct cl_error *err)
{
	size_t len = strlen(arg), qlen = cl_quote_arg_length(arg, len);
	_cleanup_free_ char *q = NULL;

	if (!is_utf8(arg))
		return cl_error_set(
		        err, -EINVAL,
		        "an argument is not UTF-8 text, which a rule cannot spell; decide "
		        "for the program or with a pattern");
	q = malloc(qlen + 1);
	if (!q)
		return cl_error_set(err, -ENOMEM, "out of memory");
	if (cl_quote_arg(arg, len, q, qlen + 1) < 0)
		return cl_error_set(err, -EINVAL, "an argument cannot be quoted");
	for (size_t i = 0; i < qlen; i++)
		put_regex_literal(b, (unsigned char)q[i]);
	return 0;
}

/* \A(?:NAME0|NAME1): the program under its file's name and, when it differs, argv[0]'s. */
static int put_program(struct sbuf *b, const char *exe, const char *argv0, struct cl_error *err)
{
	const char *n0 = file_name(exe), *n1 = file_name(argv0);
	int r;

	put(b, "\\A(?:");
	r = put_quoted_literal(b, n0, err);
	if (r >= 0 && strcmp(n0, n1) != 0) {
		put(b, "|");
		r = put_quoted_literal(b, n1, err);
	}
	put(b, ")");
	return r;
}

/* ---- patterns --------------------------------------------------------------------------- */

enum tok_kind { TOK_LIT, TOK_STAR, TOK_QMARK };

struct tok {
	enum tok_kind kind;
	unsigned char c;
};

struct word {
	struct tok *toks;
	size_t n;
	bool any_args; /* the word `**` */
};

struct words {
	struct word *w;
	size_t n;
};

static void words_done(struct words *ws)
{
	for (size_t i = 0; i < ws->n; i++)
		free(ws->w[i].toks);
	free(ws->w);
}

static int parse_pattern(const char *pattern, struct words *ret, struct cl_error *err)
{
	size_t len = strlen(pattern);
	struct words ws = {0};
	const char *p = pattern;

	if (len > EXEC_PATTERN_MAX)
		return cl_error_set(err, -EINVAL, "the pattern is longer than %d bytes",
		                    EXEC_PATTERN_MAX);
	/* At most one word per two bytes, and each word at most len tokens. */
	ws.w = calloc(len / 2 + 1, sizeof(*ws.w));
	if (!ws.w)
		return cl_error_set(err, -ENOMEM, "out of memory");
	for (;;) {
		struct word *w;
		bool quoted_any = false;
		unsigned stars_in_a_row = 0, max_row = 0;

		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		w = &ws.w[ws.n++];
		w->toks = calloc(len, sizeof(*w->toks));
		if (!w->toks) {
			words_done(&ws);
			return cl_error_set(err, -ENOMEM, "out of memory");
		}
		while (*p && *p != ' ' && *p != '\t') {
			unsigned char c = (unsigned char)*p;

			if (c < 0x20 || c == 0x7f) {
				words_done(&ws);
				return cl_error_set(err, -EINVAL,
				                    "the pattern has a control character; quote it "
				                    "as the command shows it");
			}
			if (c == '\'') {
				const char *end = strchr(p + 1, '\'');

				if (!end) {
					words_done(&ws);
					return cl_error_set(
					        err, -EINVAL,
					        "the pattern has an unterminated quote");
				}
				for (const char *q = p + 1; q < end; q++)
					w->toks[w->n++] = (struct tok){TOK_LIT, (unsigned char)*q};
				quoted_any = true;
				stars_in_a_row = 0;
				p = end + 1;
				continue;
			}
			if (c == '"') {
				words_done(&ws);
				return cl_error_set(
				        err, -EINVAL,
				        "double quotes do not quote in a pattern: use single "
				        "quotes, as the command shows them");
			}
			if (c == '\\') {
				if (!p[1]) {
					words_done(&ws);
					return cl_error_set(err, -EINVAL,
					                    "the pattern ends with a backslash");
				}
				w->toks[w->n++] = (struct tok){TOK_LIT, (unsigned char)p[1]};
				stars_in_a_row = 0;
				p += 2;
				continue;
			}
			if (c == '*') {
				w->toks[w->n++] = (struct tok){TOK_STAR, 0};
				if (++stars_in_a_row > max_row)
					max_row = stars_in_a_row;
			} else {
				w->toks[w->n++] = (struct tok){c == '?' ? TOK_QMARK : TOK_LIT, c};
				stars_in_a_row = 0;
			}
			p++;
		}
		if (!quoted_any && w->n == 2 && max_row == 2) {
			w->any_args = true;
		} else if (max_row >= 2) {
			words_done(&ws);
			return cl_error_set(err, -EINVAL,
			                    "\"**\" stands alone as a word (any number of "
			                    "arguments); inside an argument write one \"*\"");
		}
	}
	if (!is_utf8(pattern)) {
		words_done(&ws);
		return cl_error_set(err, -EINVAL, "the pattern is not UTF-8 text");
	}
	*ret = ws;
	return 0;
}

/* Is word W the literal NAME? */
static bool word_is(const struct word *w, const char *name)
{
	size_t len = strlen(name);

	if (w->any_args || w->n != len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (w->toks[i].kind != TOK_LIT || w->toks[i].c != (unsigned char)name[i])
			return false;
	return true;
}

/* One argument that word W allows, in either of the forms quote.h writes. */
static void put_word(struct sbuf *b, const struct word *w)
{
	bool simple = w->n > 0;

	for (size_t i = 0; i < w->n && simple; i++)
		simple = w->toks[i].kind != TOK_LIT || is_simple_char(w->toks[i].c);
	put(b, "(?:");
	if (simple) {
		/* Written as is: simple characters only, at least one. */
		put(b, "(?=[" SIMPLE_CLASS "])");
		for (size_t i = 0; i < w->n; i++) {
			if (w->toks[i].kind == TOK_STAR)
				put(b, "[" SIMPLE_CLASS "]*");
			else if (w->toks[i].kind == TOK_QMARK)
				put(b, "[" SIMPLE_CLASS "]");
			else
				put_regex_literal(b, w->toks[i].c);
		}
		put(b, "|");
	}
	/* Quoted: '…' with each ' written '\''. */
	put(b, "'");
	for (size_t i = 0; i < w->n; i++) {
		if (w->toks[i].kind == TOK_STAR)
			put(b, QUOTED_CHAR "*");
		else if (w->toks[i].kind == TOK_QMARK)
			put(b, QUOTED_CHAR);
		else if (w->toks[i].c == '\'')
			put(b, "'\\\\''");
		else
			put_regex_literal(b, w->toks[i].c);
	}
	put(b, "')");
}

/* ---- rules ------------------------------------------------------------------------------- */

/* EXE with fnmatch's special characters escaped. */
static char *glob_escape(const char *exe)
{
	struct sbuf b = {0};

	put(&b, "");
	for (const char *p = exe; *p; p++) {
		if (strchr("*?[]\\", *p))
			put(&b, "\\");
		put_n(&b, p, 1);
	}
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

int exec_pattern_rule(const char *exe, const char *const *argv, size_t argc, enum exec_match match,
                      const char *pattern, struct exec_pattern_rule *ret, struct cl_error *err)
{
	static const char *const empty_argv[] = {""};
	_cleanup_free_ char *path_glob = NULL;
	struct sbuf b = {0};
	int r = 0;

	if (!exe || exe[0] != '/' || !*file_name(exe))
		return cl_error_set(err, -EINVAL, "the executable has no absolute path");
	if (!is_utf8(exe))
		return cl_error_set(err, -EINVAL,
		                    "the executable's path is not UTF-8 text, which a rule cannot "
		                    "spell");
	if (argc == 0) {
		argv = empty_argv;
		argc = 1;
	}
	path_glob = glob_escape(exe);
	if (!path_glob)
		return cl_error_set(err, -ENOMEM, "out of memory");

	r = put_program(&b, exe, argv[0], err);
	switch (match) {
	case EXEC_MATCH_EXACT:
		for (size_t i = 1; i < argc && r >= 0; i++) {
			put(&b, " ");
			r = put_quoted_literal(&b, argv[i], err);
		}
		break;
	case EXEC_MATCH_PROGRAM:
		put(&b, "(?: " ANY_WORD ")*");
		break;
	case EXEC_MATCH_PATTERN: {
		struct words ws = {0};

		if (r < 0)
			break;
		if (!pattern || !*pattern) {
			r = cl_error_set(err, -EINVAL, "a pattern is needed");
			break;
		}
		r = parse_pattern(pattern, &ws, err);
		if (r < 0)
			break;
		if (ws.n == 0 ||
		    (!word_is(&ws.w[0], file_name(exe)) && !word_is(&ws.w[0], file_name(argv[0]))))
			r = cl_error_set(err, -EINVAL,
			                 "the pattern must start with the program's name (\"%s\")",
			                 file_name(exe));
		for (size_t i = 1; i < ws.n && r >= 0; i++) {
			if (ws.w[i].any_args) {
				put(&b, "(?: " ANY_WORD ")*");
			} else {
				put(&b, " ");
				put_word(&b, &ws.w[i]);
			}
		}
		words_done(&ws);
		break;
	}
	default:
		r = cl_error_set(err, -EINVAL, "unknown match");
	}
	put(&b, "\\z");
	if (r >= 0 && b.oom)
		r = cl_error_set(err, -ENOMEM, "out of memory");
	if (r >= 0 && (b.len > CONFIG_MAX_PATTERN || strlen(path_glob) > CONFIG_MAX_PATTERN))
		r = cl_error_set(
		        err, -EINVAL,
		        "the command is too long to keep as a rule (over %d bytes); decide "
		        "with a shorter pattern",
		        CONFIG_MAX_PATTERN);
	if (r < 0) {
		free(b.p);
		return r;
	}
	ret->path_glob = TAKE_PTR(path_glob);
	ret->command = b.p;
	return 0;
}

/* A subcommand: a short lowercase word (status, install, run-script). */
static bool looks_like_subcommand(const char *arg)
{
	size_t n = strlen(arg);

	if (n == 0 || n > 32 || !(arg[0] >= 'a' && arg[0] <= 'z'))
		return false;
	for (const char *p = arg; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' ||
		      *p == '_'))
			return false;
	return true;
}

int exec_pattern_suggest(const char *exe, const char *const *argv, size_t argc, char **ret,
                         struct cl_error *err)
{
	const char *name = exe ? file_name(exe) : "";
	size_t qlen = cl_quote_arg_length(name, strlen(name));
	struct sbuf b = {0};
	char *q = malloc(qlen + 1);

	if (!q)
		return cl_error_set(err, -ENOMEM, "out of memory");
	if (cl_quote_arg(name, strlen(name), q, qlen + 1) < 0) {
		free(q);
		return cl_error_set(err, -EINVAL, "the program's name cannot be quoted");
	}
	put(&b, q);
	free(q);
	if (argc > 1 && looks_like_subcommand(argv[1])) {
		put(&b, " ");
		put(&b, argv[1]);
	}
	put(&b, " **");
	if (b.oom) {
		free(b.p);
		return cl_error_set(err, -ENOMEM, "out of memory");
	}
	*ret = b.p;
	return 0;
}
