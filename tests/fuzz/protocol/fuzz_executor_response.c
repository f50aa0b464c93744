/* Executor response parser: accepted input round-trips exactly; rejections carry a message. */
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
	struct cl_executor_response *resp = NULL, *again = NULL;
	char *json = NULL, *json2 = NULL;
	struct cl_error err = {""};
	int r;

	if (cl_executor_response_parse((const char *)data, size, &err, &resp) < 0) {
		assert(err.msg[0] != '\0' && resp == NULL);
		return 0;
	}
	if (resp->status == CL_EXECUTOR_ERROR)
		assert(resp->error && !resp->stdout_text && !resp->stderr_text);
	else
		assert(!resp->error && resp->stdout_text && resp->stderr_text);

	r = cl_executor_response_to_json(resp, &err, &json);
	assert(r == 0);
	r = cl_executor_response_parse(json, strlen(json), &err, &again);
	assert(r == 0);
	assert(resp->status == again->status);
	assert(resp->status == CL_EXECUTOR_ERROR || resp->exit_code == again->exit_code);
	assert(same_string(resp->stdout_text, again->stdout_text));
	assert(same_string(resp->stderr_text, again->stderr_text));
	assert(same_string(resp->error, again->error));
	r = cl_executor_response_to_json(again, &err, &json2);
	assert(r == 0 && strcmp(json, json2) == 0);

	free(json);
	free(json2);
	cl_executor_response_free(resp);
	cl_executor_response_free(again);
	return 0;
}
