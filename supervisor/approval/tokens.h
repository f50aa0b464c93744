/* The cloister token registry (guardian-api.md "Token API"): which token names which sandbox.
 *
 * Pure: no I/O. Lookups compare every registered token in constant time, so the time taken does
 * not say how much of a guess was right. Bounded: at most TOKENS_MAX entries, each field at most
 * TOKENS_FIELD_MAX bytes. */
#ifndef CLOISTER_TOKENS_H
#define CLOISTER_TOKENS_H

#include <stdbool.h>
#include <stddef.h>

#define TOKENS_MAX       1024
#define TOKENS_FIELD_MAX 4096
#define TOKEN_MIN_LEN    16
#define TOKEN_MAX_LEN    256

struct token_entry {
	char *token;
	char *cloister;
	char *project;  /* NULL when not given */
	char *worktree; /* NULL when not given */
};

struct tokens;

int tokens_new(struct tokens **ret);
void tokens_free(struct tokens *t);

/* Register or replace TOKEN. -EINVAL for a token that is not 16..256 printable ASCII
 * characters without spaces, an empty cloister name, or a field over the bound; -ENOSPC when
 * full; -ENOMEM. */
int tokens_register(struct tokens *t, const char *token, const char *cloister, const char *project,
                    const char *worktree);
/* -ENOENT when unknown. */
int tokens_revoke(struct tokens *t, const char *token);
/* The entry of TOKEN (constant-time over every entry), or NULL. Valid until the next change. */
const struct token_entry *tokens_lookup(const struct tokens *t, const char *token);
size_t tokens_count(const struct tokens *t);
const struct token_entry *tokens_at(const struct tokens *t, size_t i);

/* Constant-time comparison of two NUL-terminated strings (time depends on B's length only). */
bool tokens_equal(const char *a, const char *b);

#endif
