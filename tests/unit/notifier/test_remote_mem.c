/* remote_mem: strings and argv arrays read from a fake address space with holes, bounded. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "notifier/remote_mem.h"

/* Pages [BASE, BASE + NPAGES * 4096) are mapped; everything else faults. */
#define BASE   0x10000ULL
#define NPAGES 600

struct fake {
	unsigned char *mem;
	unsigned reads;
};

static ssize_t fake_read(void *ctx, void *buf, size_t len, uint64_t addr)
{
	struct fake *f = ctx;
	uint64_t end = BASE + (uint64_t)NPAGES * REMOTE_MEM_PAGE;

	f->reads++;
	if (addr < BASE || addr >= end)
		return -EIO;
	if (len > end - addr)
		len = end - addr;
	memcpy(buf, f->mem + (addr - BASE), len);
	return (ssize_t)len;
}

static struct fake fake;
static struct remote_mem mem;

static int setup(void **state)
{
	fake.mem = calloc(NPAGES, REMOTE_MEM_PAGE);
	fake.reads = 0;
	remote_mem_init(&mem, fake_read, &fake);
	return fake.mem ? 0 : -1;
}

static int teardown(void **state)
{
	free(fake.mem);
	return 0;
}

static uint64_t put_string(uint64_t addr, const char *s)
{
	memcpy(fake.mem + (addr - BASE), s, strlen(s) + 1);
	return addr;
}

static void put_ptr(uint64_t addr, uint64_t v)
{
	memcpy(fake.mem + (addr - BASE), &v, sizeof(v));
}

static void test_string_within_a_page_and_across_pages(void **state)
{
	char *s = NULL;

	put_string(BASE + 100, "/usr/bin/env");
	assert_int_equal(remote_mem_read_string(&mem, BASE + 100, 4096, &s), 12);
	assert_string_equal(s, "/usr/bin/env");
	free(s);

	put_string(BASE + REMOTE_MEM_PAGE - 3, "abcdefgh");
	remote_mem_init(&mem, fake_read, &fake); /* drop the cached (now stale) page */
	assert_int_equal(remote_mem_read_string(&mem, BASE + REMOTE_MEM_PAGE - 3, 4096, &s), 8);
	assert_string_equal(s, "abcdefgh");
	free(s);
}

static void test_string_running_into_unmapped_memory_faults(void **state)
{
	uint64_t last = BASE + (uint64_t)NPAGES * REMOTE_MEM_PAGE;
	char *s = NULL;

	memset(fake.mem + (last - 5 - BASE), 'x', 5);
	assert_int_equal(remote_mem_read_string(&mem, last - 5, 4096, &s), -EFAULT);
	assert_int_equal(remote_mem_read_string(&mem, 0, 4096, &s), -EFAULT);
	assert_int_equal(remote_mem_read_string(&mem, UINT64_MAX - 2, 4096, &s), -EFAULT);
	assert_null(s);
}

static void test_string_without_nul_within_max_is_too_big(void **state)
{
	char *s = NULL;

	memset(fake.mem, 'y', 3 * REMOTE_MEM_PAGE);
	assert_int_equal(remote_mem_read_string(&mem, BASE, 5000, &s), -E2BIG);
	fake.mem[4999] = '\0';
	remote_mem_init(&mem, fake_read, &fake);
	assert_int_equal(remote_mem_read_string(&mem, BASE, 5000, &s), 4999);
	free(s);
	assert_int_equal(remote_mem_read_string(&mem, BASE, 4999, &s), -E2BIG);
}

static void test_argv_packed_strings_cost_one_read_per_page(void **state)
{
	struct remote_argv a;
	uint64_t strs = BASE + 8 * REMOTE_MEM_PAGE, p = strs, arr = BASE;
	const char *want[] = {"ls", "-l", "--color=never", "/tmp"};

	for (size_t i = 0; i < 4; i++) {
		put_ptr(arr + i * 8, put_string(p, want[i]));
		p += strlen(want[i]) + 1;
	}
	put_ptr(arr + 4 * 8, 0);
	fake.reads = 0;
	assert_int_equal(remote_mem_read_argv(&mem, arr, 4096, 1 << 20, &a), 0);
	assert_int_equal(a.argc, 4);
	for (size_t i = 0; i < 4; i++)
		assert_string_equal(a.argv[i], want[i]);
	assert_null(a.argv[4]);
	assert_int_equal(a.bytes, 3 + 3 + 14 + 5);
	assert_false(a.truncated);
	assert_false(a.fault);
	/* The array's page and the strings' page, each read once. */
	assert_int_equal(fake.reads, 2);
	remote_argv_done(&a);
}

static void test_null_argv_is_empty(void **state)
{
	struct remote_argv a;

	assert_int_equal(remote_mem_read_argv(&mem, 0, 4096, 1 << 20, &a), 0);
	assert_int_equal(a.argc, 0);
	assert_non_null(a.argv);
	assert_null(a.argv[0]);
	remote_argv_done(&a);
}

static void test_argv_over_the_count_limit_is_truncated(void **state)
{
	struct remote_argv a;
	uint64_t s = put_string(BASE + 100 * REMOTE_MEM_PAGE, "x");

	for (size_t i = 0; i < 5000; i++)
		put_ptr(BASE + i * 8, s);
	put_ptr(BASE + 5000 * 8, 0);
	assert_int_equal(remote_mem_read_argv(&mem, BASE, 4096, 1 << 20, &a), 0);
	assert_int_equal(a.argc, 4096);
	assert_true(a.truncated);
	assert_false(a.fault);
	remote_argv_done(&a);

	/* Exactly at the limit is not truncated. */
	put_ptr(BASE + 4096 * 8, 0);
	remote_mem_init(&mem, fake_read, &fake);
	assert_int_equal(remote_mem_read_argv(&mem, BASE, 4096, 1 << 20, &a), 0);
	assert_int_equal(a.argc, 4096);
	assert_false(a.truncated);
	remote_argv_done(&a);
}

static void test_argv_over_the_byte_limit_is_truncated(void **state)
{
	struct remote_argv a;
	uint64_t s = BASE + 100 * REMOTE_MEM_PAGE;

	memset(fake.mem + (s - BASE), 'z', 999);
	fake.mem[s - BASE + 999] = '\0'; /* 1000 bytes with the NUL */
	for (size_t i = 0; i < 10; i++)
		put_ptr(BASE + i * 8, s);
	put_ptr(BASE + 10 * 8, 0);
	assert_int_equal(remote_mem_read_argv(&mem, BASE, 4096, 3500, &a), 0);
	assert_int_equal(a.argc, 3);
	assert_int_equal(a.bytes, 3000);
	assert_true(a.truncated);
	remote_argv_done(&a);

	assert_int_equal(remote_mem_read_argv(&mem, BASE, 4096, 10000, &a), 0);
	assert_int_equal(a.argc, 10);
	assert_false(a.truncated);
	remote_argv_done(&a);
}

static void test_unreadable_pointer_or_string_is_a_fault_with_the_prefix_kept(void **state)
{
	struct remote_argv a;
	uint64_t last = BASE + (uint64_t)NPAGES * REMOTE_MEM_PAGE;

	put_ptr(BASE, put_string(BASE + 200 * REMOTE_MEM_PAGE, "ok"));
	put_ptr(BASE + 8, 0xdead0000ULL);
	assert_int_equal(remote_mem_read_argv(&mem, BASE, 4096, 1 << 20, &a), 0);
	assert_int_equal(a.argc, 1);
	assert_string_equal(a.argv[0], "ok");
	assert_true(a.fault);
	remote_argv_done(&a);

	/* The array itself runs off the end of memory, straddling the boundary. */
	put_ptr(last - 8, BASE + 200 * REMOTE_MEM_PAGE);
	remote_mem_init(&mem, fake_read, &fake);
	assert_int_equal(remote_mem_read_argv(&mem, last - 8, 4096, 1 << 20, &a), 0);
	assert_int_equal(a.argc, 1);
	assert_true(a.fault);
	remote_argv_done(&a);
	assert_int_equal(remote_mem_read_argv(&mem, last - 4, 4096, 1 << 20, &a), 0);
	assert_int_equal(a.argc, 0);
	assert_true(a.fault);
	remote_argv_done(&a);
}

/* process_vm_readv's way: whole pages in order, the first unreadable one ends the read. */
static unsigned readv_calls;
static ssize_t fake_readv(void *ctx, unsigned char *const bufs[], const uint64_t addrs[], size_t n)
{
	ssize_t total = 0;

	readv_calls++;
	for (size_t i = 0; i < n; i++) {
		ssize_t got = fake_read(ctx, bufs[i], REMOTE_MEM_PAGE, addrs[i]);

		fake.reads--; /* counted apart */
		if (got <= 0)
			return total ? total : -EFAULT;
		total += got;
		if (got < REMOTE_MEM_PAGE)
			break;
	}
	return total;
}

/* An exec's path and argv array in one call: what follows reads nothing more when the strings
 * share those pages, and everything reads as without the preload. */
static void test_preload_reads_path_and_argv_pages_at_once(void **state)
{
	uint64_t path = BASE + 3 * REMOTE_MEM_PAGE + 40, arr = BASE + 7 * REMOTE_MEM_PAGE;
	struct remote_argv a;
	char *s = NULL;

	put_string(path, "/bin/true");
	put_ptr(arr, put_string(arr + 64, "true"));
	put_ptr(arr + 8, put_string(arr + 80, "-x"));
	put_ptr(arr + 16, 0);
	readv_calls = 0;
	fake.reads = 0;
	remote_mem_preload(&mem, fake_readv, (const uint64_t[]){path, arr}, 2);
	assert_int_equal(readv_calls, 1);
	assert_int_equal(remote_mem_read_string(&mem, path, 4096, &s), 9);
	assert_string_equal(s, "/bin/true");
	free(s);
	assert_int_equal(remote_mem_read_argv(&mem, arr, 4096, 1 << 20, &a), 0);
	assert_int_equal(a.argc, 2);
	assert_string_equal(a.argv[0], "true");
	assert_string_equal(a.argv[1], "-x");
	assert_false(a.fault);
	remote_argv_done(&a);
	assert_int_equal(fake.reads, 0);

	/* The same page twice is read once. */
	readv_calls = 0;
	remote_mem_preload(&mem, fake_readv, (const uint64_t[]){path, path + 8}, 2);
	assert_int_equal(readv_calls, 1);
	assert_int_equal(remote_mem_read_string(&mem, path, 4096, &s), 9);
	free(s);
	assert_int_equal(fake.reads, 0);
}

/* An unreadable argv page (or path page) loads what comes before it; the rest is read, and
 * faults, as without the preload. */
static void test_preload_of_an_unreadable_page_changes_no_result(void **state)
{
	uint64_t path = BASE + 40, bad = BASE + (uint64_t)NPAGES * REMOTE_MEM_PAGE + 16;
	struct remote_argv a;
	char *s = NULL;

	put_string(path, "/bin/true");
	fake.reads = 0;
	remote_mem_preload(&mem, fake_readv, (const uint64_t[]){path, bad}, 2);
	assert_int_equal(remote_mem_read_string(&mem, path, 4096, &s), 9);
	assert_string_equal(s, "/bin/true");
	free(s);
	assert_int_equal(fake.reads, 0);
	assert_int_equal(remote_mem_read_argv(&mem, bad, 4096, 1 << 20, &a), 0);
	assert_true(a.fault);
	assert_int_equal(a.argc, 0);
	remote_argv_done(&a);

	/* Nothing readable: nothing loaded, every read goes to memory and faults the same. */
	remote_mem_preload(&mem, fake_readv, (const uint64_t[]){bad, path}, 2);
	fake.reads = 0;
	assert_int_equal(remote_mem_read_string(&mem, bad, 4096, &s), -EFAULT);
	assert_int_equal(remote_mem_read_string(&mem, path, 4096, &s), 9);
	free(s);
	assert_int_equal(fake.reads, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_string_within_a_page_and_across_pages, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_string_running_into_unmapped_memory_faults,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_string_without_nul_within_max_is_too_big,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_argv_packed_strings_cost_one_read_per_page,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_null_argv_is_empty, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_preload_reads_path_and_argv_pages_at_once,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_preload_of_an_unreadable_page_changes_no_result, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_argv_over_the_count_limit_is_truncated, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_argv_over_the_byte_limit_is_truncated, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(
	                test_unreadable_pointer_or_string_is_a_fault_with_the_prefix_kept, setup,
	                teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
