/* Bounded capture of one output stream of a command (its stdout or its stderr), for a
 * result that is handed over whole (the executor's JSON).
 *
 * The cap is output_cap.h's: everything is kept up to MAX bytes; past that, the first
 * MAX - TAIL bytes and the last TAIL bytes, and finishing joins them with the marker line
 * saying how many bytes were dropped in between:
 *
 *   <head>\n[... 123456 bytes truncated ...]\n<tail>
 *
 * Here the head the cap forwards is kept in memory instead of being sent.
 *
 * Finishing for JSON also makes the text valid UTF-8 without NUL: a NUL byte and every byte
 * that does not start a valid RFC 3629 sequence become U+FFFD, so the result is at most
 * 3 * MAX bytes plus the marker. Pure code: no I/O. */
#ifndef CLOISTER_CAPTURE_H
#define CLOISTER_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "supervisor/hostexec/output_cap.h"

#define CAPTURE_MAX_DEFAULT  OUTPUT_CAP_MAX_DEFAULT
#define CAPTURE_TAIL_DEFAULT OUTPUT_CAP_TAIL_DEFAULT

struct capture;

/* A capture keeping at most max bytes, the last tail of them once it overflows. max 0 means
 * CAPTURE_MAX_DEFAULT with CAPTURE_TAIL_DEFAULT (tail is then ignored). Returns -EINVAL when
 * tail > max, -ENOMEM. Memory grows with what arrives, up to max bytes. */
int capture_new(size_t max, size_t tail, struct capture **ret);
void capture_free(struct capture *c);

/* Add len bytes (any bytes, NUL included). Returns 0 or -ENOMEM (nothing is kept then). */
int capture_append(struct capture *c, const void *data, size_t len);

/* Bytes seen so far, kept or not. */
uint64_t capture_total(const struct capture *c);

/* True once bytes have been dropped. */
bool capture_truncated(const struct capture *c);

/* The kept bytes as they arrived, joined with the marker when truncated: a malloc'd buffer
 * with a NUL after the last byte (which may contain NULs). The capture is unchanged. */
int capture_finish_raw(const struct capture *c, char **ret_buf, size_t *ret_len);

/* The same as valid UTF-8 text without NUL bytes (see above): a malloc'd C string.
 * ret_len may be NULL. */
int capture_finish_text(const struct capture *c, char **ret_text, size_t *ret_len);

/* The UTF-8 clean-up on its own: len bytes of data into a malloc'd C string. */
int capture_sanitize_utf8(const char *data, size_t len, char **ret_text, size_t *ret_len);

#endif
