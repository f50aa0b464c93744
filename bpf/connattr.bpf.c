/* Connection attribution without a seccomp notification per connect(2): which process opened
 * each TCP connection of the sandbox, for the domain card. Attached to the sandbox's cgroup.
 *
 *   connect4/6   keep the caller's (tgid, pid) in the socket's local storage; never refuses
 *                nor changes anything (the egress redirect, if attached, decides)
 *   sockops      at TCP_CONNECT (local port bound, SYN not sent yet): file it under the
 *                client's local address and port, which is what the proxy's accept() sees
 *                as the peer; clear the entry of that end when the socket has no caller kept
 *
 * The map is the supervisor's alone: never pinned, its fd never leaves the supervisor.
 *
 * Built on the UAPI's <linux/bpf.h>, not vmlinux.h: the contexts it reads are the stable ABI
 * the verifier rewrites, so the object carries no CO-RE relocation and libbpf need not read
 * and parse the kernel's BTF (5 MB) to load it — about 12 ms of every run's start as root.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "bpf/connattr_abi.h"
#include "bpf/inet_addr.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct connattr_abi_who);
} caller SEC(".maps");

/* The client's local (address, port) → who connected. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, CONNATTR_MAX);
	__type(key, struct inet_addr_abi);
	__type(value, struct connattr_abi_who);
} who_by_peer SEC(".maps");

static __always_inline int keep_caller(struct bpf_sock_addr *ctx)
{
	struct connattr_abi_who *w;
	__u64 id;

	if (!ctx->sk || ctx->type != 1 /* SOCK_STREAM */)
		return 1;
	w = bpf_sk_storage_get(&caller, ctx->sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!w)
		return 1; /* only the card loses its process name */
	id = bpf_get_current_pid_tgid();
	w->tgid = (__u32)(id >> 32);
	w->pid = (__u32)id;
	return 1;
}

SEC("cgroup/connect4")
int connattr_connect4(struct bpf_sock_addr *ctx)
{
	return keep_caller(ctx);
}

SEC("cgroup/connect6")
int connattr_connect6(struct bpf_sock_addr *ctx)
{
	return keep_caller(ctx);
}

SEC("sockops")
int connattr_sockops(struct bpf_sock_ops *skops)
{
	inet_addr_file_at_connect(skops, &caller, &who_by_peer);
	return 1;
}
