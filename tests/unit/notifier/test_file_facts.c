/* file_facts: a file's facts are found only under its exact identity; any change of device,
 * inode, mount, ctime or size is a miss. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "notifier/file_facts.h"

static const struct file_facts_key base = {
        .dev = 0x803, .ino = 1234, .mnt_id = 27, .ctime_ns = 1700000000123456789ull, .size = 4096};

static void test_found_under_its_key_only(void **state)
{
	struct file_facts_table *t;
	struct file_facts f = {.script = true, .shebang_known = true, .noexec = false};
	struct file_facts_key k;

	(void)state;
	assert_int_equal(file_facts_new(&t), 0);
	assert_null(file_facts_find(t, &base));
	strcpy(f.sb.interp, "/bin/sh");
	file_facts_put(t, &base, &f);
	assert_non_null(file_facts_find(t, &base));
	assert_string_equal(file_facts_find(t, &base)->sb.interp, "/bin/sh");

	/* Rewritten in place (ctime, size), another file, another mount, another device. */
	k = base, k.ctime_ns++;
	assert_null(file_facts_find(t, &k));
	k = base, k.size--;
	assert_null(file_facts_find(t, &k));
	k = base, k.ino++;
	assert_null(file_facts_find(t, &k));
	k = base, k.mnt_id++;
	assert_null(file_facts_find(t, &k));
	k = base, k.dev++;
	assert_null(file_facts_find(t, &k));
	file_facts_free(t);
}

static void test_a_slot_taken_over_forgets_the_old_key(void **state)
{
	struct file_facts_table *t;
	struct file_facts f = {0};
	struct file_facts_key k = base;

	(void)state;
	assert_int_equal(file_facts_new(&t), 0);
	file_facts_put(t, &base, &f);
	/* Far more keys than slots: the first one's slot is reused, and it then misses. */
	for (unsigned i = 0; i < 64 * FILE_FACTS_SLOTS; i++) {
		k.ino = base.ino + 1 + i;
		file_facts_put(t, &k, &f);
	}
	assert_null(file_facts_find(t, &base));
	/* NULL table: nothing kept, nothing found. */
	file_facts_put(NULL, &base, &f);
	assert_null(file_facts_find(NULL, &base));
	file_facts_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_found_under_its_key_only),
	        cmocka_unit_test(test_a_slot_taken_over_forgets_the_old_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
