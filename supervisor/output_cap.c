#include "supervisor/output_cap.h"

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

int64_t output_cap_feed(struct output_cap *c, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t live = 0;

	if (c->total < c->head) {
		live = c->head - (size_t)c->total;
		if (live > len)
			live = len;
	}
	c->total += len;
	p += live;
	len -= live;
	if (len == 0 || c->tail == 0)
		return (int64_t)live;
	if (!c->ring) {
		c->ring = malloc(c->tail);
		if (!c->ring)
			return -ENOMEM;
	}
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
		p += n;
		len -= n;
		c->ring_len = c->ring_len + n > c->tail ? c->tail : c->ring_len + n;
	}
	return (int64_t)live;
}

int output_cap_finish(const struct output_cap *c, uint8_t **ret_buf, size_t *ret_len)
{
	uint64_t dropped;
	char marker[80];
	uint8_t *buf;
	size_t m, start;
	int n;

	if (c->total <= (uint64_t)c->head + c->tail) {
		/* Nothing dropped: whatever is in the ring still has to go out. */
		if (c->ring_len == 0) {
			*ret_buf = NULL;
			*ret_len = 0;
			return 0;
		}
		dropped = 0;
	} else {
		dropped = c->total - c->head - c->tail;
	}
	if (dropped)
		n = snprintf(marker, sizeof(marker), "\n[... %" PRIu64 " bytes truncated ...]\n",
		             dropped);
	else
		n = 0;
	m = (size_t)n;
	buf = malloc(m + c->ring_len + 1);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, marker, m);
	start = c->ring_len < c->tail ? 0 : c->ring_pos;
	for (size_t i = 0; i < c->ring_len; i++)
		buf[m + i] = c->ring[(start + i) % c->tail];
	buf[m + c->ring_len] = '\0';
	*ret_buf = buf;
	*ret_len = m + c->ring_len;
	return 0;
}
