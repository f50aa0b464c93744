/* Resolving an exec's path as the kernel will for the target; see resolve.h. */
#include "notifier/resolve.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "notifier/path.h"
#include "notifier/proc_status.h"
#include "base/cleanup.h"

/* The kernel's MAXSYMLINKS: links followed in one lookup. */
#define MAX_LINKS 40
/* The inode number of every procfs's root directory (PROC_ROOT_INO). */
#define PROC_ROOT_INODE 1
/* A path being walked, symlinks spliced in: bounded, as the kernel's link stack is. */
#define WALK_MAX   (2 * PATH_MAX)
#define STATUS_MAX (64 * 1024)
/* openat2 fails with EAGAIN when a rename or mount raced a scoped lookup: try again. */
#define EAGAIN_RETRIES 4

static int openat2_path(int dirfd, const char *path, uint64_t resolve, bool nofollow)
{
	struct open_how how = {
	        .flags = O_PATH | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0),
	        .resolve = resolve,
	};
	long fd;

	for (int i = 0; i < EAGAIN_RETRIES; i++) {
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		if (fd >= 0 || errno != EAGAIN)
			break;
	}
	return fd < 0 ? -errno : (int)fd;
}

static bool same_file(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* AT_SYMLINK_NOFOLLOW: the kernel refuses a final symlink with ELOOP. Takes FD. */
static int refuse_symlink(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	if (S_ISLNK(st.st_mode)) {
		close(fd);
		return -ELOOP;
	}
	return fd;
}

/* ---- the walk ------------------------------------------------------------------------------ */

struct walk {
	const struct resolve_target *t;
	int cur;    /* the directory the next component is looked up in (owned) */
	char *path; /* what is left to walk (owned), from pos */
	const char *pos;
	unsigned links;
	bool root_known;
	struct statx root;
};

static void walk_set_cur(struct walk *w, int fd)
{
	if (w->cur >= 0)
		close(w->cur);
	w->cur = fd;
}

static int dup_fd(int fd)
{
	int r = fcntl(fd, F_DUPFD_CLOEXEC, 3);

	return r < 0 ? -errno : r;
}

/* Is fd the target's root (same mount, same directory)? ".." stops there, as for the kernel. */
static int walk_at_root(struct walk *w, int fd, bool *ret)
{
	struct statx x;

	if (!w->root_known) {
		if (statx(w->t->root, "", AT_EMPTY_PATH, STATX_INO | STATX_MNT_ID, &w->root) < 0)
			return -errno;
		w->root_known = true;
	}
	if (statx(fd, "", AT_EMPTY_PATH, STATX_INO | STATX_MNT_ID, &x) < 0)
		return -errno;
	*ret = x.stx_ino == w->root.stx_ino && x.stx_dev_major == w->root.stx_dev_major &&
	       x.stx_dev_minor == w->root.stx_dev_minor &&
	       (!(x.stx_mask & STATX_MNT_ID) || x.stx_mnt_id == w->root.stx_mnt_id);
	return 0;
}

/* Replace what is left (from the end of the component just read, REST) by PREFIX + REST. */
static int walk_splice(struct walk *w, const char *prefix, size_t prefix_len, const char *rest)
{
	size_t rest_len = strlen(rest);
	char *s;

	if (prefix_len + rest_len + 1 > WALK_MAX)
		return -ENAMETOOLONG;
	s = malloc(prefix_len + rest_len + 1);
	if (!s)
		return -ENOMEM;
	memcpy(s, prefix, prefix_len);
	memcpy(s + prefix_len, rest, rest_len + 1);
	free(w->path);
	w->path = s;
	w->pos = s;
	return 0;
}

static int read_status_at(int dir, struct proc_status *ret)
{
	_cleanup_close_ int fd = openat(dir, "status", O_RDONLY | O_CLOEXEC);
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;

	if (fd < 0)
		return -errno;
	buf = malloc(STATUS_MAX);
	if (!buf)
		return -ENOMEM;
	while (len < STATUS_MAX) {
		ssize_t n = read(fd, buf + len, STATUS_MAX - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	return proc_status_parse(buf, len, ret);
}

/* What "self" (or "thread-self") in the procfs whose root is PROCROOT names for the target:
 * "TGID" (or "TGID/task/TID") in that procfs's pid namespace; -ENOENT when the target has no
 * pid there, as the kernel's link then fails.
 *
 * The procfs's namespace is not written anywhere, but the target has one pid per level (NStgid,
 * outermost first): the right level k is the one where PROCROOT/<tgid at k> is a process in the
 * target's own pid namespace (ns/pid) that shows exactly the levels from k down (its NStgid
 * there is as long as the target's from k). A pid is unique in its namespace, so a process
 * passing both is the target's thread group. */
static int proc_self_name(const struct resolve_target *t, int procroot, bool thread, char *buf,
                          size_t size)
{
	const struct proc_status *st;
	struct stat own_ns;
	int r;

	r = t->status(t->userdata, &st);
	if (r < 0)
		return r;
	if (t->piddir >= 0) {
		if (fstatat(t->piddir, "ns/pid", &own_ns, 0) < 0)
			return -errno;
	} else {
		char ns_path[64];

		snprintf(ns_path, sizeof(ns_path), "/proc/%d/ns/pid", (int)t->pid);
		if (stat(ns_path, &own_ns) < 0)
			return -errno;
	}
	for (size_t k = st->ns_levels; k-- > 0;) {
		_cleanup_close_ int dir = -EBADF;
		struct proc_status seen;
		struct stat ns;
		char name[16];

		snprintf(name, sizeof(name), "%d", (int)st->ns_tgid[k]);
		dir = openat(procroot, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dir < 0)
			continue;
		if (fstatat(dir, "ns/pid", &ns, 0) < 0 || ns.st_ino != own_ns.st_ino ||
		    ns.st_dev != own_ns.st_dev)
			continue;
		if (read_status_at(dir, &seen) < 0 || seen.ns_levels != st->ns_levels - k ||
		    seen.ns_tgid[0] != st->ns_tgid[k])
			continue;
		if (thread)
			snprintf(buf, size, "%d/task/%d", (int)st->ns_tgid[k], (int)st->ns_pid[k]);
		else
			snprintf(buf, size, "%d", (int)st->ns_tgid[k]);
		return 0;
	}
	return -ENOENT;
}

/* NAME in w->cur is a symlink (or, when a directory was wanted, maybe something else that is
 * not a directory): follow it as the kernel would for the target. LAST: it ends the path
 * (DIR_WANTED: with a trailing slash). REST: what follows NAME. Returns 1 when the walk is over
 * (w->cur is the result), 0 to go on, or -errno. */
static int walk_follow(struct walk *w, const char *name, const char *rest, bool last,
                       bool dir_wanted)
{
	char link[PATH_MAX];
	struct statfs sfs;
	ssize_t n;
	int r;

	if (++w->links > MAX_LINKS)
		return -ELOOP;
	if (fstatfs(w->cur, &sfs) < 0)
		return -errno;
	if (sfs.f_type == PROC_SUPER_MAGIC) {
		struct stat dst;

		if (fstat(w->cur, &dst) < 0)
			return -errno;
		if (dst.st_ino == PROC_ROOT_INODE &&
		    (strcmp(name, "self") == 0 || strcmp(name, "thread-self") == 0)) {
			char self[64];

			r = proc_self_name(w->t, w->cur, name[0] == 't', self, sizeof(self));
			if (r < 0)
				return r;
			return walk_splice(w, self, strlen(self), rest);
		}
		if (dst.st_ino != PROC_ROOT_INODE) {
			/* Below a process's directory every link is a magic one (fd/N, exe, cwd,
			 * root, ns/…, map_files/…): the kernel jumps to what it holds, and so do we
			 * by letting it follow the link for us. */
			int fd = openat(w->cur, name,
			                O_PATH | O_CLOEXEC | (dir_wanted ? O_DIRECTORY : 0));

			if (fd < 0)
				return -errno;
			walk_set_cur(w, fd);
			if (last && !dir_wanted) {
				/* An fd of an O_PATH symlink: exec gets ELOOP from that one. */
				r = refuse_symlink(TAKE_FD(w->cur));
				if (r < 0)
					return r;
				w->cur = r;
				return 1;
			}
			return 0;
		}
		/* The procfs root's other links ("mounts" → "self/mounts") are plain text. */
	}
	n = readlinkat(w->cur, name, link, sizeof(link));
	if (n < 0)
		return errno == EINVAL ? -ENOTDIR : -errno; /* not a link: not a directory either */
	if ((size_t)n >= sizeof(link))
		return -ENAMETOOLONG;
	if (n == 0)
		return -ENOENT;
	if (link[0] == '/') {
		int fd = dup_fd(w->t->root);

		if (fd < 0)
			return fd;
		walk_set_cur(w, fd);
	}
	return walk_splice(w, link, (size_t)n, rest);
}

int resolve_walk(const struct resolve_target *t, int base, const char *path, unsigned flags)
{
	struct walk w = {.t = t, .cur = -EBADF};
	size_t len = strlen(path);
	int r;

	if (len == 0)
		return -ENOENT;
	if (len >= PATH_MAX)
		return -ENAMETOOLONG;
	if (path[0] != '/' && base < 0)
		return -EBADF;
	w.path = strdup(path);
	if (!w.path)
		return -ENOMEM;
	w.pos = w.path;
	r = dup_fd(path[0] == '/' ? t->root : base);
	if (r < 0)
		goto out;
	w.cur = r;

	for (;;) {
		char name[NAME_MAX + 1];
		const char *comp, *end, *after;
		bool last, dir_wanted;
		size_t clen;
		int fd;

		while (*w.pos == '/')
			w.pos++;
		if (!*w.pos) {
			/* "/", or trailing slashes after a directory: the directory itself. */
			r = TAKE_FD(w.cur);
			goto out;
		}
		comp = w.pos;
		end = strchrnul(comp, '/');
		clen = (size_t)(end - comp);
		if (clen > NAME_MAX) {
			r = -ENAMETOOLONG;
			goto out;
		}
		memcpy(name, comp, clen);
		name[clen] = '\0';
		after = end;
		while (*after == '/')
			after++;
		last = *after == '\0';
		dir_wanted = !last || *end == '/';
		w.pos = end;

		if (strcmp(name, ".") == 0)
			continue;
		if (strcmp(name, "..") == 0) {
			bool at_root = false;

			r = walk_at_root(&w, w.cur, &at_root);
			if (r < 0)
				goto out;
			if (at_root)
				continue;
			fd = openat(w.cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (fd < 0) {
				r = -errno;
				goto out;
			}
			walk_set_cur(&w, fd);
			continue;
		}

		fd = openat(w.cur, name,
		            O_PATH | O_NOFOLLOW | O_CLOEXEC | (dir_wanted ? O_DIRECTORY : 0));
		if (fd >= 0 && dir_wanted) {
			walk_set_cur(&w, fd);
			continue;
		}
		if (fd >= 0) {
			struct stat st;

			if (fstat(fd, &st) < 0) {
				r = -errno;
				close(fd);
				goto out;
			}
			if (!S_ISLNK(st.st_mode)) {
				r = fd;
				goto out;
			}
			close(fd);
			if (flags & RESOLVE_EXEC_NOFOLLOW) {
				r = -ELOOP;
				goto out;
			}
		} else if (errno != ENOTDIR || !dir_wanted) {
			r = -errno;
			goto out;
		}
		/* A symlink, or (a directory wanted) perhaps a file: w.pos is what follows. */
		r = walk_follow(&w, name, w.pos, last, dir_wanted);
		if (r < 0)
			goto out;
		if (r == 1) {
			r = TAKE_FD(w.cur);
			goto out;
		}
	}
out:
	if (w.cur >= 0)
		close(w.cur);
	free(w.path);
	return r;
}

/* ---- the fast paths -------------------------------------------------------------------------- */

int resolve_exec_path_hinted(const struct resolve_target *t, int base, const char *base_name,
                             const char *path, unsigned flags, bool *symlinks, char **ret_name)
{
	_cleanup_free_ char *joined = NULL;
	bool nofollow = flags & RESOLVE_EXEC_NOFOLLOW;
	const char *scoped = NULL;
	int fd, first = 0; /* step 2's miss when it went first */

	if (!*path)
		return -ENOENT;
	if (path[0] == '/') {
		scoped = path;
	} else if (base_name && base_name[0] == '/') {
		/* The base's name is trusted only if it still names the base itself in the
		 * target's view (a deleted or unreachable directory reads differently): then the
		 * whole lookup runs below the root, so ".." and absolute symlinks behave as for
		 * the target. */
		_cleanup_close_ int check = openat2_path(
		        t->root, base_name, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, false);

		if (check >= 0 && same_file(check, base) &&
		    asprintf(&joined, "%s/%s", base_name, path) >= 0 && strlen(joined) < PATH_MAX)
			scoped = joined;
	}
	if (!scoped)
		return resolve_walk(t, base, path, flags);

	/* 2 first, on the hint: its hit is trusted on its own (see below). */
	if (*symlinks) {
		fd = openat2_path(t->root, scoped, RESOLVE_IN_ROOT, nofollow);
		if (fd >= 0)
			return nofollow ? refuse_symlink(fd) : fd;
		first = fd;
	}
	/* 1: no symlink on the way: what the kernel sees too, hit or miss. */
	fd = openat2_path(t->root, scoped, RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS, nofollow);
	*symlinks = fd == -ELOOP;
	if (fd >= 0 && !nofollow && ret_name) {
		/* Every component a real directory (no symlink, no magic link), each ".." its
		 * real parent (a mount's root climbs to its mountpoint's directory; a rename on
		 * the way fails the call with EAGAIN): the file's name below the root is the path
		 * made tidy, no /proc readlink needed (resolve.h). */
		int r = path_join("/", scoped, ret_name);

		if (r == -ENOMEM) {
			close(fd);
			return r;
		}
		/* path_join keeps a trailing "/" (a directory's, here): /proc shows none. */
		if (r >= 0) {
			size_t len = strlen(*ret_name);

			while (len > 1 && (*ret_name)[len - 1] == '/')
				(*ret_name)[--len] = '\0';
		}
	}
	if (fd >= 0)
		return nofollow ? refuse_symlink(fd) : fd;
	if (fd != -ELOOP && fd != -EXDEV && fd != -EAGAIN)
		return fd;
	/* 2: with symlinks. A hit cannot have been misled by procfs (see resolve.h); a miss
	 * may be a "self" that names nobody for us, or a magic link we may not follow here. */
	fd = first < 0 ? first : openat2_path(t->root, scoped, RESOLVE_IN_ROOT, nofollow);
	if (fd >= 0)
		return nofollow ? refuse_symlink(fd) : fd;
	if (fd != -ENOENT && fd != -ENOTDIR && fd != -EXDEV && fd != -EAGAIN)
		return fd;
	/* 3 */
	return resolve_walk(t, path[0] == '/' ? -EBADF : base, path, flags);
}

int resolve_exec_path(const struct resolve_target *t, int base, const char *base_name,
                      const char *path, unsigned flags)
{
	bool symlinks = false;

	return resolve_exec_path_hinted(t, base, base_name, path, flags, &symlinks, NULL);
}
