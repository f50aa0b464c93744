/* The BPF programs' side of inet_addr_abi.h: include it after vmlinux.h or <linux/bpf.h>. */
#ifndef CLOISTER_INET_ADDR_BPF_H
#define CLOISTER_INET_ADDR_BPF_H

#include <stdbool.h>

#include "bpf/inet_addr_abi.h"

/* The local end (address, port) of the TCP connection a sockops program is called for: what
 * the proxy's accept() sees as the peer, so the key the loaders rebuild with
 * inet_addr_from_sockaddr(). Every byte of *ret is written (the padding too: keys are hashed
 * byte for byte). False for a family other than IPv4 and IPv6. */
static __always_inline bool inet_addr_local_end(const struct bpf_sock_ops *skops,
                                                struct inet_addr_abi *ret)
{
	__builtin_memset(ret, 0, sizeof(*ret));
	ret->family = skops->family;
	ret->port = bpf_htons((__u16)skops->local_port);
	if (skops->family == INET_ADDR_AF_INET) {
		ret->addr[0] = skops->local_ip4;
	} else if (skops->family == INET_ADDR_AF_INET6) {
		ret->addr[0] = skops->local_ip6[0];
		ret->addr[1] = skops->local_ip6[1];
		ret->addr[2] = skops->local_ip6[2];
		ret->addr[3] = skops->local_ip6[3];
	} else {
		return false;
	}
	return true;
}

/* A sockops program's whole work at TCP_CONNECT (the local port bound, the SYN not sent yet):
 * what STORAGE (an sk_storage map) keeps for the socket is filed in BY_PEER under the local
 * end, the key the loader looks the connection up by; a socket with nothing kept clears that
 * key, an older connection's entry, now stale. STORAGE's values and BY_PEER's must be alike. */
static __always_inline void inet_addr_file_at_connect(struct bpf_sock_ops *skops, void *storage,
                                                      void *by_peer)
{
	struct inet_addr_abi key;
	struct bpf_sock *sk;
	void *kept;

	if (skops->op != BPF_SOCK_OPS_TCP_CONNECT_CB)
		return;
	sk = skops->sk;
	if (!sk || !inet_addr_local_end(skops, &key))
		return;
	kept = bpf_sk_storage_get(storage, sk, 0, 0);
	if (kept)
		bpf_map_update_elem(by_peer, &key, kept, BPF_ANY);
	else
		bpf_map_delete_elem(by_peer, &key);
}

#endif
