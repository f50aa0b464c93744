/* Reading an open notification; see open_target.h. */
#include "notifier/open_target.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "notifier/notify.h"
#include "notifier/path.h"
#include "notifier/remote_mem.h"

#define STATUS_MAX (64 * 1024)

void open_target_free(struct open_target *t)
{
	if (!t)
		return;
	if (t->piddir >= 0)
		close(t->piddir);
	free(t->path);
	free(t->abs_path);
	free(t->cwd);
	if (t->argv)
		for (size_t i = 0; i < t->argc; i++)
			free(t->argv[i]);
	free(t->argv);
	free(t);
}

/* process_vm_readv by pid: safe because the notification is checked valid after the reads. */
static ssize_t mem_read(void *ctx, void *buf, size_t len, uint64_t addr)
{
	pid_t pid = *(pid_t *)ctx;
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	ssize_t n;

	if (addr > INT64_MAX)
		return -EFAULT;
	do
		n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

static int readlink_alloc(int dirfd, const char *name, char **ret)
{
	char buf[PATH_MAX];
	ssize_t n = readlinkat(dirfd, name, buf, sizeof(buf));

	if (n < 0)
		return -errno;
	if ((size_t)n >= sizeof(buf))
		return -ENAMETOOLONG;
	*ret = strndup(buf, (size_t)n);
	return *ret ? 0 : -ENOMEM;
}

/* The whole of a small /proc file into BUF (SIZE - 1 bytes at most, NUL-terminated). */
static ssize_t read_small(int dirfd, const char *name, char *buf, size_t size)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	size_t len = 0;

	if (fd < 0)
		return -errno;
	while (len + 1 < size) {
		ssize_t n = read(fd, buf + len, size - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return (ssize_t)len;
}

static int read_status(int piddir, struct open_target *t)
{
	_cleanup_free_ char *buf = malloc(STATUS_MAX);
	const char *u;
	ssize_t len;

	if (!buf)
		return -ENOMEM;
	len = read_small(piddir, "status", buf, STATUS_MAX);
	if (len < 0)
		return (int)len;
	u = strstr(buf, "\nUmask:");
	t->umask = u ? (mode_t)strtoul(u + 7, NULL, 8) & 0777 : 022;
	return proc_status_parse(buf, (size_t)len, &t->ids);
}

static int read_cmdline(int piddir, struct open_target *t)
{
	char buf[OPEN_TARGET_MAX_CMDLINE + 1];
	ssize_t len = read_small(piddir, "cmdline", buf, sizeof(buf));
	size_t n = 0;

	if (len <= 0)
		return 0; /* a zombie or a kernel thread: no command line */
	/* Whole strings only. */
	while (len > 0 && buf[len - 1] != '\0')
		len--;
	for (ssize_t i = 0; i < len; i++)
		n += buf[i] == '\0';
	t->argv = calloc(n + 1, sizeof(*t->argv));
	if (!t->argv)
		return -ENOMEM;
	for (size_t i = 0, off = 0; i < n; i++) {
		t->argv[i] = strdup(buf + off);
		if (!t->argv[i])
			return -ENOMEM;
		t->argc++;
		off += strlen(buf + off) + 1;
	}
	return 0;
}

/* /proc/PID opened, then the notification checked: the directory is that process's. */
static int open_piddir(struct notifier *n, struct open_target *t)
{
	char dir[32];
	int fd, open_errno, r;

	if (t->piddir >= 0)
		return 0;
	snprintf(dir, sizeof(dir), "/proc/%d", (int)t->pid);
	fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	open_errno = errno;
	r = notifier_id_valid(n, t->id);
	if (r <= 0 || fd < 0) {
		if (fd >= 0)
			close(fd);
		return r == 0 ? -ESRCH : r < 0 ? r : -open_errno;
	}
	t->piddir = fd;
	return 0;
}

int notifier_read_open(struct notifier *n, const struct seccomp_notif *req,
                       struct open_target **ret, struct cl_error *err)
{
	_cleanup_(open_target_freep) struct open_target *t = NULL;
	_cleanup_free_ char *base = NULL;
	struct remote_mem mem;
	uint64_t path_addr;
	pid_t pid = (pid_t)req->pid;
	ssize_t len;
	int r;

	if (req->data.arch != AUDIT_ARCH_X86_64)
		return cl_error_set(err, -EINVAL, "notification for foreign arch 0x%x",
		                    req->data.arch);
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->id = req->id;
	t->pid = pid;
	t->piddir = -EBADF;
	t->dirfd = AT_FDCWD;
	switch (req->data.nr) {
	case __NR_open:
		path_addr = req->data.args[0];
		t->flags = (int)req->data.args[1];
		t->mode = (mode_t)req->data.args[2] & 07777;
		break;
	case __NR_openat:
		t->dirfd = (int)req->data.args[0];
		path_addr = req->data.args[1];
		t->flags = (int)req->data.args[2];
		t->mode = (mode_t)req->data.args[3] & 07777;
		break;
	case __NR_creat:
		path_addr = req->data.args[0];
		t->flags = O_CREAT | O_WRONLY | O_TRUNC;
		t->mode = (mode_t)req->data.args[1] & 07777;
		break;
	default:
		return cl_error_set(err, -EINVAL, "notification for syscall %d, not an open",
		                    req->data.nr);
	}

	/* The path by pid (process_vm_readv): the ID_VALID check after the reads vouches that it
	 * was this process's. /proc/PID only for a relative path: an absolute one (most writes)
	 * needs nothing more to be decided. */
	remote_mem_init(&mem, mem_read, &pid);
	len = remote_mem_read_string(&mem, path_addr, PATH_MAX, &t->path);
	if (len == -E2BIG)
		len = -ENAMETOOLONG;
	if (len < 0)
		goto gone_or_fail;
	if (len == 0) {
		len = -ENOENT; /* the kernel's answer to "" without AT_EMPTY_PATH */
		goto gone_or_fail;
	}
	if (t->path[0] != '/') {
		r = open_piddir(n, t);
		if (r == -ESRCH)
			return r;
		if (r < 0)
			return cl_error_set(err, r, "opening /proc/%d: %s", (int)pid, strerror(-r));
	}
	if (t->path[0] != '/' && t->dirfd == AT_FDCWD) {
		r = readlink_alloc(t->piddir, "cwd", &t->cwd);
		if (r < 0) {
			len = r;
			goto gone_or_fail;
		}
	} else if (t->path[0] != '/') {
		char name[32];

		if (t->dirfd < 0) {
			len = -EBADF;
			goto gone_or_fail;
		}
		snprintf(name, sizeof(name), "fd/%d", t->dirfd);
		r = readlink_alloc(t->piddir, name, &base);
		if (r == -ENOENT)
			r = -EBADF;
		if (r >= 0 && base[0] != '/')
			r = -ENOTDIR; /* a pipe, a socket, an anonymous inode */
		if (r < 0) {
			len = r;
			goto gone_or_fail;
		}
	}
	r = path_join(base ? base : t->cwd ? t->cwd : "/", t->path, &t->abs_path);
	if (r < 0) {
		len = r;
		goto gone_or_fail;
	}
	if (notifier_id_valid(n, req->id) == 0)
		return -ESRCH;
	*ret = TAKE_PTR(t);
	return 0;

gone_or_fail:
	if (notifier_id_valid(n, req->id) == 0)
		return -ESRCH;
	return cl_error_set(err, (int)len, "pid %d: reading an open of %s: %s", (int)pid,
	                    t->path ? t->path : "?", strerror((int)-len));
}

int notifier_read_open_process(struct notifier *n, struct open_target *t)
{
	ssize_t len;
	int r;

	if (t->process_read)
		return 0;
	r = open_piddir(n, t);
	if (r < 0)
		return r;
	if (!t->cwd) {
		r = readlink_alloc(t->piddir, "cwd", &t->cwd);
		if (r < 0 && notifier_id_valid(n, t->id) == 0)
			return -ESRCH;
	}
	r = read_status(t->piddir, t);
	if (r >= 0)
		r = read_cmdline(t->piddir, t);
	if (r >= 0) {
		len = readlinkat(t->piddir, "exe", t->exe, sizeof(t->exe) - 1);
		t->exe[len > 0 ? len : 0] = '\0';
	}
	if (notifier_id_valid(n, t->id) == 0)
		return -ESRCH;
	if (r < 0)
		return r;
	t->process_read = true;
	return 0;
}
