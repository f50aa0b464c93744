#include "protocol/oci_hook.h"

#include <errno.h>
#include <string.h>

size_t oci_hook_reply_format(bool ok, const char *msg, char *buf)
{
	size_t n = 0;

	buf[0] = ok ? 0 : 1;
	if (msg)
		for (; msg[n] && n < OCI_HOOK_MAX_REPLY_MSG; n++)
			buf[1 + n] = (msg[n] == '\n' || msg[n] == '\r') ? ' ' : msg[n];
	return 1 + n;
}

int oci_hook_reply_parse(const char *buf, size_t len, char *msg)
{
	size_t n;

	if (len == 0)
		return -EBADMSG;
	n = len - 1 > OCI_HOOK_MAX_REPLY_MSG ? OCI_HOOK_MAX_REPLY_MSG : len - 1;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)buf[1 + i];

		msg[i] = (c >= 0x20 && c != 0x7f) ? (char)c : '?';
	}
	msg[n] = '\0';
	return buf[0] == 0 ? 1 : 0;
}
