/* SHA-256 (FIPS 180-4), for the audit log's digest of an argument list too long to write out,
 * and HMAC-SHA-256 for the API files' proof of identity.
 * Pure; no library of ours provides it (libcrypto is not among them), and the function is
 * small and fixed. Tested against the FIPS 180-2 example vectors. */
#ifndef CLOISTER_SHA256_H
#define CLOISTER_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_SIZE 32

struct sha256 {
	uint32_t h[8];
	uint64_t bytes; /* hashed so far */
	uint8_t block[64];
	size_t used; /* bytes of block */
};

void sha256_init(struct sha256 *ctx);
void sha256_update(struct sha256 *ctx, const void *data, size_t len);
/* The digest of everything given to sha256_update(); CTX must be initialised again before
 * reuse. */
void sha256_final(struct sha256 *ctx, uint8_t ret_digest[SHA256_DIGEST_SIZE]);

/* HMAC-SHA-256 (RFC 2104) of DATA under KEY: how a supervisor proves it knows the secret of its
 * API file without showing it. */
void hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
                 uint8_t ret_mac[SHA256_DIGEST_SIZE]);

/* DIGEST as 64 lowercase hex characters and a NUL. */
void sha256_hex(const uint8_t digest[SHA256_DIGEST_SIZE], char ret_hex[2 * SHA256_DIGEST_SIZE + 1]);

#endif
