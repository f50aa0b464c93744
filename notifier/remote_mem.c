#include "notifier/remote_mem.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

void remote_mem_init(struct remote_mem *m, remote_mem_read_fn read, void *ctx)
{
	m->read = read;
	m->ctx = ctx;
	m->victim = 0;
	for (size_t i = 0; i < REMOTE_MEM_SLOTS; i++)
		m->slot[i].len = 0;
}

void remote_mem_preload(struct remote_mem *m, remote_mem_readv_fn readv, const uint64_t addrs[],
                        size_t n)
{
	unsigned char *bufs[REMOTE_MEM_SLOTS];
	uint64_t pages[REMOTE_MEM_SLOTS];
	size_t k = 0;
	ssize_t got;

	for (size_t i = 0; i < n; i++) {
		uint64_t page = addrs[i] & ~(uint64_t)(REMOTE_MEM_PAGE - 1);
		bool seen = false;

		for (size_t j = 0; j < k; j++)
			seen = seen || pages[j] == page;
		if (seen)
			continue;
		if (k == REMOTE_MEM_SLOTS)
			return;
		pages[k++] = page;
	}
	for (size_t i = 0; i < REMOTE_MEM_SLOTS; i++)
		m->slot[i].len = 0;
	m->victim = 0;
	for (size_t i = 0; i < k; i++)
		bufs[i] = m->slot[i].data;
	got = k ? readv(m->ctx, bufs, pages, k) : 0;
	for (size_t i = 0; i < k && got > 0; i++) {
		size_t len = (size_t)got > REMOTE_MEM_PAGE ? REMOTE_MEM_PAGE : (size_t)got;

		m->slot[i].addr = pages[i];
		m->slot[i].len = len;
		got -= (ssize_t)len;
	}
}

/* Load the page containing addr into a slot. Sets *ret_data to addr's byte in it and returns
 * the bytes available from addr on, 0 if none. */
static size_t load_page(struct remote_mem *m, uint64_t addr, const unsigned char **ret_data)
{
	uint64_t page_addr = addr & ~(uint64_t)(REMOTE_MEM_PAGE - 1);
	size_t i;
	ssize_t n;

	for (i = 0; i < REMOTE_MEM_SLOTS; i++)
		if (m->slot[i].len > 0 && m->slot[i].addr == page_addr)
			break;
	if (i == REMOTE_MEM_SLOTS) {
		i = m->victim;
		m->victim = (m->victim + 1) % REMOTE_MEM_SLOTS;
		m->slot[i].len = 0;
		n = m->read(m->ctx, m->slot[i].data, REMOTE_MEM_PAGE, page_addr);
		if (n <= 0)
			return 0;
		m->slot[i].addr = page_addr;
		m->slot[i].len = (size_t)n > REMOTE_MEM_PAGE ? REMOTE_MEM_PAGE : (size_t)n;
	} else {
		/* A hit: let the other slot go next. */
		m->victim = (unsigned)((i + 1) % REMOTE_MEM_SLOTS);
	}
	if (addr - page_addr >= m->slot[i].len)
		return 0;
	*ret_data = m->slot[i].data + (addr - page_addr);
	return m->slot[i].len - (size_t)(addr - page_addr);
}

/* Copy len bytes at addr into buf. Returns 0, or -EFAULT when any of them is unreadable. */
static int remote_mem_read(struct remote_mem *m, uint64_t addr, void *buf, size_t len)
{
	unsigned char *out = buf;

	while (len > 0) {
		const unsigned char *src = NULL;
		size_t avail;

		if (addr + len < addr)
			return -EFAULT; /* wraps around the address space */
		avail = load_page(m, addr, &src);
		if (avail == 0)
			return -EFAULT;
		if (avail > len)
			avail = len;
		memcpy(out, src, avail);
		out += avail;
		addr += avail;
		len -= avail;
	}
	return 0;
}

ssize_t remote_mem_read_string(struct remote_mem *m, uint64_t addr, size_t max, char **ret_str)
{
	_cleanup_free_ char *s = NULL;
	size_t len = 0;

	if (max == 0)
		return -E2BIG;
	for (;;) {
		const unsigned char *start = NULL, *nul;
		size_t avail, take;

		if (addr + len < addr)
			return -EFAULT;
		avail = load_page(m, addr + len, &start);
		if (avail == 0)
			return -EFAULT;
		take = avail;
		if (take > max - len)
			take = max - len;
		nul = memchr(start, '\0', take);
		if (nul)
			take = (size_t)(nul - start) + 1;
		{
			char *t = realloc(s, len + take);

			if (!t)
				return -ENOMEM;
			s = t;
		}
		memcpy(s + len, start, take);
		len += take;
		if (nul)
			break;
		if (len == max)
			return -E2BIG;
	}
	*ret_str = TAKE_PTR(s);
	return (ssize_t)(len - 1);
}

void remote_argv_done(struct remote_argv *a)
{
	if (a->argv) {
		for (size_t i = 0; i < a->argc; i++)
			free(a->argv[i]);
		free(a->argv);
	}
	memset(a, 0, sizeof(*a));
}

int remote_mem_read_argv(struct remote_mem *m, uint64_t addr, size_t max_args, size_t max_bytes,
                         struct remote_argv *ret)
{
	struct remote_argv a = {0};
	size_t cap = 8;

	a.argv = calloc(cap + 1, sizeof(char *));
	if (!a.argv)
		return -ENOMEM;
	for (uint64_t p = addr; addr != 0; p += sizeof(uint64_t)) {
		uint64_t sp;
		char *s;
		ssize_t n;

		if (p < addr || remote_mem_read(m, p, &sp, sizeof(sp)) < 0) {
			a.fault = true;
			break;
		}
		if (sp == 0)
			break;
		if (a.argc == max_args || a.bytes >= max_bytes) {
			a.truncated = true;
			break;
		}
		n = remote_mem_read_string(m, sp, max_bytes - a.bytes, &s);
		if (n == -ENOMEM) {
			remote_argv_done(&a);
			return -ENOMEM;
		}
		if (n == -E2BIG) {
			a.truncated = true;
			break;
		}
		if (n < 0) {
			a.fault = true;
			break;
		}
		if (a.argc == cap) {
			char **t = realloc(a.argv, (cap * 2 + 1) * sizeof(char *));

			if (!t) {
				free(s);
				remote_argv_done(&a);
				return -ENOMEM;
			}
			a.argv = t;
			cap *= 2;
		}
		a.argv[a.argc++] = s;
		a.argv[a.argc] = NULL;
		a.bytes += (size_t)n + 1;
	}
	*ret = a;
	return 0;
}
