/* The sandbox netns's nftables ruleset: generated as text (pure), applied with libnftables
 * from a thread inside the netns. See nft_egress.h. */
#include "netfilter/nft_egress.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/netlink.h>

#include <nftables/libnftables.h>

#include "netfilter/netns.h"
#include "protocol/cleanup.h"

/* The order of the nat chain matters: DNS first (whatever the destination, so a resolv.conf
 * naming 127.0.0.53 also reaches our resolver), then local destinations stay local, then the
 * rest of TCP goes to the proxy.
 *
 * The filter chain accepts only packets whose destination is an address of this netns. It
 * cannot test the output device instead: for a packet the nat chain redirected, the hook state
 * still names the device of the route before the redirect (the egress device), while the
 * destination address is already the loopback one. Everything not local (ICMP, other UDP, raw
 * sockets, other protocols, IPv6 neighbour and router solicitations on the egress device, which
 * has no one to answer them) is dropped. */
static const char ruleset_format[] = "table inet " NFT_EGRESS_TABLE " {\n"
                                     "\tflags owner\n"
                                     "\tchain nat_output {\n"
                                     "\t\ttype nat hook output priority -100; policy accept;\n"
                                     "\t\tmeta l4proto { tcp, udp } th dport 53 redirect to :%u\n"
                                     "\t\tfib daddr type local return\n"
                                     "\t\tmeta l4proto tcp redirect to :%u\n"
                                     "\t}\n"
                                     "\tchain filter_output {\n"
                                     "\t\ttype filter hook output priority 0; policy drop;\n"
                                     "\t\tfib daddr type local accept\n"
                                     "\t}\n"
                                     "}\n";

int nft_egress_ruleset(const struct nft_egress_config *cfg, char **ret_text)
{
	char *text;

	if (!cfg || cfg->proxy_port == 0 || cfg->dns_port == 0)
		return -EINVAL;
	if (asprintf(&text, ruleset_format, (unsigned)cfg->dns_port, (unsigned)cfg->proxy_port) < 0)
		return -ENOMEM;
	*ret_text = text;
	return 0;
}

struct nft_egress {
	struct nft_ctx *ctx; /* its netlink socket lives in the sandbox netns and owns the table */
};

CL_DEFINE_TRIVIAL_CLEANUP(struct nft_ctx *, nft_ctx_free)

/* Copy the first line of nft's error output into err. */
static int nft_error(struct nft_ctx *ctx, struct cl_error *err, int code, const char *what)
{
	const char *msg = nft_ctx_get_error_buffer(ctx);
	size_t len;

	if (!msg || !*msg)
		return cl_error_set(err, code, "%s: %s", what, strerror(-code));
	len = strcspn(msg, "\n");
	return cl_error_set(err, code, "%s: %.*s", what, (int)(len > 300 ? 300 : len), msg);
}

/* libnftables (1.0.6) opens its netlink socket without O_CLOEXEC; find the netfilter netlink
 * sockets that appeared since `before` fds were scanned and mark them. */
#define FD_SCAN_MAX 4096
struct fd_set_snapshot {
	unsigned char open[FD_SCAN_MAX / 8];
};

static void snapshot_fds(struct fd_set_snapshot *s)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;

	memset(s, 0, sizeof(*s));
	if (!d)
		return;
	while ((de = readdir(d))) {
		long fd = strtol(de->d_name, NULL, 10);

		/* Not the directory's own fd: the socket may get its number later. */
		if (fd == dirfd(d))
			continue;
		if (de->d_name[0] >= '0' && de->d_name[0] <= '9' && fd >= 0 && fd < FD_SCAN_MAX)
			s->open[fd / 8] |= (unsigned char)(1U << (fd % 8));
	}
	closedir(d);
}

static void cloexec_new_netfilter_sockets(const struct fd_set_snapshot *before)
{
	struct fd_set_snapshot after;

	snapshot_fds(&after);
	for (int fd = 0; fd < FD_SCAN_MAX; fd++) {
		int domain = 0, proto = 0;
		socklen_t len = sizeof(int);
		bool was = before->open[fd / 8] & (1U << (fd % 8));
		bool is = after.open[fd / 8] & (1U << (fd % 8));

		if (!is || was)
			continue;
		if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 ||
		    domain != AF_NETLINK)
			continue;
		len = sizeof(int);
		if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len) < 0 ||
		    proto != NETLINK_NETFILTER)
			continue;
		(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
}

struct install_ctx {
	const char *text;
	struct cl_error *err;
	struct nft_ctx *ctx; /* result */
	bool ran;
};

static int install_in_netns(void *userdata)
{
	struct install_ctx *c = userdata;
	_cleanup_(nft_ctx_freep) struct nft_ctx *ctx = NULL;
	struct fd_set_snapshot before;
	int r;

	c->ran = true;
	snapshot_fds(&before);
	/* The netlink socket is opened here, inside the netns: the table goes there and belongs
	 * to it. */
	ctx = nft_ctx_new(NFT_CTX_DEFAULT);
	if (!ctx)
		return cl_error_set(c->err, -ENOMEM, "nftables: cannot create a context");
	if (nft_ctx_buffer_output(ctx) < 0 || nft_ctx_buffer_error(ctx) < 0)
		return cl_error_set(c->err, -ENOMEM, "nftables: cannot buffer output");
	r = nft_run_cmd_from_buffer(ctx, c->text);
	cloexec_new_netfilter_sockets(&before);
	if (r != 0)
		return nft_error(ctx, c->err, -EINVAL, "installing the egress ruleset");
	c->ctx = TAKE_PTR(ctx);
	return 0;
}

int nft_egress_install(int netns_fd, const struct nft_egress_config *cfg, struct nft_egress **ret,
                       struct cl_error *err)
{
	_cleanup_free_ char *text = NULL;
	struct install_ctx c = {.err = err};
	struct nft_egress *e;
	int r;

	r = nft_egress_ruleset(cfg, &text);
	if (r < 0)
		return cl_error_set(err, r, "egress ruleset: %s",
		                    r == -EINVAL ? "the listener ports must not be 0"
		                                 : strerror(-r));
	e = calloc(1, sizeof(*e));
	if (!e)
		return cl_error_set(err, -ENOMEM, "egress ruleset: out of memory");
	c.text = text;
	r = netfilter_run_in_netns(netns_fd, install_in_netns, &c);
	if (r < 0) {
		free(e);
		if (!c.ran)
			cl_error_set(err, r, "joining the sandbox network namespace: %s",
			             strerror(-r));
		return r;
	}
	e->ctx = c.ctx;
	*ret = e;
	return 0;
}

int nft_egress_remove(struct nft_egress *e, struct cl_error *err)
{
	int r = 0;

	if (!e)
		return 0;
	/* Sent through the owning socket: the only one the kernel lets delete the table. */
	if (nft_run_cmd_from_buffer(e->ctx, "delete table inet " NFT_EGRESS_TABLE "\n") != 0)
		r = nft_error(e->ctx, err, -EIO, "deleting the egress ruleset");
	nft_egress_free(e);
	return r;
}

void nft_egress_free(struct nft_egress *e)
{
	if (!e)
		return;
	nft_ctx_free(e->ctx);
	free(e);
}
