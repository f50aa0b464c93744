#include "protocol/json_strict.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest key or name shown in an error message. */
#define PRINTABLE_MAX 64

char *cl_json_printable(const char *s, size_t len, char *buf, size_t size)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		size_t need = c >= 0x20 && c < 0x7f && c != '\\' ? 1 : 4;

		if (n + need + 4 > size || n + need > PRINTABLE_MAX) {
			if (n + 4 <= size) {
				memcpy(buf + n, "...", 3);
				n += 3;
			}
			break;
		}
		if (need == 1)
			buf[n++] = (char)c;
		else
			n += (size_t)snprintf(buf + n, size - n, "\\x%02x", c);
	}
	if (size > 0)
		buf[n < size ? n : size - 1] = '\0';
	return buf;
}

/* ---- raw scan ------------------------------------------------------------------------------ */

struct scan_level {
	bool is_object;
	size_t index;    /* array: index of the current element */
	const char *key; /* object: raw (still escaped) text of the current key, or NULL */
	size_t key_len;
};

struct scanner {
	const char *p;
	size_t len, pos;
	unsigned depth, max_depth;
	size_t values, max_values;
	struct scan_level levels[CL_JSON_DEPTH_CEILING];
	struct cl_error *err;
};

/* The path of the value being scanned: "" at the top, "argv[2]", "request.env.PATH". */
static void scan_path(const struct scanner *s, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < s->depth && n < size; i++) {
		const struct scan_level *l = &s->levels[i];
		char key[PRINTABLE_MAX + 8];

		if (l->is_object && l->key)
			n += (size_t)snprintf(
			        buf + n, size - n, "%s%s", n > 0 ? "." : "",
			        cl_json_printable(l->key, l->key_len, key, sizeof(key)));
		else if (!l->is_object)
			n += (size_t)snprintf(buf + n, size - n, "[%zu]", l->index);
	}
}

static int scan_fail(struct scanner *s, int code, const char *what)
{
	char path[256];

	scan_path(s, path, sizeof(path));
	if (path[0])
		return cl_error_set(s->err, code, "%s: %s", path, what);
	return cl_error_set(s->err, code, "%s", what);
}

static int scan_syntax(struct scanner *s, const char *what)
{
	return cl_error_set(s->err, -EINVAL, "invalid JSON at byte %zu: %s", s->pos, what);
}

static void scan_ws(struct scanner *s)
{
	while (s->pos < s->len && s->p[s->pos] != '\0' && strchr(" \t\n\r", s->p[s->pos]))
		s->pos++;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The value of the \\uXXXX escape at pos, or -1 if it is malformed or truncated. */
static int scan_u_escape(const struct scanner *s, size_t pos)
{
	int v = 0;

	if (s->len - pos < 6)
		return -1;
	for (size_t i = 2; i < 6; i++) {
		int h = hexval(s->p[pos + i]);

		if (h < 0)
			return -1;
		v = v << 4 | h;
	}
	return v;
}

/* Scan a string starting at its opening quote; for a key, record it in the current level. */
static int scan_string(struct scanner *s, bool is_key)
{
	size_t start = ++s->pos;

	for (;;) {
		unsigned char c;

		if (s->pos >= s->len)
			return scan_syntax(s, "unterminated string");
		c = (unsigned char)s->p[s->pos];
		if (c == '"')
			break;
		if (c == '\0')
			return scan_fail(s, -EINVAL,
			                 is_key ? "a key contains a NUL byte"
			                        : "contains a NUL byte");
		if (c < 0x20)
			return scan_syntax(s, "control character in a string");
		if (c != '\\') {
			s->pos++;
			continue;
		}
		if (s->pos + 1 >= s->len)
			return scan_syntax(s, "unterminated string");
		c = (unsigned char)s->p[s->pos + 1];
		if (c == 'u') {
			int v = scan_u_escape(s, s->pos);

			if (v < 0)
				return scan_syntax(s, "bad \\u escape");
			if (v == 0)
				return scan_fail(s, -EINVAL,
				                 is_key ? "a key contains a NUL byte"
				                        : "contains a NUL byte");
			/* cJSON refuses unpaired surrogates; say so here, with the position. */
			if (v >= 0xdc00 && v <= 0xdfff)
				return scan_syntax(s, "unpaired UTF-16 surrogate");
			if (v >= 0xd800 && v <= 0xdbff) {
				size_t next = s->pos + 6;
				int low = next + 1 < s->len && s->p[next] == '\\' &&
				                          s->p[next + 1] == 'u'
				                  ? scan_u_escape(s, next)
				                  : -1;

				if (low < 0xdc00 || low > 0xdfff)
					return scan_syntax(s, "unpaired UTF-16 surrogate");
				s->pos += 6;
			}
			s->pos += 6;
		} else if (c != '\0' && strchr("\"\\/bfnrt", c)) {
			s->pos += 2;
		} else {
			return scan_syntax(s, "bad escape");
		}
	}
	if (is_key) {
		s->levels[s->depth - 1].key = s->p + start;
		s->levels[s->depth - 1].key_len = s->pos - start;
	}
	s->pos++; /* closing quote */
	return 0;
}

static bool at_digit(const struct scanner *s)
{
	return s->pos < s->len && s->p[s->pos] >= '0' && s->p[s->pos] <= '9';
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int scan_number(struct scanner *s)
{
	if (s->p[s->pos] == '-')
		s->pos++;
	if (!at_digit(s))
		return scan_syntax(s, "bad number");
	if (s->p[s->pos] == '0')
		s->pos++;
	else
		while (at_digit(s))
			s->pos++;
	if (s->pos < s->len && s->p[s->pos] == '.') {
		s->pos++;
		if (!at_digit(s))
			return scan_syntax(s, "bad number");
		while (at_digit(s))
			s->pos++;
	}
	if (s->pos < s->len && (s->p[s->pos] == 'e' || s->p[s->pos] == 'E')) {
		s->pos++;
		if (s->pos < s->len && (s->p[s->pos] == '+' || s->p[s->pos] == '-'))
			s->pos++;
		if (!at_digit(s))
			return scan_syntax(s, "bad number");
		while (at_digit(s))
			s->pos++;
	}
	return 0;
}

static int scan_literal(struct scanner *s)
{
	static const char *const words[] = {"true", "false", "null"};

	for (size_t i = 0; i < ELEMENTSOF(words); i++) {
		size_t n = strlen(words[i]);

		if (s->len - s->pos >= n && memcmp(s->p + s->pos, words[i], n) == 0) {
			s->pos += n;
			return 0;
		}
	}
	return scan_syntax(s, "unexpected character");
}

static int scan_push(struct scanner *s, bool is_object)
{
	if (s->depth >= s->max_depth)
		return scan_fail(s, -E2BIG, "nesting too deep");
	s->levels[s->depth++] = (struct scan_level){.is_object = is_object};
	s->pos++;
	return 0;
}

/* Scan an object key and its colon, leaving pos at the value. */
static int scan_key(struct scanner *s)
{
	int r;

	/* Until the key is read, errors are reported at the object's path. */
	s->levels[s->depth - 1].key = NULL;
	scan_ws(s);
	if (s->pos >= s->len || s->p[s->pos] != '"')
		return scan_syntax(s, "expected a key");
	r = scan_string(s, true);
	if (r < 0)
		return r;
	scan_ws(s);
	if (s->pos >= s->len || s->p[s->pos] != ':')
		return scan_syntax(s, "expected ':'");
	s->pos++;
	return 0;
}

static int scan_document(struct scanner *s)
{
	int r;

	for (;;) {
		/* A value is expected at pos. */
		scan_ws(s);
		if (s->pos >= s->len)
			return scan_syntax(s, "unexpected end of input");
		if (++s->values > s->max_values)
			return scan_fail(s, -E2BIG, "too many values");
		switch (s->p[s->pos]) {
		case '{':
			r = scan_push(s, true);
			if (r < 0)
				return r;
			scan_ws(s);
			if (s->pos < s->len && s->p[s->pos] == '}')
				break; /* empty: closed below */
			r = scan_key(s);
			if (r < 0)
				return r;
			continue;
		case '[':
			r = scan_push(s, false);
			if (r < 0)
				return r;
			scan_ws(s);
			if (s->pos < s->len && s->p[s->pos] == ']')
				break;
			continue;
		case '"':
			r = scan_string(s, false);
			break;
		case '-':
		case '0' ... '9':
			r = scan_number(s);
			break;
		default:
			r = scan_literal(s);
			break;
		}
		if (r < 0)
			return r;

		/* After a value: close containers, or move to the next element. */
		for (;;) {
			struct scan_level *l;
			char c;

			if (s->depth == 0)
				goto done;
			l = &s->levels[s->depth - 1];
			scan_ws(s);
			if (s->pos >= s->len)
				return scan_syntax(s, "unexpected end of input");
			c = s->p[s->pos];
			if (c == (l->is_object ? '}' : ']')) {
				s->pos++;
				s->depth--;
				continue;
			}
			if (c != ',')
				return scan_syntax(s, l->is_object ? "expected ',' or '}'"
				                                   : "expected ',' or ']'");
			s->pos++;
			if (l->is_object) {
				r = scan_key(s);
				if (r < 0)
					return r;
			} else {
				l->index++;
			}
			break;
		}
	}
done:
	scan_ws(s);
	if (s->pos < s->len)
		return scan_syntax(s, "trailing data after the value");
	return 0;
}

/* ---- checks on the parsed tree ------------------------------------------------------------- */

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* path is the item's path, in a buffer of size bytes that children may extend. */
static int check_duplicates(const cJSON *item, char *path, size_t size, struct cl_error *err)
{
	size_t n = 0, plen = strlen(path), i = 0;
	const cJSON *c;
	int r;

	if (!cJSON_IsObject(item) && !cJSON_IsArray(item))
		return 0;

	for (c = item->child; c; c = c->next)
		n++;
	if (cJSON_IsObject(item) && n > 1) {
		_cleanup_free_ const char **names = calloc(n, sizeof(*names));

		if (!names)
			return cl_error_set(err, -ENOMEM, "out of memory");
		for (c = item->child; c; c = c->next)
			names[i++] = c->string;
		qsort(names, n, sizeof(*names), compare_names);
		for (i = 1; i < n; i++)
			if (strcmp(names[i - 1], names[i]) == 0) {
				char key[PRINTABLE_MAX + 8];

				cl_json_printable(names[i], strlen(names[i]), key, sizeof(key));
				if (plen > 0)
					return cl_error_set(err, -EINVAL,
					                    "%s: duplicate key \"%s\"", path, key);
				return cl_error_set(err, -EINVAL, "duplicate key \"%s\"", key);
			}
	}

	i = 0;
	for (c = item->child; c; c = c->next, i++) {
		if (!cJSON_IsObject(c) && !cJSON_IsArray(c))
			continue;
		if (cJSON_IsObject(item)) {
			char key[PRINTABLE_MAX + 8];

			cl_json_printable(c->string, strlen(c->string), key, sizeof(key));
			snprintf(path + plen, size - plen, "%s%s", plen > 0 ? "." : "", key);
		} else {
			snprintf(path + plen, size - plen, "[%zu]", i);
		}
		r = check_duplicates(c, path, size, err);
		path[plen] = '\0';
		if (r < 0)
			return r;
	}
	return 0;
}

int cl_json_parse_strict(const char *json, size_t len, unsigned max_depth, size_t max_values,
                         struct cl_error *err, cJSON **ret_root)
{
	_cleanup_free_ struct scanner *s = NULL;
	_cleanup_cjson_ cJSON *root = NULL;
	const char *end = NULL;
	char path[256] = "";
	int r;

	if (max_depth < 1 || max_depth > CL_JSON_DEPTH_CEILING)
		return cl_error_set(err, -EINVAL, "invalid nesting limit %u", max_depth);

	/* The scanner is ~2 KiB: keep it off the stack of event handlers. */
	s = malloc(sizeof(*s));
	if (!s)
		return cl_error_set(err, -ENOMEM, "out of memory");
	*s = (struct scanner){.p = json,
	                      .len = len,
	                      .max_depth = max_depth,
	                      .max_values = max_values,
	                      .err = err};
	r = scan_document(s);
	if (r < 0)
		return r;

	root = cJSON_ParseWithLengthOpts(json, len, &end, false);
	if (!root)
		/* The scan accepted it, so this is memory or a cJSON refusal (a lone surrogate). */
		return cl_error_set(err, -EINVAL, "invalid JSON at byte %zu",
		                    end && end >= json ? (size_t)(end - json) : 0);

	r = check_duplicates(root, path, sizeof(path), err);
	if (r < 0)
		return r;
	*ret_root = TAKE_PTR(root);
	return 0;
}
