/* What an exec read learns of a file that its content version and its mount settle, kept so
 * that the next exec of the same file need not learn it again: whether its mount is noexec,
 * the superblock the kernel executes it from (without a view), and its "#!" line.
 *
 * Keyed by the file's identity as statx gives it on every read (device, inode, mount id, ctime
 * in ns, size): a file rewritten, renamed, linked or chmod'ed gets a new ctime, so it is read
 * again. A mount remounted noexec keeps its id; the cached "not noexec" then lets the kernel
 * refuse the exec itself, which it does. A small direct-mapped table: an entry is overwritten
 * by the next key that hashes to its slot, so an agent can make it miss, never answer wrong.
 * Pure: no I/O. */
#ifndef CLOISTER_NOTIFIER_FILE_FACTS_H
#define CLOISTER_NOTIFIER_FILE_FACTS_H

#include <stdbool.h>
#include <stdint.h>

#include "notifier/shebang.h"

#define FILE_FACTS_SLOTS 64

struct file_facts_key {
	uint64_t dev; /* st_dev */
	uint64_t ino;
	uint64_t mnt_id;
	uint64_t ctime_ns;
	uint64_t size;
};

struct file_facts {
	bool noexec;
	bool kdev_known; /* kdev below is the file's (read without a view) */
	uint32_t kdev;
	bool shebang_known; /* the first line was read: */
	bool script;        /* a "#!" line the kernel would run: sb */
	struct shebang sb;
};

struct file_facts_table;

int file_facts_new(struct file_facts_table **ret);
void file_facts_free(struct file_facts_table *t);

/* The facts kept for KEY, or NULL. Valid until the next put. */
const struct file_facts *file_facts_find(const struct file_facts_table *t,
                                         const struct file_facts_key *key);
void file_facts_put(struct file_facts_table *t, const struct file_facts_key *key,
                    const struct file_facts *facts);

#endif
