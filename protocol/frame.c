#include "protocol/frame.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static bool stream_type_is_valid(unsigned t)
{
	return t >= CL_FRAME_STDOUT && t <= CL_FRAME_CANCEL;
}

int cl_ack_parse(uint8_t byte, struct cl_error *err, enum cl_ack *ret_ack)
{
	if (byte > CL_ACK_PENDING)
		return cl_error_set(err, -EBADMSG, "unknown ack byte 0x%02x", byte);
	*ret_ack = (enum cl_ack)byte;
	return 0;
}

int cl_frame_encode_request(const void *json, size_t len, void *buf, size_t size)
{
	if (len > CL_FRAME_REQUEST_MAX_DEFAULT)
		return -EMSGSIZE;
	if (size < CL_FRAME_REQUEST_HEADER_SIZE + len)
		return -ENOBUFS;
	put_be32(buf, (uint32_t)len);
	if (len > 0)
		memcpy((uint8_t *)buf + CL_FRAME_REQUEST_HEADER_SIZE, json, len);
	return (int)(CL_FRAME_REQUEST_HEADER_SIZE + len);
}

/* The payload length a stream frame of this type must (or may) have; -EINVAL if it may not. */
static int stream_check(enum cl_frame_type type, size_t len)
{
	if (!stream_type_is_valid(type))
		return -EINVAL;
	if (type == CL_FRAME_EXIT && len != CL_FRAME_EXIT_PAYLOAD_SIZE)
		return -EINVAL;
	if (type == CL_FRAME_CANCEL && len != 0)
		return -EINVAL;
	if (len > CL_FRAME_STREAM_MAX_DEFAULT)
		return -EMSGSIZE;
	return 0;
}

int cl_frame_encode_stream(enum cl_frame_type type, const void *payload, size_t len, void *buf,
                           size_t size)
{
	uint8_t *p = buf;
	int r;

	r = stream_check(type, len);
	if (r < 0)
		return r;
	if (size < CL_FRAME_STREAM_HEADER_SIZE + len)
		return -ENOBUFS;
	p[0] = (uint8_t)type;
	put_be32(p + 1, (uint32_t)len);
	if (len > 0)
		memcpy(p + CL_FRAME_STREAM_HEADER_SIZE, payload, len);
	return (int)(CL_FRAME_STREAM_HEADER_SIZE + len);
}

int cl_frame_encode_exit(int32_t status, void *buf, size_t size)
{
	uint8_t payload[CL_FRAME_EXIT_PAYLOAD_SIZE];

	put_be32(payload, (uint32_t)status);
	return cl_frame_encode_stream(CL_FRAME_EXIT, payload, sizeof(payload), buf, size);
}

int cl_frame_encode_request_alloc(const void *json, size_t len, uint8_t **ret_buf, size_t *ret_len)
{
	_cleanup_free_ uint8_t *buf = NULL;
	int r;

	if (len > CL_FRAME_REQUEST_MAX_DEFAULT)
		return -EMSGSIZE;
	buf = malloc(CL_FRAME_REQUEST_HEADER_SIZE + len);
	if (!buf)
		return -ENOMEM;
	r = cl_frame_encode_request(json, len, buf, CL_FRAME_REQUEST_HEADER_SIZE + len);
	if (r < 0)
		return r;
	*ret_buf = TAKE_PTR(buf);
	*ret_len = (size_t)r;
	return 0;
}

int cl_frame_encode_stream_alloc(enum cl_frame_type type, const void *payload, size_t len,
                                 uint8_t **ret_buf, size_t *ret_len)
{
	_cleanup_free_ uint8_t *buf = NULL;
	int r;

	r = stream_check(type, len);
	if (r < 0)
		return r;
	buf = malloc(CL_FRAME_STREAM_HEADER_SIZE + len);
	if (!buf)
		return -ENOMEM;
	r = cl_frame_encode_stream(type, payload, len, buf, CL_FRAME_STREAM_HEADER_SIZE + len);
	if (r < 0)
		return r;
	*ret_buf = TAKE_PTR(buf);
	*ret_len = (size_t)r;
	return 0;
}

int cl_frame_decoder_init(struct cl_frame_decoder *d, enum cl_frame_mode mode, uint32_t limit)
{
	if (mode != CL_FRAME_MODE_REQUEST && mode != CL_FRAME_MODE_STREAM)
		return -EINVAL;
	if (limit > CL_FRAME_LIMIT_CEILING)
		return -EINVAL;
	if (limit == 0)
		limit = mode == CL_FRAME_MODE_REQUEST ? CL_FRAME_REQUEST_MAX_DEFAULT
		                                      : CL_FRAME_STREAM_MAX_DEFAULT;
	*d = (struct cl_frame_decoder){.mode = mode, .limit = limit};
	return 0;
}

void cl_frame_decoder_done(struct cl_frame_decoder *d)
{
	if (!d)
		return;
	free(d->buf);
	d->buf = NULL;
	d->buf_size = 0;
}

static size_t header_size(const struct cl_frame_decoder *d)
{
	return d->mode == CL_FRAME_MODE_REQUEST ? CL_FRAME_REQUEST_HEADER_SIZE
	                                        : CL_FRAME_STREAM_HEADER_SIZE;
}

/* Enter the sticky error state; the message is kept so that later calls can repeat it. */
static int decoder_fail(struct cl_frame_decoder *d, struct cl_error *err, int code, const char *fmt,
                        ...) __attribute__((format(printf, 4, 5)));

static int decoder_fail(struct cl_frame_decoder *d, struct cl_error *err, int code, const char *fmt,
                        ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->error_msg.msg, sizeof(d->error_msg.msg), fmt, ap);
	va_end(ap);
	d->error = code;
	if (err)
		*err = d->error_msg;
	return code;
}

/* The header is complete: check it and make room for the payload. */
static int decoder_start_payload(struct cl_frame_decoder *d, struct cl_error *err)
{
	const char *what = d->mode == CL_FRAME_MODE_REQUEST ? "request frame" : "frame";
	uint8_t type = d->header[0];
	uint32_t len;

	len = get_be32(d->mode == CL_FRAME_MODE_REQUEST ? d->header : d->header + 1);
	if (len > d->limit)
		return decoder_fail(d, err, -EMSGSIZE,
		                    "%s of %" PRIu32 " bytes exceeds the %" PRIu32 "-byte limit",
		                    what, len, d->limit);
	if (d->mode == CL_FRAME_MODE_REQUEST && len == 0)
		return decoder_fail(d, err, -EBADMSG, "empty request frame");
	if (d->mode == CL_FRAME_MODE_STREAM && type == CL_FRAME_EXIT &&
	    len != CL_FRAME_EXIT_PAYLOAD_SIZE)
		return decoder_fail(d, err, -EBADMSG,
		                    "exit frame of %" PRIu32 " bytes, expected %d", len,
		                    CL_FRAME_EXIT_PAYLOAD_SIZE);
	if (d->mode == CL_FRAME_MODE_STREAM && type == CL_FRAME_CANCEL && len != 0)
		return decoder_fail(d, err, -EBADMSG,
		                    "cancel frame of %" PRIu32 " bytes, expected 0", len);

	if (len > d->buf_size) {
		/* Grow geometrically so that slowly growing frames do not realloc every time. */
		size_t want = d->buf_size * 2 > len ? d->buf_size * 2 : len;
		uint8_t *p;

		if (want > d->limit)
			want = d->limit;
		p = realloc(d->buf, want);
		if (!p)
			return decoder_fail(d, err, -ENOMEM,
			                    "out of memory for a %" PRIu32 "-byte frame", len);
		d->buf = p;
		d->buf_size = want;
	}
	d->payload_len = len;
	d->payload_have = 0;
	return 0;
}

int cl_frame_decoder_feed(struct cl_frame_decoder *d, const void *data, size_t len,
                          struct cl_error *err, size_t *ret_consumed, struct cl_frame *ret_frame)
{
	const uint8_t *in = data;
	size_t hsize = header_size(d), used = 0;
	int r;

	if (d->error < 0) {
		if (err)
			*err = d->error_msg;
		return d->error;
	}
	if (d->frame_pending) {
		d->frame_pending = false;
		d->header_have = 0;
		d->payload_have = 0;
	}

	for (;;) {
		if (d->header_have < hsize) {
			size_t take = hsize - d->header_have;

			if (used == len)
				break;
			if (take > len - used)
				take = len - used;
			memcpy(d->header + d->header_have, in + used, take);
			if (d->mode == CL_FRAME_MODE_STREAM && d->header_have == 0 &&
			    !stream_type_is_valid(d->header[0]))
				return decoder_fail(d, err, -EBADMSG,
				                    "unknown stream frame type %u", d->header[0]);
			d->header_have += take;
			used += take;
			if (d->header_have < hsize)
				break;
			r = decoder_start_payload(d, err);
			if (r < 0)
				return r;
		}

		if (d->payload_have < d->payload_len) {
			size_t take = d->payload_len - d->payload_have;

			if (used == len)
				break;
			if (take > len - used)
				take = len - used;
			memcpy(d->buf + d->payload_have, in + used, take);
			d->payload_have += take;
			used += take;
			if (d->payload_have < d->payload_len)
				break;
		}

		/* Header and payload complete. */
		*ret_frame = (struct cl_frame){
		        .type = d->mode == CL_FRAME_MODE_REQUEST ? CL_FRAME_REQUEST
		                                                 : (enum cl_frame_type)d->header[0],
		        .payload = d->buf,
		        .len = d->payload_len,
		};
		if (ret_frame->type == CL_FRAME_EXIT)
			ret_frame->exit_status = (int32_t)get_be32(d->buf);
		d->frame_pending = true;
		*ret_consumed = used;
		return 1;
	}

	*ret_consumed = used;
	return 0;
}

bool cl_frame_decoder_is_idle(const struct cl_frame_decoder *d)
{
	return d->error == 0 && (d->frame_pending || d->header_have == 0);
}

int cl_frame_decoder_finish(const struct cl_frame_decoder *d, struct cl_error *err)
{
	if (d->error < 0) {
		if (err)
			*err = d->error_msg;
		return d->error;
	}
	if (cl_frame_decoder_is_idle(d))
		return 0;
	if (d->header_have < header_size(d))
		return cl_error_set(err, -EPIPE, "truncated frame: %zu of %zu header bytes",
		                    d->header_have, header_size(d));
	return cl_error_set(err, -EPIPE, "truncated frame: %zu of %" PRIu32 " payload bytes",
	                    d->payload_have, d->payload_len);
}
