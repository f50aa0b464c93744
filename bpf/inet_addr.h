/* The loaders' side of inet_addr_abi.h: a socket address as the key the BPF programs file a
 * connection under (inet_addr.bpf.h). */
#ifndef CLOISTER_INET_ADDR_H
#define CLOISTER_INET_ADDR_H

#include <sys/socket.h>
#include <linux/types.h>

#include "bpf/inet_addr_abi.h"

/* SA (a sockaddr_in or sockaddr_in6 of SA_LEN bytes at least) in *ret_key, padding zeroed.
 * -EINVAL for NULL or a short address, -EAFNOSUPPORT for another family; *ret_key is written
 * only on success. */
int inet_addr_from_sockaddr(const struct sockaddr *sa, socklen_t sa_len,
                            struct inet_addr_abi *ret_key);

#endif
