/* Loader of the --net=host egress redirect (redirect.bpf.c). See redirect.h. */
#include "bpf/redirect.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/types.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/backstop.h"
#include "bpf/inet_addr.h"
#include "bpf/redirect_abi.h"
#include "bpf/redirect.skel.h"
#include "base/cleanup.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

_Static_assert(REDIRECT_REFUSED_MAX == REDIRECT_MAX_REFUSED, "the header says how many");

#define REDIRECT_PROGS 14

struct redirect {
	struct redirect_bpf *skel;
	struct bpf_link *links[REDIRECT_PROGS];
	size_t n_links;
	struct bpf_link *watch[2]; /* post_bind4/6 at the cgroup2 root */
};

static void programs(struct redirect_bpf *skel, struct bpf_program *out[REDIRECT_PROGS])
{
	size_t n = 0;

	out[n++] = skel->progs.redirect_sock_create;
	out[n++] = skel->progs.redirect_connect4;
	out[n++] = skel->progs.redirect_connect6;
	out[n++] = skel->progs.redirect_sendmsg4;
	out[n++] = skel->progs.redirect_sendmsg6;
	out[n++] = skel->progs.redirect_recvmsg4;
	out[n++] = skel->progs.redirect_recvmsg6;
	out[n++] = skel->progs.redirect_getpeername4;
	out[n++] = skel->progs.redirect_getpeername6;
	out[n++] = skel->progs.redirect_bind4;
	out[n++] = skel->progs.redirect_bind6;
	out[n++] = skel->progs.redirect_ingress;
	/* sockops last: it files what connect4/6 kept, so those must be in place. */
	out[n++] = skel->progs.redirect_sockops;
	out[n] = NULL;
}

/* The cookie of our network namespace (what bpf_get_netns_cookie() gives for its sockets). */
static int netns_cookie(__u64 *ret_cookie)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	__u64 cookie = 0;
	socklen_t len = sizeof(cookie);

	if (fd < 0)
		return -errno;
	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &len) < 0)
		return -errno;
	*ret_cookie = cookie;
	return 0;
}

int redirect_open(const struct redirect_config *cfg, struct redirect **ret, struct cl_error *err)
{
	struct redirect_bpf *skel;
	struct redirect *r;
	int rc;

	if (!cfg || cfg->proxy_port == 0 || cfg->dns_port == 0)
		return cl_error_set(err, -EINVAL,
		                    "egress redirect: the listener ports must not be 0");
	skel = redirect_bpf__open();
	if (!skel) {
		rc = -errno;
		return cl_error_set(err, rc, "egress redirect: open: %s", strerror(-rc));
	}
	skel->rodata->proxy_port = htons(cfg->proxy_port);
	skel->rodata->dns_port = htons(cfg->dns_port);
	skel->rodata->own_tgid = (__u32)getpid();
	rc = netns_cookie(&skel->rodata->host_netns_cookie);
	if (rc < 0) {
		redirect_bpf__destroy(skel);
		return cl_error_set(err, rc, "egress redirect: this network namespace's cookie: %s",
		                    strerror(-rc));
	}
	rc = redirect_bpf__load(skel);
	if (rc < 0) {
		redirect_bpf__destroy(skel);
		return cl_error_set(err, rc, "egress redirect: load: %s", strerror(-rc));
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		redirect_bpf__destroy(skel);
		return cl_error_set(err, -ENOMEM, "egress redirect: out of memory");
	}
	r->skel = skel;
	*ret = r;
	return 0;
}

int redirect_attach(struct redirect *r, int cgroup_fd, struct cl_error *err)
{
	struct bpf_program *progs[REDIRECT_PROGS];

	if (r->n_links > 0)
		return cl_error_set(err, -EBUSY, "egress redirect: already attached");
	programs(r->skel, progs);
	for (size_t i = 0; progs[i]; i++) {
		struct bpf_link *link = bpf_program__attach_cgroup(progs[i], cgroup_fd);

		if (!link) {
			int rc = -errno;

			redirect_detach(r);
			return cl_error_set(err, rc, "egress redirect: attaching %s: %s",
			                    bpf_program__name(progs[i]), strerror(-rc));
		}
		r->links[r->n_links++] = link;
	}
	return 0;
}

int redirect_watch_peers(struct redirect *r, struct cl_error *err)
{
	struct bpf_program *progs[] = {r->skel->progs.redirect_peer_bind4,
	                               r->skel->progs.redirect_peer_bind6};
	_cleanup_free_ char *root = NULL;
	_cleanup_close_ int fd = -EBADF;
	int rc;

	if (r->watch[0])
		return cl_error_set(err, -EBUSY, "egress redirect: already watching");
	rc = backstop_cgroup2_mount(&root);
	if (rc < 0)
		return cl_error_set(err, rc, "egress redirect: the cgroup2 hierarchy: %s",
		                    strerror(-rc));
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return cl_error_set(err, -errno, "egress redirect: %s: %m", root);
	for (size_t i = 0; i < ELEMENTSOF(progs); i++) {
		r->watch[i] = bpf_program__attach_cgroup(progs[i], fd);
		if (!r->watch[i]) {
			rc = -errno;
			redirect_detach(r);
			return cl_error_set(err, rc, "egress redirect: attaching %s at %s: %s",
			                    bpf_program__name(progs[i]), root, strerror(-rc));
		}
	}
	return 0;
}

int redirect_refuse_port(struct redirect *r, uint16_t port)
{
	__u16 key = htons(port);
	__u8 one = 1;

	if (port == 0)
		return -EINVAL;
	if (bpf_map_update_elem(bpf_map__fd(r->skel->maps.refused_ports), &key, &one, BPF_ANY) < 0)
		return -errno;
	return 0;
}

void redirect_detach(struct redirect *r)
{
	/* Reverse order: sockops first, so nothing is filed that connect did not keep. */
	while (r->n_links > 0)
		bpf_link__destroy(r->links[--r->n_links]);
	for (size_t i = 0; i < ELEMENTSOF(r->watch); i++) {
		bpf_link__destroy(r->watch[i]);
		r->watch[i] = NULL;
	}
}

int redirect_lookup(struct redirect *r, const struct sockaddr *peer, socklen_t peer_len,
                    struct sockaddr_storage *ret_orig)
{
	struct inet_addr_abi key, val;
	struct sockaddr_storage out;
	int rc;

	rc = inet_addr_from_sockaddr(peer, peer_len, &key);
	if (rc < 0)
		return rc;
	if (bpf_map_lookup_and_delete_elem(bpf_map__fd(r->skel->maps.by_peer), &key, &val) < 0)
		return errno == ENOENT ? -ENOENT : -errno;

	memset(&out, 0, sizeof(out));
	if (val.family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&out;

		s4->sin_family = AF_INET;
		s4->sin_port = val.port;
		s4->sin_addr.s_addr = val.addr[0];
	} else if (val.family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&out;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = val.port;
		memcpy(&s6->sin6_addr, val.addr, sizeof(s6->sin6_addr));
	} else {
		return -EPROTO;
	}
	*ret_orig = out;
	return 0;
}

void redirect_free(struct redirect *r)
{
	if (!r)
		return;
	redirect_detach(r);
	redirect_bpf__destroy(r->skel);
	free(r);
}
