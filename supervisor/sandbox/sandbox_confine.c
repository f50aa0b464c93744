#include "supervisor/sandbox/sandbox_confine.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd_read.h"
#include "supervisor/sandbox/cgroup.h"
#include "supervisor/sandbox/confine_plan.h"
#include "supervisor/sandbox/landlock.h"
#include "supervisor/policy/path_boundary.h"

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT           47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

/* Entries of the host's /dev looked at; past this the run refuses to start. */
#define DEV_ENTRIES_MAX 4096
/* The host's socket table, read whole. */
#define PROC_NET_UNIX_MAX (16 * 1024 * 1024)

#define RUN_USER "/run/user"
/* How far plan_run_fifos() looks. */
#define RUN_FIFOS_DEPTH   8
#define RUN_FIFOS_ENTRIES 100000

struct sandbox_confine {
	bool private_tmp;
	char *tmp_root;                /* "/tmp", resolved */
	struct confine_paths tmp_keep; /* outermost paths under tmp_root, re-bound into it */
	struct confine_paths tmp_make; /* directories created empty in the private /tmp */
	bool run_user;                 /* /run/user exists: replaced, with our own dir inside */
	struct confine_paths runtime;  /* other runtime dirs: a private writable tmpfs each */
	struct confine_paths hide;     /* an empty read-only tmpfs each */
	struct confine_paths sockets; /* socket and FIFO paths: /dev/null over each still visible */
	struct confine_paths pins;    /* parents of protected dirs, made mount points */
	char *cgroup2;                /* the cgroup2 mount point, or NULL */
	uint64_t keep_caps;
	uint64_t landlock_scopes;
	struct fs_confine *fs; /* the file system's layers, or NULL */
	uint64_t landlock_fs;
};

/* ---- the supervisor's side ---------------------------------------------------------------- */

void sandbox_confine_free(struct sandbox_confine *c)
{
	if (!c)
		return;
	free(c->tmp_root);
	confine_paths_free(&c->tmp_keep);
	confine_paths_free(&c->tmp_make);
	confine_paths_free(&c->runtime);
	confine_paths_free(&c->hide);
	confine_paths_free(&c->sockets);
	confine_paths_free(&c->pins);
	free(c->cgroup2);
	fs_confine_free(c->fs);
	free(c);
}

/* PATH resolved (symlinks, "..") when it exists, else normalised lexically; NULL for a relative
 * path or when out of memory. */
static char *resolve(const char *path)
{
	char *real;

	if (!path || path[0] != '/')
		return NULL;
	real = realpath(path, NULL);
	if (!real && path_normalize(path, NULL, &real) < 0)
		return NULL;
	return real;
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* Whether hiding DIR would hide something the agent must see. */
static bool holds_kept(const char *dir, const char *cwd, const char *const *keep)
{
	if (strcmp(dir, "/") == 0 || confine_path_within(cwd, dir))
		return true;
	for (const char *const *k = keep; k && *k; k++) {
		_cleanup_free_ char *real = resolve(*k);

		if (real && confine_path_within(real, dir))
			return true;
	}
	return false;
}

/* Hidden already: under the private /tmp (and not re-bound) or the private /run/user. */
static bool hidden_anyway(const struct sandbox_confine *c, const char *path)
{
	if (c->private_tmp && confine_path_within(path, c->tmp_root)) {
		for (size_t i = 0; i < c->tmp_keep.n; i++)
			if (confine_path_within(path, c->tmp_keep.v[i]))
				return false;
		return true;
	}
	return c->run_user && confine_path_within(path, RUN_USER);
}

static int read_text(const char *path, size_t max, char **ret)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len;

	if (fd < 0)
		return -errno;
	return fd_read_all(fd, max, ret, &len);
}

static int plan_tmp(struct sandbox_confine *c, const struct sandbox_confine_request *req,
                    const char *cwd)
{
	_cleanup_(confine_paths_free) struct confine_paths all = {0};
	_cleanup_free_ char *tmpdir = NULL;
	int r;

	c->tmp_root = resolve("/tmp");
	if (!c->tmp_root)
		return -ENOMEM;
	r = confine_paths_add(&all, cwd);
	for (const char *const *k = req->keep_visible; r >= 0 && k && *k; k++) {
		_cleanup_free_ char *real = resolve(*k);

		if (real && exists(real))
			r = confine_paths_add(&all, real);
	}
	if (r < 0)
		return r;
	/* Working in /tmp itself: nothing of it can be hidden (its sockets are still covered).
	 * fs.tmp: host keeps the host's. */
	c->private_tmp = !confine_paths_contains(&all, c->tmp_root) &&
	                 (!c->fs || fs_confine_private_tmp(c->fs));
	if (!c->private_tmp)
		return 0;
	for (size_t i = 0; i < all.n; i++)
		if (confine_path_within(all.v[i], c->tmp_root) &&
		    (r = confine_paths_add(&c->tmp_keep, all.v[i])) < 0)
			return r;
	confine_paths_outermost(&c->tmp_keep);
	/* $TMPDIR under /tmp: the agent gets it, empty, rather than a TMPDIR that is not there. */
	tmpdir = resolve(req->tmpdir);
	if (tmpdir && strcmp(tmpdir, c->tmp_root) != 0 && hidden_anyway(c, tmpdir))
		return confine_paths_add(&c->tmp_make, tmpdir);
	return 0;
}

/* What plan_run_fifos() walks with. */
struct fifo_walk {
	struct sandbox_confine *c;
	const char *cwd;
	const char *const *keep;
	dev_t dev;
	size_t seen;
};

/* Whether someone but root can add entries to the directory ST: its owner, its group, anyone. */
static bool open_to_others(const struct stat *st)
{
	return st->st_uid != 0 || (st->st_mode & S_IWOTH) ||
	       ((st->st_mode & S_IWGRP) && st->st_gid != 0);
}

/* The FIFOs below DFD (PATH), on its file system only (not /run/user, removable media or
 * another mount's tree), at most RUN_FIFOS_DEPTH levels down: added to the sockets to cover.
 * A directory another user can fill (/run/lock, 1777) is not walked: its entries would count
 * towards RUN_FIFOS_ENTRIES, and a local user who made 100000 of them kept every run from
 * starting. It gets a private tmpfs instead (its FIFOs out of reach with the rest of it),
 * unless the agent must see it. Takes DFD. */
static int find_fifos(struct fifo_walk *w, int dfd, const char *path, int depth)
{
	DIR *d = fdopendir(dfd);
	int r = 0;

	if (!d) {
		close(dfd);
		return 0;
	}
	for (struct dirent *de; r >= 0 && (de = readdir(d));) {
		char sub[PATH_MAX];
		struct stat st;
		int sfd;

		if (de->d_name[0] == '.' && (!de->d_name[1] || !strcmp(de->d_name, "..")))
			continue;
		if (++w->seen > RUN_FIFOS_ENTRIES) {
			r = -E2BIG;
			break;
		}
		if (snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name) >= (int)sizeof(sub) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    st.st_dev != w->dev || hidden_anyway(w->c, sub))
			continue;
		if (S_ISFIFO(st.st_mode)) {
			r = confine_paths_add(&w->c->sockets, sub);
		} else if (S_ISDIR(st.st_mode) && open_to_others(&st) &&
		           !holds_kept(sub, w->cwd, w->keep)) {
			r = confine_paths_add(&w->c->runtime, sub);
		} else if (S_ISDIR(st.st_mode) && depth < RUN_FIFOS_DEPTH) {
			sfd = openat(dirfd(d), de->d_name,
			             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sfd >= 0)
				r = find_fifos(w, sfd, sub, depth + 1);
		}
	}
	closedir(d);
	return r;
}

/* The FIFOs in /run (and /var/run, when it is not a link to it): systemd's /run/initctl, where
 * a runlevel request written by root powers the host off, among them. A FIFO, like a socket,
 * is opened past a read-only mount, and without Landlock's file rules
 * (--allow-nested-sandbox) nothing else refuses writing to it: /dev/null goes over each. */
static int plan_run_fifos(struct sandbox_confine *c, const struct sandbox_confine_request *req,
                          const char *cwd, struct cl_error *err)
{
	static const char *const dirs[] = {"/run", "/var/run"};
	_cleanup_free_ char *first = NULL;
	struct fifo_walk w = {.c = c, .cwd = cwd, .keep = req->keep_visible};
	int r = 0;

	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(dirs); i++) {
		_cleanup_free_ char *dir = resolve(dirs[i]);
		struct stat st;
		int dfd;

		if (!dir || (first && !strcmp(dir, first)))
			continue;
		dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			continue;
		if (fstat(dfd, &st) < 0) {
			close(dfd);
			continue;
		}
		w.dev = st.st_dev;
		r = find_fifos(&w, dfd, dir, 0);
		if (!first)
			first = TAKE_PTR(dir);
	}
	if (r == -E2BIG)
		return cl_error_set(err, r,
		                    "more than %d entries in /run to look for FIFOs in; refusing "
		                    "to start with some of them reachable by the agent",
		                    RUN_FIFOS_ENTRIES);
	return r < 0 ? cl_error_set(err, r, "FIFOs in /run: %s", strerror(-r)) : 0;
}

static int plan_sockets(struct sandbox_confine *c, const struct sandbox_confine_request *req,
                        const char *cwd, struct cl_error *err)
{
	static const char *const fixed_sockets[] = {"/run/docker.sock", "/var/run/docker.sock"};
	static const char *const fixed_dirs[] = {"/run/dbus", "/var/run/dbus"};
	_cleanup_free_ char *table = NULL;
	int r;

	c->run_user = exists(RUN_USER);
	if (req->runtime_dir) {
		_cleanup_free_ char *dir = resolve(req->runtime_dir);

		if (dir && exists(dir) && !hidden_anyway(c, dir) &&
		    !holds_kept(dir, cwd, req->keep_visible)) {
			r = confine_paths_add(&c->runtime, dir);
			if (r < 0)
				return r;
		}
	}
	for (size_t i = 0; i < ELEMENTSOF(fixed_dirs); i++) {
		_cleanup_free_ char *dir = resolve(fixed_dirs[i]);

		if (dir && exists(dir) && !hidden_anyway(c, dir) &&
		    !holds_kept(dir, cwd, req->keep_visible) &&
		    (r = confine_paths_add(&c->hide, dir)) < 0)
			return r;
	}
	if (!c->private_tmp && exists("/tmp/.X11-unix") &&
	    (r = confine_paths_add(&c->hide, "/tmp/.X11-unix")) < 0)
		return r;
	if (req->ssh_auth_sock && req->ssh_auth_sock[0] == '/') {
		_cleanup_free_ char *sock = resolve(req->ssh_auth_sock);
		char *slash = sock ? strrchr(sock, '/') : NULL;

		if (sock && (r = confine_paths_add(&c->sockets, sock)) < 0)
			return r;
		/* Its directory too (an agent restarted later binds there again), unless that
		 * would hide the working directory, the home directory or what must be kept. */
		if (slash && slash != sock) {
			*slash = '\0';
			if (exists(sock) && !hidden_anyway(c, sock) &&
			    !holds_kept(sock, cwd, req->keep_visible) &&
			    (r = confine_paths_add(&c->hide, sock)) < 0)
				return r;
		}
	}
	for (size_t i = 0; i < ELEMENTSOF(fixed_sockets); i++)
		if ((r = confine_paths_add(&c->sockets, fixed_sockets[i])) < 0)
			return r;
	/* Every pathname socket of the host's network namespace (where the supervisor runs): one
	 * that a new network namespace would not list is still reachable through its path. */
	r = read_text("/proc/self/net/unix", PROC_NET_UNIX_MAX, &table);
	if (r < 0)
		return cl_error_set(err, r, "reading /proc/self/net/unix: %s", strerror(-r));
	r = confine_parse_proc_net_unix(table, SANDBOX_CONFINE_MAX_SOCKETS + c->sockets.n,
	                                &c->sockets);
	if (r == -E2BIG)
		return cl_error_set(
		        err, r,
		        "the host has more than %d unix socket paths; refusing to start "
		        "with some of them reachable by the agent",
		        SANDBOX_CONFINE_MAX_SOCKETS);
	if (r < 0)
		return cl_error_set(err, r, "parsing /proc/self/net/unix: %s", strerror(-r));
	return plan_run_fifos(c, req, cwd, err);
}

int sandbox_confine_prepare(const struct sandbox_confine_request *req, struct sandbox_confine **ret,
                            struct cl_error *err)
{
	_cleanup_(sandbox_confine_freep) struct sandbox_confine *c = NULL;
	_cleanup_free_ char *cwd = NULL, *mountinfo = NULL;
	char cg_mount[PATH_MAX], cg_root[PATH_MAX];
	int r;

	c = calloc(1, sizeof(*c));
	if (!c) {
		fs_confine_free(req->fs);
		return -ENOMEM;
	}
	c->fs = req->fs;
	c->landlock_fs = req->landlock_fs;
	cwd = getcwd(NULL, 0);
	if (!cwd)
		return cl_error_set(err, -errno, "the current directory is gone: %m");
	r = plan_tmp(c, req, cwd);
	if (r >= 0)
		r = plan_sockets(c, req, cwd, err);
	if (r < 0)
		return err->msg[0] ? r : cl_error_set(err, r, "%s", strerror(-r));
	for (const char *const *p = req->protect; p && *p; p++) {
		_cleanup_free_ char *real = resolve(*p);

		if (real && (r = confine_paths_add_ancestors(&c->pins, real)) < 0)
			return cl_error_set(err, r, "%s", strerror(-r));
	}
	if (mountinfo_read_self(&mountinfo) >= 0 &&
	    cgroup_find_cgroup2_in_mountinfo(mountinfo, cg_mount, sizeof(cg_mount), cg_root,
	                                     sizeof(cg_root)) >= 0) {
		c->cgroup2 = strdup(cg_mount);
		if (!c->cgroup2)
			return -ENOMEM;
	}
	c->keep_caps = confine_kept_capabilities(req->host_network);
	c->landlock_scopes = req->landlock_scopes;
	*ret = TAKE_PTR(c);
	return 0;
}

struct fs_confine *sandbox_confine_fs(struct sandbox_confine *c)
{
	return c->fs;
}

void sandbox_confine_summarize(const struct sandbox_confine *c, struct sandbox_confine_summary *ret)
{
	*ret = (struct sandbox_confine_summary){
	        .private_tmp = c->private_tmp,
	        .tmp_kept = c->tmp_keep.n,
	        .host_sockets = c->sockets.n,
	        .pinned = c->pins.n,
	        .kept_caps = c->keep_caps,
	        .landlock_scopes = c->landlock_scopes,
	        .landlock_fs = c->landlock_fs,
	};
}

/* ---- in the init --------------------------------------------------------------------------- */

static int sys_open_tree(const char *path, unsigned flags)
{
	int fd = (int)syscall(SYS_open_tree, AT_FDCWD, path, flags | OPEN_TREE_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static int sys_move_mount(int fd, const char *to)
{
	return syscall(SYS_move_mount, fd, "", AT_FDCWD, to, MOVE_MOUNT_F_EMPTY_PATH) < 0 ? -errno
	                                                                                  : 0;
}

static int mkdir_p(const char *path, mode_t mode)
{
	_cleanup_free_ char *copy = strdup(path);

	if (!copy)
		return -ENOMEM;
	for (char *s = strchr(copy + 1, '/');; s = strchr(s + 1, '/')) {
		if (s)
			*s = '\0';
		if (mkdir(copy, mode) < 0 && errno != EEXIST)
			return -errno;
		if (!s)
			return 0;
		*s = '/';
	}
}

/* An empty file or directory at PATH (its parents created) for a mount of that kind. */
static int make_mount_point(const char *path, bool dir)
{
	_cleanup_free_ char *parent = strdup(path);
	char *slash = parent ? strrchr(parent, '/') : NULL;
	int fd, r;

	if (!parent)
		return -ENOMEM;
	if (slash && slash != parent) {
		*slash = '\0';
		r = mkdir_p(parent, 0755);
		if (r < 0)
			return r;
	}
	if (dir)
		return mkdir(path, 0755) < 0 && errno != EEXIST ? -errno : 0;
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static int bind_readonly(const char *path, struct cl_error *err)
{
	if (mount(path, path, NULL, MS_BIND | MS_REC, NULL) < 0)
		return errno == ENOENT ? 0 : cl_error_set(err, -errno, "bind %s: %m", path);
	if (mount(NULL, path, NULL,
	          MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return cl_error_set(err, -errno, "make %s read-only: %m", path);
	return 0;
}

/* /dev/null bound over PATH (a file): what was there can be neither read nor connected to. */
static int mask(const char *path, struct cl_error *err)
{
	if (mount("/dev/null", path, NULL, MS_BIND, NULL) < 0 && errno != ENOENT)
		return cl_error_set(err, -errno, "mask %s: %m", path);
	return 0;
}

/* An empty read-only tmpfs over directory PATH; a missing one needs no hiding. */
static int hide_dir(const char *path, struct cl_error *err)
{
	if (mount("cloister-hidden", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY,
	          "size=4k,mode=0755") < 0 &&
	    errno != ENOENT)
		return cl_error_set(err, -errno, "hide %s: %m", path);
	return 0;
}

/* A fresh tmpfs of the agent's own over PATH: empty, writable, 0700 (a runtime directory). */
static int private_dir(const char *path, mode_t mode, struct cl_error *err)
{
	char opts[96];

	snprintf(opts, sizeof(opts), "mode=%04o,uid=%u,gid=%u,size=64m", (unsigned)mode,
	         (unsigned)geteuid(), (unsigned)getegid());
	if (mount("cloister-private", path, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0 &&
	    errno != ENOENT)
		return cl_error_set(err, -errno, "mount a private tmpfs on %s: %m", path);
	return 0;
}

int sandbox_confine_namespaces(const struct sandbox_confine *c, struct cl_error *err)
{
	/* IPC: the host's SysV shared memory, semaphores and message queues of the same uid.
	 * cgroup: rooted at the leaf the init was born in, so /proc/self/cgroup and a cgroup2
	 * mount show nothing above it. */
	if (unshare(CLONE_NEWIPC | CLONE_NEWCGROUP) < 0)
		return cl_error_set(err, -errno, "unshare (ipc, cgroup namespaces): %m");
	return 0;
}

static int protect_proc(struct cl_error *err)
{
	static const char *const readonly[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq",
	                                       "/proc/bus", "/proc/fs"};
	static const char *const files[] = {"/proc/kcore",         "/proc/keys",
	                                    "/proc/timer_list",    "/proc/sched_debug",
	                                    "/proc/latency_stats", "/proc/timer_stats"};
	static const char *const dirs[] = {"/proc/acpi", "/proc/scsi", "/proc/asound"};
	int r = 0;

	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(readonly); i++)
		r = bind_readonly(readonly[i], err);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(files); i++)
		r = mask(files[i], err);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(dirs); i++)
		r = hide_dir(dirs[i], err);
	return r;
}

/* /sys read-only with everything below it, then a cgroup2 of the sandbox's own namespace over
 * the cgroup2 mount point, read-only too: the agent sees its leaf as the root and cannot write
 * cgroup.procs anywhere. */
static int protect_sys(const struct sandbox_confine *c, struct cl_error *err)
{
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
	_cleanup_close_ int fs = -EBADF, mnt = -EBADF;
	int r;

	if (syscall(SYS_mount_setattr, AT_FDCWD, "/sys", AT_RECURSIVE, &attr, sizeof(attr)) < 0)
		return cl_error_set(err, -errno, "make /sys read-only: %m");
	if (!c->cgroup2)
		return 0;
	/* A mount of the same filesystem onto the root of one of its mounts is refused (EBUSY),
	 * and a read-only one of the host's read-write superblock too: so the new mount is made
	 * detached, read-only as a mount, and moved into place. */
	fs = (int)syscall(SYS_fsopen, "cgroup2", FSOPEN_CLOEXEC);
	if (fs < 0)
		return cl_error_set(err, -errno, "fsopen cgroup2: %m");
	if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return cl_error_set(err, -errno, "create a cgroup2 mount: %m");
	mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
	                   MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
	                           MOUNT_ATTR_NOEXEC);
	if (mnt < 0)
		return cl_error_set(err, -errno, "fsmount cgroup2: %m");
	r = sys_move_mount(mnt, c->cgroup2);
	if (r < 0)
		return cl_error_set(err, r, "mount the sandbox's cgroup2 on %s: %s", c->cgroup2,
		                    strerror(-r));
	return 0;
}

static bool in_list(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(name, list[i]) == 0)
			return true;
	return false;
}

/* ipc/mqueue.c's file system type: not in the uapi headers. */
#define MQUEUE_FS_MAGIC 0x19800202

/* POSIX message queues. Its own IPC namespace keeps mq_open() to the sandbox's own queues,
 * but a queue's file in the host's /dev/mqueue, opened even read-only, is a descriptor of the
 * host's queue: mq_timedreceive() on it takes the messages the host's programs left for each
 * other. Over it, the mqueue file system of the sandbox's IPC namespace (its queues, the ones
 * mq_open() makes); failing that, nothing. */
static int private_mqueue(const char *path, struct cl_error *err)
{
	if (mount("mqueue", path, "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0)
		return 0;
	return hide_dir(path, err);
}

/* The host's /dev stays (the agent's terminal lives in its /dev/pts), but every device a
 * program has no business with is covered: disks, consoles, input, sound, video, kvm,
 * memory… A root agent could otherwise read the host's disk under every mount of ours.
 * Sockets and FIFOs are covered too. Directories other than pts are hidden (the host's
 * hugetlbfs too: shared memory, like /dev/shm); /dev/shm gets a private tmpfs, /dev/mqueue
 * the sandbox's own queues. */
static int protect_dev(struct cl_error *err)
{
	static const char *const devices[] = {"null",    "zero", "full", "random",
	                                      "urandom", "tty",  "ptmx"};
	static const char *const keep_dirs[] = {"pts", "shm"};
	_cleanup_close_ int dfd = open("/dev", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	size_t seen = 0;
	int r = 0;

	if (dfd < 0)
		return cl_error_set(err, -errno, "open /dev: %m");
	d = fdopendir(dfd);
	if (!d)
		return cl_error_set(err, -errno, "read /dev: %m");
	dfd = -EBADF; /* the DIR owns it */
	for (struct dirent *de; r >= 0 && (de = readdir(d));) {
		char path[PATH_MAX];
		struct stat st;

		if (de->d_name[0] == '.' && (!de->d_name[1] || !strcmp(de->d_name, "..")))
			continue;
		if (++seen > DEV_ENTRIES_MAX) {
			r = cl_error_set(err, -E2BIG, "more than %d entries in /dev",
			                 DEV_ENTRIES_MAX);
			break;
		}
		snprintf(path, sizeof(path), "/dev/%s", de->d_name);
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		/* A FIFO too (/dev/initctl, /dev/xconsole): opened past the read-only mount like
		 * a device, and Landlock lets /dev's nodes be written. */
		if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode) ||
		    S_ISFIFO(st.st_mode)) {
			if (!S_ISCHR(st.st_mode) ||
			    !in_list(de->d_name, devices, ELEMENTSOF(devices)))
				r = mask(path, err);
		} else if (S_ISDIR(st.st_mode) && !strcmp(de->d_name, "mqueue")) {
			r = private_mqueue(path, err);
		} else if (S_ISDIR(st.st_mode) &&
		           !in_list(de->d_name, keep_dirs, ELEMENTSOF(keep_dirs))) {
			r = hide_dir(path, err);
		}
	}
	closedir(d);
	if (r < 0)
		return r;
	/* POSIX shared memory of the host's processes. */
	return private_dir("/dev/shm", 01777, err);
}

static int private_tmp(const struct sandbox_confine *c, struct cl_error *err)
{
	_cleanup_free_ int *fds = calloc(c->tmp_keep.n + 1, sizeof(int));
	int r = 0;

	if (!fds)
		return -ENOMEM;

	/* Clone what stays visible before it is covered, then put the clones back in place. */
	for (size_t i = 0; i < c->tmp_keep.n; i++) {
		fds[i] = sys_open_tree(c->tmp_keep.v[i], OPEN_TREE_CLONE | AT_RECURSIVE);
		if (fds[i] < 0 && fds[i] != -ENOENT) {
			r = cl_error_set(err, fds[i], "open_tree %s: %s", c->tmp_keep.v[i],
			                 strerror(-fds[i]));
			for (size_t j = 0; j < i; j++)
				if (fds[j] >= 0)
					close(fds[j]);
			return r;
		}
	}
	if (mount("cloister-tmp", c->tmp_root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0)
		r = cl_error_set(err, -errno, "mount a private tmpfs on %s: %m", c->tmp_root);
	for (size_t i = 0; i < c->tmp_keep.n; i++) {
		struct stat st = {0};

		if (fds[i] < 0)
			continue;
		if (r >= 0 && fstat(fds[i], &st) < 0)
			r = cl_error_set(err, -errno, "stat %s: %m", c->tmp_keep.v[i]);
		if (r >= 0 && (r = make_mount_point(c->tmp_keep.v[i], S_ISDIR(st.st_mode))) < 0)
			cl_error_set(err, r, "create %s in the private /tmp: %s", c->tmp_keep.v[i],
			             strerror(-r));
		if (r >= 0 && (r = sys_move_mount(fds[i], c->tmp_keep.v[i])) < 0)
			cl_error_set(err, r, "re-attach %s: %s", c->tmp_keep.v[i], strerror(-r));
		close(fds[i]);
	}
	for (size_t i = 0; r >= 0 && i < c->tmp_make.n; i++)
		if ((r = mkdir_p(c->tmp_make.v[i], 0700)) < 0)
			cl_error_set(err, r, "create %s: %s", c->tmp_make.v[i], strerror(-r));
	return r;
}

/* /run/user: an empty tmpfs holding only the agent's own (empty) runtime directory. */
static int private_run_user(struct cl_error *err)
{
	char own[64];

	if (mount("cloister-run-user", RUN_USER, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	          "mode=0755,size=64m") < 0)
		return errno == ENOENT
		               ? 0
		               : cl_error_set(err, -errno, "mount a tmpfs on " RUN_USER ": %m");
	snprintf(own, sizeof(own), RUN_USER "/%u", (unsigned)geteuid());
	if (mkdir(own, 0700) < 0)
		return cl_error_set(err, -errno, "create %s: %m", own);
	return 0;
}

int sandbox_confine_mounts(const struct sandbox_confine *c, struct cl_error *err)
{
	int r;

	/* First: the mounts made after it (private /tmp, /dev/shm, /run/user) are new, so
	 * writable, where everything before it turns read-only. */
	r = fs_confine_mounts(c->fs, err);
	if (r >= 0)
		r = protect_proc(err);
	if (r >= 0)
		r = protect_sys(c, err);
	if (r >= 0)
		r = protect_dev(err);
	if (r >= 0 && c->private_tmp)
		r = private_tmp(c, err);
	if (r >= 0 && c->run_user)
		r = private_run_user(err);
	for (size_t i = 0; r >= 0 && i < c->runtime.n; i++)
		r = private_dir(c->runtime.v[i], 0700, err);
	for (size_t i = 0; r >= 0 && i < c->hide.n; i++)
		r = hide_dir(c->hide.v[i], err);
	/* A directory that is a mount point cannot be renamed or removed (EBUSY): bound onto
	 * itself, with what is mounted below it, each parent stays as writable as it was. */
	for (size_t i = 0; r >= 0 && i < c->pins.n; i++)
		if (mount(c->pins.v[i], c->pins.v[i], NULL, MS_BIND | MS_REC, NULL) < 0 &&
		    errno != ENOENT)
			r = cl_error_set(err, -errno, "bind %s onto itself: %m", c->pins.v[i]);
	return r;
}

int sandbox_confine_cover_sockets(const struct sandbox_confine *c, struct cl_error *err)
{
	for (size_t i = 0; i < c->sockets.n; i++) {
		struct stat st;

		/* What the init cannot reach (another user's private directory) the agent
		 * cannot either. */
		if (stat(c->sockets.v[i], &st) < 0 ||
		    (!S_ISSOCK(st.st_mode) && !S_ISFIFO(st.st_mode)))
			continue;
		if (mount("/dev/null", c->sockets.v[i], NULL, MS_BIND, NULL) < 0)
			return cl_error_set(err, -errno, "cover the socket %s: %m",
			                    c->sockets.v[i]);
	}
	return 0;
}

static int last_cap(void)
{
	char buf[16] = "";
	_cleanup_close_ int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	return n > 0 ? atoi(buf) : CAP_LAST_CAP;
}

static int drop_capabilities(uint64_t keep, struct cl_error *err)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {{0}};
	int last = last_cap();

	/* The bounding set first: it caps what any later execve can give back (a root agent
	 * gets its whole bounding set at exec; a file capability no more than it). */
	for (int cap = 0; cap <= last && cap < 64; cap++)
		if (!(keep & (1ULL << cap)) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 &&
		    errno != EINVAL)
			return cl_error_set(err, -errno,
			                    "drop capability %d from the bounding set: %m", cap);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return cl_error_set(err, -errno, "clear the ambient capabilities: %m");
	if (syscall(SYS_capget, &hdr, data) < 0)
		return cl_error_set(err, -errno, "capget: %m");
	for (int i = 0; i < 2; i++) {
		uint32_t k = (uint32_t)(keep >> (32 * i));

		data[i].effective &= k;
		data[i].permitted &= k;
		data[i].inheritable &= k;
	}
	if (syscall(SYS_capset, &hdr, data) < 0)
		return cl_error_set(err, -errno, "capset: %m");
	return 0;
}

/* Landlock's write rules: beneath fs.write and the sandbox's own writable mounts, every right
 * it handles; device nodes and /proc's files, written as files only. */
static int landlock_fs_rules(const struct sandbox_confine *c, struct landlock_path_rule **ret,
                             size_t *ret_n, char own_run[static 64])
{
	const struct confine_paths *write = fs_confine_write_paths(c->fs);
	const uint64_t all = ~0ULL;
	const uint64_t as_files =
	        CL_LANDLOCK_FS_WRITE_FILE | CL_LANDLOCK_FS_TRUNCATE | CL_LANDLOCK_FS_IOCTL_DEV;
	struct landlock_path_rule *rules = calloc(write->n + c->runtime.n + 7, sizeof(*rules));
	struct statfs sfs;
	struct stat st;
	size_t n = 0;

	if (!rules)
		return -ENOMEM;
	for (size_t i = 0; i < write->n; i++)
		rules[n++] = (struct landlock_path_rule){write->v[i], all};
	if (c->private_tmp)
		rules[n++] = (struct landlock_path_rule){c->tmp_root, all};
	rules[n++] = (struct landlock_path_rule){"/dev/shm", all};
	/* The sandbox's own queues (protect_dev): mq_open() creates in the same file system. */
	if (lstat("/dev/mqueue", &st) == 0 && S_ISDIR(st.st_mode) &&
	    statfs("/dev/mqueue", &sfs) == 0 && sfs.f_type == MQUEUE_FS_MAGIC)
		rules[n++] = (struct landlock_path_rule){"/dev/mqueue", all};
	if (c->run_user) {
		snprintf(own_run, 64, RUN_USER "/%u", (unsigned)geteuid());
		rules[n++] = (struct landlock_path_rule){own_run, all};
	}
	for (size_t i = 0; i < c->runtime.n; i++)
		rules[n++] = (struct landlock_path_rule){c->runtime.v[i], all};
	rules[n++] = (struct landlock_path_rule){"/dev", as_files};
	rules[n++] = (struct landlock_path_rule){"/proc", as_files};
	*ret = rules;
	*ret_n = n;
	return 0;
}

int sandbox_confine_privileges(const struct sandbox_confine *c, struct cl_error *err)
{
	struct landlock_plan plan = {.scoped = c->landlock_scopes};
	_cleanup_free_ struct landlock_path_rule *rules = NULL;
	const char *failed = NULL;
	char own_run[64];
	int r;

	/* For root too: setuid and file-capability programs gain nothing. Landlock needs it. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return cl_error_set(err, -errno, "PR_SET_NO_NEW_PRIVS: %m");
	if (c->fs && c->landlock_fs) {
		r = landlock_fs_rules(c, &rules, &plan.n_rules, own_run);
		if (r < 0)
			return cl_error_set(err, r, "Landlock: %s", strerror(-r));
		plan.rules = rules;
		plan.handled_fs = c->landlock_fs;
	}
	r = landlock_restrict(&plan, &failed);
	if (r < 0)
		return cl_error_set(err, r, "Landlock%s%s: %s", failed ? ": a rule for " : "",
		                    failed ? failed : "", strerror(-r));
	return drop_capabilities(c->keep_caps, err);
}
