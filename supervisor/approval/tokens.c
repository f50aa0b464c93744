/* Token registry; see tokens.h. */
#include "supervisor/approval/tokens.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct tokens {
	struct token_entry *v;
	size_t n, cap;
};

int tokens_new(struct tokens **ret)
{
	struct tokens *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	*ret = t;
	return 0;
}

static void entry_clear(struct token_entry *e)
{
	/* Tokens are secrets: do not leave them in freed memory. */
	if (e->token)
		explicit_bzero(e->token, strlen(e->token));
	free(e->token);
	free(e->cloister);
	free(e->project);
	free(e->worktree);
	memset(e, 0, sizeof(*e));
}

void tokens_free(struct tokens *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		entry_clear(&t->v[i]);
	free(t->v);
	free(t);
}

bool tokens_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char diff = (unsigned char)(la != lb);

	for (size_t i = 0; i < lb; i++)
		diff |= (unsigned char)((i < la ? (unsigned char)a[i] : 0) ^ (unsigned char)b[i]);
	return diff == 0;
}

static bool token_valid(const char *token)
{
	size_t len = strlen(token);

	if (len < TOKEN_MIN_LEN || len > TOKEN_MAX_LEN)
		return false;
	for (size_t i = 0; i < len; i++)
		if (token[i] <= ' ' || token[i] > '~')
			return false;
	return true;
}

static bool field_ok(const char *s)
{
	return !s || strnlen(s, TOKENS_FIELD_MAX + 1) <= TOKENS_FIELD_MAX;
}

static struct token_entry *find(const struct tokens *t, const char *token)
{
	struct token_entry *found = NULL;

	/* Visit every entry whatever matches, so timing does not reveal the position. */
	for (size_t i = 0; i < t->n; i++)
		if (tokens_equal(token, t->v[i].token) && !found)
			found = &t->v[i];
	return found;
}

int tokens_register(struct tokens *t, const char *token, const char *cloister, const char *project,
                    const char *worktree)
{
	struct token_entry e = {0}, *slot;

	if (!token || !token_valid(token) || !cloister || !*cloister || !field_ok(cloister) ||
	    !field_ok(project) || !field_ok(worktree))
		return -EINVAL;
	e.token = strdup(token);
	e.cloister = strdup(cloister);
	e.project = project && *project ? strdup(project) : NULL;
	e.worktree = worktree && *worktree ? strdup(worktree) : NULL;
	if (!e.token || !e.cloister || (project && *project && !e.project) ||
	    (worktree && *worktree && !e.worktree)) {
		entry_clear(&e);
		return -ENOMEM;
	}
	slot = find(t, token);
	if (slot) {
		entry_clear(slot);
		*slot = e;
		return 0;
	}
	if (t->n >= TOKENS_MAX) {
		entry_clear(&e);
		return -ENOSPC;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 8;
		struct token_entry *v = realloc(t->v, cap * sizeof(*v));

		if (!v) {
			entry_clear(&e);
			return -ENOMEM;
		}
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n++] = e;
	return 0;
}

int tokens_revoke(struct tokens *t, const char *token)
{
	struct token_entry *e = find(t, token);

	if (!e)
		return -ENOENT;
	entry_clear(e);
	*e = t->v[--t->n];
	memset(&t->v[t->n], 0, sizeof(t->v[t->n]));
	return 0;
}

const struct token_entry *tokens_lookup(const struct tokens *t, const char *token)
{
	return token ? find(t, token) : NULL;
}

size_t tokens_count(const struct tokens *t)
{
	return t->n;
}

const struct token_entry *tokens_at(const struct tokens *t, size_t i)
{
	return i < t->n ? &t->v[i] : NULL;
}
