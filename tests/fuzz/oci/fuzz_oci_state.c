/* libFuzzer target: the container state an OCI runtime sends (oci/oci_state.h).
 *
 * Byte 0 selects: even, a seccomp agent message; odd, a plain state (a hook's stdin). Every
 * input also goes through oci_message_length(), and a parsed state through
 * oci_state_identity(). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oci/oci_state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cl_error err = {{0}};
	struct oci_state *s = NULL;
	struct oci_identity id;
	const char *json;
	int len, r;

	if (size < 1)
		return 0;
	json = (const char *)data + 1;
	len = oci_message_length(json, size - 1);
	if (len > 0 && (size_t)len > size - 1)
		abort();
	if (data[0] & 1)
		r = oci_state_parse(json, size - 1, &err, &s);
	else
		r = oci_process_state_parse(json, size - 1, &err, &s);
	if (r < 0) {
		if (s || !memchr(err.msg, '\0', sizeof(err.msg)))
			abort();
		return 0;
	}
	if (!s->id || !*s->id)
		abort();
	if (!(data[0] & 1) && (s->seccomp_fd_index < 0 || (size_t)s->seccomp_fd_index >= s->n_fds))
		abort();
	if (oci_state_identity(s, &id, &err) == 0 && (!id.name[0] || strlen(id.name) > 128))
		abort();
	oci_state_free(s);
	return 0;
}
