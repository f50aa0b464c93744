/* SHA-256 as FIPS 180-4 section 6.2 describes it; see sha256.h. */
#include "supervisor/approval/sha256.h"

#include <string.h>

static const uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
};

static uint32_t ror(uint32_t x, unsigned n)
{
	return x >> n | x << (32 - n);
}

static void compress(uint32_t h[8], const uint8_t block[64])
{
	uint32_t w[64], a, b, c, d, e, f, g, hh;

	for (int t = 0; t < 16; t++)
		w[t] = (uint32_t)block[4 * t] << 24 | (uint32_t)block[4 * t + 1] << 16 |
		       (uint32_t)block[4 * t + 2] << 8 | block[4 * t + 3];
	for (int t = 16; t < 64; t++) {
		uint32_t s0 = ror(w[t - 15], 7) ^ ror(w[t - 15], 18) ^ w[t - 15] >> 3;
		uint32_t s1 = ror(w[t - 2], 17) ^ ror(w[t - 2], 19) ^ w[t - 2] >> 10;

		w[t] = w[t - 16] + s0 + w[t - 7] + s1;
	}
	a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
	for (int t = 0; t < 64; t++) {
		uint32_t t1 = hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) +
		              k[t] + w[t];
		uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));

		hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
	}
	h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

void sha256_init(struct sha256 *ctx)
{
	static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
	                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

	memcpy(ctx->h, h0, sizeof(h0));
	ctx->bytes = 0;
	ctx->used = 0;
}

void sha256_update(struct sha256 *ctx, const void *data, size_t len)
{
	const uint8_t *p = data;

	ctx->bytes += len;
	if (ctx->used) {
		size_t n = 64 - ctx->used < len ? 64 - ctx->used : len;

		memcpy(ctx->block + ctx->used, p, n);
		ctx->used += n;
		p += n;
		len -= n;
		if (ctx->used < 64)
			return;
		compress(ctx->h, ctx->block);
		ctx->used = 0;
	}
	for (; len >= 64; p += 64, len -= 64)
		compress(ctx->h, p);
	memcpy(ctx->block, p, len);
	ctx->used = len;
}

void sha256_final(struct sha256 *ctx, uint8_t ret_digest[SHA256_DIGEST_SIZE])
{
	uint64_t bits = ctx->bytes * 8;

	/* The padding: a 1 bit, zeros up to 56 bytes into a block, the length in bits. */
	ctx->block[ctx->used++] = 0x80;
	if (ctx->used > 56) {
		memset(ctx->block + ctx->used, 0, 64 - ctx->used);
		compress(ctx->h, ctx->block);
		ctx->used = 0;
	}
	memset(ctx->block + ctx->used, 0, 56 - ctx->used);
	for (int i = 0; i < 8; i++)
		ctx->block[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
	compress(ctx->h, ctx->block);
	for (int i = 0; i < 8; i++) {
		ret_digest[4 * i] = (uint8_t)(ctx->h[i] >> 24);
		ret_digest[4 * i + 1] = (uint8_t)(ctx->h[i] >> 16);
		ret_digest[4 * i + 2] = (uint8_t)(ctx->h[i] >> 8);
		ret_digest[4 * i + 3] = (uint8_t)ctx->h[i];
	}
}

void sha256_hex(const uint8_t digest[SHA256_DIGEST_SIZE], char ret_hex[2 * SHA256_DIGEST_SIZE + 1])
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < SHA256_DIGEST_SIZE; i++) {
		ret_hex[2 * i] = hex[digest[i] >> 4];
		ret_hex[2 * i + 1] = hex[digest[i] & 0xf];
	}
	ret_hex[2 * SHA256_DIGEST_SIZE] = '\0';
}

void hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
                 uint8_t ret_mac[SHA256_DIGEST_SIZE])
{
	uint8_t kb[64] = {0}, pad[64], inner[SHA256_DIGEST_SIZE];
	struct sha256 ctx;

	if (key_len > sizeof(kb)) {
		sha256_init(&ctx);
		sha256_update(&ctx, key, key_len);
		sha256_final(&ctx, kb);
	} else if (key_len)
		memcpy(kb, key, key_len);
	for (size_t i = 0; i < sizeof(pad); i++)
		pad[i] = kb[i] ^ 0x36;
	sha256_init(&ctx);
	sha256_update(&ctx, pad, sizeof(pad));
	sha256_update(&ctx, data, len);
	sha256_final(&ctx, inner);
	for (size_t i = 0; i < sizeof(pad); i++)
		pad[i] = kb[i] ^ 0x5c;
	sha256_init(&ctx);
	sha256_update(&ctx, pad, sizeof(pad));
	sha256_update(&ctx, inner, sizeof(inner));
	sha256_final(&ctx, ret_mac);
	explicit_bzero(kb, sizeof(kb));
	explicit_bzero(pad, sizeof(pad));
}
