/* The verdicts of execs decided a moment ago; see verdict_cache.h. */
#include "supervisor/exec/verdict_cache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct verdict_slot {
	unsigned char *key; /* malloc'd, len bytes; NULL: empty */
	size_t len;
	uint64_t hash;
	struct policy_result res;
};

struct verdict_cache {
	struct verdict_slot slots[VERDICT_CACHE_SLOTS];
	uint64_t hits, misses;
};

int verdict_cache_new(struct verdict_cache **ret)
{
	struct verdict_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	*ret = c;
	return 0;
}

void verdict_cache_clear(struct verdict_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < VERDICT_CACHE_SLOTS; i++) {
		free(c->slots[i].key);
		c->slots[i].key = NULL;
		c->slots[i].len = 0;
	}
}

void verdict_cache_free(struct verdict_cache *c)
{
	verdict_cache_clear(c);
	free(c);
}

/* ---- the key: length-prefixed fields, so that no two execs share one -------------------- */

static void put_bytes(struct verdict_key *k, const void *p, size_t n)
{
	if (k->len == SIZE_MAX || n > VERDICT_KEY_MAX - k->len) {
		k->len = SIZE_MAX; /* too long: not kept */
		return;
	}
	memcpy(k->bytes + k->len, p, n);
	k->len += n;
}

static void put_u64(struct verdict_key *k, uint64_t v)
{
	put_bytes(k, &v, sizeof(v));
}

/* NULL and "" differ: NULL has no length but a marker. */
static void put_str(struct verdict_key *k, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	put_u64(k, s ? (uint64_t)n : UINT64_MAX);
	if (s)
		put_bytes(k, s, n);
}

static void put_file(struct verdict_key *k, const struct exec_file *f)
{
	put_u64(k, f->exists);
	put_u64(k, f->dev);
	put_u64(k, f->ino);
	put_u64(k, f->mnt_id);
	put_u64(k, f->ctime_ns);
	put_u64(k, f->size);
	put_u64(k, f->kdev);
	put_u64(k, (uint64_t)f->view);
	/* The name the path led to: rules match it (verdict_cache.h). */
	put_str(k, f->real_path);
}

void verdict_key_of(const struct exec_target *t, struct verdict_key *ret)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	ret->len = 0;
	put_str(ret, t->path);
	put_str(ret, t->abs_path);
	put_file(ret, &t->file);
	put_u64(ret, t->script);
	if (t->script) {
		put_str(ret, t->interp);
		put_str(ret, t->interp_arg);
		put_file(ret, &t->interp_file);
	}
	put_u64(ret, t->argv_truncated);
	put_u64(ret, t->argc);
	for (size_t i = 0; i < t->argc; i++)
		put_str(ret, t->argv[i]);
	if (ret->len == SIZE_MAX) {
		ret->len = 0;
		return;
	}
	for (size_t i = 0; i < ret->len; i++)
		h = (h ^ ret->bytes[i]) * 0x100000001b3ull;
	ret->hash = h;
}

/* ---- the table ---------------------------------------------------------------------------- */

static struct verdict_slot *slot_of(struct verdict_cache *c, const struct verdict_key *k)
{
	return &c->slots[(k->hash >> 17) % VERDICT_CACHE_SLOTS];
}

bool verdict_cache_find(struct verdict_cache *c, const struct verdict_key *key,
                        struct policy_result *ret)
{
	const struct verdict_slot *s;

	if (!c || key->len == 0)
		return false;
	s = slot_of(c, key);
	if (!s->key || s->len != key->len || s->hash != key->hash ||
	    memcmp(s->key, key->bytes, key->len) != 0) {
		c->misses++;
		return false;
	}
	c->hits++;
	*ret = s->res;
	return true;
}

int verdict_cache_put(struct verdict_cache *c, const struct verdict_key *key,
                      const struct policy_result *res)
{
	struct verdict_slot *s;
	unsigned char *copy;

	if (!c || key->len == 0 || res->verdict != POLICY_ALLOW)
		return 0;
	copy = malloc(key->len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, key->bytes, key->len);
	s = slot_of(c, key);
	free(s->key);
	s->key = copy;
	s->len = key->len;
	s->hash = key->hash;
	s->res = *res;
	return 0;
}

void verdict_cache_stats(const struct verdict_cache *c, uint64_t *ret_hits, uint64_t *ret_misses)
{
	*ret_hits = c ? c->hits : 0;
	*ret_misses = c ? c->misses : 0;
}
