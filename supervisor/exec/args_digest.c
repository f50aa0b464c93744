/* What an approved exec's arguments must be; see args_digest.h. */
#include "supervisor/exec/args_digest.h"

#include <string.h>

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static void sipround(struct args_sip *s)
{
	s->v0 += s->v1, s->v1 = ROTL(s->v1, 13), s->v1 ^= s->v0, s->v0 = ROTL(s->v0, 32);
	s->v2 += s->v3, s->v3 = ROTL(s->v3, 16), s->v3 ^= s->v2;
	s->v0 += s->v3, s->v3 = ROTL(s->v3, 21), s->v3 ^= s->v0;
	s->v2 += s->v1, s->v1 = ROTL(s->v1, 17), s->v1 ^= s->v2, s->v2 = ROTL(s->v2, 32);
}

static void sip_block(struct args_sip *s, uint64_t m)
{
	s->v3 ^= m;
	sipround(s);
	sipround(s);
	s->v0 ^= m;
}

void args_sip_init(struct args_sip *s, const uint64_t key[2])
{
	s->v0 = key[0] ^ 0x736f6d6570736575ULL;
	s->v1 = key[1] ^ 0x646f72616e646f6dULL;
	s->v2 = key[0] ^ 0x6c7967656e657261ULL;
	s->v3 = key[1] ^ 0x7465646279746573ULL;
	s->tail = 0;
	s->len = 0;
}

void args_sip_update(struct args_sip *s, const void *data, size_t n)
{
	const uint8_t *p = data;

	for (size_t i = 0; i < n; i++) {
		s->tail |= (uint64_t)p[i] << (8 * (s->len % 8));
		s->len++;
		if (s->len % 8 == 0) {
			sip_block(s, s->tail);
			s->tail = 0;
		}
	}
}

uint64_t args_sip_final(const struct args_sip *s)
{
	struct args_sip t = *s;
	uint64_t b = ((uint64_t)t.len << 56) | t.tail;

	sip_block(&t, b);
	t.v2 ^= 0xff;
	for (int i = 0; i < 4; i++)
		sipround(&t);
	return t.v0 ^ t.v1 ^ t.v2 ^ t.v3;
}

void args_digest_of_exec(const uint64_t key[2], const char *const *argv, size_t argc, bool script,
                         bool truncated, struct backstop_args *ret)
{
	struct args_sip s;
	size_t first = script ? 1 : 0;

	memset(ret, 0, sizeof(*ret));
	if (script && truncated) {
		ret->mode = BACKSTOP_ARGS_ANY;
		return;
	}
	ret->mode = script      ? BACKSTOP_ARGS_SUFFIX
	            : truncated ? BACKSTOP_ARGS_PREFIX
	                        : BACKSTOP_ARGS_FULL;
	args_sip_init(&s, key);
	if (argc == 0 && !script) {
		/* The kernel gives a program started with no arguments one empty argv[0]. */
		args_sip_update(&s, "", 1);
	}
	for (size_t i = first; i < argc; i++)
		args_sip_update(&s, argv[i], strlen(argv[i]) + 1);
	ret->len = (uint32_t)s.len;
	ret->hash = args_sip_final(&s);
}

bool args_digest_matches(const uint64_t key[2], const struct backstop_args *expect,
                         const void *area, size_t len)
{
	const uint8_t *p = area;
	struct args_sip s;

	switch (expect->mode) {
	case BACKSTOP_ARGS_ANY:
		return true;
	case BACKSTOP_ARGS_FULL:
		if (len != expect->len)
			return false;
		break;
	case BACKSTOP_ARGS_PREFIX:
		if (len < expect->len)
			return false;
		break;
	case BACKSTOP_ARGS_SUFFIX:
		if (len < expect->len)
			return false;
		p += len - expect->len;
		/* At a string boundary: the first string of the suffix is a whole one. */
		if (len > expect->len && p[-1] != '\0')
			return false;
		break;
	default:
		return false;
	}
	args_sip_init(&s, key);
	args_sip_update(&s, p, expect->len);
	return args_sip_final(&s) == expect->hash;
}
