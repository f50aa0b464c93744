#include "supervisor/capture.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/cleanup.h"
#include "protocol/utf8.h"

struct capture {
	size_t head_max; /* max - tail */
	size_t tail_max;
	char *head;
	size_t head_len;
	size_t head_size;
	char *ring;       /* tail_max bytes, allocated when the head is full */
	uint64_t ring_in; /* bytes written into the ring, ever */
	uint64_t total;
};

int capture_new(size_t max, size_t tail, struct capture **ret)
{
	struct capture *c;

	if (max == 0) {
		max = CAPTURE_MAX_DEFAULT;
		tail = CAPTURE_TAIL_DEFAULT;
	}
	if (tail > max)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->head_max = max - tail;
	c->tail_max = tail;
	*ret = c;
	return 0;
}

void capture_free(struct capture *c)
{
	if (!c)
		return;
	free(c->head);
	free(c->ring);
	free(c);
}

static int head_reserve(struct capture *c, size_t need)
{
	size_t size;
	char *p;

	if (need <= c->head_size)
		return 0;
	size = c->head_size ? c->head_size : 4096;
	while (size < need)
		size *= 2;
	if (size > c->head_max)
		size = c->head_max;
	p = realloc(c->head, size);
	if (!p)
		return -ENOMEM;
	c->head = p;
	c->head_size = size;
	return 0;
}

int capture_append(struct capture *c, const void *data, size_t len)
{
	const char *p = data;
	uint64_t total = c->total + len;
	size_t n;
	int r;

	if (len == 0)
		return 0;
	n = c->head_max - c->head_len;
	if (n > len)
		n = len;
	/* Allocate first, so that a failure keeps nothing of this chunk. */
	if (len > n && c->tail_max > 0 && !c->ring && !(c->ring = malloc(c->tail_max)))
		return -ENOMEM;
	if (n > 0) {
		r = head_reserve(c, c->head_len + n);
		if (r < 0)
			return r;
		memcpy(c->head + c->head_len, p, n);
		c->head_len += n;
		p += n;
		len -= n;
	}
	if (len > 0 && c->tail_max > 0) {
		/* Only the last tail_max bytes of this chunk can survive. */
		if (len > c->tail_max) {
			c->ring_in += len - c->tail_max;
			p += len - c->tail_max;
			len = c->tail_max;
		}
		while (len > 0) {
			size_t pos = (size_t)(c->ring_in % c->tail_max);
			size_t chunk = c->tail_max - pos;

			if (chunk > len)
				chunk = len;
			memcpy(c->ring + pos, p, chunk);
			c->ring_in += chunk;
			p += chunk;
			len -= chunk;
		}
	}
	c->total = total;
	return 0;
}

uint64_t capture_total(const struct capture *c)
{
	return c->total;
}

bool capture_truncated(const struct capture *c)
{
	uint64_t ring_len = c->ring_in < c->tail_max ? c->ring_in : c->tail_max;

	return c->total > c->head_len + ring_len;
}

int capture_finish_raw(const struct capture *c, char **ret_buf, size_t *ret_len)
{
	size_t ring_len = c->ring_in < c->tail_max ? (size_t)c->ring_in : c->tail_max;
	uint64_t dropped = c->total - c->head_len - ring_len;
	char marker[64] = "";
	size_t marker_len = 0, len;
	char *buf;

	if (dropped > 0)
		marker_len = (size_t)snprintf(marker, sizeof(marker),
		                              "\n[... %" PRIu64 " bytes truncated ...]\n", dropped);
	len = c->head_len + marker_len + ring_len;
	buf = malloc(len + 1);
	if (!buf)
		return -ENOMEM;
	if (c->head_len)
		memcpy(buf, c->head, c->head_len);
	memcpy(buf + c->head_len, marker, marker_len);
	if (ring_len) {
		/* Oldest first: from the write position to the end, then the start. */
		size_t pos = c->ring_in < c->tail_max ? 0 : (size_t)(c->ring_in % c->tail_max);
		char *out = buf + c->head_len + marker_len;

		memcpy(out, c->ring + pos, ring_len - pos);
		memcpy(out + ring_len - pos, c->ring, pos);
	}
	buf[len] = '\0';
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}

int capture_sanitize_utf8(const char *data, size_t len, char **ret_text, size_t *ret_len)
{
	/* Worst case: every byte becomes the 3-byte U+FFFD. */
	char *out = malloc(len * 3 + 1);
	size_t i = 0, o = 0;

	if (!out)
		return -ENOMEM;
	while (i < len) {
		unsigned char b = (unsigned char)data[i];
		size_t n;

		if (b >= 0x01 && b < 0x80) {
			out[o++] = (char)b;
			i++;
			continue;
		}
		if (b == 0) {
			n = 0;
		} else if (len - i >= 4) {
			/* cl_utf8_decode reads at most 4 bytes and stops at a NUL. */
			n = cl_utf8_decode(data + i, NULL);
		} else {
			char tmp[5] = {0};

			memcpy(tmp, data + i, len - i);
			n = cl_utf8_decode(tmp, NULL);
		}
		if (n == 0) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		} else {
			memcpy(out + o, data + i, n);
			o += n;
			i += n;
		}
	}
	out[o] = '\0';
	*ret_text = out;
	if (ret_len)
		*ret_len = o;
	return 0;
}

int capture_finish_text(const struct capture *c, char **ret_text, size_t *ret_len)
{
	_cleanup_free_ char *raw = NULL;
	size_t len;
	int r;

	r = capture_finish_raw(c, &raw, &len);
	if (r < 0)
		return r;
	return capture_sanitize_utf8(raw, len, ret_text, ret_len);
}
