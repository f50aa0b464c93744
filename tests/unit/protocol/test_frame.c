/* Shim framing: encoders, the incremental decoders at every chunking, limits, sticky errors. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/cleanup.h"
#include "protocol/frame.h"

#define MAX_FRAMES 16

struct decoded {
	size_t n;
	enum cl_frame_type type[MAX_FRAMES];
	size_t len[MAX_FRAMES];
	uint8_t payload[MAX_FRAMES][256];
	int32_t exit_status[MAX_FRAMES];
};

/* Feed one chunk, collecting every frame it completes. Returns the decoder's last result. */
static int feed_chunk(struct cl_frame_decoder *d, const uint8_t *p, size_t len, struct decoded *out,
                      struct cl_error *err)
{
	do {
		struct cl_frame f;
		size_t used = 0;
		int r = cl_frame_decoder_feed(d, p, len, err, &used, &f);

		if (r < 0)
			return r;
		assert_true(used <= len);
		p += used;
		len -= used;
		if (r == 0) {
			assert_int_equal(len, 0);
			break;
		}
		assert_true(out->n < MAX_FRAMES);
		assert_true(f.len <= sizeof(out->payload[0]));
		out->type[out->n] = f.type;
		out->len[out->n] = f.len;
		if (f.len)
			memcpy(out->payload[out->n], f.payload, f.len);
		out->exit_status[out->n] = f.exit_status;
		out->n++;
	} while (len > 0);
	return 0;
}

static void assert_decoded_equal(const struct decoded *a, const struct decoded *b)
{
	assert_int_equal(a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		assert_int_equal(a->type[i], b->type[i]);
		assert_int_equal(a->len[i], b->len[i]);
		assert_memory_equal(a->payload[i], b->payload[i], a->len[i]);
		if (a->type[i] == CL_FRAME_EXIT)
			assert_int_equal(a->exit_status[i], b->exit_status[i]);
	}
}

/* A stream with every frame type, empty payloads included. */
static size_t build_stream(uint8_t *buf, size_t size, struct decoded *expect)
{
	static const struct {
		enum cl_frame_type type;
		const char *payload;
	} frames[] = {
	        {CL_FRAME_STDOUT, "hello\n"},
	        {CL_FRAME_STDERR, ""},
	        {CL_FRAME_STDERR, "warning: x\n"},
	        {CL_FRAME_STDOUT, "\0\1\2"},
	        {CL_FRAME_CANCEL, ""},
	};
	size_t n = 0;
	int r;

	memset(expect, 0, sizeof(*expect));
	for (size_t i = 0; i < ELEMENTSOF(frames); i++) {
		size_t len =
		        frames[i].type == CL_FRAME_STDOUT && i == 3 ? 3 : strlen(frames[i].payload);

		r = cl_frame_encode_stream(frames[i].type, frames[i].payload, len, buf + n,
		                           size - n);
		assert_int_equal(r, CL_FRAME_STREAM_HEADER_SIZE + len);
		n += (size_t)r;
		expect->type[expect->n] = frames[i].type;
		expect->len[expect->n] = len;
		memcpy(expect->payload[expect->n], frames[i].payload, len);
		expect->n++;
	}
	r = cl_frame_encode_exit(-1, buf + n, size - n);
	assert_int_equal(r, 9);
	n += (size_t)r;
	expect->type[expect->n] = CL_FRAME_EXIT;
	expect->len[expect->n] = 4;
	memcpy(expect->payload[expect->n], "\xff\xff\xff\xff", 4);
	expect->exit_status[expect->n++] = -1;
	return n;
}

static size_t build_requests(uint8_t *buf, size_t size, struct decoded *expect)
{
	static const char *const reqs[] = {"{\"a\":1}", "[]", "{\"tool\":\"npm\"}"};
	size_t n = 0;

	memset(expect, 0, sizeof(*expect));
	for (size_t i = 0; i < ELEMENTSOF(reqs); i++) {
		size_t len = strlen(reqs[i]);
		int r = cl_frame_encode_request(reqs[i], len, buf + n, size - n);

		assert_int_equal(r, 4 + len);
		n += (size_t)r;
		expect->type[expect->n] = CL_FRAME_REQUEST;
		expect->len[expect->n] = len;
		memcpy(expect->payload[expect->n++], reqs[i], len);
	}
	return n;
}

static void test_stream_frames_decode_at_every_split_point(void **state)
{
	uint8_t buf[256];
	struct decoded expect, got;
	size_t n = build_stream(buf, sizeof(buf), &expect);

	for (size_t split = 0; split <= n; split++) {
		struct cl_frame_decoder d;

		assert_int_equal(cl_frame_decoder_init(&d, CL_FRAME_MODE_STREAM, 0), 0);
		memset(&got, 0, sizeof(got));
		assert_int_equal(feed_chunk(&d, buf, split, &got, NULL), 0);
		assert_int_equal(feed_chunk(&d, buf + split, n - split, &got, NULL), 0);
		assert_decoded_equal(&got, &expect);
		assert_true(cl_frame_decoder_is_idle(&d));
		assert_int_equal(cl_frame_decoder_finish(&d, NULL), 0);
		cl_frame_decoder_done(&d);
	}
}

static void test_request_frames_decode_at_every_split_point(void **state)
{
	uint8_t buf[256];
	struct decoded expect, got;
	size_t n = build_requests(buf, sizeof(buf), &expect);

	for (size_t split = 0; split <= n; split++) {
		struct cl_frame_decoder d;

		assert_int_equal(cl_frame_decoder_init(&d, CL_FRAME_MODE_REQUEST, 0), 0);
		memset(&got, 0, sizeof(got));
		assert_int_equal(feed_chunk(&d, buf, split, &got, NULL), 0);
		assert_int_equal(feed_chunk(&d, buf + split, n - split, &got, NULL), 0);
		assert_decoded_equal(&got, &expect);
		assert_int_equal(cl_frame_decoder_finish(&d, NULL), 0);
		cl_frame_decoder_done(&d);
	}
}

static void test_frames_decode_byte_by_byte(void **state)
{
	for (int mode = 0; mode < 2; mode++) {
		uint8_t buf[256];
		struct decoded expect, got = {0};
		struct cl_frame_decoder d;
		size_t n = mode ? build_stream(buf, sizeof(buf), &expect)
		                : build_requests(buf, sizeof(buf), &expect);

		assert_int_equal(
		        cl_frame_decoder_init(
		                &d, mode ? CL_FRAME_MODE_STREAM : CL_FRAME_MODE_REQUEST, 0),
		        0);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(feed_chunk(&d, buf + i, 1, &got, NULL), 0);
		assert_decoded_equal(&got, &expect);
		cl_frame_decoder_done(&d);
	}
}

static void test_truncated_stream_reports_incomplete_not_a_frame(void **state)
{
	uint8_t buf[16];
	int n = cl_frame_encode_stream(CL_FRAME_STDOUT, "abcde", 5, buf, sizeof(buf));

	assert_int_equal(n, 10);
	for (int cut = 1; cut < n; cut++) {
		struct cl_frame_decoder d;
		struct decoded got = {0};
		struct cl_error err = {""};

		assert_int_equal(cl_frame_decoder_init(&d, CL_FRAME_MODE_STREAM, 0), 0);
		assert_int_equal(feed_chunk(&d, buf, (size_t)cut, &got, NULL), 0);
		assert_int_equal(got.n, 0);
		assert_false(cl_frame_decoder_is_idle(&d));
		assert_int_equal(cl_frame_decoder_finish(&d, &err), -EPIPE);
		if (cut == 3)
			assert_string_equal(err.msg, "truncated frame: 3 of 5 header bytes");
		if (cut == 7)
			assert_string_equal(err.msg, "truncated frame: 2 of 5 payload bytes");
		cl_frame_decoder_done(&d);
	}
}

static void test_oversized_frames_are_rejected_from_the_header(void **state)
{
	struct cl_frame_decoder d;
	struct cl_error err = {""};
	struct cl_frame f;
	size_t used = 0;
	uint8_t buf[64];

	/* Exactly at a custom limit: accepted. */
	assert_int_equal(cl_frame_decoder_init(&d, CL_FRAME_MODE_STREAM, 16), 0);
	assert_int_equal(
	        cl_frame_encode_stream(CL_FRAME_STDOUT, "0123456789abcdef", 16, buf, sizeof(buf)),
	        21);
	assert_int_equal(cl_frame_decoder_feed(&d, buf, 21, &err, &used, &f), 1);
	assert_int_equal(f.len, 16);
	/* One byte more: rejected as soon as the header is complete, before any payload. */
	memcpy(buf, "\x01\x00\x00\x00\x11", 5);
	assert_int_equal(cl_frame_decoder_feed(&d, buf, 5, &err, &used, &f), -EMSGSIZE);
	assert_string_equal(err.msg, "frame of 17 bytes exceeds the 16-byte limit");
	cl_frame_decoder_done(&d);

	/* Request decoders default to 1 MiB; a hostile 4 GiB length allocates nothing. */
	assert_int_equal(cl_frame_decoder_init(&d, CL_FRAME_MODE_REQUEST, 0), 0);
	assert_int_equal(cl_frame_decoder_feed(&d, "\x00\x10\x00\x01", 4, &err, &used, &f),
	                 -EMSGSIZE);
	assert_string_equal(err.msg,
	                    "request frame of 1048577 bytes exceeds the 1048576-byte limit");
	assert_null(d.buf);
	cl_frame_decoder_done(&d);

	assert_int_equal(cl_frame_decoder_init(&d, CL_FRAME_MODE_STREAM, 0), 0);
	assert_int_equal(cl_frame_decoder_feed(&d, "\x02\xff\xff\xff\xff", 5, &err, &used, &f),
	                 -EMSGSIZE);
	assert_string_equal(err.msg, "frame of 4294967295 bytes exceeds the 65536-byte limit");
	cl_frame_decoder_done(&d);
}

static void test_invalid_stream_headers_are_rejected(void **state)
{
	static const struct {
		const char *bytes;
		size_t len;
		const char *msg;
	} cases[] = {
	        {"\x00", 1, "unknown stream frame type 0"},
	        {"\x05\x00\x00\x00\x00", 5, "unknown stream frame type 5"},
	        {"\xff", 1, "unknown stream frame type 255"},
	        {"\x03\x00\x00\x00\x03", 5, "exit frame of 3 bytes, expected 4"},
	        {"\x03\x00\x00\x00\x05", 5, "exit frame of 5 bytes, expected 4"},
	        {"\x03\x00\x00\x00\x00", 5, "exit frame of 0 bytes, expected 4"},
	        {"\x04\x00\x00\x00\x01", 5, "cancel frame of 1 bytes, expected 0"},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct cl_frame_decoder d;
		struct cl_error err = {""};
		struct cl_frame f;
		size_t used = 0;

		assert_int_equal(cl_frame_decoder_init(&d, CL_FRAME_MODE_STREAM, 0), 0);
		assert_int_equal(
		        cl_frame_decoder_feed(&d, cases[i].bytes, cases[i].len, &err, &used, &f),
		        -EBADMSG);
		assert_string_equal(err.msg, cases[i].msg);
		cl_frame_decoder_done(&d);
	}
}

static void test_empty_request_frame_is_rejected(void **state)
{
	struct cl_frame_decoder d;
	struct cl_error err = {""};
	struct cl_frame f;
	size_t used = 0;

	assert_int_equal(cl_frame_decoder_init(&d, CL_FRAME_MODE_REQUEST, 0), 0);
	assert_int_equal(cl_frame_decoder_feed(&d, "\0\0\0\0", 4, &err, &used, &f), -EBADMSG);
	assert_string_equal(err.msg, "empty request frame");
	cl_frame_decoder_done(&d);
}

static void test_error_state_is_sticky(void **state)
{
	struct cl_frame_decoder d;
	struct cl_error err = {""};
	struct cl_frame f;
	size_t used = 0;
	uint8_t good[16];

	assert_int_equal(cl_frame_encode_stream(CL_FRAME_STDOUT, "ok", 2, good, sizeof(good)), 7);
	assert_int_equal(cl_frame_decoder_init(&d, CL_FRAME_MODE_STREAM, 0), 0);
	assert_int_equal(cl_frame_decoder_feed(&d, "\x09", 1, &err, &used, &f), -EBADMSG);
	for (int i = 0; i < 3; i++) {
		memset(&err, 0, sizeof(err));
		assert_int_equal(cl_frame_decoder_feed(&d, good, 7, &err, &used, &f), -EBADMSG);
		assert_string_equal(err.msg, "unknown stream frame type 9");
		assert_int_equal(cl_frame_decoder_feed(&d, good, 0, NULL, &used, &f), -EBADMSG);
	}
	assert_false(cl_frame_decoder_is_idle(&d));
	assert_int_equal(cl_frame_decoder_finish(&d, &err), -EBADMSG);
	assert_string_equal(err.msg, "unknown stream frame type 9");
	cl_frame_decoder_done(&d);
}

static void test_exit_status_round_trips_as_signed_big_endian(void **state)
{
	static const int32_t statuses[] = {0, 1, 127, 255, 137, -1, INT32_MIN, INT32_MAX};

	for (size_t i = 0; i < ELEMENTSOF(statuses); i++) {
		struct cl_frame_decoder d;
		struct cl_frame f;
		uint8_t buf[9];
		size_t used = 0;

		assert_int_equal(cl_frame_encode_exit(statuses[i], buf, sizeof(buf)), 9);
		assert_int_equal(buf[0], 3);
		assert_memory_equal(buf + 1, "\0\0\0\4", 4);
		assert_int_equal(buf[5], (uint8_t)((uint32_t)statuses[i] >> 24));
		assert_int_equal(buf[8], (uint8_t)statuses[i]);
		assert_int_equal(cl_frame_decoder_init(&d, CL_FRAME_MODE_STREAM, 0), 0);
		assert_int_equal(cl_frame_decoder_feed(&d, buf, 9, NULL, &used, &f), 1);
		assert_int_equal(used, 9);
		assert_int_equal(f.type, CL_FRAME_EXIT);
		assert_int_equal(f.exit_status, statuses[i]);
		cl_frame_decoder_done(&d);
	}
}

static void test_encoders_reject_invalid_frames(void **state)
{
	uint8_t buf[16];
	_cleanup_free_ uint8_t *big = calloc(1, CL_FRAME_REQUEST_MAX_DEFAULT + 1);
	uint8_t *out = NULL;
	size_t out_len = 0;

	assert_non_null(big);
	assert_int_equal(cl_frame_encode_stream(0, "", 0, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(cl_frame_encode_stream(5, "", 0, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(cl_frame_encode_stream(CL_FRAME_REQUEST, "", 0, buf, sizeof(buf)),
	                 -EINVAL);
	assert_int_equal(cl_frame_encode_stream(CL_FRAME_EXIT, "abc", 3, buf, sizeof(buf)),
	                 -EINVAL);
	assert_int_equal(cl_frame_encode_stream(CL_FRAME_CANCEL, "a", 1, buf, sizeof(buf)),
	                 -EINVAL);
	assert_int_equal(cl_frame_encode_stream(CL_FRAME_STDOUT, "abcdef", 6, buf, 10), -ENOBUFS);
	assert_int_equal(cl_frame_encode_stream(CL_FRAME_STDOUT, "abcdef", 6, buf, 11), 11);
	assert_int_equal(cl_frame_encode_exit(0, buf, 8), -ENOBUFS);
	assert_int_equal(cl_frame_encode_request("{}", 2, buf, 5), -ENOBUFS);
	assert_int_equal(cl_frame_encode_stream(CL_FRAME_STDOUT, big,
	                                        CL_FRAME_STREAM_MAX_DEFAULT + 1, big,
	                                        CL_FRAME_REQUEST_MAX_DEFAULT),
	                 -EMSGSIZE);
	assert_int_equal(cl_frame_encode_request_alloc(big, CL_FRAME_REQUEST_MAX_DEFAULT + 1, &out,
	                                               &out_len),
	                 -EMSGSIZE);
	assert_int_equal(cl_frame_encode_stream_alloc(CL_FRAME_CANCEL, "x", 1, &out, &out_len),
	                 -EINVAL);
	assert_null(out);
}

static void test_allocating_encoders_match_buffer_encoders(void **state)
{
	uint8_t *out = NULL;
	size_t len = 0;

	assert_int_equal(cl_frame_encode_request_alloc("{}", 2, &out, &len), 0);
	assert_int_equal(len, 6);
	assert_memory_equal(out, "\0\0\0\2{}", 6);
	free(out);
	assert_int_equal(cl_frame_encode_stream_alloc(CL_FRAME_STDERR, "err", 3, &out, &len), 0);
	assert_int_equal(len, 8);
	assert_memory_equal(out, "\2\0\0\0\3err", 8);
	free(out);
	assert_int_equal(cl_frame_encode_stream_alloc(CL_FRAME_CANCEL, NULL, 0, &out, &len), 0);
	assert_int_equal(len, 5);
	assert_memory_equal(out, "\4\0\0\0\0", 5);
	free(out);
}

static void test_ack_bytes_are_validated(void **state)
{
	struct cl_error err = {""};
	enum cl_ack ack = 99;

	assert_int_equal(cl_ack_parse(0, &err, &ack), 0);
	assert_int_equal(ack, CL_ACK_ALLOWED);
	assert_int_equal(cl_ack_parse(1, &err, &ack), 0);
	assert_int_equal(ack, CL_ACK_DENIED);
	assert_int_equal(cl_ack_parse(2, &err, &ack), 0);
	assert_int_equal(ack, CL_ACK_PENDING);
	assert_int_equal(cl_ack_parse(3, &err, &ack), -EBADMSG);
	assert_string_equal(err.msg, "unknown ack byte 0x03");
	assert_int_equal(ack, CL_ACK_PENDING);
	assert_int_equal(cl_ack_parse(0xff, &err, &ack), -EBADMSG);
}

static void test_decoder_limits_are_checked_at_init(void **state)
{
	struct cl_frame_decoder d;

	assert_int_equal(cl_frame_decoder_init(&d, CL_FRAME_MODE_REQUEST, 0), 0);
	assert_int_equal(d.limit, CL_FRAME_REQUEST_MAX_DEFAULT);
	assert_int_equal(cl_frame_decoder_init(&d, CL_FRAME_MODE_STREAM, 0), 0);
	assert_int_equal(d.limit, CL_FRAME_STREAM_MAX_DEFAULT);
	assert_int_equal(cl_frame_decoder_init(&d, CL_FRAME_MODE_STREAM, CL_FRAME_LIMIT_CEILING),
	                 0);
	assert_int_equal(
	        cl_frame_decoder_init(&d, CL_FRAME_MODE_STREAM, CL_FRAME_LIMIT_CEILING + 1),
	        -EINVAL);
	assert_int_equal(cl_frame_decoder_init(&d, 7, 0), -EINVAL);
	cl_frame_decoder_done(NULL);
}

static void test_feed_stops_after_each_frame(void **state)
{
	uint8_t buf[32];
	struct cl_frame_decoder d;
	struct cl_frame f;
	size_t used = 0;
	int n;

	n = cl_frame_encode_stream(CL_FRAME_STDOUT, "a", 1, buf, sizeof(buf));
	n += cl_frame_encode_stream(CL_FRAME_STDOUT, "bc", 2, buf + n, sizeof(buf) - (size_t)n);
	assert_int_equal(cl_frame_decoder_init(&d, CL_FRAME_MODE_STREAM, 0), 0);
	assert_int_equal(cl_frame_decoder_feed(&d, buf, (size_t)n, NULL, &used, &f), 1);
	assert_int_equal(used, 6);
	assert_memory_equal(f.payload, "a", 1);
	assert_int_equal(cl_frame_decoder_feed(&d, buf + used, (size_t)n - used, NULL, &used, &f),
	                 1);
	assert_int_equal(used, 7);
	assert_memory_equal(f.payload, "bc", 2);
	assert_int_equal(cl_frame_decoder_feed(&d, NULL, 0, NULL, &used, &f), 0);
	assert_int_equal(used, 0);
	cl_frame_decoder_done(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_stream_frames_decode_at_every_split_point),
	        cmocka_unit_test(test_request_frames_decode_at_every_split_point),
	        cmocka_unit_test(test_frames_decode_byte_by_byte),
	        cmocka_unit_test(test_truncated_stream_reports_incomplete_not_a_frame),
	        cmocka_unit_test(test_oversized_frames_are_rejected_from_the_header),
	        cmocka_unit_test(test_invalid_stream_headers_are_rejected),
	        cmocka_unit_test(test_empty_request_frame_is_rejected),
	        cmocka_unit_test(test_error_state_is_sticky),
	        cmocka_unit_test(test_exit_status_round_trips_as_signed_big_endian),
	        cmocka_unit_test(test_encoders_reject_invalid_frames),
	        cmocka_unit_test(test_allocating_encoders_match_buffer_encoders),
	        cmocka_unit_test(test_ack_bytes_are_validated),
	        cmocka_unit_test(test_decoder_limits_are_checked_at_init),
	        cmocka_unit_test(test_feed_stops_after_each_frame),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
