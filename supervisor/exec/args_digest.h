/* What an approved exec's arguments must be, as the exec backstops check it (pure).
 *
 * The supervisor decides on the argv it read from the agent's memory; a second thread of the
 * agent can rewrite it before the kernel copies it. After the exec the new image's arguments
 * sit in its own memory (mm->arg_start..arg_end: the strings, each with its NUL), out of the
 * old threads' reach, so the backstop compares them with what was decided: a keyed SipHash-2-4
 * (the agent knows neither the key nor, so, how to forge a collision) of the bytes and their
 * length. Which bytes:
 *   full    the whole area is argv[0..argc) (argc 0: the kernel puts one "" in);
 *   prefix  the area starts with what was read (the notifier stopped at its limit);
 *   suffix  a #! script: the kernel replaces argv[0] with the interpreter, its argument and
 *           the script's name, so the area ends with argv[1..argc) at a string boundary;
 *   any     a script whose argv was cut: there is nothing certain to compare.
 * The hash is SipHash-2-4 as its authors describe it (the length's low byte in the last
 * block), so the eBPF side can compute it word by word. */
#ifndef CLOISTER_ARGS_DIGEST_H
#define CLOISTER_ARGS_DIGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/backstop.h" /* struct backstop_args, enum backstop_args_mode */

/* Incremental SipHash-2-4 over bytes. */
struct args_sip {
	uint64_t v0, v1, v2, v3;
	uint64_t tail; /* bytes not yet hashed, little-endian */
	size_t len;    /* bytes given so far */
};

void args_sip_init(struct args_sip *s, const uint64_t key[2]);
void args_sip_update(struct args_sip *s, const void *data, size_t n);
uint64_t args_sip_final(const struct args_sip *s);

/* What the exec with ARGV[0..ARGC) (a script's when SCRIPT; cut by the notifier when
 * TRUNCATED) must find in its new image, under KEY. */
void args_digest_of_exec(const uint64_t key[2], const char *const *argv, size_t argc, bool script,
                         bool truncated, struct backstop_args *ret);

/* Whether AREA (LEN bytes: the new image's arguments) is what EXPECT says, under KEY. */
bool args_digest_matches(const uint64_t key[2], const struct backstop_args *expect,
                         const void *area, size_t len);

#endif
