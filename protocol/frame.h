/* The shim wire format (Clawrden's framing), shim ⇄ supervisor over a stream socket:
 *
 *   request  [4-byte big-endian length][JSON]          shim → supervisor, once
 *   ack      [1 byte: 0 allowed, 1 denied, 2 pending]   supervisor → shim
 *   stream   [1-byte type][4-byte big-endian length][payload], repeated, where type is
 *              1 stdout   payload: output bytes (may be empty)
 *              2 stderr   payload: output bytes (may be empty)
 *              3 exit     payload: exactly 4 bytes, the exit status as a big-endian two's
 *                         complement int32 (0..255 an exit code, 128+N death by signal N as the
 *                         shell reports it, -1 no status: timed out or failed to start)
 *              4 cancel   payload: empty
 *
 * Authentication. Over a unix socket the supervisor knows the caller from SO_PEERCRED and the
 * socket file's mode. Over TCP (CLOISTER_SUPERVISOR=host:port) the request JSON must carry
 * "token" (message.h) as its proof: the supervisor compares it in constant time with its own
 * before acting on anything else in the request, and answers a missing or wrong token with
 * ack 1 (denied) and closes. The token is thus the first thing checked, in the one frame the
 * shim sends before the ack; it is never echoed or logged.
 *
 * Acks. 0: the command runs, stream frames follow, ending with one exit frame. 2: a person is
 * being asked; a second ack byte, 0 or 1, follows when they answer (or the question times
 * out). 1: denied; stderr frames with the reason may follow, then the supervisor closes
 * (no exit frame). The shim exits 126 on a denial and 127 when it cannot reach the supervisor.
 *
 * After the request, only the shim may send, and only a cancel frame (on SIGINT/SIGTERM):
 * while a command runs the supervisor kills it and still ends with its exit frame; while a
 * question is pending it withdraws the question and answers with ack 1. Closing the
 * connection early cancels too.
 *
 * Lengths count the payload only. Decoders enforce a per-decoder limit on that length before
 * buffering anything, and are incremental: feed them bytes in any chunking (a non-blocking event
 * loop hands over whatever read() returned) and they yield complete frames. Pure code: no I/O. */
#ifndef CLOISTER_FRAME_H
#define CLOISTER_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define CL_FRAME_REQUEST_HEADER_SIZE 4
#define CL_FRAME_STREAM_HEADER_SIZE  5
#define CL_FRAME_EXIT_PAYLOAD_SIZE   4
/* Default payload limits: a request is an exec message (argv + env); a stream frame is a chunk
 * of output, which a sender splits. */
#define CL_FRAME_REQUEST_MAX_DEFAULT (1024 * 1024)
#define CL_FRAME_STREAM_MAX_DEFAULT  (64 * 1024)
/* Highest limit a decoder accepts: its buffer grows up to the limit. */
#define CL_FRAME_LIMIT_CEILING (64 * 1024 * 1024)

enum cl_ack {
	CL_ACK_ALLOWED = 0,
	CL_ACK_DENIED = 1,
	CL_ACK_PENDING = 2,
};

enum cl_frame_type {
	CL_FRAME_REQUEST = 0, /* what a request decoder yields; never on the wire */
	CL_FRAME_STDOUT = 1,
	CL_FRAME_STDERR = 2,
	CL_FRAME_EXIT = 3,
	CL_FRAME_CANCEL = 4,
};

enum cl_frame_mode {
	CL_FRAME_MODE_REQUEST, /* length-prefixed JSON requests */
	CL_FRAME_MODE_STREAM,  /* typed stream frames */
};

/* A decoded frame. payload points into the decoder's buffer and stays valid until the next call
 * to cl_frame_decoder_feed() or cl_frame_decoder_done() on that decoder. */
struct cl_frame {
	enum cl_frame_type type;
	const uint8_t *payload;
	size_t len;
	int32_t exit_status; /* CL_FRAME_EXIT only */
};

/* Treat as opaque; it lives in the caller's struct so that no allocation is needed to start. */
struct cl_frame_decoder {
	enum cl_frame_mode mode;
	uint32_t limit;
	uint8_t header[CL_FRAME_STREAM_HEADER_SIZE];
	size_t header_have;
	uint32_t payload_len; /* valid once the header is complete */
	size_t payload_have;
	uint8_t *buf; /* grows to the largest payload seen, at most limit bytes */
	size_t buf_size;
	bool frame_pending; /* a frame was just returned; the next feed starts a new one */
	int error;          /* 0, or the sticky negative errno */
	struct cl_error error_msg;
};

/* Check an ack byte received from the supervisor. Returns 0 and sets *ret_ack, or -EBADMSG
 * ("unknown ack byte 0x07"). */
int cl_ack_parse(uint8_t byte, struct cl_error *err, enum cl_ack *ret_ack);

/* Encode a request frame: header and json into buf (size bytes). Returns the frame length, or
 * -EMSGSIZE if len exceeds CL_FRAME_REQUEST_MAX_DEFAULT (a peer would reject it), -ENOBUFS if buf
 * is too small. */
int cl_frame_encode_request(const void *json, size_t len, void *buf, size_t size);

/* Encode a stream frame into buf. Returns the frame length; -EINVAL for an unknown type, an exit
 * frame whose payload is not 4 bytes or a cancel frame with a payload; -EMSGSIZE if len exceeds
 * CL_FRAME_STREAM_MAX_DEFAULT; -ENOBUFS if buf is too small. For exit use cl_frame_encode_exit().
 */
int cl_frame_encode_stream(enum cl_frame_type type, const void *payload, size_t len, void *buf,
                           size_t size);

/* Encode an exit frame (9 bytes) carrying status. Returns 9 or -ENOBUFS. */
int cl_frame_encode_exit(int32_t status, void *buf, size_t size);

/* Malloc'd variants of the two encoders above: on success *ret_buf (free() it) and *ret_len are
 * set. Same errors, plus -ENOMEM; never -ENOBUFS. */
int cl_frame_encode_request_alloc(const void *json, size_t len, uint8_t **ret_buf, size_t *ret_len);
int cl_frame_encode_stream_alloc(enum cl_frame_type type, const void *payload, size_t len,
                                 uint8_t **ret_buf, size_t *ret_len);

/* Set up a decoder. limit is the largest payload accepted; 0 means the mode's default
 * (CL_FRAME_REQUEST_MAX_DEFAULT or CL_FRAME_STREAM_MAX_DEFAULT). Returns 0, or -EINVAL for an
 * unknown mode or a limit above CL_FRAME_LIMIT_CEILING. Allocates nothing. */
int cl_frame_decoder_init(struct cl_frame_decoder *d, enum cl_frame_mode mode, uint32_t limit);

/* Free the decoder's buffer. Accepts NULL and an already finished decoder. */
void cl_frame_decoder_done(struct cl_frame_decoder *d);

/* Consume bytes until one frame is complete or data runs out.
 *   1   a frame is complete: *ret_frame is set, *ret_consumed says how many of the len bytes
 *       were used (feed the rest again, the next frame may already be complete);
 *   0   all len bytes were consumed and no frame is complete yet (*ret_consumed = len);
 *   <0  the stream is invalid: -EMSGSIZE ("frame of N bytes exceeds the M-byte limit"),
 *       -EBADMSG (unknown stream type, bad exit or cancel length, empty request), -ENOMEM.
 *       The error is sticky: every later call returns it with the same message, because the
 *       stream cannot be resynchronised. The connection should be closed.
 * len may be 0. Memory is allocated only when a header announces a payload larger than any
 * before, never more than the limit. */
int cl_frame_decoder_feed(struct cl_frame_decoder *d, const void *data, size_t len,
                          struct cl_error *err, size_t *ret_consumed, struct cl_frame *ret_frame);

/* True when the decoder holds no partial frame, i.e. the peer may close the connection here.
 * False in the error state. */
bool cl_frame_decoder_is_idle(const struct cl_frame_decoder *d);

/* Call at end of input. Returns 0 at a frame boundary, -EPIPE with "truncated frame: …" when a
 * frame was cut short, or the sticky error. */
int cl_frame_decoder_finish(const struct cl_frame_decoder *d, struct cl_error *err);

#endif
