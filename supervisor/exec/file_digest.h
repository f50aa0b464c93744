/* The SHA-256 of an executable's content, cached by the file's identity, so that a person's
 * decision can hold for what the file held when it was allowed (exec_decisions.h) without
 * digesting a large binary at every exec.
 *
 * The cache key is (device, inode, ctime in ns, size): a write to the file, a chmod, a rename
 * over it, any change of its inode's content changes its ctime (the kernel sets it, and only
 * root could set it back through the clock), and a new file at the name is another inode. A
 * digest is only kept when the file's identity was the same before and after it was read, so
 * a writer racing the read leaves nothing in the cache. What makes that hold (measured on
 * 6.18, ext4 and tmpfs; tests/unit/supervisor/test_file_digest.c):
 *   - a write within the same clock tick as the last one: once the ctime was queried (our
 *     statx), the next change gets a fine-grained ctime, distinct (multigrain timestamps);
 *   - a write through a shared mapping to a page already dirty sets no ctime: the file is
 *     written back first (fdatasync), so that the next such write faults and sets one;
 *   - tmpfs and ramfs never set a ctime for writes through a mapping: their files get no
 *     digest (-EOPNOTSUPP), so a decision on one cannot be wider than once.
 * Reading happens on the supervisor's loop: only for asks (human-paced), and only for files up
 * to FILE_DIGEST_MAX_SIZE. */
#ifndef CLOISTER_FILE_DIGEST_H
#define CLOISTER_FILE_DIGEST_H

#include <stdint.h>
#include <sys/types.h>

/* Files larger than this are not digested (their decisions cannot be wider than once). */
#define FILE_DIGEST_MAX_SIZE (512ull << 20)
/* Digests kept: the most recently computed ones. */
#define FILE_DIGEST_CACHE 128
/* 64 lowercase hex digits and a NUL. */
#define FILE_DIGEST_HEX 65

struct file_digests;

int file_digests_new(struct file_digests **ret);
void file_digests_free(struct file_digests *c);
static inline void file_digests_freep(struct file_digests **c)
{
	file_digests_free(*c);
}

/* The digest of the file FD refers to (any fd, O_PATH included), which was read as DEV, INO,
 * CTIME_NS, SIZE: from the cache, or by reading it (reopened read-only through /proc/self/fd).
 * 0 with *RET_HEX set; -EFBIG past the size bound; -ESTALE when the file is not (or no
 * longer) what the identity says; -EOPNOTSUPP on tmpfs and ramfs; another -errno when it
 * cannot be read. */
int file_digest_get(struct file_digests *c, int fd, dev_t dev, ino_t ino, uint64_t ctime_ns,
                    uint64_t size, char ret_hex[FILE_DIGEST_HEX]);

/* How many digests were computed by reading (not from the cache): for tests and the bench. */
uint64_t file_digests_computed(const struct file_digests *c);

#endif
