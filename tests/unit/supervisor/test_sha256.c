/* SHA-256 against the FIPS 180-2 example vectors (appendix B: one block, two blocks, a million
 * "a"), the empty message, and every split of a message into two updates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "supervisor/approval/sha256.h"

static void hex_of(const void *data, size_t len, char out[65])
{
	struct sha256 ctx;
	uint8_t d[SHA256_DIGEST_SIZE];

	sha256_init(&ctx);
	sha256_update(&ctx, data, len);
	sha256_final(&ctx, d);
	sha256_hex(d, out);
}

static void test_fips_180_2_vectors(void **state)
{
	static const char *const two_blocks =
	        "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	char out[65];

	hex_of("abc", 3, out);
	assert_string_equal(out,
	                    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	hex_of(two_blocks, strlen(two_blocks), out);
	assert_string_equal(out,
	                    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	hex_of("", 0, out);
	assert_string_equal(out,
	                    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

/* RFC 4231 test cases 1, 2 and 6 (a key longer than a block). */
static void test_hmac_rfc_4231(void **state)
{
	uint8_t key[131], mac[SHA256_DIGEST_SIZE];
	char out[65];
	static const char *const long_msg =
	        "Test Using Larger Than Block-Size Key - Hash Key First";

	memset(key, 0x0b, 20);
	hmac_sha256(key, 20, "Hi There", 8, mac);
	sha256_hex(mac, out);
	assert_string_equal(out,
	                    "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
	hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, mac);
	sha256_hex(mac, out);
	assert_string_equal(out,
	                    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	memset(key, 0xaa, sizeof(key));
	hmac_sha256(key, sizeof(key), long_msg, strlen(long_msg), mac);
	sha256_hex(mac, out);
	assert_string_equal(out,
	                    "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

static void test_a_million_a_in_uneven_pieces(void **state)
{
	static char a[1000];
	struct sha256 ctx;
	uint8_t d[SHA256_DIGEST_SIZE];
	char out[65];
	size_t done = 0, piece = 1;

	memset(a, 'a', sizeof(a));
	sha256_init(&ctx);
	while (done < 1000000) {
		size_t n = piece < 1000000 - done ? piece : 1000000 - done;

		sha256_update(&ctx, a, n);
		done += n;
		piece = piece * 7 % 997 + 1; /* 1..997 bytes, crossing block ends every way */
	}
	sha256_final(&ctx, d);
	sha256_hex(d, out);
	assert_string_equal(out,
	                    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* The padding boundaries (55, 56, 63, 64 bytes) and any split give the one-piece digest. */
static void test_every_split_gives_the_same_digest(void **state)
{
	char msg[130], whole[65], split[65];

	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (char)('A' + i % 26);
	for (size_t len = 0; len <= sizeof(msg); len++) {
		hex_of(msg, len, whole);
		for (size_t cut = 0; cut <= len; cut++) {
			struct sha256 ctx;
			uint8_t d[SHA256_DIGEST_SIZE];

			sha256_init(&ctx);
			sha256_update(&ctx, msg, cut);
			sha256_update(&ctx, msg + cut, len - cut);
			sha256_final(&ctx, d);
			sha256_hex(d, split);
			if (strcmp(whole, split))
				fail_msg("length %zu cut at %zu", len, cut);
		}
	}
	/* One known value at the 56-byte boundary (two padding blocks). */
	hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, whole);
	assert_string_equal(whole,
	                    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_fips_180_2_vectors),
	        cmocka_unit_test(test_hmac_rfc_4231),
	        cmocka_unit_test(test_a_million_a_in_uneven_pieces),
	        cmocka_unit_test(test_every_split_gives_the_same_digest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
