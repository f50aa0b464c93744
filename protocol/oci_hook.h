/* Between cloister-oci-hook (an OCI createRuntime hook) and the supervisor, over a unix
 * SOCK_SEQPACKET socket (one send is one message):
 *
 *   hook → supervisor   the OCI state the hook read on stdin (≤ OCI_HOOK_MAX_STATE bytes), with
 *                       the container's network namespace (an fd of /proc/PID/ns/net) attached
 *                       by SCM_RIGHTS;
 *   supervisor → hook   the reply: one status byte (0: the netns is ready, anything else: it is
 *                       not) and up to OCI_HOOK_MAX_REPLY_MSG bytes saying why, no NUL.
 *
 * The hook exits non-zero on a failed reply, no reply within its timeout, or any other error,
 * and the runtime then fails the container's start: egress is set up before the container's
 * process runs, or the container does not run. */
#ifndef CLOISTER_PROTOCOL_OCI_HOOK_H
#define CLOISTER_PROTOCOL_OCI_HOOK_H

#include <stdbool.h>
#include <stddef.h>

#define OCI_HOOK_MAX_STATE     (64 * 1024)
#define OCI_HOOK_MAX_REPLY_MSG 255
#define OCI_HOOK_REPLY_MAX     (1 + OCI_HOOK_MAX_REPLY_MSG)
#define OCI_HOOK_SOCKET_ENV    "CLOISTER_HOOK_SOCKET"
#define OCI_HOOK_SOCKET        "/run/cloister/hook.sock"
/* Where serve listens for runc's seccomp agent messages (the profile's listenerPath). */
#define OCI_SECCOMP_SOCKET "/run/cloister/seccomp.sock"

/* Write the reply for ok (true) or a failure with msg (cut to OCI_HOOK_MAX_REPLY_MSG bytes,
 * newlines become spaces) into buf[OCI_HOOK_REPLY_MAX]. Returns its length. */
size_t oci_hook_reply_format(bool ok, const char *msg, char *buf);

/* Read a reply: 1 ok, 0 failed (msg, NUL-terminated, says why), -EBADMSG for an empty one.
 * msg must hold OCI_HOOK_MAX_REPLY_MSG + 1 bytes; non-printable bytes become '?'. */
int oci_hook_reply_parse(const char *buf, size_t len, char *msg);

#endif
