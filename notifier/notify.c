#include "notifier/notify.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "notifier/file_facts.h"
#include "notifier/view.h"

/* Paths remembered for notifier_resolve_hint(): the commands a build runs over and over. */
#define RESOLVE_HINTS 256

struct notifier {
	int fd;
	bool sync_wake_up;
	/* The kernel's structs may be larger than ours (newer kernels); RECV and SEND use
	 * buffers of the kernel's size, allocated once. */
	struct seccomp_notif *req;
	size_t req_size;
	struct seccomp_notif_resp *resp;
	size_t resp_size;
	/* Looked up once for every exec read, valid in the process that made the notifier
	 * (own_pid): /proc/self/fd as a directory fd, and the identity of our root. */
	pid_t own_pid;
	struct notifier_own own;
	struct exec_view *view; /* not owned */
	bool fixed_root;        /* every target's root is the view's (notifier_set_fixed_root) */
	char *fixed_root_link;  /* its name from our root; NULL when it is our root */
	struct file_facts_table *facts;
	struct {
		uint32_t path_hash; /* 0: unused */
		bool symlinks;
	} hints[RESOLVE_HINTS];
};

/* Our pid without a getpid(2) per exec: known once, forgotten in a child of fork() (the
 * handler runs in every fork of the process; a raw clone's child never reads an exec).
 * Atomic: the exec guards' threads read their notifications without the loop's lock. */
static pid_t cached_pid;

static void forget_pid(void)
{
	__atomic_store_n(&cached_pid, 0, __ATOMIC_RELAXED);
}

static void remember_forks(void)
{
	(void)pthread_atfork(NULL, NULL, forget_pid);
}

static pid_t own_pid(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pid_t pid = __atomic_load_n(&cached_pid, __ATOMIC_RELAXED);

	if (pid == 0) {
		(void)pthread_once(&once, remember_forks);
		pid = getpid();
		__atomic_store_n(&cached_pid, pid, __ATOMIC_RELAXED);
	}
	return pid;
}

int notifier_new(int listener_fd, struct notifier **ret)
{
	struct seccomp_notif_sizes sizes = {0};
	struct notifier *n;

	if (listener_fd < 0)
		return -EBADF;
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0)
		return -errno;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->fd = -EBADF;
	n->own.fd_dir = -EBADF;
	n->req_size = sizes.seccomp_notif > sizeof(*n->req) ? sizes.seccomp_notif : sizeof(*n->req);
	n->resp_size = sizes.seccomp_notif_resp > sizeof(*n->resp) ? sizes.seccomp_notif_resp
	                                                           : sizeof(*n->resp);
	n->req = calloc(1, n->req_size);
	n->resp = calloc(1, n->resp_size);
	if (!n->req || !n->resp) {
		notifier_free(n);
		return -ENOMEM;
	}
	n->fd = listener_fd;
	n->own_pid = own_pid();
	/* Best effort: without them, reads walk /proc/self/fd and stat "/" each time. */
	n->own.fd_dir = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (n->own.fd_dir < 0)
		n->own.fd_dir = -EBADF;
	{
		struct stat st;

		if (stat("/", &st) == 0) {
			n->own.root_known = true;
			n->own.root_dev = st.st_dev;
			n->own.root_ino = st.st_ino;
		}
	}
	/* Best effort: the fallback is only slower. */
	(void)notifier_set_sync_wake_up(n, true);
	if (file_facts_new(&n->facts) < 0)
		n->facts = NULL; /* every read learns it all */
	*ret = n;
	return 0;
}

void notifier_set_view(struct notifier *n, struct exec_view *view)
{
	n->view = view;
	if (!view)
		(void)notifier_set_fixed_root(n, false);
}

int notifier_set_fixed_root(struct notifier *n, bool fixed)
{
	char self[64], link[PATH_MAX];
	struct stat st;
	ssize_t len;
	int root;

	free(n->fixed_root_link);
	n->fixed_root_link = NULL;
	n->fixed_root = false;
	if (!fixed)
		return 0;
	if (!n->view)
		return -EINVAL;
	root = exec_view_root(n->view);
	if (fstat(root, &st) < 0)
		return -errno;
	/* A root that is not ours: /proc shows the target's paths from our root, and reads take
	 * this prefix off (what readlink /proc/PID/root would give for every target). */
	if (!n->own.root_known || st.st_dev != n->own.root_dev || st.st_ino != n->own.root_ino) {
		snprintf(self, sizeof(self), "/proc/self/fd/%d", root);
		len = readlink(self, link, sizeof(link));
		if (len < 0)
			return -errno;
		if ((size_t)len >= sizeof(link))
			return -ENAMETOOLONG;
		n->fixed_root_link = strndup(link, (size_t)len);
		if (!n->fixed_root_link)
			return -ENOMEM;
	}
	n->fixed_root = true;
	return 0;
}

bool notifier_fixed_root(const struct notifier *n, int *ret_fd, const char **ret_link)
{
	if (!n->fixed_root || !n->view)
		return false;
	*ret_fd = exec_view_root(n->view);
	*ret_link = n->fixed_root_link;
	return true;
}

struct file_facts_table *notifier_file_facts(struct notifier *n)
{
	return n->facts;
}

bool *notifier_resolve_hint(struct notifier *n, const char *path)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	unsigned i;

	/* By the whole path, not its directory: in a directory of symlinks and files alike
	 * (/usr/bin/sh -> dash beside /usr/bin/true), a file's lookup without a symlink is the
	 * one that also gives its name (resolve.h), and a symlink's neighbours keep it. */
	for (const char *p = path; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	h |= 1; /* never 0, the unused slot's */
	i = h % RESOLVE_HINTS;
	if (n->hints[i].path_hash != h) {
		n->hints[i].path_hash = h;
		n->hints[i].symlinks = false;
	}
	return &n->hints[i].symlinks;
}

struct exec_view *notifier_view(const struct notifier *n)
{
	return n->view;
}

void notifier_free(struct notifier *n)
{
	if (!n)
		return;
	if (n->fd >= 0)
		close(n->fd);
	if (n->own.fd_dir >= 0)
		close(n->own.fd_dir);
	free(n->fixed_root_link);
	file_facts_free(n->facts);
	free(n->req);
	free(n->resp);
	free(n);
}

int notifier_fd(const struct notifier *n)
{
	return n->fd;
}

void notifier_own(const struct notifier *n, struct notifier_own *ret)
{
	/* A forked child shares neither our fd table nor (necessarily) our root. */
	if (own_pid() != n->own_pid) {
		*ret = (struct notifier_own){.fd_dir = -EBADF};
		return;
	}
	*ret = n->own;
}

bool notifier_sync_wake_up(const struct notifier *n)
{
	return n->sync_wake_up;
}

int notifier_set_sync_wake_up(struct notifier *n, bool on)
{
	if (ioctl(n->fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
	          on ? SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP : 0UL) < 0)
		return -errno;
	n->sync_wake_up = on;
	return 0;
}

int notifier_receive(struct notifier *n, struct seccomp_notif *ret_req)
{
	/* The kernel refuses a buffer that is not zeroed. */
	memset(n->req, 0, n->req_size);
	if (ioctl(n->fd, SECCOMP_IOCTL_NOTIF_RECV, n->req) < 0)
		return -errno;
	memcpy(ret_req, n->req, sizeof(*ret_req));
	return 0;
}

int notifier_id_valid(const struct notifier *n, uint64_t id)
{
	if (ioctl(n->fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0)
		return 1;
	if (errno == ENOENT)
		return 0;
	return -errno;
}

static int send_resp(struct notifier *n, uint64_t id, int error, uint32_t flags)
{
	memset(n->resp, 0, n->resp_size);
	n->resp->id = id;
	n->resp->error = error;
	n->resp->val = 0;
	n->resp->flags = flags;
	if (ioctl(n->fd, SECCOMP_IOCTL_NOTIF_SEND, n->resp) < 0)
		return -errno; /* ENOENT: the target died or was interrupted; normal */
	return 0;
}

int notifier_continue(struct notifier *n, uint64_t id)
{
	return send_resp(n, id, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE);
}

int notifier_deny(struct notifier *n, uint64_t id, int error)
{
	if (error <= 0 || error > 4095)
		error = EPERM; /* a zero error with no CONTINUE flag would be "success, returns 0"
		                */
	return send_resp(n, id, -error, 0);
}

#ifndef SECCOMP_IOCTL_NOTIF_ADDFD
struct seccomp_notif_addfd {
	__u64 id;
	__u32 flags;
	__u32 srcfd;
	__u32 newfd;
	__u32 newfd_flags;
};
#define SECCOMP_IOCTL_NOTIF_ADDFD SECCOMP_IOW(3, struct seccomp_notif_addfd)
#endif
#ifndef SECCOMP_ADDFD_FLAG_SEND
#define SECCOMP_ADDFD_FLAG_SEND (1UL << 1)
#endif

int notifier_answer_fd(struct notifier *n, uint64_t id, int fd, bool cloexec)
{
	struct seccomp_notif_addfd addfd = {
	        .id = id,
	        .flags = SECCOMP_ADDFD_FLAG_SEND,
	        .srcfd = (__u32)fd,
	        .newfd = 0,
	        .newfd_flags = cloexec ? O_CLOEXEC : 0,
	};
	int r;

	if (fd < 0)
		return -EBADF;
	r = ioctl(n->fd, SECCOMP_IOCTL_NOTIF_ADDFD, &addfd);
	return r < 0 ? -errno : r;
}
