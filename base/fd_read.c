/* See fd_read.h. */
#include "base/fd_read.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/cleanup.h"

/* The first buffer; it doubles from there. Most of these files are a few KiB, and a large
 * limit must not cost its size for a small file. */
#define FD_READ_FIRST 65536

int fd_read_all(int fd, size_t max, char **ret_buf, size_t *ret_len)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0;

	if (max >= SIZE_MAX / 2)
		return -EINVAL;
	for (;;) {
		ssize_t n;

		/* Full: grow, to one byte past MAX at the most (that byte says there is more). */
		if (len == cap) {
			size_t want = cap ? cap * 2 : FD_READ_FIRST;
			char *b;

			if (want > max + 1)
				want = max + 1;
			b = realloc(buf, want + 1);
			if (!b)
				return -ENOMEM;
			buf = b;
			cap = want;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max)
			return -EFBIG;
	}
	buf[len] = '\0';
	*ret_buf = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}
