#include "protocol/message.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "protocol/json_strict.h"
#include "protocol/message_check.h"

CL_DEFINE_TRIVIAL_CLEANUP(struct cl_exec_request *, cl_exec_request_free)
CL_DEFINE_TRIVIAL_CLEANUP(struct cl_executor_request *, cl_executor_request_free)
CL_DEFINE_TRIVIAL_CLEANUP(struct cl_executor_response *, cl_executor_response_free)

/* ---- reading fields: presence and JSON types ---------------------------------------------- */

static int parse_root(const char *json, size_t len, size_t max_input, struct cl_error *err,
                      cJSON **ret_root)
{
	_cleanup_cjson_ cJSON *root = NULL;
	int r;

	if (len > max_input)
		return cl_error_set(err, -E2BIG, "message of %zu bytes exceeds the %zu-byte limit",
		                    len, max_input);
	r = cl_json_parse_strict(json, len, CL_MESSAGE_MAX_DEPTH, CL_MESSAGE_MAX_VALUES, err,
	                         &root);
	if (r < 0)
		return r;
	if (!cJSON_IsObject(root))
		return cl_error_set(err, -EINVAL, "expected a JSON object");
	*ret_root = TAKE_PTR(root);
	return 0;
}

/* Look up a field (case-sensitively: "ARGV" is not "argv"). An optional field that is absent or
 * null yields NULL; a required one is an error. */
static int get_field(const cJSON *obj, const char *key, const char *field, bool required,
                     struct cl_error *err, const cJSON **ret_item)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!item || (!required && cJSON_IsNull(item)))
		item = NULL;
	if (!item && required)
		return cl_error_set(err, -EINVAL, "%s: required", field);
	*ret_item = item;
	return 0;
}

/* A string field, copied; NULL when optional and absent. */
static int get_string(const cJSON *obj, const char *key, const char *field, bool required,
                      struct cl_error *err, char **ret)
{
	const cJSON *item = NULL;
	char *s = NULL;
	int r;

	r = get_field(obj, key, field, required, err, &item);
	if (r < 0)
		return r;
	if (item) {
		if (!cJSON_IsString(item))
			return cl_error_set(err, -EINVAL, "%s: expected a string", field);
		s = strdup(item->valuestring);
		if (!s)
			return cl_error_set(err, -ENOMEM, "%s: out of memory", field);
	}
	*ret = s;
	return 0;
}

/* An integer in min..max. doubles hold every integer of these ranges exactly. */
static int get_integer(const cJSON *obj, const char *key, const char *field, bool required,
                       int64_t min, int64_t max, int64_t def, struct cl_error *err, int64_t *ret)
{
	const cJSON *item = NULL;
	double v;
	int r;

	r = get_field(obj, key, field, required, err, &item);
	if (r < 0)
		return r;
	if (!item) {
		*ret = def;
		return 0;
	}
	v = cJSON_IsNumber(item) ? item->valuedouble : 0.5;
	/* Written so that NaN fails too; the range check comes before the conversion. */
	if (!(v >= (double)min && v <= (double)max) || (double)(int64_t)v != v)
		return cl_error_set(err, -EINVAL, "%s: expected an integer in %lld..%lld", field,
		                    (long long)min, (long long)max);
	*ret = (int64_t)v;
	return 0;
}

/* An array of strings, copied into a NULL-terminated vector; NULL/0 when optional and absent.
 * The count is checked here, before allocating, so that the limit bounds the work. */
static int get_string_array(const cJSON *obj, const char *key, const char *field, bool required,
                            size_t max_count, struct cl_error *err, char ***ret_v, size_t *ret_n)
{
	const cJSON *item, *c;
	char **v = NULL;
	size_t n = 0, i = 0;
	int r;

	r = get_field(obj, key, field, required, err, &item);
	if (r < 0)
		return r;
	if (item) {
		if (!cJSON_IsArray(item))
			return cl_error_set(err, -EINVAL, "%s: expected an array of strings",
			                    field);
		for (c = item->child; c; c = c->next)
			if (++n > max_count)
				return cl_error_set(err, -E2BIG, "%s: more than %zu entries", field,
				                    max_count);
		v = calloc(n + 1, sizeof(*v));
		if (!v)
			return cl_error_set(err, -ENOMEM, "%s: out of memory", field);
		for (c = item->child; c; c = c->next, i++) {
			if (!cJSON_IsString(c)) {
				cl_message_strv_free(v);
				return cl_error_set(err, -EINVAL, "%s[%zu]: expected a string",
				                    field, i);
			}
			v[i] = strdup(c->valuestring);
			if (!v[i]) {
				cl_message_strv_free(v);
				return cl_error_set(err, -ENOMEM, "%s: out of memory", field);
			}
		}
	}
	*ret_v = v;
	*ret_n = n;
	return 0;
}

/* ---- exec request (its checks and serializer are in message_exec.c, free of cJSON) -------- */

int cl_exec_request_parse(const char *json, size_t len, struct cl_error *err,
                          struct cl_exec_request **ret_req)
{
	_cleanup_(cl_exec_request_freep) struct cl_exec_request *req = NULL;
	_cleanup_cjson_ cJSON *root = NULL;
	int64_t id;
	int r;

	r = parse_root(json, len, CL_MESSAGE_MAX_INPUT, err, &root);
	if (r < 0)
		return r;
	req = calloc(1, sizeof(*req));
	if (!req)
		return cl_error_set(err, -ENOMEM, "out of memory");

	r = get_string(root, "tool", "tool", true, err, &req->tool);
	if (r < 0)
		return r;
	r = get_string_array(root, "argv", "argv", true, CL_MESSAGE_MAX_ARGC, err, &req->argv,
	                     &req->argc);
	if (r < 0)
		return r;
	r = get_string(root, "cwd", "cwd", true, err, &req->cwd);
	if (r < 0)
		return r;
	r = get_string_array(root, "env", "env", true, CL_MESSAGE_MAX_ENV, err, &req->env,
	                     &req->envc);
	if (r < 0)
		return r;
	r = get_integer(root, "uid", "uid", true, 0, CL_MESSAGE_MAX_ID, 0, err, &id);
	if (r < 0)
		return r;
	req->uid = (uint32_t)id;
	r = get_integer(root, "gid", "gid", true, 0, CL_MESSAGE_MAX_ID, 0, err, &id);
	if (r < 0)
		return r;
	req->gid = (uint32_t)id;
	r = get_string(root, "token", "token", false, err, &req->token);
	if (r < 0)
		return r;

	r = cl_exec_request_validate(req, err);
	if (r < 0)
		return r;
	*ret_req = TAKE_PTR(req);
	return 0;
}

/* Print root compactly and check the result against the limit the parser applies. */
static int print_root(const cJSON *root, size_t max_len, struct cl_error *err, char **ret_json)
{
	_cleanup_free_ char *s = cJSON_PrintUnformatted(root);
	size_t n;

	if (!s)
		return cl_error_set(err, -ENOMEM, "out of memory");
	n = strlen(s);
	if (n > max_len)
		return cl_error_set(err, -E2BIG, "message of %zu bytes exceeds the %zu-byte limit",
		                    n, max_len);
	*ret_json = TAKE_PTR(s);
	return 0;
}

/* cJSON_Add* return NULL on allocation failure; one check after building is enough, since a
 * failed add leaves the field out and the whole tree is discarded. */
#define ADD_OR_FAIL(expr)               \
	do {                            \
		if (!(expr))            \
			return -ENOMEM; \
	} while (0)

/* ---- executor request ---------------------------------------------------------------------- */

void cl_executor_request_free(struct cl_executor_request *req)
{
	if (!req)
		return;
	free(req->secret);
	free(req->command);
	cl_message_strv_free(req->args);
	free(req->workdir);
	for (size_t i = 0; req->env && i < req->envc; i++) {
		free(req->env[i].name);
		free(req->env[i].value);
	}
	free(req->env);
	free(req);
}

static int compare_env_names(const void *a, const void *b)
{
	return strcmp((*(const struct cl_env_pair *const *)a)->name,
	              (*(const struct cl_env_pair *const *)b)->name);
}

static int check_env_pairs(const struct cl_env_pair *env, size_t n, struct cl_error *err)
{
	_cleanup_free_ const struct cl_env_pair **sorted = NULL;
	char name[80];

	if (n > CL_MESSAGE_MAX_ENV)
		return cl_error_set(err, -E2BIG, "request.env: more than %d entries",
		                    CL_MESSAGE_MAX_ENV);
	if (n == 0)
		return 0;
	if (!env)
		return cl_error_set(err, -EINVAL, "request.env: missing");
	for (size_t i = 0; i < n; i++) {
		const char *k = env[i].name;

		if (!k || !env[i].value)
			return cl_error_set(err, -EINVAL, "request.env: entry %zu incomplete", i);
		cl_json_printable(k, strnlen(k, 128), name, sizeof(name));
		if (!k[0] || strchr(k, '='))
			return cl_error_set(err, -EINVAL,
			                    "request.env: invalid name \"%s\" (empty or with '=')",
			                    name);
		/* As one "NAME=VALUE" string, the form execve gets. */
		if (strnlen(k, CL_MESSAGE_MAX_ARG_BYTES) + 1 +
		            strnlen(env[i].value, CL_MESSAGE_MAX_ARG_BYTES) >
		    CL_MESSAGE_MAX_ARG_BYTES)
			return cl_error_set(err, -E2BIG, "request.env.%s: longer than %d bytes",
			                    name, CL_MESSAGE_MAX_ARG_BYTES);
	}

	/* The parser rejects duplicate keys; a struct must not produce them either. */
	sorted = calloc(n, sizeof(*sorted));
	if (!sorted)
		return cl_error_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		sorted[i] = &env[i];
	qsort(sorted, n, sizeof(*sorted), compare_env_names);
	for (size_t i = 1; i < n; i++)
		if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0)
			return cl_error_set(err, -EINVAL, "request.env: duplicate key \"%s\"",
			                    cl_json_printable(sorted[i]->name,
			                                      strlen(sorted[i]->name), name,
			                                      sizeof(name)));
	return 0;
}

static int executor_request_validate(const struct cl_executor_request *req, struct cl_error *err)
{
	int r;

	if (!req->secret)
		return cl_error_set(err, -EINVAL, "secret: required");
	if (!req->secret[0])
		return cl_error_set(err, -EINVAL, "secret: empty");
	r = cl_message_check_length(req->secret, CL_MESSAGE_MAX_SECRET, "secret", err);
	if (r < 0)
		return r;
	if (!req->command)
		return cl_error_set(err, -EINVAL, "request.command: required");
	if (!req->command[0])
		return cl_error_set(err, -EINVAL, "request.command: empty");
	r = cl_message_check_length(req->command, CL_MESSAGE_MAX_PATH, "request.command", err);
	if (r < 0)
		return r;
	r = cl_message_check_strv(req->args, req->argc, 0, CL_MESSAGE_MAX_ARGC, "request.args",
	                          err);
	if (r < 0)
		return r;
	if (req->workdir) {
		r = cl_message_check_absolute_path(req->workdir, "request.workdir", err);
		if (r < 0)
			return r;
	}
	r = check_env_pairs(req->env, req->envc, err);
	if (r < 0)
		return r;
	if (req->timeout_ms < 1 || req->timeout_ms > CL_EXECUTOR_TIMEOUT_MAX_MS)
		return cl_error_set(err, -EINVAL,
		                    "request.timeout_ms: expected an integer in 1..%d",
		                    CL_EXECUTOR_TIMEOUT_MAX_MS);
	return 0;
}

static int get_env_object(const cJSON *obj, struct cl_executor_request *req, struct cl_error *err)
{
	const cJSON *item, *c;
	size_t n = 0, i = 0;
	char name[80];
	int r;

	r = get_field(obj, "env", "request.env", false, err, &item);
	if (r < 0 || !item)
		return r;
	if (!cJSON_IsObject(item))
		return cl_error_set(err, -EINVAL, "request.env: expected an object");
	for (c = item->child; c; c = c->next)
		if (++n > CL_MESSAGE_MAX_ENV)
			return cl_error_set(err, -E2BIG, "request.env: more than %d entries",
			                    CL_MESSAGE_MAX_ENV);
	if (n == 0)
		return 0;
	req->env = calloc(n, sizeof(*req->env));
	if (!req->env)
		return cl_error_set(err, -ENOMEM, "out of memory");
	for (c = item->child; c; c = c->next, i++) {
		if (!cJSON_IsString(c))
			return cl_error_set(err, -EINVAL, "request.env.%s: expected a string",
			                    cl_json_printable(c->string, strlen(c->string), name,
			                                      sizeof(name)));
		/* envc counts filled entries, so that the free function sees only those. */
		req->env[i].name = strdup(c->string);
		req->env[i].value = strdup(c->valuestring);
		req->envc = i + 1;
		if (!req->env[i].name || !req->env[i].value)
			return cl_error_set(err, -ENOMEM, "out of memory");
	}
	return 0;
}

int cl_executor_request_parse(const char *json, size_t len, struct cl_error *err,
                              struct cl_executor_request **ret_req)
{
	_cleanup_(cl_executor_request_freep) struct cl_executor_request *req = NULL;
	_cleanup_cjson_ cJSON *root = NULL;
	const cJSON *inner = NULL;
	int64_t timeout;
	int r;

	r = parse_root(json, len, CL_MESSAGE_MAX_INPUT, err, &root);
	if (r < 0)
		return r;
	req = calloc(1, sizeof(*req));
	if (!req)
		return cl_error_set(err, -ENOMEM, "out of memory");

	r = get_string(root, "secret", "secret", true, err, &req->secret);
	if (r < 0)
		return r;
	r = get_field(root, "request", "request", true, err, &inner);
	if (r < 0)
		return r;
	if (!cJSON_IsObject(inner))
		return cl_error_set(err, -EINVAL, "request: expected an object");
	r = get_string(inner, "command", "request.command", true, err, &req->command);
	if (r < 0)
		return r;
	r = get_string_array(inner, "args", "request.args", false, CL_MESSAGE_MAX_ARGC, err,
	                     &req->args, &req->argc);
	if (r < 0)
		return r;
	r = get_string(inner, "workdir", "request.workdir", false, err, &req->workdir);
	if (r < 0)
		return r;
	r = get_env_object(inner, req, err);
	if (r < 0)
		return r;
	r = get_integer(inner, "timeout_ms", "request.timeout_ms", false, 1,
	                CL_EXECUTOR_TIMEOUT_MAX_MS, CL_EXECUTOR_TIMEOUT_DEFAULT_MS, err, &timeout);
	if (r < 0)
		return r;
	req->timeout_ms = (uint32_t)timeout;

	r = executor_request_validate(req, err);
	if (r < 0)
		return r;
	*ret_req = TAKE_PTR(req);
	return 0;
}

static int executor_request_build(const struct cl_executor_request *req, cJSON *root)
{
	cJSON *inner, *a;

	ADD_OR_FAIL(cJSON_AddStringToObject(root, "secret", req->secret));
	inner = cJSON_AddObjectToObject(root, "request");
	ADD_OR_FAIL(inner);
	ADD_OR_FAIL(cJSON_AddStringToObject(inner, "command", req->command));
	a = req->argc > 0 ? cJSON_CreateStringArray((const char *const *)req->args, (int)req->argc)
	                  : cJSON_CreateArray();
	ADD_OR_FAIL(a);
	ADD_OR_FAIL(cJSON_AddItemToObject(inner, "args", a));
	if (req->workdir)
		ADD_OR_FAIL(cJSON_AddStringToObject(inner, "workdir", req->workdir));
	if (req->envc > 0) {
		a = cJSON_AddObjectToObject(inner, "env");
		ADD_OR_FAIL(a);
		for (size_t i = 0; i < req->envc; i++)
			ADD_OR_FAIL(
			        cJSON_AddStringToObject(a, req->env[i].name, req->env[i].value));
	}
	ADD_OR_FAIL(cJSON_AddNumberToObject(inner, "timeout_ms", req->timeout_ms));
	return 0;
}

int cl_executor_request_to_json(const struct cl_executor_request *req, struct cl_error *err,
                                char **ret_json)
{
	_cleanup_cjson_ cJSON *root = NULL;
	int r;

	r = executor_request_validate(req, err);
	if (r < 0)
		return r;
	root = cJSON_CreateObject();
	if (!root || executor_request_build(req, root) < 0)
		return cl_error_set(err, -ENOMEM, "out of memory");
	return print_root(root, CL_MESSAGE_MAX_INPUT, err, ret_json);
}

/* ---- executor response --------------------------------------------------------------------- */

static const char *const status_names[] = {
        [CL_EXECUTOR_COMPLETED] = "completed",
        [CL_EXECUTOR_TIMEOUT] = "timeout",
        [CL_EXECUTOR_ERROR] = "error",
};

void cl_executor_response_free(struct cl_executor_response *resp)
{
	if (!resp)
		return;
	free(resp->stdout_text);
	free(resp->stderr_text);
	free(resp->error);
	free(resp);
}

static int executor_response_validate(const struct cl_executor_response *resp, struct cl_error *err)
{
	int r;

	if ((unsigned)resp->status >= ELEMENTSOF(status_names))
		return cl_error_set(err, -EINVAL, "status: unknown value %d", (int)resp->status);
	if (resp->status == CL_EXECUTOR_ERROR) {
		if (!resp->error)
			return cl_error_set(err, -EINVAL, "error: required");
		return cl_message_check_length(resp->error, CL_EXECUTOR_MAX_ERROR, "error", err);
	}
	if (resp->stdout_text) {
		r = cl_message_check_length(resp->stdout_text, CL_EXECUTOR_MAX_OUTPUT, "stdout",
		                            err);
		if (r < 0)
			return r;
	}
	if (resp->stderr_text) {
		r = cl_message_check_length(resp->stderr_text, CL_EXECUTOR_MAX_OUTPUT, "stderr",
		                            err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* An optional string that defaults to "". */
static int get_output(const cJSON *root, const char *key, struct cl_error *err, char **ret)
{
	char *s = NULL;
	int r;

	r = get_string(root, key, key, false, err, &s);
	if (r < 0)
		return r;
	if (!s && !(s = strdup("")))
		return cl_error_set(err, -ENOMEM, "out of memory");
	*ret = s;
	return 0;
}

int cl_executor_response_parse(const char *json, size_t len, struct cl_error *err,
                               struct cl_executor_response **ret_resp)
{
	_cleanup_(cl_executor_response_freep) struct cl_executor_response *resp = NULL;
	_cleanup_cjson_ cJSON *root = NULL;
	const cJSON *status = NULL;
	int64_t code;
	size_t i;
	int r;

	r = parse_root(json, len, CL_EXECUTOR_RESPONSE_MAX_INPUT, err, &root);
	if (r < 0)
		return r;
	resp = calloc(1, sizeof(*resp));
	if (!resp)
		return cl_error_set(err, -ENOMEM, "out of memory");

	r = get_field(root, "status", "status", true, err, &status);
	if (r < 0)
		return r;
	for (i = 0; i < ELEMENTSOF(status_names); i++)
		if (cJSON_IsString(status) && strcmp(status->valuestring, status_names[i]) == 0)
			break;
	if (i == ELEMENTSOF(status_names))
		return cl_error_set(err, -EINVAL,
		                    "status: expected \"completed\", \"timeout\" or \"error\"");
	resp->status = (enum cl_executor_status)i;

	if (resp->status == CL_EXECUTOR_ERROR) {
		r = get_string(root, "error", "error", true, err, &resp->error);
		if (r < 0)
			return r;
	} else {
		r = get_integer(root, "exit_code", "exit_code", true, INT32_MIN, INT32_MAX, 0, err,
		                &code);
		if (r < 0)
			return r;
		resp->exit_code = (int32_t)code;
		r = get_output(root, "stdout", err, &resp->stdout_text);
		if (r < 0)
			return r;
		r = get_output(root, "stderr", err, &resp->stderr_text);
		if (r < 0)
			return r;
	}

	r = executor_response_validate(resp, err);
	if (r < 0)
		return r;
	*ret_resp = TAKE_PTR(resp);
	return 0;
}

static int executor_response_build(const struct cl_executor_response *resp, cJSON *root)
{
	ADD_OR_FAIL(cJSON_AddStringToObject(root, "status", status_names[resp->status]));
	if (resp->status == CL_EXECUTOR_ERROR) {
		ADD_OR_FAIL(cJSON_AddStringToObject(root, "error", resp->error));
		return 0;
	}
	ADD_OR_FAIL(cJSON_AddNumberToObject(root, "exit_code", resp->exit_code));
	ADD_OR_FAIL(cJSON_AddStringToObject(root, "stdout",
	                                    resp->stdout_text ? resp->stdout_text : ""));
	ADD_OR_FAIL(cJSON_AddStringToObject(root, "stderr",
	                                    resp->stderr_text ? resp->stderr_text : ""));
	return 0;
}

int cl_executor_response_to_json(const struct cl_executor_response *resp, struct cl_error *err,
                                 char **ret_json)
{
	_cleanup_cjson_ cJSON *root = NULL;
	int r;

	r = executor_response_validate(resp, err);
	if (r < 0)
		return r;
	root = cJSON_CreateObject();
	if (!root || executor_response_build(resp, root) < 0)
		return cl_error_set(err, -ENOMEM, "out of memory");
	return print_root(root, CL_EXECUTOR_RESPONSE_MAX_INPUT, err, ret_json);
}
