/* The container state an OCI runtime sends us (pure: no I/O), and who the container is.
 *
 * Two shapes arrive:
 *   - the seccomp agent message (runtime-spec "ContainerProcessState"), sent to the seccomp
 *     profile's listenerPath once per process that gets the filter (the container's init at
 *     create, each `runc exec` later), with the fds that "fds" names over SCM_RIGHTS:
 *       {"ociVersion","fds":["seccompFd"],"pid":P,"metadata":"…","state":{STATE}}
 *   - the plain STATE a hook reads on its stdin:
 *       {"ociVersion","id","status","pid","bundle","annotations":{…}}
 *
 * The bytes come from the runtime, which the agent inside the container does not control, but
 * the annotations and metadata come from whoever wrote the container's config: both are parsed
 * strictly (protocol/json_strict.h: no NUL bytes, no duplicate keys) and bounded.
 *
 * Who the container is (oci_state_identity): the cloister name and project, read from
 *   1. listenerMetadata, a short list of key=value pairs separated by ';':
 *        "name=web-agent;project=shop"   (keys: name, project; others are ignored)
 *   2. the annotations "org.cloister.name" and "org.cloister.project";
 *   3. else the name is the container id, and there is no project.
 * Each field is taken from the first source that sets it. Names and projects are 1..128 of
 * [A-Za-z0-9._+@-], not starting with '.', without "..": config_project_name_check()'s rule (a
 * project names projects/<project>.yaml), which runc's container ids ([A-Za-z0-9_+.-]) meet
 * unless they start with '.' or hold "..". */
#ifndef CLOISTER_NOTIFIER_OCI_STATE_H
#define CLOISTER_NOTIFIER_OCI_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/cleanup.h"
#include "base/error.h"

#define OCI_STATE_MAX_BYTES    (64 * 1024) /* one message */
#define OCI_MAX_FDS            8           /* entries of "fds" */
#define OCI_MAX_ANNOTATIONS    64
#define OCI_MAX_STRING_BYTES   4096 /* bundle, metadata, an annotation value */
#define OCI_MAX_KEY_BYTES      256  /* an annotation key */
#define OCI_MAX_ID_BYTES       1024 /* container id, ociVersion, fd names */
#define OCI_MAX_NAME_BYTES     128  /* a cloister name or project */
#define OCI_ANNOTATION_NAME    "org.cloister.name"
#define OCI_ANNOTATION_PROJECT "org.cloister.project"
#define OCI_SECCOMP_FD_NAME    "seccompFd"

enum oci_status {
	OCI_STATUS_CREATING,
	OCI_STATUS_CREATED,
	OCI_STATUS_RUNNING,
	OCI_STATUS_STOPPED,
};

struct oci_annotation {
	char *key;
	char *value;
};

struct oci_state {
	char *oci_version; /* of the message itself */
	/* The process the message is about: the one that got the seccomp filter (the
	 * container's init, or a `runc exec` process), or in a plain state the init. */
	pid_t pid;
	/* Seccomp agent message only: */
	char *metadata;       /* listenerMetadata; NULL when absent or empty */
	size_t n_fds;         /* entries of "fds": the message carries this many fds */
	int seccomp_fd_index; /* index of "seccompFd" in "fds"; -1 in a plain state */
	/* The container (the inner "state" object, or the whole plain state): */
	char *id;
	enum oci_status status;
	pid_t container_pid; /* the container's init; 0 when the runtime gave none (stopped) */
	char *bundle;        /* NULL when absent */
	struct oci_annotation *annotations;
	size_t n_annotations;
};

void oci_state_free(struct oci_state *s);
CL_DEFINE_TRIVIAL_CLEANUP(struct oci_state *, oci_state_free)

/* Parse a seccomp agent message (len ≤ OCI_STATE_MAX_BYTES, not necessarily NUL-terminated).
 * "fds" must name "seccompFd" exactly once (its index is how the caller finds the fd among
 * the ones received) and hold at most OCI_MAX_FDS names. Returns 0 and *ret; -EINVAL with a
 * message naming the field; -E2BIG past a bound; -ENOMEM. */
int oci_process_state_parse(const char *buf, size_t len, struct cl_error *err,
                            struct oci_state **ret);

/* Parse a plain state (what a hook reads on stdin). Same returns. */
int oci_state_parse(const char *buf, size_t len, struct cl_error *err, struct oci_state **ret);

/* The value of annotation KEY, or NULL. */
const char *oci_state_annotation(const struct oci_state *s, const char *key);

/* "creating", "created", "running", "stopped". */
const char *oci_status_name(enum oci_status status);

/* A stream socket may deliver a message in pieces: the length of the JSON object at the start
 * of buf once it is complete (> 0), 0 while more bytes are needed, -EINVAL when buf does not
 * start with '{' (after whitespace), -E2BIG when len reaches OCI_STATE_MAX_BYTES without a
 * complete object. Only brackets, strings and escapes are tracked: the parser checks the rest. */
int oci_message_length(const char *buf, size_t len);

enum oci_name_source {
	OCI_FROM_METADATA,
	OCI_FROM_ANNOTATION,
	OCI_FROM_ID,  /* name only */
	OCI_FROM_NONE /* project only: no project */
};

struct oci_identity {
	char name[OCI_MAX_NAME_BYTES + 1];
	char project[OCI_MAX_NAME_BYTES + 1]; /* "" when none */
	enum oci_name_source name_source, project_source;
};

/* Who the container is (see the top of this file). -EINVAL with a message for malformed
 * metadata ("project=" empty, a pair without '=', a key given twice) or a name/project outside
 * the allowed characters, including a container id that cannot serve as a name. */
int oci_state_identity(const struct oci_state *s, struct oci_identity *ret, struct cl_error *err);

/* Is value a valid cloister name (is_project false) or project (rules above; the same rule,
 * only the message differs)? 0 or -EINVAL with a message. */
int oci_name_check(const char *value, bool is_project, struct cl_error *err);

#endif
