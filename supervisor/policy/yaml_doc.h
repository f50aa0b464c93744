/* A bounded YAML document tree built with libyaml's event parser (pure, no I/O).
 *
 * Config files are read into this small tree first, so the schema walk in config.c can look at
 * a whole mapping (duplicate keys, "domain" vs "pattern") and report positions. The builder is
 * deliberately strict, because its input may have been written by an agent:
 *   - at most YDOC_MAX_BYTES of input, YDOC_MAX_DEPTH nesting, YDOC_MAX_NODES nodes and
 *     YDOC_MAX_ITEMS entries per sequence or mapping;
 *   - anchors and aliases are rejected (no "billion laughs", no `<<` merge keys);
 *   - one document only; mapping keys must be scalars and unique;
 *   - a scalar containing a NUL character is rejected (it could not be a C string).
 * Every error reads "NAME:LINE:COLUMN: what", with 1-based positions. */
#ifndef CLOISTER_YAML_DOC_H
#define CLOISTER_YAML_DOC_H

#include <stdbool.h>
#include <stddef.h>

#include "base/cleanup.h"
#include "base/error.h"

#define YDOC_MAX_BYTES (1024 * 1024)
#define YDOC_MAX_DEPTH 32
#define YDOC_MAX_NODES 65536
#define YDOC_MAX_ITEMS 10000

enum ydoc_kind {
	YDOC_SCALAR,
	YDOC_SEQUENCE,
	YDOC_MAPPING,
};

struct ydoc_node {
	enum ydoc_kind kind;
	unsigned line;   /* 1-based */
	unsigned column; /* 1-based */
	char *text;      /* SCALAR: the value, NUL-terminated */
	bool plain;      /* SCALAR: written without quotes (so `~`, `null`, `` mean null) */
	/* SEQUENCE: n items; MAPPING: n pairs stored as items[2i] (key), items[2i+1] (value). */
	struct ydoc_node **items;
	size_t n;
};

/* Parse LEN bytes at BUF (need not be NUL-terminated). NAME is used in error messages only.
 * On success *ret_root is the root node, or NULL for an empty document; free it with
 * ydoc_node_free(). Fails with -EINVAL (syntax or a limit; the message says which), -EFBIG
 * (input larger than YDOC_MAX_BYTES) or -ENOMEM. */
int ydoc_parse(const char *name, const char *buf, size_t len, struct ydoc_node **ret_root,
               struct cl_error *err);

void ydoc_node_free(struct ydoc_node *node);
CL_DEFINE_TRIVIAL_CLEANUP(struct ydoc_node *, ydoc_node_free)

/* A plain `~`, `null`, `Null`, `NULL` or empty scalar. */
bool ydoc_is_null(const struct ydoc_node *node);

/* "a mapping", "a sequence", "a scalar" (or "null") for error messages. */
const char *ydoc_kind_name(const struct ydoc_node *node);

#endif
