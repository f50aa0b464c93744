/* Frame decoders: decoding in chunks derived from the input must give exactly what decoding in
 * one piece gives (frames, final state, error message), and the frames must re-encode to the
 * bytes they came from. Input: [mode][limit][chunk seed][stream…]; the first byte is also
 * checked as an ack byte. */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "protocol/frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct outcome {
	uint8_t *reencoded; /* frames encoded again, concatenated */
	size_t len;
	int result; /* last return: 0 or an error */
	int finish;
	struct cl_error err;
};

static void record(struct outcome *o, const struct cl_frame *f)
{
	size_t need = o->len + CL_FRAME_STREAM_HEADER_SIZE + f->len;
	int n;

	o->reencoded = realloc(o->reencoded, need);
	assert(o->reencoded);
	if (f->type == CL_FRAME_REQUEST) {
		n = cl_frame_encode_request(f->payload, f->len, o->reencoded + o->len,
		                            need - o->len);
	} else if (f->type == CL_FRAME_EXIT) {
		n = cl_frame_encode_exit(f->exit_status, o->reencoded + o->len, need - o->len);
	} else {
		n = cl_frame_encode_stream(f->type, f->payload, f->len, o->reencoded + o->len,
		                           need - o->len);
	}
	assert(n > 0);
	o->len += (size_t)n;
}

/* Decode data with chunk sizes drawn from seed (seed 0: everything at once). */
static void decode(enum cl_frame_mode mode, uint32_t limit, uint32_t seed, const uint8_t *data,
                   size_t size, struct outcome *o)
{
	struct cl_frame_decoder d;
	size_t pos = 0;

	memset(o, 0, sizeof(*o));
	assert(cl_frame_decoder_init(&d, mode, limit) == 0);
	while (pos < size || seed == 0) {
		size_t chunk = size - pos;

		if (seed) {
			seed = seed * 1103515245u + 12345u;
			chunk = (seed >> 16) % 17;
			if (chunk > size - pos)
				chunk = size - pos;
		}
		while (chunk > 0 || seed == 0) {
			struct cl_frame f;
			size_t used = 0;
			int r = cl_frame_decoder_feed(&d, data + pos, chunk, &o->err, &used, &f);

			if (r < 0) {
				o->result = r;
				goto out;
			}
			assert(used <= chunk);
			pos += used;
			chunk -= used;
			if (r == 0) {
				assert(chunk == 0);
				break;
			}
			assert(f.len <= d.limit);
			record(o, &f);
		}
		if (seed == 0)
			break;
	}
out:
	o->finish = cl_frame_decoder_finish(&d, NULL);
	if (o->result < 0) {
		/* Sticky. */
		struct cl_frame f;
		struct cl_error again;
		size_t used;

		assert(cl_frame_decoder_feed(&d, data, size, &again, &used, &f) == o->result);
		assert(strcmp(again.msg, o->err.msg) == 0);
		assert(o->finish == o->result);
	}
	cl_frame_decoder_done(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct outcome whole, chunked;
	enum cl_frame_mode mode;
	enum cl_ack ack;
	uint32_t limit, seed;

	if (size < 4)
		return 0;
	assert((cl_ack_parse(data[0], NULL, &ack) == 0) == (data[0] <= 2));
	mode = data[0] & 1 ? CL_FRAME_MODE_STREAM : CL_FRAME_MODE_REQUEST;
	limit = data[1] < 128 ? data[1] : 0; /* small limits or the default */
	seed = data[2] | 1u << 8 | (uint32_t)data[3] << 9;
	data += 4;
	size -= 4;

	decode(mode, limit, 0, data, size, &whole);
	decode(mode, limit, seed, data, size, &chunked);

	assert(whole.result == chunked.result);
	assert(whole.finish == chunked.finish);
	assert(whole.len == chunked.len);
	assert(whole.len <= size);
	assert(whole.len == 0 || memcmp(whole.reencoded, chunked.reencoded, whole.len) == 0);
	assert(whole.len == 0 || memcmp(whole.reencoded, data, whole.len) == 0);
	if (whole.result < 0)
		assert(strcmp(whole.err.msg, chunked.err.msg) == 0);
	/* Decoding stopped without error: every byte was a complete frame or a valid prefix. */
	if (whole.result == 0 && whole.finish == 0)
		assert(whole.len == size);
	free(whole.reencoded);
	free(chunked.reencoded);
	return 0;
}
