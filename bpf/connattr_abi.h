/* Structures and limits shared by connattr.bpf.c (the kernel side) and connattr.c (its loader).
 * Both sides include this file: keep it free of libc and of vmlinux.h, fixed-width types only.
 * Not part of the public API: callers use bpf/connattr.h. */
#ifndef CLOISTER_CONNATTR_ABI_H
#define CLOISTER_CONNATTR_ABI_H

/* Connections remembered (LRU: the oldest goes first; a new connection from the same local
 * address and port overwrites its entry). An entry is needed only from the connect to its
 * card, moments later: this many connections in between would push it out (the card then
 * names no process). About 1.5 MB of kernel memory, preallocated. */
#define CONNATTR_MAX 16384

/* The map's key is the client's end of the TCP connection: struct inet_addr_abi
 * (inet_addr_abi.h). */

/* Who called connect(2): ids in the initial pid namespace. */
struct connattr_abi_who {
	__u32 tgid;
	__u32 pid; /* the thread */
};

#endif
