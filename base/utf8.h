/* UTF-8 decoding by RFC 3629 (no overlong forms, no surrogates, nothing above U+10FFFF), for
 * the places that must show or log what the agent controls without letting invalid bytes
 * through. */
#ifndef CLOISTER_UTF8_H
#define CLOISTER_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length (1-4) of the valid UTF-8 sequence at the start of the NUL-terminated S, and its code
 * point in *ret_cp (may be NULL); 0 when the bytes there are not valid UTF-8. A NUL inside a
 * sequence ends it as invalid, so the terminator is never read past. */
size_t cl_utf8_decode(const char *s, uint32_t *ret_cp);

#endif
