/* Egress redirect for sandboxes that share the host's network (--net=host), where there is no
 * netns of ours to put nftables rules in. Attached to the sandbox's cgroup; the socket's cgroup
 * (where it was created) decides which sockets are affected.
 *
 *   sock_create      only TCP and UDP sockets of the inet families: no raw, ICMP (ping),
 *                    SCTP, MPTCP, UDP-Lite… and no AF_PACKET (link-layer frames would leave
 *                    past every hook here) (socket() fails with EPERM)
 *   connect4/6       UDP to port 53 → the resolver (dns_port); to a refused port (the
 *                    supervisor's own listeners: refused_ports, proxy_port, dns_port) on any
 *                    address that reaches this host's loopback (127.0.0.0/8, 0.0.0.0/8, ::1,
 *                    ::, ::ffff:127.x / ::ffff:0.x) → EPERM; TCP to anything but loopback →
 *                    the proxy listener 127.0.0.1 / [::1] (proxy_port); other UDP to anything
 *                    but loopback → EPERM. The original destination is kept in the socket's
 *                    local storage.
 *   sendmsg4/6       unconnected UDP: the same choice per datagram
 *   sockops          at TCP_CONNECT (local port bound, SYN not sent yet): file the original
 *                    destination under the client's local address and port, which is what
 *                    the proxy's accept() sees as the peer; clear it for a connection that
 *                    was not redirected
 *   recvmsg4/6       a resolver answer is reported as coming from the address the query went
 *                    to (resolvers compare the two)
 *   getpeername4/6   the agent sees the original peer, not our listener
 *   bind4/6          the agent listens on loopback only: a bind to the wildcard address
 *                    (0.0.0.0, ::, ::ffff:0.0.0.0) is made to loopback (127.0.0.1, ::1,
 *                    ::ffff:127.0.0.1), a bind to any other address but loopback fails with
 *                    EPERM; a peer elsewhere on the network never finds its listeners
 *   post_bind4/6     attached at the cgroup2 root, not the sandbox's cgroup: a port another
 *                    Cloister supervisor binds in this netns joins the refused ones
 *   skb ingress      and what no bind names (listen() or a datagram on an unbound socket binds
 *                    the wildcard address without the bind hook) receives nothing that came in
 *                    on another interface than loopback: every connection of the agent's goes
 *                    to the proxy or a service on loopback, so nothing it needs comes that way
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
#include "bpf/redirect_abi.h"
#include "bpf/inet_addr.bpf.h"

#define SOCK_STREAM 1
#define SOCK_DGRAM  2
/* The loopback device's index in every network namespace (LOOPBACK_IFINDEX). */
#define LOOPBACK_IFINDEX 1

char LICENSE[] SEC("license") = "GPL";

/* Listener ports in network byte order, set by the loader before load. */
const volatile __u16 proxy_port = 0;
const volatile __u16 dns_port = 0;

/* The original destination of a redirected socket. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct inet_addr_abi);
} orig_dst SEC(".maps");

/* Ports (network byte order) the sandbox may not reach on the host's loopback: the
 * supervisors' own APIs. Filled by the loader before attach; the value is unused. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, REDIRECT_MAX_REFUSED);
	__type(key, __u16);
	__type(value, __u8);
} refused_ports SEC(".maps");

/* Ports (network byte order) a Cloister supervisor bound in this network namespace since the
 * run started (post_bind4/6, attached at the cgroup2 root: every process's binds). Sized for
 * every port: it never fills, so no bind is ever missed. Value unused. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u16);
	__type(value, __u8);
} peer_ports SEC(".maps");

/* Set by the loader before load: the network namespace whose loopback the sandbox shares (its
 * cookie), and our own process, whose later listeners (meant for this agent or not) the loader
 * refuses by itself. */
const volatile __u64 host_netns_cookie = 0;
const volatile __u32 own_tgid = 0;

/* The client's local (address, port) → original destination, for the proxy. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, REDIRECT_MAX_PENDING);
	__type(key, struct inet_addr_abi);
	__type(value, struct inet_addr_abi);
} by_peer SEC(".maps");

static __always_inline bool loopback4(__u32 ip)
{
	return (bpf_ntohl(ip) >> 24) == 127;
}

static __always_inline bool loopback6(const __u32 ip[4])
{
	if (ip[0] != 0 || ip[1] != 0)
		return false;
	if (ip[2] == 0 && ip[3] == bpf_htonl(1)) /* ::1 */
		return true;
	/* ::ffff:127.x.y.z, IPv4 loopback through a dual-stack socket */
	return ip[2] == bpf_htonl(0xffff) && loopback4(ip[3]);
}

/* Every IPv4 destination that lands on this host's loopback listeners: 127.0.0.0/8, and
 * 0.0.0.0, which the kernel connects to 127.0.0.1 (the rest of 0/8 with it: never a peer). */
static __always_inline bool to_this_host4(__u32 ip)
{
	return loopback4(ip) || (bpf_ntohl(ip) >> 24) == 0;
}

/* The same for IPv6: ::1, :: (connected as ::1), and the IPv4 ones mapped (::ffff:a.b.c.d). */
static __always_inline bool to_this_host6(const __u32 ip[4])
{
	if (ip[0] != 0 || ip[1] != 0)
		return false;
	if (ip[2] == 0 && (ip[3] == 0 || ip[3] == bpf_htonl(1)))
		return true;
	return ip[2] == bpf_htonl(0xffff) && to_this_host4(ip[3]);
}

/* One of the supervisor's own listeners: the refused_ports map, and our proxy and resolver
 * listeners, which only the redirect itself may lead to (the hook sees the destination the
 * agent asked for, before we rewrite it). */
static __always_inline bool refused_port(__u32 port)
{
	__u16 key = (__u16)port;

	if (key == proxy_port || key == dns_port)
		return true;
	return bpf_map_lookup_elem(&refused_ports, &key) != NULL ||
	       bpf_map_lookup_elem(&peer_ports, &key) != NULL;
}

static __always_inline int remember4(struct bpf_sock_addr *ctx)
{
	struct inet_addr_abi *o;

	if (!ctx->sk)
		return -1;
	o = bpf_sk_storage_get(&orig_dst, ctx->sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!o)
		return -1;
	o->family = INET_ADDR_AF_INET;
	o->port = (__u16)ctx->user_port;
	o->pad = 0;
	o->addr[0] = ctx->user_ip4;
	o->addr[1] = o->addr[2] = o->addr[3] = 0;
	return 0;
}

static __always_inline int remember6(struct bpf_sock_addr *ctx)
{
	struct inet_addr_abi *o;

	if (!ctx->sk)
		return -1;
	o = bpf_sk_storage_get(&orig_dst, ctx->sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!o)
		return -1;
	o->family = INET_ADDR_AF_INET6;
	o->port = (__u16)ctx->user_port;
	o->pad = 0;
	o->addr[0] = ctx->user_ip6[0];
	o->addr[1] = ctx->user_ip6[1];
	o->addr[2] = ctx->user_ip6[2];
	o->addr[3] = ctx->user_ip6[3];
	return 0;
}

static __always_inline void forget(struct bpf_sock_addr *ctx)
{
	if (ctx->sk)
		bpf_sk_storage_delete(&orig_dst, ctx->sk);
}

static __always_inline void to_loopback4(struct bpf_sock_addr *ctx, __u16 port)
{
	ctx->user_ip4 = bpf_htonl(0x7f000001);
	ctx->user_port = port;
}

static __always_inline void to_loopback6(struct bpf_sock_addr *ctx, __u16 port)
{
	ctx->user_ip6[0] = 0;
	ctx->user_ip6[1] = 0;
	ctx->user_ip6[2] = 0;
	ctx->user_ip6[3] = bpf_htonl(1);
	ctx->user_port = port;
}

/* What to do with a destination: 1 leave it, 2 proxy, 3 resolver, 0 refuse. */
enum verdict { REFUSE = 0, LEAVE = 1, TO_PROXY = 2, TO_RESOLVER = 3 };

static __always_inline enum verdict decide(__u32 type, __u32 port, bool loopback, bool this_host)
{
	/* DNS goes to our resolver, over UDP and TCP alike, wherever it was sent: the host's
	 * own stub resolver on loopback (127.0.0.53) would forward any name upstream. */
	if (port == bpf_htons(53))
		return TO_RESOLVER;
	if (this_host && refused_port(port))
		return REFUSE;
	if (loopback)
		return LEAVE;
	if (type == SOCK_STREAM)
		return TO_PROXY;
	return REFUSE;
}

static __always_inline int redirect4(struct bpf_sock_addr *ctx, bool connecting)
{
	__u32 ip = ctx->user_ip4;
	enum verdict v = decide(ctx->type, ctx->user_port, loopback4(ip), to_this_host4(ip));

	if (v == REFUSE)
		return 0;
	if (v == LEAVE) {
		if (connecting)
			forget(ctx); /* a UDP socket connected elsewhere is no longer redirected */
		return 1;
	}
	/* Without somewhere to keep the original destination, the proxy could not serve the
	 * connection: refuse it rather than let it through. */
	if (remember4(ctx) < 0)
		return 0;
	to_loopback4(ctx, v == TO_PROXY ? proxy_port : dns_port);
	return 1;
}

/* The context's fields must be read each at its own constant offset: the verifier refuses a
 * load through a ctx pointer the compiler moved (ctx + 8, then +4). */
static __always_inline void read_ip6(const struct bpf_sock_addr *ctx, __u32 ip[4])
{
	ip[0] = ctx->user_ip6[0];
	ip[1] = ctx->user_ip6[1];
	ip[2] = ctx->user_ip6[2];
	ip[3] = ctx->user_ip6[3];
	asm volatile("" ::: "memory");
}

static __always_inline int redirect6(struct bpf_sock_addr *ctx, bool connecting)
{
	__u32 ip[4];
	enum verdict v;

	read_ip6(ctx, ip);
	v = decide(ctx->type, ctx->user_port, loopback6(ip), to_this_host6(ip));

	if (v == REFUSE)
		return 0;
	if (v == LEAVE) {
		if (connecting)
			forget(ctx);
		return 1;
	}
	if (remember6(ctx) < 0)
		return 0;
	to_loopback6(ctx, v == TO_PROXY ? proxy_port : dns_port);
	return 1;
}

SEC("cgroup/sock_create")
int redirect_sock_create(struct bpf_sock *sk)
{
	if (sk->family == REDIRECT_AF_PACKET)
		return 0;
	if (sk->family != INET_ADDR_AF_INET && sk->family != INET_ADDR_AF_INET6)
		return 1;
	if (sk->type == SOCK_STREAM && sk->protocol == IPPROTO_TCP)
		return 1;
	if (sk->type == SOCK_DGRAM && sk->protocol == IPPROTO_UDP)
		return 1;
	return 0;
}

SEC("cgroup/connect4")
int redirect_connect4(struct bpf_sock_addr *ctx)
{
	return redirect4(ctx, true);
}

SEC("cgroup/connect6")
int redirect_connect6(struct bpf_sock_addr *ctx)
{
	return redirect6(ctx, true);
}

SEC("cgroup/sendmsg4")
int redirect_sendmsg4(struct bpf_sock_addr *ctx)
{
	return redirect4(ctx, false);
}

SEC("cgroup/sendmsg6")
int redirect_sendmsg6(struct bpf_sock_addr *ctx)
{
	return redirect6(ctx, false);
}

/* Report the original address where the kernel would report our listener's. */
static __always_inline void restore(struct bpf_sock_addr *ctx, __u32 family)
{
	struct inet_addr_abi *o;

	if (!ctx->sk)
		return;
	o = bpf_sk_storage_get(&orig_dst, ctx->sk, 0, 0);
	if (!o || o->family != family)
		return;
	if (family == INET_ADDR_AF_INET) {
		ctx->user_ip4 = o->addr[0];
	} else {
		ctx->user_ip6[0] = o->addr[0];
		ctx->user_ip6[1] = o->addr[1];
		ctx->user_ip6[2] = o->addr[2];
		ctx->user_ip6[3] = o->addr[3];
	}
	ctx->user_port = o->port;
}

static __always_inline bool is_listener4(struct bpf_sock_addr *ctx)
{
	return ctx->user_ip4 == bpf_htonl(0x7f000001) &&
	       (ctx->user_port == proxy_port || ctx->user_port == dns_port);
}

static __always_inline bool is_listener6(struct bpf_sock_addr *ctx)
{
	__u32 ip[4];

	read_ip6(ctx, ip);
	return ip[0] == 0 && ip[1] == 0 && ip[2] == 0 && ip[3] == bpf_htonl(1) &&
	       (ctx->user_port == proxy_port || ctx->user_port == dns_port);
}

SEC("cgroup/recvmsg4")
int redirect_recvmsg4(struct bpf_sock_addr *ctx)
{
	if (is_listener4(ctx))
		restore(ctx, INET_ADDR_AF_INET);
	return 1;
}

SEC("cgroup/recvmsg6")
int redirect_recvmsg6(struct bpf_sock_addr *ctx)
{
	if (is_listener6(ctx))
		restore(ctx, INET_ADDR_AF_INET6);
	return 1;
}

SEC("cgroup/getpeername4")
int redirect_getpeername4(struct bpf_sock_addr *ctx)
{
	if (is_listener4(ctx))
		restore(ctx, INET_ADDR_AF_INET);
	return 1;
}

SEC("cgroup/getpeername6")
int redirect_getpeername6(struct bpf_sock_addr *ctx)
{
	if (is_listener6(ctx))
		restore(ctx, INET_ADDR_AF_INET6);
	return 1;
}

SEC("sockops")
int redirect_sockops(struct bpf_sock_ops *skops)
{
	inet_addr_file_at_connect(skops, &orig_dst, &by_peer);
	return 1;
}

/* Binds: loopback stays, the wildcard becomes loopback (a dev server bound to 0.0.0.0 keeps
 * working for the host), anything else is refused: the host's own addresses are reachable from
 * the network, which the agent must not serve. */
SEC("cgroup/bind4")
int redirect_bind4(struct bpf_sock_addr *ctx)
{
	__u32 ip = ctx->user_ip4;

	if (loopback4(ip))
		return 1;
	if (ip != 0)
		return 0;
	ctx->user_ip4 = bpf_htonl(0x7f000001);
	return 1;
}

SEC("cgroup/bind6")
int redirect_bind6(struct bpf_sock_addr *ctx)
{
	__u32 ip[4];

	read_ip6(ctx, ip);
	if (loopback6(ip))
		return 1;
	if (ip[0] != 0 || ip[1] != 0)
		return 0;
	if (ip[2] == 0 && ip[3] == 0) { /* :: */
		ctx->user_ip6[3] = bpf_htonl(1);
		return 1;
	}
	if (ip[2] == bpf_htonl(0xffff) && ip[3] == 0) { /* ::ffff:0.0.0.0 */
		ctx->user_ip6[3] = bpf_htonl(0x7f000001);
		return 1;
	}
	return 0;
}

/* A packet for one of the sandbox's sockets that did not come in on loopback is dropped: the
 * listener listen() bound to the wildcard address by itself, an unbound UDP socket's port. */
SEC("cgroup_skb/ingress")
int redirect_ingress(struct __sk_buff *skb)
{
	return skb->ingress_ifindex == LOOPBACK_IFINDEX ? 1 : 0;
}

/* ---- later supervisors: attached at the cgroup2 root, not the sandbox's cgroup ------------- */

/* The name of the running executable's file, as /proc/PID/exe's last component. */
#define PEER_EXE     "cloister-supervisor"
#define PEER_EXE_LEN (sizeof(PEER_EXE)) /* with its NUL */

static __always_inline bool current_is_peer(void)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	const unsigned char *name;
	char buf[PEER_EXE_LEN + 1];

	name = BPF_CORE_READ(task, mm, exe_file, f_path.dentry, d_name.name);
	if (!name || bpf_probe_read_kernel_str(buf, sizeof(buf), name) != PEER_EXE_LEN)
		return false;
	for (int i = 0; i < (int)PEER_EXE_LEN; i++)
		if (buf[i] != PEER_EXE[i])
			return false;
	return true;
}

/* A socket bound by another Cloister supervisor in the shared network namespace: its port is
 * refused to the sandbox from now on. post_bind runs before bind() returns, so before the
 * listen() that would make the port reachable: no window. Never fails a bind (1). Anybody can
 * name a program cloister-supervisor: that only takes its own ports from the sandbox. */
static __always_inline int note_peer_bind(struct bpf_sock *sk)
{
	__u16 port = bpf_htons((__u16)sk->src_port);
	__u8 one = 1;

	if (bpf_get_netns_cookie(sk) != host_netns_cookie ||
	    (__u32)(bpf_get_current_pid_tgid() >> 32) == own_tgid || !current_is_peer())
		return 1;
	bpf_map_update_elem(&peer_ports, &port, &one, BPF_ANY);
	return 1;
}

SEC("cgroup/post_bind4")
int redirect_peer_bind4(struct bpf_sock *sk)
{
	return note_peer_bind(sk);
}

SEC("cgroup/post_bind6")
int redirect_peer_bind6(struct bpf_sock *sk)
{
	return note_peer_bind(sk);
}
