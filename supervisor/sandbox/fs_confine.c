/* See fs_confine.h. */
#include "supervisor/sandbox/fs_confine.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "supervisor/policy/config_files.h"
#include "supervisor/policy/fs_policy.h"
#include "supervisor/policy/path_boundary.h"
#include "supervisor/sandbox/git_config.h"

struct fs_absent {
	int dirfd; /* O_PATH: the nearest ancestor that existed at the start */
	char *rel; /* the path below it, "a/b/name"; its first component was absent */
	char *path;
	bool hidden; /* an fs.hide path, else fs.protect */
};

struct fs_sweep {
	struct fs_absent *v;
	size_t n;
	/* The worktree, when writable: every .git in it is checked (fs_confine.h). */
	int git_root; /* O_PATH | O_DIRECTORY, or -EBADF */
	char *git_root_path;
	struct timespec start; /* the run's start, on the worktree's file system's clock */
};

struct hardlinked {
	dev_t dev;
	ino_t ino;
	char *path;
};

struct fs_confine {
	struct fs_sweep *sweep;          /* absent protected paths, the .git check */
	struct confine_paths write;      /* resolved, outermost only */
	struct confine_paths protect;    /* resolved, existing */
	struct confine_paths links;      /* symlinks on the way to a protected path */
	struct confine_paths hide_dirs;  /* resolved, existing directories */
	struct confine_paths hide_files; /* resolved, existing non-directories */
	struct confine_paths pins;       /* ancestors of protected paths inside a writable one */
	/* What protected paths lead to, protected too: "TARGET (from SOURCE)", for run -v. */
	struct confine_paths followed;
	size_t unwalked;    /* protected directories or git configs not followed whole */
	size_t git_configs; /* git configs read */
	/* Protected regular files with other hard links: those are looked for in the writable
	 * paths. */
	struct hardlinked *hl;
	size_t n_hl;
	size_t n_write_all; /* writable paths before reducing to the outermost */
	size_t absent_protect, absent_hide, created, skipped_hide;
	bool no_mounts;
	bool private_tmp;
	bool all_writable; /* "/" is in fs.write: nothing is made read-only */
};

void fs_confine_free(struct fs_confine *fc)
{
	if (!fc)
		return;
	confine_paths_free(&fc->write);
	confine_paths_free(&fc->protect);
	confine_paths_free(&fc->links);
	confine_paths_free(&fc->hide_dirs);
	confine_paths_free(&fc->hide_files);
	confine_paths_free(&fc->pins);
	confine_paths_free(&fc->followed);
	for (size_t i = 0; i < fc->n_hl; i++)
		free(fc->hl[i].path);
	free(fc->hl);
	fs_sweep_free(fc->sweep);
	free(fc);
}

void fs_sweep_free(struct fs_sweep *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i].dirfd >= 0)
			close(s->v[i].dirfd);
		free(s->v[i].rel);
		free(s->v[i].path);
	}
	if (s->git_root >= 0)
		close(s->git_root);
	free(s->git_root_path);
	free(s->v);
	free(s);
}

struct fs_sweep *fs_confine_take_sweep(struct fs_confine *fc)
{
	return fc ? TAKE_PTR(fc->sweep) : NULL;
}

static struct fs_sweep *sweep_of(struct fs_confine *fc)
{
	if (!fc->sweep && (fc->sweep = calloc(1, sizeof(*fc->sweep))))
		fc->sweep->git_root = -EBADF;
	return fc->sweep;
}

/* Remember absent protected PATH (expanded, no glob) by its nearest ancestor that exists,
 * opened now: what the agent creates at PATH, or on the way to it, is found at the end. */
static int add_absent(struct fs_confine *fc, const char *path, bool hidden)
{
	_cleanup_free_ char *parent = strdup(path);
	struct fs_absent a = {.dirfd = -EBADF, .hidden = hidden};
	struct fs_absent *v;
	char *slash;

	if (!parent)
		return -ENOMEM;
	if (path[0] != '/' || !sweep_of(fc))
		return path[0] != '/' ? 0 : -ENOMEM;
	if (fc->sweep->n >= FS_CONFINE_MAX_PATHS)
		return -E2BIG;
	/* Up from PATH: the first ancestor that opens as a directory. Something at the name
	 * below it already (a dangling symlink, a file where a directory is expected) is the
	 * user's, left alone. */
	while ((slash = strrchr(parent, '/'))) {
		const char *name = path + (slash - parent) + 1;

		*slash = '\0';
		a.dirfd = open(parent[0] ? parent : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (a.dirfd >= 0) {
			char first[NAME_MAX + 1];
			size_t len = strcspn(name, "/");

			if (len == 0 || len >= sizeof(first)) {
				close(a.dirfd);
				return 0;
			}
			memcpy(first, name, len);
			first[len] = '\0';
			if (fstatat(a.dirfd, first, &(struct stat){0}, AT_SYMLINK_NOFOLLOW) == 0) {
				close(a.dirfd);
				return 0;
			}
			a.rel = strdup(name);
			break;
		}
		/* Out of descriptors, or memory: refuse to start rather than leave the path
		 * unchecked. */
		if (errno == EMFILE || errno == ENFILE || errno == ENOMEM)
			return -errno;
		if (!parent[0])
			return 0;
	}
	if (a.dirfd < 0)
		return 0;
	a.path = strdup(path);
	v = reallocarray(fc->sweep->v, fc->sweep->n + 1, sizeof(*v));
	if (!a.rel || !a.path || !v) {
		if (v)
			fc->sweep->v = v;
		close(a.dirfd);
		free(a.rel);
		free(a.path);
		return -ENOMEM;
	}
	fc->sweep->v = v;
	fc->sweep->v[fc->sweep->n++] = a;
	return 0;
}

/* DIR/NAME for messages (DIR itself for "."), malloc'd; NULL without memory. */
static char *join(const char *dir, const char *name)
{
	char *path;

	if (strcmp(name, ".") == 0)
		return strdup(dir);
	return asprintf(&path, "%s/%s", strcmp(dir, "/") ? dir : "", name) < 0 ? NULL : path;
}

static int move_aside_once(int dirfd, const char *dir, const char *name, char **ret_moved);

/* Rename NAME in DIRFD (DIR in messages) aside, never replacing: "NAME.cloister-blocked", or,
 * when something is there (the agent may have made it), "NAME.cloister-blocked.RANDOM" — a
 * name it could not guess — tried a few times. An agent of our uid may have taken the write
 * or search permission off the directory (chmod 555) to keep its file there: a directory of
 * ours gets them back for the rename, then its mode as it was. */
static int move_aside(int dirfd, const char *dir, const char *name, char **ret_moved)
{
	const mode_t wx = S_IWUSR | S_IXUSR;
	char self[64];
	struct stat st;
	int r = move_aside_once(dirfd, dir, name, ret_moved);

	if (r != -EACCES || fstat(dirfd, &st) < 0 || st.st_uid != geteuid() ||
	    (st.st_mode & wx) == wx)
		return r;
	/* DIRFD is O_PATH: its /proc link names the directory itself. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", dirfd);
	if (chmod(self, (st.st_mode & 07777) | wx) < 0)
		return r;
	r = move_aside_once(dirfd, dir, name, ret_moved);
	(void)chmod(self, st.st_mode & 07777);
	return r;
}

static int move_aside_once(int dirfd, const char *dir, const char *name, char **ret_moved)
{
	char to[NAME_MAX + 1];
	int r = -EEXIST;

	for (unsigned n = 0; r == -EEXIST && n < 8; n++) {
		uint64_t rnd = 0;
		int len;

		if (n && getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			return -EIO;
		/* A name too long for the suffix keeps its first 200 bytes. */
		len = n ? snprintf(to, sizeof(to), "%.200s.cloister-blocked.%016llx", name,
		                   (unsigned long long)rnd)
		        : snprintf(to, sizeof(to), "%.200s.cloister-blocked", name);
		if (len < 0 || (size_t)len >= sizeof(to))
			return -ENAMETOOLONG;
		r = renameat2(dirfd, name, dirfd, to, RENAME_NOREPLACE) < 0 ? -errno : 0;
		/* A file system without RENAME_NOREPLACE: the agent is gone, the check and the
		 * rename are not raced by it. */
		if (r == -EINVAL) {
			if (fstatat(dirfd, to, &(struct stat){0}, AT_SYMLINK_NOFOLLOW) == 0)
				r = -EEXIST;
			else
				r = renameat(dirfd, name, dirfd, to) < 0 ? -errno : 0;
		}
	}
	if (r < 0)
		return r;
	if (asprintf(ret_moved, "%s/%s", strcmp(dir, "/") ? dir : "", to) < 0)
		*ret_moved = NULL;
	return 0;
}

struct sweep_ctx {
	const struct fs_sweep *s;
	fs_sweep_report_fn report;
	void *userdata;
};

static void aside(struct sweep_ctx *c, enum fs_sweep_what what, int dirfd, const char *dir,
                  const char *name)
{
	_cleanup_free_ char *path = NULL, *moved = NULL;
	int r = move_aside(dirfd, dir, name, &moved);

	if (!(path = join(dir, name)))
		return;
	c->report(c->userdata, what, path, r < 0 ? NULL : moved ? moved : name, r);
}

static void sweep_absent(struct sweep_ctx *c, const struct fs_absent *a)
{
	_cleanup_free_ char *parent = strdup(a->rel);
	_cleanup_free_ char *dir = strdup(a->path);
	_cleanup_close_ int pfd = -EBADF;
	char *slash = parent ? strrchr(parent, '/') : NULL;
	const char *name = slash ? slash + 1 : a->rel;
	char first[NAME_MAX + 1];
	size_t len;

	if (!parent || !dir || !strrchr(dir, '/'))
		return;
	*strrchr(dir, '/') = '\0';
	if (!slash) {
		if (fstatat(a->dirfd, name, &(struct stat){0}, AT_SYMLINK_NOFOLLOW) == 0)
			aside(c, a->hidden ? FS_SWEEP_HIDDEN : FS_SWEEP_PROTECTED, a->dirfd,
			      dir[0] ? dir : "/", name);
		return;
	}
	*slash = '\0';
	/* The directories the agent made on the way, without a symlink: the path itself is
	 * moved aside, the rest stays. */
	pfd = (int)syscall(SYS_openat2, a->dirfd, parent,
	                   &(struct open_how){.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
	                                      .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
	                                                 RESOLVE_NO_MAGICLINKS},
	                   sizeof(struct open_how));
	if (pfd >= 0) {
		if (fstatat(pfd, name, &(struct stat){0}, AT_SYMLINK_NOFOLLOW) == 0)
			aside(c, a->hidden ? FS_SWEEP_HIDDEN : FS_SWEEP_PROTECTED, pfd, dir, name);
		return;
	}
	if (errno == ENOENT || errno == ENOTDIR)
		return;
	/* A symlink on the way (or anything else odd): the first directory that was absent at
	 * the start goes aside whole — everything in it was made during the run. */
	len = strcspn(a->rel, "/");
	if (len >= sizeof(first))
		return;
	memcpy(first, a->rel, len);
	first[len] = '\0';
	memcpy(dir, a->path, strlen(a->path) - strlen(a->rel));
	dir[strlen(a->path) - strlen(a->rel) - 1] = '\0';
	if (fstatat(a->dirfd, first, &(struct stat){0}, AT_SYMLINK_NOFOLLOW) == 0)
		aside(c, a->hidden ? FS_SWEEP_HIDDEN : FS_SWEEP_PROTECTED, a->dirfd,
		      dir[0] ? dir : "/", first);
}

/* ---- every .git in the worktree ---------------------------------------------------------- */

/* Deeper than this below the worktree, directories are not looked into (each level holds a
 * file descriptor); the run says so. */
#define GIT_WALK_MAX_DEPTH 128

static bool after_start(const struct fs_sweep *s, const struct statx_timestamp *t)
{
	return t->tv_sec > s->start.tv_sec ||
	       (t->tv_sec == s->start.tv_sec && t->tv_nsec >= (uint32_t)s->start.tv_nsec);
}

/* Changed during the run: its inode's status (contents, mode, a rename) changed after the
 * start. The agent cannot set a change time back. */
static bool changed(const struct fs_sweep *s, int dirfd, const char *name, struct statx *ret)
{
	struct statx stx;

	if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_CTIME | STATX_BTIME, &stx) <
	    0)
		return false;
	if (ret)
		*ret = stx;
	return after_start(s, &stx.stx_ctime);
}

/* Changed during the run, itself or, for a symlink, what it leads to: a hook or a config that
 * is a link to a file of the project changes when the agent edits that file. The agent is gone:
 * following the link now races nothing. */
static bool changed_through(const struct fs_sweep *s, int dirfd, const char *name)
{
	struct statx stx = {0};

	if (changed(s, dirfd, name, &stx))
		return true;
	if (!(stx.stx_mask & STATX_TYPE) || !S_ISLNK(stx.stx_mode))
		return false;
	if (statx(dirfd, name, AT_NO_AUTOMOUNT, STATX_CTIME, &stx) < 0)
		return false;
	return after_start(s, &stx.stx_ctime);
}

/* Made during the run: a directory's change time moves with every entry made in it (git's own
 * index.lock), so a directory counts as made only by its birth time; without one, it is
 * checked by its contents. */
static bool born(const struct fs_sweep *s, const struct statx *stx)
{
	return (stx->stx_mask & STATX_BTIME) && after_start(s, &stx->stx_btime);
}

static int open_dir(int dirfd, const char *name)
{
	return openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* A file system of the kernel's (a /proc or /sys mounted in the project, or a project that is
 * "/"): no repository there, and walking it would take long or trigger automounts. */
static bool kernel_fs(int fd)
{
	static const unsigned long magics[] = {
	        PROC_SUPER_MAGIC,   SYSFS_MAGIC,    CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC,
	        DEVPTS_SUPER_MAGIC, DEBUGFS_MAGIC,  TRACEFS_MAGIC,      SECURITYFS_MAGIC,
	        BPF_FS_MAGIC,       PSTOREFS_MAGIC, EFIVARFS_MAGIC,     AUTOFS_SUPER_MAGIC,
	        BINFMTFS_MAGIC,     SELINUX_MAGIC,  NSFS_MAGIC,
	};
	struct statfs sfs;

	if (fstatfs(fd, &sfs) < 0)
		return false;
	for (size_t i = 0; i < sizeof(magics) / sizeof(magics[0]); i++)
		if ((unsigned long)sfs.f_type == magics[i])
			return true;
	return false;
}

/* Each entry of directory NAME in DIRFD to FN; -errno when it cannot be read, reported unless
 * it is absent (a directory of ours the agent made unreadable: git may still run in what is
 * below it). */
typedef void (*entry_fn)(struct sweep_ctx *c, int dfd, const char *dir, const char *name,
                         unsigned char type, unsigned depth);

static int each_entry_of(struct sweep_ctx *c, int pfd, const char *dir, const char *name,
                         unsigned depth, entry_fn fn)
{
	_cleanup_free_ char *path = NULL;
	int fd = open_dir(pfd, name);
	mode_t restore = (mode_t)-1;
	struct stat st;
	DIR *d = NULL;
	struct dirent *de;
	int r;

	/* A directory of ours that the agent made unreadable (chmod 000) to hide a .git in it:
	 * readable and searchable again for the walk, then its mode as it was. Every step on the
	 * one directory the O_PATH fd holds, never by name again: a process of our uid still
	 * running (the agent of another run in the project) may swap the name for a symlink
	 * between two calls, and a chmod by name followed it out of the project. */
	if (fd < 0 && errno == EACCES) {
		_cleanup_close_ int pathfd =
		        openat(pfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		char self[64];

		snprintf(self, sizeof(self), "/proc/self/fd/%d", pathfd);
		if (pathfd >= 0 && fstat(pathfd, &st) == 0 && S_ISDIR(st.st_mode) &&
		    st.st_uid == geteuid() &&
		    chmod(self, (st.st_mode & 07777) | S_IRUSR | S_IXUSR) == 0) {
			restore = st.st_mode & 07777;
			fd = openat(pathfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (fd < 0) {
				int e = errno;

				/* Its mode back; a failure leaves no more than the agent could
				 * do. */
				(void)chmod(self, restore);
				errno = e;
			}
		} else {
			errno = EACCES;
		}
	}
	if (fd < 0) {
		r = -errno;
		if (r != -ENOENT && r != -ENOTDIR && r != -ELOOP && (path = join(dir, name)))
			c->report(c->userdata, FS_SWEEP_UNCHECKED, path, NULL, r);
		return r;
	}
	if (kernel_fs(fd)) {
		r = 0;
	} else if (!(d = fdopendir(fd)) || !(path = join(dir, name))) {
		r = -ENOMEM;
	} else {
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				fn(c, dirfd(d), path, de->d_name, de->d_type, depth + 1);
		r = 0;
	}
	if (restore != (mode_t)-1)
		(void)fchmod(fd, restore);
	if (d)
		closedir(d);
	else
		close(fd);
	return r;
}

static void check_git_dir(struct sweep_ctx *c, int dirfd, const char *dir, const char *name,
                          bool in_worktree, unsigned depth);
static void check_git_contents(struct sweep_ctx *c, int fd, const char *path, int topfd,
                               const char *top, unsigned depth);

/* In a hooks directory: a hook made or changed during the run goes aside (git runs only the
 * exact names). */
static void on_hook(struct sweep_ctx *c, int dfd, const char *dir, const char *name,
                    unsigned char type, unsigned depth)
{
	if (changed_through(c->s, dfd, name))
		aside(c, FS_SWEEP_GIT, dfd, dir, name);
}

/* The names git runs as hooks (githooks(5)). */
static const char *const git_hooks[] = {
        "applypatch-msg",
        "pre-applypatch",
        "post-applypatch",
        "pre-commit",
        "pre-merge-commit",
        "prepare-commit-msg",
        "commit-msg",
        "post-commit",
        "pre-rebase",
        "post-checkout",
        "post-merge",
        "pre-push",
        "pre-receive",
        "update",
        "proc-receive",
        "post-receive",
        "post-update",
        "reference-transaction",
        "push-to-checkout",
        "pre-auto-gc",
        "post-rewrite",
        "sendemail-validate",
        "fsmonitor-watchman",
        "p4-changelist",
        "p4-prepare-changelist",
        "p4-post-changelist",
        "p4-pre-submit",
        "post-index-change",
};

/* In a directory core.hooksPath names, which may hold other files of the project: only the
 * names git runs as hooks (githooks(5)). */
static void on_named_hook(struct sweep_ctx *c, int dfd, const char *dir, const char *name,
                          unsigned char type, unsigned depth)
{
	for (size_t i = 0; i < sizeof(git_hooks) / sizeof(git_hooks[0]); i++)
		if (strcmp(name, git_hooks[i]) == 0) {
			on_hook(c, dfd, dir, name, type, depth);
			return;
		}
}

/* In modules/ or worktrees/: the git directory of a submodule or a linked worktree. */
static void on_nested_gitdir(struct sweep_ctx *c, int dfd, const char *dir, const char *name,
                             unsigned char type, unsigned depth)
{
	check_git_dir(c, dfd, dir, name, false, depth);
}

/* NAME in DIRFD is a git directory (or a .git file naming one): whatever of it git would run
 * that the run made or changed goes aside. IN_WORKTREE: DIRFD is its work tree (NAME is
 * ".git"), else a submodule's or worktree's git directory kept elsewhere. */
static void check_git_dir(struct sweep_ctx *c, int dirfd, const char *dir, const char *name,
                          bool in_worktree, unsigned depth)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_close_ int fd = -EBADF;
	struct statx stx = {0};
	bool ch = changed(c->s, dirfd, name, &stx);

	if (!(stx.stx_mask & STATX_TYPE))
		return;
	if (!S_ISDIR(stx.stx_mode)) {
		if (ch) /* a .git file ("gitdir: …") or link made or changed during the run */
			aside(c, FS_SWEEP_GIT, dirfd, dir, name);
		return;
	}
	if (born(c->s, &stx)) {
		aside(c, FS_SWEEP_GIT, dirfd, dir, name);
		return;
	}
	if (depth > GIT_WALK_MAX_DEPTH) {
		c->report(c->userdata, FS_SWEEP_UNCHECKED, dir, NULL, -ELOOP);
		return;
	}
	fd = open_dir(dirfd, name);
	if (fd < 0 || !(path = join(dir, name)))
		return;
	check_git_contents(c, fd, path, in_worktree ? dirfd : -EBADF, dir, depth);
}

/* core.hooksPath in the config in git directory FD, malloc'd, or NULL. That config is the
 * person's (one the run changed went aside before); its includes are not followed. */
static char *hooks_path(int fd)
{
	_cleanup_close_ int cfd = openat(fd, "config", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_free_ char *buf = NULL;
	char *value = NULL, *line, *save = NULL;
	bool core = false;
	ssize_t n;

	if (cfd < 0 || !(buf = malloc(65536)))
		return NULL;
	n = read(cfd, buf, 65535);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *p = line + strspn(line, " \t"), *v, *end;

		if (*p == '[') {
			size_t len = strcspn(p + 1, " \t\"]");

			core = len == 4 && strncasecmp(p + 1, "core", 4) == 0 && p[5] == ']';
			continue;
		}
		if (!core || strncasecmp(p, "hookspath", 9) != 0)
			continue;
		v = p + 9 + strspn(p + 9, " \t");
		if (*v++ != '=')
			continue;
		v += strspn(v, " \t");
		if (*v == '"') {
			end = strchr(++v, '"');
		} else {
			end = v + strcspn(v, "#;");
			while (end > v && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
				end--;
		}
		if (!end || end == v)
			continue;
		free(value); /* the last one wins, as in git */
		value = strndup(v, (size_t)(end - v));
	}
	return value;
}

/* The hooks directory that core.hooksPath names (.githooks, …), when it lies in the project:
 * its entries as hooks/'s. Opened from the work tree TOPFD (TOP in messages) or the project's
 * top, never through a symlink (one the agent made would lead the check elsewhere); what
 * cannot be opened so is named. */
static void check_hooks_path(struct sweep_ctx *c, int fd, int topfd, const char *top,
                             unsigned depth)
{
	_cleanup_free_ char *hp = hooks_path(fd), *expanded = NULL, *shown = NULL;
	_cleanup_close_ int hfd = -EBADF;
	const char *rel = hp, *root = c->s->git_root_path, *home = getenv("HOME");
	size_t rl = strlen(root);
	int base = topfd;

	if (!hp)
		return;
	if (strncmp(hp, "~/", 2) == 0 && home && home[0] == '/' &&
	    asprintf(&expanded, "%s/%s", home, hp + 2) >= 0)
		rel = expanded;
	if (rel[0] == '/') {
		/* Outside the project the agent could not write (unless fs.write says so). */
		if (strncmp(rel, root, rl) != 0 || (rel[rl] != '/' && strcmp(root, "/")))
			return;
		base = c->s->git_root;
		rel += strcmp(root, "/") ? rl + 1 : 1;
		shown = strdup(expanded ? expanded : hp);
	} else {
		shown = join(top, rel);
	}
	if (base < 0 || !shown)
		return;
	hfd = (int)syscall(SYS_openat2, base, rel[0] ? rel : ".",
	                   &(struct open_how){.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
	                                      .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
	                                                 RESOLVE_NO_MAGICLINKS},
	                   sizeof(struct open_how));
	if (hfd < 0) {
		if (errno != ENOENT)
			c->report(c->userdata, FS_SWEEP_UNCHECKED, shown, NULL, -errno);
		return;
	}
	(void)each_entry_of(c, hfd, shown, ".", depth, on_named_hook);
}

/* A whole config file FD, NUL-terminated, malloc'd, at most 4 MiB (git's own configs are a few
 * KiB); NULL when it is not a regular file or too large. */
static char *read_config(int fd, size_t *ret_len)
{
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t n = 0;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > (4 << 20))
		return NULL;
	if (!(buf = malloc((size_t)st.st_size + 1)))
		return NULL;
	while (n < (size_t)st.st_size) {
		ssize_t k = read(fd, buf + n, (size_t)st.st_size - n);

		if (k <= 0)
			break;
		n += (size_t)k;
	}
	buf[n] = '\0';
	*ret_len = n;
	return TAKE_PTR(buf);
}

/* PATH ("~/x", absolute, or relative to BASE), normalized, malloc'd; NULL when it cannot be
 * told ("%(prefix)/", no $HOME). */
static char *named_path(const char *path, const char *base, const char *home)
{
	_cleanup_free_ char *joined = NULL;
	char *out = NULL;

	if (strncmp(path, "~/", 2) == 0) {
		if (!home || home[0] != '/' || asprintf(&joined, "%s/%s", home, path + 2) < 0)
			return NULL;
	} else if (path[0] == '/') {
		joined = strdup(path);
	} else if (path[0] == '~' || path[0] == '%' || !base ||
	           asprintf(&joined, "%s/%s", base, path) < 0) {
		return NULL;
	}
	if (!joined || path_normalize(joined, NULL, &out) < 0)
		return NULL;
	return out;
}

/* ABS, when it lies in the project and is not a directory: moved aside if the run changed it or
 * what it links to. Its directory is reached without following a symlink; one on the way is
 * named. */
static void check_named_path(struct sweep_ctx *c, const char *abs)
{
	const char *root = c->s->git_root_path, *rel, *name;
	_cleanup_free_ char *parent = NULL, *dir = NULL;
	_cleanup_close_ int pfd = -EBADF;
	size_t rl = strlen(root);
	struct stat st;
	char *slash;

	if (strcmp(root, "/") == 0)
		rel = abs + 1;
	else if (strncmp(abs, root, rl) == 0 && abs[rl] == '/')
		rel = abs + rl + 1;
	else
		return;
	if (!rel[0] || !(parent = strdup(rel)) || !(dir = strdup(abs)))
		return;
	*strrchr(dir, '/') = '\0';
	if ((slash = strrchr(parent, '/'))) {
		*slash = '\0';
		name = slash + 1;
		pfd = (int)syscall(SYS_openat2, c->s->git_root, parent,
		                   &(struct open_how){.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		                                      .resolve = RESOLVE_BENEATH |
		                                                 RESOLVE_NO_SYMLINKS |
		                                                 RESOLVE_NO_MAGICLINKS},
		                   sizeof(struct open_how));
		if (pfd < 0) {
			if (errno != ENOENT && errno != ENOTDIR)
				c->report(c->userdata, FS_SWEEP_UNCHECKED, abs, NULL, -errno);
			return;
		}
	} else {
		name = parent;
	}
	if (fstatat(pfd >= 0 ? pfd : c->s->git_root, name, &st, AT_NO_AUTOMOUNT) == 0 &&
	    S_ISDIR(st.st_mode))
		return;
	if (changed_through(c->s, pfd >= 0 ? pfd : c->s->git_root, name))
		aside(c, FS_SWEEP_GIT, pfd >= 0 ? pfd : c->s->git_root, dir[0] ? dir : "/", name);
}

struct end_named {
	struct sweep_ctx *c;
	const char *gitdir; /* the config's directory: relative includes */
	const char *top;    /* the work tree, or NULL: relative commands */
};

static int on_end_word(const char *word, void *userdata)
{
	const struct end_named *e = userdata;
	_cleanup_free_ char *abs = named_path(word, e->top, getenv("HOME"));

	if (abs)
		check_named_path(e->c, abs);
	return 0;
}

static int on_end_var(const char *section, const char *sub, const char *key, const char *value,
                      void *userdata)
{
	const struct end_named *e = userdata;
	_cleanup_free_ char *abs = NULL;

	switch (git_config_named(section, sub, key, value)) {
	case GIT_NAMED_INCLUDE:
		if ((abs = named_path(value, e->gitdir, getenv("HOME"))))
			check_named_path(e->c, abs);
		break;
	case GIT_NAMED_PROGRAM:
		(void)git_command_words(value, on_end_word, userdata);
		break;
	default:
		break;
	}
	return 0;
}

/* What the config in git directory FD (PATH) names — included files, scripts its commands
 * run — that lies in the project and that the run changed goes aside (the config itself was
 * checked before; the included files' own includes are not followed). */
static void check_config_named(struct sweep_ctx *c, int fd, const char *path, const char *top)
{
	struct stat st;
	/* Only a regular file is opened: a device opened can have effects. */
	_cleanup_close_ int cfd =
	        fstatat(fd, "config", &st, 0) == 0 && S_ISREG(st.st_mode)
	                ? openat(fd, "config", O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
	                : -EBADF;
	struct end_named e = {c, path, top};
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;

	if ((buf = read_config(cfd, &len)))
		(void)git_config_parse(buf, len, on_end_var, &e);
}

/* In a git directory FD (PATH in messages) that was there at the start; TOPFD its work tree
 * (TOP in messages), or < 0. */
static void check_git_contents(struct sweep_ctx *c, int fd, const char *path, int topfd,
                               const char *top, unsigned depth)
{
	static const char *const files[] = {"config", "config.worktree", "commondir", "gitdir"};
	struct statx hooks = {0};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (changed_through(c->s, fd, files[i]))
			aside(c, FS_SWEEP_GIT, fd, path, files[i]);
	check_config_named(c, fd, path, topfd >= 0 ? top : NULL);
	if (changed(c->s, fd, "hooks", &hooks) && !S_ISDIR(hooks.stx_mode))
		aside(c, FS_SWEEP_GIT, fd, path, "hooks");
	else
		(void)each_entry_of(c, fd, path, "hooks", depth, on_hook);
	check_hooks_path(c, fd, topfd, top, depth);
	(void)each_entry_of(c, fd, path, "modules", depth, on_nested_gitdir);
	(void)each_entry_of(c, fd, path, "worktrees", depth, on_nested_gitdir);
}

static bool is_dir_at(int dfd, const char *name)
{
	struct stat st;

	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

static void on_tree_entry(struct sweep_ctx *c, int dfd, const char *dir, const char *name,
                          unsigned char type, unsigned depth)
{
	if (strcmp(name, ".git") == 0) {
		check_git_dir(c, dfd, dir, name, true, depth);
		return;
	}
	/* A bare repository (HEAD, objects/, refs/): git uses it as the repository of the
	 * directory it runs in, its config included (safe.bareRepository is "all" by
	 * default). What git would run there is checked in place. */
	if (strcmp(name, "HEAD") == 0 && type != DT_DIR && is_dir_at(dfd, "objects") &&
	    is_dir_at(dfd, "refs")) {
		check_git_contents(c, dfd, dir, dfd, dir, depth);
		return;
	}
	if (type == DT_UNKNOWN) {
		struct stat st;

		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return;
		type = S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
	}
	if (type != DT_DIR)
		return;
	if (depth > GIT_WALK_MAX_DEPTH) {
		_cleanup_free_ char *path = NULL;

		if ((path = join(dir, name)))
			c->report(c->userdata, FS_SWEEP_UNCHECKED, path, NULL, -ELOOP);
		return;
	}
	(void)each_entry_of(c, dfd, dir, name, depth, on_tree_entry);
}

void fs_sweep_run(const struct fs_sweep *s, fs_sweep_report_fn report, void *userdata)
{
	struct sweep_ctx c = {s, report, userdata};

	for (size_t i = 0; s && i < s->n; i++)
		sweep_absent(&c, &s->v[i]);
	if (s && s->git_root >= 0) {
		(void)each_entry_of(&c, s->git_root, s->git_root_path, ".", 0, on_tree_entry);
	}
}

/* ---- the supervisor's side ---------------------------------------------------------------- */

static bool parent_exists(const char *path)
{
	_cleanup_free_ char *parent = strdup(path);
	char *slash = parent ? strrchr(parent, '/') : NULL;
	struct stat st;

	if (!slash || slash == parent)
		return false;
	*slash = '\0';
	return stat(parent, &st) == 0 && S_ISDIR(st.st_mode);
}

static int add_checked(struct confine_paths *p, const char *path)
{
	if (p->n >= FS_CONFINE_MAX_PATHS)
		return -E2BIG;
	return confine_paths_add(p, path);
}

static int on_protect(struct fs_confine *fc, const char *real, const struct stat *st, void *u)
{
	return add_checked(&fc->protect, real);
}

/* Each symlink on the way to protected PATH (expanded, absolute), itself included, that lies
 * in a writable directory: the link, by its resolved directory and its name. Protecting the
 * target alone would let the agent remove the link and put a file of its own there. */
static int on_hide(struct fs_confine *fc, const char *real, const struct stat *st, void *u);

typedef int (*path_fn)(struct fs_confine *fc, const char *real, const struct stat *st,
                       void *userdata);
static int on_protect_target(struct fs_confine *fc, const char *real, const struct stat *st,
                             void *u);

static int hold_hops(struct fs_confine *fc, const char *path, char **ret_last);

static bool held_like_protect(path_fn fn)
{
	return fn == on_protect || fn == on_hide || fn == on_protect_target;
}

static int add_links(struct fs_confine *fc, const char *path)
{
	_cleanup_free_ char *copy = strdup(path);
	char *slash = copy;
	int r = 0;

	if (!copy)
		return -ENOMEM;
	while (r >= 0 && slash && (slash = strchr(slash + 1, '/'), true)) {
		_cleanup_free_ char *dir = NULL, *link = NULL;
		struct stat st;
		char *name;

		if (slash)
			*slash = '\0';
		name = strrchr(copy, '/');
		if (lstat(copy, &st) == 0 && S_ISLNK(st.st_mode) && name) {
			*name = '\0';
			dir = realpath(copy[0] ? copy : "/", NULL);
			*name = '/';
			if (dir && asprintf(&link, "%s%s", strcmp(dir, "/") ? dir : "", name) < 0)
				r = -ENOMEM;
			for (size_t w = 0; r >= 0 && link && w < fc->write.n; w++)
				if (confine_path_within(dir, fc->write.v[w])) {
					r = add_checked(&fc->links, link);
					break;
				}
		}
		if (slash)
			*slash = '/';
	}
	return r;
}

/* Each path PATTERN (expanded) names that exists, resolved, to FN. A missing one goes to
 * MISSING (may be NULL) unexpanded by globs. */

/* EXPANDED, a path without globs, resolved, to FN; see each_path(). */
static int each_literal(struct fs_confine *fc, const char *expanded, path_fn fn, void *userdata,
                        size_t *missing)
{
	_cleanup_free_ char *real = realpath(expanded, NULL);
	struct stat st;
	int r;

	if (!real || stat(real, &st) < 0) {
		if (!missing)
			return 0;
		(*missing)++;
		/* A symlink on the way (~/.config -> dotfiles/config) is held as for an existing
		 * path: replaced by a directory of the agent's, the path would be looked for at
		 * the end where the agent did not put it. */
		r = add_links(fc, expanded);
		if (r >= 0)
			r = hold_hops(fc, expanded, NULL);
		return r < 0 ? r : add_absent(fc, expanded, fn == on_hide);
	}
	r = held_like_protect(fn) ? add_links(fc, expanded) : 0;
	if (r >= 0 && held_like_protect(fn))
		r = hold_hops(fc, expanded, NULL);
	return r < 0 ? r : fn(fc, real, &st, userdata);
}

static int each_path(struct fs_confine *fc, const char *expanded, path_fn fn, void *userdata,
                     size_t *missing, struct cl_error *err)
{
	glob_t g = {0};
	int r = 0;

	if (!fs_pattern_is_glob(expanded))
		return each_literal(fc, expanded, fn, userdata, missing);
	/* GLOB_PERIOD: a '*' matches a leading dot, as in fs_policy's fnmatch. */
	r = glob(expanded, GLOB_NOSORT | GLOB_PERIOD, NULL, &g);
	if (r == GLOB_NOMATCH) {
		if (missing)
			(*missing)++;
		return 0;
	}
	if (r != 0)
		return cl_error_set(err, r == GLOB_NOSPACE ? -ENOMEM : -EIO, "glob %s: failed",
		                    expanded);
	r = 0;
	for (size_t i = 0; r >= 0 && i < g.gl_pathc; i++) {
		const char *base = strrchr(g.gl_pathv[i], '/');
		_cleanup_free_ char *real = NULL;
		struct stat st;

		if (base && (strcmp(base, "/.") == 0 || strcmp(base, "/..") == 0))
			continue;
		real = realpath(g.gl_pathv[i], NULL);
		if (real && stat(real, &st) == 0)
			r = held_like_protect(fn) ? add_links(fc, g.gl_pathv[i]) : 0;
		if (r >= 0 && real && held_like_protect(fn))
			r = hold_hops(fc, g.gl_pathv[i], NULL);
		if (r >= 0 && real && stat(real, &st) == 0)
			r = fn(fc, real, &st, userdata);
	}
	globfree(&g);
	return r;
}

static int on_write(struct fs_confine *fc, const char *real, const struct stat *st, void *u)
{
	if (strcmp(real, "/") == 0)
		fc->all_writable = true;
	return add_checked(&fc->write, real);
}

struct hide_ctx {
	const char *worktree;
	const char *const *keep;
};

static int on_hide(struct fs_confine *fc, const char *real, const struct stat *st, void *u)
{
	const struct hide_ctx *h = u;

	/* Hiding the project or the sandbox's own directories would stop the run. */
	if (strcmp(real, "/") == 0 || confine_path_within(h->worktree, real)) {
		fc->skipped_hide++;
		return 0;
	}
	for (const char *const *k = h->keep; k && *k; k++) {
		_cleanup_free_ char *kr = realpath(*k, NULL);

		if (kr && confine_path_within(kr, real)) {
			fc->skipped_hide++;
			return 0;
		}
	}
	return add_checked(S_ISDIR(st->st_mode) ? &fc->hide_dirs : &fc->hide_files, real);
}

/* Each entry of LIST expanded and handed to FN; entries with a variable the run lacks ($HOME
 * unset) name nothing. */
static int each_entry(struct fs_confine *fc, const struct config_fs_list *list,
                      const struct fs_vars *vars, bool create_dirs, path_fn fn, void *userdata,
                      size_t *missing, struct cl_error *err)
{
	for (size_t i = 0; i < list->n; i++) {
		const struct config_fs_rule *rule = &list->items[i];
		_cleanup_free_ char *expanded = NULL;
		bool dir = false;
		struct stat st;
		int r = fs_pattern_expand(rule->pattern, vars, &expanded, &dir);

		if (r == -ENOENT)
			continue;
		if (r < 0)
			return cl_error_set(err, r, "%s[%u] \"%s\" (%s:%u): %s", rule->list,
			                    rule->index, rule->pattern, rule->origin.file,
			                    rule->origin.line, strerror(-r));
		/* A cache directory a tool has never made: made now, so that the tool can
		 * write there (its parent stays read-only); only where its parent exists, so
		 * that the home of a user without the tool does not fill up. */
		if (create_dirs && dir && !fs_pattern_is_glob(expanded) &&
		    lstat(expanded, &st) < 0 && errno == ENOENT && parent_exists(expanded) &&
		    mkdir(expanded, 0700) == 0)
			fc->created++;
		r = each_path(fc, expanded, fn, userdata, missing, err);
		if (r == -E2BIG)
			return cl_error_set(err, r,
			                    "fs: more than %d paths after expanding the globs; "
			                    "refusing to start with some of them not applied",
			                    FS_CONFINE_MAX_PATHS);
		if (r < 0)
			return err->msg[0] ? r : cl_error_set(err, r, "fs: %s", strerror(-r));
	}
	return 0;
}

/* A symlink in one of Cloister's own directories (stow's config.yaml -> ~/dotfiles/…, a
 * decisions/ kept in a repository): the directory's read-only mount does not reach the link's
 * target, which may lie in the project, where the agent would write the config or decisions the
 * supervisor reads (at once: the decisions watch). The target is protected as an fs.protect
 * path is, and each link of a chain (a -> b -> c) that lies in a writable directory is held. */
/* The nearest existing ancestor of PATH (textual, maybe dangling) lies in a writable path. */
static bool creatable(const struct fs_confine *fc, const char *path)
{
	_cleanup_free_ char *up = strdup(path);
	char *slash;

	while (up && (slash = strrchr(up, '/')) && slash != up) {
		_cleanup_free_ char *real = NULL;

		*slash = '\0';
		real = realpath(up, NULL);
		if (!real)
			continue;
		for (size_t w = 0; w < fc->write.n; w++)
			if (confine_path_within(real, fc->write.v[w]))
				return true;
		return false;
	}
	return false;
}

/* Each hop after PATH on its chain of symlinks (a -> b -> c): the links among them that lie in
 * a writable directory are held (add_links: PATH's own way is each_literal's). A hop left free
 * could be replaced by a file of the agent's, which PATH would then lead to. *RET_LAST: the
 * last hop, as written (maybe dangling), malloc'd; may be NULL. */
static int hold_hops(struct fs_confine *fc, const char *path, char **ret_last)
{
	_cleanup_free_ char *cur = strdup(path);
	int r = 0;

	if (!cur)
		return -ENOMEM;
	for (unsigned hop = 0; r >= 0 && hop < 40; hop++) {
		char target[PATH_MAX];
		char *next = NULL;
		struct stat st;
		ssize_t n;

		if (lstat(cur, &st) < 0 || !S_ISLNK(st.st_mode))
			break;
		n = readlink(cur, target, sizeof(target) - 1);
		if (n <= 0)
			break;
		target[n] = '\0';
		if (target[0] == '/') {
			next = strdup(target);
		} else {
			char *slash = strrchr(cur, '/');

			if (slash &&
			    asprintf(&next, "%.*s/%s", (int)(slash - cur), cur, target) < 0)
				next = NULL;
		}
		if (!next)
			return -ENOMEM;
		free(cur);
		cur = next;
		r = add_links(fc, cur);
	}
	if (r >= 0 && ret_last)
		*ret_last = TAKE_PTR(cur);
	return r;
}

static int protect_own_link(struct fs_confine *fc, const char *path, struct cl_error *err)
{
	_cleanup_free_ char *cur = NULL, *real = realpath(path, NULL);
	int r;

	r = each_literal(fc, path, on_protect, NULL, &fc->absent_protect);
	/* each_literal held the links on PATH's own way and the hops after it; where it ends: */
	if (r >= 0)
		r = hold_hops(fc, path, &cur);
	/* Nothing to mount over: the end-of-run sweep would move aside what the agent made there,
	 * but the supervisor reads it before that (the decisions watch, within a second). */
	if (r >= 0 && !real && cur && creatable(fc, cur))
		return cl_error_set(
		        err, -EPERM,
		        "fs: %s, in Cloister's config directory, leads to %s, which does "
		        "not exist and the agent could create: create it, or remove the "
		        "link",
		        path, cur);
	return r;
}

struct own_links {
	struct fs_confine *fc;
	struct cl_error *err;
};

static int on_own_link(const char *path, void *userdata)
{
	struct own_links *o = userdata;

	return protect_own_link(o->fc, path, o->err);
}

/* ---- what the protected paths lead to --------------------------------------------------- */

/* A protected directory is searched for symlinks this deep and this wide at most (all of them
 * together); past that the run warns. */
#define LINK_WALK_MAX_DEPTH   16
#define LINK_WALK_MAX_ENTRIES 100000
/* git stops following includes this deep. */
#define GIT_INCLUDE_MAX_DEPTH 10
/* At most this many git configs are read from one that git starts from (its includes), and
 * this many submodules looked at; past that the run warns. */
#define GIT_MAX_CONFIGS 256

struct target_ctx {
	const char *from; /* what names it, for run -v */
	bool files_only;  /* a directory it names is not protected (a command's argument) */
};

/* REAL, which a protected path leads to (a symlink in it, a file its git config names), is
 * protected when it lies in a writable path and is not held yet. A writable path itself, or a
 * directory holding one (a link to the project's top), is left: protecting it would take the
 * project away. */
static int on_protect_target(struct fs_confine *fc, const char *real, const struct stat *st,
                             void *u)
{
	const struct target_ctx *t = u;
	_cleanup_free_ char *line = NULL;
	bool writable = false;
	int r;

	if (S_ISDIR(st->st_mode) && t->files_only)
		return 0;
	for (size_t w = 0; w < fc->write.n && !writable; w++)
		writable = confine_path_within(real, fc->write.v[w]);
	if (!writable)
		return 0;
	for (size_t p = 0; p < fc->protect.n; p++)
		if (confine_path_within(real, fc->protect.v[p]))
			return 0;
	for (size_t w = 0; w < fc->write.n; w++)
		if (confine_path_within(fc->write.v[w], real))
			return 0;
	if (asprintf(&line, "%s (from %s)", real, t->from) < 0) {
		line = NULL; /* undefined after a failure: not freed */
		return -ENOMEM;
	}
	r = add_checked(&fc->protect, real);
	return r < 0 ? r : confine_paths_add(&fc->followed, line);
}

/* PATH (a symlink, or a path a git config names, as written) and the chain of links from it:
 * its target protected (on_protect_target), the links on the way held. Absent, and where the
 * agent could make it: what it makes there is swept at the end. */
static int protect_target(struct fs_confine *fc, const char *path, const char *from,
                          bool files_only)
{
	struct target_ctx t = {from, files_only};
	_cleanup_free_ char *real = realpath(path, NULL), *last = NULL, *parent = NULL,
	                    *shown = NULL;
	char *slash;
	int r;

	if (real)
		return each_literal(fc, path, on_protect_target, &t, NULL);
	r = hold_hops(fc, path, &last);
	if (r < 0 || !last || !creatable(fc, last))
		return r;
	r = add_links(fc, path);
	if (r < 0)
		return r;
	fc->absent_protect++;
	/* Named as the kernel resolves it now ("a/../../b" reads badly at the end). */
	if ((slash = strrchr(last, '/')) && slash != last) {
		*slash = '\0';
		parent = realpath(last, NULL);
		*slash = '/';
		if (parent &&
		    asprintf(&shown, "%s%s", strcmp(parent, "/") ? parent : "", slash) < 0) {
			shown = NULL;
			return -ENOMEM;
		}
	}
	return add_absent(fc, shown ? shown : last, false);
}

/* Protected regular file PATH (ST) has other names: remembered, to find them. */
static int note_hardlink(struct fs_confine *fc, const char *path, const struct stat *st)
{
	struct hardlinked *v;

	if (!S_ISREG(st->st_mode) || st->st_nlink < 2)
		return 0;
	if (fc->n_hl >= FS_CONFINE_MAX_PATHS) {
		fc->unwalked++;
		return 0;
	}
	if (!(v = reallocarray(fc->hl, fc->n_hl + 1, sizeof(*v))))
		return -ENOMEM;
	fc->hl = v;
	if (!(v[fc->n_hl].path = strdup(path)))
		return -ENOMEM;
	v[fc->n_hl].dev = st->st_dev;
	v[fc->n_hl++].ino = st->st_ino;
	return 0;
}

/* Every symlink below protected directory DIR: what it leads to is protected. A hook in
 * .git/hooks, a file in .claude/ or ~/.config/systemd/user that links to a file of the project
 * is read from there: the read-only mount of the directory does not reach it. */
static int walk_links(struct fs_confine *fc, const char *dir, unsigned depth, size_t *budget)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *de;
	int r = 0;
	DIR *d;

	if (fd < 0)
		return errno == EMFILE || errno == ENFILE || errno == ENOMEM ? -errno : 0;
	if (kernel_fs(fd)) {
		close(fd);
		return 0;
	}
	if (!(d = fdopendir(fd))) {
		close(fd);
		return -ENOMEM;
	}
	while (r >= 0 && (de = readdir(d))) {
		_cleanup_free_ char *child = NULL;
		unsigned char type = de->d_type;
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (*budget == 0) {
			fc->unwalked++;
			break;
		}
		(*budget)--;
		if (type == DT_UNKNOWN &&
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			type = S_ISLNK(st.st_mode) ? DT_LNK : S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
		if (type != DT_LNK && type != DT_DIR && type != DT_REG)
			continue;
		if (!(child = join(dir, de->d_name))) {
			r = -ENOMEM;
			break;
		}
		if (type == DT_REG) {
			if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
				r = note_hardlink(fc, child, &st);
		} else if (type == DT_LNK)
			r = protect_target(fc, child, child, false);
		else if (depth < LINK_WALK_MAX_DEPTH)
			r = walk_links(fc, child, depth + 1, budget);
		else
			fc->unwalked++;
	}
	closedir(d);
	return r;
}

static int follow_protected_links(struct fs_confine *fc)
{
	size_t budget = LINK_WALK_MAX_ENTRIES;
	int r = 0;

	/* The list grows as targets are added: a linked directory is searched in turn. */
	for (size_t i = 0; r >= 0 && i < fc->protect.n; i++) {
		_cleanup_free_ char *dir = strdup(fc->protect.v[i]);
		struct stat st;

		if (!dir)
			return -ENOMEM;
		if (lstat(dir, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode))
			r = walk_links(fc, dir, 0, &budget);
		else
			r = note_hardlink(fc, dir, &st);
	}
	return r;
}

/* The writable paths are searched this deep and this wide at most, and only when a protected
 * file has other hard links on their file system. */
#define HARDLINK_WALK_MAX_DEPTH   64
#define HARDLINK_WALK_MAX_ENTRIES 1000000

static const struct hardlinked *hardlink_of(const struct fs_confine *fc, const struct stat *st)
{
	for (size_t i = 0; i < fc->n_hl; i++)
		if (fc->hl[i].dev == st->st_dev && fc->hl[i].ino == st->st_ino)
			return &fc->hl[i];
	return NULL;
}

static int walk_hardlinks(struct fs_confine *fc, const char *dir, dev_t dev, unsigned depth,
                          size_t *budget)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *de;
	struct stat st;
	int r = 0;
	DIR *d;

	if (fd < 0)
		return errno == EMFILE || errno == ENFILE || errno == ENOMEM ? -errno : 0;
	/* Another file system holds none of the names. */
	if (fstat(fd, &st) < 0 || st.st_dev != dev || kernel_fs(fd)) {
		close(fd);
		return 0;
	}
	if (!(d = fdopendir(fd))) {
		close(fd);
		return -ENOMEM;
	}
	while (r >= 0 && (de = readdir(d))) {
		_cleanup_free_ char *child = NULL, *from = NULL;
		const struct hardlinked *h;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (*budget == 0) {
			fc->unwalked++;
			break;
		}
		(*budget)--;
		if (de->d_type != DT_UNKNOWN && de->d_type != DT_DIR && de->d_type != DT_REG)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (!(child = join(dir, de->d_name))) {
			r = -ENOMEM;
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			if (depth < HARDLINK_WALK_MAX_DEPTH)
				r = walk_hardlinks(fc, child, dev, depth + 1, budget);
			else
				fc->unwalked++;
		} else if (S_ISREG(st.st_mode) && st.st_nlink > 1 && (h = hardlink_of(fc, &st))) {
			if (asprintf(&from, "a hard link of %s", h->path) < 0) {
				from = NULL;
				r = -ENOMEM;
			} else
				r = protect_target(fc, child, from, true);
		}
	}
	closedir(d);
	return r;
}

/* A protected file with other hard links (.git/hooks/pre-commit made with `ln` from
 * scripts/pre-commit) is written through any of them: the read-only mount holds one name, not
 * the inode. Its other names in the writable paths are protected too. The search costs a walk of
 * the writable paths on its file system, so it is made only when such a file exists. */
static int follow_hardlinks(struct fs_confine *fc)
{
	size_t budget = HARDLINK_WALK_MAX_ENTRIES;
	size_t n = fc->write.n;
	int r = 0;

	for (size_t w = 0; r >= 0 && fc->n_hl && w < n; w++) {
		_cleanup_free_ char *root = strdup(fc->write.v[w]);
		struct stat st;
		bool same = false;

		if (!root)
			return -ENOMEM;
		if (stat(root, &st) < 0)
			continue;
		for (size_t i = 0; i < fc->n_hl && !same; i++)
			same = fc->hl[i].dev == st.st_dev;
		if (!same)
			continue;
		if (S_ISDIR(st.st_mode))
			r = walk_hardlinks(fc, root, st.st_dev, 0, &budget);
	}
	return r;
}

struct git_follow {
	struct fs_confine *fc;
	const char *top;  /* the repository's work tree: relative commands, core.hooksPath */
	const char *home; /* $HOME, or NULL */
	const char *file; /* the config being read */
	const char *dir;  /* its directory: relative includes */
	unsigned depth;
};

static int follow_git_config(struct fs_confine *fc, const char *file, const char *top,
                             const char *home, unsigned depth);

/* A word of a command git runs, as a path from the work tree: the file is protected. A word
 * without '/' that names nothing is a program looked up in $PATH, not followed. */
static int on_start_word(const char *word, void *userdata)
{
	const struct git_follow *g = userdata;
	_cleanup_free_ char *path = named_path(word, g->top, g->home);
	struct stat st;

	if (!path)
		return 0;
	if (lstat(path, &st) < 0 && !strchr(word, '/'))
		return 0;
	return protect_target(g->fc, path, g->file, true);
}

static int on_start_var(const char *section, const char *sub, const char *key, const char *value,
                        void *userdata)
{
	const struct git_follow *g = userdata;
	_cleanup_free_ char *path = NULL;
	int r = 0;

	switch (git_config_named(section, sub, key, value)) {
	case GIT_NAMED_INCLUDE:
		if (!(path = named_path(value, g->dir, g->home)))
			return 0;
		r = protect_target(g->fc, path, g->file, true);
		if (r >= 0 && g->depth < GIT_INCLUDE_MAX_DEPTH)
			r = follow_git_config(g->fc, path, g->top, g->home, g->depth + 1);
		return r;
	case GIT_NAMED_HOOKS_DIR:
		/* Only git's hook names: the directory may hold other files of the project. */
		if (!(path = named_path(value, g->top, g->home)))
			return 0;
		for (size_t i = 0; r >= 0 && i < sizeof(git_hooks) / sizeof(git_hooks[0]); i++) {
			_cleanup_free_ char *hook = join(path, git_hooks[i]);

			r = hook ? protect_target(g->fc, hook, g->file, true) : -ENOMEM;
		}
		return r;
	case GIT_NAMED_PROGRAM:
		return git_command_words(value, on_start_word, userdata);
	default:
		return 0;
	}
}

/* FILE, a git config (that git would read here), for what it names. A file git refuses as a
 * whole (a line it cannot parse) runs nothing. */
static int follow_git_config(struct fs_confine *fc, const char *file, const char *top,
                             const char *home, unsigned depth)
{
	struct stat st;
	_cleanup_close_ int fd = stat(file, &st) == 0 && S_ISREG(st.st_mode)
	                                 ? open(file, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
	                                 : -EBADF;
	_cleanup_free_ char *buf = NULL, *dir = strdup(file);
	struct git_follow g = {fc, top, home, file, dir, depth};
	size_t len = 0;
	int r;

	if (!dir)
		return -ENOMEM;
	if (strrchr(dir, '/'))
		*strrchr(dir, '/') = '\0';
	/* Includes that fan out (a file including itself twice, ten deep) are cut short; each
	 * config git starts from has its own count, so that one cannot starve the next. */
	if (depth == 0)
		fc->git_configs = 0;
	if (fc->git_configs >= GIT_MAX_CONFIGS) {
		fc->unwalked++;
		return 0;
	}
	fc->git_configs++;
	if (!(buf = read_config(fd, &len)))
		return 0;
	r = git_config_parse(buf, len, on_start_var, &g);
	return r == -EINVAL ? 0 : r;
}

/* The first line of small file PATH without its line end, malloc'd, or NULL. */
static char *first_line(const char *path)
{
	struct stat st;
	_cleanup_close_ int fd = stat(path, &st) == 0 && S_ISREG(st.st_mode)
	                                 ? open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
	                                 : -EBADF;
	char buf[PATH_MAX + 16];
	ssize_t n;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	return strdup(buf);
}

static int on_core_worktree(const char *section, const char *sub, const char *key,
                            const char *value, void *userdata)
{
	char **ret = userdata;

	if (value && !sub && strcmp(section, "core") == 0 && strcmp(key, "worktree") == 0) {
		free(*ret);
		if (!(*ret = strdup(value)))
			return -ENOMEM;
	}
	return 0;
}

/* Each submodule's work tree (core.worktree in GITDIR_OF/modules/NAME/config): its .git file, in
 * the project, is protected as the top one is (git status recurses into submodules). Nested
 * submodules (modules/NAME/modules/…) are not looked for: the end-of-run check holds them. */
static int follow_submodules(struct fs_confine *fc, const char *gitdir_of)
{
	_cleanup_free_ char *modules = join(gitdir_of, "modules");
	struct dirent *de;
	size_t n = 0;
	int r = 0;
	DIR *d;

	if (!modules)
		return -ENOMEM;
	if (!(d = opendir(modules)))
		return 0;
	while (r >= 0 && (de = readdir(d))) {
		_cleanup_free_ char *gitdir = NULL, *config = NULL, *wt = NULL, *tree = NULL;
		_cleanup_free_ char *dotgit = NULL, *buf = NULL;
		_cleanup_close_ int fd = -EBADF;
		size_t len = 0;
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		if (n++ >= GIT_MAX_CONFIGS) {
			fc->unwalked++;
			break;
		}
		if (!(gitdir = join(modules, de->d_name)) || !(config = join(gitdir, "config"))) {
			r = -ENOMEM;
			break;
		}
		if (stat(config, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		fd = open(config, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (!(buf = read_config(fd, &len)) ||
		    git_config_parse(buf, len, on_core_worktree, &wt) < 0 || !wt)
			continue;
		if (!(tree = named_path(wt, gitdir, NULL)) || !(dotgit = join(tree, ".git")))
			continue;
		if (lstat(dotgit, &st) == 0 && S_ISREG(st.st_mode))
			r = protect_target(fc, dotgit, "git: a submodule's .git file", true);
	}
	closedir(d);
	return r;
}

/* The git configs that a git run in WORKTREE reads — its repository's (found upwards, through
 * a "gitdir:" file and commondir), the user's and the system's — for the files they name. */
static int follow_git(struct fs_confine *fc, const char *worktree, const char *home)
{
	_cleanup_free_ char *top = strdup(worktree), *gitdir = NULL, *common = NULL;
	_cleanup_free_ char *xdg = NULL, *user = NULL;
	const char *env;
	int r = 0;

	if (!top)
		return -ENOMEM;
	for (;;) {
		_cleanup_free_ char *dotgit = join(top, ".git");
		struct stat st;
		char *slash;

		if (!dotgit)
			return -ENOMEM;
		if (lstat(dotgit, &st) == 0) {
			_cleanup_free_ char *line = NULL;

			if (stat(dotgit, &st) == 0 && S_ISDIR(st.st_mode)) {
				gitdir = TAKE_PTR(dotgit);
				break;
			}
			line = first_line(dotgit);
			if (line && strncmp(line, "gitdir:", 7) == 0)
				gitdir = named_path(line + 7 + strspn(line + 7, " \t"), top, NULL);
			/* A linked worktree's or a submodule's .git file: rewritten, it points
			 * git (the person's prompt, during the run) at a config of the agent's. */
			r = gitdir ? protect_target(fc, dotgit, "git: the work tree's .git file",
			                            true)
			           : 0;
			break;
		}
		slash = strrchr(top, '/');
		if (!slash || slash == top)
			break;
		*slash = '\0';
	}
	if (!gitdir) {
		free(top);
		top = strdup(worktree);
		if (!top)
			return -ENOMEM;
	} else {
		_cleanup_free_ char *cdpath = join(gitdir, "commondir");
		_cleanup_free_ char *cd = cdpath ? first_line(cdpath) : NULL;
		_cleanup_free_ char *config = NULL, *wconfig = join(gitdir, "config.worktree");

		common = cd ? named_path(cd, gitdir, NULL) : strdup(gitdir);
		config = common ? join(common, "config") : NULL;
		if (!config || !wconfig)
			return -ENOMEM;
		if (r >= 0)
			r = follow_git_config(fc, config, top, home, 0);
		if (r >= 0)
			r = follow_git_config(fc, wconfig, top, home, 0);
		if (r >= 0)
			r = follow_submodules(fc, common);
		/* A linked worktree keeps its submodules' git directories in its own. */
		if (r >= 0 && strcmp(common, gitdir) != 0)
			r = follow_submodules(fc, gitdir);
	}
	if (r < 0)
		return r;
	if ((env = getenv("GIT_CONFIG_GLOBAL")) && env[0]) {
		r = follow_git_config(fc, env, top, home, 0);
	} else if (home) {
		env = getenv("XDG_CONFIG_HOME");
		if (asprintf(&user, "%s/.gitconfig", home) < 0) {
			user = NULL;
			return -ENOMEM;
		}
		if ((env && env[0] == '/' ? asprintf(&xdg, "%s/git/config", env)
		                          : asprintf(&xdg, "%s/.config/git/config", home)) < 0) {
			xdg = NULL;
			return -ENOMEM;
		}
		r = follow_git_config(fc, user, top, home, 0);
		if (r >= 0)
			r = follow_git_config(fc, xdg, top, home, 0);
	}
	if (r >= 0 && !getenv("GIT_CONFIG_NOSYSTEM")) {
		env = getenv("GIT_CONFIG_SYSTEM");
		r = follow_git_config(fc, env && env[0] ? env : "/etc/gitconfig", top, home, 0);
	}
	return r;
}

/* The ancestors of each protected path below the writable path holding it. */
static int plan_pins(struct fs_confine *fc)
{
	for (size_t i = 0; i < fc->protect.n + fc->links.n; i++) {
		_cleanup_(confine_paths_free) struct confine_paths up = {0};
		const char *p =
		        i < fc->protect.n ? fc->protect.v[i] : fc->links.v[i - fc->protect.n];
		const char *holder = NULL;
		int r;

		for (size_t w = 0; w < fc->write.n && !holder; w++)
			if (confine_path_within(p, fc->write.v[w]))
				holder = fc->write.v[w];
		if (!holder)
			continue;
		r = confine_paths_add_ancestors(&up, p);
		for (size_t k = 0; r >= 0 && k < up.n; k++)
			if (confine_path_within(up.v[k], holder) && strcmp(up.v[k], holder) != 0 &&
			    strcmp(up.v[k], p) != 0)
				r = add_checked(&fc->pins, up.v[k]);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The start, on the clock of the file system holding DIRFD (a network file system's
 * server's): an unnamed file's change time, or ours when it cannot make one; the earlier. */
static struct timespec start_time(int dirfd)
{
	struct timespec now;
	_cleanup_close_ int fd = -EBADF;
	struct stat st;

	clock_gettime(CLOCK_REALTIME_COARSE, &now);
	fd = openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0 && fstat(fd, &st) == 0 &&
	    (st.st_ctim.tv_sec < now.tv_sec ||
	     (st.st_ctim.tv_sec == now.tv_sec && st.st_ctim.tv_nsec < now.tv_nsec)))
		now = st.st_ctim;
	return now;
}

/* The worktree, when it is writable: every .git in it is checked at the end. */
static int plan_git_check(struct fs_confine *fc, const char *worktree)
{
	_cleanup_close_ int dfd = -EBADF;
	bool writable = false;

	for (size_t w = 0; w < fc->write.n && !writable; w++)
		writable = confine_path_within(worktree, fc->write.v[w]);
	if (!writable)
		return 0;
	if (!sweep_of(fc))
		return -ENOMEM;
	dfd = open(worktree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	fc->sweep->start = start_time(dfd);
	fc->sweep->git_root_path = strdup(worktree);
	if (!fc->sweep->git_root_path)
		return -ENOMEM;
	fc->sweep->git_root = TAKE_FD(dfd);
	return 0;
}

int fs_confine_prepare(const struct fs_confine_request *req, struct fs_confine **ret,
                       struct cl_error *err)
{
	_cleanup_(fs_confine_freep) struct fs_confine *fc = calloc(1, sizeof(*fc));
	_cleanup_free_ char *home = NULL, *worktree = NULL;
	const struct config *cfg = req->config;
	struct fs_vars vars = {0};
	struct hide_ctx hc;
	int r;

	if (!fc)
		return cl_error_set(err, -ENOMEM, "out of memory");
	fc->no_mounts = req->no_mounts;
	fc->private_tmp = cfg->fs.tmp == FS_TMP_PRIVATE;
	worktree = realpath(req->worktree, NULL);
	if (!worktree)
		return cl_error_set(err, -errno, "%s: %m", req->worktree);
	if (req->home && req->home[0] == '/') {
		home = realpath(req->home, NULL);
		/* A home that does not exist: its patterns are expanded as written. */
		if (!home && path_normalize(req->home, NULL, &home) < 0)
			home = NULL;
	}
	vars.home = home;
	vars.worktree = worktree;
	hc.worktree = worktree;
	hc.keep = req->keep_visible;

	r = each_entry(fc, &cfg->fs.write, &vars, true, on_write, NULL, NULL, err);
	if (r >= 0)
		r = each_entry(fc, &cfg->fs.protect, &vars, false, on_protect, NULL,
		               &fc->absent_protect, err);
	if (r >= 0)
		r = each_entry(fc, &cfg->fs.hide, &vars, false, on_hide, &hc, &fc->absent_hide,
		               err);
	for (const char *const *o = req->own_dirs; r >= 0 && o && *o; o++) {
		struct own_links ol = {fc, err};

		r = config_files_links(*o, on_own_link, &ol);
		if (r < 0 && !err->msg[0])
			r = cl_error_set(err, r, "fs: the links in %s: %s", *o,
			                 r == -E2BIG ? "too many paths" : strerror(-r));
	}
	if (r < 0)
		return r;
	fc->n_write_all = fc->write.n;
	confine_paths_outermost(&fc->write);
	/* What the protected paths lead to: git's configs first (a hook or an included file
	 * they name may be a link in turn), then the links in every protected directory. */
	r = follow_git(fc, worktree, home);
	if (r >= 0)
		r = follow_protected_links(fc);
	if (r >= 0)
		r = follow_hardlinks(fc);
	if (r < 0)
		return cl_error_set(err, r, "fs: following what the protected paths lead to: %s",
		                    r == -E2BIG ? "too many paths" : strerror(-r));
	r = plan_git_check(fc, worktree);
	if (r < 0)
		return cl_error_set(err, r, "fs: opening %s for the .git check: %s", worktree,
		                    strerror(-r));
	r = plan_pins(fc);
	if (r < 0)
		return cl_error_set(err, r, "fs: planning the pinned directories: %s",
		                    strerror(-r));
	*ret = TAKE_PTR(fc);
	return 0;
}

void fs_confine_summarize(const struct fs_confine *fc, struct fs_confine_summary *ret)
{
	*ret = (struct fs_confine_summary){
	        .mounts = !fc->no_mounts,
	        .write = fc->n_write_all,
	        .hide = fc->hide_dirs.n + fc->hide_files.n,
	        .protect = fc->protect.n,
	        .absent_protect = fc->absent_protect,
	        .absent_hide = fc->absent_hide,
	        .created = fc->created,
	        .skipped_hide = fc->skipped_hide,
	        .pinned = fc->pins.n,
	        .links = fc->links.n,
	        .followed = fc->followed.n,
	        .unwalked = fc->unwalked,
	        .git_check = fc->sweep && fc->sweep->git_root >= 0,
	        .private_tmp = fc->private_tmp,
	};
}

const struct confine_paths *fs_confine_followed(const struct fs_confine *fc)
{
	return &fc->followed;
}

const struct confine_paths *fs_confine_write_paths(const struct fs_confine *fc)
{
	return &fc->write;
}

bool fs_confine_private_tmp(const struct fs_confine *fc)
{
	return fc->private_tmp;
}

/* ---- in the init --------------------------------------------------------------------------- */

static int clone_tree(const char *path, unsigned flags)
{
	int fd = (int)syscall(SYS_open_tree, AT_FDCWD, path,
	                      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | flags);

	return fd < 0 ? -errno : fd;
}

static int attach(int fd, const char *to)
{
	return syscall(SYS_move_mount, fd, "", AT_FDCWD, to, MOVE_MOUNT_F_EMPTY_PATH) < 0 ? -errno
	                                                                                  : 0;
}

static int set_attr(int dfd, const char *path, unsigned flags, uint64_t set, uint64_t clr)
{
	struct mount_attr attr = {.attr_set = set, .attr_clr = clr};

	return syscall(SYS_mount_setattr, dfd, path, flags, &attr, sizeof(attr)) < 0 ? -errno : 0;
}

/* A read-only clone of SOURCE (with what is below it) attached over TARGET. */
static int readonly_over(const char *source, const char *target, uint64_t extra, unsigned flags,
                         struct cl_error *err)
{
	_cleanup_close_ int fd = clone_tree(source, flags);
	int r;

	if (fd < 0)
		return cl_error_set(err, fd, "open_tree %s: %s", source, strerror(-fd));
	r = set_attr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, MOUNT_ATTR_RDONLY | extra, 0);
	if (r < 0)
		return cl_error_set(err, r, "make a read-only copy of %s: %s", source,
		                    strerror(-r));
	r = attach(fd, target);
	if (r < 0)
		return cl_error_set(err, r, "mount a read-only copy over %s: %s", target,
		                    strerror(-r));
	return 0;
}

static int make_writable_paths_back(const struct fs_confine *fc, struct cl_error *err)
{
	_cleanup_free_ int *fds = calloc(fc->write.n + 1, sizeof(int));
	int r = 0;

	if (!fds)
		return -ENOMEM;
	/* Clone what stays writable before everything turns read-only; the clones keep the
	 * flags they had. */
	for (size_t i = 0; i < fc->write.n; i++) {
		fds[i] = clone_tree(fc->write.v[i], 0);
		if (fds[i] < 0 && r >= 0)
			r = cl_error_set(err, fds[i], "open_tree %s: %s", fc->write.v[i],
			                 strerror(-fds[i]));
	}
	if (r >= 0 && (r = set_attr(AT_FDCWD, "/", AT_RECURSIVE, MOUNT_ATTR_RDONLY, 0)) < 0)
		cl_error_set(err, r, "make the file system read-only: %s", strerror(-r));
	/* /proc's writable files (a process's own oom_score_adj, comm…) are the kernel's to
	 * allow; its knobs below stay read-only (sandbox_confine). */
	if (r >= 0 && (r = set_attr(AT_FDCWD, "/proc", 0, 0, MOUNT_ATTR_RDONLY)) < 0)
		cl_error_set(err, r, "keep /proc writable: %s", strerror(-r));
	for (size_t i = 0; i < fc->write.n; i++) {
		if (fds[i] < 0)
			continue;
		if (r >= 0 && (r = attach(fds[i], fc->write.v[i])) < 0)
			cl_error_set(err, r, "mount %s writable: %s", fc->write.v[i], strerror(-r));
		close(fds[i]);
	}
	return r;
}

/* Device nodes open only below /dev (which sandbox_confine covers but for a few harmless
 * devices): every other mount turns nodev. Another devtmpfs of the host (a chroot's /dev, a
 * build root's) or a node on a real file system would otherwise give a root agent the
 * host's disks, and /dev/fuse: a FUSE mount in a namespace of its own whose server never
 * answers stalls every lookup the supervisor makes there. */
static int devices_only_in_dev(struct cl_error *err)
{
	int r = set_attr(AT_FDCWD, "/", AT_RECURSIVE, MOUNT_ATTR_NODEV, 0);

	if (r < 0)
		return cl_error_set(err, r, "make every mount nodev: %s", strerror(-r));
	r = set_attr(AT_FDCWD, "/dev", AT_RECURSIVE, 0, MOUNT_ATTR_NODEV);
	if (r == -EINVAL) {
		/* /dev is a directory of a bigger mount: a mount of its own, then. */
		if (mount("/dev", "/dev", NULL, MS_BIND | MS_REC, NULL) < 0)
			return cl_error_set(err, -errno, "bind /dev onto itself: %m");
		r = set_attr(AT_FDCWD, "/dev", AT_RECURSIVE, 0, MOUNT_ATTR_NODEV);
	}
	/* EPERM: the host's /dev was nodev already (locked so in a user namespace). */
	if (r < 0 && r != -EPERM)
		return cl_error_set(err, r, "keep the devices of /dev: %s", strerror(-r));
	return 0;
}

int fs_confine_mounts(const struct fs_confine *fc, struct cl_error *err)
{
	int r = 0;

	if (!fc || fc->no_mounts)
		return 0;
	if (!fc->all_writable)
		r = make_writable_paths_back(fc, err);
	if (r >= 0)
		r = devices_only_in_dev(err);
	/* A mount point cannot be renamed or removed (EBUSY): no directory holding a protected
	 * path can be swapped for one the agent fills. */
	for (size_t i = 0; r >= 0 && i < fc->pins.n; i++)
		if (mount(fc->pins.v[i], fc->pins.v[i], NULL, MS_BIND | MS_REC, NULL) < 0)
			r = cl_error_set(err, -errno, "bind %s onto itself: %m", fc->pins.v[i]);
	for (size_t i = 0; r >= 0 && i < fc->protect.n; i++)
		r = readonly_over(fc->protect.v[i], fc->protect.v[i], 0, 0, err);
	/* The link itself, over itself (neither open_tree nor move_mount follows it). */
	for (size_t i = 0; r >= 0 && i < fc->links.n; i++)
		r = readonly_over(fc->links.v[i], fc->links.v[i], 0, AT_SYMLINK_NOFOLLOW, err);
	for (size_t i = 0; r >= 0 && i < fc->hide_dirs.n; i++)
		if (mount("cloister-hidden", fc->hide_dirs.v[i], "tmpfs",
		          MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, "size=4k,mode=0755") < 0)
			r = cl_error_set(err, -errno, "hide %s: %m", fc->hide_dirs.v[i]);
	/* A file: an empty device in its place, read-only and not executable. */
	for (size_t i = 0; r >= 0 && i < fc->hide_files.n; i++)
		r = readonly_over("/dev/null", fc->hide_files.v[i], MOUNT_ATTR_NOEXEC, 0, err);
	return r;
}
