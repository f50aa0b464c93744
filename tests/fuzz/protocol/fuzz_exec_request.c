/* Exec request parser: whatever it accepts must serialize, parse back equal, and serialize to
 * the same bytes as before and as cJSON prints them; whatever it rejects must come with a message.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "protocol/message.h"
#include "protocol/quote.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void assert_strv_equal(char **a, char **b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		assert(strcmp(a[i], b[i]) == 0);
	assert(a[n] == NULL && b[n] == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cl_exec_request *req = NULL, *again = NULL;
	char *json = NULL, *json2 = NULL, *command = NULL, *printed;
	cJSON *parsed;
	struct cl_error err = {""};
	int r;

	if (cl_exec_request_parse((const char *)data, size, &err, &req) < 0) {
		assert(err.msg[0] != '\0' && req == NULL);
		return 0;
	}
	assert(req->argc >= 1 && req->cwd[0] == '/' && req->uid != UINT32_MAX);

	r = cl_exec_request_to_json(req, &err, &json);
	assert(r == 0);
	r = cl_exec_request_parse(json, strlen(json), &err, &again);
	assert(r == 0);
	assert(strcmp(req->tool, again->tool) == 0);
	assert(req->argc == again->argc);
	assert_strv_equal(req->argv, again->argv, req->argc);
	assert(strcmp(req->cwd, again->cwd) == 0);
	assert(req->envc == again->envc);
	assert_strv_equal(req->env, again->env, req->envc);
	assert(req->uid == again->uid && req->gid == again->gid);
	assert((!req->token && !again->token) ||
	       (req->token && again->token && strcmp(req->token, again->token) == 0));
	r = cl_exec_request_to_json(again, &err, &json2);
	assert(r == 0 && strcmp(json, json2) == 0);

	/* The serializer writes JSON by hand (no cJSON in the static shim): cJSON must print the
	 * same bytes from the tree it parses. */
	parsed = cJSON_Parse(json);
	assert(parsed);
	printed = cJSON_PrintUnformatted(parsed);
	assert(printed && strcmp(printed, json) == 0);
	cJSON_Delete(parsed);
	free(printed);

	/* Accepted arguments never contain NUL, so quoting can only hit its size limits. */
	r = cl_quote_strv((const char *const *)req->argv, req->argc, &err, &command);
	assert(r == 0 || r == -E2BIG);

	free(command);
	free(json);
	free(json2);
	cl_exec_request_free(req);
	cl_exec_request_free(again);
	return 0;
}
