/* The files `path:` deny rules name, by identity; see deny_ids.h. */
#include "supervisor/exec/deny_ids.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "supervisor/policy/config.h"

/* Hops of a symlink chain whose directories are watched (ls -l /usr/bin/nc: two). */
#define CHAIN_MAX  8
#define WATCH_MASK (IN_CREATE | IN_MOVED_TO | IN_ONLYDIR)

struct deny_id {
	dev_t dev;
	ino_t ino;
	int fd;     /* O_PATH: pins the inode */
	char *name; /* the glob match that led to it */
};

/* A directory the globs' matches (or their symlinks) live in, as it was when they were
 * expanded: a new name in it changes its mtime. */
struct dir_stamp {
	char *path;
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
};

struct deny_ids {
	const struct config *config;
	struct deny_id *ids; /* sorted by (dev, ino) */
	size_t n, cap;
	bool truncated;
	struct dir_stamp dirs[DENY_IDS_DIRS];
	size_t n_dirs;
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

/* Remember the directory of PATH as it is now (best effort: one we cannot stat, or beyond
 * DENY_IDS_DIRS, is only not re-checked). */
static void stamp_dir_of(struct deny_ids *d, const char *path)
{
	_cleanup_free_ char *dir = strdup(path);
	struct stat st;
	char *slash;

	if (!dir || d->n_dirs >= DENY_IDS_DIRS)
		return;
	slash = strrchr(dir, '/');
	if (!slash)
		return;
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	for (size_t i = 0; i < d->n_dirs; i++)
		if (strcmp(d->dirs[i].path, dir) == 0)
			return;
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return;
	d->dirs[d->n_dirs] = (struct dir_stamp){
	        .path = TAKE_PTR(dir), .dev = st.st_dev, .ino = st.st_ino, .mtime = st.st_mtim};
	d->n_dirs++;
}

static void stamps_clear(struct deny_ids *d)
{
	for (size_t i = 0; i < d->n_dirs; i++)
		free(d->dirs[i].path);
	d->n_dirs = 0;
}

/* Did a name come or go in one of the directories since the globs were expanded? */
static bool stamps_changed(const struct deny_ids *d)
{
	for (size_t i = 0; i < d->n_dirs; i++) {
		const struct dir_stamp *ds = &d->dirs[i];
		struct stat st;

		if (stat(ds->path, &st) < 0 || st.st_dev != ds->dev || st.st_ino != ds->ino ||
		    st.st_mtim.tv_sec != ds->mtime.tv_sec ||
		    st.st_mtim.tv_nsec != ds->mtime.tv_nsec)
			return true;
	}
	return false;
}

/* The directories a name goes through on its way to the file: its own, and each symlink's. */
static void stamp_chain(struct deny_ids *d, const char *name)
{
	char cur[PATH_MAX], link[PATH_MAX];

	if (strlen(name) >= sizeof(cur))
		return;
	strcpy(cur, name);
	for (int hop = 0; hop < CHAIN_MAX; hop++) {
		ssize_t n;

		stamp_dir_of(d, cur);
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

/* Expand every exec.deny path glob, stamping the directories anew; returns how many files
 * were added, or -ENOMEM. */
static int expand(struct deny_ids *d)
{
	const struct config_exec_list *deny = &d->config->exec.deny;
	int added = 0;

	stamps_clear(d);
	for (size_t i = 0; i < deny->n; i++) {
		const char *pattern = deny->items[i].path_glob;
		glob_t g = {0};

		if (!pattern || pattern[0] != '/')
			continue;
		/* A file that appears later in the glob's own directory counts too. */
		{
			size_t dlen = (size_t)(strrchr(pattern, '/') - pattern);

			if (!memchr(pattern, '*', dlen) && !memchr(pattern, '?', dlen) &&
			    !memchr(pattern, '[', dlen))
				stamp_dir_of(d, pattern);
		}
		/* As fnmatch(FNM_PATHNAME) in the policy: '*' also matches a leading dot. */
		if (glob(pattern, GLOB_NOSORT | GLOB_PERIOD, NULL, &g) == 0) {
			for (size_t k = 0; k < g.gl_pathc; k++) {
				int r = add_file(d, g.gl_pathv[k]);

				if (r < 0) {
					globfree(&g);
					return r;
				}
				added += r;
				stamp_chain(d, g.gl_pathv[k]);
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
	r = expand(d);
	if (r < 0) {
		deny_ids_free(d);
		return cl_error_set(err, r, "deny rules' files: %s", strerror(-r));
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
	stamps_clear(d);
	free(d);
}

const char *deny_ids_find(struct deny_ids *d, dev_t st_dev, ino_t st_ino, nlink_t st_nlink)
{
	const struct deny_id *id = find(d, st_dev, st_ino);

	/* A hard link of a denied file has two names at least; one we do not know may be of a
	 * file put in place since the globs were expanded. Out of memory, we go on with what
	 * we have. */
	if (!id && st_nlink > 1 && stamps_changed(d) && expand(d) > 0)
		id = find(d, st_dev, st_ino);
	return id ? id->name : NULL;
}

bool deny_ids_truncated(const struct deny_ids *d)
{
	return d->truncated;
}
