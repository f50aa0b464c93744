/* Where a write open lands; see write_target.h. */
#include "supervisor/files/write_target.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "notifier/resolve.h"

#ifndef __O_TMPFILE
#define __O_TMPFILE 020000000
#endif

/* Symlinks followed resolving a path, as the kernel's limit. */
#define MAX_LINKS 40

/* The path of an open directory, as /proc shows it: for the agent's view, its name from the
 * root of the agent's mount namespace. */
static int fd_path(int fd, char **ret)
{
	char link[64], buf[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, sizeof(buf));
	if (n < 0)
		return -errno;
	if ((size_t)n >= sizeof(buf))
		return -ENAMETOOLONG;
	if (buf[0] != '/')
		return -ENOENT; /* unreachable, or deleted */
	*ret = strndup(buf, (size_t)n);
	return *ret ? 0 : -ENOMEM;
}

static char *child_path(const char *dir, const char *name)
{
	char *s = NULL;

	if (strcmp(name, ".") == 0)
		return strdup(dir);
	if (asprintf(&s, "%s%s%s", dir, strcmp(dir, "/") == 0 ? "" : "/", name) < 0)
		return NULL;
	return s;
}

static bool same(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

void write_target_done(struct write_target *t)
{
	if (t->view_dir >= 0)
		close(t->view_dir);
	if (t->host_dir >= 0)
		close(t->host_dir);
	free(t->last);
	free(t->path);
	free(t->host_path);
	*t = (struct write_target){.view_dir = -EBADF, .host_dir = -EBADF};
}

/* In the agent's view: the directory and the name the open of PATH ends at. */
static int find_in_view(const struct resolve_target *rt, int base, const char *path, int flags,
                        struct write_target *t)
{
	bool tmpfile = (flags & __O_TMPFILE) == __O_TMPFILE;
	_cleanup_close_ int owned_base = -EBADF;
	_cleanup_free_ char *cur = strdup(path);

	if (!cur)
		return -ENOMEM;
	for (int links = 0; links <= MAX_LINKS; links++) {
		_cleanup_free_ char *dir = NULL;
		_cleanup_close_ int dirfd = -EBADF;
		const char *last;
		char *slash = strrchr(cur, '/');
		char target[PATH_MAX];
		struct stat st;
		ssize_t n;

		if (tmpfile) {
			dir = strdup(cur);
			last = ".";
		} else {
			if (!*cur || (slash && !slash[1]))
				return WRITE_TARGET_KERNEL; /* "dir/": the kernel fails it */
			last = slash ? slash + 1 : cur;
			if (strcmp(last, ".") == 0 || strcmp(last, "..") == 0)
				return WRITE_TARGET_KERNEL; /* a directory */
			dir = !slash         ? strdup(".")
			      : slash == cur ? strdup("/")
			                     : strndup(cur, (size_t)(slash - cur));
		}
		if (!dir)
			return -ENOMEM;
		dirfd = resolve_exec_path(rt, owned_base >= 0 ? owned_base : base, NULL, dir, 0);
		if (dirfd < 0 || fstat(dirfd, &st) < 0 || !S_ISDIR(st.st_mode))
			return WRITE_TARGET_KERNEL; /* the kernel fails it too, as it sees fit */
		if (!tmpfile) {
			if (fstatat(dirfd, last, &st, AT_SYMLINK_NOFOLLOW) < 0) {
				if (errno != ENOENT || !(flags & O_CREAT))
					return WRITE_TARGET_KERNEL;
				t->exists = false;
			} else if (S_ISLNK(st.st_mode)) {
				/* O_NOFOLLOW fails with ELOOP, O_CREAT|O_EXCL with EEXIST. */
				if ((flags & O_NOFOLLOW) ||
				    (flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
					return WRITE_TARGET_KERNEL;
				n = readlinkat(dirfd, last, target, sizeof(target) - 1);
				if (n <= 0)
					return WRITE_TARGET_KERNEL;
				target[n] = '\0';
				free(cur);
				cur = strdup(target);
				if (!cur)
					return -ENOMEM;
				/* The link's text is relative to its own directory. */
				if (owned_base >= 0)
					close(owned_base);
				owned_base = TAKE_FD(dirfd);
				continue;
			} else if (!S_ISREG(st.st_mode)) {
				return WRITE_TARGET_KERNEL; /* a device, a FIFO, a directory */
			} else {
				t->exists = true;
				t->st = st;
			}
		} else {
			t->exists = true;
			t->st = st;
		}
		t->last = strdup(last);
		if (!t->last)
			return -ENOMEM;
		t->view_dir = TAKE_FD(dirfd);
		return 0;
	}
	return -ELOOP;
}

int write_target_find(const struct resolve_target *rt, int base, const char *path, int flags,
                      struct write_target *ret)
{
	struct write_target t = {.view_dir = -EBADF, .host_dir = -EBADF};
	_cleanup_free_ char *view_dir = NULL, *host_dir = NULL;
	struct stat vst, hst;
	int r;

	r = find_in_view(rt, base, path, flags, &t);
	if (r != 0)
		goto out;
	/* The host's directory by the name the agent's view gives it: the same directory, or
	 * the kernel decides. */
	r = WRITE_TARGET_KERNEL;
	if (fd_path(t.view_dir, &view_dir) < 0)
		goto out;
	t.host_dir = open(view_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (t.host_dir < 0 || fstat(t.view_dir, &vst) < 0 || fstat(t.host_dir, &hst) < 0 ||
	    !same(&vst, &hst))
		goto out;
	if (strcmp(t.last, ".") != 0) {
		if (fstatat(t.host_dir, t.last, &hst, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT || t.exists)
				goto out;
		} else if (!t.exists || !same(&t.st, &hst)) {
			goto out;
		}
	}
	if (fd_path(t.host_dir, &host_dir) < 0)
		goto out;
	r = -ENOMEM;
	t.path = child_path(view_dir, t.last);
	t.host_path = child_path(host_dir, t.last);
	if (!t.path || !t.host_path)
		goto out;
	*ret = t;
	return 0;
out:
	write_target_done(&t);
	return r;
}

bool write_target_is(const struct write_target *t, int fd)
{
	struct stat fst, vst;

	if (fstat(fd, &fst) < 0)
		return false;
	if (strcmp(t->last, ".") == 0)
		return true; /* O_TMPFILE: an unnamed file, in the directory checked */
	return fstatat(t->view_dir, t->last, &vst, AT_SYMLINK_NOFOLLOW) == 0 && same(&fst, &vst);
}
