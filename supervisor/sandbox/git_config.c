/* See git_config.h. */
#include "supervisor/sandbox/git_config.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

/* Longer section, subsection or key names are refused (git's own limit on a key is 1 KiB
 * in practice; nothing legitimate comes near). */
#define NAME_LEN 1024

struct parser {
	const char *buf;
	size_t len, i;
};

static bool at_end(const struct parser *p)
{
	return p->i >= p->len;
}

static void skip_line(struct parser *p)
{
	while (!at_end(p) && p->buf[p->i] != '\n')
		p->i++;
}

/* "[name]", "[name "sub"]" or "[name.sub]"; P at '['. */
static int parse_header(struct parser *p, char *section, char *sub, bool *has_sub)
{
	size_t n = 0, s = 0;
	char *dot;

	p->i++;
	while (!at_end(p) && (isalnum((unsigned char)p->buf[p->i]) || p->buf[p->i] == '-' ||
	                      p->buf[p->i] == '.')) {
		if (n + 1 >= NAME_LEN)
			return -EINVAL;
		section[n++] = (char)tolower((unsigned char)p->buf[p->i++]);
	}
	section[n] = '\0';
	if (n == 0 || at_end(p))
		return -EINVAL;
	*has_sub = false;
	/* The old form: the subsection after the first dot, without case. */
	if ((dot = strchr(section, '.'))) {
		*dot = '\0';
		strcpy(sub, dot + 1);
		*has_sub = true;
		if (!section[0] || !sub[0])
			return -EINVAL;
	}
	if (p->buf[p->i] == ' ' || p->buf[p->i] == '\t') {
		if (*has_sub)
			return -EINVAL;
		while (!at_end(p) && (p->buf[p->i] == ' ' || p->buf[p->i] == '\t'))
			p->i++;
		if (at_end(p) || p->buf[p->i] != '"')
			return -EINVAL;
		p->i++;
		for (;;) {
			char c;

			if (at_end(p) || p->buf[p->i] == '\n')
				return -EINVAL;
			c = p->buf[p->i++];
			if (c == '"')
				break;
			if (c == '\\') {
				if (at_end(p) || p->buf[p->i] == '\n')
					return -EINVAL;
				c = p->buf[p->i++];
			}
			if (s + 1 >= NAME_LEN)
				return -EINVAL;
			sub[s++] = c;
		}
		sub[s] = '\0';
		*has_sub = true;
	}
	if (at_end(p) || p->buf[p->i] != ']')
		return -EINVAL;
	p->i++;
	return 0;
}

/* From after '=' to the end of the logical line, into VAL (room for the whole buffer). */
static int parse_value(struct parser *p, char *val)
{
	size_t n = 0, kept = 0;
	bool quoted = false;

	while (!at_end(p) && (p->buf[p->i] == ' ' || p->buf[p->i] == '\t'))
		p->i++;
	while (!at_end(p)) {
		char c = p->buf[p->i];

		if (c == '\n') {
			if (quoted)
				return -EINVAL;
			break;
		}
		if (!quoted && (c == '#' || c == ';')) {
			skip_line(p);
			break;
		}
		p->i++;
		if (c == '\\') {
			if (at_end(p))
				return -EINVAL;
			c = p->buf[p->i++];
			if (c == '\n')
				continue; /* the line goes on */
			switch (c) {
			case 'n':
				c = '\n';
				break;
			case 't':
				c = '\t';
				break;
			case 'b':
				c = '\b';
				break;
			case '"':
			case '\\':
				break;
			default:
				return -EINVAL;
			}
			val[n++] = c;
			kept = n;
			continue;
		}
		if (c == '"') {
			quoted = !quoted;
			kept = n;
			continue;
		}
		val[n++] = c;
		/* Blanks outside quotes at the end are dropped. */
		if (quoted || (c != ' ' && c != '\t' && c != '\r'))
			kept = n;
	}
	if (quoted)
		return -EINVAL;
	val[kept] = '\0';
	return 0;
}

int git_config_parse(const char *buf, size_t len, git_config_fn fn, void *userdata)
{
	_cleanup_free_ char *section = malloc(NAME_LEN), *sub = malloc(NAME_LEN),
	                    *key = malloc(NAME_LEN), *val = malloc(len + 1);
	struct parser p = {buf, len, 0};
	bool has_section = false, has_sub = false;

	if (!section || !sub || !key || !val)
		return -ENOMEM;
	if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)
		p.i = 3;
	while (!at_end(&p)) {
		char c = buf[p.i];
		size_t n = 0;
		bool has_value = false;
		int r;

		if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
			p.i++;
			continue;
		}
		if (c == '#' || c == ';') {
			skip_line(&p);
			continue;
		}
		if (c == '[') {
			r = parse_header(&p, section, sub, &has_sub);
			if (r < 0)
				return r;
			has_section = true;
			continue;
		}
		if (!isalpha((unsigned char)c) || !has_section)
			return -EINVAL;
		while (!at_end(&p) && (isalnum((unsigned char)buf[p.i]) || buf[p.i] == '-')) {
			if (n + 1 >= NAME_LEN)
				return -EINVAL;
			key[n++] = (char)tolower((unsigned char)buf[p.i++]);
		}
		key[n] = '\0';
		while (!at_end(&p) && (buf[p.i] == ' ' || buf[p.i] == '\t'))
			p.i++;
		if (!at_end(&p) && buf[p.i] == '=') {
			p.i++;
			r = parse_value(&p, val);
			if (r < 0)
				return r;
			has_value = true;
		} else if (!at_end(&p) && buf[p.i] != '\n' && buf[p.i] != '\r' && buf[p.i] != '#' &&
		           buf[p.i] != ';') {
			return -EINVAL;
		}
		r = fn(section, has_sub ? sub : NULL, key, has_value ? val : NULL, userdata);
		if (r < 0)
			return r;
	}
	return 0;
}

enum git_named git_config_named(const char *section, const char *subsection, const char *key,
                                const char *value)
{
	/* Variables whose value is a command git runs (git-config(1)); the subsection, where
	 * there is one (diff.<driver>.command), is any. */
	static const struct {
		const char *section, *key;
	} programs[] = {
	        {"core", "fsmonitor"},
	        {"core", "sshcommand"},
	        {"core", "editor"},
	        {"core", "pager"},
	        {"core", "askpass"},
	        {"core", "gitproxy"},
	        {"core", "alternaterefscommand"},
	        {"sequence", "editor"},
	        {"diff", "external"},
	        {"diff", "command"},
	        {"diff", "textconv"},
	        {"interactive", "difffilter"},
	        {"filter", "clean"},
	        {"filter", "smudge"},
	        {"filter", "process"},
	        {"merge", "driver"},
	        {"difftool", "cmd"},
	        {"mergetool", "cmd"},
	        {"gpg", "program"},
	        {"credential", "helper"},
	        {"uploadpack", "packobjectshook"},
	        {"remote", "uploadpack"},
	        {"remote", "receivepack"},
	        {"sendemail", "smtpserver"},
	        {"sendemail", "sendmailcmd"},
	        {"browser", "cmd"},
	        {"man", "cmd"},
	};

	if (!value || !value[0])
		return GIT_NAMED_NONE;
	if (strcmp(key, "path") == 0 && ((strcmp(section, "include") == 0 && !subsection) ||
	                                 (strcmp(section, "includeif") == 0 && subsection)))
		return GIT_NAMED_INCLUDE;
	if (strcmp(section, "core") == 0 && !subsection && strcmp(key, "hookspath") == 0)
		return GIT_NAMED_HOOKS_DIR;
	/* An alias starting with '!' is a shell command; pager.<command> is one. */
	if ((strcmp(section, "alias") == 0 && value[0] == '!') || strcmp(section, "pager") == 0)
		return GIT_NAMED_PROGRAM;
	for (size_t i = 0; i < sizeof(programs) / sizeof(programs[0]); i++)
		if (strcmp(section, programs[i].section) == 0 && strcmp(key, programs[i].key) == 0)
			return GIT_NAMED_PROGRAM;
	return GIT_NAMED_NONE;
}

static bool is_operator(char c)
{
	return c == ';' || c == '|' || c == '&' || c == '<' || c == '>' || c == '(' || c == ')' ||
	       c == '\n';
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

int git_command_words(const char *cmd, int (*fn)(const char *word, void *userdata), void *userdata)
{
	_cleanup_free_ char *word = malloc(strlen(cmd) + 1);
	const char *p = cmd;
	bool first = true;

	if (!word)
		return -ENOMEM;
	for (;;) {
		size_t n = 0;
		bool expands = false;
		char *w = word;
		int r;

		while (*p && (is_blank(*p) || is_operator(*p)))
			p++;
		if (!*p)
			return 0;
		while (*p && !is_blank(*p) && !is_operator(*p)) {
			char c = *p++;

			if (c == '\'') {
				while (*p && *p != '\'')
					word[n++] = *p++;
				if (*p)
					p++;
			} else if (c == '"') {
				while (*p && *p != '"') {
					if (*p == '\\' && p[1])
						p++;
					if (*p == '$' || *p == '`')
						expands = true;
					word[n++] = *p++;
				}
				if (*p)
					p++;
			} else if (c == '\\') {
				if (*p)
					word[n++] = *p++;
			} else {
				if (c == '$' || c == '`' || c == '*' || c == '?' || c == '[')
					expands = true;
				word[n++] = c;
			}
		}
		word[n] = '\0';
		if (first && w[0] == '!')
			w++;
		first = false;
		if (!w[0] || w[0] == '-' || expands || strchr(w, '%'))
			continue;
		r = fn(w, userdata);
		if (r < 0)
			return r;
	}
}
