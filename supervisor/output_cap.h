/* The cap on a streamed output (one of a command's stdout or stderr), pure, no I/O.
 *
 * Output is forwarded as it arrives until HEAD bytes (max - tail) have gone; after that the
 * newest TAIL bytes are kept in a ring and everything before them is dropped. At the end the
 * marker and the tail go out:
 *
 *   <head, streamed>\n[... 123456 bytes truncated ...]\n<tail>
 *
 * so a reader sees at most max bytes of output plus the marker, the start and the end of it,
 * and a clear statement of how much is missing (the same marker as supervisor/capture.h). */
#ifndef CLOISTER_OUTPUT_CAP_H
#define CLOISTER_OUTPUT_CAP_H

#include <stddef.h>
#include <stdint.h>

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

/* Take len bytes. Returns how many of them, from the start of data, to forward now (the rest
 * went to the ring or was dropped), or -ENOMEM. */
int64_t output_cap_feed(struct output_cap *c, const void *data, size_t len);

/* After the last feed: when bytes were dropped, *ret_buf (malloc'd) holds the marker and the
 * tail; otherwise *ret_buf is NULL and *ret_len 0. Returns 0 or -ENOMEM. */
int output_cap_finish(const struct output_cap *c, uint8_t **ret_buf, size_t *ret_len);

#endif
