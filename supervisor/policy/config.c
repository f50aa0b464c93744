/* One config file parsed by Cloister's schema (config.h): the schema walk — a bounded YAML
 * tree (yaml_doc.h) walked by tables of keys, each value checked where it stands
 * (file:line:column), unknown keys refused with the nearest known one, --lenient where it may
 * apply — and the handlers of every section (exec, fs, proxy, hostexec, the decisions files'
 * forms…). Merging the files into the effective config is config_load.c.
 *
 * Over 900 lines on purpose: the sections' handlers and the walk's helpers (expect_*,
 * set_scalar, compile_regex, lenient_skip) are one schema; split across files, a new key would
 * be added in one file against helpers in another and the walk's rules would no longer be
 * read in one place. */
#include "supervisor/policy/config.h"

#include <errno.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/policy/config_internal.h"
#include "supervisor/policy/config_regex.h"
#include "supervisor/policy/fs_policy.h"
#include "supervisor/policy/path_glob.h"
#include "supervisor/policy/yaml_doc.h"

/* ---- small helpers ----------------------------------------------------------------------- */

void exec_list_clear(struct config_exec_list *list)
{
	for (size_t i = 0; i < list->n; i++) {
		free(list->items[i].path_glob);
		free(list->items[i].argv0);
		free(list->items[i].sha256);
		config_regex_done(&list->items[i].command);
	}
	free(list->items);
	list->items = NULL;
	list->n = 0;
}

void config_domain_list_clear(struct config_domain_list *list)
{
	free(list->items);
	list->items = NULL;
	list->n = 0;
}

void pattern_list_clear(struct config_pattern_list *list)
{
	for (size_t i = 0; i < list->n; i++)
		config_regex_done(&list->items[i].regex);
	free(list->items);
	list->items = NULL;
	list->n = 0;
}

static void fs_list_clear(struct config_fs_list *list)
{
	for (size_t i = 0; i < list->n; i++)
		free(list->items[i].pattern);
	free(list->items);
	list->items = NULL;
	list->n = 0;
}

void scalar_clear(struct config_scalar *s)
{
	free(s->text);
	s->text = NULL;
}

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void config_free(struct config *c)
{
	if (!c)
		return;
	scalar_clear(&c->exec.security_at);
	scalar_clear(&c->exec.ask_at);
	scalar_clear(&c->exec.ask_fallback_at);
	scalar_clear(&c->exec.defaults_at);
	scalar_clear(&c->proxy.defaults_at);
	exec_list_clear(&c->exec.allow);
	exec_list_clear(&c->exec.deny);
	scalar_clear(&c->proxy.listen);
	config_domain_list_clear(&c->proxy.allow);
	config_domain_list_clear(&c->proxy.deny);
	scalar_clear(&c->proxy.unlisted_at);
	scalar_clear(&c->proxy.approval_timeout_at);
	scalar_clear(&c->proxy.rate_limit_at);
	scalar_clear(&c->proxy.max_request_bytes_at);
	scalar_clear(&c->request.listen);
	scalar_clear(&c->request.timeout_at);
	scalar_clear(&c->limits.pids_max_at);
	scalar_clear(&c->hostexec.listen);
	pattern_list_clear(&c->hostexec.auto_approve);
	pattern_list_clear(&c->hostexec.manual_approve);
	fs_list_clear(&c->fs.write);
	fs_list_clear(&c->fs.hide);
	fs_list_clear(&c->fs.protect);
	fs_list_clear(&c->fs.allow);
	scalar_clear(&c->fs.tmp_at);
	scalar_clear(&c->fs.ask_at);
	strv_free(c->warnings, c->n_warnings);
	strv_free(c->files, c->n_files);
	free(c);
}

/* Grow ITEMS (n elements of SIZE bytes) so that one more fits; arrays grow in steps of 16. */
static int grow(void **items, size_t n, size_t size)
{
	void *p;

	if (n >= CONFIG_MAX_RULES)
		return -E2BIG;
	if (n % 16 != 0)
		return 0;
	p = reallocarray(*items, n + 16, size);
	if (!p)
		return -ENOMEM;
	*items = p;
	return 0;
}

int strv_push(char ***v, size_t *n, char *s)
{
	int r = grow((void **)v, *n, sizeof(**v));

	if (r < 0)
		return r;
	(*v)[(*n)++] = s;
	return 0;
}

int config_add_warning(struct config *config, const char *text)
{
	char *copy;
	int r;

	if (config->n_warnings >= CONFIG_MAX_WARNINGS)
		return 0;
	copy = strdup(text);
	if (!copy)
		return -ENOMEM;
	r = strv_push(&config->warnings, &config->n_warnings, copy);
	if (r < 0)
		free(copy);
	return r;
}

int config_allow_exec_tree(struct config *config, const char *path, const char *what)
{
	struct config_exec_list *list = &config->exec.allow;
	struct config_exec_rule rule = {
	        .tree = true,
	        .list = what,
	        .origin = {.file = "run's command line", .layer = CONFIG_LAYER_AGENT}};
	size_t len = strlen(path);
	int r;

	/* A trailing '/', "//", "/./" or "/../" would make the prefix test see another tree. */
	if (path[0] != '/' || len < 2 || path[len - 1] == '/' || strstr(path, "//") ||
	    strstr(path, "/./") || strstr(path, "/../") ||
	    (len >= 2 && strcmp(path + len - 2, "/.") == 0) ||
	    (len >= 3 && strcmp(path + len - 3, "/..") == 0))
		return -EINVAL;
	r = grow((void **)&list->items, list->n, sizeof(*list->items));
	if (r < 0)
		return r;
	rule.path_glob = strdup(path);
	if (!rule.path_glob)
		return -ENOMEM;
	/* First: an agent's file must not ask because exec.ask is always for a rule further on;
	 * and the index counts these rules apart from the files' own. */
	memmove(list->items + 1, list->items, list->n * sizeof(*list->items));
	list->items[0] = rule;
	list->n++;
	for (size_t i = 0; i < list->n && list->items[i].tree; i++)
		list->items[i].index = (unsigned)i;
	return 0;
}

int config_domain_list_add(struct config_domain_list *list, const struct config_domain_rule *rule)
{
	int r = grow((void **)&list->items, list->n, sizeof(*list->items));

	if (r < 0)
		return r;
	list->items[list->n++] = *rule;
	return 0;
}

const char *exec_security_to_string(enum exec_security v)
{
	switch (v) {
	case EXEC_SECURITY_DENY:
		return "deny";
	case EXEC_SECURITY_ALLOWLIST:
		return "allowlist";
	case EXEC_SECURITY_FULL:
		return "full";
	}
	return "?";
}

const char *exec_ask_to_string(enum exec_ask v)
{
	switch (v) {
	case EXEC_ASK_OFF:
		return "off";
	case EXEC_ASK_ON_MISS:
		return "on-miss";
	case EXEC_ASK_ALWAYS:
		return "always";
	}
	return "?";
}

const char *unlisted_behavior_to_string(enum unlisted_behavior v)
{
	return v == UNLISTED_REJECT ? "reject" : "request_approval";
}

const char *fs_tmp_to_string(enum fs_tmp v)
{
	return v == FS_TMP_HOST ? "host" : "private";
}

const char *fs_ask_to_string(enum fs_ask v)
{
	return v == FS_ASK_ON_WRITE ? "on-write" : "off";
}

const char *config_layer_to_string(enum config_layer layer)
{
	switch (layer) {
	case CONFIG_LAYER_BUILTIN:
		return "built-in";
	case CONFIG_LAYER_GLOBAL:
		return "global";
	case CONFIG_LAYER_PROJECT:
		return "project";
	case CONFIG_LAYER_GLOBAL_DECISIONS:
		return "global decisions";
	case CONFIG_LAYER_PROJECT_DECISIONS:
		return "project decisions";
	case CONFIG_LAYER_SESSION:
		return "session";
	case CONFIG_LAYER_BASE:
		return "always allowed";
	case CONFIG_LAYER_AGENT:
		return "the agent's own";
	}
	return "?";
}

/* ---- values ------------------------------------------------------------------------------ */

int config_project_name_check(const char *name, struct cl_error *err)
{
	size_t len = strlen(name);

	if (len == 0)
		return cl_error_set(err, -EINVAL, "project name is empty");
	if (len > 128)
		return cl_error_set(err, -EINVAL, "project name is longer than 128 characters");
	if (name[0] == '.')
		return cl_error_set(err, -EINVAL, "project name \"%s\" starts with '.'", name);
	if (strstr(name, ".."))
		return cl_error_set(err, -EINVAL, "project name \"%s\" contains \"..\"", name);
	for (const char *p = name; *p; p++) {
		char c = *p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr("._+@-", c)))
			return cl_error_set(err, -EINVAL,
			                    "project name may only contain letters, digits and "
			                    "._+@- (got '%c')",
			                    (c > 0x20 && c < 0x7f) ? c : '?');
	}
	return 0;
}

int config_parse_duration(const char *text, uint64_t *ret_ms)
{
	/* Go's time.ParseDuration units; the value is kept in nanoseconds while parsing. */
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = {
	        {"ns", 1ULL},           {"us", 1000ULL},
	        {"\xc2\xb5s", 1000ULL}, /* µs */
	        {"ms", 1000000ULL},     {"s", 1000000000ULL},
	        {"m", 60000000000ULL},  {"h", 3600000000000ULL},
	};
	const uint64_t max_ns = 100ULL * 24 * 3600000000000ULL;
	const char *p = text;
	uint64_t total = 0;

	if (*p == '+')
		p++;
	if (strcmp(p, "0") == 0) {
		*ret_ms = 0;
		return 0;
	}
	if (!*p)
		return -EINVAL;
	while (*p) {
		uint64_t whole = 0, frac = 0, scale = 1, ns = 0;
		bool digits = false;
		size_t best = 0;

		for (; *p >= '0' && *p <= '9'; p++, digits = true) {
			whole = whole * 10 + (uint64_t)(*p - '0');
			if (whole > max_ns)
				return -EINVAL;
		}
		if (*p == '.') {
			p++;
			for (; *p >= '0' && *p <= '9'; p++, digits = true)
				if (scale < 1000000000000ULL) {
					frac = frac * 10 + (uint64_t)(*p - '0');
					scale *= 10;
				}
		}
		if (!digits)
			return -EINVAL;
		/* Longest unit that matches ("ms" before "m"). */
		for (size_t i = 0; i < ELEMENTSOF(units); i++) {
			size_t len = strlen(units[i].unit);
			if (len > best && strncmp(p, units[i].unit, len) == 0) {
				best = len;
				ns = units[i].ns;
			}
		}
		if (best == 0)
			return -EINVAL;
		p += best;
		if (whole > max_ns / ns)
			return -EINVAL;
		total += whole * ns + (uint64_t)((double)frac * (double)ns / (double)scale);
		if (total > max_ns)
			return -EINVAL;
	}
	*ret_ms = total / 1000000ULL;
	return 0;
}

static int parse_nonnegative(const char *text, int64_t *ret)
{
	int64_t v = 0;

	if (!*text)
		return -EINVAL;
	for (const char *p = text; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		if (v > (INT64_MAX - 9) / 10)
			return -ERANGE;
		v = v * 10 + (*p - '0');
	}
	*ret = v;
	return 0;
}

/* "host:port" or ":port", port 1..65535, as Cloister validates listen addresses. */
static bool listen_address_valid(const char *text)
{
	const char *colon = strrchr(text, ':');
	int64_t port;

	if (!colon || parse_nonnegative(colon + 1, &port) < 0)
		return false;
	return port >= 1 && port <= 65535;
}

/* ---- the schema walk --------------------------------------------------------------------- */

struct parse_ctx {
	const char *name; /* owned by cfg->files */
	enum config_layer layer;
	enum config_file_kind kind;
	bool lenient;
	const char *home; /* config_load_options.home */
	struct config *cfg;
	struct cl_error *err;
};

static struct config_origin origin_of(const struct parse_ctx *ctx, const struct ydoc_node *node)
{
	return (struct config_origin){
	        .file = ctx->name,
	        .line = node->line,
	        .column = node->column,
	        .layer = ctx->layer,
	};
}

__attribute__((format(printf, 4, 5))) static int fail(const struct parse_ctx *ctx,
                                                      const struct ydoc_node *node,
                                                      const char *path, const char *fmt, ...)
{
	char what[CL_ERROR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return cl_error_set(ctx->err, -EINVAL, "%s:%u:%u: %s: %s", ctx->name, node->line,
	                    node->column, path, what);
}

__attribute__((format(printf, 4, 5))) static int warn(const struct parse_ctx *ctx,
                                                      const struct ydoc_node *node,
                                                      const char *path, const char *fmt, ...)
{
	struct config *cfg = ctx->cfg;
	char what[CL_ERROR_MAX];
	char *msg;
	va_list ap;
	int r;

	if (cfg->n_warnings > CONFIG_MAX_WARNINGS)
		return 0;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (cfg->n_warnings == CONFIG_MAX_WARNINGS)
		r = asprintf(&msg, "%s: too many warnings; the rest are not shown", ctx->name);
	else
		r = asprintf(&msg, "%s:%u:%u: %s: %s", ctx->name, node->line, node->column, path,
		             what);
	if (r < 0)
		return cl_error_set(ctx->err, -ENOMEM, "%s: out of memory", ctx->name);
	r = strv_push(&cfg->warnings, &cfg->n_warnings, msg);
	if (r < 0) {
		free(msg);
		return cl_error_set(ctx->err, r, "%s: out of memory", ctx->name);
	}
	return 0;
}

static int oom(const struct parse_ctx *ctx)
{
	return cl_error_set(ctx->err, -ENOMEM, "%s: out of memory", ctx->name);
}

static int too_many(const struct parse_ctx *ctx, const struct ydoc_node *node, const char *path)
{
	return fail(ctx, node, path, "too many entries (the limit is %d)", CONFIG_MAX_RULES);
}

/* 1: a mapping, 0: null (an empty section), <0: error. */
static int expect_mapping(const struct parse_ctx *ctx, const struct ydoc_node *node,
                          const char *path)
{
	if (ydoc_is_null(node))
		return 0;
	if (node->kind != YDOC_MAPPING)
		return fail(ctx, node, path, "expected a mapping, got %s", ydoc_kind_name(node));
	return 1;
}

static int expect_sequence(const struct parse_ctx *ctx, const struct ydoc_node *node,
                           const char *path)
{
	if (ydoc_is_null(node))
		return 0;
	if (node->kind != YDOC_SEQUENCE)
		return fail(ctx, node, path, "expected a list, got %s", ydoc_kind_name(node));
	return 1;
}

/* 1: a string in *ret, 0: null (unset), <0: error. */
static int expect_string(const struct parse_ctx *ctx, const struct ydoc_node *node,
                         const char *path, const char **ret)
{
	if (ydoc_is_null(node))
		return 0;
	if (node->kind != YDOC_SCALAR)
		return fail(ctx, node, path, "expected a string, got %s", ydoc_kind_name(node));
	*ret = node->text;
	return 1;
}

static int set_scalar(const struct parse_ctx *ctx, const struct ydoc_node *node,
                      struct config_scalar *dst)
{
	char *text = strdup(node->text);

	if (!text)
		return oom(ctx);
	free(dst->text);
	dst->text = text;
	dst->origin = origin_of(ctx, node);
	return 0;
}

/* Key paths in messages ("proxy.allow[2].domain") are bounded; truncation only shortens a
 * message. vsnprintf keeps the compiler from warning about that on purpose. */
__attribute__((format(printf, 3, 4))) static void pathf(char *buf, size_t size, const char *fmt,
                                                        ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
}

static void join_path(char *buf, size_t size, const char *parent, const char *key)
{
	if (parent && *parent)
		pathf(buf, size, "%s.%.100s", parent, key);
	else
		pathf(buf, size, "%.100s", key);
}

typedef int (*key_handler)(struct parse_ctx *ctx, const struct ydoc_node *value, const char *path);

struct key_table {
	const char *key;
	key_handler handler; /* NULL: accepted and ignored (Cloister settings not used here) */
};

/* "one of a, b, c" for a message naming the keys of TABLE. */
static void describe_keys(const struct key_table *table, size_t n_table, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t k = 0; k < n_table && len < size; k++) {
		snprintf(buf + len, size - len, "%s%s", k ? ", " : "one of ", table[k].key);
		len = strlen(buf);
	}
}

/* Edit distance between A and B (insertions, deletions, substitutions and swaps of two
 * neighbours each count one), or LIMIT + 1 once it is known to exceed LIMIT. */
static size_t edit_distance(const char *a, const char *b, size_t limit)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t d[3][40], *prev2 = d[0], *prev = d[1], *cur = d[2];

	if (la >= 40 || lb >= 40) /* longer than every key we compare with, by more than LIMIT */
		return strcmp(a, b) == 0 ? 0 : limit + 1;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t row_min;

		cur[0] = row_min = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t v = prev[j - 1] + (a[i - 1] != b[j - 1]);

			if (prev[j] + 1 < v)
				v = prev[j] + 1;
			if (cur[j - 1] + 1 < v)
				v = cur[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    prev2[j - 2] + 1 < v)
				v = prev2[j - 2] + 1;
			cur[j] = v;
			if (v < row_min)
				row_min = v;
		}
		if (row_min > limit)
			return limit + 1;
		{
			size_t *t = prev2;
			prev2 = prev;
			prev = cur;
			cur = t;
		}
	}
	return prev[lb] > limit ? limit + 1 : prev[lb];
}

/* Could KEY be a misspelt deny list (deny, denied_domains, denied_patterns)? */
static bool looks_like_deny(const char *key)
{
	static const char *const names[] = {"deny", "denied_domains", "denied_patterns"};
	char lower[40];
	size_t n = strlen(key);

	if (n >= sizeof(lower))
		n = sizeof(lower) - 1;
	for (size_t i = 0; i < n; i++)
		lower[i] = (char)((key[i] >= 'A' && key[i] <= 'Z') ? key[i] + 32 : key[i]);
	lower[n] = '\0';
	if (strstr(lower, "deny") || strstr(lower, "deni"))
		return true;
	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (edit_distance(lower, names[i], 2) <= 2)
			return true;
	return false;
}

/* Does NODE (the value of an unknown key) hold, at any depth, a key that may be a deny list?
 * Ignoring it would drop those denials. */
static bool holds_deny(const struct ydoc_node *node)
{
	if (!node || node->kind == YDOC_SCALAR)
		return false;
	for (size_t i = 0; i < node->n; i++) {
		const struct ydoc_node *item = node->items[i];

		if (node->kind == YDOC_MAPPING && i % 2 == 0) {
			if (looks_like_deny(item->text))
				return true;
			continue;
		}
		if (holds_deny(item))
			return true;
	}
	return false;
}

/* An unknown KEY (holding VALUE) at PATH: an error, as in Cloister, naming what was expected
 * (EXPECTED, may be NULL). With --lenient it is a warning and the key is ignored, except
 * where ignoring it could drop denials (a key that may be a misspelt deny list, or one whose
 * value holds such a key) or in this project's own exec section (STRICT), where a misspelt
 * key would drop or widen a rule and no Cloister file has keys to skip. */
static int unknown_key(struct parse_ctx *ctx, const struct ydoc_node *key,
                       const struct ydoc_node *value, const char *path, const char *expected,
                       bool strict)
{
	bool deny = looks_like_deny(key->text) || holds_deny(value);

	if (ctx->lenient && !strict && !deny)
		return warn(ctx, key, path, "unknown key (ignored: --lenient)");
	if (ctx->lenient && deny && !strict)
		return fail(ctx, key, path,
		            "unknown key; expected %s (not ignored even with --lenient: it may "
		            "hold denials)",
		            expected ? expected : "none here");
	return fail(ctx, key, path, "unknown key; expected %s", expected ? expected : "none here");
}

/* Walk the mapping NODE at PATH; every key goes to its handler; an unknown key goes to
 * unknown_key(). */
static int walk_mapping(struct parse_ctx *ctx, const struct ydoc_node *node, const char *path,
                        const struct key_table *table, size_t n_table, bool strict)
{
	int r = expect_mapping(ctx, node, path);

	if (r <= 0)
		return r;
	for (size_t i = 0; i < node->n; i += 2) {
		const struct ydoc_node *key = node->items[i], *value = node->items[i + 1];
		char sub[256];
		bool known = false;

		join_path(sub, sizeof(sub), path, key->text);
		for (size_t k = 0; k < n_table; k++) {
			if (strcmp(key->text, table[k].key) != 0)
				continue;
			known = true;
			if (table[k].handler) {
				r = table[k].handler(ctx, value, sub);
				if (r < 0)
					return r;
			}
			break;
		}
		if (!known) {
			char expected[256];

			describe_keys(table, n_table, expected, sizeof(expected));
			r = unknown_key(ctx, key, value, sub, expected, strict);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int compile_regex(const struct parse_ctx *ctx, const struct ydoc_node *node,
                         const char *path, struct config_regex *ret)
{
	char msg[256];
	int r;

	if (!*node->text)
		return fail(ctx, node, path, "expected a regular expression, got an empty string");
	if (strlen(node->text) > CONFIG_MAX_PATTERN)
		return fail(ctx, node, path, "regular expression longer than %d bytes",
		            CONFIG_MAX_PATTERN);
	r = config_regex_compile(node->text, ret, msg, sizeof(msg));
	if (r == -ENOMEM)
		return oom(ctx);
	if (r < 0)
		return fail(ctx, node, path, "invalid regular expression \"%.200s\": %s",
		            node->text, msg);
	return 0;
}

/* In lenient mode an invalid entry of an allow list warns (with the message it would have
 * failed with) and is skipped; returns 0 then, or R unchanged. An invalid DENY entry still
 * fails: skipping it would let through what it was written to stop. */
static int lenient_skip(const struct parse_ctx *ctx, int r, bool deny)
{
	struct config *cfg = ctx->cfg;
	char *msg;

	if (r != -EINVAL || !ctx->lenient || deny)
		return r;
	if (cfg->n_warnings >= CONFIG_MAX_WARNINGS)
		return 0;
	if (asprintf(&msg, "%s (entry skipped)", ctx->err ? ctx->err->msg : "invalid entry") < 0)
		return oom(ctx);
	r = strv_push(&cfg->warnings, &cfg->n_warnings, msg);
	if (r < 0) {
		free(msg);
		return oom(ctx);
	}
	return 0;
}

/* ---- domain lists ------------------------------------------------------------------------ */

static struct config_domain_list *domain_list_for(struct parse_ctx *ctx, bool deny)
{
	return deny ? &ctx->cfg->proxy.deny : &ctx->cfg->proxy.allow;
}

static int add_domain(struct parse_ctx *ctx, const struct ydoc_node *text_node, const char *path,
                      const char *list_name, unsigned index, bool wildcard, bool deny)
{
	struct config_domain_rule rule = {.list = list_name, .index = index};
	struct cl_error derr = {""};
	int r;

	if (strlen(text_node->text) > CONFIG_MAX_PATTERN)
		return lenient_skip(ctx,
		                    fail(ctx, text_node, path, "entry longer than %d bytes",
		                         CONFIG_MAX_PATTERN),
		                    deny);
	r = domain_spec_parse(text_node->text, wildcard, &rule.spec, &derr);
	if (r < 0)
		return lenient_skip(
		        ctx,
		        fail(ctx, text_node, path, "expected a %s, got %s",
		             wildcard ? "domain pattern like \"*.example.com\"" : "domain name",
		             derr.msg),
		        deny);
	rule.origin = origin_of(ctx, text_node);
	r = config_domain_list_add(domain_list_for(ctx, deny), &rule);
	if (r == -E2BIG)
		return too_many(ctx, text_node, path);
	if (r < 0)
		return oom(ctx);
	return 0;
}

static bool is_empty_value(const struct ydoc_node *v)
{
	return ydoc_is_null(v) || (v->kind == YDOC_SCALAR && v->text[0] == '\0');
}

/* One entry's value V (a `domain:` or `pattern:` value, or an item of a flat list) at PATH.
 * As Cloister does, an empty one is skipped with a warning, and so is a pattern that does not
 * start with "*." in an allow list; in a deny list such a pattern is kept as the exact name it
 * spells, since dropping it would let through what it was written to stop. */
static int domain_value(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path,
                        const char *list_name, unsigned index, bool pattern, bool deny)
{
	if (v->kind != YDOC_SCALAR)
		return fail(ctx, v, path, "expected a string, got %s", ydoc_kind_name(v));
	if (is_empty_value(v))
		return warn(ctx, v, path, "empty entry skipped, as Cloister does");
	if (pattern && strncmp(v->text, "*.", 2) != 0) {
		if (!deny)
			return warn(ctx, v, path,
			            "\"%.200s\" is not a pattern (a pattern starts with \"*.\"): "
			            "entry skipped, as Cloister does; write `domain:` for one name",
			            v->text);
		if (strchr(v->text, '*') == NULL) {
			int r = warn(ctx, v, path,
			             "\"%.200s\" is not a pattern (a pattern starts with \"*.\"): "
			             "kept as the exact domain it names, since a deny entry is "
			             "never dropped",
			             v->text);
			if (r < 0)
				return r;
			pattern = false;
		}
	}
	return add_domain(ctx, v, path, list_name, index, pattern, deny);
}

/* `- domain: x` / `- pattern: "*.x"` entries (proxy.allow, proxy.deny). */
static int domain_entries(struct parse_ctx *ctx, const struct ydoc_node *node, const char *path,
                          bool deny)
{
	/* The rule keeps a pointer to its list's name; these live as long as the program. */
	const char *list_name = deny ? "proxy.deny" : "proxy.allow";
	int r = expect_sequence(ctx, node, path);

	if (r <= 0)
		return r;
	for (size_t i = 0; i < node->n; i++) {
		const struct ydoc_node *item = node->items[i];
		const struct ydoc_node *domain = NULL, *pattern = NULL;
		char ipath[300];

		pathf(ipath, sizeof(ipath), "%s[%zu]", path, i);
		if (item->kind != YDOC_MAPPING) {
			r = fail(ctx, item, ipath,
			         "expected a mapping with \"domain\" or \"pattern\", got %s",
			         ydoc_kind_name(item));
			return r;
		}
		for (size_t k = 0; k < item->n; k += 2) {
			const struct ydoc_node *key = item->items[k];
			char kpath[320];

			join_path(kpath, sizeof(kpath), ipath, key->text);
			if (strcmp(key->text, "domain") == 0)
				domain = item->items[k + 1];
			else if (strcmp(key->text, "pattern") == 0)
				pattern = item->items[k + 1];
			else if ((r = unknown_key(ctx, key, item->items[k + 1], kpath,
			                          "\"domain\" or \"pattern\"", false)) < 0)
				return r;
		}
		if (!domain && !pattern)
			return fail(ctx, item, ipath,
			            "expected a mapping with \"domain\" or \"pattern\"");
		/* Cloister reads an empty value as an absent one. */
		if (domain && is_empty_value(domain) && pattern)
			domain = NULL;
		if (pattern && is_empty_value(pattern) && domain)
			pattern = NULL;
		if (domain && pattern)
			return fail(ctx, item, ipath,
			            "expected either \"domain\" or \"pattern\", not both");
		{
			const struct ydoc_node *v = domain ? domain : pattern;
			char kpath[320];

			pathf(kpath, sizeof(kpath), "%s.%s", ipath, domain ? "domain" : "pattern");
			r = domain_value(ctx, v, kpath, list_name, (unsigned)i, pattern != NULL,
			                 deny);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int on_proxy_allow(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	return domain_entries(ctx, v, path, false);
}

static int on_proxy_deny(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	return domain_entries(ctx, v, path, true);
}

/* The decisions files' older flat form: lists of strings. */
static int flat_domains(struct parse_ctx *ctx, const struct ydoc_node *node, const char *path,
                        const char *list_name, bool wildcard, bool deny)
{
	int r = expect_sequence(ctx, node, path);

	if (r <= 0)
		return r;
	for (size_t i = 0; i < node->n; i++) {
		const struct ydoc_node *item = node->items[i];
		char ipath[300];

		pathf(ipath, sizeof(ipath), "%s[%zu]", path, i);
		r = domain_value(ctx, item, ipath, list_name, (unsigned)i, wildcard, deny);
		if (r < 0)
			return r;
	}
	return 0;
}

static int on_domains(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	return flat_domains(ctx, v, path, "domains", false, false);
}

static int on_patterns(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	return flat_domains(ctx, v, path, "patterns", true, false);
}

static int on_denied_domains(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	return flat_domains(ctx, v, path, "denied_domains", false, true);
}

static int on_denied_patterns(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	return flat_domains(ctx, v, path, "denied_patterns", true, true);
}

/* ---- hostexec patterns ------------------------------------------------------------------- */

static int pattern_entries(struct parse_ctx *ctx, const struct ydoc_node *node, const char *path,
                           struct config_pattern_list *list, const char *list_name)
{
	int r = expect_sequence(ctx, node, path);

	if (r <= 0)
		return r;
	for (size_t i = 0; i < node->n; i++) {
		const struct ydoc_node *item = node->items[i], *pattern = NULL;
		struct config_pattern_rule rule = {.list = list_name, .index = (unsigned)i};
		char ipath[300], ppath[320];

		pathf(ipath, sizeof(ipath), "%s[%zu]", path, i);
		if (item->kind != YDOC_MAPPING)
			return fail(ctx, item, ipath, "expected a mapping with \"pattern\", got %s",
			            ydoc_kind_name(item));
		for (size_t k = 0; k < item->n; k += 2) {
			const struct ydoc_node *key = item->items[k];
			char kpath[320];

			join_path(kpath, sizeof(kpath), ipath, key->text);
			if (strcmp(key->text, "pattern") == 0)
				pattern = item->items[k + 1];
			else if ((r = unknown_key(ctx, key, item->items[k + 1], kpath,
			                          "\"pattern\"", false)) < 0)
				return r;
		}
		if (!pattern)
			return fail(ctx, item, ipath, "expected a mapping with \"pattern\"");
		pathf(ppath, sizeof(ppath), "%s.pattern", ipath);
		if (pattern->kind != YDOC_SCALAR || ydoc_is_null(pattern))
			return fail(ctx, pattern, ppath, "expected a regular expression, got %s",
			            ydoc_kind_name(pattern));
		r = compile_regex(ctx, pattern, ppath, &rule.regex);
		if (r < 0) {
			r = lenient_skip(ctx, r, false);
			if (r < 0)
				return r;
			continue;
		}
		rule.origin = origin_of(ctx, pattern);
		r = grow((void **)&list->items, list->n, sizeof(*list->items));
		if (r < 0) {
			config_regex_done(&rule.regex);
			return r == -E2BIG ? too_many(ctx, item, ipath) : oom(ctx);
		}
		list->items[list->n++] = rule;
	}
	return 0;
}

static int on_auto_approve(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	return pattern_entries(ctx, v, path, &ctx->cfg->hostexec.auto_approve,
	                       "hostexec.auto_approve");
}

static int on_manual_approve(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	return pattern_entries(ctx, v, path, &ctx->cfg->hostexec.manual_approve,
	                       "hostexec.manual_approve");
}

/* ---- exec rules -------------------------------------------------------------------------- */

/* HOME with fnmatch's special characters escaped, then REST ("/…", a glob as written). */
static char *home_glob(const char *home, const char *rest)
{
	size_t len = strlen(home), n = 0;
	char *out = malloc(2 * len + strlen(rest) + 1);

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		if (strchr("*?[]\\", home[i]))
			out[n++] = '\\';
		out[n++] = home[i];
	}
	strcpy(out + n, rest);
	return out;
}

/* An exec rule's pins (config.h): ARGV0 a file name, SHA256 a content digest (allow rules
 * only: a deny holds whatever the file holds). Either may be NULL. */
static int exec_pins(struct parse_ctx *ctx, const char *ipath, const struct ydoc_node *argv0,
                     const struct ydoc_node *sha256, bool deny)
{
	char kpath[320];

	if (argv0) {
		pathf(kpath, sizeof(kpath), "%s.argv0", ipath);
		if (argv0->kind != YDOC_SCALAR || ydoc_is_null(argv0) || !argv0->text[0] ||
		    strchr(argv0->text, '/') || strlen(argv0->text) > 255)
			return fail(ctx, argv0, kpath,
			            "expected a program's file name (no '/', at most 255 bytes)");
		for (const char *p = argv0->text; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return fail(ctx, argv0, kpath,
				            "a control character in a file name");
	}
	if (sha256) {
		pathf(kpath, sizeof(kpath), "%s.sha256", ipath);
		if (deny)
			return fail(ctx, sha256, kpath,
			            "a deny rule holds whatever the file holds; sha256 pins allow "
			            "rules only");
		if (sha256->kind != YDOC_SCALAR || ydoc_is_null(sha256) ||
		    strlen(sha256->text) != CONFIG_SHA256_HEX ||
		    strspn(sha256->text, "0123456789abcdef") != CONFIG_SHA256_HEX)
			return fail(ctx, sha256, kpath,
			            "expected a SHA-256 digest: 64 lowercase hex digits");
	}
	return 0;
}

static int exec_entries(struct parse_ctx *ctx, const struct ydoc_node *node, const char *path,
                        struct config_exec_list *list, const char *list_name, bool deny)
{
	int r = expect_sequence(ctx, node, path);

	if (r <= 0)
		return r;
	for (size_t i = 0; i < node->n; i++) {
		const struct ydoc_node *item = node->items[i], *pathv = NULL, *command = NULL,
		                       *argv0 = NULL, *sha256 = NULL;
		struct config_exec_rule rule = {.list = list_name, .index = (unsigned)i};
		char ipath[300], kpath[320];

		pathf(ipath, sizeof(ipath), "%s[%zu]", path, i);
		if (item->kind != YDOC_MAPPING)
			return fail(ctx, item, ipath,
			            "expected a mapping with \"path\" and/or \"command\", got %s",
			            ydoc_kind_name(item));
		for (size_t k = 0; k < item->n; k += 2) {
			const struct ydoc_node *key = item->items[k];

			join_path(kpath, sizeof(kpath), ipath, key->text);
			if (strcmp(key->text, "path") == 0)
				pathv = item->items[k + 1];
			else if (strcmp(key->text, "command") == 0)
				command = item->items[k + 1];
			else if (strcmp(key->text, "argv0") == 0)
				argv0 = item->items[k + 1];
			else if (strcmp(key->text, "sha256") == 0)
				sha256 = item->items[k + 1];
			else /* strict, as the exec section: `comand:` would widen an allow rule */
				return fail(ctx, key, kpath,
				            "unknown key; expected \"path\" and/or \"command\"");
		}
		if (!pathv && !command)
			return fail(ctx, item, ipath,
			            "expected a mapping with \"path\" and/or \"command\"");
		r = exec_pins(ctx, ipath, argv0, sha256, deny);
		if (r < 0)
			return r;
		/* The command's first word is only the file's name, and the agent can write a
		 * file of any name: such a rule allows its own "git" as readily as /usr/bin/git. */
		if (!pathv && !deny) {
			r = warn(ctx, item, ipath,
			         "an allow rule with a command but no path matches a program of "
			         "that name anywhere, even one the agent wrote; add a path glob");
			if (r < 0)
				return r;
		}
		if (pathv) {
			pathf(kpath, sizeof(kpath), "%s.path", ipath);
			if (pathv->kind != YDOC_SCALAR || ydoc_is_null(pathv))
				return fail(ctx, pathv, kpath, "expected a path glob, got %s",
				            ydoc_kind_name(pathv));
			if (strncmp(pathv->text, "~/", 2) == 0) {
				/* No home: the built-in's rules for tools under it have nothing to
				 * match; a user's rule names a place we cannot find. */
				if (!ctx->home && ctx->layer == CONFIG_LAYER_BUILTIN)
					continue;
				if (!ctx->home) {
					r = fail(ctx, pathv, kpath,
					         "\"~/\" needs a home directory, and HOME is not "
					         "set");
					r = lenient_skip(ctx, r, deny);
					if (r < 0)
						return r;
					continue;
				}
				rule.path_glob = home_glob(ctx->home, pathv->text + 1);
				if (!rule.path_glob)
					return -ENOMEM;
			}
			/* Executables are matched by absolute path; a relative glob never
			 * matches and is surely a mistake. */
			if (!rule.path_glob && pathv->text[0] != '/')
				return fail(
				        ctx, pathv, kpath,
				        "expected an absolute path glob (starting with '/'), got "
				        "\"%.200s\"",
				        pathv->text);
			if (strlen(rule.path_glob ? rule.path_glob : pathv->text) >
			    CONFIG_MAX_PATTERN) {
				free(rule.path_glob);
				rule.path_glob = NULL;
				return fail(ctx, pathv, kpath, "path glob longer than %d bytes",
				            CONFIG_MAX_PATTERN);
			}
			/* "**" is recursive only as a whole component (path_glob.h); elsewhere
			 * it would quietly be one '*', and a deny would miss deeper files. */
			{
				const char *why = NULL;

				if (path_glob_check(pathv->text, &why) < 0) {
					free(rule.path_glob);
					return fail(ctx, pathv, kpath, "%s, got \"%.200s\"", why,
					            pathv->text);
				}
			}
		}
		if (command) {
			pathf(kpath, sizeof(kpath), "%s.command", ipath);
			if (command->kind != YDOC_SCALAR || ydoc_is_null(command))
				return fail(ctx, command, kpath,
				            "expected a regular expression, got %s",
				            ydoc_kind_name(command));
			r = compile_regex(ctx, command, kpath, &rule.command);
			if (r < 0) {
				free(rule.path_glob);
				r = lenient_skip(ctx, r, deny);
				if (r < 0)
					return r;
				continue;
			}
		}
		if (pathv && !rule.path_glob) {
			rule.path_glob = strdup(pathv->text);
			if (!rule.path_glob) {
				config_regex_done(&rule.command);
				return oom(ctx);
			}
		}
		rule.argv0 = argv0 ? strdup(argv0->text) : NULL;
		rule.sha256 = sha256 ? strdup(sha256->text) : NULL;
		if ((argv0 && !rule.argv0) || (sha256 && !rule.sha256)) {
			free(rule.argv0);
			free(rule.sha256);
			free(rule.path_glob);
			config_regex_done(&rule.command);
			return oom(ctx);
		}
		rule.origin = origin_of(ctx, item);
		r = grow((void **)&list->items, list->n, sizeof(*list->items));
		if (r < 0) {
			free(rule.argv0);
			free(rule.sha256);
			free(rule.path_glob);
			config_regex_done(&rule.command);
			return r == -E2BIG ? too_many(ctx, item, ipath) : oom(ctx);
		}
		list->items[list->n++] = rule;
	}
	return 0;
}

static int on_exec_allow(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	ctx->cfg->exec.allow_present = true;
	return exec_entries(ctx, v, path, &ctx->cfg->exec.allow, "exec.allow", false);
}

static int on_exec_deny(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	ctx->cfg->exec.deny_present = true;
	return exec_entries(ctx, v, path, &ctx->cfg->exec.deny, "exec.deny", true);
}

/* ---- scalar settings --------------------------------------------------------------------- */

/* Match a scalar against NAMES (a NULL-terminated list); 1 and *ret set, 0 null, <0 error. */
static int expect_enum(const struct parse_ctx *ctx, const struct ydoc_node *node, const char *path,
                       const char *const *names, int *ret)
{
	char expected[128] = "";
	const char *text = NULL;
	int r = expect_string(ctx, node, path, &text);

	if (r <= 0)
		return r;
	for (int i = 0; names[i]; i++) {
		if (strcmp(text, names[i]) == 0) {
			*ret = i;
			return 1;
		}
		snprintf(expected + strlen(expected), sizeof(expected) - strlen(expected), "%s%s",
		         i ? ", " : "", names[i]);
	}
	return fail(ctx, node, path, "expected one of %s, got \"%.100s\"", expected, text);
}

static const char *const security_names[] = {"deny", "allowlist", "full", NULL};
static const char *const ask_names[] = {"off", "on-miss", "always", NULL};
static const char *const unlisted_names[] = {"reject", "request_approval", NULL};

static int on_exec_security(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	int value, r = expect_enum(ctx, v, path, security_names, &value);

	if (r <= 0)
		return r;
	ctx->cfg->exec.security = (enum exec_security)value;
	return set_scalar(ctx, v, &ctx->cfg->exec.security_at);
}

static int on_exec_ask(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	int value, r = expect_enum(ctx, v, path, ask_names, &value);

	if (r <= 0)
		return r;
	ctx->cfg->exec.ask = (enum exec_ask)value;
	return set_scalar(ctx, v, &ctx->cfg->exec.ask_at);
}

static int on_exec_ask_fallback(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	int value, r = expect_enum(ctx, v, path, security_names, &value);

	if (r <= 0)
		return r;
	ctx->cfg->exec.ask_fallback = (enum exec_security)value;
	return set_scalar(ctx, v, &ctx->cfg->exec.ask_fallback_at);
}

static int on_unlisted(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	int value, r = expect_enum(ctx, v, path, unlisted_names, &value);

	if (r <= 0)
		return r;
	ctx->cfg->proxy.unlisted = (enum unlisted_behavior)value;
	return set_scalar(ctx, v, &ctx->cfg->proxy.unlisted_at);
}

static int duration_setting(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path,
                            uint64_t *value, struct config_scalar *at)
{
	const char *text = NULL;
	int r = expect_string(ctx, v, path, &text);

	if (r <= 0)
		return r;
	if (config_parse_duration(text, value) < 0)
		return fail(ctx, v, path,
		            "expected a duration like \"60s\", \"5m\" or \"1h30m\", got \"%.100s\"",
		            text);
	return set_scalar(ctx, v, at);
}

static int on_approval_timeout(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	return duration_setting(ctx, v, path, &ctx->cfg->proxy.approval_timeout_ms,
	                        &ctx->cfg->proxy.approval_timeout_at);
}

static int on_request_timeout(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	return duration_setting(ctx, v, path, &ctx->cfg->request.timeout_ms,
	                        &ctx->cfg->request.timeout_at);
}

static int integer_setting(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path,
                           int64_t *value, struct config_scalar *at)
{
	const char *text = NULL;
	int r = expect_string(ctx, v, path, &text);

	if (r <= 0)
		return r;
	if (!v->plain || parse_nonnegative(text, value) < 0)
		return fail(ctx, v, path, "expected a non-negative integer, got \"%.100s\"", text);
	return set_scalar(ctx, v, at);
}

int config_parse_pids_max(const char *text, uint64_t *ret)
{
	int64_t v;

	if (strcmp(text, "off") == 0) {
		*ret = 0;
		return 0;
	}
	if (parse_nonnegative(text, &v) < 0 || v < 1 || v > CONFIG_PIDS_MAX_LIMIT)
		return -EINVAL;
	*ret = (uint64_t)v;
	return 0;
}

static int on_limits_pids_max(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	const char *text = NULL;
	int r = expect_string(ctx, v, path, &text);

	if (r <= 0)
		return r;
	if (!v->plain || config_parse_pids_max(text, &ctx->cfg->limits.pids_max) < 0)
		return fail(ctx, v, path,
		            "expected a number of tasks from 1 to %d, or off, got \"%.100s\"",
		            CONFIG_PIDS_MAX_LIMIT, text);
	return set_scalar(ctx, v, &ctx->cfg->limits.pids_max_at);
}

/* This project's own section, strict: a misspelt key would drop a limit. */
static int on_limits(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path);

static int on_rate_limit(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	return integer_setting(ctx, v, path, &ctx->cfg->proxy.rate_limit,
	                       &ctx->cfg->proxy.rate_limit_at);
}

static int on_max_request_bytes(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	return integer_setting(ctx, v, path, &ctx->cfg->proxy.max_request_bytes,
	                       &ctx->cfg->proxy.max_request_bytes_at);
}

static int listen_setting(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path,
                          struct config_scalar *at)
{
	const char *text = NULL;
	int r = expect_string(ctx, v, path, &text);

	if (r <= 0)
		return r;
	if (!listen_address_valid(text))
		return fail(ctx, v, path,
		            "expected host:port or :port (port 1-65535), got \"%.100s\"", text);
	return set_scalar(ctx, v, at);
}

static int on_proxy_listen(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	return listen_setting(ctx, v, path, &ctx->cfg->proxy.listen);
}

static int on_request_listen(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	return listen_setting(ctx, v, path, &ctx->cfg->request.listen);
}

static int on_hostexec_listen(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	return listen_setting(ctx, v, path, &ctx->cfg->hostexec.listen);
}

/* A string value we accept for compatibility but do not use (project remote, root). */
static int on_ignored_string(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	const char *text = NULL;
	int r = expect_string(ctx, v, path, &text);

	return r < 0 ? r : 0;
}

/* A boolean we accept for compatibility but do not use: what Go's YAML decoder takes for a
 * bool field (true/false in three spellings, and YAML 1.1's yes/no/on/off), unquoted. */
static int on_ignored_bool(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	static const char *const words[] = {
	        "true", "True", "TRUE", "false", "False", "FALSE", "yes", "Yes", "YES", "no", "No",
	        "NO",   "on",   "On",   "ON",    "off",   "Off",   "OFF", "y",   "Y",   "n",  "N"};

	if (ydoc_is_null(v))
		return 0;
	if (v->kind == YDOC_SCALAR && v->plain)
		for (size_t i = 0; i < ELEMENTSOF(words); i++)
			if (strcmp(v->text, words[i]) == 0)
				return 0;
	if (v->kind != YDOC_SCALAR)
		return fail(ctx, v, path, "expected true or false, got %s", ydoc_kind_name(v));
	return fail(ctx, v, path, "expected true or false, got \"%.100s\"", v->text);
}

static int on_ignored_string_list(struct parse_ctx *ctx, const struct ydoc_node *v,
                                  const char *path)
{
	int r = expect_sequence(ctx, v, path);

	if (r <= 0)
		return r;
	for (size_t i = 0; i < v->n; i++)
		if (v->items[i]->kind != YDOC_SCALAR) {
			char ipath[300];
			pathf(ipath, sizeof(ipath), "%s[%zu]", path, i);
			return fail(ctx, v->items[i], ipath, "expected a string, got %s",
			            ydoc_kind_name(v->items[i]));
		}
	return 0;
}

/* ---- fs -------------------------------------------------------------------------------------- */

static int fs_entries(struct parse_ctx *ctx, const struct ydoc_node *node, const char *path,
                      struct config_fs_list *list, const char *list_name)
{
	int r = expect_sequence(ctx, node, path);

	if (r <= 0)
		return r;
	for (size_t i = 0; i < node->n; i++) {
		const struct ydoc_node *item = node->items[i];
		struct config_fs_rule rule = {.list = list_name, .index = (unsigned)i};
		char ipath[300], msg[300];

		pathf(ipath, sizeof(ipath), "%s[%zu]", path, i);
		if (item->kind != YDOC_SCALAR || ydoc_is_null(item))
			return fail(ctx, item, ipath, "expected a path, got %s",
			            ydoc_kind_name(item));
		if (fs_pattern_check(item->text, msg, sizeof(msg)) < 0)
			return fail(ctx, item, ipath, "%s", msg);
		rule.pattern = strdup(item->text);
		if (!rule.pattern)
			return oom(ctx);
		rule.origin = origin_of(ctx, item);
		r = grow((void **)&list->items, list->n, sizeof(*list->items));
		if (r < 0) {
			free(rule.pattern);
			return r == -E2BIG ? too_many(ctx, item, ipath) : oom(ctx);
		}
		list->items[list->n++] = rule;
	}
	return 0;
}

static int on_fs_write(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	return fs_entries(ctx, v, path, &ctx->cfg->fs.write, "fs.write");
}

/* A decisions file's fs.allow: literal absolute paths (no variable, no glob). */
static int on_fs_allow(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	size_t first = ctx->cfg->fs.allow.n;
	int r = fs_entries(ctx, v, path, &ctx->cfg->fs.allow, "fs.allow");

	for (size_t i = first; r >= 0 && i < ctx->cfg->fs.allow.n; i++) {
		const char *p = ctx->cfg->fs.allow.items[i].pattern;
		char ipath[300];

		if (p[0] != '/' || fs_pattern_is_glob(p)) {
			pathf(ipath, sizeof(ipath), "%s[%zu]", path, i - first);
			return fail(
			        ctx, v->items[i - first], ipath,
			        "expected an absolute path without glob characters, got \"%.200s\"",
			        p);
		}
	}
	return r;
}

static int on_fs_hide(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	return fs_entries(ctx, v, path, &ctx->cfg->fs.hide, "fs.hide");
}

static int on_fs_protect(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	return fs_entries(ctx, v, path, &ctx->cfg->fs.protect, "fs.protect");
}

static int on_fs_tmp(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	static const char *const names[] = {"private", "host", NULL};
	int value, r = expect_enum(ctx, v, path, names, &value);

	if (r <= 0)
		return r;
	ctx->cfg->fs.tmp = (enum fs_tmp)value;
	return set_scalar(ctx, v, &ctx->cfg->fs.tmp_at);
}

static int on_fs_ask(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	static const char *const names[] = {"off", "on-write", NULL};
	int value, r = expect_enum(ctx, v, path, names, &value);

	if (r <= 0)
		return r;
	ctx->cfg->fs.ask = (enum fs_ask)value;
	return set_scalar(ctx, v, &ctx->cfg->fs.ask_at);
}

/* ---- sections ---------------------------------------------------------------------------- */

/* `defaults: false` in config.yaml's exec or proxy section: its allow and deny lists replace
 * the built-in's instead of extending them. Only there: the project file and the decisions
 * always extend. */
static int defaults_setting(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path,
                            bool *value, struct config_scalar *at)
{
	static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes",
	                                  "YES",  "on",   "On",   "ON"};
	static const char *const no[] = {"false", "False", "FALSE", "no", "No",
	                                 "NO",    "off",   "Off",   "OFF"};

	if (ctx->kind != CONFIG_FILE_GLOBAL)
		return fail(ctx, v, path,
		            "only config.yaml says whether the built-in lists are kept; this file "
		            "always extends them");
	if (ydoc_is_null(v))
		return 0;
	if (v->kind == YDOC_SCALAR && v->plain)
		for (size_t i = 0; i < ELEMENTSOF(yes); i++)
			if (strcmp(v->text, yes[i]) == 0 || strcmp(v->text, no[i]) == 0) {
				*value = strcmp(v->text, yes[i]) == 0;
				return set_scalar(ctx, v, at);
			}
	if (v->kind != YDOC_SCALAR)
		return fail(ctx, v, path, "expected true or false, got %s", ydoc_kind_name(v));
	return fail(ctx, v, path, "expected true or false, got \"%.100s\"", v->text);
}

static int on_exec_defaults(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	return defaults_setting(ctx, v, path, &ctx->cfg->exec.defaults,
	                        &ctx->cfg->exec.defaults_at);
}

static int on_proxy_defaults(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	return defaults_setting(ctx, v, path, &ctx->cfg->proxy.defaults,
	                        &ctx->cfg->proxy.defaults_at);
}

#define WALK(ctx, v, path, table)        walk_mapping(ctx, v, path, table, ELEMENTSOF(table), false)
#define WALK_STRICT(ctx, v, path, table) walk_mapping(ctx, v, path, table, ELEMENTSOF(table), true)

static int on_exec(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	static const struct key_table keys[] = {
	        {"security", on_exec_security},
	        {"ask", on_exec_ask},
	        {"ask_fallback", on_exec_ask_fallback},
	        {"allow", on_exec_allow},
	        {"deny", on_exec_deny},
	        {"defaults", on_exec_defaults},
	};
	ctx->cfg->exec.section_present = true;
	return WALK_STRICT(ctx, v, path, keys);
}

/* This project's own section, strict like exec: a misspelt `hdie:` would drop a protection. */
static int on_fs(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	static const struct key_table keys[] = {
	        {"write", on_fs_write}, {"hide", on_fs_hide}, {"protect", on_fs_protect},
	        {"tmp", on_fs_tmp},     {"ask", on_fs_ask},
	};
	return WALK_STRICT(ctx, v, path, keys);
}

/* A decisions file's fs section: the writes people allowed through the ask, nothing else. */
static int on_decisions_fs(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	static const struct key_table keys[] = {
	        {"allow", on_fs_allow},
	};
	return WALK_STRICT(ctx, v, path, keys);
}

/* A decisions file's exec section: the entries people decided, nothing else. */
static int on_decisions_exec(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	static const struct key_table keys[] = {
	        {"allow", on_exec_allow},
	        {"deny", on_exec_deny},
	};
	return WALK_STRICT(ctx, v, path, keys);
}

static int on_limits(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	static const struct key_table keys[] = {
	        {"pids_max", on_limits_pids_max},
	};
	return WALK_STRICT(ctx, v, path, keys);
}

static int on_global_proxy(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	static const struct key_table keys[] = {
	        {"listen", on_proxy_listen},
	        {"allow", on_proxy_allow},
	        {"deny", on_proxy_deny},
	        {"unlisted_domain_behavior", on_unlisted},
	        {"approval_timeout", on_approval_timeout},
	        {"rate_limit", on_rate_limit},
	        {"max_request_bytes", on_max_request_bytes},
	        {"defaults", on_proxy_defaults},
	};
	return WALK(ctx, v, path, keys);
}

static int on_request(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	static const struct key_table keys[] = {
	        {"listen", on_request_listen},
	        {"timeout", on_request_timeout},
	};
	return WALK(ctx, v, path, keys);
}

static int on_global_hostexec(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	static const struct key_table keys[] = {
	        {"listen", on_hostexec_listen},
	        {"auto_approve", on_auto_approve},
	        {"manual_approve", on_manual_approve},
	};
	return WALK(ctx, v, path, keys);
}

static int on_features(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	static const struct key_table keys[] = {{"allow", on_ignored_string_list}};
	return WALK(ctx, v, path, keys);
}

/* Cloister sections this project does not use yet: their known keys load silently, their
 * values are checked only for shape. */
static int on_devcontainer(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	static const struct key_table keys[] = {
	        {"enabled", on_ignored_bool},
	        {"features", on_features},
	        {"blocked_mounts", on_ignored_string_list},
	};
	return WALK(ctx, v, path, keys);
}

/* The value of an `auth_method`, `token` or `api_key` key of an agent (NULL: none). */
static const struct ydoc_node *agent_value(const struct ydoc_node *agent, const char *key)
{
	for (size_t i = 0; agent->kind == YDOC_MAPPING && i < agent->n; i += 2)
		if (strcmp(agent->items[i]->text, key) == 0)
			return agent->items[i + 1];
	return NULL;
}

static int on_agent(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	/* token and api_key are secrets: never echoed, not even in an error. */
	static const struct key_table keys[] = {
	        {"command", on_ignored_string},        {"config_mount", on_ignored_string},
	        {"env", on_ignored_string_list},       {"auth_method", on_ignored_string},
	        {"token", on_ignored_string},          {"api_key", on_ignored_string},
	        {"skip_permissions", on_ignored_bool},
	};
	static const char *const methods[] = {"token", "api_key"};
	const struct ydoc_node *method;
	int r = WALK(ctx, v, path, keys);

	if (r < 0 || ydoc_is_null(v))
		return r;
	/* Cloister's rules: auth_method is empty, "token" or "api_key", and the credential it
	 * names must be set. */
	method = agent_value(v, "auth_method");
	if (!method || is_empty_value(method))
		return 0;
	for (size_t i = 0; i < ELEMENTSOF(methods); i++) {
		const struct ydoc_node *cred;
		char kpath[300];

		if (strcmp(method->text, methods[i]) != 0)
			continue;
		cred = agent_value(v, methods[i]);
		if (cred && !is_empty_value(cred))
			return 0;
		pathf(kpath, sizeof(kpath), "%s.%s", path, methods[i]);
		return fail(ctx, cred ? cred : method, kpath, "required when auth_method is \"%s\"",
		            methods[i]);
	}
	{
		char kpath[300];

		pathf(kpath, sizeof(kpath), "%s.auth_method", path);
		return fail(ctx, method, kpath, "expected one of token, api_key, got \"%.100s\"",
		            method->text);
	}
}

static int on_agents(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	int r = expect_mapping(ctx, v, path);

	if (r <= 0)
		return r;
	for (size_t i = 0; i < v->n; i += 2) {
		char sub[256];

		join_path(sub, sizeof(sub), path, v->items[i]->text);
		r = on_agent(ctx, v->items[i + 1], sub);
		if (r < 0)
			return r;
	}
	return 0;
}

static int on_defaults(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	static const struct key_table keys[] = {
	        {"image", on_ignored_string},
	        {"shell", on_ignored_string},
	        {"user", on_ignored_string},
	        {"agent", on_ignored_string},
	};
	return WALK(ctx, v, path, keys);
}

static int on_log_level(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	static const char *const levels[] = {"debug", "info", "warn", "error", NULL};
	int value;

	/* Cloister accepts an empty level (its default) and these four, in lower case. */
	if (v->kind == YDOC_SCALAR && v->text[0] == '\0')
		return 0;
	return expect_enum(ctx, v, path, levels, &value) < 0 ? -EINVAL : 0;
}

static int on_log(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	static const struct key_table keys[] = {
	        {"file", on_ignored_string},
	        {"stdout", on_ignored_bool},
	        {"level", on_log_level},
	        {"per_cloister", on_ignored_bool},
	        {"per_cloister_dir", on_ignored_string},
	};
	return WALK(ctx, v, path, keys);
}

static int on_project_proxy(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	static const struct key_table keys[] = {
	        {"allow", on_proxy_allow},
	        {"deny", on_proxy_deny},
	};
	return WALK(ctx, v, path, keys);
}

static int on_project_hostexec(struct parse_ctx *ctx, const struct ydoc_node *v, const char *path)
{
	static const struct key_table keys[] = {
	        {"auto_approve", on_auto_approve},
	        {"manual_approve", on_manual_approve},
	};
	return WALK(ctx, v, path, keys);
}

static int parse_root(struct parse_ctx *ctx, const struct ydoc_node *root)
{
	static const struct key_table global_keys[] = {
	        {"proxy", on_global_proxy},
	        {"request", on_request},
	        {"hostexec", on_global_hostexec},
	        {"approval", on_global_hostexec},
	        {"exec", on_exec},
	        {"fs", on_fs},
	        {"limits", on_limits},
	        {"devcontainer", on_devcontainer},
	        {"agents", on_agents},
	        {"defaults", on_defaults},
	        {"log", on_log},
	};
	static const struct key_table project_keys[] = {
	        {"remote", on_ignored_string},
	        {"root", on_ignored_string},
	        {"refs", on_ignored_string_list},
	        {"proxy", on_project_proxy},
	        {"hostexec", on_project_hostexec},
	        {"commands", on_project_hostexec},
	        {"exec", on_exec},
	        {"fs", on_fs},
	        {"limits", on_limits},
	};
	static const struct key_table decisions_keys[] = {
	        {"proxy", on_project_proxy},
	        {"domains", on_domains},
	        {"patterns", on_patterns},
	        {"denied_domains", on_denied_domains},
	        {"denied_patterns", on_denied_patterns},
	        {"exec", on_decisions_exec},
	        {"fs", on_decisions_fs},
	};

	if (!root)
		return 0;
	if (!ydoc_is_null(root) && root->kind != YDOC_MAPPING)
		return cl_error_set(ctx->err, -EINVAL,
		                    "%s:%u:%u: expected a mapping at the top level, got %s",
		                    ctx->name, root->line, root->column, ydoc_kind_name(root));
	switch (ctx->kind) {
	case CONFIG_FILE_GLOBAL:
		return WALK(ctx, root, "", global_keys);
	case CONFIG_FILE_PROJECT:
		return WALK(ctx, root, "", project_keys);
	case CONFIG_FILE_DECISIONS:
		return WALK(ctx, root, "", decisions_keys);
	}
	return -EINVAL;
}

int config_parse_file(enum config_file_kind kind, enum config_layer layer,
                      const struct config_source *source, const struct config_load_options *options,
                      struct config **ret_config, struct cl_error *err)
{
	_cleanup_(config_freep) struct config *cfg = calloc(1, sizeof(*cfg));
	_cleanup_(ydoc_node_freep) struct ydoc_node *root = NULL;
	struct parse_ctx ctx = {
	        .layer = layer,
	        .kind = kind,
	        .lenient = options && options->lenient,
	        .home = options ? options->home : NULL,
	        .err = err,
	};
	char *name;
	int r;

	if (!cfg)
		return cl_error_set(err, -ENOMEM, "out of memory");
	name = strdup(source->name ? source->name : "?");
	if (!name)
		return cl_error_set(err, -ENOMEM, "out of memory");
	r = strv_push(&cfg->files, &cfg->n_files, name);
	if (r < 0) {
		free(name);
		return cl_error_set(err, -ENOMEM, "out of memory");
	}
	ctx.name = name;
	ctx.cfg = cfg;
	/* Defaults of the enums when nothing sets them: the safest values. */
	cfg->exec.security = EXEC_SECURITY_DENY;
	cfg->exec.ask = EXEC_ASK_ON_MISS;
	cfg->exec.ask_fallback = EXEC_SECURITY_DENY;
	cfg->proxy.unlisted = UNLISTED_REJECT;
	cfg->exec.defaults = true;
	cfg->proxy.defaults = true;

	if (source->present) {
		r = ydoc_parse(name, source->data, source->len, &root, err);
		if (r < 0)
			return r;
		r = parse_root(&ctx, root);
		if (r < 0)
			return r;
	}
	*ret_config = TAKE_PTR(cfg);
	return 0;
}
