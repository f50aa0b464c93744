#include "oci/oci_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/cleanup.h"

/* mkdir -p of path's parent, new components 0700. An existing directory is kept as it is. */
static int make_parent(const char *path, struct cl_error *err)
{
	_cleanup_free_ char *dir = strdup(path);
	char *slash;

	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	for (char *p = dir + 1;; p++) {
		bool last = *p == '\0';

		if (*p != '/' && !last)
			continue;
		*p = '\0';
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return cl_error_set(err, -errno, "mkdir %s: %s", dir, strerror(errno));
		if (last)
			break;
		*p = '/';
	}
	return 0;
}

/* Is anyone listening at addr? Connect tells: ECONNREFUSED means a stale socket file. */
static int remove_stale(const char *path, const struct sockaddr_un *addr, int type,
                        struct cl_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0
		                       : cl_error_set(err, -errno, "%s: %s", path, strerror(errno));
	if (!S_ISSOCK(st.st_mode))
		return cl_error_set(err, -EEXIST, "%s exists and is not a socket", path);
	fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) == 0)
		return cl_error_set(err, -EADDRINUSE, "%s: another process listens there", path);
	if (errno != ECONNREFUSED && errno != EPROTOTYPE)
		return cl_error_set(err, -errno, "%s: %s", path, strerror(errno));
	if (unlink(path) < 0 && errno != ENOENT)
		return cl_error_set(err, -errno, "unlink %s: %s", path, strerror(errno));
	return 0;
}

int oci_socket_listen(const char *path, int type, struct oci_socket *ret, struct cl_error *err)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	_cleanup_close_ int fd = -EBADF;
	_cleanup_free_ char *copy = NULL;
	struct stat st;
	int r;

	if (!path || path[0] != '/')
		return cl_error_set(err, -EINVAL, "socket path must be absolute");
	if (strlen(path) >= sizeof(addr.sun_path))
		return cl_error_set(err, -ENAMETOOLONG, "socket path is longer than %zu bytes",
		                    sizeof(addr.sun_path) - 1);
	memcpy(addr.sun_path, path, strlen(path) + 1);
	copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	r = make_parent(path, err);
	if (r < 0)
		return r;
	r = remove_stale(path, &addr, type, err);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return cl_error_set(err, -errno, "socket: %s", strerror(errno));
	if (bind(fd, (const struct sockaddr *)&addr, sizeof(addr)) < 0)
		return cl_error_set(err, -errno, "bind %s: %s", path, strerror(errno));
	/* The directory is 0700 (or the caller's choice): the window before chmod is closed to
	 * others unless they could reach the directory anyway. */
	if (chmod(path, 0600) < 0 || lstat(path, &st) < 0) {
		r = -errno;
		unlink(path);
		return cl_error_set(err, r, "chmod %s: %s", path, strerror(-r));
	}
	if (listen(fd, 64) < 0) {
		r = -errno;
		unlink(path);
		return cl_error_set(err, r, "listen %s: %s", path, strerror(-r));
	}
	ret->fd = TAKE_FD(fd);
	ret->path = TAKE_PTR(copy);
	ret->dev = st.st_dev;
	ret->ino = st.st_ino;
	return 0;
}

void oci_socket_close(struct oci_socket *s)
{
	struct stat st;

	if (s->path && lstat(s->path, &st) == 0 && st.st_dev == s->dev && st.st_ino == s->ino)
		unlink(s->path);
	free(s->path);
	s->path = NULL;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -EBADF;
}

int oci_socket_accept(const struct oci_socket *s, pid_t *ret_pid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd;

	do
		fd = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
	    (cred.uid != 0 && cred.uid != geteuid())) {
		close(fd);
		return -EPERM;
	}
	*ret_pid = cred.pid;
	return fd;
}
