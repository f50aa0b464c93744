/* Network namespace set-up through rtnetlink (libnl-route), always from a dedicated thread
 * that joined the target netns. See netns.h. */
#include "netfilter/netns.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/nsfs.h>
#include <linux/rtnetlink.h>

#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/route.h>

#include "base/child_setup.h"
#include "base/cleanup.h"
#include "base/dynlib.h"

struct netns_call {
	int netns_fd;
	int userns_fd; /* the netns's owner, joined first (the clone path); -1: not */
	int (*fn)(void *userdata);
	void *userdata;
	bool entered; /* setns worked: result is fn's */
	int result;
};

static void *netns_thread(void *arg)
{
	struct netns_call *c = arg;

	/* Only this thread's network namespace changes (it is per thread); the thread ends after
	 * fn, so no other code ever runs in the sandbox's netns by accident. */
	if (setns(c->netns_fd, CLONE_NEWNET) < 0) {
		c->result = -errno;
		return NULL;
	}
	c->entered = true;
	c->result = c->fn(c->userdata);
	return NULL;
}

/* The clone path's child: a process of its own (a user namespace is joined only by a
 * single-threaded process with its own fs_struct), sharing our memory and fd table. */
static int netns_child(void *arg)
{
	struct netns_call *c = arg;

	if (setns(c->userns_fd, CLONE_NEWUSER) < 0 || setns(c->netns_fd, CLONE_NEWNET) < 0) {
		c->result = -errno;
		return 0;
	}
	c->entered = true;
	c->result = c->fn(c->userdata);
	return 0;
}

/* A sandbox of a non-root supervisor: its netns belongs to the sandbox's user namespace, and
 * setns() into a netns also wants CAP_SYS_ADMIN in our own user namespace, which we lack. We
 * own the sandbox's user namespace, so we hold every capability in it: a child that joins it
 * first may join the netns. It shares our memory and fd table (fn's results and sockets are
 * ours when it returns) and we wait for it (CLONE_VFORK), as we wait for the thread. */
static int run_in_owner_userns(struct netns_call *c)
{
	const size_t stack_size = 1024 * 1024;
	long page = sysconf(_SC_PAGESIZE);
	int status, dumpable;
	pid_t pid;
	void *stack;

	c->userns_fd = ioctl(c->netns_fd, NS_GET_USERNS);
	if (c->userns_fd < 0)
		return -EPERM;
	stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE,
	             MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED) {
		close(c->userns_fd);
		return -ENOMEM;
	}
	/* A guard page: an overflow faults instead of writing over our heap. */
	(void)mprotect(stack, page > 0 ? (size_t)page : 4096, PROT_NONE);
	c->result = -ECHILD;
	/* The child shares our memory and sits in the sandbox's user namespace, where a process
	 * of the sandbox may hold capabilities (a container joining a shared netns): not
	 * ptrace-able meanwhile. */
	dumpable = prctl(PR_GET_DUMPABLE);
	(void)prctl(PR_SET_DUMPABLE, 0);
	/* No exit signal: the supervisor's SIGCHLD handling never sees it; __WALL reaps it. */
	pid = child_setup_clone_vm(netns_child, (char *)stack + stack_size,
	                           CLONE_VM | CLONE_VFORK | CLONE_FILES, c, NULL);
	if (pid < 0)
		c->result = -errno;
	else
		while (waitpid(pid, &status, __WALL) < 0 && errno == EINTR)
			;
	if (dumpable > 0)
		(void)prctl(PR_SET_DUMPABLE, dumpable);
	munmap(stack, stack_size);
	close(c->userns_fd);
	return c->result;
}

int netfilter_run_in_netns(int netns_fd, int (*fn)(void *userdata), void *userdata)
{
	struct netns_call c = {
	        .netns_fd = netns_fd, .userns_fd = -1, .fn = fn, .userdata = userdata};
	pthread_t t;
	int r;

	if (netns_fd < 0 || !fn)
		return -EBADF;
	r = pthread_create(&t, NULL, netns_thread, &c);
	if (r != 0)
		return -r;
	r = pthread_join(t, NULL);
	if (r != 0)
		return -r;
	if (!c.entered && c.result == -EPERM && geteuid() != 0) {
		c = (struct netns_call){.netns_fd = netns_fd, .fn = fn, .userdata = userdata};
		return run_in_owner_userns(&c);
	}
	return c.result;
}

static int create_netns(void *userdata)
{
	int *ret_fd = userdata;
	int fd;

	/* unshare in a thread moves only that thread; its /proc/thread-self names it. */
	if (unshare(CLONE_NEWNET) < 0)
		return -errno;
	fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*ret_fd = fd;
	return 0;
}

static void *create_thread(void *arg)
{
	struct netns_call *c = arg;

	c->result = c->fn(c->userdata);
	return NULL;
}

int netfilter_netns_create(int *ret_fd)
{
	int fd = -EBADF;
	struct netns_call c = {.fn = create_netns, .userdata = &fd};
	pthread_t t;
	int r;

	r = pthread_create(&t, NULL, create_thread, &c);
	if (r != 0)
		return -r;
	r = pthread_join(t, NULL);
	if (r != 0)
		return -r;
	if (c.result < 0)
		return c.result;
	*ret_fd = fd;
	return 0;
}

/* ---- rtnetlink ----------------------------------------------------------------------------- */

/* libnl-route-3 and libnl-3 (0.6 MB of pages resident) are mapped only while a netns is set
 * up: its routes and addresses are set once, and nothing reads them back. */
#define NL_FUNCS(X)                  \
	X(nl_addr_parse)             \
	X(nl_addr_put)               \
	X(nl_connect)                \
	X(nl_geterror)               \
	X(nl_socket_alloc)           \
	X(nl_socket_free)            \
	X(rtnl_addr_add)             \
	X(rtnl_addr_alloc)           \
	X(rtnl_addr_put)             \
	X(rtnl_addr_set_flags)       \
	X(rtnl_addr_set_ifindex)     \
	X(rtnl_addr_set_local)       \
	X(rtnl_addr_set_prefixlen)   \
	X(rtnl_link_add)             \
	X(rtnl_link_alloc)           \
	X(rtnl_link_change)          \
	X(rtnl_link_get_flags)       \
	X(rtnl_link_get_ifindex)     \
	X(rtnl_link_get_kernel)      \
	X(rtnl_link_put)             \
	X(rtnl_link_set_flags)       \
	X(rtnl_link_set_mtu)         \
	X(rtnl_link_set_name)        \
	X(rtnl_link_set_type)        \
	X(rtnl_route_add)            \
	X(rtnl_route_add_nexthop)    \
	X(rtnl_route_alloc)          \
	X(rtnl_route_nh_alloc)       \
	X(rtnl_route_nh_free)        \
	X(rtnl_route_nh_set_ifindex) \
	X(rtnl_route_put)            \
	X(rtnl_route_set_dst)        \
	X(rtnl_route_set_family)     \
	X(rtnl_route_set_pref_src)   \
	X(rtnl_route_set_protocol)   \
	X(rtnl_route_set_scope)      \
	X(rtnl_route_set_table)      \
	X(rtnl_route_set_type)
DYNLIB_DEFINE(nl, NL_FUNCS, "libnl-route-3.so.200",
              "the sandbox's network namespace (--net proxy)");

/* libnl's NLE_* codes back to errno, for our -errno convention. */
static int nl_to_errno(int nle)
{
	switch (nle < 0 ? -nle : nle) {
	case 0:
		return 0;
	case NLE_NOMEM:
		return -ENOMEM;
	case NLE_EXIST:
		return -EEXIST;
	case NLE_PERM:
	case NLE_NOACCESS:
		return -EPERM;
	case NLE_OPNOTSUPP:
		return -EOPNOTSUPP;
	case NLE_NODEV:
		return -ENODEV;
	case NLE_OBJ_NOTFOUND:
		return -ENOENT;
	case NLE_AF_NOSUPPORT:
		return -EAFNOSUPPORT;
	case NLE_INVAL:
	case NLE_RANGE:
		return -EINVAL;
	case NLE_BUSY:
		return -EBUSY;
	case NLE_AGAIN:
		return -EAGAIN;
	default:
		return -EIO;
	}
}

/* Through the table: CL_DEFINE_TRIVIAL_CLEANUP names the function itself. */
#define NL_CLEANUP(type, func)              \
	static inline void func##p(type *p) \
	{                                   \
		if (*p)                     \
			nl.func(*p);        \
	}
NL_CLEANUP(struct nl_sock *, nl_socket_free)
NL_CLEANUP(struct rtnl_link *, rtnl_link_put)
NL_CLEANUP(struct rtnl_addr *, rtnl_addr_put)
NL_CLEANUP(struct rtnl_route *, rtnl_route_put)
NL_CLEANUP(struct nl_addr *, nl_addr_put)

struct setup_ctx {
	struct cl_error *err;
	bool ran; /* the thread joined the netns: err was filled on failure */
};

static int link_up(struct nl_sock *sk, const char *name, struct cl_error *err)
{
	_cleanup_(rtnl_link_putp) struct rtnl_link *link = NULL;
	_cleanup_(rtnl_link_putp) struct rtnl_link *change = NULL;
	int r;

	r = nl.rtnl_link_get_kernel(sk, 0, name, &link);
	if (r < 0)
		return cl_error_set(err, nl_to_errno(r), "link %s: %s", name, nl.nl_geterror(r));
	if (nl.rtnl_link_get_flags(link) & IFF_UP)
		return 0;
	change = nl.rtnl_link_alloc();
	if (!change)
		return cl_error_set(err, -ENOMEM, "link %s: out of memory", name);
	nl.rtnl_link_set_flags(change, IFF_UP);
	r = nl.rtnl_link_change(sk, link, change, 0);
	if (r < 0)
		return cl_error_set(err, nl_to_errno(r), "bringing %s up: %s", name,
		                    nl.nl_geterror(r));
	return 0;
}

/* Create the egress device as a dummy, else as an ifb (kernels built without dummy, as on
 * these machines): both drop every packet handed to them. Returns its ifindex. */
static int egress_link(struct nl_sock *sk, struct cl_error *err)
{
	static const char *const kinds[] = {"dummy", "ifb"};
	_cleanup_(rtnl_link_putp) struct rtnl_link *link = NULL;
	int r = 0, ifindex;

	r = nl.rtnl_link_get_kernel(sk, 0, NETFILTER_EGRESS_IFNAME, &link);
	if (r < 0 && r != -NLE_NODEV && r != -NLE_OBJ_NOTFOUND)
		return cl_error_set(err, nl_to_errno(r), "link %s: %s", NETFILTER_EGRESS_IFNAME,
		                    nl.nl_geterror(r));
	for (size_t i = 0; !link && i < ELEMENTSOF(kinds); i++) {
		_cleanup_(rtnl_link_putp) struct rtnl_link *want = nl.rtnl_link_alloc();

		if (!want)
			return cl_error_set(err, -ENOMEM, "egress link: out of memory");
		nl.rtnl_link_set_name(want, NETFILTER_EGRESS_IFNAME);
		/* lo's MTU: a redirected connection keeps the MSS of the route it was sent by, this
		 * device's; at 1500 the redirect cost 40 % of loopback throughput. */
		nl.rtnl_link_set_mtu(want, NETFILTER_EGRESS_MTU);
		r = nl.rtnl_link_set_type(want, kinds[i]);
		if (r < 0)
			continue;
		r = nl.rtnl_link_add(sk, want, NLM_F_CREATE | NLM_F_EXCL);
		if (r < 0 && r != -NLE_EXIST)
			continue;
		r = nl.rtnl_link_get_kernel(sk, 0, NETFILTER_EGRESS_IFNAME, &link);
		if (r < 0)
			return cl_error_set(err, nl_to_errno(r), "link %s: %s",
			                    NETFILTER_EGRESS_IFNAME, nl.nl_geterror(r));
	}
	if (!link)
		return cl_error_set(err, nl_to_errno(r),
		                    "cannot create the egress link %s (neither dummy nor ifb): %s",
		                    NETFILTER_EGRESS_IFNAME, nl.nl_geterror(r));
	ifindex = nl.rtnl_link_get_ifindex(link);
	r = link_up(sk, NETFILTER_EGRESS_IFNAME, err);
	if (r < 0)
		return r;
	return ifindex;
}

static int add_address(struct nl_sock *sk, int ifindex, int family, const char *text,
                       struct cl_error *err)
{
	_cleanup_(rtnl_addr_putp) struct rtnl_addr *addr = NULL;
	_cleanup_(nl_addr_putp) struct nl_addr *local = NULL;
	int r;

	r = nl.nl_addr_parse(text, family, &local);
	if (r < 0)
		return cl_error_set(err, nl_to_errno(r), "address %s: %s", text, nl.nl_geterror(r));
	addr = nl.rtnl_addr_alloc();
	if (!addr)
		return cl_error_set(err, -ENOMEM, "address %s: out of memory", text);
	nl.rtnl_addr_set_ifindex(addr, ifindex);
	r = nl.rtnl_addr_set_local(addr, local);
	if (r < 0)
		return cl_error_set(err, nl_to_errno(r), "address %s: %s", text, nl.nl_geterror(r));
	nl.rtnl_addr_set_prefixlen(addr, family == AF_INET ? 32 : 128);
	/* No DAD: an IPv6 address is "tentative" (unusable as a source) until it completes,
	 * and there is no one on this link to collide with. */
	if (family == AF_INET6)
		nl.rtnl_addr_set_flags(addr, IFA_F_NODAD);
	r = nl.rtnl_addr_add(sk, addr, 0);
	if (r < 0 && r != -NLE_EXIST)
		return cl_error_set(err, nl_to_errno(r), "adding address %s to %s: %s", text,
		                    NETFILTER_EGRESS_IFNAME, nl.nl_geterror(r));
	return 0;
}

static int add_default_route(struct nl_sock *sk, int ifindex, int family, const char *src,
                             struct cl_error *err)
{
	_cleanup_(rtnl_route_putp) struct rtnl_route *route = NULL;
	_cleanup_(nl_addr_putp) struct nl_addr *dst = NULL;
	_cleanup_(nl_addr_putp) struct nl_addr *pref = NULL;
	struct rtnl_nexthop *nh;
	const char *fam = family == AF_INET ? "IPv4" : "IPv6";
	int r;

	r = nl.nl_addr_parse("default", family, &dst);
	if (r >= 0)
		r = nl.nl_addr_parse(src, family, &pref);
	if (r < 0)
		return cl_error_set(err, nl_to_errno(r), "%s default route: %s", fam,
		                    nl.nl_geterror(r));
	route = nl.rtnl_route_alloc();
	nh = nl.rtnl_route_nh_alloc();
	if (!route || !nh) {
		if (nh)
			nl.rtnl_route_nh_free(nh);
		return cl_error_set(err, -ENOMEM, "%s default route: out of memory", fam);
	}
	nl.rtnl_route_set_family(route, (uint8_t)family);
	nl.rtnl_route_set_table(route, RT_TABLE_MAIN);
	nl.rtnl_route_set_protocol(route, RTPROT_STATIC);
	/* A route without a gateway: the destination is "on the link" (which discards it). */
	nl.rtnl_route_set_scope(route, family == AF_INET ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE);
	nl.rtnl_route_set_type(route, RTN_UNICAST);
	r = nl.rtnl_route_set_dst(route, dst);
	if (r >= 0)
		r = nl.rtnl_route_set_pref_src(route, pref);
	if (r < 0) {
		nl.rtnl_route_nh_free(nh);
		return cl_error_set(err, nl_to_errno(r), "%s default route: %s", fam,
		                    nl.nl_geterror(r));
	}
	nl.rtnl_route_nh_set_ifindex(nh, ifindex);
	nl.rtnl_route_add_nexthop(route, nh); /* owned by route from here */
	r = nl.rtnl_route_add(sk, route, NLM_F_CREATE | NLM_F_REPLACE);
	if (r < 0)
		return cl_error_set(err, nl_to_errno(r), "adding the %s default route via %s: %s",
		                    fam, NETFILTER_EGRESS_IFNAME, nl.nl_geterror(r));
	return 0;
}

static bool ipv6_disabled(int r)
{
	/* No IPv6 in the kernel, or net.ipv6.conf.*.disable_ipv6 set (EACCES from addrconf). */
	return r == -EAFNOSUPPORT || r == -EPERM || r == -EOPNOTSUPP;
}

static int setup_in_netns(void *userdata)
{
	struct setup_ctx *c = userdata;
	_cleanup_(nl_socket_freep) struct nl_sock *sk = NULL;
	int r, ifindex;

	c->ran = true;
	sk = nl.nl_socket_alloc();
	if (!sk)
		return cl_error_set(c->err, -ENOMEM, "netlink socket: out of memory");
	r = nl.nl_connect(sk, NETLINK_ROUTE);
	if (r < 0)
		return cl_error_set(c->err, nl_to_errno(r), "netlink socket: %s",
		                    nl.nl_geterror(r));

	r = link_up(sk, "lo", c->err);
	if (r < 0)
		return r;
	ifindex = egress_link(sk, c->err);
	if (ifindex < 0)
		return ifindex;
	r = add_address(sk, ifindex, AF_INET, NETFILTER_EGRESS_ADDR4, c->err);
	if (r < 0)
		return r;
	r = add_default_route(sk, ifindex, AF_INET, NETFILTER_EGRESS_ADDR4, c->err);
	if (r < 0)
		return r;
	r = add_address(sk, ifindex, AF_INET6, NETFILTER_EGRESS_ADDR6, c->err);
	if (r < 0 && ipv6_disabled(r))
		return 0;
	if (r < 0)
		return r;
	return add_default_route(sk, ifindex, AF_INET6, NETFILTER_EGRESS_ADDR6, c->err);
}

int netfilter_netns_setup(int netns_fd, struct cl_error *err)
{
	struct setup_ctx c = {.err = err};
	int r;

	r = dynlib_use(&nl_lib, err);
	if (r < 0)
		return r;
	r = netfilter_run_in_netns(netns_fd, setup_in_netns, &c);
	dynlib_release(&nl_lib);
	if (r < 0 && !c.ran)
		cl_error_set(err, r, "joining the sandbox network namespace: %s", strerror(-r));
	return r;
}
