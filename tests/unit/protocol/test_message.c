/* Messages ⇄ JSON: round trips, and every kind of rejection with the field it names. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/cleanup.h"
#include "protocol/json_strict.h"
#include "protocol/message.h"

/* Test JSON is written with ' for " to stay readable; no case needs a literal '. */
static char *dq(const char *s)
{
	char *out = strdup(s);

	assert_non_null(out);
	for (char *p = out; *p; p++)
		if (*p == '\'')
			*p = '"';
	return out;
}

#define EXEC_VALID                                                        \
	"{'tool':'npm','argv':['npm','install','left pad'],'cwd':'/app'," \
	"'env':['PATH=/usr/bin','EMPTY=','X=a=b'],'uid':1000,'gid':100}"

struct failure {
	const char *json;
	int code;
	const char *msg;
};

static void test_exec_request_round_trips(void **state)
{
	_cleanup_free_ char *json = dq(EXEC_VALID), *out = NULL, *out2 = NULL;
	struct cl_exec_request *req = NULL, *again = NULL;
	struct cl_error err = {""};

	assert_int_equal(cl_exec_request_parse(json, strlen(json), &err, &req), 0);
	assert_string_equal(req->tool, "npm");
	assert_int_equal(req->argc, 3);
	assert_string_equal(req->argv[2], "left pad");
	assert_null(req->argv[3]);
	assert_string_equal(req->cwd, "/app");
	assert_int_equal(req->envc, 3);
	assert_string_equal(req->env[2], "X=a=b");
	assert_null(req->env[3]);
	assert_int_equal(req->uid, 1000);
	assert_int_equal(req->gid, 100);

	assert_int_equal(cl_exec_request_to_json(req, &err, &out), 0);
	assert_string_equal(out, json);
	assert_int_equal(cl_exec_request_parse(out, strlen(out), &err, &again), 0);
	assert_int_equal(cl_exec_request_to_json(again, &err, &out2), 0);
	assert_string_equal(out, out2);
	cl_exec_request_free(req);
	cl_exec_request_free(again);
	cl_exec_request_free(NULL);
}

static void test_exec_request_accepts_whitespace_unknown_fields_and_extremes(void **state)
{
	_cleanup_free_ char *json = dq(" {\n\t'future': {'x': [1, {'y': null}], 'z': true},"
	                               " 'tool': 'sh', 'argv': ['/bin/sh', 'h\\u00e9\\n'],"
	                               " 'cwd': '/', 'env': [], 'uid': 4294967294, 'gid': 0.0e5"
	                               "}\r\n ");
	struct cl_exec_request *req = NULL;
	struct cl_error err = {""};

	assert_int_equal(cl_exec_request_parse(json, strlen(json), &err, &req), 0);
	assert_string_equal(req->argv[1], "h\xc3\xa9\n");
	assert_int_equal(req->envc, 0);
	assert_non_null(req->env);
	assert_null(req->env[0]);
	assert_int_equal(req->uid, 4294967294u);
	assert_int_equal(req->gid, 0);
	cl_exec_request_free(req);
}

static void check_failures(const struct failure *cases, size_t n,
                           int (*parse)(const char *, size_t, struct cl_error *, void **),
                           void (*free_fn)(void *))
{
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *json = dq(cases[i].json);
		struct cl_error err = {""};
		void *msg = (void *)0x1;
		int r = parse(json, strlen(json), &err, &msg);

		if (r != cases[i].code || strcmp(err.msg, cases[i].msg) != 0)
			fail_msg("case %zu %s: got %d \"%s\", want %d \"%s\"", i, cases[i].json, r,
			         err.msg, cases[i].code, cases[i].msg);
		assert_ptr_equal(msg, (void *)0x1); /* untouched on failure */
	}
	(void)free_fn;
}

static int exec_parse(const char *j, size_t n, struct cl_error *e, void **ret)
{
	return cl_exec_request_parse(j, n, e, (struct cl_exec_request **)ret);
}

static int executor_parse(const char *j, size_t n, struct cl_error *e, void **ret)
{
	return cl_executor_request_parse(j, n, e, (struct cl_executor_request **)ret);
}

static int response_parse(const char *j, size_t n, struct cl_error *e, void **ret)
{
	return cl_executor_response_parse(j, n, e, (struct cl_executor_response **)ret);
}

#define E_ARGV "'argv':['a'],"
#define E_REST "'cwd':'/','env':[],'uid':1,'gid':1"

static void test_exec_request_rejections_name_the_field(void **state)
{
	static const struct failure cases[] = {
	        {"{}", -EINVAL, "tool: required"},
	        {"{'TOOL':'a'," E_ARGV E_REST "}", -EINVAL, "tool: required"},
	        {"{'tool':5," E_ARGV E_REST "}", -EINVAL, "tool: expected a string"},
	        {"{'tool':null," E_ARGV E_REST "}", -EINVAL, "tool: expected a string"},
	        {"{'tool':''," E_ARGV E_REST "}", -EINVAL,
	         "tool: expected a command name without '/'"},
	        {"{'tool':'../sh'," E_ARGV E_REST "}", -EINVAL,
	         "tool: expected a command name without '/'"},
	        {"{'tool':'..'," E_ARGV E_REST "}", -EINVAL,
	         "tool: expected a command name without '/'"},
	        {"{'tool':'a'," E_REST "}", -EINVAL, "argv: required"},
	        {"{'tool':'a','argv':'a b'," E_REST "}", -EINVAL,
	         "argv: expected an array of strings"},
	        {"{'tool':'a','argv':[]," E_REST "}", -EINVAL, "argv: expected at least 1 entry"},
	        {"{'tool':'a','argv':['a','b','c',4]," E_REST "}", -EINVAL,
	         "argv[3]: expected a string"},
	        {"{'tool':'a','argv':['a',null]," E_REST "}", -EINVAL,
	         "argv[1]: expected a string"},
	        {"{'tool':'a'," E_ARGV "'env':[],'uid':1,'gid':1}", -EINVAL, "cwd: required"},
	        {"{'tool':'a'," E_ARGV "'cwd':'app','env':[],'uid':1,'gid':1}", -EINVAL,
	         "cwd: expected an absolute path"},
	        {"{'tool':'a'," E_ARGV "'cwd':'','env':[],'uid':1,'gid':1}", -EINVAL,
	         "cwd: expected an absolute path"},
	        {"{'tool':'a'," E_ARGV "'cwd':'/','uid':1,'gid':1}", -EINVAL, "env: required"},
	        {"{'tool':'a'," E_ARGV "'cwd':'/','env':{'A':'b'},'uid':1,'gid':1}", -EINVAL,
	         "env: expected an array of strings"},
	        {"{'tool':'a'," E_ARGV "'cwd':'/','env':['A=1','NOVALUE'],'uid':1,'gid':1}",
	         -EINVAL, "env[1]: expected KEY=VALUE"},
	        {"{'tool':'a'," E_ARGV "'cwd':'/','env':['=x'],'uid':1,'gid':1}", -EINVAL,
	         "env[0]: expected KEY=VALUE"},
	        {"{'tool':'a'," E_ARGV "'cwd':'/','env':[],'gid':1}", -EINVAL, "uid: required"},
	        {"{'tool':'a'," E_ARGV "'cwd':'/','env':[],'uid':-1,'gid':1}", -EINVAL,
	         "uid: expected an integer in 0..4294967294"},
	        {"{'tool':'a'," E_ARGV "'cwd':'/','env':[],'uid':4294967295,'gid':1}", -EINVAL,
	         "uid: expected an integer in 0..4294967294"},
	        {"{'tool':'a'," E_ARGV "'cwd':'/','env':[],'uid':1.5,'gid':1}", -EINVAL,
	         "uid: expected an integer in 0..4294967294"},
	        {"{'tool':'a'," E_ARGV "'cwd':'/','env':[],'uid':'1000','gid':1}", -EINVAL,
	         "uid: expected an integer in 0..4294967294"},
	        {"{'tool':'a'," E_ARGV "'cwd':'/','env':[],'uid':true,'gid':1}", -EINVAL,
	         "uid: expected an integer in 0..4294967294"},
	        {"{'tool':'a'," E_ARGV "'cwd':'/','env':[],'uid':1,'gid':1e400}", -EINVAL,
	         "gid: expected an integer in 0..4294967294"},
	        /* NUL bytes, escaped, anywhere a string can be. */
	        {"{'tool':'a','argv':['a','b\\u0000c']," E_REST "}", -EINVAL,
	         "argv[1]: contains a NUL byte"},
	        {"{'tool':'a\\u0000'," E_ARGV E_REST "}", -EINVAL, "tool: contains a NUL byte"},
	        {"{'tool':'a'," E_ARGV "'cwd':'/tmp\\u0000/x','env':[],'uid':1,'gid':1}", -EINVAL,
	         "cwd: contains a NUL byte"},
	        {"{'tool':'a'," E_ARGV "'cwd':'/','env':['A=1','LD_PRELOAD=/x\\u0000'],"
	         "'uid':1,'gid':1}",
	         -EINVAL, "env[1]: contains a NUL byte"},
	        {"{'tool':'a'," E_ARGV E_REST ",'tool\\u0000x':'b'}", -EINVAL,
	         "a key contains a NUL byte"},
	        {"{'tool':'a'," E_ARGV E_REST ",'x':{'ok':1,'k\\u0000':2}}", -EINVAL,
	         "x: a key contains a NUL byte"},
	        {"{'tool':'a'," E_ARGV E_REST ",'x':[{'a':['\\u0000']}]}", -EINVAL,
	         "x[0].a[0]: contains a NUL byte"},
	        /* Structure. */
	        {"[]", -EINVAL, "expected a JSON object"},
	        {"'str'", -EINVAL, "expected a JSON object"},
	        {"", -EINVAL, "invalid JSON at byte 0: unexpected end of input"},
	        {"{'tool':'npm','tool':'sh'," E_ARGV E_REST "}", -EINVAL, "duplicate key \"tool\""},
	        {"{'tool':'a'," E_ARGV E_REST ",'x':{'b':{'c':1,'c':2}}}", -EINVAL,
	         "x.b: duplicate key \"c\""},
	        /* Keys are compared after escapes are decoded. */
	        {"{'tool':'a'," E_ARGV E_REST ",'\\u0074ool':'sh'}", -EINVAL,
	         "duplicate key \"tool\""},
	        {"{'tool':'a'," E_ARGV E_REST "} {}", -EINVAL,
	         "invalid JSON at byte 61: trailing data after the value"},
	        {"{'tool':'a'," E_ARGV E_REST ",}", -EINVAL,
	         "invalid JSON at byte 60: expected a key"},
	        {"{'tool':'a'," E_ARGV E_REST ",'x':[1,]}", -EINVAL,
	         "invalid JSON at byte 67: unexpected character"},
	        {"{'tool':'a'," E_ARGV E_REST ",'x':+1}", -EINVAL,
	         "invalid JSON at byte 64: unexpected character"},
	        {"{'tool':'a'," E_ARGV E_REST ",'x':01}", -EINVAL,
	         "invalid JSON at byte 65: expected ',' or '}'"},
	        {"{'tool':'a'," E_ARGV E_REST ",'x':'\\x'}", -EINVAL,
	         "invalid JSON at byte 65: bad escape"},
	        {"{'tool':'a'," E_ARGV E_REST ",'x':'\\ud800'}", -EINVAL,
	         "invalid JSON at byte 65: unpaired UTF-16 surrogate"},
	        {"{'tool':'a'," E_ARGV E_REST ",'x':tru}", -EINVAL,
	         "invalid JSON at byte 64: unexpected character"},
	        {"{'tool':'a'," E_ARGV E_REST ",'x':'unterminated}", -EINVAL,
	         "invalid JSON at byte 78: unterminated string"},
	        {"{'tool':'a'," E_ARGV E_REST ",'x':[[[[[[[[1]]]]]]]]}", -E2BIG,
	         "x[0][0][0][0][0][0][0]: nesting too deep"},
	};

	check_failures(cases, ELEMENTSOF(cases), exec_parse, NULL);
}

static void test_raw_nul_and_control_bytes_are_rejected(void **state)
{
	static const char raw_nul[] = "{\"tool\":\"a\",\"argv\":[\"a\0b\"]}";
	static const char raw_nul_key[] = "{\"to\0ol\":\"a\"}";
	static const char raw_tab[] = "{\"tool\":\"a\tb\"}";
	struct cl_exec_request *req = NULL;
	struct cl_error err = {""};

	assert_int_equal(cl_exec_request_parse(raw_nul, sizeof(raw_nul) - 1, &err, &req), -EINVAL);
	assert_string_equal(err.msg, "argv[0]: contains a NUL byte");
	assert_int_equal(cl_exec_request_parse(raw_nul_key, sizeof(raw_nul_key) - 1, &err, &req),
	                 -EINVAL);
	assert_string_equal(err.msg, "a key contains a NUL byte");
	assert_int_equal(cl_exec_request_parse(raw_tab, sizeof(raw_tab) - 1, &err, &req), -EINVAL);
	assert_string_equal(err.msg, "invalid JSON at byte 10: control character in a string");
	/* A NUL after the document is trailing data, not a terminator. */
	assert_int_equal(cl_exec_request_parse("{}\0", 3, &err, &req), -EINVAL);
	assert_string_equal(err.msg, "invalid JSON at byte 2: trailing data after the value");
	assert_null(req);
}

/* A valid exec request whose argv has argc copies of arg, plus extra env entries. */
static char *exec_json_with(size_t argc, const char *arg, size_t envc)
{
	size_t cap = 256 + argc * (strlen(arg) + 3) + envc * 16;
	char *s = malloc(cap);
	size_t n = 0;

	assert_non_null(s);
	n += (size_t)snprintf(s + n, cap - n,
	                      "{\"tool\":\"a\",\"cwd\":\"/\",\"uid\":1,\"gid\":1,"
	                      "\"argv\":[");
	for (size_t i = 0; i < argc; i++)
		n += (size_t)snprintf(s + n, cap - n, "%s\"%s\"", i ? "," : "", arg);
	n += (size_t)snprintf(s + n, cap - n, "],\"env\":[");
	for (size_t i = 0; i < envc; i++)
		n += (size_t)snprintf(s + n, cap - n, "%s\"K%zu=v\"", i ? "," : "", i);
	snprintf(s + n, cap - n, "]}");
	return s;
}

static void test_limits_are_enforced_with_their_numbers(void **state)
{
	struct cl_exec_request *req = NULL;
	struct cl_error err = {""};
	_cleanup_free_ char *big_arg = malloc(CL_MESSAGE_MAX_ARG_BYTES + 2);
	char *json;

	/* argc: at the limit passes, one more fails. */
	json = exec_json_with(CL_MESSAGE_MAX_ARGC, "x", 0);
	assert_int_equal(cl_exec_request_parse(json, strlen(json), &err, &req), 0);
	assert_int_equal(req->argc, CL_MESSAGE_MAX_ARGC);
	cl_exec_request_free(TAKE_PTR(req));
	free(json);
	json = exec_json_with(CL_MESSAGE_MAX_ARGC + 1, "x", 0);
	assert_int_equal(cl_exec_request_parse(json, strlen(json), &err, &req), -E2BIG);
	assert_string_equal(err.msg, "argv: more than 16384 entries");
	free(json);

	/* env entries. */
	json = exec_json_with(1, "x", CL_MESSAGE_MAX_ENV);
	assert_int_equal(cl_exec_request_parse(json, strlen(json), &err, &req), 0);
	cl_exec_request_free(TAKE_PTR(req));
	free(json);
	json = exec_json_with(1, "x", CL_MESSAGE_MAX_ENV + 1);
	assert_int_equal(cl_exec_request_parse(json, strlen(json), &err, &req), -E2BIG);
	assert_string_equal(err.msg, "env: more than 4096 entries");
	free(json);

	/* Bytes per argument. */
	assert_non_null(big_arg);
	memset(big_arg, 'a', CL_MESSAGE_MAX_ARG_BYTES);
	big_arg[CL_MESSAGE_MAX_ARG_BYTES] = '\0';
	json = exec_json_with(2, big_arg, 0);
	assert_int_equal(cl_exec_request_parse(json, strlen(json), &err, &req), 0);
	cl_exec_request_free(TAKE_PTR(req));
	free(json);
	strcat(big_arg, "a");
	json = exec_json_with(2, big_arg, 0);
	assert_int_equal(cl_exec_request_parse(json, strlen(json), &err, &req), -E2BIG);
	assert_string_equal(err.msg, "argv[0]: longer than 131072 bytes");
	free(json);

	/* Total input: checked before anything is parsed. */
	json = exec_json_with(9, big_arg, 0);
	assert_true(strlen(json) > CL_MESSAGE_MAX_INPUT);
	assert_int_equal(cl_exec_request_parse(json, strlen(json), &err, &req), -E2BIG);
	snprintf(big_arg, 128, "message of %zu bytes exceeds the 1048576-byte limit", strlen(json));
	assert_string_equal(err.msg, big_arg);
	free(json);
	assert_null(req);
}

static void test_deep_nesting_and_value_floods_are_bounded(void **state)
{
	size_t n = 100000;
	_cleanup_free_ char *json = malloc(2 * n + 64);
	struct cl_exec_request *req = NULL;
	struct cl_error err = {""};
	size_t len = 0;

	/* 100 000 levels: rejected at the ninth level, without recursion. */
	assert_non_null(json);
	for (size_t i = 0; i < n; i++)
		json[len++] = '[';
	for (size_t i = 0; i < n; i++)
		json[len++] = ']';
	assert_int_equal(cl_exec_request_parse(json, len, &err, &req), -E2BIG);
	assert_string_equal(err.msg, "[0][0][0][0][0][0][0][0]: nesting too deep");

	/* 100 000 values in one unknown field. */
	len = (size_t)sprintf(json, "{\"x\":[0");
	for (size_t i = 1; i < n; i++)
		len += (size_t)sprintf(json + len, ",0");
	len += (size_t)sprintf(json + len, "]}");
	assert_int_equal(cl_exec_request_parse(json, len, &err, &req), -E2BIG);
	assert_string_equal(err.msg, "x[65534]: too many values");
	assert_null(req);
}

static void test_exec_request_serializer_rejects_invalid_structs(void **state)
{
	char *argv[] = {"ls", NULL};
	char *env[] = {"NOEQUALS", NULL};
	struct cl_exec_request req = {
	        .tool = "ls",
	        .argv = argv,
	        .argc = 1,
	        .cwd = "/",
	        .env = NULL,
	        .envc = 0,
	};
	struct cl_error err = {""};
	char *out = NULL;

	assert_int_equal(cl_exec_request_to_json(&req, &err, &out), 0);
	assert_string_equal(out, "{\"tool\":\"ls\",\"argv\":[\"ls\"],\"cwd\":\"/\",\"env\":[],"
	                         "\"uid\":0,\"gid\":0}");
	free(TAKE_PTR(out));

	req.argc = 0;
	assert_int_equal(cl_exec_request_to_json(&req, &err, &out), -EINVAL);
	assert_string_equal(err.msg, "argv: expected at least 1 entry");
	req.argc = 1;
	req.env = env;
	req.envc = 1;
	assert_int_equal(cl_exec_request_to_json(&req, &err, &out), -EINVAL);
	assert_string_equal(err.msg, "env[0]: expected KEY=VALUE");
	req.envc = 0;
	req.uid = UINT32_MAX;
	assert_int_equal(cl_exec_request_to_json(&req, &err, &out), -EINVAL);
	assert_string_equal(err.msg, "uid: expected an integer in 0..4294967294");
	req.uid = 0;
	req.tool = "/bin/ls";
	assert_int_equal(cl_exec_request_to_json(&req, &err, &out), -EINVAL);
	req.tool = "ls";
	req.cwd = NULL;
	assert_int_equal(cl_exec_request_to_json(&req, &err, &out), -EINVAL);
	assert_string_equal(err.msg, "cwd: required");
	assert_null(out);
}

#define EXECUTOR_VALID                                                                         \
	"{'secret':'e7f2a1b9c4d8','request':{'command':'docker','args':['compose','up','-d']," \
	"'workdir':'/home/user/repos/my-api','env':{'DOCKER_HOST':'unix:///var/run/"           \
	"docker.sock'},'timeout_ms':300000}}"

static void test_executor_request_round_trips_the_reference_example(void **state)
{
	_cleanup_free_ char *json = dq(EXECUTOR_VALID), *out = NULL;
	struct cl_executor_request *req = NULL;
	struct cl_error err = {""};

	assert_int_equal(cl_executor_request_parse(json, strlen(json), &err, &req), 0);
	assert_string_equal(req->secret, "e7f2a1b9c4d8");
	assert_string_equal(req->command, "docker");
	assert_int_equal(req->argc, 3);
	assert_string_equal(req->args[2], "-d");
	assert_null(req->args[3]);
	assert_string_equal(req->workdir, "/home/user/repos/my-api");
	assert_int_equal(req->envc, 1);
	assert_string_equal(req->env[0].name, "DOCKER_HOST");
	assert_string_equal(req->env[0].value, "unix:///var/run/docker.sock");
	assert_int_equal(req->timeout_ms, 300000);
	assert_int_equal(cl_executor_request_to_json(req, &err, &out), 0);
	assert_string_equal(out, json);
	cl_executor_request_free(req);
	cl_executor_request_free(NULL);
}

static void test_executor_request_defaults_and_omissions(void **state)
{
	_cleanup_free_ char *json =
	        dq("{'secret':'s','request':{'command':'ls','workdir':null,'args':null}}");
	_cleanup_free_ char *expect =
	        dq("{'secret':'s','request':{'command':'ls','args':[],'timeout_ms':300000}}");
	_cleanup_free_ char *out = NULL;
	struct cl_executor_request *req = NULL;
	struct cl_error err = {""};

	assert_int_equal(cl_executor_request_parse(json, strlen(json), &err, &req), 0);
	assert_int_equal(req->argc, 0);
	assert_null(req->workdir);
	assert_int_equal(req->envc, 0);
	assert_int_equal(req->timeout_ms, CL_EXECUTOR_TIMEOUT_DEFAULT_MS);
	assert_int_equal(cl_executor_request_to_json(req, &err, &out), 0);
	assert_string_equal(out, expect);
	cl_executor_request_free(req);
}

#define X_REQ(inner) "{'secret':'s','request':{'command':'ls'" inner "}}"

static void test_executor_request_rejections_name_the_field(void **state)
{
	static const struct failure cases[] = {
	        {"{'request':{'command':'ls'}}", -EINVAL, "secret: required"},
	        {"{'secret':'','request':{'command':'ls'}}", -EINVAL, "secret: empty"},
	        {"{'secret':1,'request':{'command':'ls'}}", -EINVAL, "secret: expected a string"},
	        {"{'secret':'s'}", -EINVAL, "request: required"},
	        {"{'secret':'s','request':['ls']}", -EINVAL, "request: expected an object"},
	        {"{'secret':'s','request':{}}", -EINVAL, "request.command: required"},
	        {"{'secret':'s','request':{'command':''}}", -EINVAL, "request.command: empty"},
	        {X_REQ(",'args':'-l'"), -EINVAL, "request.args: expected an array of strings"},
	        {X_REQ(",'args':['-l',{}]"), -EINVAL, "request.args[1]: expected a string"},
	        {X_REQ(",'args':['-l','\\u0000']"), -EINVAL,
	         "request.args[1]: contains a NUL byte"},
	        {X_REQ(",'workdir':'rel'"), -EINVAL, "request.workdir: expected an absolute path"},
	        {X_REQ(",'workdir':'/a\\u0000b'"), -EINVAL, "request.workdir: contains a NUL byte"},
	        {X_REQ(",'env':['A=b']"), -EINVAL, "request.env: expected an object"},
	        {X_REQ(",'env':{'A':1}"), -EINVAL, "request.env.A: expected a string"},
	        {X_REQ(",'env':{'A=B':'c'}"), -EINVAL,
	         "request.env: invalid name \"A=B\" (empty or with '=')"},
	        {X_REQ(",'env':{'':'c'}"), -EINVAL,
	         "request.env: invalid name \"\" (empty or with '=')"},
	        {X_REQ(",'env':{'A':'1','A':'2'}"), -EINVAL, "request.env: duplicate key \"A\""},
	        {X_REQ(",'env':{'A':'1','B\\u0000':'2'}"), -EINVAL,
	         "request.env: a key contains a NUL byte"},
	        {X_REQ(",'env':{'PATH':'/bin\\u0000:/evil'}"), -EINVAL,
	         "request.env.PATH: contains a NUL byte"},
	        {X_REQ(",'timeout_ms':0"), -EINVAL,
	         "request.timeout_ms: expected an integer in 1..86400000"},
	        {X_REQ(",'timeout_ms':86400001"), -EINVAL,
	         "request.timeout_ms: expected an integer in 1..86400000"},
	        {X_REQ(",'timeout_ms':'5'"), -EINVAL,
	         "request.timeout_ms: expected an integer in 1..86400000"},
	        {"{'secret':'s\\u0000','request':{'command':'ls'}}", -EINVAL,
	         "secret: contains a NUL byte"},
	};

	check_failures(cases, ELEMENTSOF(cases), executor_parse, NULL);
}

static void test_executor_request_serializer_rejects_duplicate_env_names(void **state)
{
	struct cl_env_pair env[] = {{"A", "1"}, {"B", "2"}, {"A", "3"}};
	struct cl_executor_request req = {
	        .secret = "s",
	        .command = "ls",
	        .env = env,
	        .envc = 3,
	        .timeout_ms = 1,
	};
	struct cl_error err = {""};
	char *out = NULL;

	assert_int_equal(cl_executor_request_to_json(&req, &err, &out), -EINVAL);
	assert_string_equal(err.msg, "request.env: duplicate key \"A\"");
	req.envc = 2;
	req.timeout_ms = 0;
	assert_int_equal(cl_executor_request_to_json(&req, &err, &out), -EINVAL);
	assert_string_equal(err.msg, "request.timeout_ms: expected an integer in 1..86400000");
	req.timeout_ms = 5;
	assert_int_equal(cl_executor_request_to_json(&req, &err, &out), 0);
	assert_string_equal(out, "{\"secret\":\"s\",\"request\":{\"command\":\"ls\",\"args\":[],"
	                         "\"env\":{\"A\":\"1\",\"B\":\"2\"},\"timeout_ms\":5}}");
	free(out);
}

static void test_executor_responses_have_the_reference_shapes(void **state)
{
	static const char *const shapes[] = {
	        "{'status':'completed','exit_code':0,'stdout':'Container my-api-db-1  Started\\n',"
	        "'stderr':''}",
	        "{'status':'timeout','exit_code':-1,'stdout':'partial output...','stderr':''}",
	        "{'status':'error','error':'invalid secret'}",
	        "{'status':'error','error':'exec: \\'nonexistent\\': executable file not found'}",
	};

	for (size_t i = 0; i < ELEMENTSOF(shapes); i++) {
		_cleanup_free_ char *json = dq(shapes[i]), *out = NULL;
		struct cl_executor_response *resp = NULL;
		struct cl_error err = {""};

		assert_int_equal(cl_executor_response_parse(json, strlen(json), &err, &resp), 0);
		assert_int_equal(cl_executor_response_to_json(resp, &err, &out), 0);
		assert_string_equal(out, json);
		cl_executor_response_free(resp);
	}
	cl_executor_response_free(NULL);
}

static void test_executor_response_defaults_and_ignored_fields(void **state)
{
	_cleanup_free_ char *json = dq("{'status':'completed','exit_code':3,'error':'ignored'}");
	_cleanup_free_ char *expect =
	        dq("{'status':'completed','exit_code':3,'stdout':'','stderr':''}");
	_cleanup_free_ char *out = NULL;
	struct cl_executor_response *resp = NULL;
	struct cl_error err = {""};

	assert_int_equal(cl_executor_response_parse(json, strlen(json), &err, &resp), 0);
	assert_int_equal(resp->status, CL_EXECUTOR_COMPLETED);
	assert_int_equal(resp->exit_code, 3);
	assert_string_equal(resp->stdout_text, "");
	assert_null(resp->error);
	assert_int_equal(cl_executor_response_to_json(resp, &err, &out), 0);
	assert_string_equal(out, expect);
	cl_executor_response_free(resp);
}

static void test_executor_response_rejections_name_the_field(void **state)
{
	static const struct failure cases[] = {
	        {"{}", -EINVAL, "status: required"},
	        {"{'status':'ok'}", -EINVAL,
	         "status: expected \"completed\", \"timeout\" or \"error\""},
	        {"{'status':1}", -EINVAL,
	         "status: expected \"completed\", \"timeout\" or \"error\""},
	        {"{'status':'Completed','exit_code':0}", -EINVAL,
	         "status: expected \"completed\", \"timeout\" or \"error\""},
	        {"{'status':'completed'}", -EINVAL, "exit_code: required"},
	        {"{'status':'completed','exit_code':2147483648}", -EINVAL,
	         "exit_code: expected an integer in -2147483648..2147483647"},
	        {"{'status':'timeout','exit_code':-2147483649}", -EINVAL,
	         "exit_code: expected an integer in -2147483648..2147483647"},
	        {"{'status':'completed','exit_code':0,'stdout':1}", -EINVAL,
	         "stdout: expected a string"},
	        {"{'status':'completed','exit_code':0,'stdout':'a\\u0000b'}", -EINVAL,
	         "stdout: contains a NUL byte"},
	        {"{'status':'completed','exit_code':0,'stderr':[]}", -EINVAL,
	         "stderr: expected a string"},
	        {"{'status':'error'}", -EINVAL, "error: required"},
	        {"{'status':'error','error':null}", -EINVAL, "error: expected a string"},
	        {"{'status':'error','status':'completed','error':'x'}", -EINVAL,
	         "duplicate key \"status\""},
	};

	check_failures(cases, ELEMENTSOF(cases), response_parse, NULL);
}

static void test_executor_response_output_limit(void **state)
{
	_cleanup_free_ char *text = malloc(CL_EXECUTOR_MAX_OUTPUT + 2);
	struct cl_executor_response resp = {.status = CL_EXECUTOR_COMPLETED};
	struct cl_executor_response *back = NULL;
	struct cl_error err = {""};
	char *out = NULL;

	/* 1 MiB of control characters: escaped 6x, still within the input limit. */
	assert_non_null(text);
	memset(text, '\x01', CL_EXECUTOR_MAX_OUTPUT);
	text[CL_EXECUTOR_MAX_OUTPUT] = '\0';
	resp.stdout_text = text;
	resp.stderr_text = text;
	assert_int_equal(cl_executor_response_to_json(&resp, &err, &out), 0);
	assert_int_equal(cl_executor_response_parse(out, strlen(out), &err, &back), 0);
	assert_string_equal(back->stdout_text, text);
	cl_executor_response_free(back);
	free(TAKE_PTR(out));

	strcat(text, "x");
	assert_int_equal(cl_executor_response_to_json(&resp, &err, &out), -E2BIG);
	assert_string_equal(err.msg, "stdout: longer than 1048576 bytes");
	assert_null(out);
}

static void test_exec_request_token_is_optional_and_round_trips(void **state)
{
	_cleanup_free_ char *with = dq("{'tool':'ls','argv':['ls'],'cwd':'/','env':[],'uid':0,"
	                               "'gid':0,'token':'s3cr\\\"t'}");
	_cleanup_free_ char *empty = dq("{'tool':'ls','argv':['ls'],'cwd':'/','env':[],'uid':0,"
	                                "'gid':0,'token':''}");
	_cleanup_free_ char *out = NULL;
	struct cl_exec_request *req = NULL;
	struct cl_error err = {""};

	assert_int_equal(cl_exec_request_parse(with, strlen(with), &err, &req), 0);
	assert_string_equal(req->token, "s3cr\"t");
	assert_int_equal(cl_exec_request_to_json(req, &err, &out), 0);
	assert_string_equal(out, with);
	cl_exec_request_free(TAKE_PTR(req));

	assert_int_equal(cl_exec_request_parse(empty, strlen(empty), &err, &req), -EINVAL);
	assert_string_equal(err.msg, "token: empty");
	assert_null(req);
}

/* The serializer does not use cJSON (the static shim links it alone); it must print exactly
 * what cJSON prints for the same tree, control bytes, quotes and high bytes included. */
static void test_exec_request_writer_matches_cjson_byte_for_byte(void **state)
{
	char *argv[] = {"a\"b\\c", "\x01\x1f\b\f\n\r\t", "\x7f\xc3\xa9\xff", "", "x y", NULL};
	char *env[] = {"K=v=\"w\"", "E=", NULL};
	struct cl_exec_request req = {.tool = "t\x7f",
	                              .argv = argv,
	                              .argc = 5,
	                              .cwd = "/a b\n",
	                              .env = env,
	                              .envc = 2,
	                              .uid = 4294967294u,
	                              .gid = 0,
	                              .token = "tok\x02"};
	_cleanup_free_ char *ours = NULL, *theirs = NULL;
	_cleanup_cjson_ cJSON *root = NULL;
	struct cl_error err = {""};

	assert_int_equal(cl_exec_request_to_json(&req, &err, &ours), 0);
	assert_int_equal(cl_json_parse_strict(ours, strlen(ours), 8, 100, &err, &root), 0);
	theirs = cJSON_PrintUnformatted(root);
	assert_non_null(theirs);
	assert_string_equal(ours, theirs);

	req.token = NULL;
	req.envc = 0;
	req.env = NULL;
	free(TAKE_PTR(ours));
	assert_int_equal(cl_exec_request_to_json(&req, &err, &ours), 0);
	assert_non_null(strstr(ours, ",\"env\":[],\"uid\":4294967294,\"gid\":0}"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_exec_request_round_trips),
	        cmocka_unit_test(test_exec_request_accepts_whitespace_unknown_fields_and_extremes),
	        cmocka_unit_test(test_exec_request_rejections_name_the_field),
	        cmocka_unit_test(test_raw_nul_and_control_bytes_are_rejected),
	        cmocka_unit_test(test_limits_are_enforced_with_their_numbers),
	        cmocka_unit_test(test_deep_nesting_and_value_floods_are_bounded),
	        cmocka_unit_test(test_exec_request_serializer_rejects_invalid_structs),
	        cmocka_unit_test(test_exec_request_token_is_optional_and_round_trips),
	        cmocka_unit_test(test_exec_request_writer_matches_cjson_byte_for_byte),
	        cmocka_unit_test(test_executor_request_round_trips_the_reference_example),
	        cmocka_unit_test(test_executor_request_defaults_and_omissions),
	        cmocka_unit_test(test_executor_request_rejections_name_the_field),
	        cmocka_unit_test(test_executor_request_serializer_rejects_duplicate_env_names),
	        cmocka_unit_test(test_executor_responses_have_the_reference_shapes),
	        cmocka_unit_test(test_executor_response_defaults_and_ignored_fields),
	        cmocka_unit_test(test_executor_response_rejections_name_the_field),
	        cmocka_unit_test(test_executor_response_output_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
