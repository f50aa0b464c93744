/* Reading strings and argv-style pointer arrays out of another process's memory, bounded.
 *
 * The memory is reached through a read callback (process_vm_readv in notifier/target.c,
 * a fake address space in the unit tests). Reads go one page at a time through a two-page
 * cache, so a string that runs into an unmapped page ends in a clean -EFAULT rather than a
 * short read mistaken for data, and argv strings packed next to each other cost one read per
 * page, not one per string. Every size the target controls is bounded by the caller.
 * The cache assumes the memory does not change while it is in use: use one remote_mem for one
 * read of a stopped target (or remote_mem_init again to forget the cached page). */
#ifndef CLOISTER_NOTIFIER_REMOTE_MEM_H
#define CLOISTER_NOTIFIER_REMOTE_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define REMOTE_MEM_PAGE 4096

/* Read up to len bytes at addr into buf. Returns the number of bytes read (may be short only at
 * the end of readable memory), 0 or a negative errno when nothing at addr is readable. */
typedef ssize_t (*remote_mem_read_fn)(void *ctx, void *buf, size_t len, uint64_t addr);

#define REMOTE_MEM_SLOTS 2 /* the path and argv strings' page, and the argv array's */

struct remote_mem {
	remote_mem_read_fn read;
	void *ctx;
	unsigned victim; /* the slot to replace next */
	struct {
		uint64_t addr;
		size_t len; /* valid bytes; 0 = empty */
		unsigned char data[REMOTE_MEM_PAGE];
	} slot[REMOTE_MEM_SLOTS];
};

void remote_mem_init(struct remote_mem *m, remote_mem_read_fn read, void *ctx);

/* Read the N whole pages at page-aligned ADDRS into BUFS (REMOTE_MEM_PAGE bytes each) in one
 * call (process_vm_readv with one remote iovec a page). Returns the bytes read, which fill the
 * pages in order (the first unreadable one ends the read), or a negative errno. */
typedef ssize_t (*remote_mem_readv_fn)(void *ctx, unsigned char *const bufs[],
                                       const uint64_t addrs[], size_t n);

/* Load the pages holding ADDRS (at most REMOTE_MEM_SLOTS distinct ones; an exec's path and its
 * argv array) with one READV call instead of one read each. Best effort: a page it could not
 * load is read later as without it, so the results of the reads that follow are the same. */
void remote_mem_preload(struct remote_mem *m, remote_mem_readv_fn readv, const uint64_t addrs[],
                        size_t n);

/* Read the NUL-terminated string at addr, at most max bytes including the NUL.
 * Returns its length and a malloc'd copy in *ret_str; -EFAULT when memory ends before the NUL;
 * -E2BIG when there is no NUL within max bytes; -ENOMEM. */
ssize_t remote_mem_read_string(struct remote_mem *m, uint64_t addr, size_t max, char **ret_str);

struct remote_argv {
	char **argv;    /* argc strings then NULL; never NULL itself after a successful read */
	size_t argc;    /* strings read */
	size_t bytes;   /* sum of strlen+1 over argv */
	bool truncated; /* more than max_args strings or max_bytes bytes: argv holds a prefix */
	bool fault;     /* a pointer or string was unreadable (the kernel fails the exec with
	                 * EFAULT): argv holds what came before it */
};

/* Read a NULL-terminated array of string pointers at addr (a NULL addr is an empty array, as
 * for execve). Stops at max_args strings or max_bytes bytes with truncated set, or at an
 * unreadable pointer or string with fault set; both are results, not errors.
 * Returns 0 and fills *ret (free with remote_argv_done()), or -ENOMEM. */
int remote_mem_read_argv(struct remote_mem *m, uint64_t addr, size_t max_args, size_t max_bytes,
                         struct remote_argv *ret);

/* Free what remote_mem_read_argv() allocated; accepts a zeroed struct. */
void remote_argv_done(struct remote_argv *a);

#endif
