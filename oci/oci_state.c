#include "oci/oci_state.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "protocol/json_strict.h"

/* Containers only count: message → state → annotations. */
#define OCI_MAX_DEPTH  3
#define OCI_MAX_VALUES (OCI_MAX_ANNOTATIONS + OCI_MAX_FDS + 64)

void oci_state_free(struct oci_state *s)
{
	if (!s)
		return;
	free(s->oci_version);
	free(s->metadata);
	free(s->id);
	free(s->bundle);
	for (size_t i = 0; i < s->n_annotations; i++) {
		free(s->annotations[i].key);
		free(s->annotations[i].value);
	}
	free(s->annotations);
	free(s);
}

const char *oci_status_name(enum oci_status status)
{
	switch (status) {
	case OCI_STATUS_CREATING:
		return "creating";
	case OCI_STATUS_CREATED:
		return "created";
	case OCI_STATUS_RUNNING:
		return "running";
	case OCI_STATUS_STOPPED:
		return "stopped";
	}
	return "unknown";
}

const char *oci_state_annotation(const struct oci_state *s, const char *key)
{
	for (size_t i = 0; i < s->n_annotations; i++)
		if (strcmp(s->annotations[i].key, key) == 0)
			return s->annotations[i].value;
	return NULL;
}

/* A string member: required or not, 1..max bytes (0 allowed when allow_empty). */
static int get_string(const cJSON *obj, const char *prefix, const char *key, bool required,
                      size_t max, bool allow_empty, struct cl_error *err, char **ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	size_t len;
	char *copy;

	if (!v || cJSON_IsNull(v)) {
		if (required)
			return cl_error_set(err, -EINVAL, "%s%s: missing", prefix, key);
		*ret = NULL;
		return 0;
	}
	if (!cJSON_IsString(v))
		return cl_error_set(err, -EINVAL, "%s%s: not a string", prefix, key);
	len = strlen(v->valuestring);
	if (len > max)
		return cl_error_set(err, -E2BIG, "%s%s: longer than %zu bytes", prefix, key, max);
	if (len == 0 && !allow_empty)
		return cl_error_set(err, -EINVAL, "%s%s: empty", prefix, key);
	copy = strdup(v->valuestring);
	if (!copy)
		return -ENOMEM;
	*ret = copy;
	return 0;
}

/* A pid member: an integer in 1..INT_MAX (0 accepted when allow_zero or absent and not
 * required). */
static int get_pid(const cJSON *obj, const char *prefix, const char *key, bool required,
                   struct cl_error *err, pid_t *ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	double d;

	if (!v) {
		if (required)
			return cl_error_set(err, -EINVAL, "%s%s: missing", prefix, key);
		*ret = 0;
		return 0;
	}
	if (!cJSON_IsNumber(v))
		return cl_error_set(err, -EINVAL, "%s%s: not a number", prefix, key);
	d = v->valuedouble;
	if (!(d >= 0 && d <= INT_MAX) || floor(d) != d)
		return cl_error_set(err, -EINVAL, "%s%s: not a pid", prefix, key);
	if (d == 0 && required)
		return cl_error_set(err, -EINVAL, "%s%s: not a pid", prefix, key);
	*ret = (pid_t)d;
	return 0;
}

static int parse_status(const cJSON *obj, const char *prefix, struct cl_error *err,
                        enum oci_status *ret)
{
	static const enum oci_status all[] = {OCI_STATUS_CREATING, OCI_STATUS_CREATED,
	                                      OCI_STATUS_RUNNING, OCI_STATUS_STOPPED};
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "status");
	char buf[64];

	if (!v)
		return cl_error_set(err, -EINVAL, "%sstatus: missing", prefix);
	if (!cJSON_IsString(v))
		return cl_error_set(err, -EINVAL, "%sstatus: not a string", prefix);
	for (size_t i = 0; i < ELEMENTSOF(all); i++)
		if (strcmp(v->valuestring, oci_status_name(all[i])) == 0) {
			*ret = all[i];
			return 0;
		}
	return cl_error_set(
	        err, -EINVAL, "%sstatus: unknown \"%s\"", prefix,
	        cl_json_printable(v->valuestring, strlen(v->valuestring), buf, sizeof(buf)));
}

static int parse_annotations(const cJSON *obj, const char *prefix, struct cl_error *err,
                             struct oci_state *s)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, "annotations");
	const cJSON *it;
	size_t n = 0;

	if (!a || cJSON_IsNull(a))
		return 0;
	if (!cJSON_IsObject(a))
		return cl_error_set(err, -EINVAL, "%sannotations: not an object", prefix);
	cJSON_ArrayForEach(it, a) n++;
	if (n > OCI_MAX_ANNOTATIONS)
		return cl_error_set(err, -E2BIG, "%sannotations: more than %d", prefix,
		                    OCI_MAX_ANNOTATIONS);
	if (n == 0)
		return 0;
	s->annotations = calloc(n, sizeof(*s->annotations));
	if (!s->annotations)
		return -ENOMEM;
	cJSON_ArrayForEach(it, a)
	{
		struct oci_annotation *an = &s->annotations[s->n_annotations];
		char buf[64];
		size_t klen = strlen(it->string);

		if (klen == 0 || klen > OCI_MAX_KEY_BYTES)
			return cl_error_set(err, -EINVAL,
			                    "%sannotations: a key is empty or longer "
			                    "than %d bytes",
			                    prefix, OCI_MAX_KEY_BYTES);
		cl_json_printable(it->string, klen, buf, sizeof(buf));
		if (!cJSON_IsString(it))
			return cl_error_set(err, -EINVAL, "%sannotations.%s: not a string", prefix,
			                    buf);
		if (strlen(it->valuestring) > OCI_MAX_STRING_BYTES)
			return cl_error_set(err, -E2BIG, "%sannotations.%s: longer than %d bytes",
			                    prefix, buf, OCI_MAX_STRING_BYTES);
		an->key = strdup(it->string);
		an->value = strdup(it->valuestring);
		s->n_annotations++; /* freed with s even when one strdup failed */
		if (!an->key || !an->value)
			return -ENOMEM;
	}
	return 0;
}

/* The container part: the plain state, or the agent message's "state". */
static int parse_container(const cJSON *obj, const char *prefix, struct cl_error *err,
                           struct oci_state *s)
{
	int r;

	if (!cJSON_IsObject(obj))
		return cl_error_set(err, -EINVAL, "%s: not an object",
		                    *prefix ? "state" : "message");
	r = get_string(obj, prefix, "id", true, OCI_MAX_ID_BYTES, false, err, &s->id);
	if (r < 0)
		return r;
	r = parse_status(obj, prefix, err, &s->status);
	if (r < 0)
		return r;
	/* The spec: pid is REQUIRED when status is created or running on Linux. */
	r = get_pid(obj, prefix, "pid",
	            s->status == OCI_STATUS_CREATED || s->status == OCI_STATUS_RUNNING ||
	                    s->status == OCI_STATUS_CREATING,
	            err, &s->container_pid);
	if (r < 0)
		return r;
	r = get_string(obj, prefix, "bundle", false, OCI_MAX_STRING_BYTES, false, err, &s->bundle);
	if (r < 0)
		return r;
	return parse_annotations(obj, prefix, err, s);
}

static int parse_root(const char *buf, size_t len, struct cl_error *err, cJSON **ret)
{
	cJSON *root = NULL;
	int r;

	if (len > OCI_STATE_MAX_BYTES)
		return cl_error_set(err, -E2BIG, "message: longer than %d bytes",
		                    OCI_STATE_MAX_BYTES);
	r = cl_json_parse_strict(buf, len, OCI_MAX_DEPTH, OCI_MAX_VALUES, err, &root);
	if (r < 0)
		return r;
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return cl_error_set(err, -EINVAL, "message: not an object");
	}
	*ret = root;
	return 0;
}

int oci_state_parse(const char *buf, size_t len, struct cl_error *err, struct oci_state **ret)
{
	_cleanup_cjson_ cJSON *root = NULL;
	_cleanup_(oci_state_freep) struct oci_state *s = NULL;
	int r;

	r = parse_root(buf, len, err, &root);
	if (r < 0)
		return r;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->seccomp_fd_index = -1;
	r = get_string(root, "", "ociVersion", true, OCI_MAX_ID_BYTES, false, err, &s->oci_version);
	if (r < 0)
		return r;
	r = parse_container(root, "", err, s);
	if (r < 0)
		return r;
	s->pid = s->container_pid;
	*ret = TAKE_PTR(s);
	return 0;
}

int oci_process_state_parse(const char *buf, size_t len, struct cl_error *err,
                            struct oci_state **ret)
{
	_cleanup_cjson_ cJSON *root = NULL;
	_cleanup_(oci_state_freep) struct oci_state *s = NULL;
	const cJSON *fds, *it;
	int r;

	r = parse_root(buf, len, err, &root);
	if (r < 0)
		return r;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->seccomp_fd_index = -1;
	r = get_string(root, "", "ociVersion", true, OCI_MAX_ID_BYTES, false, err, &s->oci_version);
	if (r < 0)
		return r;

	fds = cJSON_GetObjectItemCaseSensitive(root, "fds");
	if (!fds)
		return cl_error_set(err, -EINVAL, "fds: missing");
	if (!cJSON_IsArray(fds))
		return cl_error_set(err, -EINVAL, "fds: not an array");
	cJSON_ArrayForEach(it, fds)
	{
		if (s->n_fds == OCI_MAX_FDS)
			return cl_error_set(err, -E2BIG, "fds: more than %d", OCI_MAX_FDS);
		if (!cJSON_IsString(it))
			return cl_error_set(err, -EINVAL, "fds[%zu]: not a string", s->n_fds);
		if (strlen(it->valuestring) > OCI_MAX_ID_BYTES)
			return cl_error_set(err, -E2BIG, "fds[%zu]: too long", s->n_fds);
		if (strcmp(it->valuestring, OCI_SECCOMP_FD_NAME) == 0) {
			if (s->seccomp_fd_index >= 0)
				return cl_error_set(err, -EINVAL, "fds: \"%s\" named twice",
				                    OCI_SECCOMP_FD_NAME);
			s->seccomp_fd_index = (int)s->n_fds;
		}
		s->n_fds++;
	}
	if (s->seccomp_fd_index < 0)
		return cl_error_set(err, -EINVAL, "fds: no \"%s\"", OCI_SECCOMP_FD_NAME);

	r = get_pid(root, "", "pid", true, err, &s->pid);
	if (r < 0)
		return r;
	r = get_string(root, "", "metadata", false, OCI_MAX_STRING_BYTES, true, err, &s->metadata);
	if (r < 0)
		return r;
	if (s->metadata && !*s->metadata) {
		free(s->metadata);
		s->metadata = NULL;
	}
	it = cJSON_GetObjectItemCaseSensitive(root, "state");
	if (!it)
		return cl_error_set(err, -EINVAL, "state: missing");
	r = parse_container(it, "state.", err, s);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(s);
	return 0;
}

int oci_message_length(const char *buf, size_t len)
{
	size_t i = 0, depth = 0;
	bool in_string = false, escape = false;

	while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
		i++;
	if (i == len)
		return len >= OCI_STATE_MAX_BYTES ? -E2BIG : 0;
	if (buf[i] != '{')
		return -EINVAL;
	for (; i < len && i < OCI_STATE_MAX_BYTES; i++) {
		char c = buf[i];

		if (in_string) {
			if (escape)
				escape = false;
			else if (c == '\\')
				escape = true;
			else if (c == '"')
				in_string = false;
			continue;
		}
		if (c == '"')
			in_string = true;
		else if (c == '{' || c == '[')
			depth++;
		else if (c == '}' || c == ']') {
			if (depth == 0)
				return -EINVAL;
			if (--depth == 0)
				return (int)(i + 1);
		}
	}
	return len >= OCI_STATE_MAX_BYTES ? -E2BIG : 0;
}

int oci_name_check(const char *value, bool is_project, struct cl_error *err)
{
	const char *what = is_project ? "project" : "name";
	size_t len = strlen(value);
	char buf[64];

	if (len == 0)
		return cl_error_set(err, -EINVAL, "%s is empty", what);
	if (len > OCI_MAX_NAME_BYTES)
		return cl_error_set(err, -EINVAL, "%s is longer than %d characters", what,
		                    OCI_MAX_NAME_BYTES);
	cl_json_printable(value, len, buf, sizeof(buf));
	if (value[0] == '.')
		return cl_error_set(err, -EINVAL, "%s \"%s\" starts with '.'", what, buf);
	if (strstr(value, ".."))
		return cl_error_set(err, -EINVAL, "%s \"%s\" contains \"..\"", what, buf);
	for (const char *p = value; *p; p++) {
		char c = *p;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    strchr("._+@-", c))
			continue;
		return cl_error_set(err, -EINVAL,
		                    "%s \"%s\" may only contain letters, digits and ._+@-", what,
		                    buf);
	}
	return 0;
}

/* Copy one value of the metadata ("name=web;project=shop") into out, checked. */
static int metadata_value(const char *key, const char *start, size_t len, bool is_project,
                          char *out, struct cl_error *err)
{
	if (len > OCI_MAX_NAME_BYTES)
		return cl_error_set(err, -EINVAL,
		                    "listenerMetadata: %s is longer than %d characters", key,
		                    OCI_MAX_NAME_BYTES);
	if (*out)
		return cl_error_set(err, -EINVAL, "listenerMetadata: %s given twice", key);
	memcpy(out, start, len);
	out[len] = '\0';
	if (len == 0)
		return cl_error_set(err, -EINVAL, "listenerMetadata: %s is empty", key);
	return oci_name_check(out, is_project, err);
}

static int parse_metadata(const char *md, char *name, char *project, struct cl_error *err)
{
	const char *p = md;

	while (*p) {
		const char *end = strchr(p, ';'), *eq;
		size_t len;

		if (!end)
			end = p + strlen(p);
		len = (size_t)(end - p);
		if (len > 0) {
			eq = memchr(p, '=', len);
			if (!eq)
				return cl_error_set(
				        err, -EINVAL,
				        "listenerMetadata: \"key=value\" pairs separated "
				        "by ';' expected");
			if ((size_t)(eq - p) == 4 && memcmp(p, "name", 4) == 0) {
				int r = metadata_value("name", eq + 1, (size_t)(end - eq - 1),
				                       false, name, err);
				if (r < 0)
					return r;
			} else if ((size_t)(eq - p) == 7 && memcmp(p, "project", 7) == 0) {
				int r = metadata_value("project", eq + 1, (size_t)(end - eq - 1),
				                       true, project, err);
				if (r < 0)
					return r;
			}
			/* Other keys belong to other readers of the metadata. */
		}
		p = *end ? end + 1 : end;
	}
	return 0;
}

int oci_state_identity(const struct oci_state *s, struct oci_identity *ret, struct cl_error *err)
{
	struct oci_identity id = {.name_source = OCI_FROM_NONE, .project_source = OCI_FROM_NONE};
	const char *a;
	int r;

	if (s->metadata) {
		r = parse_metadata(s->metadata, id.name, id.project, err);
		if (r < 0)
			return r;
		if (*id.name)
			id.name_source = OCI_FROM_METADATA;
		if (*id.project)
			id.project_source = OCI_FROM_METADATA;
	}
	a = oci_state_annotation(s, OCI_ANNOTATION_NAME);
	if (!*id.name && a) {
		r = oci_name_check(a, false, err);
		if (r < 0) {
			cl_error_prefix(err, "annotation %s", OCI_ANNOTATION_NAME);
			return r;
		}
		strcpy(id.name, a);
		id.name_source = OCI_FROM_ANNOTATION;
	}
	a = oci_state_annotation(s, OCI_ANNOTATION_PROJECT);
	if (!*id.project && a) {
		r = oci_name_check(a, true, err);
		if (r < 0) {
			cl_error_prefix(err, "annotation %s", OCI_ANNOTATION_PROJECT);
			return r;
		}
		strcpy(id.project, a);
		id.project_source = OCI_FROM_ANNOTATION;
	}
	if (!*id.name) {
		r = oci_name_check(s->id, false, err);
		if (r < 0) {
			cl_error_prefix(err, "container id");
			return r;
		}
		strcpy(id.name, s->id);
		id.name_source = OCI_FROM_ID;
	}
	*ret = id;
	return 0;
}
