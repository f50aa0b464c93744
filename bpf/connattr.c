/* Loader of the connection attribution (connattr.bpf.c). See connattr.h. */
#include "bpf/connattr.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <linux/types.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/cleanup.h"
#include "bpf/connattr_abi.h"
#include "bpf/connattr.skel.h"
#include "bpf/inet_addr.h"

#define CONNATTR_PROGS 3

struct connattr {
	struct connattr_bpf *skel;
	struct bpf_link *links[CONNATTR_PROGS];
	size_t n_links;
};

/* The initial pid namespace's inode (PROC_PID_INIT_INO): the only one whose pids
 * bpf_get_current_pid_tgid() gives. */
#define PID_NS_INIT_INO 0xEFFFFFFCU

int connattr_open(struct connattr **ret, struct cl_error *err)
{
	libbpf_print_fn_t saved_print;
	struct connattr_bpf *skel;
	struct connattr *c;
	struct stat st;
	int rc;

	/* In another pid namespace (a container), the pids noted would name other processes, or
	 * none, in our /proc. */
	if (stat("/proc/self/ns/pid", &st) < 0)
		return cl_error_set(err, -errno, "connection attribution: /proc/self/ns/pid: %m");
	if (st.st_ino != PID_NS_INIT_INO)
		return cl_error_set(err, -EOPNOTSUPP,
		                    "connection attribution: not in the initial pid namespace");
	/* Unprivileged, the load fails by design: the caller falls back, libbpf keeps quiet. */
	saved_print = libbpf_set_print(NULL);
	skel = connattr_bpf__open_and_load();
	rc = skel ? 0 : -errno;
	libbpf_set_print(saved_print);
	if (!skel)
		return cl_error_set(err, rc, "connection attribution: load: %s", strerror(-rc));
	c = calloc(1, sizeof(*c));
	if (!c) {
		connattr_bpf__destroy(skel);
		return cl_error_set(err, -ENOMEM, "connection attribution: out of memory");
	}
	c->skel = skel;
	*ret = c;
	return 0;
}

static void detach(struct connattr *c)
{
	while (c->n_links > 0)
		bpf_link__destroy(c->links[--c->n_links]);
}

int connattr_attach(struct connattr *c, int cgroup_fd, struct cl_error *err)
{
	/* sockops last: it files what connect4/6 kept. */
	struct bpf_program *progs[CONNATTR_PROGS] = {c->skel->progs.connattr_connect4,
	                                             c->skel->progs.connattr_connect6,
	                                             c->skel->progs.connattr_sockops};

	if (c->n_links > 0)
		return cl_error_set(err, -EBUSY, "connection attribution: already attached");
	for (size_t i = 0; i < CONNATTR_PROGS; i++) {
		struct bpf_link *link = bpf_program__attach_cgroup(progs[i], cgroup_fd);

		if (!link) {
			int rc = -errno;

			detach(c);
			return cl_error_set(err, rc, "connection attribution: attaching %s: %s",
			                    bpf_program__name(progs[i]), strerror(-rc));
		}
		c->links[c->n_links++] = link;
	}
	return 0;
}

int connattr_lookup(const struct connattr *c, const struct sockaddr *peer, socklen_t peer_len,
                    pid_t *ret_tgid, pid_t *ret_pid)
{
	struct inet_addr_abi key;
	struct connattr_abi_who who;
	int rc;

	rc = inet_addr_from_sockaddr(peer, peer_len, &key);
	if (rc < 0)
		return rc;
	if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.who_by_peer), &key, &who) < 0)
		return errno == ENOENT ? -ENOENT : -errno;
	if (who.tgid == 0 || who.tgid > INT32_MAX || who.pid > INT32_MAX)
		return -ENOENT;
	*ret_tgid = (pid_t)who.tgid;
	*ret_pid = (pid_t)who.pid;
	return 0;
}

void connattr_free(struct connattr *c)
{
	if (!c)
		return;
	detach(c);
	connattr_bpf__destroy(c->skel);
	free(c);
}
