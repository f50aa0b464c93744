/* See worktree.h. */
#include "supervisor/approval/worktree.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "supervisor/approval/labels.h"

#define HEAD_MAX   4096 /* a HEAD or .git file is one short line */
#define MAX_LEVELS 64

/* Read at most HEAD_MAX - 1 bytes of NAME in DIRFD into BUF, NUL-terminated; its length. */
static ssize_t read_small(int dirfd, const char *name, char *buf)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	ssize_t n;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL; /* not a fifo or a device that would block or never end */
	n = read(fd, buf, HEAD_MAX - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return n;
}

int worktree_git_branch(const char *dir, char *ret, size_t size)
{
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char buf[HEAD_MAX], gitdir[PATH_MAX];
	struct stat st;
	ssize_t n;

	if (fd < 0)
		return -errno;
	for (int level = 0; level < MAX_LEVELS; level++) {
		if (fstatat(fd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0) {
			if (S_ISDIR(st.st_mode)) {
				_cleanup_close_ int git =
				        openat(fd, ".git", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

				if (git < 0)
					return -errno;
				n = read_small(git, "HEAD", buf);
			} else {
				n = read_small(fd, ".git", buf);
				if (n >= 0) {
					int r = labels_parse_gitdir(buf, (size_t)n, gitdir,
					                            sizeof(gitdir));
					_cleanup_close_ int git = -EBADF;

					if (r < 0)
						return r;
					/* A relative gitdir is relative to the .git file's
					 * directory. */
					git = openat(fd, gitdir,
					             O_RDONLY | O_DIRECTORY | O_CLOEXEC);
					if (git < 0)
						return -errno;
					n = read_small(git, "HEAD", buf);
				}
			}
			if (n < 0)
				return (int)n;
			return labels_parse_git_head(buf, (size_t)n, ret, size);
		}
		if (errno != ENOENT)
			return -errno;
		int up = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		struct stat here, parent;

		if (up < 0)
			return -errno;
		if (fstat(fd, &here) == 0 && fstat(up, &parent) == 0 &&
		    here.st_dev == parent.st_dev && here.st_ino == parent.st_ino) {
			close(up);
			return -ENOENT; /* the root */
		}
		close(fd);
		fd = up;
	}
	return -ENOENT;
}
