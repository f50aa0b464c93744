/* See fs_confine.h. */
#include "supervisor/sandbox/fs_confine.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "supervisor/policy/fs_policy.h"
#include "supervisor/policy/path_boundary.h"

struct fs_absent {
	int dirfd; /* O_PATH, opened at the start */
	char *name;
	char *path; /* for messages */
};

struct fs_sweep {
	struct fs_absent *v;
	size_t n;
};

struct fs_confine {
	struct fs_sweep *sweep;          /* absent protected paths */
	struct confine_paths write;      /* resolved, outermost only */
	struct confine_paths protect;    /* resolved, existing */
	struct confine_paths hide_dirs;  /* resolved, existing directories */
	struct confine_paths hide_files; /* resolved, existing non-directories */
	struct confine_paths pins;       /* ancestors of protected paths inside a writable one */
	size_t n_write_all;              /* writable paths before reducing to the outermost */
	size_t absent_protect, created, skipped_hide;
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
	confine_paths_free(&fc->hide_dirs);
	confine_paths_free(&fc->hide_files);
	confine_paths_free(&fc->pins);
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
		free(s->v[i].name);
		free(s->v[i].path);
	}
	free(s->v);
	free(s);
}

struct fs_sweep *fs_confine_take_sweep(struct fs_confine *fc)
{
	return fc ? TAKE_PTR(fc->sweep) : NULL;
}

/* Remember absent protected PATH (expanded, no glob) by its parent directory, opened now. */
static int add_absent(struct fs_confine *fc, const char *path)
{
	_cleanup_free_ char *parent = strdup(path);
	char *slash = parent ? strrchr(parent, '/') : NULL;
	struct fs_absent a = {.dirfd = -EBADF};
	struct fs_absent *v;

	if (!parent)
		return -ENOMEM;
	if (!slash || !slash[1])
		return 0;
	*slash = '\0';
	if (!fc->sweep && !(fc->sweep = calloc(1, sizeof(*fc->sweep))))
		return -ENOMEM;
	if (fc->sweep->n >= FS_CONFINE_MAX_PATHS)
		return -E2BIG;
	a.dirfd = open(parent[0] ? parent : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (a.dirfd < 0)
		return 0; /* no parent: see the README ("Files", what is not protected) */
	/* Something at the name already (a dangling symlink): the user's, left alone. */
	if (fstatat(a.dirfd, slash + 1, &(struct stat){0}, AT_SYMLINK_NOFOLLOW) == 0) {
		close(a.dirfd);
		return 0;
	}
	a.name = strdup(slash + 1);
	a.path = strdup(path);
	v = reallocarray(fc->sweep->v, fc->sweep->n + 1, sizeof(*v));
	if (!a.name || !a.path || !v) {
		if (v)
			fc->sweep->v = v;
		close(a.dirfd);
		free(a.name);
		free(a.path);
		return -ENOMEM;
	}
	fc->sweep->v = v;
	fc->sweep->v[fc->sweep->n++] = a;
	return 0;
}

void fs_sweep_run(const struct fs_sweep *s, fs_sweep_report_fn report, void *userdata)
{
	for (size_t i = 0; s && i < s->n; i++) {
		const struct fs_absent *a = &s->v[i];
		char to[NAME_MAX + 1];
		struct stat st;
		int r = -EEXIST;

		if (fstatat(a->dirfd, a->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		for (unsigned n = 0; r == -EEXIST && n < 100; n++) {
			int len = n ? snprintf(to, sizeof(to), "%s.cloister-blocked.%u", a->name, n)
			            : snprintf(to, sizeof(to), "%s.cloister-blocked", a->name);

			if (len < 0 || (size_t)len >= sizeof(to)) {
				r = -ENAMETOOLONG;
				break;
			}
			r = renameat2(a->dirfd, a->name, a->dirfd, to, RENAME_NOREPLACE) < 0
			            ? -errno
			            : 0;
		}
		if (r < 0) {
			report(userdata, a->path, NULL, r);
		} else {
			_cleanup_free_ char *moved = NULL;
			const char *slash = strrchr(a->path, '/');

			if (asprintf(&moved, "%.*s/%s", (int)(slash - a->path), a->path, to) < 0)
				moved = NULL;
			report(userdata, a->path, moved ? moved : to, 0);
		}
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

/* Each path PATTERN (expanded) names that exists, resolved, to FN. A missing one goes to
 * MISSING (may be NULL) unexpanded by globs. */
typedef int (*path_fn)(struct fs_confine *fc, const char *real, const struct stat *st,
                       void *userdata);

static int each_path(struct fs_confine *fc, const char *expanded, path_fn fn, void *userdata,
                     size_t *missing, struct cl_error *err)
{
	glob_t g = {0};
	int r = 0;

	if (!fs_pattern_is_glob(expanded)) {
		_cleanup_free_ char *real = realpath(expanded, NULL);
		struct stat st;

		if (!real || stat(real, &st) < 0) {
			if (!missing)
				return 0;
			(*missing)++;
			return add_absent(fc, expanded);
		}
		return fn(fc, real, &st, userdata);
	}
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
			r = fn(fc, real, &st, userdata);
	}
	globfree(&g);
	return r;
}

static int add_checked(struct confine_paths *p, const char *path)
{
	if (p->n >= FS_CONFINE_MAX_PATHS)
		return -E2BIG;
	return confine_paths_add(p, path);
}

static int on_write(struct fs_confine *fc, const char *real, const struct stat *st, void *u)
{
	if (strcmp(real, "/") == 0)
		fc->all_writable = true;
	return add_checked(&fc->write, real);
}

static int on_protect(struct fs_confine *fc, const char *real, const struct stat *st, void *u)
{
	return add_checked(&fc->protect, real);
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

/* The ancestors of each protected path below the writable path holding it. */
static int plan_pins(struct fs_confine *fc)
{
	for (size_t i = 0; i < fc->protect.n; i++) {
		_cleanup_(confine_paths_free) struct confine_paths up = {0};
		const char *p = fc->protect.v[i];
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
		r = each_entry(fc, &cfg->fs.hide, &vars, false, on_hide, &hc, NULL, err);
	if (r < 0)
		return r;
	fc->n_write_all = fc->write.n;
	confine_paths_outermost(&fc->write);
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
	        .created = fc->created,
	        .skipped_hide = fc->skipped_hide,
	        .pinned = fc->pins.n,
	        .private_tmp = fc->private_tmp,
	};
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

static int clone_tree(const char *path)
{
	int fd = (int)syscall(SYS_open_tree, AT_FDCWD, path,
	                      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);

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
static int readonly_over(const char *source, const char *target, uint64_t extra,
                         struct cl_error *err)
{
	_cleanup_close_ int fd = clone_tree(source);
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
		fds[i] = clone_tree(fc->write.v[i]);
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

int fs_confine_mounts(const struct fs_confine *fc, struct cl_error *err)
{
	int r = 0;

	if (!fc || fc->no_mounts)
		return 0;
	if (!fc->all_writable)
		r = make_writable_paths_back(fc, err);
	/* A mount point cannot be renamed or removed (EBUSY): no directory holding a protected
	 * path can be swapped for one the agent fills. */
	for (size_t i = 0; r >= 0 && i < fc->pins.n; i++)
		if (mount(fc->pins.v[i], fc->pins.v[i], NULL, MS_BIND | MS_REC, NULL) < 0)
			r = cl_error_set(err, -errno, "bind %s onto itself: %m", fc->pins.v[i]);
	for (size_t i = 0; r >= 0 && i < fc->protect.n; i++)
		r = readonly_over(fc->protect.v[i], fc->protect.v[i], 0, err);
	for (size_t i = 0; r >= 0 && i < fc->hide_dirs.n; i++)
		if (mount("cloister-hidden", fc->hide_dirs.v[i], "tmpfs",
		          MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, "size=4k,mode=0755") < 0)
			r = cl_error_set(err, -errno, "hide %s: %m", fc->hide_dirs.v[i]);
	/* A file: an empty device in its place, read-only and not executable. */
	for (size_t i = 0; r >= 0 && i < fc->hide_files.n; i++)
		r = readonly_over("/dev/null", fc->hide_files.v[i], MOUNT_ATTR_NOEXEC, err);
	return r;
}
