/* Strict JSON parsing on top of cJSON, for bytes sent by a hostile peer.
 *
 * cJSON alone is too lenient for a security boundary: it decodes "\u0000" (or a raw 0x00 byte)
 * into a C string that silently ends there, so what a policy checks would differ from what runs;
 * it keeps duplicate keys (two readers may pick different ones); it accepts "+1", "01" and raw
 * control characters; and it nests 1000 levels deep. cl_json_parse_strict() first scans the raw
 * bytes with an RFC 8259 grammar, rejecting NUL bytes in any string or key, excessive nesting or
 * value counts and trailing garbage, naming the path of the offending value ("argv[2]",
 * "request.env.PATH"); then parses with cJSON and rejects duplicate keys in any object.
 * Bytes 0x80-0xff in strings are passed through unchecked (argv may legitimately hold non-UTF-8
 * file names); unpaired UTF-16 surrogate escapes are rejected. */
#ifndef CLOISTER_JSON_STRICT_H
#define CLOISTER_JSON_STRICT_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "base/cleanup.h"
#include "base/error.h"

/* Deepest nesting cl_json_parse_strict() accepts whatever the caller asks for. */
#define CL_JSON_DEPTH_CEILING 64

CL_DEFINE_TRIVIAL_CLEANUP(cJSON *, cJSON_Delete)
#define _cleanup_cjson_ _cleanup_(cJSON_Deletep)

/* Parse len bytes of json (not necessarily NUL-terminated) into a cJSON tree.
 * max_depth (1..CL_JSON_DEPTH_CEILING) bounds nesting: a scalar or an empty container at the top
 * has depth 1, each container level adds one. max_values bounds the number of values (every
 * scalar, array and object counts one; keys do not), which bounds the memory cJSON uses.
 * Trailing whitespace is allowed, anything else after the value is not.
 * Returns 0 and sets *ret_root (cJSON_Delete() it); -EINVAL with a message naming the path for
 * malformed JSON, a NUL byte, a duplicate key; -E2BIG past max_depth or max_values; -ENOMEM. */
int cl_json_parse_strict(const char *json, size_t len, unsigned max_depth, size_t max_values,
                         struct cl_error *err, cJSON **ret_root);

/* Write s (len bytes) into buf for use in an error message: printable ASCII is kept, other bytes
 * become \xHH, and long input is cut with "...". buf always ends up NUL-terminated (size > 0).
 * Returns buf. */
char *cl_json_printable(const char *s, size_t len, char *buf, size_t size);

#endif
