#include "supervisor/hostexec/capture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/utf8.h"

struct capture {
	struct output_cap cap; /* decides what is kept; holds the tail */
	char *head;            /* what the cap forwarded live */
	size_t head_len;
	size_t head_size;
};

int capture_new(size_t max, size_t tail, struct capture **ret)
{
	struct output_cap cap;
	struct capture *c;
	int r;

	r = output_cap_init(&cap, max, tail);
	if (r < 0)
		return r;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->cap = cap;
	*ret = c;
	return 0;
}

void capture_free(struct capture *c)
{
	if (!c)
		return;
	output_cap_done(&c->cap);
	free(c->head);
	free(c);
}

/* Room for need bytes of head, growing by doubling but never past the cap's head. */
static int head_reserve(struct capture *c, size_t need)
{
	size_t size;
	char *p;

	if (need <= c->head_size)
		return 0;
	size = c->head_size ? c->head_size : 4096;
	while (size < need)
		size *= 2;
	if (size > c->cap.head)
		size = c->cap.head;
	p = realloc(c->head, size);
	if (!p)
		return -ENOMEM;
	c->head = p;
	c->head_size = size;
	return 0;
}

int capture_append(struct capture *c, const void *data, size_t len)
{
	size_t room = output_cap_live_room(&c->cap);
	int64_t live;
	int r;

	if (len == 0)
		return 0;
	/* Reserve before feeding, so that a failure keeps nothing of this chunk. */
	r = head_reserve(c, c->head_len + (room < len ? room : len));
	if (r < 0)
		return r;
	live = output_cap_feed(&c->cap, data, len);
	if (live < 0)
		return (int)live;
	if (live > 0) {
		memcpy(c->head + c->head_len, data, (size_t)live);
		c->head_len += (size_t)live;
	}
	return 0;
}

uint64_t capture_total(const struct capture *c)
{
	return c->cap.total;
}

bool capture_truncated(const struct capture *c)
{
	return output_cap_truncated(&c->cap);
}

int capture_finish_raw(const struct capture *c, char **ret_buf, size_t *ret_len)
{
	_cleanup_free_ uint8_t *rest = NULL;
	size_t rest_len, len;
	char *buf;
	int r;

	r = output_cap_finish(&c->cap, &rest, &rest_len);
	if (r < 0)
		return r;
	len = c->head_len + rest_len;
	buf = malloc(len + 1);
	if (!buf)
		return -ENOMEM;
	if (c->head_len)
		memcpy(buf, c->head, c->head_len);
	if (rest_len)
		memcpy(buf + c->head_len, rest, rest_len);
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
