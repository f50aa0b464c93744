/* Reading all of a small file, bounded: a file that grows while it is read, or never ends
 * (a FIFO, a /proc file), costs at most the limit the caller names. */
#ifndef CLOISTER_FD_READ_H
#define CLOISTER_FD_READ_H

#include <stddef.h>

/* What is left to read of FD, at most MAX bytes (MAX below SIZE_MAX / 2), in a malloc'd
 * buffer with a NUL after the last byte: *ret_buf (the caller frees it), *ret_len bytes.
 * Reads interrupted by a signal go on. -EFBIG when there is more than MAX, -ENOMEM, -EINVAL
 * for a MAX too large, or read's -errno; the outputs are written only on success. */
int fd_read_all(int fd, size_t max, char **ret_buf, size_t *ret_len);

#endif
