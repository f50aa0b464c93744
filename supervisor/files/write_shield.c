/* The identities no write ask may reach; see write_shield.h. */
#include "supervisor/files/write_shield.h"

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"

/* Directories walked up from a file: the kernel's own depth is bounded by PATH_MAX. */
#define MAX_DEPTH 4096

struct shielded {
	dev_t dev;
	ino_t ino;
	char *what;
};

struct write_shield {
	struct shielded *items;
	size_t n, cap;
};

int write_shield_new(struct write_shield **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

void write_shield_free(struct write_shield *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->items[i].what);
	free(s->items);
	free(s);
}

int write_shield_add(struct write_shield *s, const char *path, const char *what)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return 0;
	if (write_shield_find(s, st.st_dev, st.st_ino))
		return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct shielded *grown = reallocarray(s->items, cap, sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		s->items = grown;
		s->cap = cap;
	}
	s->items[s->n].what = strdup(what);
	if (!s->items[s->n].what)
		return -ENOMEM;
	s->items[s->n].dev = st.st_dev;
	s->items[s->n].ino = st.st_ino;
	s->n++;
	return 0;
}

const char *write_shield_find(const struct write_shield *s, dev_t dev, ino_t ino)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->items[i].dev == dev && s->items[i].ino == ino)
			return s->items[i].what;
	return NULL;
}

bool write_shield_covers(const struct write_shield *s, int dirfd, const struct stat *file,
                         char *why, size_t size)
{
	_cleanup_close_ int cur = -EBADF;
	const char *what;
	struct stat st;

	if (file) {
		what = write_shield_find(s, file->st_dev, file->st_ino);
		if (what) {
			snprintf(why, size, "it is %s", what);
			return true;
		}
		if (!S_ISDIR(file->st_mode) && file->st_nlink > 1) {
			snprintf(why, size,
			         "it has %ju names (hard links) and a card can show only one of "
			         "them",
			         (uintmax_t)file->st_nlink);
			return true;
		}
	}
	/* Up from the directory by "..": in the host's view, so a bind mount of a shielded
	 * directory elsewhere is still below it. */
	cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	if (cur < 0 || fstat(cur, &st) < 0)
		goto unknown;
	for (int depth = 0; depth < MAX_DEPTH; depth++) {
		_cleanup_close_ int up = -EBADF;
		struct stat ust;

		what = write_shield_find(s, st.st_dev, st.st_ino);
		if (what) {
			snprintf(why, size, "it is below %s", what);
			return true;
		}
		up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up < 0 || fstat(up, &ust) < 0)
			goto unknown;
		if (ust.st_dev == st.st_dev && ust.st_ino == st.st_ino)
			return false; /* the root */
		close(cur);
		cur = TAKE_FD(up);
		st = ust;
	}
unknown:
	snprintf(why, size, "the directories above it cannot be checked");
	return true;
}
