/* Structures and limits shared by redirect.bpf.c (the kernel side) and redirect.c (its loader).
 * Both sides include this file: keep it free of libc and of vmlinux.h, fixed-width types only.
 * Not part of the public API: callers use bpf/redirect.h. */
#ifndef CLOISTER_REDIRECT_ABI_H
#define CLOISTER_REDIRECT_ABI_H

/* Redirected TCP connections remembered until the proxy looks them up (LRU: an entry the proxy
 * never asks for is evicted eventually; every new connection from the same local address and
 * port overwrites or clears it first). */
#define REDIRECT_MAX_PENDING 65536

/* Ports of the supervisors' own listeners refused to the sandbox (redirect_refuse_port). */
#define REDIRECT_MAX_REFUSED 256

#define REDIRECT_AF_PACKET 17

/* Original destinations and the by-peer map's keys (the client's end of a redirected
 * connection, as the proxy's accept() sees it) are struct inet_addr_abi (inet_addr_abi.h). */

#endif
