/* Fake-IP and real-IP name tables: see fakeip.h.
 *
 * Both tables are the same structure: fixed slots, chained hash buckets (indices, not
 * pointers) and a least-recently-used list through the slots. In the fake table the slot
 * index is the address (network + 1 + index), so address → name needs no hashing. */
#include "supervisor/egress/fakeip.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NIL (-1)

struct slot {
	uint8_t *key; /* NULL: free */
	size_t key_len;
	char *value; /* real table: the name */
	uint32_t hash;
	int32_t bucket_next;        /* as buckets[] */
	int32_t lru_prev, lru_next; /* head: most recently used */
};

struct lru_map {
	size_t cap, used;
	uint32_t mask;
	/* A bucket's first slot's index + 1, 0 for none: calloc's pages, never touched until a
	 * name lands there (a table sized for the worst case costs its RSS only when used). */
	int32_t *buckets;
	struct slot *slots;
	int32_t head, tail;
};

struct fakeip {
	uint8_t key[16];
	struct lru_map fake;
	struct lru_map real;
};

/* SipHash-2-4 of DATA under KEY (the reference algorithm, written from its description). */
#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                          \
	do {                                                              \
		v0 += v1, v1 = ROTL(v1, 13), v1 ^= v0, v0 = ROTL(v0, 32); \
		v2 += v3, v3 = ROTL(v3, 16), v3 ^= v2;                    \
		v0 += v3, v3 = ROTL(v3, 21), v3 ^= v0;                    \
		v2 += v1, v1 = ROTL(v1, 17), v1 ^= v2, v2 = ROTL(v2, 32); \
	} while (0)

static uint64_t load_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint32_t keyed_hash(const uint8_t key[16], const uint8_t *data, size_t len)
{
	uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
	uint64_t v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
	uint64_t v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
	uint64_t b = (uint64_t)len << 56, m;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		m = load_le64(data + i);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	for (size_t j = 0; i + j < len; j++)
		b |= (uint64_t)data[i + j] << (8 * j);
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	b = v0 ^ v1 ^ v2 ^ v3;
	return (uint32_t)(b ^ (b >> 32));
}

static int map_init(struct lru_map *m, size_t cap)
{
	size_t nb = 1;

	while (nb < cap)
		nb <<= 1;
	m->cap = cap;
	m->used = 0;
	m->mask = (uint32_t)(nb - 1);
	m->head = m->tail = NIL;
	if (cap == 0)
		return 0;
	m->buckets = calloc(nb, sizeof(*m->buckets));
	m->slots = calloc(cap, sizeof(*m->slots));
	if (!m->buckets || !m->slots)
		return -ENOMEM;
	return 0;
}

static void map_done(struct lru_map *m)
{
	for (size_t i = 0; m->slots && i < m->cap; i++) {
		free(m->slots[i].key);
		free(m->slots[i].value);
	}
	free(m->slots);
	free(m->buckets);
}

static void lru_unlink(struct lru_map *m, int32_t i)
{
	struct slot *s = &m->slots[i];

	if (s->lru_prev != NIL)
		m->slots[s->lru_prev].lru_next = s->lru_next;
	else
		m->head = s->lru_next;
	if (s->lru_next != NIL)
		m->slots[s->lru_next].lru_prev = s->lru_prev;
	else
		m->tail = s->lru_prev;
}

static void lru_push_front(struct lru_map *m, int32_t i)
{
	struct slot *s = &m->slots[i];

	s->lru_prev = NIL;
	s->lru_next = m->head;
	if (m->head != NIL)
		m->slots[m->head].lru_prev = i;
	m->head = i;
	if (m->tail == NIL)
		m->tail = i;
}

static void touch(struct lru_map *m, int32_t i)
{
	if (m->head == i)
		return;
	lru_unlink(m, i);
	lru_push_front(m, i);
}

static int32_t map_find(struct lru_map *m, const uint8_t key16[16], const void *key, size_t len)
{
	uint32_t h;

	if (m->cap == 0)
		return NIL;
	h = keyed_hash(key16, key, len);
	for (int32_t n = m->buckets[h & m->mask]; n != 0; n = m->slots[n - 1].bucket_next) {
		struct slot *s = &m->slots[n - 1];

		if (s->hash == h && s->key_len == len && memcmp(s->key, key, len) == 0)
			return n - 1;
	}
	return NIL;
}

/* Empty slot I: out of its bucket and the LRU list. */
static void map_evict(struct lru_map *m, int32_t i)
{
	struct slot *s = &m->slots[i];

	for (int32_t *p = &m->buckets[s->hash & m->mask]; *p != 0;
	     p = &m->slots[*p - 1].bucket_next)
		if (*p == i + 1) {
			*p = s->bucket_next;
			break;
		}
	lru_unlink(m, i);
	free(s->key);
	free(s->value);
	s->key = NULL;
	s->value = NULL;
	m->used--;
}

/* A slot for KEY, new (the least recently used one is evicted when full). */
static int map_insert(struct lru_map *m, const uint8_t key16[16], const void *key, size_t len,
                      int32_t *ret)
{
	uint8_t *copy = malloc(len);
	int32_t i;
	struct slot *s;

	if (!copy)
		return -ENOMEM;
	memcpy(copy, key, len);
	if (m->used < m->cap) {
		/* Before the table first fills, slots are taken in order. */
		for (i = (int32_t)m->used; m->slots[i].key; i = (i + 1) % (int32_t)m->cap)
			;
	} else {
		i = m->tail;
		map_evict(m, i);
	}
	s = &m->slots[i];
	s->key = copy;
	s->key_len = len;
	s->hash = keyed_hash(key16, key, len);
	s->bucket_next = m->buckets[s->hash & m->mask];
	m->buckets[s->hash & m->mask] = i + 1;
	lru_push_front(m, i);
	m->used++;
	*ret = i;
	return 0;
}

int fakeip_new(size_t names, size_t real, const uint8_t key[16], struct fakeip **ret)
{
	struct fakeip *f;

	if (names == 0 || names > FAKEIP_MAX_NAMES || real > (1u << 24))
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	memcpy(f->key, key, 16);
	if (map_init(&f->fake, names) < 0 || map_init(&f->real, real) < 0) {
		fakeip_free(f);
		return -ENOMEM;
	}
	*ret = f;
	return 0;
}

void fakeip_free(struct fakeip *f)
{
	if (!f)
		return;
	map_done(&f->fake);
	map_done(&f->real);
	free(f);
}

static uint32_t net4(void)
{
	struct in_addr a;

	inet_pton(AF_INET, FAKEIP_NET4, &a);
	return ntohl(a.s_addr);
}

static void fake_addrs(int32_t i, struct in_addr *v4, struct in6_addr *v6)
{
	uint32_t n = (uint32_t)i + 1;

	if (v4)
		v4->s_addr = htonl(net4() + n);
	if (v6) {
		inet_pton(AF_INET6, FAKEIP_NET6, v6);
		v6->s6_addr[12] = (uint8_t)(n >> 24);
		v6->s6_addr[13] = (uint8_t)(n >> 16);
		v6->s6_addr[14] = (uint8_t)(n >> 8);
		v6->s6_addr[15] = (uint8_t)n;
	}
}

static bool valid_name(const char *name, size_t *ret_len)
{
	size_t len = name ? strnlen(name, DOMAIN_HOST_MAX + 1) : 0;

	if (len == 0 || len > DOMAIN_HOST_MAX)
		return false;
	*ret_len = len;
	return true;
}

int fakeip_assign(struct fakeip *f, const char *name, struct in_addr *ret_v4,
                  struct in6_addr *ret_v6)
{
	size_t len;
	int32_t i;

	if (!valid_name(name, &len))
		return -EINVAL;
	i = map_find(&f->fake, f->key, name, len);
	if (i != NIL) {
		touch(&f->fake, i);
	} else {
		int r = map_insert(&f->fake, f->key, name, len, &i);
		if (r < 0)
			return r;
	}
	fake_addrs(i, ret_v4, ret_v6);
	return 0;
}

/* The offset of ADDR in the fake ranges (1-based), 0 when outside. */
static uint32_t fake_offset(const struct sockaddr *addr)
{
	if (addr->sa_family == AF_INET) {
		uint32_t a = ntohl(((const struct sockaddr_in *)addr)->sin_addr.s_addr);
		uint32_t mask = ~((1u << (32 - FAKEIP_NET4_BITS)) - 1);

		return (a & mask) == net4() ? a - net4() : 0;
	}
	if (addr->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)addr)->sin6_addr;
		struct in6_addr net;

		if (IN6_IS_ADDR_V4MAPPED(a)) {
			struct sockaddr_in v4 = {.sin_family = AF_INET};

			memcpy(&v4.sin_addr, &a->s6_addr[12], 4);
			return fake_offset((const struct sockaddr *)&v4);
		}
		inet_pton(AF_INET6, FAKEIP_NET6, &net);
		if (memcmp(a->s6_addr, net.s6_addr, 12) != 0)
			return 0;
		return (uint32_t)a->s6_addr[12] << 24 | (uint32_t)a->s6_addr[13] << 16 |
		       (uint32_t)a->s6_addr[14] << 8 | a->s6_addr[15];
	}
	return 0;
}

bool fakeip_is_fake(const struct sockaddr *addr)
{
	return fake_offset(addr) != 0;
}

int fakeip_lookup(struct fakeip *f, const struct sockaddr *addr, char *ret_name)
{
	uint32_t off = fake_offset(addr);
	struct slot *s;

	if (off == 0)
		return -EINVAL;
	if (off > f->fake.cap)
		return -ENOENT;
	s = &f->fake.slots[off - 1];
	if (!s->key)
		return -ENOENT;
	touch(&f->fake, (int32_t)(off - 1));
	memcpy(ret_name, s->key, s->key_len);
	ret_name[s->key_len] = '\0';
	return 0;
}

/* Real-table key: the family byte, then the address. */
static size_t real_key(int family, const void *addr, uint8_t key[17])
{
	key[0] = (uint8_t)family;
	if (family == AF_INET) {
		memcpy(key + 1, addr, 4);
		return 5;
	}
	memcpy(key + 1, addr, 16);
	return 17;
}

int fakeip_record_real(struct fakeip *f, int family, const void *addr, const char *name)
{
	uint8_t key[17];
	size_t klen, len;
	int32_t i;
	char *value;

	if ((family != AF_INET && family != AF_INET6) || !valid_name(name, &len))
		return -EINVAL;
	if (f->real.cap == 0)
		return -ENOSPC;
	value = strndup(name, len);
	if (!value)
		return -ENOMEM;
	klen = real_key(family, addr, key);
	i = map_find(&f->real, f->key, key, klen);
	if (i != NIL) {
		touch(&f->real, i);
	} else {
		int r = map_insert(&f->real, f->key, key, klen, &i);
		if (r < 0) {
			free(value);
			return r;
		}
	}
	free(f->real.slots[i].value);
	f->real.slots[i].value = value;
	return 0;
}

int fakeip_lookup_real(struct fakeip *f, const struct sockaddr *addr, char *ret_name)
{
	uint8_t key[17];
	size_t klen;
	int32_t i;

	if (addr->sa_family == AF_INET) {
		klen = real_key(AF_INET, &((const struct sockaddr_in *)addr)->sin_addr, key);
	} else if (addr->sa_family == AF_INET6) {
		const struct in6_addr *a6 = &((const struct sockaddr_in6 *)addr)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a6))
			klen = real_key(AF_INET, &a6->s6_addr[12], key);
		else
			klen = real_key(AF_INET6, a6, key);
	} else {
		return -EINVAL;
	}
	i = map_find(&f->real, f->key, key, klen);
	if (i == NIL)
		return -ENOENT;
	touch(&f->real, i);
	strcpy(ret_name, f->real.slots[i].value);
	return 0;
}

size_t fakeip_count(const struct fakeip *f)
{
	return f->fake.used;
}
