/* file_digest: the content digest of an executable, cached by its identity, and the attacks on
 * that identity: a file rewritten in place (by write(2), in the same clock tick, through a
 * shared mapping whose page was already dirty), and files on tmpfs, whose content changes
 * through a mapping without any ctime. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "supervisor/exec/file_digest.h"

/* A file as the notifier reads it. */
struct id {
	dev_t dev;
	ino_t ino;
	uint64_t ctime_ns, size;
};

static struct id id_of(int fd)
{
	struct statx x;

	assert_int_equal(statx(fd, "", AT_EMPTY_PATH, STATX_INO | STATX_CTIME | STATX_SIZE, &x), 0);
	return (struct id){makedev(x.stx_dev_major, x.stx_dev_minor), x.stx_ino,
	                   (uint64_t)x.stx_ctime.tv_sec * 1000000000u + x.stx_ctime.tv_nsec,
	                   x.stx_size};
}

static int digest(struct file_digests *c, int fd, struct id id, char hex[FILE_DIGEST_HEX])
{
	return file_digest_get(c, fd, id.dev, id.ino, id.ctime_ns, id.size, hex);
}

/* A file of 4096 bytes of C in DIR. */
static int make_file(const char *dir, char c, char *path, size_t size)
{
	char buf[4096];
	int fd;

	snprintf(path, size, "%s/f", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
	assert_true(fd >= 0);
	memset(buf, c, sizeof(buf));
	assert_int_equal(pwrite(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	return fd;
}

static void test_cached_by_identity_and_rewrites_change_it(void **state)
{
	char dir[] = "/var/tmp/cloister-fd.XXXXXX", path[64];
	char a[FILE_DIGEST_HEX], again[FILE_DIGEST_HEX], b[FILE_DIGEST_HEX];
	_cleanup_(file_digests_freep) struct file_digests *c = NULL;
	_cleanup_close_ int fd = -1;
	struct id id;

	assert_non_null(mkdtemp(dir));
	fd = make_file(dir, 'A', path, sizeof(path));
	assert_int_equal(file_digests_new(&c), 0);
	id = id_of(fd);
	assert_int_equal(digest(c, fd, id, a), 0);
	assert_int_equal(strlen(a), 64);
	assert_int_equal(file_digests_computed(c), 1);
	/* The same identity: from the cache, not read again. */
	assert_int_equal(digest(c, fd, id, again), 0);
	assert_string_equal(a, again);
	assert_int_equal(file_digests_computed(c), 1);
	/* Rewritten at once (the same clock tick, same size): another identity, whose digest
	 * is the new content's; the old identity is no longer what the file is, so a cache
	 * without it refuses it. */
	assert_int_equal(pwrite(fd, "B", 1, 0), 1);
	assert_true(id_of(fd).ctime_ns != id.ctime_ns);
	assert_int_equal(digest(c, fd, id_of(fd), b), 0);
	assert_string_not_equal(a, b);
	{
		_cleanup_(file_digests_freep) struct file_digests *fresh = NULL;

		assert_int_equal(file_digests_new(&fresh), 0);
		assert_int_equal(digest(fresh, fd, id, b), -ESTALE);
	}
	unlink(path);
	rmdir(dir);
}

/* A page made dirty through a shared mapping before the digest, written again after it: the
 * digest wrote it back first, so the second write sets a new ctime and the cached digest is
 * never taken for the new content. */
static void test_a_write_through_a_dirty_mapping_is_seen(void **state)
{
	char dir[] = "/var/tmp/cloister-fd.XXXXXX", path[64];
	char a[FILE_DIGEST_HEX], b[FILE_DIGEST_HEX];
	_cleanup_(file_digests_freep) struct file_digests *c = NULL;
	_cleanup_close_ int fd = -1;
	struct statfs sfs;
	struct id id;
	char *p;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(statfs(dir, &sfs), 0);
	if (sfs.f_type == 0x01021994) {
		rmdir(dir);
		print_message("skipped: /var/tmp is a tmpfs here (the next test covers tmpfs)\n");
		skip();
	}
	fd = make_file(dir, 'A', path, sizeof(path));
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	p[0] = 'M'; /* dirty now */
	assert_int_equal(file_digests_new(&c), 0);
	id = id_of(fd);
	assert_int_equal(digest(c, fd, id, a), 0);
	p[0] = 'N'; /* the content changes again */
	munmap(p, 4096);
	assert_true(id_of(fd).ctime_ns != id.ctime_ns);
	assert_int_equal(digest(c, fd, id_of(fd), b), 0);
	assert_string_not_equal(a, b);
	unlink(path);
	rmdir(dir);
}

/* tmpfs: a write through a mapping sets no ctime at all, so no digest is given. */
static void test_tmpfs_files_get_no_digest(void **state)
{
	char dir[] = "/dev/shm/cloister-fd.XXXXXX", path[64];
	char hex[FILE_DIGEST_HEX];
	_cleanup_(file_digests_freep) struct file_digests *c = NULL;
	_cleanup_close_ int fd = -1;
	struct statfs sfs;

	if (!mkdtemp(dir) || statfs(dir, &sfs) < 0 || sfs.f_type != 0x01021994) {
		rmdir(dir);
		print_message("skipped: no tmpfs at /dev/shm here\n");
		skip();
	}
	fd = make_file(dir, 'A', path, sizeof(path));
	assert_int_equal(file_digests_new(&c), 0);
	assert_int_equal(digest(c, fd, id_of(fd), hex), -EOPNOTSUPP);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_cached_by_identity_and_rewrites_change_it),
	        cmocka_unit_test(test_a_write_through_a_dirty_mapping_is_seen),
	        cmocka_unit_test(test_tmpfs_files_get_no_digest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
