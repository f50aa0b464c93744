#include "supervisor/policy/yaml_doc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "base/cleanup.h"

/* Mappings in a config file hold a handful of keys; the bound keeps the duplicate-key check
 * (linear per key) cheap on hostile input. */
#define YDOC_MAX_KEYS 1000

void ydoc_node_free(struct ydoc_node *node)
{
	if (!node)
		return;
	for (size_t i = 0; i < node->n; i++)
		ydoc_node_free(node->items[i]);
	free(node->items);
	free(node->text);
	free(node);
}

bool ydoc_is_null(const struct ydoc_node *node)
{
	static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};

	if (!node)
		return true;
	if (node->kind != YDOC_SCALAR || !node->plain)
		return false;
	for (size_t i = 0; i < ELEMENTSOF(nulls); i++)
		if (strcmp(node->text, nulls[i]) == 0)
			return true;
	return false;
}

const char *ydoc_kind_name(const struct ydoc_node *node)
{
	if (ydoc_is_null(node))
		return "null";
	switch (node->kind) {
	case YDOC_MAPPING:
		return "a mapping";
	case YDOC_SEQUENCE:
		return "a sequence";
	case YDOC_SCALAR:
		break;
	}
	return "a scalar";
}

struct builder {
	const char *name;
	struct cl_error *err;
	struct ydoc_node *root;
	struct ydoc_node *stack[YDOC_MAX_DEPTH];
	size_t depth;
	size_t nodes;
	unsigned documents;
};

static int fail_at(struct builder *b, const yaml_mark_t *mark, const char *what)
{
	return cl_error_set(b->err, -EINVAL, "%s:%zu:%zu: %s", b->name, mark->line + 1,
	                    mark->column + 1, what);
}

static int append_item(struct ydoc_node *parent, struct ydoc_node *child)
{
	if (parent->n % 16 == 0) {
		struct ydoc_node **items =
		        reallocarray(parent->items, parent->n + 16, sizeof(*items));
		if (!items)
			return -ENOMEM;
		parent->items = items;
	}
	parent->items[parent->n++] = child;
	return 0;
}

/* Hang NODE under the innermost open collection (or make it the root), enforcing the limits
 * and the mapping rules. Takes ownership of NODE in every case. */
static int attach(struct builder *b, struct ydoc_node *node_in, const yaml_mark_t *mark)
{
	_cleanup_(ydoc_node_freep) struct ydoc_node *node = node_in;
	struct ydoc_node *parent;
	int r;

	if (++b->nodes > YDOC_MAX_NODES)
		return fail_at(b, mark, "too many YAML nodes (the limit is 65536)");
	if (b->depth == 0) {
		if (b->root)
			return fail_at(b, mark, "unexpected second root node");
		b->root = TAKE_PTR(node);
		return 0;
	}
	parent = b->stack[b->depth - 1];
	if (parent->kind == YDOC_SEQUENCE && parent->n >= YDOC_MAX_ITEMS)
		return fail_at(b, mark, "too many items in a sequence (the limit is 10000)");
	if (parent->kind == YDOC_MAPPING && parent->n % 2 == 0) {
		if (parent->n / 2 >= YDOC_MAX_KEYS)
			return fail_at(b, mark, "too many keys in a mapping (the limit is 1000)");
		if (node->kind != YDOC_SCALAR)
			return fail_at(b, mark, "a mapping key must be a scalar");
		for (size_t i = 0; i < parent->n; i += 2)
			if (strcmp(parent->items[i]->text, node->text) == 0) {
				char what[CL_ERROR_MAX];
				snprintf(what, sizeof(what), "duplicate key \"%.200s\"",
				         node->text);
				return fail_at(b, mark, what);
			}
	}
	r = append_item(parent, node);
	if (r < 0)
		return cl_error_set(b->err, r, "%s: out of memory", b->name);
	TAKE_PTR(node);
	return 0;
}

static struct ydoc_node *node_new(enum ydoc_kind kind, const yaml_mark_t *mark)
{
	struct ydoc_node *node = calloc(1, sizeof(*node));

	if (!node)
		return NULL;
	node->kind = kind;
	node->line = (unsigned)mark->line + 1;
	node->column = (unsigned)mark->column + 1;
	return node;
}

static int on_scalar(struct builder *b, const yaml_event_t *ev)
{
	_cleanup_(ydoc_node_freep) struct ydoc_node *node = NULL;
	const char *value = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;

	if (ev->data.scalar.anchor)
		return fail_at(b, &ev->start_mark, "anchors and aliases are not allowed");
	if (memchr(value, '\0', len))
		return fail_at(b, &ev->start_mark, "a scalar contains a NUL character");
	node = node_new(YDOC_SCALAR, &ev->start_mark);
	if (!node)
		return cl_error_set(b->err, -ENOMEM, "%s: out of memory", b->name);
	node->text = strndup(value, len);
	if (!node->text)
		return cl_error_set(b->err, -ENOMEM, "%s: out of memory", b->name);
	node->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !ev->data.scalar.tag;
	return attach(b, TAKE_PTR(node), &ev->start_mark);
}

static int on_collection_start(struct builder *b, const yaml_event_t *ev, enum ydoc_kind kind)
{
	struct ydoc_node *node;
	const yaml_char_t *anchor = kind == YDOC_MAPPING ? ev->data.mapping_start.anchor
	                                                 : ev->data.sequence_start.anchor;
	int r;

	if (anchor)
		return fail_at(b, &ev->start_mark, "anchors and aliases are not allowed");
	if (b->depth >= YDOC_MAX_DEPTH)
		return fail_at(b, &ev->start_mark, "nesting too deep (the limit is 32 levels)");
	node = node_new(kind, &ev->start_mark);
	if (!node)
		return cl_error_set(b->err, -ENOMEM, "%s: out of memory", b->name);
	r = attach(b, node, &ev->start_mark);
	if (r < 0)
		return r;
	/* attach() kept the node alive inside the tree; keep a borrowed pointer to fill it. */
	b->stack[b->depth++] = node;
	return 0;
}

static int on_event(struct builder *b, const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT:
		if (++b->documents > 1)
			return fail_at(b, &ev->start_mark,
			               "only one YAML document is allowed in a config file");
		return 0;
	case YAML_SCALAR_EVENT:
		return on_scalar(b, ev);
	case YAML_SEQUENCE_START_EVENT:
		return on_collection_start(b, ev, YDOC_SEQUENCE);
	case YAML_MAPPING_START_EVENT:
		return on_collection_start(b, ev, YDOC_MAPPING);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		if (b->depth > 0)
			b->depth--;
		return 0;
	case YAML_ALIAS_EVENT:
		return fail_at(b, &ev->start_mark, "anchors and aliases are not allowed");
	default:
		return 0;
	}
}

int ydoc_parse(const char *name, const char *buf, size_t len, struct ydoc_node **ret_root,
               struct cl_error *err)
{
	struct builder b = {.name = name, .err = err};
	yaml_parser_t parser;
	bool done = false;
	int r = 0;

	if (len > YDOC_MAX_BYTES)
		return cl_error_set(err, -EFBIG, "%s: file is larger than %d bytes", name,
		                    YDOC_MAX_BYTES);
	if (!yaml_parser_initialize(&parser))
		return cl_error_set(err, -ENOMEM, "%s: out of memory", name);
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);

	while (!done && r >= 0) {
		yaml_event_t ev;

		if (!yaml_parser_parse(&parser, &ev)) {
			if (parser.error == YAML_MEMORY_ERROR) {
				r = cl_error_set(err, -ENOMEM, "%s: out of memory", name);
			} else {
				yaml_mark_t mark = parser.problem_mark;
				r = cl_error_set(err, -EINVAL, "%s:%zu:%zu: invalid YAML: %s%s%s",
				                 name, mark.line + 1, mark.column + 1,
				                 parser.problem ? parser.problem : "syntax error",
				                 parser.context ? " " : "",
				                 parser.context ? parser.context : "");
			}
			break;
		}
		done = ev.type == YAML_STREAM_END_EVENT;
		r = on_event(&b, &ev);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	if (r < 0) {
		ydoc_node_free(b.root);
		return r;
	}
	*ret_root = b.root;
	return 0;
}
