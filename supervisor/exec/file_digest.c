/* Executables' content digests, cached by identity; see file_digest.h. */
#include "supervisor/exec/file_digest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "supervisor/approval/sha256.h"

struct entry {
	bool used;
	dev_t dev;
	ino_t ino;
	uint64_t ctime_ns, size;
	char hex[FILE_DIGEST_HEX];
};

struct file_digests {
	struct entry e[FILE_DIGEST_CACHE];
	unsigned next;
	uint64_t computed;
};

int file_digests_new(struct file_digests **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

void file_digests_free(struct file_digests *c)
{
	free(c);
}

uint64_t file_digests_computed(const struct file_digests *c)
{
	return c ? c->computed : 0;
}

static bool same_identity(const struct statx *x, dev_t dev, ino_t ino, uint64_t ctime_ns,
                          uint64_t size)
{
	return makedev(x->stx_dev_major, x->stx_dev_minor) == dev && x->stx_ino == ino &&
	       (uint64_t)x->stx_ctime.tv_sec * 1000000000u + x->stx_ctime.tv_nsec == ctime_ns &&
	       x->stx_size == size;
}

static int identity_of(int fd, struct statx *x)
{
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT,
	          STATX_INO | STATX_CTIME | STATX_SIZE | STATX_TYPE, x) < 0)
		return -errno;
	return S_ISREG(x->stx_mode) ? 0 : -EACCES;
}

/* tmpfs and ramfs: a write through a shared mapping changes the content and never the ctime
 * (no page_mkwrite), so no identity holds for their files' content. */
#define TMPFS_MAGIC_ 0x01021994
#define RAMFS_MAGIC_ 0x858458f6

/* Read the file of FD whole into the digest; it must be what the identity says before and
 * after. */
static int compute(int fd, dev_t dev, ino_t ino, uint64_t ctime_ns, uint64_t size,
                   char ret_hex[FILE_DIGEST_HEX])
{
	_cleanup_close_ int rfd = -1;
	char proc[64];
	uint8_t buf[65536], digest[SHA256_DIGEST_SIZE];
	struct sha256 ctx;
	struct statx x;
	uint64_t total = 0;
	int r;

	struct statfs sfs;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	rfd = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (rfd < 0)
		return -errno;
	if (fstatfs(rfd, &sfs) < 0)
		return -errno;
	if (sfs.f_type == TMPFS_MAGIC_ || sfs.f_type == (typeof(sfs.f_type))RAMFS_MAGIC_)
		return -EOPNOTSUPP;
	/* Pages written through a shared mapping before now are written back and write-protected:
	 * the next write through it faults and sets a new ctime. Without this, a page already
	 * dirty takes more writes and the ctime stays. (After the statx below, that new ctime is
	 * a fine-grained one, distinct from the one read: multigrain timestamps, 6.13.) */
	if (fdatasync(rfd) < 0 && errno != EINVAL && errno != EROFS)
		return -errno;
	r = identity_of(rfd, &x);
	if (r < 0)
		return r;
	if (!same_identity(&x, dev, ino, ctime_ns, size))
		return -ESTALE;
	sha256_init(&ctx);
	for (;;) {
		ssize_t n = read(rfd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		total += (uint64_t)n;
		if (total > size)
			return -ESTALE;
		sha256_update(&ctx, buf, (size_t)n);
	}
	/* Written to while read: what was digested is neither the old content nor the new. */
	r = identity_of(rfd, &x);
	if (r < 0)
		return r;
	if (total != size || !same_identity(&x, dev, ino, ctime_ns, size))
		return -ESTALE;
	sha256_final(&ctx, digest);
	sha256_hex(digest, ret_hex);
	return 0;
}

int file_digest_get(struct file_digests *c, int fd, dev_t dev, ino_t ino, uint64_t ctime_ns,
                    uint64_t size, char ret_hex[FILE_DIGEST_HEX])
{
	struct entry *e;
	int r;

	for (unsigned i = 0; i < FILE_DIGEST_CACHE; i++) {
		e = &c->e[i];
		if (e->used && e->dev == dev && e->ino == ino && e->ctime_ns == ctime_ns &&
		    e->size == size) {
			memcpy(ret_hex, e->hex, FILE_DIGEST_HEX);
			return 0;
		}
	}
	if (fd < 0)
		return -EBADF;
	if (size > FILE_DIGEST_MAX_SIZE)
		return -EFBIG;
	r = compute(fd, dev, ino, ctime_ns, size, ret_hex);
	if (r < 0)
		return r;
	c->computed++;
	e = &c->e[c->next++ % FILE_DIGEST_CACHE];
	*e = (struct entry){
	        .used = true, .dev = dev, .ino = ino, .ctime_ns = ctime_ns, .size = size};
	memcpy(e->hex, ret_hex, FILE_DIGEST_HEX);
	return 0;
}
