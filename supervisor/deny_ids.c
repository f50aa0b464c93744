/* The files `path:` deny rules name, by identity; see deny_ids.h. */
#include "supervisor/deny_ids.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "protocol/cleanup.h"
#include "supervisor/config.h"

/* Hops of a symlink chain whose directories are watched (ls -l /usr/bin/nc: two). */
#define CHAIN_MAX  8
#define WATCH_MASK (IN_CREATE | IN_MOVED_TO | IN_ONLYDIR)

struct deny_id {
	dev_t dev;
	ino_t ino;
	int fd;     /* O_PATH: pins the inode */
	char *name; /* the glob match that led to it */
};

struct deny_ids {
	const struct config *config;
	struct deny_id *ids; /* sorted by (dev, ino) */
	size_t n, cap;
	bool truncated;
	int inotify; /* -1: not watching */
	int wds[DENY_IDS_WATCHES];
	size_t watches;
};

static int cmp_id(const void *a, const void *b)
{
	const struct deny_id *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static const struct deny_id *find(const struct deny_ids *d, dev_t dev, ino_t ino)
{
	struct deny_id key = {.dev = dev, .ino = ino};

	return d->n ? bsearch(&key, d->ids, d->n, sizeof(key), cmp_id) : NULL;
}

/* Watch the directory of PATH (best effort: a directory we cannot watch is only not
 * re-checked). */
static void watch_dir_of(struct deny_ids *d, const char *path)
{
	_cleanup_free_ char *dir = strdup(path);
	char *slash;

	if (d->inotify < 0 || !dir || d->watches >= DENY_IDS_WATCHES)
		return;
	slash = strrchr(dir, '/');
	if (!slash)
		return;
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	/* The same directory twice gives the same watch: count only new ones. */
	{
		int wd = inotify_add_watch(d->inotify, dir, WATCH_MASK);

		if (wd < 0)
			return;
		for (size_t i = 0; i < d->watches; i++)
			if (d->wds[i] == wd)
				return;
		d->wds[d->watches++] = wd;
	}
}

/* The directories a name goes through on its way to the file: its own, and each symlink's. */
static void watch_chain(struct deny_ids *d, const char *name)
{
	char cur[PATH_MAX], link[PATH_MAX];

	if (strlen(name) >= sizeof(cur))
		return;
	strcpy(cur, name);
	for (int hop = 0; hop < CHAIN_MAX; hop++) {
		ssize_t n;

		watch_dir_of(d, cur);
		n = readlink(cur, link, sizeof(link) - 1);
		if (n <= 0)
			return;
		link[n] = '\0';
		if (link[0] == '/') {
			strcpy(cur, link);
		} else {
			char *slash = strrchr(cur, '/');
			size_t dirlen = slash ? (size_t)(slash - cur) + 1 : 0;

			if (dirlen + (size_t)n >= sizeof(cur))
				return;
			memcpy(cur + dirlen, link, (size_t)n + 1);
		}
	}
}

/* Add the file NAME leads to (if it is a regular file not known yet). 1 added, 0 not, -ENOMEM. */
static int add_file(struct deny_ids *d, const char *name)
{
	struct deny_id id = {.fd = -EBADF};
	struct stat st;
	int fd;

	fd = open(name, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || find(d, st.st_dev, st.st_ino)) {
		close(fd);
		return 0;
	}
	if (d->n >= DENY_IDS_MAX) {
		d->truncated = true;
		close(fd);
		return 0;
	}
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 16;
		struct deny_id *grown = reallocarray(d->ids, cap, sizeof(*grown));

		if (!grown) {
			close(fd);
			return -ENOMEM;
		}
		d->ids = grown;
		d->cap = cap;
	}
	id.dev = st.st_dev;
	id.ino = st.st_ino;
	id.fd = fd;
	id.name = strdup(name);
	if (!id.name) {
		close(fd);
		return -ENOMEM;
	}
	/* Sorted insert: the set is small and changes rarely. */
	{
		size_t i = d->n;

		while (i > 0 && cmp_id(&d->ids[i - 1], &id) > 0) {
			d->ids[i] = d->ids[i - 1];
			i--;
		}
		d->ids[i] = id;
	}
	d->n++;
	return 1;
}

/* Expand every exec.deny path glob; returns how many files were added, or -ENOMEM. */
static int expand(struct deny_ids *d, bool watch)
{
	const struct config_exec_list *deny = &d->config->exec.deny;
	int added = 0;

	for (size_t i = 0; i < deny->n; i++) {
		const char *pattern = deny->items[i].path_glob;
		glob_t g = {0};

		if (!pattern || pattern[0] != '/')
			continue;
		/* As fnmatch(FNM_PATHNAME) in the policy: '*' also matches a leading dot. */
		if (glob(pattern, GLOB_NOSORT | GLOB_PERIOD, NULL, &g) == 0) {
			for (size_t k = 0; k < g.gl_pathc; k++) {
				int r = add_file(d, g.gl_pathv[k]);

				if (r < 0) {
					globfree(&g);
					return r;
				}
				added += r;
				if (watch)
					watch_chain(d, g.gl_pathv[k]);
			}
		}
		globfree(&g);
	}
	return added;
}

int deny_ids_new(const struct config *config, struct deny_ids **ret, struct cl_error *err)
{
	struct deny_ids *d = calloc(1, sizeof(*d));
	int r;

	if (!d)
		return cl_error_set(err, -ENOMEM, "out of memory");
	d->config = config;
	d->inotify = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	r = expand(d, true);
	if (r < 0) {
		deny_ids_free(d);
		return cl_error_set(err, r, "deny rules' files: %s", strerror(-r));
	}
	if (d->inotify >= 0 && d->watches == 0) {
		close(d->inotify);
		d->inotify = -1;
	}
	*ret = d;
	return 0;
}

void deny_ids_free(struct deny_ids *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++) {
		close(d->ids[i].fd);
		free(d->ids[i].name);
	}
	free(d->ids);
	if (d->inotify >= 0)
		close(d->inotify);
	free(d);
}

int deny_ids_fd(const struct deny_ids *d)
{
	return d->inotify;
}

int deny_ids_refresh(struct deny_ids *d)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool changed = false;

	if (d->inotify < 0)
		return 0;
	for (;;) {
		ssize_t n = read(d->inotify, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		changed = true; /* only creations and renames into the directories are watched */
	}
	/* New symlink targets (an alternative switched) get their directories watched too. */
	return changed ? expand(d, true) : 0;
}

const char *deny_ids_lookup(const struct deny_ids *d, dev_t st_dev, ino_t st_ino)
{
	const struct deny_id *id = find(d, st_dev, st_ino);

	return id ? id->name : NULL;
}

size_t deny_ids_count(const struct deny_ids *d)
{
	return d->n;
}

bool deny_ids_truncated(const struct deny_ids *d)
{
	return d->truncated;
}
