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
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>

#include <nftables/libnftables.h>

#include "netfilter/netns.h"
#include "base/cleanup.h"
#include "base/dynlib.h"

/* libnftables and what it loads (libnftnl, libmnl, libxtables, libjansson: 1.2 MB of pages
 * resident) are mapped only while a ruleset is installed: the table is then kept through a
 * copy of the context's netlink socket, and deleted by a message built here. */
#define NFT_FUNCS(X)                \
	X(nft_ctx_new)              \
	X(nft_ctx_free)             \
	X(nft_ctx_buffer_output)    \
	X(nft_ctx_buffer_error)     \
	X(nft_ctx_get_error_buffer) \
	X(nft_run_cmd_from_buffer)
DYNLIB_DEFINE(nft, NFT_FUNCS, "libnftables.so.1",
              "the sandbox's egress rules (--net proxy; --net host and --net none do without)");

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

#ifndef NFT_TABLE_F_PERSIST
#define NFT_TABLE_F_PERSIST 0x4 /* Linux 6.9; nft 1.0.6 cannot spell it */
#endif

/* The same chains and rules, added to a table that exists already (persist: see
 * install_in_netns). A table block would send the table's flags again, which the kernel refuses
 * as a change of an owned table's flags. */
#define PERSIST_CHAIN "add chain inet " NFT_EGRESS_TABLE " "
#define PERSIST_RULE  "add rule inet " NFT_EGRESS_TABLE " "
static const char persist_format[] = PERSIST_CHAIN
        "nat_output { type nat hook output priority -100; policy accept; }\n" PERSIST_RULE
        "nat_output meta l4proto { tcp, udp } th dport 53 redirect to :%u\n" PERSIST_RULE
        "nat_output fib daddr type local return\n" PERSIST_RULE
        "nat_output meta l4proto tcp redirect to :%u\n" PERSIST_CHAIN
        "filter_output { type filter hook output priority 0; policy drop; }\n" PERSIST_RULE
        "filter_output fib daddr type local accept\n";

int nft_egress_ruleset(const struct nft_egress_config *cfg, char **ret_text)
{
	char *text;

	if (!cfg || cfg->proxy_port == 0 || cfg->dns_port == 0)
		return -EINVAL;
	if (asprintf(&text, cfg->persist ? persist_format : ruleset_format, (unsigned)cfg->dns_port,
	             (unsigned)cfg->proxy_port) < 0)
		return -ENOMEM;
	*ret_text = text;
	return 0;
}

struct nft_egress {
	/* The netlink socket of the context that installed the table, in the sandbox netns: it
	 * owns the table (the kernel knows its port id, not this fd). */
	int sock;
};

static void nft_ctx_freep(struct nft_ctx **ctx)
{
	if (*ctx)
		nft.nft_ctx_free(*ctx);
}

/* Copy the first line of nft's error output into err. */
static int nft_error(struct nft_ctx *ctx, struct cl_error *err, int code, const char *what)
{
	const char *msg = nft.nft_ctx_get_error_buffer(ctx);
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

/* Returns the last such socket found, or -ENOENT. */
static int cloexec_new_netfilter_sockets(const struct fd_set_snapshot *before)
{
	struct fd_set_snapshot after;
	int found = -ENOENT;

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
		found = fd;
	}
	return found;
}

/* Append one netlink attribute (4-byte aligned) at *off in buf. */
static void put_attr(char *buf, size_t *off, uint16_t type, const void *data, uint16_t len)
{
	struct nlattr *a = (struct nlattr *)(buf + *off);

	a->nla_type = type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + len);
	memcpy(buf + *off + NLA_HDRLEN, data, len);
	memset(buf + *off + NLA_HDRLEN + len, 0, NLA_ALIGN(len) - len);
	*off += NLA_HDRLEN + NLA_ALIGN(len);
}

static void put_msg(char *buf, size_t *off, uint16_t type, uint16_t flags, uint32_t seq,
                    uint8_t family, uint16_t res_id)
{
	struct nlmsghdr *h = (struct nlmsghdr *)(buf + *off);
	struct nfgenmsg *g = (struct nfgenmsg *)(buf + *off + NLMSG_HDRLEN);

	memset(h, 0, NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(*g)));
	h->nlmsg_type = type;
	h->nlmsg_flags = flags;
	h->nlmsg_seq = seq;
	g->nfgen_family = family;
	g->version = NFNETLINK_V0;
	g->res_id = htons(res_id);
	*off += NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(*g));
}

/* Create the (empty) table with FLAGS through the socket FD, which then owns it (nft 1.0.6
 * has no word for the persist flag), or with delete, delete it (libnftables is gone by then):
 * one message built by hand. 0, or the kernel's negative errno. */
static int table_message(int fd, bool delete, uint32_t flags)
{
	static const char name[] = NFT_EGRESS_TABLE;
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	uint32_t seq = (uint32_t)time(NULL) ^ 0x5eed0000u, be_flags = htonl(flags);
	size_t off = 0, start;
	union {
		char buf[512];
		struct nlmsghdr align;
	} out, in;

	put_msg(out.buf, &off, NFNL_MSG_BATCH_BEGIN, NLM_F_REQUEST, seq, AF_UNSPEC,
	        NFNL_SUBSYS_NFTABLES);
	((struct nlmsghdr *)out.buf)->nlmsg_len = (uint32_t)off;
	start = off;
	if (delete) {
		put_msg(out.buf, &off, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_DELTABLE,
		        NLM_F_REQUEST | NLM_F_ACK, seq + 1, NFPROTO_INET, 0);
		put_attr(out.buf, &off, NFTA_TABLE_NAME, name, sizeof(name));
	} else {
		put_msg(out.buf, &off, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWTABLE,
		        NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK, seq + 1,
		        NFPROTO_INET, 0);
		put_attr(out.buf, &off, NFTA_TABLE_NAME, name, sizeof(name));
		put_attr(out.buf, &off, NFTA_TABLE_FLAGS, &be_flags, sizeof(be_flags));
	}
	((struct nlmsghdr *)(out.buf + start))->nlmsg_len = (uint32_t)(off - start);
	start = off;
	put_msg(out.buf, &off, NFNL_MSG_BATCH_END, NLM_F_REQUEST, seq + 2, AF_UNSPEC,
	        NFNL_SUBSYS_NFTABLES);
	((struct nlmsghdr *)(out.buf + start))->nlmsg_len = (uint32_t)(off - start);
	if (sendto(fd, out.buf, off, 0, (struct sockaddr *)&kernel, sizeof(kernel)) != (ssize_t)off)
		return -errno;
	/* The batch's answer: the ack or error of the NEWTABLE, or an error about the batch as a
	 * whole (no CAP_NET_ADMIN, no nf_tables), which carries the BATCH_BEGIN's or END's
	 * sequence number. Bounded in time: the socket is libnftables' own, and blocking. */
	struct timeval limit = {.tv_sec = 5}, saved;
	socklen_t saved_len = sizeof(saved);
	int r = -ETIMEDOUT;
	bool restore = getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &saved, &saved_len) == 0;

	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
	for (bool done = false; !done;) {
		ssize_t n = recv(fd, in.buf, sizeof(in.buf), 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
			break;
		}
		for (struct nlmsghdr *h = &in.align; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			const struct nlmsgerr *e = NLMSG_DATA(h);

			if (h->nlmsg_seq - seq > 2 || h->nlmsg_type != NLMSG_ERROR ||
			    h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
				continue;
			r = e->error;
			done = true;
			break;
		}
	}
	if (restore)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &saved, sizeof(saved));
	return r;
}

struct install_ctx {
	const char *text;
	bool persist;
	struct cl_error *err;
	int sock; /* result: a copy of the context's socket, which owns the table */
	bool ran;
};

static int install_in_netns(void *userdata)
{
	struct install_ctx *c = userdata;
	_cleanup_(nft_ctx_freep) struct nft_ctx *ctx = NULL;
	struct fd_set_snapshot before;
	int r, found, sock = -ENOENT;

	c->ran = true;
	snapshot_fds(&before);
	/* The netlink socket is opened here, inside the netns: the table goes there and belongs
	 * to it. */
	ctx = nft.nft_ctx_new(NFT_CTX_DEFAULT);
	if (!ctx)
		return cl_error_set(c->err, -ENOMEM, "nftables: cannot create a context");
	if (nft.nft_ctx_buffer_output(ctx) < 0 || nft.nft_ctx_buffer_error(ctx) < 0)
		return cl_error_set(c->err, -ENOMEM, "nftables: cannot buffer output");
	if (c->persist) {
		/* The context's socket (opened by nft_ctx_new) creates the table, so that it
		 * owns it; the ruleset then only adds chains and rules to it. */
		sock = cloexec_new_netfilter_sockets(&before);
		if (sock < 0)
			return cl_error_set(c->err, -EIO, "nftables: no netlink socket found");
		r = table_message(sock, false, NFT_TABLE_F_OWNER | NFT_TABLE_F_PERSIST);
		if (r == -EOPNOTSUPP || r == -EINVAL) /* a kernel older than 6.9 */
			r = table_message(sock, false, NFT_TABLE_F_OWNER);
		if (r < 0)
			return cl_error_set(c->err, r, "creating the egress table: %s",
			                    strerror(-r));
	}
	r = nft.nft_run_cmd_from_buffer(ctx, c->text);
	found = cloexec_new_netfilter_sockets(&before);
	if (!c->persist) /* the table block went through the context's one socket */
		sock = found;
	if (r != 0) {
		r = nft_error(ctx, c->err, -EINVAL, "installing the egress ruleset");
		/* Nothing installed on failure: a table of ours would outlive the socket. */
		if (c->persist)
			(void)nft.nft_run_cmd_from_buffer(ctx, "delete table inet " NFT_EGRESS_TABLE
			                                       "\n");
		return r;
	}
	/* The copy keeps the socket, and so the table's owner, once the context (and the
	 * library) is gone. */
	r = sock < 0 ? -EIO : fcntl(sock, F_DUPFD_CLOEXEC, 3);
	if (r < 0) {
		r = r == -1 ? -errno : r;
		(void)nft.nft_run_cmd_from_buffer(ctx, "delete table inet " NFT_EGRESS_TABLE "\n");
		return cl_error_set(c->err, r,
		                    "nftables: cannot keep the netlink socket that owns the table");
	}
	c->sock = r;
	return 0;
}

int nft_egress_install(int netns_fd, const struct nft_egress_config *cfg, struct nft_egress **ret,
                       struct cl_error *err)
{
	_cleanup_free_ char *text = NULL;
	struct install_ctx c = {.err = err, .sock = -EBADF};
	struct nft_egress *e;
	void (*gmp_set_memory)(void *(*)(size_t), void *(*)(void *, size_t, size_t),
	                       void (*)(void *, size_t));
	int r;

	r = nft_egress_ruleset(cfg, &text);
	if (r < 0)
		return cl_error_set(err, r, "egress ruleset: %s",
		                    r == -EINVAL ? "the listener ports must not be 0"
		                                 : strerror(-r));
	e = calloc(1, sizeof(*e));
	if (!e)
		return cl_error_set(err, -ENOMEM, "egress ruleset: out of memory");
	r = dynlib_use(&nft_lib, err);
	if (r < 0) {
		free(e);
		return r;
	}
	c.text = text;
	c.persist = cfg->persist;
	r = netfilter_run_in_netns(netns_fd, install_in_netns, &c);
	/* libnftables points libgmp's allocator at its own functions; libgmp stays loaded
	 * where another library needs it (GnuTLS's libhogweed): give it back its own. */
	gmp_set_memory = dynlib_symbol(&nft_lib, "__gmp_set_memory_functions");
	if (gmp_set_memory)
		gmp_set_memory(NULL, NULL, NULL);
	dynlib_release(&nft_lib);
	if (r < 0) {
		free(e);
		if (!c.ran)
			cl_error_set(err, r, "joining the sandbox network namespace: %s",
			             strerror(-r));
		return r;
	}
	e->sock = c.sock;
	*ret = e;
	return 0;
}

int nft_egress_remove(struct nft_egress *e, struct cl_error *err)
{
	int r = 0;

	if (!e)
		return 0;
	/* Sent through the owning socket: the only one the kernel lets delete the table. */
	r = table_message(e->sock, true, 0);
	if (r < 0)
		cl_error_set(err, r, "deleting the egress ruleset: %s", strerror(-r));
	nft_egress_free(e);
	return r;
}

void nft_egress_free(struct nft_egress *e)
{
	if (!e)
		return;
	close(e->sock);
	free(e);
}
