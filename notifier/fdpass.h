/* Passing one fd and a small payload over a unix socket (SCM_RIGHTS): how the sandboxed child
 * hands its seccomp listener to the supervisor. Use SOCK_SEQPACKET or SOCK_DGRAM so that one
 * message is one payload. */
#ifndef CLOISTER_NOTIFIER_FDPASS_H
#define CLOISTER_NOTIFIER_FDPASS_H

#include <stddef.h>

/* Send fd with len bytes of data (len 0 sends one NUL byte: a message needs a byte to carry
 * the fd). Returns 0 or -errno (-EMSGSIZE when the socket sent only part of the data). */
int fdpass_send(int sock, int fd, const void *data, size_t len);

/* Receive one message carrying exactly one fd. The fd arrives O_CLOEXEC. Up to size bytes of
 * data go to buf and their count to *ret_len (both may be NULL/0 when no payload is expected).
 * Returns 0 with *ret_fd; -ECONNRESET at end of stream; -EMSGSIZE when the data or the control
 * data was truncated; -EBADMSG when the message carried no fd or more than one. In every failure
 * case any fd that did arrive is closed. */
int fdpass_recv(int sock, void *buf, size_t size, size_t *ret_len, int *ret_fd);

#endif
