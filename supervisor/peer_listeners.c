/* Cloister's own listening ports in this network namespace; see peer_listeners.h. */
#include "supervisor/peer_listeners.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/cleanup.h"

/* Listening sockets looked at, at most: a host with more is refused (-E2BIG) rather than
 * half-scanned. */
#define MAX_LISTENERS 65536
#define TCP_LISTEN    0x0a

struct listener {
	uint64_t inode;
	uint16_t port;
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
	const struct listener *x = a, *y = b;

	return (x->inode > y->inode) - (x->inode < y->inode);
}

static int cmp_port(const void *a, const void *b)
{
	const uint16_t *x = a, *y = b;

	return (*x > *y) - (*x < *y);
}

/* Append the LISTEN sockets of one /proc/net file to *v. */
static int read_listeners(const char *path, struct listener **v, size_t *n, size_t *cap)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	_cleanup_free_ char *line = NULL;
	size_t size = 0;

	if (!f)
		return -errno;
	while (getline(&line, &size, f) > 0) {
		struct listener l;

		if (!peer_listeners_parse_line(line, &l.port, &l.inode))
			continue;
		if (*n == MAX_LISTENERS)
			return -E2BIG;
		if (*n == *cap) {
			size_t c = *cap ? *cap * 2 : 64;
			struct listener *nv = realloc(*v, c * sizeof(*nv));

			if (!nv)
				return -ENOMEM;
			*v = nv;
			*cap = c;
		}
		(*v)[(*n)++] = l;
	}
	return 0;
}

static bool has_port(const uint16_t *ports, size_t n, uint16_t port)
{
	for (size_t i = 0; i < n; i++)
		if (ports[i] == port)
			return true;
	return false;
}

/* Add the ports of PID's sockets found in L (sorted by inode) to PORTS. */
static void ports_of(const char *proc, const char *pid, const struct listener *l, size_t n_l,
                     uint16_t *ports, size_t max, size_t *n, bool *overflow)
{
	char path[256];
	DIR *d;
	struct dirent *de;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s/fd", proc, pid) >= sizeof(path))
		return;
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char target[64], lpath[512];
		unsigned long long inode;
		struct listener key, *hit;
		ssize_t len;
		char tail;

		if (de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(lpath, sizeof(lpath), "%s/%s", path, de->d_name) >=
		    sizeof(lpath))
			continue;
		len = readlink(lpath, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if (sscanf(target, "socket:[%llu%c", &inode, &tail) != 2 || tail != ']')
			continue;
		key.inode = inode;
		hit = bsearch(&key, l, n_l, sizeof(*l), cmp_inode);
		if (!hit || has_port(ports, *n, hit->port))
			continue;
		if (*n == max) {
			*overflow = true;
			continue;
		}
		ports[(*n)++] = hit->port;
	}
	closedir(d);
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

int peer_listeners_scan(const char *proc, const char *exe_name, uint16_t *ports, size_t max,
                        size_t *ret_n)
{
	_cleanup_free_ struct listener *l = NULL;
	size_t n_l = 0, cap = 0, n = 0;
	bool overflow = false;
	char path[256];
	DIR *d;
	struct dirent *de;
	int r;

	if ((size_t)snprintf(path, sizeof(path), "%s/net/tcp6", proc) >= sizeof(path))
		return -ENAMETOOLONG;
	snprintf(path, sizeof(path), "%s/net/tcp", proc);
	r = read_listeners(path, &l, &n_l, &cap);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "%s/net/tcp6", proc);
	r = read_listeners(path, &l, &n_l, &cap);
	if (r < 0 && r != -ENOENT) /* no IPv6 in this kernel: fine */
		return r;
	if (n_l > 1)
		qsort(l, n_l, sizeof(*l), cmp_inode);

	d = opendir(proc);
	if (!d)
		return -errno;
	while (n_l > 0 && (de = readdir(d))) {
		char exe[512], link[PATH_MAX];
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
		if (peer_listeners_exe_is(link, exe_name))
			ports_of(proc, de->d_name, l, n_l, ports, max, &n, &overflow);
	}
	closedir(d);

	if (n > 1)
		qsort(ports, n, sizeof(*ports), cmp_port);
	*ret_n = n;
	return overflow ? -E2BIG : 0;
}
