/* oci_state: the messages runc 1.1.5 sends (captured here, verbatim), bounds, bad input, and
 * who a container is. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oci/oci_state.h"

/* Captured from runc 1.1.5 on this machine: `runc run` (the init's filter), `runc exec` into
 * the running container, and a createRuntime hook's stdin. */
static const char runc_create_msg[] =
        "{\"ociVersion\":\"1.0.2-dev\",\"fds\":[\"seccompFd\"],\"pid\":25116,\"metadata\":"
        "\"name=x;project=y\",\"state\":{\"ociVersion\":\"1.0.2-dev\",\"id\":\"t2\",\"status\":"
        "\"creating\",\"pid\":25116,\"bundle\":\"/tmp/ocix/b\",\"annotations\":{\"org.cloister."
        "name\":\"demo\"}}}";
static const char runc_exec_msg[] =
        "{\"ociVersion\":\"1.0.2-dev\",\"fds\":[\"seccompFd\"],\"pid\":25140,\"metadata\":"
        "\"name=x;project=y\",\"state\":{\"ociVersion\":\"1.0.2-dev\",\"id\":\"t2\",\"status\":"
        "\"running\",\"pid\":25116,\"bundle\":\"/tmp/ocix/b\",\"annotations\":{\"org.cloister."
        "name\":\"demo\"}}}";
static const char runc_hook_state[] =
        "{\"ociVersion\":\"1.0.2-dev\",\"id\":\"t2\",\"status\":\"creating\",\"pid\":25116,"
        "\"bundle\":\"/tmp/ocix/b\",\"annotations\":{\"org.cloister.name\":\"demo\"}}";

static int parse_msg(const char *s, struct oci_state **ret, struct cl_error *err)
{
	return oci_process_state_parse(s, strlen(s), err, ret);
}

static void test_runc_create_message(void **state)
{
	struct cl_error err = {{0}};
	struct oci_state *s = NULL;

	assert_int_equal(parse_msg(runc_create_msg, &s, &err), 0);
	assert_string_equal(s->oci_version, "1.0.2-dev");
	assert_int_equal(s->pid, 25116);
	assert_int_equal(s->container_pid, 25116);
	assert_int_equal(s->n_fds, 1);
	assert_int_equal(s->seccomp_fd_index, 0);
	assert_string_equal(s->metadata, "name=x;project=y");
	assert_string_equal(s->id, "t2");
	assert_int_equal(s->status, OCI_STATUS_CREATING);
	assert_string_equal(s->bundle, "/tmp/ocix/b");
	assert_int_equal(s->n_annotations, 1);
	assert_string_equal(oci_state_annotation(s, "org.cloister.name"), "demo");
	assert_null(oci_state_annotation(s, "org.cloister.project"));
	oci_state_free(s);
}

static void test_runc_exec_message_is_about_the_new_process(void **state)
{
	struct cl_error err = {{0}};
	struct oci_state *s = NULL;

	assert_int_equal(parse_msg(runc_exec_msg, &s, &err), 0);
	assert_int_equal(s->status, OCI_STATUS_RUNNING);
	assert_int_equal(s->pid, 25140);           /* the exec'd process */
	assert_int_equal(s->container_pid, 25116); /* the container's init */
	assert_string_equal(oci_status_name(s->status), "running");
	oci_state_free(s);
}

static void test_hook_state(void **state)
{
	struct cl_error err = {{0}};
	struct oci_state *s = NULL;

	assert_int_equal(oci_state_parse(runc_hook_state, strlen(runc_hook_state), &err, &s), 0);
	assert_int_equal(s->pid, 25116);
	assert_int_equal(s->container_pid, 25116);
	assert_int_equal(s->seccomp_fd_index, -1);
	assert_null(s->metadata);
	assert_string_equal(s->id, "t2");
	assert_int_equal(s->status, OCI_STATUS_CREATING);
	oci_state_free(s);

	/* A plain state is not an agent message, and the other way round. */
	assert_int_equal(parse_msg(runc_hook_state, &s, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "fds"));
	assert_int_equal(oci_state_parse(runc_create_msg, strlen(runc_create_msg), &err, &s),
	                 -EINVAL);
}

static void test_seccomp_fd_index_among_several_fds(void **state)
{
	struct cl_error err = {{0}};
	struct oci_state *s = NULL;
	const char *m = "{\"ociVersion\":\"1.2.0\",\"fds\":[\"pidFd\",\"seccompFd\"],\"pid\":7,"
	                "\"state\":{\"ociVersion\":\"1.2.0\",\"id\":\"c\",\"status\":\"created\","
	                "\"pid\":7}}";

	assert_int_equal(parse_msg(m, &s, &err), 0);
	assert_int_equal(s->n_fds, 2);
	assert_int_equal(s->seccomp_fd_index, 1);
	assert_null(s->metadata);
	assert_null(s->bundle);
	assert_int_equal(s->n_annotations, 0);
	oci_state_free(s);
}

struct bad_case {
	const char *json;
	int code;
	const char *msg_part;
};

static void test_bad_messages_are_refused_naming_the_field(void **state)
{
	static const struct bad_case cases[] = {
	        {"", -EINVAL, NULL},
	        {"[]", -EINVAL, "not an object"},
	        {"{\"ociVersion\":\"1\",\"pid\":1,\"state\":{}}", -EINVAL, "fds: missing"},
	        {"{\"ociVersion\":\"1\",\"fds\":[],\"pid\":1,\"state\":{}}", -EINVAL, "seccompFd"},
	        {"{\"ociVersion\":\"1\",\"fds\":[\"seccompFd\",\"seccompFd\"],\"pid\":1,"
	         "\"state\":{}}",
	         -EINVAL, "twice"},
	        {"{\"ociVersion\":\"1\",\"fds\":[1],\"pid\":1,\"state\":{}}", -EINVAL,
	         "fds[0]: not a string"},
	        {"{\"ociVersion\":\"1\",\"fds\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\","
	         "\"seccompFd\"],\"pid\":1,\"state\":{}}",
	         -E2BIG, "more than 8"},
	        {"{\"ociVersion\":\"1\",\"fds\":[\"seccompFd\"],\"pid\":-1,\"state\":{}}", -EINVAL,
	         "pid: not a pid"},
	        {"{\"ociVersion\":\"1\",\"fds\":[\"seccompFd\"],\"pid\":1.5,\"state\":{}}", -EINVAL,
	         "pid: not a pid"},
	        {"{\"ociVersion\":\"1\",\"fds\":[\"seccompFd\"],\"pid\":0,\"state\":{}}", -EINVAL,
	         "pid: not a pid"},
	        {"{\"ociVersion\":\"1\",\"fds\":[\"seccompFd\"],\"pid\":\"1\",\"state\":{}}",
	         -EINVAL, "pid: not a number"},
	        {"{\"ociVersion\":\"1\",\"fds\":[\"seccompFd\"],\"pid\":1e12,\"state\":{}}",
	         -EINVAL, "pid: not a pid"},
	        {"{\"ociVersion\":\"1\",\"fds\":[\"seccompFd\"],\"pid\":1}", -EINVAL,
	         "state: missing"},
	        {"{\"ociVersion\":\"1\",\"fds\":[\"seccompFd\"],\"pid\":1,\"state\":{\"id\":\"c\","
	         "\"status\":\"paused\",\"pid\":1}}",
	         -EINVAL, "state.status: unknown"},
	        {"{\"ociVersion\":\"1\",\"fds\":[\"seccompFd\"],\"pid\":1,\"state\":{\"id\":\"\","
	         "\"status\":\"running\",\"pid\":1}}",
	         -EINVAL, "state.id: empty"},
	        {"{\"ociVersion\":\"1\",\"fds\":[\"seccompFd\"],\"pid\":1,\"state\":{\"id\":\"c\","
	         "\"status\":\"running\"}}",
	         -EINVAL, "state.pid: missing"},
	        {"{\"ociVersion\":\"1\",\"fds\":[\"seccompFd\"],\"pid\":1,\"state\":{\"id\":\"c\","
	         "\"status\":\"running\",\"pid\":1,\"annotations\":[]}}",
	         -EINVAL, "state.annotations: not an object"},
	        {"{\"ociVersion\":\"1\",\"fds\":[\"seccompFd\"],\"pid\":1,\"state\":{\"id\":\"c\","
	         "\"status\":\"running\",\"pid\":1,\"annotations\":{\"a\":1}}}",
	         -EINVAL, "state.annotations.a: not a string"},
	        /* Strictness from json_strict: a NUL escape, a duplicate key, trailing bytes. */
	        {"{\"ociVersion\":\"1\",\"fds\":[\"seccompFd\"],\"pid\":1,\"metadata\":"
	         "\"a\\u0000\","
	         "\"state\":{\"id\":\"c\",\"status\":\"running\",\"pid\":1}}",
	         -EINVAL, NULL},
	        {"{\"ociVersion\":\"1\",\"fds\":[\"seccompFd\"],\"pid\":1,\"pid\":2,"
	         "\"state\":{\"id\":\"c\",\"status\":\"running\",\"pid\":1}}",
	         -EINVAL, NULL},
	        {"{\"ociVersion\":\"1\",\"fds\":[\"seccompFd\"],\"pid\":1,"
	         "\"state\":{\"id\":\"c\",\"status\":\"running\",\"pid\":1}}x",
	         -EINVAL, NULL},
	        /* Too deep: an annotation value that is an object. */
	        {"{\"ociVersion\":\"1\",\"fds\":[\"seccompFd\"],\"pid\":1,\"state\":{\"id\":\"c\","
	         "\"status\":\"running\",\"pid\":1,\"annotations\":{\"a\":{\"b\":\"c\"}}}}",
	         -E2BIG, NULL},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct cl_error err = {{0}};
		struct oci_state *s = NULL;
		int r = parse_msg(cases[i].json, &s, &err);

		if (r != cases[i].code)
			fail_msg("case %zu: got %d (%s), want %d", i, r, err.msg, cases[i].code);
		assert_null(s);
		if (cases[i].msg_part && !strstr(err.msg, cases[i].msg_part))
			fail_msg("case %zu: message \"%s\" lacks \"%s\"", i, err.msg,
			         cases[i].msg_part);
	}
}

static void test_bounds_on_size_and_annotations(void **state)
{
	struct cl_error err = {{0}};
	struct oci_state *s = NULL;
	char *big = malloc(OCI_STATE_MAX_BYTES + 2);
	size_t n;
	char *m;

	memset(big, ' ', OCI_STATE_MAX_BYTES + 1);
	big[0] = '{';
	big[OCI_STATE_MAX_BYTES] = '}';
	assert_int_equal(oci_process_state_parse(big, OCI_STATE_MAX_BYTES + 1, &err, &s), -E2BIG);
	free(big);

	/* 65 annotations: one over. */
	m = malloc(8192);
	n = (size_t)snprintf(m, 8192,
	                     "{\"ociVersion\":\"1\",\"fds\":[\"seccompFd\"],\"pid\":1,\"state\":"
	                     "{\"id\":\"c\",\"status\":\"running\",\"pid\":1,\"annotations\":{");
	for (int i = 0; i <= OCI_MAX_ANNOTATIONS; i++)
		n += (size_t)snprintf(m + n, 8192 - n, "%s\"k%d\":\"v\"", i ? "," : "", i);
	n += (size_t)snprintf(m + n, 8192 - n, "}}}");
	assert_int_equal(oci_process_state_parse(m, n, &err, &s), -E2BIG);
	assert_non_null(strstr(err.msg, "annotations"));
	free(m);

	/* A bundle path longer than the bound. */
	m = malloc(OCI_MAX_STRING_BYTES + 256);
	n = (size_t)snprintf(m, 256,
	                     "{\"ociVersion\":\"1\",\"id\":\"c\",\"status\":\"running\",\"pid\":1,"
	                     "\"bundle\":\"/");
	memset(m + n, 'b', OCI_MAX_STRING_BYTES);
	n += OCI_MAX_STRING_BYTES;
	memcpy(m + n, "\"}", 2);
	assert_int_equal(oci_state_parse(m, n + 2, &err, &s), -E2BIG);
	assert_non_null(strstr(err.msg, "bundle"));
	free(m);
}

static void test_message_length_waits_for_the_whole_object(void **state)
{
	const char *m = runc_create_msg;
	size_t len = strlen(m);

	for (size_t i = 0; i < len; i++)
		assert_int_equal(oci_message_length(m, i), 0);
	assert_int_equal(oci_message_length(m, len), (int)len);
	/* Braces inside strings and escaped quotes do not count. */
	assert_int_equal(oci_message_length("{\"a\":\"}\\\"}\"}", 12), 12);
	assert_int_equal(oci_message_length("  {}{", 5), 4);
	assert_int_equal(oci_message_length("x{}", 3), -EINVAL);
	assert_int_equal(oci_message_length("{}}", 3), 2); /* the rest is refused by the parser */
	assert_int_equal(oci_message_length("   ", 3), 0);
}

static struct oci_state *state_with(const char *metadata, const char *name_ann,
                                    const char *project_ann, const char *id)
{
	char m[2048];
	struct cl_error err = {{0}};
	struct oci_state *s = NULL;
	int n;

	n = snprintf(m, sizeof(m), "{\"ociVersion\":\"1\",\"fds\":[\"seccompFd\"],\"pid\":1,");
	if (metadata)
		n += snprintf(m + n, sizeof(m) - n, "\"metadata\":\"%s\",", metadata);
	n += snprintf(m + n, sizeof(m) - n,
	              "\"state\":{\"id\":\"%s\",\"status\":\"running\",\"pid\":1,\"annotations\":{",
	              id);
	if (name_ann)
		n += snprintf(m + n, sizeof(m) - n, "\"org.cloister.name\":\"%s\"%s", name_ann,
		              project_ann ? "," : "");
	if (project_ann)
		n += snprintf(m + n, sizeof(m) - n, "\"org.cloister.project\":\"%s\"", project_ann);
	n += snprintf(m + n, sizeof(m) - n, "}}}");
	if (oci_process_state_parse(m, (size_t)n, &err, &s) < 0)
		fail_msg("parse: %s", err.msg);
	return s;
}

static void test_identity_from_metadata_then_annotations_then_id(void **state)
{
	struct cl_error err = {{0}};
	struct oci_identity id;
	struct oci_state *s;

	s = state_with("name=web-agent;project=shop", "ann", "annproj", "c1");
	assert_int_equal(oci_state_identity(s, &id, &err), 0);
	assert_string_equal(id.name, "web-agent");
	assert_string_equal(id.project, "shop");
	assert_int_equal(id.name_source, OCI_FROM_METADATA);
	assert_int_equal(id.project_source, OCI_FROM_METADATA);
	oci_state_free(s);

	/* Per field: the metadata gives the project, an annotation the name. */
	s = state_with("project=shop;other=x", "ann", NULL, "c1");
	assert_int_equal(oci_state_identity(s, &id, &err), 0);
	assert_string_equal(id.name, "ann");
	assert_int_equal(id.name_source, OCI_FROM_ANNOTATION);
	assert_string_equal(id.project, "shop");
	oci_state_free(s);

	s = state_with(NULL, NULL, "p2", "my_container.1");
	assert_int_equal(oci_state_identity(s, &id, &err), 0);
	assert_string_equal(id.name, "my_container.1");
	assert_int_equal(id.name_source, OCI_FROM_ID);
	assert_string_equal(id.project, "p2");
	assert_int_equal(id.project_source, OCI_FROM_ANNOTATION);
	oci_state_free(s);

	s = state_with("", NULL, NULL, "c9");
	assert_int_equal(oci_state_identity(s, &id, &err), 0);
	assert_string_equal(id.name, "c9");
	assert_string_equal(id.project, "");
	assert_int_equal(id.project_source, OCI_FROM_NONE);
	oci_state_free(s);
}

static void test_identity_refuses_bad_names(void **state)
{
	static const struct {
		const char *metadata, *name_ann, *project_ann, *id, *msg_part;
	} cases[] = {
	        {"name=", NULL, NULL, "c", "name is empty"},
	        {"name=a;name=b", NULL, NULL, "c", "given twice"},
	        {"justtext", NULL, NULL, "c", "pairs"},
	        {"project=../etc", NULL, NULL, "c", "starts with '.'"},
	        {"project=a/b", NULL, NULL, "c", "may only contain"},
	        {"project=a;b", NULL, NULL, "c", "pairs"},
	        {"name=x\\\\y", NULL, NULL, "c", "may only contain"},
	        {NULL, "a b", NULL, "c", "org.cloister.name"},
	        {NULL, NULL, "x..y", "c", "org.cloister.project"},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct cl_error err = {{0}};
		struct oci_identity id;
		struct oci_state *s = state_with(cases[i].metadata, cases[i].name_ann,
		                                 cases[i].project_ann, cases[i].id);

		if (oci_state_identity(s, &id, &err) != -EINVAL)
			fail_msg("case %zu: accepted", i);
		if (!strstr(err.msg, cases[i].msg_part))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.msg, cases[i].msg_part);
		oci_state_free(s);
	}
	assert_int_equal(oci_name_check("a_b+c@d-e.f", true, NULL), 0);
	assert_int_equal(oci_name_check("a:b", false, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_runc_create_message),
	        cmocka_unit_test(test_runc_exec_message_is_about_the_new_process),
	        cmocka_unit_test(test_hook_state),
	        cmocka_unit_test(test_seccomp_fd_index_among_several_fds),
	        cmocka_unit_test(test_bad_messages_are_refused_naming_the_field),
	        cmocka_unit_test(test_bounds_on_size_and_annotations),
	        cmocka_unit_test(test_message_length_waits_for_the_whole_object),
	        cmocka_unit_test(test_identity_from_metadata_then_annotations_then_id),
	        cmocka_unit_test(test_identity_refuses_bad_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
