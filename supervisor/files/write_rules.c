/* The pure half of the ask for writes; see write_rules.h. */
#include "supervisor/files/write_rules.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#ifndef __O_TMPFILE
#define __O_TMPFILE 020000000
#endif

bool write_rules_flags_write(int flags)
{
	if (flags & O_PATH)
		return false; /* the kernel ignores the access flags of an O_PATH open */
	return (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | __O_TMPFILE)) != 0;
}

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

bool write_rules_kernel_only(const char *path)
{
	return under(path, "/dev") || under(path, "/proc") || under(path, "/sys");
}

struct write_answer {
	char *path;
	bool prefix;
};

struct write_answers {
	struct write_answer *items;
	size_t n, cap;
};

int write_answers_new(struct write_answers **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

void write_answers_free(struct write_answers *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++)
		free(a->items[i].path);
	free(a->items);
	free(a);
}

int write_answers_allow(struct write_answers *a, const char *path, bool prefix)
{
	if (path[0] != '/')
		return -EINVAL;
	if (write_answers_covers(a, path) && !prefix)
		return 0;
	if (a->n >= WRITE_ANSWERS_MAX)
		return -E2BIG;
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 16;
		struct write_answer *grown = reallocarray(a->items, cap, sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		a->items = grown;
		a->cap = cap;
	}
	a->items[a->n].path = strdup(path);
	if (!a->items[a->n].path)
		return -ENOMEM;
	a->items[a->n++].prefix = prefix;
	return 0;
}

bool write_answers_covers(const struct write_answers *a, const char *path)
{
	for (size_t i = 0; a && i < a->n; i++) {
		const struct write_answer *w = &a->items[i];

		if (w->prefix ? (strcmp(w->path, "/") == 0 || under(path, w->path))
		              : strcmp(w->path, path) == 0)
			return true;
	}
	return false;
}

/* FNV-1a: a collision only loses a line, never lets one more through. */
static uint64_t path_hash(const char *path)
{
	uint64_t h = 14695981039346656037ULL;

	for (const unsigned char *c = (const unsigned char *)path; *c; c++)
		h = (h ^ *c) * 1099511628211ULL;
	return h;
}

bool write_notes_admit(struct write_notes *wn, uint64_t now_ms, pid_t pid, const char *path)
{
	uint64_t hash = path_hash(path);

	for (unsigned i = 0; i < wn->n; i++)
		if (wn->recent[i].pid == pid && wn->recent[i].hash == hash)
			return false;
	if (now_ms / 1000 != wn->second) {
		wn->second = now_ms / 1000;
		wn->in_second = 0;
	}
	if (wn->in_second >= WRITE_NOTES_PER_SECOND)
		return false;
	wn->in_second++;
	wn->recent[wn->next].pid = pid;
	wn->recent[wn->next].hash = hash;
	wn->next = (wn->next + 1) % WRITE_NOTES_RECENT;
	if (wn->n < WRITE_NOTES_RECENT)
		wn->n++;
	return true;
}
