/* Cloister's own listening ports in this network namespace; see peer_listeners.h. */
#include "supervisor/egress/peer_listeners.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"

/* Socket inodes of Cloister's processes looked at, at most, and fds per process: a process
 * of a trusted owner (root, or the caller's) may hold many; anyone else's is capped, since
 * anybody can run a program named cloister-supervisor. */
#define MAX_INODES      262144
#define MAX_FDS_TRUSTED 65536
#define MAX_FDS_OTHER   1024
#define TCP_LISTEN      0x0a

struct sock {
	uint64_t inode;
	bool trusted;
};

int peer_listeners_parse_line(const char *line, uint16_t *ret_port, uint64_t *ret_inode)
{
	unsigned port, state;
	unsigned long long inode;

	/* "  0: 0100007F:270F 00000000:0000 0A 00000000:00000000 00:00000000 00000000  0  0 123" */
	if (sscanf(line,
	           " %*u: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x %*x:%*x %*x:%*x %*x %*u %*u %llu",
	           &port, &state, &inode) != 3)
		return 0;
	if (state != TCP_LISTEN || port > 65535 || inode == 0)
		return 0;
	*ret_port = (uint16_t)port;
	*ret_inode = inode;
	return 1;
}

int peer_listeners_exe_is(const char *link, const char *name)
{
	static const char deleted[] = " (deleted)";
	const char *base = strrchr(link, '/');
	size_t n = strlen(name);

	base = base ? base + 1 : link;
	if (strncmp(base, name, n) != 0)
		return 0;
	return base[n] == '\0' || strcmp(base + n, deleted) == 0;
}

static int cmp_inode(const void *a, const void *b)
{
	const struct sock *x = a, *y = b;

	return (x->inode > y->inode) - (x->inode < y->inode);
}

static int cmp_port(const void *a, const void *b)
{
	const uint16_t *x = a, *y = b;

	return (*x > *y) - (*x < *y);
}

static bool has_port(const uint16_t *ports, size_t n, uint16_t port)
{
	for (size_t i = 0; i < n; i++)
		if (ports[i] == port)
			return true;
	return false;
}

struct scan {
	struct sock *socks;
	size_t n, cap;
	bool others_cut; /* another owner's sockets did not all fit */
};

/* Add the socket inodes among PID's first LIMIT fds. -E2BIG when a trusted process's do not
 * fit (an untrusted one's are cut, and others_cut says so). */
static int socks_of(const char *proc, const char *pid, bool trusted, struct scan *sc)
{
	size_t limit = trusted ? MAX_FDS_TRUSTED : MAX_FDS_OTHER, seen = 0;
	char path[256];
	DIR *d;
	struct dirent *de;
	int r = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s/fd", proc, pid) >= sizeof(path))
		return 0;
	d = opendir(path);
	if (!d)
		return 0; /* gone, or not ours to look into */
	while ((de = readdir(d))) {
		char target[64], lpath[512];
		unsigned long long inode;
		ssize_t len;
		char tail;

		if (de->d_name[0] == '.')
			continue;
		if (seen++ == limit) {
			if (trusted)
				r = -E2BIG;
			else
				sc->others_cut = true;
			break;
		}
		if ((size_t)snprintf(lpath, sizeof(lpath), "%s/%s", path, de->d_name) >=
		    sizeof(lpath))
			continue;
		len = readlink(lpath, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if (sscanf(target, "socket:[%llu%c", &inode, &tail) != 2 || tail != ']')
			continue;
		if (sc->n == MAX_INODES) {
			if (trusted)
				r = -E2BIG;
			else
				sc->others_cut = true;
			break;
		}
		if (sc->n == sc->cap) {
			size_t c = sc->cap ? sc->cap * 2 : 64;
			struct sock *nv = realloc(sc->socks, c * sizeof(*nv));

			if (!nv) {
				r = -ENOMEM;
				break;
			}
			sc->socks = nv;
			sc->cap = c;
		}
		sc->socks[sc->n++] = (struct sock){.inode = inode, .trusted = trusted};
	}
	closedir(d);
	return r;
}

/* Stream one /proc/net file: each LISTEN socket that is one of SC's goes to TRUSTED or OTHER
 * (distinct ports; OTHER bounded by MAX, the caller's room). */
static int match_listeners(const char *path, const struct scan *sc, uint16_t *trusted,
                           size_t *n_trusted, size_t max_trusted, uint16_t *other, size_t *n_other,
                           size_t max_other, size_t *dropped)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	_cleanup_free_ char *line = NULL;
	size_t size = 0;

	if (!f)
		return -errno;
	while (sc->n > 0 && getline(&line, &size, f) > 0) {
		struct sock key = {0}, *hit;
		uint16_t port;

		if (!peer_listeners_parse_line(line, &port, &key.inode))
			continue;
		hit = bsearch(&key, sc->socks, sc->n, sizeof(*sc->socks), cmp_inode);
		if (!hit)
			continue;
		if (hit->trusted) {
			if (has_port(trusted, *n_trusted, port))
				continue;
			if (*n_trusted == max_trusted)
				return -E2BIG;
			trusted[(*n_trusted)++] = port;
		} else if (!has_port(other, *n_other, port)) {
			if (*n_other == max_other)
				(*dropped)++;
			else
				other[(*n_other)++] = port;
		}
	}
	return 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

int peer_listeners_scan(const char *proc, const char *exe_name, uid_t trusted_uid, uint16_t *ports,
                        size_t max, size_t *ret_n, size_t *ret_dropped)
{
	_cleanup_free_ uint16_t *other = NULL;
	struct scan sc = {0};
	size_t n = 0, n_other = 0, dropped = 0;
	char path[256];
	DIR *d;
	struct dirent *de;
	int r = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/net/tcp6", proc) >= sizeof(path))
		return -ENAMETOOLONG;
	other = calloc(max ? max : 1, sizeof(*other));
	if (!other)
		return -ENOMEM;
	/* First the sockets of Cloister's processes (a few), then the listeners among them: the
	 * host may have any number of listeners, and nobody else's can crowd ours out. */
	d = opendir(proc);
	if (!d)
		return -errno;
	while (r >= 0 && (de = readdir(d))) {
		char exe[512], link[PATH_MAX];
		struct stat st;
		ssize_t len;

		if (!all_digits(de->d_name))
			continue;
		if ((size_t)snprintf(exe, sizeof(exe), "%s/%s/exe", proc, de->d_name) >=
		    sizeof(exe))
			continue;
		len = readlink(exe, link, sizeof(link) - 1);
		if (len <= 0)
			continue; /* gone, or a kernel thread */
		link[len] = '\0';
		if (!peer_listeners_exe_is(link, exe_name) ||
		    fstatat(dirfd(d), de->d_name, &st, 0) < 0)
			continue;
		r = socks_of(proc, de->d_name, st.st_uid == 0 || st.st_uid == trusted_uid, &sc);
	}
	closedir(d);
	if (r >= 0 && sc.n > 1)
		qsort(sc.socks, sc.n, sizeof(*sc.socks), cmp_inode);
	if (r >= 0) {
		snprintf(path, sizeof(path), "%s/net/tcp", proc);
		r = match_listeners(path, &sc, ports, &n, max, other, &n_other, max, &dropped);
	}
	if (r >= 0) {
		snprintf(path, sizeof(path), "%s/net/tcp6", proc);
		r = match_listeners(path, &sc, ports, &n, max, other, &n_other, max, &dropped);
		if (r == -ENOENT) /* no IPv6 in this kernel: fine */
			r = 0;
	}
	free(sc.socks);
	if (r < 0)
		return r;
	/* Other owners' ports fill the room that is left. */
	for (size_t i = 0; i < n_other; i++) {
		if (has_port(ports, n, other[i]))
			continue;
		if (n == max)
			dropped++;
		else
			ports[n++] = other[i];
	}
	if (n > 1)
		qsort(ports, n, sizeof(*ports), cmp_port);
	*ret_n = n;
	*ret_dropped = dropped + (sc.others_cut ? 1 : 0);
	return 0;
}
