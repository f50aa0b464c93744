#include "notifier/target.h"

#include <errno.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "notifier/file_facts.h"
#include "notifier/notify.h"
#include "notifier/path.h"
#include "notifier/proc_status.h"
#include "notifier/remote_mem.h"
#include "notifier/resolve.h"
#include "notifier/shebang.h"
#include "notifier/view.h"

#define STATUS_MAX (64 * 1024)

/* statfs.f_flags holds the ST_* mount flags when this bit is set (Linux >= 2.6.36). */
#ifndef ST_VALID
#define ST_VALID 0x0020
#endif

/* Everything one read needs. The target's /proc/PID files are named by path (proc): one
 * syscall each instead of opening the directory, the call and a close. */
struct reader {
	struct notifier *n;
	pid_t pid;
	char proc[32];           /* "/proc/PID" in our procfs */
	int rootfd;              /* the target's root directory (in its mount namespace) */
	struct notifier_own own; /* what the notifier knows of us (notifier_own) */
	struct exec_view *view;  /* the sandbox's own view, or NULL */
	bool root_is_ours; /* the target's root reads as "/" from ours (no prefix to take off) */
	bool have_status;
	struct proc_status status; /* read on first use: it is the costliest file in /proc */
};

static void exec_file_done(struct exec_file *f)
{
	free(f->real_path);
}

void exec_target_free(struct exec_target *t)
{
	if (!t)
		return;
	free(t->path);
	free(t->abs_path);
	free(t->cwd);
	free(t->root_link);
	if (t->argv) {
		for (size_t i = 0; i < t->argc; i++)
			free(t->argv[i]);
		free(t->argv);
	}
	exec_file_done(&t->file);
	if (t->file_fd >= 0)
		close(t->file_fd);
	free(t->interp);
	free(t->interp_arg);
	exec_file_done(&t->interp_file);
	if (t->interp_fd >= 0)
		close(t->interp_fd);
	free(t);
}

/* Reads the target's memory by pid with process_vm_readv(2): no /proc/PID/mem to open (a new
 * proc inode and a ptrace check per exec) and one syscall per page. Reading by pid is safe
 * only because every result is confirmed by a NOTIF_ID_VALID check after the read (see
 * notifier_read_exec): a pid can be reused only once the target is dead, and then the check
 * fails and everything read is thrown away. Never cache the pid for use after that check. */
struct mem_ctx {
	pid_t pid;
	int error; /* the last failure's errno, for the message (remote_mem only sees -EFAULT) */
};

static ssize_t mem_read(void *ctx, void *buf, size_t len, uint64_t addr)
{
	struct mem_ctx *m = ctx;
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	ssize_t n;

	if (addr > INT64_MAX)
		return -EFAULT;
	do
		n = process_vm_readv(m->pid, &local, 1, &remote, 1, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		m->error = errno;
		return -errno;
	}
	return n;
}

/* remote_mem's preload: the pages of the exec's path and argv array in one process_vm_readv
 * instead of one each (each call looks the task and its mm up and checks ptrace access). A
 * failure is not recorded: the page-by-page reads that follow try again and say why. */
static ssize_t mem_readv(void *ctx, unsigned char *const bufs[], const uint64_t addrs[], size_t n)
{
	struct mem_ctx *m = ctx;
	struct iovec local[REMOTE_MEM_SLOTS], remote[REMOTE_MEM_SLOTS];
	ssize_t got;

	if (n > REMOTE_MEM_SLOTS)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (addrs[i] > INT64_MAX)
			return -EFAULT;
		local[i] = (struct iovec){.iov_base = bufs[i], .iov_len = REMOTE_MEM_PAGE};
		remote[i] = (struct iovec){.iov_base = (void *)(uintptr_t)addrs[i],
		                           .iov_len = REMOTE_MEM_PAGE};
	}
	do
		got = process_vm_readv(m->pid, local, n, remote, n, 0);
	while (got < 0 && errno == EINTR);
	return got < 0 ? -errno : got;
}

/* readlinkat into a malloc'd string, bounded by PATH_MAX. */
static int readlink_alloc(int dirfd, const char *name, char **ret)
{
	char buf[PATH_MAX];
	ssize_t n = readlinkat(dirfd, name, buf, sizeof(buf));
	char *s;

	if (n < 0)
		return -errno;
	if ((size_t)n >= sizeof(buf))
		return -ENAMETOOLONG;
	s = strndup(buf, (size_t)n);
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

/* /proc shows a link's path from the supervisor's root. For a chrooted target, turn it into
 * the target's view by removing the target's root (root_link, as /proc shows it). A path
 * outside the target's root is left as it is. */
static int to_sandbox_view(const char *root_link, char **path)
{
	size_t n;
	char *s;

	if (!root_link || strcmp(root_link, "/") == 0 || !*path)
		return 0;
	n = strlen(root_link);
	if (strncmp(*path, root_link, n) != 0 || ((*path)[n] != '/' && (*path)[n] != '\0'))
		return 0;
	s = strdup((*path)[n] ? *path + n : "/");
	if (!s)
		return -ENOMEM;
	free(*path);
	*path = s;
	return 0;
}

/* RD's /proc/PID/NAME into BUF. */
static const char *proc_file(const struct reader *rd, const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s", rd->proc, name);
	return buf;
}

static int read_cwd(const struct reader *rd, const char *root_link, char **ret)
{
	_cleanup_free_ char *cwd = NULL;
	char name[64];
	int r = readlink_alloc(AT_FDCWD, proc_file(rd, "cwd", name, sizeof(name)), &cwd);

	if (r < 0)
		return r;
	r = to_sandbox_view(root_link, &cwd);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(cwd);
	return 0;
}

static int read_status(const struct reader *rd, struct proc_status *ret)
{
	char name[64];
	_cleanup_close_ int fd =
	        open(proc_file(rd, "status", name, sizeof(name)), O_RDONLY | O_CLOEXEC);
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
		len += (size_t)n;
		/* procfs hands over the whole file in one read when it fits: a short read is
		 * the end, which saves a syscall per exec. */
		if (n == 0 || len < STATUS_MAX)
			break;
	}
	return proc_status_parse(buf, len, ret);
}

static int reader_status(struct reader *rd, const struct proc_status **ret)
{
	if (!rd->have_status) {
		int r = read_status(rd, &rd->status);

		if (r < 0)
			return r;
		rd->have_status = true;
	}
	*ret = &rd->status;
	return 0;
}

/* The target's ids. The /proc/PID directory belongs to the task's euid/egid, dumpable or not
 * (unlike the files in it), which costs one stat; the status file (~20 µs for a new process)
 * is used when the exec permission check already read it. */
static int read_ids(struct reader *rd, struct exec_target *t)
{
	struct stat pst;

	if (rd->have_status) {
		t->uid = rd->status.ruid;
		t->euid = rd->status.euid;
		t->gid = rd->status.rgid;
		t->egid = rd->status.egid;
		t->ids_exact = true;
		return 0;
	}
	if (stat(rd->proc, &pst) < 0)
		return -errno;
	t->uid = t->euid = pst.st_uid;
	t->gid = t->egid = pst.st_gid;
	return 0;
}

/* Is ST our root directory? */
static bool is_own_root(const struct reader *rd, const struct stat *st)
{
	struct stat own;

	if (rd->own.root_known)
		return st->st_dev == rd->own.root_dev && st->st_ino == rd->own.root_ino;
	return stat("/", &own) == 0 && st->st_dev == own.st_dev && st->st_ino == own.st_ino;
}

/* Our fd's entry in /proc/self/fd, as a (dirfd, name) pair for the *at calls: relative to the
 * directory opened once when we have it, else the whole path. */
static int own_fd_entry(const struct reader *rd, int fd, char *buf, size_t size)
{
	if (rd->own.fd_dir >= 0) {
		snprintf(buf, size, "%d", fd);
		return rd->own.fd_dir;
	}
	snprintf(buf, size, "/proc/self/fd/%d", fd);
	return AT_FDCWD;
}

/* F's name as /proc/self/fd shows FD (ours): the file itself, whatever became of the path
 * it was reached by. A name that cannot be read stays NULL. */
static int read_own_name(const struct notifier_own *own, int fd, struct exec_file *f)
{
	char self[64];
	int dirfd, r;

	if (f->real_path || fd < 0)
		return 0;
	if (own->fd_dir >= 0) {
		snprintf(self, sizeof(self), "%d", fd);
		dirfd = own->fd_dir;
	} else {
		snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
		dirfd = AT_FDCWD;
	}
	r = readlink_alloc(dirfd, self, &f->real_path);
	return r == -ENOMEM ? r : 0;
}

/* resolve.h's access to the target's status, read once per notification. */
static int resolve_status(void *userdata, const struct proc_status **ret)
{
	return reader_status(userdata, ret);
}

/* RET_NAME (may be NULL): the file's name when the lookup itself settles it (resolve.h). */
static int resolve_in_sandbox(struct reader *rd, int base, const char *base_name, const char *path,
                              bool nofollow, char **ret_name)
{
	struct resolve_target rt = {
	        .root = rd->rootfd,
	        .piddir = -EBADF,
	        .pid = rd->pid,
	        .status = resolve_status,
	        .userdata = rd,
	};

	return resolve_exec_path_hinted(&rt, base, base_name, path,
	                                nofollow ? RESOLVE_EXEC_NOFOLLOW : 0,
	                                notifier_resolve_hint(rd->n, path), ret_name);
}

/* The device of the superblock the kernel executes a file from, in its internal encoding: what
 * the exec backstop sees in inode->i_sb->s_dev. On most file systems that is st_dev. Overlayfs
 * and btrfs report another st_dev than the superblock's, so look the file's mount (MNT_ID) up
 * in the target's mountinfo, whose major:minor is the superblock's s_dev. Without a view only:
 * the view's mount table has the same answer without reading a file. */
static int kernel_dev_of(struct reader *rd, uint64_t mnt_id, dev_t st_dev, const struct statfs *sfs,
                         uint32_t *ret_kdev)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	char name[64];
	int mfd;

	if (sfs->f_type != OVERLAYFS_SUPER_MAGIC && sfs->f_type != BTRFS_SUPER_MAGIC) {
		*ret_kdev = exec_kernel_dev(st_dev);
		return 0;
	}
	mfd = open(proc_file(rd, "mountinfo", name, sizeof(name)), O_RDONLY | O_CLOEXEC);
	if (mfd < 0)
		return -errno;
	f = fdopen(mfd, "re");
	if (!f) {
		close(mfd);
		return -errno;
	}
	/* The fd pins its mount, so the id cannot be reused while we look. */
	while (getline(&line, &cap, f) >= 0) {
		unsigned id, maj, min;

		if (sscanf(line, "%u %*u %u:%u", &id, &maj, &min) == 3 && id == mnt_id) {
			*ret_kdev = exec_kernel_dev(makedev(maj, min));
			return 0;
		}
	}
	return -ENOENT;
}

/* Is the file F (open at FD, described but for its view) the file at its name in the sandbox's
 * own view? Its mount being one of the view's settles it; otherwise its name, as its own mount
 * namespace gives it, must lead to the same device and inode in the view. Sets f->view, and
 * f->kdev from the view's mount table when the file is the view's. */
static int check_view(struct reader *rd, int fd, struct exec_file *f)
{
	_cleanup_close_ int ref = -EBADF;
	struct statx x;
	int r;

	r = exec_view_find_mount(rd->view, f->mnt_id, &f->kdev);
	if (r < 0)
		return r;
	if (r == 1) {
		f->view = EXEC_VIEW_SAME;
		return 0;
	}
	/* Reached through another mount namespace: compare with the view by name (which a read
	 * without names has not taken yet). */
	f->view = EXEC_VIEW_ABSENT;
	r = read_own_name(&rd->own, fd, f);
	if (r < 0)
		return r;
	if (!f->real_path) {
		f->view_error = ENOENT;
		return 0;
	}
	ref = exec_view_open(rd->view, f->real_path);
	if (ref < 0) {
		f->view_error = -ref;
		return 0;
	}
	if (statx(ref, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_INO | STATX_MNT_ID, &x) < 0)
		return -errno;
	if (x.stx_ino != f->ino || makedev(x.stx_dev_major, x.stx_dev_minor) != f->dev) {
		f->view = EXEC_VIEW_OTHER;
		return 0;
	}
	/* The same file: the backstop is told the superblock it has in the view. */
	r = exec_view_find_mount(rd->view, x.stx_mnt_id, &f->kdev);
	if (r < 0)
		return r;
	if (r == 0) {
		f->view_error = ENOENT;
		return 0;
	}
	f->view = EXEC_VIEW_SAME;
	return 0;
}

/* Read the first line of a regular file for "#!". Returns 1 and *ret for a script, 0 if not. */
static int read_shebang(const struct reader *rd, int fd, struct shebang *ret)
{
	char self[64], buf[SHEBANG_BUF_SIZE];
	_cleanup_close_ int rfd = -EBADF;
	int dirfd;
	ssize_t n;

	/* O_PATH fds cannot be read: reopen through /proc/self/fd (works for memfds too). */
	dirfd = own_fd_entry(rd, fd, self, sizeof(self));
	rfd = openat(dirfd, self, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (rfd < 0)
		return -errno;
	do
		n = pread(rfd, buf, sizeof(buf), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return shebang_parse(buf, (size_t)n, ret) == 0;
}

/* Fill f from the O_PATH fd of the file the exec would run; with RET_SB (a file the target may
 * run), its "#!" line too: *ret_script says whether it is a script. What the file's identity
 * settles (file_facts.h) is taken from the notifier's table when it has it, and kept there
 * when not. *NAME (taken; may be NULL): the file's name below the target's root as its
 * lookup settled it (resolve.h), for real_path without a readlink. Without WANT_NAME, a name
 * the lookup did not settle is left for notifier_read_exec_names(). */
static int describe_file(struct reader *rd, int fd, char **name, bool want_name,
                         struct exec_file *f, struct shebang *ret_sb, bool *ret_script)
{
	const struct proc_status *cred;
	struct file_facts_table *table = notifier_file_facts(rd->n);
	const struct file_facts *known;
	struct file_facts facts = {0};
	struct file_facts_key key;
	struct statx x;
	int r;

	if (ret_script)
		*ret_script = false;
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_BASIC_STATS | STATX_MNT_ID,
	          &x) < 0)
		return -errno;
	if (!(x.stx_mask & STATX_MNT_ID))
		return -EOPNOTSUPP;
	f->exists = true;
	f->regular = S_ISREG(x.stx_mode);
	f->mode = x.stx_mode;
	f->uid = x.stx_uid;
	f->gid = x.stx_gid;
	f->dev = makedev(x.stx_dev_major, x.stx_dev_minor);
	f->ino = x.stx_ino;
	f->nlink = x.stx_nlink;
	f->ctime_ns = (uint64_t)x.stx_ctime.tv_sec * 1000000000u + x.stx_ctime.tv_nsec;
	f->size = x.stx_size;
	f->mnt_id = x.stx_mnt_id;
	key = (struct file_facts_key){f->dev, f->ino, f->mnt_id, f->ctime_ns, f->size};
	known = f->regular ? file_facts_find(table, &key) : NULL;
	if (known && !rd->view && !known->kdev_known)
		known = NULL; /* kept while a view was set: its superblock is not in it */
	if (known)
		facts = *known;
	/* /proc/self/fd/N names the file from our root: the lookup's own name is that name only
	 * when the target's root shows as our root (its name from ours is "/"). */
	if (name && *name && rd->root_is_ours) {
		f->real_path = TAKE_PTR(*name);
	} else if (want_name) {
		r = read_own_name(&rd->own, fd, f);
		if (r < 0)
			return r;
	}
	if (rd->view) {
		r = check_view(rd, fd, f);
		if (r < 0)
			return r;
	}
	if (!known) {
		struct statfs sfs;

		if (fstatfs(fd, &sfs) < 0)
			return -errno;
		if (!rd->view) {
			r = kernel_dev_of(rd, f->mnt_id, f->dev, &sfs, &facts.kdev);
			if (r < 0)
				return r;
			facts.kdev_known = true;
		}
		/* The mount flags come with fstatfs; fstatvfs would repeat it. */
		if (sfs.f_flags & ST_VALID) {
			facts.noexec = (sfs.f_flags & ST_NOEXEC) != 0;
		} else {
			struct statvfs vfs;

			facts.noexec = fstatvfs(fd, &vfs) == 0 && (vfs.f_flag & ST_NOEXEC);
		}
	}
	if (!rd->view)
		f->kdev = facts.kdev;
	if (!f->regular || (f->mode & 0111) == 0) {
		f->executable = false;
	} else if ((f->mode & 0111) == 0111) {
		f->executable = true; /* whoever asks: no need for the target's credentials */
	} else {
		r = reader_status(rd, &cred);
		if (r < 0)
			return r;
		f->executable = proc_status_may_exec(cred, f->mode, f->uid, f->gid);
	}
	if (f->executable && facts.noexec)
		f->executable = false;
	/* What exec fails with: EACCES for anything but an executable regular file, ELOOP for a
	 * symlink (AT_SYMLINK_NOFOLLOW; an fd of an O_PATH symlink). */
	if (!f->executable)
		f->error = S_ISLNK(f->mode) ? ELOOP : EACCES;
	/* Only a file the kernel would run is opened and read: exec fails on any other before
	 * reading it, and the supervisor (root, maybe) has no business with the first bytes of
	 * whatever the agent names (/proc/kmsg: the host's kernel log, taken from its reader). */
	if (ret_sb && f->executable) {
		if (!facts.shebang_known) {
			r = read_shebang(rd, fd, &facts.sb);
			/* A file we cannot read is taken for a binary, and asked about again. */
			facts.script = r == 1;
			facts.shebang_known = r >= 0;
		}
		if (facts.script) {
			*ret_sb = facts.sb;
			*ret_script = true;
		}
	}
	if (f->regular && (!known || facts.shebang_known != known->shebang_known))
		file_facts_put(table, &key, &facts);
	return 0;
}

static int read_exec(struct notifier *n, const struct seccomp_notif *req, unsigned what,
                     struct exec_target **ret, struct cl_error *err)
{
	bool lean = !(what & EXEC_READ_RECORD), names = what & EXEC_READ_NAMES;
	_cleanup_(exec_target_freep) struct exec_target *t = NULL;
	_cleanup_close_ int rootfd = -EBADF, cwdfd = -EBADF;
	_cleanup_close_ int basefd = -EBADF, filefd = -EBADF;
	_cleanup_free_ char *base_name = NULL, *own_root_link = NULL;
	_cleanup_free_ char *file_name = NULL, *interp_name = NULL;
	const char *root_link = NULL;
	struct reader rd = {.n = n, .rootfd = -EBADF};
	struct remote_mem mem;
	struct mem_ctx mem_ctx = {.pid = (pid_t)req->pid};
	struct remote_argv argv = {0};
	struct shebang sb;
	bool script = false;
	uint64_t path_addr, argv_addr;
	char name[64];
	ssize_t len;
	int r;

	if (req->data.arch != AUDIT_ARCH_X86_64)
		return cl_error_set(err, -EINVAL, "notification for foreign arch 0x%x",
		                    req->data.arch);
	if (req->data.nr != __NR_execve && req->data.nr != __NR_execveat)
		return cl_error_set(err, -EINVAL, "notification for syscall %d, not an exec",
		                    req->data.nr);
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->file_fd = -1;
	t->interp_fd = -1;
	t->id = req->id;
	t->pid = (pid_t)req->pid;
	t->dirfd = AT_FDCWD;
	t->execveat = req->data.nr == __NR_execveat;
	if (t->execveat) {
		t->dirfd = (int)req->data.args[0];
		path_addr = req->data.args[1];
		argv_addr = req->data.args[2];
		t->flags = (int)req->data.args[4];
		t->nofollow = (t->flags & AT_SYMLINK_NOFOLLOW) != 0;
	} else {
		path_addr = req->data.args[0];
		argv_addr = req->data.args[1];
	}

	/* /proc/PID is read by name and the memory by pid (process_vm_readv): the NOTIF_ID_VALID
	 * check after the reads vouches for both (a pid names another process only once the
	 * target is dead, and then the check fails and everything read is thrown away). */
	rd.pid = t->pid;
	snprintf(rd.proc, sizeof(rd.proc), "/proc/%d", (int)req->pid);
	rd.view = notifier_view(n);
	notifier_own(n, &rd.own);

	remote_mem_init(&mem, mem_read, &mem_ctx);
	remote_mem_preload(&mem, mem_readv, (const uint64_t[]){path_addr, argv_addr}, 2);
	len = remote_mem_read_string(&mem, path_addr, PATH_MAX, &t->path);
	if (len >= 0)
		r = remote_mem_read_argv(&mem, argv_addr, EXEC_MAX_ARGS, EXEC_MAX_ARGV_BYTES,
		                         &argv);
	if (len < 0) {
		if (notifier_id_valid(n, req->id) == 0)
			return -ENOENT;
		if (len == -E2BIG)
			return cl_error_set(err, -ENAMETOOLONG, "pid %d: exec path longer than %d",
			                    t->pid, PATH_MAX);
		/* Not a bad pointer but no access (EPERM) or no process (ESRCH): say so. */
		if (len == -EFAULT && mem_ctx.error != 0 && mem_ctx.error != EFAULT)
			len = -mem_ctx.error;
		return cl_error_set(err, (int)len, "pid %d: reading exec path: %s", t->pid,
		                    strerror((int)-len));
	}
	if (r < 0)
		return r;
	t->argv = argv.argv;
	t->argc = argv.argc;
	t->argv_bytes = argv.bytes;
	t->argv_truncated = argv.truncated;
	t->argv_fault = argv.fault;

	t->uid = t->euid = (uid_t)-1;
	t->gid = t->egid = (gid_t)-1;
	if (notifier_fixed_root(n, &rd.rootfd, &root_link)) {
		/* No target can have another root (notifier_set_fixed_root): the sandbox's, known
		 * with its name once for all. */
		rd.root_is_ours = !root_link || strcmp(root_link, "/") == 0;
	} else {
		rootfd = open(proc_file(&rd, "root", name, sizeof(name)),
		              O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (rootfd < 0) {
			r = -errno;
			goto gone_or_fail;
		}
		rd.rootfd = rootfd;
		/* A chrooted target: /proc shows its paths from our root, so learn its root's
		 * name to take it off again. The usual target shares our root directory. */
		struct stat rst;

		if (fstat(rootfd, &rst) < 0 || !is_own_root(&rd, &rst))
			(void)readlink_alloc(AT_FDCWD, proc_file(&rd, "root", name, sizeof(name)),
			                     &own_root_link);
		else
			rd.root_is_ours = true;
		root_link = own_root_link;
	}
	/* The cwd is read when a relative path needs it or the file exists (for the record);
	 * a PATH probe of an absolute name that is not there needs neither. */
	if (t->path[0] != '/' && !(t->execveat && t->dirfd != AT_FDCWD)) {
		r = read_cwd(&rd, root_link, &t->cwd);
		if (r < 0)
			goto gone_or_fail;
	}

	t->empty_path = t->execveat && (t->flags & AT_EMPTY_PATH) && t->path[0] == '\0';
	if (t->empty_path) {
		char fdname[32];

		snprintf(fdname, sizeof(fdname), "fd/%d", t->dirfd);
		proc_file(&rd, fdname, name, sizeof(name));
		r = readlink_alloc(AT_FDCWD, name, &t->abs_path);
		if (r == -ENOMEM || to_sandbox_view(root_link, &t->abs_path) < 0)
			return -ENOMEM;
		/* The magic link leads to the very file the target holds. */
		filefd = open(name, O_PATH | O_CLOEXEC);
		if (t->dirfd == AT_FDCWD)
			r = -EACCES; /* its cwd, a directory */
		else if (filefd < 0)
			r = errno == ENOENT ? -EBADF : -errno; /* no such fd in the target */
		else
			r = TAKE_FD(filefd);
	} else if (t->path[0] == '\0') {
		r = -ENOENT; /* the kernel's answer to an empty path without AT_EMPTY_PATH */
	} else {
		if (t->path[0] == '/') {
			r = path_join("/", t->path, &t->abs_path);
		} else if (t->dirfd == AT_FDCWD) {
			cwdfd = open(proc_file(&rd, "cwd", name, sizeof(name)),
			             O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (cwdfd < 0) {
				r = -errno;
				goto gone_or_fail;
			}
			basefd = TAKE_FD(cwdfd);
			base_name = strdup(t->cwd);
			if (!base_name)
				return -ENOMEM;
			r = path_join(t->cwd, t->path, &t->abs_path);
		} else {
			char fdname[32];

			snprintf(fdname, sizeof(fdname), "fd/%d", t->dirfd);
			proc_file(&rd, fdname, name, sizeof(name));
			basefd = open(name, O_PATH | O_CLOEXEC);
			if (basefd < 0) {
				r = errno == ENOENT ? -EBADF : -errno;
				goto resolved;
			}
			(void)readlink_alloc(AT_FDCWD, name, &base_name);
			if (to_sandbox_view(root_link, &base_name) < 0)
				return -ENOMEM;
			r = base_name ? path_join(base_name, t->path, &t->abs_path) : -EINVAL;
		}
		if (r == -ENOMEM)
			return r;
		/* abs_path stays NULL when the base has no usable name (deleted, anon). */
		r = resolve_in_sandbox(&rd, basefd, base_name, t->path, t->nofollow, &file_name);
	}
resolved:
	if (r >= 0) {
		filefd = r;
		r = describe_file(&rd, filefd, &file_name, names, &t->file, &sb, &script);
		if (r < 0)
			goto gone_or_fail;
	} else if (r == -ENOMEM) {
		return r;
	} else {
		t->file.error = -r;
	}

	if (t->file.exists && !t->cwd && !lean) {
		r = read_cwd(&rd, root_link, &t->cwd);
		if (r < 0)
			goto gone_or_fail;
	}
	/* What notifier_read_exec_record() needs to name the cwd as the target sees it. */
	if (lean && root_link) {
		t->root_link = strdup(root_link);
		if (!t->root_link)
			return -ENOMEM;
	}

	if (t->file.regular) {
		if (script) {
			_cleanup_close_ int ifd = -EBADF, icwd = -EBADF;

			t->script = true;
			t->interp = strdup(sb.interp);
			t->interp_arg = sb.has_arg ? strdup(sb.arg) : NULL;
			if (!t->interp || (sb.has_arg && !t->interp_arg))
				return -ENOMEM;
			/* The kernel opens the interpreter like any path of the process: from
			 * its root, or from its cwd when relative. */
			if (sb.interp[0] != '/') {
				/* Its name makes the lookup one call (resolve.h). */
				if (!t->cwd) {
					r = read_cwd(&rd, root_link, &t->cwd);
					if (r < 0)
						goto gone_or_fail;
				}
				icwd = open(proc_file(&rd, "cwd", name, sizeof(name)),
				            O_PATH | O_DIRECTORY | O_CLOEXEC);
				if (icwd < 0) {
					r = -errno;
					goto gone_or_fail;
				}
			}
			ifd = resolve_in_sandbox(&rd, icwd, t->cwd, sb.interp, false, &interp_name);
			if (ifd == -ENOMEM)
				return -ENOMEM;
			if (ifd >= 0) {
				r = describe_file(&rd, ifd, &interp_name, names, &t->interp_file,
				                  NULL, NULL);
				if (r < 0)
					goto gone_or_fail;
				t->interp_fd = TAKE_FD(ifd);
			} else {
				t->interp_file.error = -ifd;
				ifd = -EBADF;
			}
		}
	}

	if (t->file.exists && !lean) {
		r = read_ids(&rd, t);
		if (r < 0)
			goto gone_or_fail;
	}

	/* The pid may have died and been reused while we read: then all of the above may
	 * describe another process. */
	r = notifier_id_valid(n, req->id);
	if (r == 0)
		return -ENOENT;
	if (r < 0)
		return cl_error_set(err, r, "checking notification %llu: %s",
		                    (unsigned long long)req->id, strerror(-r));
	if (t->file.exists)
		t->file_fd = TAKE_FD(filefd);
	*ret = TAKE_PTR(t);
	return 0;

gone_or_fail:
	if (notifier_id_valid(n, req->id) == 0)
		return -ENOENT;
	return cl_error_set(err, r, "pid %d: reading exec of %s: %s", t->pid, t->path,
	                    strerror(-r));
}

int notifier_read_exec(struct notifier *n, const struct seccomp_notif *req,
                       struct exec_target **ret, struct cl_error *err)
{
	return read_exec(n, req, EXEC_READ_RECORD | EXEC_READ_NAMES, ret, err);
}

int notifier_read_exec_lean(struct notifier *n, const struct seccomp_notif *req,
                            struct exec_target **ret, struct cl_error *err)
{
	return read_exec(n, req, EXEC_READ_NAMES, ret, err);
}

int notifier_read_exec_some(struct notifier *n, const struct seccomp_notif *req, unsigned what,
                            struct exec_target **ret, struct cl_error *err)
{
	return read_exec(n, req, what, ret, err);
}

int notifier_read_exec_names(struct notifier *n, struct exec_target *t, bool interp)
{
	struct notifier_own own;
	int r = 0;

	notifier_own(n, &own);
	if (t->file.exists)
		r = read_own_name(&own, t->file_fd, &t->file);
	if (r >= 0 && interp && t->script && t->interp_file.exists)
		r = read_own_name(&own, t->interp_fd, &t->interp_file);
	return r;
}

int notifier_read_exec_record(struct notifier *n, const struct seccomp_notif *req,
                              struct exec_target *t, struct cl_error *err)
{
	struct reader rd = {.n = n, .pid = t->pid, .rootfd = -EBADF};
	int r = 0;

	if (!t->file.exists || (t->cwd && t->uid != (uid_t)-1))
		return 0;
	snprintf(rd.proc, sizeof(rd.proc), "/proc/%d", (int)t->pid);
	notifier_own(n, &rd.own);
	if (!t->cwd)
		r = read_cwd(&rd, t->root_link, &t->cwd);
	if (r >= 0 && t->uid == (uid_t)-1)
		r = read_ids(&rd, t);
	/* As for the rest of the read: only what the target still asks for is its. */
	if (notifier_id_valid(n, req->id) == 0)
		return -ENOENT;
	if (r < 0)
		return cl_error_set(err, r, "pid %d: reading the cwd and ids of its exec: %s",
		                    t->pid, strerror(-r));
	return 0;
}

void connect_target_read_process(struct connect_target *t, pid_t pid)
{
	char path[64];
	ssize_t got;
	int fd;

	t->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	got = readlink(path, t->exe, sizeof(t->exe) - 1);
	t->exe[got > 0 ? got : 0] = '\0';
	t->cmdline_len = 0;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		got = read(fd, t->cmdline, sizeof(t->cmdline) - 1);
		close(fd);
		/* Keep whole strings only: cut after the last NUL. */
		while (got > 0 && t->cmdline[got - 1] != '\0')
			got--;
		t->cmdline_len = got > 0 ? (size_t)got : 0;
	}
}

int notifier_read_connect(struct notifier *n, const struct seccomp_notif *req,
                          struct connect_target *ret)
{
	struct mem_ctx mc = {.pid = (pid_t)req->pid};
	struct connect_target t = {.pid = (pid_t)req->pid};
	uint64_t len = req->data.args[2];
	ssize_t got;

	if (len < sizeof(sa_family_t))
		return -EFAULT;
	if (len > sizeof(t.addr))
		len = sizeof(t.addr);
	got = mem_read(&mc, &t.addr, (size_t)len, req->data.args[1]);
	if (got < (ssize_t)sizeof(sa_family_t))
		return notifier_id_valid(n, req->id) == 0 ? -ENOENT : -EFAULT;
	if (!((t.addr.ss_family == AF_INET && got >= (ssize_t)sizeof(struct sockaddr_in)) ||
	      (t.addr.ss_family == AF_INET6 && got >= (ssize_t)sizeof(struct sockaddr_in6))))
		return -EAFNOSUPPORT;
	connect_target_read_process(&t, (pid_t)req->pid);
	/* What was read belongs to the process only if it is still the one that asked. */
	if (notifier_id_valid(n, req->id) == 0)
		return -ENOENT;
	*ret = t;
	return 0;
}
