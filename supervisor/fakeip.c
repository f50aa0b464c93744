#include "supervisor/fakeip.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/domain.h"

#define NIL UINT32_MAX

static uint32_t hash_bytes(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint32_t h = 2166136261u; /* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

static size_t pow2_at_least(size_t n)
{
	size_t p = 16;

	while (p < n)
		p *= 2;
	return p;
}

/* ---- fakeip ------------------------------------------------------------------------------ */

struct fake_entry {
	char *name; /* NULL: free */
	uint32_t offset;
	uint32_t hash_next;
	uint32_t lru_prev, lru_next; /* lru_head: most recent */
};

struct fakeip_map {
	uint8_t prefix[8];
	size_t capacity, size;
	struct fake_entry *entries;
	uint32_t *buckets; /* name hash → entry index, NIL */
	size_t n_buckets;
	uint32_t *owner; /* pool offset → entry index + 1, 0: free */
	uint32_t cursor; /* next offset to hand out */
	uint32_t lru_head, lru_tail;
};

int fakeip_map_new(const uint8_t ula_prefix[8], size_t capacity, struct fakeip_map **ret)
{
	struct fakeip_map *m;

	if (capacity == 0 || capacity > FAKEIP_MAX_CAPACITY || ula_prefix[0] != 0xfd)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	memcpy(m->prefix, ula_prefix, 8);
	m->capacity = capacity;
	m->n_buckets = pow2_at_least(capacity * 2);
	m->entries = calloc(capacity, sizeof(*m->entries));
	m->buckets = malloc(m->n_buckets * sizeof(*m->buckets));
	m->owner = calloc(FAKEIP_POOL_SIZE, sizeof(*m->owner));
	if (!m->entries || !m->buckets || !m->owner) {
		fakeip_map_free(m);
		return -ENOMEM;
	}
	memset(m->buckets, 0xff, m->n_buckets * sizeof(*m->buckets));
	m->cursor = 1; /* 198.18.0.0 is the network's own address */
	m->lru_head = m->lru_tail = NIL;
	*ret = m;
	return 0;
}

void fakeip_map_free(struct fakeip_map *m)
{
	if (!m)
		return;
	for (size_t i = 0; m->entries && i < m->size; i++)
		free(m->entries[i].name);
	free(m->entries);
	free(m->buckets);
	free(m->owner);
	free(m);
}

static void lru_unlink(struct fakeip_map *m, uint32_t i)
{
	struct fake_entry *e = &m->entries[i];

	if (e->lru_prev != NIL)
		m->entries[e->lru_prev].lru_next = e->lru_next;
	else
		m->lru_head = e->lru_next;
	if (e->lru_next != NIL)
		m->entries[e->lru_next].lru_prev = e->lru_prev;
	else
		m->lru_tail = e->lru_prev;
}

static void lru_push_front(struct fakeip_map *m, uint32_t i)
{
	struct fake_entry *e = &m->entries[i];

	e->lru_prev = NIL;
	e->lru_next = m->lru_head;
	if (m->lru_head != NIL)
		m->entries[m->lru_head].lru_prev = i;
	m->lru_head = i;
	if (m->lru_tail == NIL)
		m->lru_tail = i;
}

static void touch(struct fakeip_map *m, uint32_t i)
{
	if (m->lru_head == i)
		return;
	lru_unlink(m, i);
	lru_push_front(m, i);
}

static uint32_t *bucket_of(struct fakeip_map *m, const char *name)
{
	return &m->buckets[hash_bytes(name, strlen(name)) & (m->n_buckets - 1)];
}

static uint32_t find_name(struct fakeip_map *m, const char *name)
{
	for (uint32_t i = *bucket_of(m, name); i != NIL; i = m->entries[i].hash_next)
		if (strcmp(m->entries[i].name, name) == 0)
			return i;
	return NIL;
}

static void addresses_of(const struct fakeip_map *m, uint32_t offset, struct in_addr *v4,
                         struct in6_addr *v6)
{
	uint32_t a = htonl(FAKEIP_V4_NET + offset);

	if (v4)
		memcpy(v4, &a, 4);
	if (v6) {
		memset(v6, 0, sizeof(*v6));
		memcpy(v6->s6_addr, m->prefix, 8);
		memcpy(v6->s6_addr + 12, &a, 4); /* ends in the IPv4 address, for people */
	}
}

/* Evict the least recently used entry; returns its index, now free. */
static uint32_t evict(struct fakeip_map *m)
{
	uint32_t i = m->lru_tail;
	struct fake_entry *e = &m->entries[i];
	uint32_t *link = bucket_of(m, e->name);

	while (*link != i)
		link = &m->entries[*link].hash_next;
	*link = e->hash_next;
	lru_unlink(m, i);
	m->owner[e->offset] = 0;
	free(e->name);
	e->name = NULL;
	return i;
}

int fakeip_map_assign(struct fakeip_map *m, const char *name, struct in_addr *ret_v4,
                      struct in6_addr *ret_v6)
{
	size_t len = strlen(name);
	uint32_t i, *bucket;
	char *copy;

	if (len == 0 || len > DOMAIN_HOST_MAX)
		return -EINVAL;
	i = find_name(m, name);
	if (i != NIL) {
		touch(m, i);
		addresses_of(m, m->entries[i].offset, ret_v4, ret_v6);
		return 0;
	}
	copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	i = m->size < m->capacity ? (uint32_t)m->size++ : evict(m);
	/* The next free offset round the pool (there is one: capacity ≤ half the pool). */
	while (m->owner[m->cursor] != 0)
		m->cursor = m->cursor + 1 >= FAKEIP_POOL_SIZE - 1 ? 1 : m->cursor + 1;
	m->entries[i] = (struct fake_entry){.name = copy, .offset = m->cursor};
	m->owner[m->cursor] = i + 1;
	m->cursor = m->cursor + 1 >= FAKEIP_POOL_SIZE - 1 ? 1 : m->cursor + 1;
	bucket = bucket_of(m, copy);
	m->entries[i].hash_next = *bucket;
	*bucket = i;
	lru_push_front(m, i);
	addresses_of(m, m->entries[i].offset, ret_v4, ret_v6);
	return 0;
}

/* The pool offset of ADDR, or 0 when outside the pools. */
static uint32_t offset_of(const struct fakeip_map *m, int family, const void *addr)
{
	uint32_t a;

	if (family == AF_INET) {
		memcpy(&a, addr, 4);
	} else if (family == AF_INET6) {
		const uint8_t *b = addr;
		static const uint8_t zero[4];

		if (memcmp(b, m->prefix, 8) != 0 || memcmp(b + 8, zero, 4) != 0)
			return 0;
		memcpy(&a, b + 12, 4);
	} else {
		return 0;
	}
	a = ntohl(a);
	if ((a & ~(FAKEIP_POOL_SIZE - 1)) != FAKEIP_V4_NET)
		return 0;
	a -= FAKEIP_V4_NET;
	return a >= FAKEIP_POOL_SIZE - 1 ? 0 : a;
}

bool fakeip_map_is_fake(const struct fakeip_map *m, int family, const void *addr)
{
	const uint8_t *b = addr;
	uint32_t a;

	if (family == AF_INET) {
		memcpy(&a, addr, 4);
		return (ntohl(a) & ~(FAKEIP_POOL_SIZE - 1)) == FAKEIP_V4_NET;
	}
	return family == AF_INET6 && memcmp(b, m->prefix, 8) == 0;
}

int fakeip_map_lookup(struct fakeip_map *m, int family, const void *addr, const char **ret_name)
{
	uint32_t off = offset_of(m, family, addr), owner;

	if (off == 0)
		return -ENOENT;
	owner = m->owner[off];
	if (owner == 0)
		return -ENOENT;
	touch(m, owner - 1);
	*ret_name = m->entries[owner - 1].name;
	return 0;
}

size_t fakeip_map_size(const struct fakeip_map *m)
{
	return m->size;
}

/* ---- realip ------------------------------------------------------------------------------ */

struct real_name {
	char *name; /* NULL: free slot */
	uint64_t expires;
};

struct real_entry {
	int family; /* 0: free */
	uint8_t addr[16];
	uint32_t hash_next;
	struct real_name names[REALIP_NAMES_PER_ADDR];
};

struct realip_map {
	size_t max, size;
	struct real_entry *entries;
	uint32_t *buckets;
	size_t n_buckets;
	uint32_t free_head; /* free entries chained through hash_next */
};

int realip_map_new(size_t max_addrs, struct realip_map **ret)
{
	struct realip_map *m;

	if (max_addrs == 0 || max_addrs > (1u << 20))
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->max = max_addrs;
	m->n_buckets = pow2_at_least(max_addrs * 2);
	m->entries = calloc(max_addrs, sizeof(*m->entries));
	m->buckets = malloc(m->n_buckets * sizeof(*m->buckets));
	if (!m->entries || !m->buckets) {
		realip_map_free(m);
		return -ENOMEM;
	}
	memset(m->buckets, 0xff, m->n_buckets * sizeof(*m->buckets));
	for (size_t i = 0; i < max_addrs; i++)
		m->entries[i].hash_next = i + 1 < max_addrs ? (uint32_t)i + 1 : NIL;
	m->free_head = 0;
	*ret = m;
	return 0;
}

void realip_map_free(struct realip_map *m)
{
	if (!m)
		return;
	for (size_t i = 0; m->entries && i < m->max; i++)
		for (size_t k = 0; k < REALIP_NAMES_PER_ADDR; k++)
			free(m->entries[i].names[k].name);
	free(m->entries);
	free(m->buckets);
	free(m);
}

static size_t addr_len(int family)
{
	return family == AF_INET ? 4 : family == AF_INET6 ? 16 : 0;
}

static uint32_t *real_bucket(const struct realip_map *m, int family, const void *addr)
{
	return &m->buckets[hash_bytes(addr, addr_len(family)) & (m->n_buckets - 1)];
}

static uint32_t real_find(const struct realip_map *m, int family, const void *addr)
{
	for (uint32_t i = *real_bucket(m, family, addr); i != NIL; i = m->entries[i].hash_next)
		if (m->entries[i].family == family &&
		    memcmp(m->entries[i].addr, addr, addr_len(family)) == 0)
			return i;
	return NIL;
}

static void real_remove(struct realip_map *m, uint32_t i)
{
	struct real_entry *e = &m->entries[i];
	uint32_t *link = real_bucket(m, e->family, e->addr);

	while (*link != i)
		link = &m->entries[*link].hash_next;
	*link = e->hash_next;
	for (size_t k = 0; k < REALIP_NAMES_PER_ADDR; k++)
		free(e->names[k].name);
	memset(e, 0, sizeof(*e));
	e->hash_next = m->free_head;
	m->free_head = i;
	m->size--;
}

static uint64_t latest_expiry(const struct real_entry *e)
{
	uint64_t t = 0;

	for (size_t k = 0; k < REALIP_NAMES_PER_ADDR; k++)
		if (e->names[k].name && e->names[k].expires > t)
			t = e->names[k].expires;
	return t;
}

void realip_map_expire(struct realip_map *m, uint64_t now_ms)
{
	for (uint32_t i = 0; i < m->max; i++) {
		struct real_entry *e = &m->entries[i];

		if (!e->family)
			continue;
		for (size_t k = 0; k < REALIP_NAMES_PER_ADDR; k++)
			if (e->names[k].name && e->names[k].expires <= now_ms) {
				free(e->names[k].name);
				e->names[k].name = NULL;
			}
		if (latest_expiry(e) == 0)
			real_remove(m, i);
	}
}

int realip_map_record(struct realip_map *m, int family, const void *addr, const char *name,
                      uint64_t now_ms, uint64_t ttl_ms)
{
	uint64_t expires = now_ms + ttl_ms < now_ms ? UINT64_MAX : now_ms + ttl_ms;
	struct real_entry *e;
	struct real_name *slot = NULL;
	uint32_t i, *bucket;
	size_t len = strlen(name);

	if (addr_len(family) == 0 || len == 0 || len > DOMAIN_HOST_MAX)
		return -EINVAL;
	i = real_find(m, family, addr);
	if (i == NIL) {
		if (m->size == m->max)
			realip_map_expire(m, now_ms);
		if (m->size == m->max) {
			/* Still full: the address whose names all expire first goes. */
			uint32_t victim = 0;
			for (uint32_t k = 1; k < m->max; k++)
				if (latest_expiry(&m->entries[k]) <
				    latest_expiry(&m->entries[victim]))
					victim = k;
			real_remove(m, victim);
		}
		i = m->free_head;
		e = &m->entries[i];
		m->free_head = e->hash_next;
		e->family = family;
		memcpy(e->addr, addr, addr_len(family));
		bucket = real_bucket(m, family, addr);
		e->hash_next = *bucket;
		*bucket = i;
		m->size++;
	}
	e = &m->entries[i];
	for (size_t k = 0; k < REALIP_NAMES_PER_ADDR; k++) {
		struct real_name *n = &e->names[k];

		if (n->name && strcmp(n->name, name) == 0) {
			if (expires > n->expires)
				n->expires = expires;
			return 0;
		}
		/* Otherwise the free slot, else the one expiring first. */
		if (!slot || (slot->name && (!n->name || n->expires < slot->expires)))
			slot = n;
	}
	char *copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	free(slot->name);
	slot->name = copy;
	slot->expires = expires;
	return 0;
}

int realip_map_lookup(const struct realip_map *m, int family, const void *addr, uint64_t now_ms,
                      const char **ret_names, size_t max, size_t *ret_n)
{
	uint32_t i;
	size_t n = 0;

	if (addr_len(family) == 0)
		return -ENOENT;
	i = real_find(m, family, addr);
	if (i == NIL)
		return -ENOENT;
	for (size_t k = 0; k < REALIP_NAMES_PER_ADDR && n < max; k++) {
		const struct real_name *nm = &m->entries[i].names[k];
		if (nm->name && nm->expires > now_ms)
			ret_names[n++] = nm->name;
	}
	if (n == 0)
		return -ENOENT;
	*ret_n = n;
	return 0;
}

size_t realip_map_size(const struct realip_map *m)
{
	return m->size;
}
