/* Executor request parser: accepted input round-trips exactly; rejections carry a message. */
#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/message.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same_string(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cl_executor_request *req = NULL, *again = NULL;
	char *json = NULL, *json2 = NULL;
	struct cl_error err = {""};
	int r;

	if (cl_executor_request_parse((const char *)data, size, &err, &req) < 0) {
		assert(err.msg[0] != '\0' && req == NULL);
		return 0;
	}
	assert(req->secret[0] && req->command[0]);
	assert(req->timeout_ms >= 1 && req->timeout_ms <= CL_EXECUTOR_TIMEOUT_MAX_MS);
	assert(!req->workdir || req->workdir[0] == '/');

	r = cl_executor_request_to_json(req, &err, &json);
	assert(r == 0);
	r = cl_executor_request_parse(json, strlen(json), &err, &again);
	assert(r == 0);
	assert(same_string(req->secret, again->secret));
	assert(same_string(req->command, again->command));
	assert(req->argc == again->argc);
	for (size_t i = 0; i < req->argc; i++)
		assert(same_string(req->args[i], again->args[i]));
	assert(!req->args || req->args[req->argc] == NULL);
	assert(same_string(req->workdir, again->workdir));
	assert(req->envc == again->envc);
	for (size_t i = 0; i < req->envc; i++) {
		assert(same_string(req->env[i].name, again->env[i].name));
		assert(same_string(req->env[i].value, again->env[i].value));
		assert(req->env[i].name[0] && !strchr(req->env[i].name, '='));
	}
	assert(req->timeout_ms == again->timeout_ms);
	r = cl_executor_request_to_json(again, &err, &json2);
	assert(r == 0 && strcmp(json, json2) == 0);

	free(json);
	free(json2);
	cl_executor_request_free(req);
	cl_executor_request_free(again);
	return 0;
}
