#include "supervisor/hostexec/output_cap.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int output_cap_init(struct output_cap *c, size_t max, size_t tail)
{
	if (max == 0) {
		max = OUTPUT_CAP_MAX_DEFAULT;
		tail = OUTPUT_CAP_TAIL_DEFAULT;
	}
	if (tail > max)
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	c->head = max - tail;
	c->tail = tail;
	return 0;
}

void output_cap_done(struct output_cap *c)
{
	if (!c)
		return;
	free(c->ring);
	c->ring = NULL;
}

size_t output_cap_live_room(const struct output_cap *c)
{
	return c->total < c->head ? c->head - (size_t)c->total : 0;
}

int64_t output_cap_feed(struct output_cap *c, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t live = output_cap_live_room(c);

	if (live > len)
		live = len;
	/* Allocate first, so that a failure takes nothing of this piece. */
	if (len > live && c->tail > 0 && !c->ring && !(c->ring = malloc(c->tail)))
		return -ENOMEM;
	c->total += len;
	p += live;
	len -= live;
	if (len == 0 || c->tail == 0)
		return (int64_t)live;
	/* Only the last tail bytes of this piece can survive. */
	if (len > c->tail) {
		p += len - c->tail;
		len = c->tail;
	}
	while (len > 0) {
		size_t n = c->tail - c->ring_pos;

		if (n > len)
			n = len;
		memcpy(c->ring + c->ring_pos, p, n);
		c->ring_pos = (c->ring_pos + n) % c->tail;
		c->ring_len = c->ring_len + n > c->tail ? c->tail : c->ring_len + n;
		p += n;
		len -= n;
	}
	return (int64_t)live;
}

static uint64_t dropped(const struct output_cap *c)
{
	return c->total - (c->total < c->head ? c->total : c->head) - c->ring_len;
}

bool output_cap_truncated(const struct output_cap *c)
{
	return dropped(c) > 0;
}

int output_cap_finish(const struct output_cap *c, uint8_t **ret_buf, size_t *ret_len)
{
	uint64_t lost = dropped(c);
	char marker[64];
	size_t m = 0, oldest;
	uint8_t *buf;

	if (lost == 0 && c->ring_len == 0) {
		*ret_buf = NULL;
		*ret_len = 0;
		return 0;
	}
	if (lost > 0)
		m = (size_t)snprintf(marker, sizeof(marker),
		                     "\n[... %" PRIu64 " bytes truncated ...]\n", lost);
	buf = malloc(m + c->ring_len + 1);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, marker, m);
	/* Oldest first: from the write position to the end of the ring, then its start. */
	if (c->ring_len > 0) {
		oldest = c->ring_len < c->tail ? 0 : c->ring_pos;
		memcpy(buf + m, c->ring + oldest, c->ring_len - oldest);
		memcpy(buf + m + c->ring_len - oldest, c->ring, oldest);
	}
	buf[m + c->ring_len] = '\0';
	*ret_buf = buf;
	*ret_len = m + c->ring_len;
	return 0;
}
