/* The facts of files recently executed; see file_facts.h. */
#include "notifier/file_facts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct file_facts_slot {
	bool used;
	struct file_facts_key key;
	struct file_facts facts;
};

struct file_facts_table {
	struct file_facts_slot slots[FILE_FACTS_SLOTS];
};

int file_facts_new(struct file_facts_table **ret)
{
	struct file_facts_table *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	*ret = t;
	return 0;
}

void file_facts_free(struct file_facts_table *t)
{
	free(t);
}

static unsigned slot_of(const struct file_facts_key *key)
{
	uint64_t h = key->ino * 0x9e3779b97f4a7c15ull;

	h ^= key->dev + (key->mnt_id << 17) + key->ctime_ns + (key->size << 7);
	h *= 0xff51afd7ed558ccdull;
	return (unsigned)((h >> 32) % FILE_FACTS_SLOTS);
}

static bool same_key(const struct file_facts_key *a, const struct file_facts_key *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->mnt_id == b->mnt_id &&
	       a->ctime_ns == b->ctime_ns && a->size == b->size;
}

const struct file_facts *file_facts_find(const struct file_facts_table *t,
                                         const struct file_facts_key *key)
{
	const struct file_facts_slot *s;

	if (!t)
		return NULL;
	s = &t->slots[slot_of(key)];
	return s->used && same_key(&s->key, key) ? &s->facts : NULL;
}

void file_facts_put(struct file_facts_table *t, const struct file_facts_key *key,
                    const struct file_facts *facts)
{
	struct file_facts_slot *s;

	if (!t)
		return;
	s = &t->slots[slot_of(key)];
	s->used = true;
	s->key = *key;
	s->facts = *facts;
}
