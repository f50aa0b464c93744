/* The verdicts of execs decided a moment ago, kept so that the same exec again is not decided
 * again (the policy's regexes, the aliases of deny rules, a script's interpreter): a build
 * runs the same commands over and over.
 *
 * The key is what the verdict is a function of, taken exactly (compared byte for byte, no
 * digest): the path as given, the file's identity as read (device, inode, mount, ctime in ns,
 * size: a file replaced or rewritten under the same name is another key) and whether it is
 * the file at its name in the sandbox's own view; for a script the same of its interpreter,
 * the "#!" line and the script's path; and the arguments whole (the config's `command` rules
 * read them).
 *
 * The name the path resolved to (real_path) is in the key too: with the same given path and
 * the same identity it can still differ (a symlink or a directory above turned, within the
 * same mount, to another name of the very same inode: a hard link made before, a renamed
 * directory, neither of which changes the file's ctime), and rules match names: an allow of
 * one name is no allow of another (tests/integration/attack5_cache_names.sh). Reading it costs
 * a readlink before the answer only when a symlink was on the way; a path found through none
 * names the file from its own lookup (resolve.h). Bind mounts are other mounts, other keys.
 * What is not in the key is what the guard may change: the session's answers and people's
 * decisions, and termination; the guard clears the cache whenever one of them changes
 * (verdict_cache_clear()). The config is loaded once per run.
 *
 * Only allows are kept: an ask or a denial is decided afresh every time. A key over
 * VERDICT_KEY_MAX bytes (a long command line) is not kept. A small direct-mapped table: the
 * next key hashing to a slot takes it over, so an agent can make the cache miss, never answer
 * wrong. Pure: no I/O. */
#ifndef CLOISTER_SUPERVISOR_EXEC_VERDICT_CACHE_H
#define CLOISTER_SUPERVISOR_EXEC_VERDICT_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "notifier/target.h"
#include "supervisor/policy/policy.h"

#define VERDICT_CACHE_SLOTS 64
#define VERDICT_KEY_MAX     4096

struct verdict_cache;

/* An exec's key, built in place (no allocation). len 0: too long to keep. */
struct verdict_key {
	size_t len;
	uint64_t hash;
	unsigned char bytes[VERDICT_KEY_MAX];
};

int verdict_cache_new(struct verdict_cache **ret);
void verdict_cache_free(struct verdict_cache *c);

void verdict_key_of(const struct exec_target *t, struct verdict_key *ret);

/* The verdict kept for KEY into *ret: true on a hit. */
bool verdict_cache_find(struct verdict_cache *c, const struct verdict_key *key,
                        struct policy_result *ret);
/* Keep RES for KEY if it is an allow (and KEY not too long). -ENOMEM (then nothing kept). */
int verdict_cache_put(struct verdict_cache *c, const struct verdict_key *key,
                      const struct policy_result *res);
/* Forget every verdict: the answers or decisions they may rest on changed. */
void verdict_cache_clear(struct verdict_cache *c);
/* Hits and misses since the start (for the bench and the tests' counters). */
void verdict_cache_stats(const struct verdict_cache *c, uint64_t *ret_hits, uint64_t *ret_misses);

#endif
