/* Parsing a script's "#!" line exactly as the kernel's binfmt_script does (Linux ≥ 5.0).
 *
 * The kernel reads the first BINPRM_BUF_SIZE (256) bytes of the file and takes the interpreter
 * and at most one argument from them: spaces and tabs separate, everything after the
 * interpreter up to the end of the line is one argument, a carriage return is NOT stripped
 * ("#!/bin/sh\r" names the interpreter "/bin/sh\r", which then fails with ENOENT), and a line
 * with no newline in 256 bytes is accepted only if the interpreter name ends inside them. */
#ifndef CLOISTER_NOTIFIER_SHEBANG_H
#define CLOISTER_NOTIFIER_SHEBANG_H

#include <stdbool.h>
#include <stddef.h>

#define SHEBANG_BUF_SIZE 256

struct shebang {
	char interp[SHEBANG_BUF_SIZE];
	char arg[SHEBANG_BUF_SIZE]; /* "" when !has_arg */
	bool has_arg;
};

/* buf holds the first len bytes of the file (only the first SHEBANG_BUF_SIZE are looked at;
 * a shorter file reads as padded with NULs, as in the kernel).
 * Returns 0 and fills *ret for a script the kernel would run through an interpreter;
 * -ENOMSG when buf does not start with "#!" (not a script); -ENOEXEC when it does but the
 * kernel would refuse it (no interpreter name, or a name cut off by the 256-byte limit). */
int shebang_parse(const void *buf, size_t len, struct shebang *ret);

#endif
