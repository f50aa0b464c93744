/* The effective config: the built-in, the global file, the project's and the decisions files,
 * each parsed by the schema walk (config.c), merged in that order; see config_load() in
 * config.h for what overrides and what adds up. Pure: sources in, a config out. */
#include "supervisor/policy/config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "supervisor/policy/config_internal.h"

/* ---- merging ----------------------------------------------------------------------------- */

static int append_strv(char ***dst, size_t *n_dst, char ***src, size_t *n_src)
{
	for (size_t i = 0; i < *n_src; i++) {
		int r = strv_push(dst, n_dst, (*src)[i]);
		if (r < 0)
			return r;
		(*src)[i] = NULL;
	}
	return 0;
}

/* Move every item of SRC to the end of DST (SRC ends up empty). */
#define APPEND_LIST(dst, src)                                                                   \
	({                                                                                      \
		int _r = 0;                                                                     \
		if ((dst)->n + (src)->n > CONFIG_MAX_RULES) {                                   \
			_r = -E2BIG;                                                            \
		} else if ((src)->n > 0) {                                                      \
			__typeof__((dst)->items) _p = reallocarray(                             \
			        (dst)->items, (dst)->n + (src)->n + 16, sizeof(*(dst)->items)); \
			if (!_p) {                                                              \
				_r = -ENOMEM;                                                   \
			} else {                                                                \
				memcpy(_p + (dst)->n, (src)->items,                             \
				       (src)->n * sizeof(*(src)->items));                       \
				(dst)->items = _p;                                              \
				(dst)->n += (src)->n;                                           \
				free((src)->items);                                             \
				(src)->items = NULL;                                            \
				(src)->n = 0;                                                   \
			}                                                                       \
		}                                                                               \
		_r;                                                                             \
	})

/* Replace DST's list with SRC's (the global file replaces the built-in's lists). */
#define REPLACE_LIST(dst, src, clear) \
	do {                          \
		clear(dst);           \
		*(dst) = *(src);      \
		(src)->items = NULL;  \
		(src)->n = 0;         \
	} while (0)

/* If SRC sets the scalar, it overrides DST's (value and text). */
#define OVERRIDE_SCALAR(dst, src, value, at)         \
	do {                                         \
		if ((src)->at.text) {                \
			(dst)->value = (src)->value; \
			scalar_clear(&(dst)->at);    \
			(dst)->at = (src)->at;       \
			(src)->at.text = NULL;       \
		}                                    \
	} while (0)

static void override_exec_scalars(struct config *dst, struct config *src)
{
	OVERRIDE_SCALAR(dst, src, exec.security, exec.security_at);
	OVERRIDE_SCALAR(dst, src, exec.ask, exec.ask_at);
	OVERRIDE_SCALAR(dst, src, exec.ask_fallback, exec.ask_fallback_at);
	OVERRIDE_SCALAR(dst, src, fs.tmp, fs.tmp_at);
	OVERRIDE_SCALAR(dst, src, fs.ask, fs.ask_at);
	OVERRIDE_SCALAR(dst, src, limits.pids_max, limits.pids_max_at);
}

static void override_scalars(struct config *dst, struct config *src)
{
	override_exec_scalars(dst, src);
	OVERRIDE_SCALAR(dst, src, proxy.unlisted, proxy.unlisted_at);
	OVERRIDE_SCALAR(dst, src, proxy.approval_timeout_ms, proxy.approval_timeout_at);
	OVERRIDE_SCALAR(dst, src, proxy.rate_limit, proxy.rate_limit_at);
	OVERRIDE_SCALAR(dst, src, proxy.max_request_bytes, proxy.max_request_bytes_at);
	OVERRIDE_SCALAR(dst, src, request.timeout_ms, request.timeout_at);
	if (src->proxy.listen.text) {
		scalar_clear(&dst->proxy.listen);
		dst->proxy.listen = src->proxy.listen;
		src->proxy.listen.text = NULL;
	}
	if (src->request.listen.text) {
		scalar_clear(&dst->request.listen);
		dst->request.listen = src->request.listen;
		src->request.listen.text = NULL;
	}
	if (src->hostexec.listen.text) {
		scalar_clear(&dst->hostexec.listen);
		dst->hostexec.listen = src->hostexec.listen;
		src->hostexec.listen.text = NULL;
	}
}

/* Move SRC's file names and warnings to DST; origins keep pointing at the same strings. */
static int adopt_files(struct config *dst, struct config *src)
{
	int r = append_strv(&dst->files, &dst->n_files, &src->files, &src->n_files);

	if (r < 0)
		return r;
	return append_strv(&dst->warnings, &dst->n_warnings, &src->warnings, &src->n_warnings);
}

/* Append SRC's lists (project config, decisions) to DST's. */
static int append_lists(struct config *dst, struct config *src)
{
	int r;

	if ((r = APPEND_LIST(&dst->proxy.allow, &src->proxy.allow)) < 0 ||
	    (r = APPEND_LIST(&dst->proxy.deny, &src->proxy.deny)) < 0 ||
	    (r = APPEND_LIST(&dst->hostexec.auto_approve, &src->hostexec.auto_approve)) < 0 ||
	    (r = APPEND_LIST(&dst->hostexec.manual_approve, &src->hostexec.manual_approve)) < 0 ||
	    (r = APPEND_LIST(&dst->exec.allow, &src->exec.allow)) < 0 ||
	    (r = APPEND_LIST(&dst->exec.deny, &src->exec.deny)) < 0 ||
	    (r = APPEND_LIST(&dst->fs.write, &src->fs.write)) < 0 ||
	    (r = APPEND_LIST(&dst->fs.hide, &src->fs.hide)) < 0 ||
	    (r = APPEND_LIST(&dst->fs.protect, &src->fs.protect)) < 0 ||
	    (r = APPEND_LIST(&dst->fs.allow, &src->fs.allow)) < 0)
		return r;
	return 0;
}

/* The global file's exec and proxy lists: appended to the built-in's, or in their place with
 * `defaults: false` (the setting and its origin move to DST, for `policy show`). */
static int merge_defaults(struct config *dst, struct config *src)
{
	int r;

	if (src->exec.defaults) {
		if ((r = APPEND_LIST(&dst->exec.allow, &src->exec.allow)) < 0 ||
		    (r = APPEND_LIST(&dst->exec.deny, &src->exec.deny)) < 0)
			return r;
	} else {
		REPLACE_LIST(&dst->exec.allow, &src->exec.allow, exec_list_clear);
		REPLACE_LIST(&dst->exec.deny, &src->exec.deny, exec_list_clear);
	}
	if (src->proxy.defaults) {
		if ((r = APPEND_LIST(&dst->proxy.allow, &src->proxy.allow)) < 0 ||
		    (r = APPEND_LIST(&dst->proxy.deny, &src->proxy.deny)) < 0)
			return r;
	} else {
		REPLACE_LIST(&dst->proxy.allow, &src->proxy.allow, config_domain_list_clear);
		REPLACE_LIST(&dst->proxy.deny, &src->proxy.deny, config_domain_list_clear);
	}
	dst->exec.defaults = src->exec.defaults;
	dst->proxy.defaults = src->proxy.defaults;
	if (src->exec.defaults_at.text) {
		scalar_clear(&dst->exec.defaults_at);
		dst->exec.defaults_at = src->exec.defaults_at;
		src->exec.defaults_at.text = NULL;
	}
	if (src->proxy.defaults_at.text) {
		scalar_clear(&dst->proxy.defaults_at);
		dst->proxy.defaults_at = src->proxy.defaults_at;
		src->proxy.defaults_at.text = NULL;
	}
	return 0;
}

/* As Cloister's guardian (its DefaultAllowedDomains): AI provider APIs, the Go module proxy
 * and toolchain downloads, Ubuntu's and NodeSource's package archives. */
const char *const config_base_domains[] = {
        "api.anthropic.com",
        "api.openai.com",
        "generativelanguage.googleapis.com",
        "proxy.golang.org",
        "sum.golang.org",
        "storage.googleapis.com",
        "archive.ubuntu.com",
        "ports.ubuntu.com",
        "security.ubuntu.com",
        "deb.nodesource.com",
        NULL,
};

/* A hash of a domain entry for dedupe(): FNV-1a over host, port and kind. */
static uint64_t spec_hash(const struct domain_spec *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (const char *p = s->host; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ULL;
	h = (h ^ s->port) * 1099511628211ULL;
	return (h ^ (uint64_t)s->wildcard) * 1099511628211ULL;
}

static uint64_t string_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ULL;
	return h;
}

/* Keep the first of the N items whose KEYS[i] are equal per SAME(i, j); fills KEEP. An open
 * addressing table of indices keeps it linear: a list may hold CONFIG_MAX_RULES entries. */
static int mark_duplicates(size_t n, const uint64_t *keys,
                           bool (*same)(const void *, size_t, size_t), const void *list, bool *keep)
{
	size_t size = 16;
	_cleanup_free_ size_t *slots = NULL;

	while (size < 2 * n)
		size *= 2;
	slots = malloc(size * sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < size; i++)
		slots[i] = SIZE_MAX;
	for (size_t i = 0; i < n; i++) {
		size_t at = keys[i] & (size - 1);

		keep[i] = true;
		for (; slots[at] != SIZE_MAX; at = (at + 1) & (size - 1))
			if (keys[slots[at]] == keys[i] && same(list, slots[at], i)) {
				keep[i] = false;
				break;
			}
		if (keep[i])
			slots[at] = i;
	}
	return 0;
}

static bool same_domain(const void *list, size_t a, size_t b)
{
	const struct config_domain_list *l = list;
	const struct domain_spec *x = &l->items[a].spec, *y = &l->items[b].spec;

	return x->wildcard == y->wildcard && x->port == y->port && strcmp(x->host, y->host) == 0;
}

static bool same_pattern(const void *list, size_t a, size_t b)
{
	const struct config_pattern_list *l = list;

	return strcmp(l->items[a].regex.source, l->items[b].regex.source) == 0;
}

static int dedupe_domains(struct config_domain_list *list)
{
	_cleanup_free_ uint64_t *keys = calloc(list->n + 1, sizeof(*keys));
	_cleanup_free_ bool *keep = calloc(list->n + 1, sizeof(*keep));
	size_t w = 0;
	int r;

	if (!keys || !keep)
		return -ENOMEM;
	for (size_t i = 0; i < list->n; i++)
		keys[i] = spec_hash(&list->items[i].spec);
	r = mark_duplicates(list->n, keys, same_domain, list, keep);
	if (r < 0)
		return r;
	for (size_t i = 0; i < list->n; i++)
		if (keep[i])
			list->items[w++] = list->items[i];
	list->n = w;
	return 0;
}

static int dedupe_patterns(struct config_pattern_list *list)
{
	_cleanup_free_ uint64_t *keys = calloc(list->n + 1, sizeof(*keys));
	_cleanup_free_ bool *keep = calloc(list->n + 1, sizeof(*keep));
	size_t w = 0;
	int r;

	if (!keys || !keep)
		return -ENOMEM;
	for (size_t i = 0; i < list->n; i++)
		keys[i] = string_hash(list->items[i].regex.source);
	r = mark_duplicates(list->n, keys, same_pattern, list, keep);
	if (r < 0)
		return r;
	for (size_t i = 0; i < list->n; i++) {
		if (keep[i])
			list->items[w++] = list->items[i];
		else
			config_regex_done(&list->items[i].regex);
	}
	list->n = w;
	return 0;
}

/* Append the base list to ALLOW, each domain unless ALLOW already has it. */
static int add_base_domains(struct config_domain_list *allow)
{
	for (size_t i = 0; config_base_domains[i]; i++) {
		struct config_domain_rule rule = {
		        .list = "always-allowed",
		        .index = (unsigned)i,
		        .origin = {.file = CONFIG_BASE_NAME, .layer = CONFIG_LAYER_BASE},
		};
		bool listed = false;
		int r;

		if (domain_spec_parse(config_base_domains[i], false, &rule.spec, NULL) < 0)
			return -EINVAL;
		for (size_t k = 0; k < allow->n && !listed; k++)
			listed = allow->items[k].spec.port == 0 && !allow->items[k].spec.wildcard &&
			         strcmp(allow->items[k].spec.host, rule.spec.host) == 0;
		if (listed)
			continue;
		r = config_domain_list_add(allow, &rule);
		if (r < 0)
			return r;
	}
	return 0;
}

static int merge_error(int r, const char *name, struct cl_error *err)
{
	if (r == -E2BIG)
		return cl_error_set(err, -EINVAL,
		                    "%s: too many entries in one list after merging "
		                    "(the limit is %d)",
		                    name, CONFIG_MAX_RULES);
	return cl_error_set(err, r, "%s: out of memory", name);
}

int config_load(const struct config_sources *sources, const struct config_load_options *options,
                struct config **ret_config, struct cl_error *err)
{
	const struct config_source builtin = {
	        .name = CONFIG_BUILTIN_NAME,
	        .data = (const char *)cloister_default_config,
	        .len = cloister_default_config_len,
	        .present = true,
	};
	static const struct {
		size_t offset;
		enum config_file_kind kind;
		enum config_layer layer;
	} extra[] = {
	        {offsetof(struct config_sources, project), CONFIG_FILE_PROJECT,
	         CONFIG_LAYER_PROJECT},
	        {offsetof(struct config_sources, global_decisions), CONFIG_FILE_DECISIONS,
	         CONFIG_LAYER_GLOBAL_DECISIONS},
	        {offsetof(struct config_sources, project_decisions), CONFIG_FILE_DECISIONS,
	         CONFIG_LAYER_PROJECT_DECISIONS},
	};
	_cleanup_(config_freep) struct config *eff = NULL;
	int r;

	/* The built-in is parsed strictly: it must never depend on --lenient. */
	struct config_load_options strict = {.home = options ? options->home : NULL};
	r = config_parse_file(CONFIG_FILE_GLOBAL, CONFIG_LAYER_BUILTIN, &builtin, &strict, &eff,
	                      err);
	if (r < 0)
		return r;

	if (sources->global.present) {
		_cleanup_(config_freep) struct config *g = NULL;

		r = config_parse_file(CONFIG_FILE_GLOBAL, CONFIG_LAYER_GLOBAL, &sources->global,
		                      options, &g, err);
		if (r < 0)
			return r;
		/* Cloister reads a config.yaml without unlisted_domain_behavior as approval off. */
		bool unlisted_unset = !g->proxy.unlisted_at.text;

		override_scalars(eff, g);
		if (unlisted_unset) {
			char *text = strdup(unlisted_behavior_to_string(UNLISTED_REJECT));

			if (!text)
				return merge_error(-ENOMEM, sources->global.name, err);
			scalar_clear(&eff->proxy.unlisted_at);
			eff->proxy.unlisted = UNLISTED_REJECT;
			eff->proxy.unlisted_at = (struct config_scalar){
			        .text = text,
			        .origin = {.file = g->files[0], .layer = CONFIG_LAYER_GLOBAL},
			};
		}
		/* The exec and proxy lists extend the built-in's (a user who adds one rule keeps
		 * the rest), unless the section says `defaults: false`: then they replace them,
		 * an absent list being empty. The hostexec lists replace them, as in Cloister. */
		r = merge_defaults(eff, g);
		if (r < 0)
			return merge_error(r, sources->global.name, err);
		REPLACE_LIST(&eff->hostexec.auto_approve, &g->hostexec.auto_approve,
		             pattern_list_clear);
		REPLACE_LIST(&eff->hostexec.manual_approve, &g->hostexec.manual_approve,
		             pattern_list_clear);
		/* fs extends the built-in's lists: no file drops a built-in hide or protect. */
		r = APPEND_LIST(&eff->fs.write, &g->fs.write);
		if (r >= 0)
			r = APPEND_LIST(&eff->fs.hide, &g->fs.hide);
		if (r >= 0)
			r = APPEND_LIST(&eff->fs.protect, &g->fs.protect);
		if (r >= 0)
			r = adopt_files(eff, g);
		if (r < 0)
			return merge_error(r, sources->global.name, err);
	}

	for (size_t i = 0; i < ELEMENTSOF(extra); i++) {
		const struct config_source *src =
		        (const struct config_source *)((const char *)sources + extra[i].offset);
		_cleanup_(config_freep) struct config *c = NULL;

		if (!src->present)
			continue;
		r = config_parse_file(extra[i].kind, extra[i].layer, src, options, &c, err);
		if (r < 0)
			return r;
		override_exec_scalars(eff, c);
		r = append_lists(eff, c);
		if (r >= 0)
			r = adopt_files(eff, c);
		if (r < 0)
			return merge_error(r, src->name, err);
	}
	if ((r = dedupe_domains(&eff->proxy.allow)) < 0 ||
	    (r = dedupe_domains(&eff->proxy.deny)) < 0 ||
	    (r = dedupe_patterns(&eff->hostexec.auto_approve)) < 0 ||
	    (r = dedupe_patterns(&eff->hostexec.manual_approve)) < 0 ||
	    (r = add_base_domains(&eff->proxy.allow)) < 0)
		return merge_error(r, CONFIG_BASE_NAME, err);
	*ret_config = TAKE_PTR(eff);
	return 0;
}
