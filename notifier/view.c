/* The sandbox's own view of the file system; see view.h. */
#include "notifier/view.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cleanup.h"

/* A mount table larger than this is refused (a namespace has hundreds of mounts at most). */
#define MOUNTINFO_MAX (16 * 1024 * 1024)

struct exec_view {
	int root;
	int mountinfo;
	struct exec_view_mount *mounts;
	size_t n_mounts;
	/* The kernel's internal mount of memfds (id 0 here): in no namespace, so nothing can be
	 * mounted over a name there; a memfd's own name ("/memfd:NAME (deleted)") is all it
	 * has. */
	struct exec_view_mount memfd;
	bool memfd_known;
};

static int cmp_mount(const void *a, const void *b)
{
	const struct exec_view_mount *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* One unsigned decimal number at *p, up to a separator; advances *p. */
static int parse_uint(const char **p, const char *end, uint64_t max, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;

	if (s >= end || *s < '0' || *s > '9')
		return -EBADMSG;
	while (s < end && *s >= '0' && *s <= '9') {
		if (v > (max - (uint64_t)(*s - '0')) / 10)
			return -EBADMSG;
		v = v * 10 + (uint64_t)(*s - '0');
		s++;
	}
	*p = s;
	*ret = v;
	return 0;
}

int exec_view_parse_mountinfo(const char *buf, size_t len, struct exec_view_mount **ret,
                              size_t *ret_n)
{
	_cleanup_free_ struct exec_view_mount *m = NULL;
	const char *p = buf, *end = buf + len;
	size_t n = 0, cap = 0;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		uint64_t id, parent, major, minor;

		if (!eol)
			eol = end;
		if (eol == p) {
			p = eol + 1;
			continue;
		}
		/* "ID PARENT MAJOR:MINOR ROOT MOUNTPOINT …": only the first three matter. */
		if (parse_uint(&p, eol, UINT64_MAX, &id) < 0 || p >= eol || *p++ != ' ' ||
		    parse_uint(&p, eol, UINT64_MAX, &parent) < 0 || p >= eol || *p++ != ' ' ||
		    parse_uint(&p, eol, 0xfff, &major) < 0 || p >= eol || *p++ != ':' ||
		    parse_uint(&p, eol, 0xfffff, &minor) < 0 || p >= eol || *p != ' ')
			return -EBADMSG;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct exec_view_mount *grown;

			if (n >= EXEC_VIEW_MAX_MOUNTS)
				return -E2BIG;
			grown = reallocarray(m, ncap, sizeof(*grown));
			if (!grown)
				return -ENOMEM;
			m = grown;
			cap = ncap;
		}
		m[n].id = id;
		m[n].kdev = (uint32_t)(major << 20 | minor);
		n++;
		p = eol + 1;
	}
	if (n > 1)
		qsort(m, n, sizeof(*m), cmp_mount);
	*ret = TAKE_PTR(m);
	*ret_n = n;
	return 0;
}

static int view_reload(struct exec_view *v)
{
	_cleanup_free_ char *buf = NULL;
	struct exec_view_mount *mounts = NULL;
	size_t len = 0, cap = 0, n = 0;
	int r;

	if (lseek(v->mountinfo, 0, SEEK_SET) < 0)
		return -errno;
	for (;;) {
		ssize_t got;

		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 16384;
			char *grown;

			if (ncap > MOUNTINFO_MAX)
				return -E2BIG;
			grown = realloc(buf, ncap);
			if (!grown)
				return -ENOMEM;
			buf = grown;
			cap = ncap;
		}
		got = read(v->mountinfo, buf + len, cap - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			break;
		len += (size_t)got;
	}
	r = exec_view_parse_mountinfo(buf, len, &mounts, &n);
	if (r < 0)
		return r;
	free(v->mounts);
	v->mounts = mounts;
	v->n_mounts = n;
	return 0;
}

/* The kernel flags the mountinfo of a namespace whose mounts changed since it was last read. */
static int view_refresh(struct exec_view *v)
{
	struct pollfd p = {.fd = v->mountinfo, .events = POLLPRI};
	int r;

	do
		r = poll(&p, 1, 0);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r > 0 && (p.revents & (POLLPRI | POLLERR)))
		return view_reload(v);
	return 0;
}

int exec_view_new(int root_fd, int mountinfo_fd, struct exec_view **ret)
{
	struct exec_view *v = calloc(1, sizeof(*v));
	int r;

	if (!v) {
		close(root_fd);
		close(mountinfo_fd);
		return -ENOMEM;
	}
	v->root = root_fd;
	v->mountinfo = mountinfo_fd;
	{
		_cleanup_close_ int mfd = memfd_create("cloister-view-probe", MFD_CLOEXEC);
		struct statx x;

		if (mfd >= 0 && statx(mfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &x) == 0 &&
		    (x.stx_mask & STATX_MNT_ID)) {
			v->memfd.id = x.stx_mnt_id;
			v->memfd.kdev = x.stx_dev_major << 20 | (x.stx_dev_minor & 0xfffff);
			v->memfd_known = true;
		}
	}
	r = view_reload(v);
	if (r < 0) {
		exec_view_free(v);
		return r;
	}
	*ret = v;
	return 0;
}

void exec_view_free(struct exec_view *v)
{
	if (!v)
		return;
	if (v->root >= 0)
		close(v->root);
	if (v->mountinfo >= 0)
		close(v->mountinfo);
	free(v->mounts);
	free(v);
}

int exec_view_find_mount(struct exec_view *v, uint64_t mnt_id, uint32_t *ret_kdev)
{
	struct exec_view_mount key = {.id = mnt_id};
	const struct exec_view_mount *m;
	int r;

	/* Every time: a mount id freed by an unmount may be handed to a new mount elsewhere. */
	r = view_refresh(v);
	if (r < 0)
		return r;
	m = v->n_mounts ? bsearch(&key, v->mounts, v->n_mounts, sizeof(key), cmp_mount) : NULL;
	if (!m && v->memfd_known && mnt_id == v->memfd.id)
		m = &v->memfd;
	if (!m)
		return 0;
	*ret_kdev = m->kdev;
	return 1;
}

int exec_view_root(const struct exec_view *v)
{
	return v->root;
}

int exec_view_open(const struct exec_view *v, const char *path)
{
	struct open_how how = {
	        .flags = O_PATH | O_CLOEXEC,
	        .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd = -1;

	if (path[0] != '/')
		return -EINVAL;
	/* EAGAIN: a rename or mount raced the scoped lookup. */
	for (int i = 0; i < 4; i++) {
		fd = syscall(SYS_openat2, v->root, path, &how, sizeof(how));
		if (fd >= 0 || errno != EAGAIN)
			break;
	}
	return fd < 0 ? -errno : (int)fd;
}
