/* An IPv4 or IPv6 address and port as the eBPF programs keep them in their maps: the one
 * layout of redirect.bpf.c's and connattr.bpf.c's keys (the client's end of a TCP connection)
 * and of redirect.bpf.c's original destinations. Both sides include this file: keep it free of
 * libc and of vmlinux.h, fixed-width types only. The BPF programs fill it with inet_addr.bpf.h,
 * the loaders with inet_addr.h. */
#ifndef CLOISTER_INET_ADDR_ABI_H
#define CLOISTER_INET_ADDR_ABI_H

#define INET_ADDR_AF_INET  2
#define INET_ADDR_AF_INET6 10

/* addr in network byte order (IPv4 in addr[0], the rest 0), port in network byte order. */
struct inet_addr_abi {
	__u32 family;
	__u16 port;
	__u16 pad; /* always 0: keys are hashed byte for byte */
	__u32 addr[4];
};

#endif
