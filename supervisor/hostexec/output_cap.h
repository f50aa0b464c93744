/* The cap on one output stream of a command (its stdout or its stderr), pure, no I/O. The
 * one implementation of the cap: the shim listener streams through it, and capture.h keeps
 * what it forwards for the executor's JSON.
 *
 * Output is forwarded as it arrives until HEAD bytes (max - tail) have gone; after that the
 * newest TAIL bytes are kept in a ring and everything before them is dropped. At the end the
 * marker and the tail go out:
 *
 *   <head, streamed>\n[... 123456 bytes truncated ...]\n<tail>
 *
 * so a reader sees at most max bytes of output plus the marker, the start and the end of it,
 * and a clear statement of how much is missing. */
#ifndef CLOISTER_OUTPUT_CAP_H
#define CLOISTER_OUTPUT_CAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The executor's limits: 200 000 bytes kept, of which the last 20 000. */
#define OUTPUT_CAP_MAX_DEFAULT  200000
#define OUTPUT_CAP_TAIL_DEFAULT 20000

struct output_cap {
	size_t head;     /* bytes forwarded live at most */
	size_t tail;     /* ring size */
	uint64_t total;  /* bytes seen */
	uint8_t *ring;   /* allocated when the head is full */
	size_t ring_len; /* bytes in the ring (<= tail) */
	size_t ring_pos; /* next write position */
};

/* max 0 means the defaults (tail ignored then). -EINVAL when tail > max. Allocates nothing. */
int output_cap_init(struct output_cap *c, size_t max, size_t tail);
void output_cap_done(struct output_cap *c);

/* How many more bytes will be forwarded live (0 once the head is full). */
size_t output_cap_live_room(const struct output_cap *c);

/* Take len bytes. Returns how many of them, from the start of data, to forward now (the rest
 * went to the ring or was dropped), or -ENOMEM (and nothing of them was taken). */
int64_t output_cap_feed(struct output_cap *c, const void *data, size_t len);

/* True once bytes have been dropped. */
bool output_cap_truncated(const struct output_cap *c);

/* What goes out after the last feed: the marker when bytes were dropped, then what the ring
 * holds, in a malloc'd buffer with a NUL after the last byte; *ret_buf NULL and *ret_len 0
 * when there is nothing. Does not change the cap. Returns 0 or -ENOMEM. */
int output_cap_finish(const struct output_cap *c, uint8_t **ret_buf, size_t *ret_len);

#endif
