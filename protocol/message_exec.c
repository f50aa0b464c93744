/* The exec request's checks and serializer, without cJSON: the static shim links this file
 * (with frame.c and error.c) and nothing else of protocol/. The JSON written is byte for byte
 * what cJSON_PrintUnformatted() would print for the same tree (the unit tests compare them). */
#include "protocol/message.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "protocol/message_check.h"

/* ---- value checks, shared with message.c ----------------------------------------------------- */

void cl_message_strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

int cl_message_check_length(const char *s, size_t max, const char *field, struct cl_error *err)
{
	if (strnlen(s, max + 1) > max)
		return cl_error_set(err, -E2BIG, "%s: longer than %zu bytes", field, max);
	return 0;
}

int cl_message_check_absolute_path(const char *s, const char *field, struct cl_error *err)
{
	if (s[0] != '/')
		return cl_error_set(err, -EINVAL, "%s: expected an absolute path", field);
	return cl_message_check_length(s, CL_MESSAGE_MAX_PATH, field, err);
}

int cl_message_check_strv(char *const *v, size_t n, size_t min_count, size_t max_count,
                          const char *field, struct cl_error *err)
{
	char name[64];
	int r;

	if (n < min_count)
		return cl_error_set(err, -EINVAL, "%s: expected at least %zu %s", field, min_count,
		                    min_count == 1 ? "entry" : "entries");
	if (n > max_count)
		return cl_error_set(err, -E2BIG, "%s: more than %zu entries", field, max_count);
	if (n > 0 && !v)
		return cl_error_set(err, -EINVAL, "%s: missing", field);
	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s[%zu]", field, i);
		if (!v[i])
			return cl_error_set(err, -EINVAL, "%s: missing", name);
		r = cl_message_check_length(v[i], CL_MESSAGE_MAX_ARG_BYTES, name, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- exec request ---------------------------------------------------------------------------- */

void cl_exec_request_free(struct cl_exec_request *req)
{
	if (!req)
		return;
	free(req->tool);
	cl_message_strv_free(req->argv);
	free(req->cwd);
	cl_message_strv_free(req->env);
	if (req->token) {
		/* A secret: do not leave it in freed memory. */
		explicit_bzero(req->token, strlen(req->token));
		free(req->token);
	}
	free(req);
}

int cl_exec_request_validate(const struct cl_exec_request *req, struct cl_error *err)
{
	int r;

	if (!req->tool)
		return cl_error_set(err, -EINVAL, "tool: required");
	if (!req->tool[0] || strchr(req->tool, '/') || strcmp(req->tool, ".") == 0 ||
	    strcmp(req->tool, "..") == 0)
		return cl_error_set(err, -EINVAL, "tool: expected a command name without '/'");
	r = cl_message_check_length(req->tool, CL_MESSAGE_MAX_NAME, "tool", err);
	if (r < 0)
		return r;

	r = cl_message_check_strv(req->argv, req->argc, 1, CL_MESSAGE_MAX_ARGC, "argv", err);
	if (r < 0)
		return r;

	if (!req->cwd)
		return cl_error_set(err, -EINVAL, "cwd: required");
	r = cl_message_check_absolute_path(req->cwd, "cwd", err);
	if (r < 0)
		return r;

	r = cl_message_check_strv(req->env, req->envc, 0, CL_MESSAGE_MAX_ENV, "env", err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < req->envc; i++)
		if (req->env[i][0] == '=' || !strchr(req->env[i], '='))
			return cl_error_set(err, -EINVAL, "env[%zu]: expected KEY=VALUE", i);

	if (req->uid > CL_MESSAGE_MAX_ID || req->gid > CL_MESSAGE_MAX_ID)
		return cl_error_set(err, -EINVAL, "%s: expected an integer in 0..%u",
		                    req->uid > CL_MESSAGE_MAX_ID ? "uid" : "gid",
		                    CL_MESSAGE_MAX_ID);

	if (req->token) {
		if (!req->token[0])
			return cl_error_set(err, -EINVAL, "token: empty");
		r = cl_message_check_length(req->token, CL_MESSAGE_MAX_SECRET, "token", err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* A growing output buffer; the first failure sticks and later appends do nothing. */
struct json_out {
	char *buf;
	size_t len;
	size_t cap;
	int error;
};

static void out_append(struct json_out *o, const char *s, size_t n)
{
	if (o->error)
		return;
	if (n > CL_MESSAGE_MAX_INPUT - o->len || o->len + n > CL_MESSAGE_MAX_INPUT) {
		o->error = -E2BIG;
		return;
	}
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 256;
		char *p;

		while (cap < o->len + n + 1)
			cap *= 2;
		p = realloc(o->buf, cap);
		if (!p) {
			o->error = -ENOMEM;
			return;
		}
		o->buf = p;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

static void out_literal(struct json_out *o, const char *s)
{
	out_append(o, s, strlen(s));
}

/* A JSON string as cJSON prints it: ", \ and bytes below 0x20 escaped (the short forms where
 * JSON has one, else \u00xx in lower case); every other byte, 0x7f-0xff included, as is. */
static void out_string(struct json_out *o, const char *s)
{
	const char *run = s;
	char esc[8];

	out_append(o, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		out_append(o, run, (size_t)(s - run));
		run = s + 1;
		switch (c) {
		case '"':
			out_literal(o, "\\\"");
			break;
		case '\\':
			out_literal(o, "\\\\");
			break;
		case '\b':
			out_literal(o, "\\b");
			break;
		case '\f':
			out_literal(o, "\\f");
			break;
		case '\n':
			out_literal(o, "\\n");
			break;
		case '\r':
			out_literal(o, "\\r");
			break;
		case '\t':
			out_literal(o, "\\t");
			break;
		default:
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			out_literal(o, esc);
		}
	}
	out_append(o, run, (size_t)(s - run));
	out_append(o, "\"", 1);
}

static void out_strv(struct json_out *o, char *const *v, size_t n)
{
	out_append(o, "[", 1);
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			out_append(o, ",", 1);
		out_string(o, v[i]);
	}
	out_append(o, "]", 1);
}

int cl_exec_request_to_json(const struct cl_exec_request *req, struct cl_error *err,
                            char **ret_json)
{
	struct json_out o = {0};
	char num[16];
	int r;

	r = cl_exec_request_validate(req, err);
	if (r < 0)
		return r;
	out_literal(&o, "{\"tool\":");
	out_string(&o, req->tool);
	out_literal(&o, ",\"argv\":");
	out_strv(&o, req->argv, req->argc);
	out_literal(&o, ",\"cwd\":");
	out_string(&o, req->cwd);
	out_literal(&o, ",\"env\":");
	out_strv(&o, req->env, req->envc);
	snprintf(num, sizeof(num), "%u", req->uid);
	out_literal(&o, ",\"uid\":");
	out_literal(&o, num);
	snprintf(num, sizeof(num), "%u", req->gid);
	out_literal(&o, ",\"gid\":");
	out_literal(&o, num);
	if (req->token) {
		out_literal(&o, ",\"token\":");
		out_string(&o, req->token);
	}
	out_literal(&o, "}");
	if (o.error) {
		if (o.buf)
			explicit_bzero(o.buf, o.len);
		free(o.buf);
		if (o.error == -E2BIG)
			return cl_error_set(err, -E2BIG, "message exceeds the %d-byte limit",
			                    CL_MESSAGE_MAX_INPUT);
		return cl_error_set(err, o.error, "out of memory");
	}
	*ret_json = o.buf;
	return 0;
}
