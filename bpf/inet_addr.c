/* See inet_addr.h. */
#include "bpf/inet_addr.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>

_Static_assert(INET_ADDR_AF_INET == AF_INET && INET_ADDR_AF_INET6 == AF_INET6, "families");
_Static_assert(sizeof(struct inet_addr_abi) == 24, "no padding the kernel would hash unset");

int inet_addr_from_sockaddr(const struct sockaddr *sa, socklen_t sa_len,
                            struct inet_addr_abi *ret_key)
{
	struct inet_addr_abi key;

	memset(&key, 0, sizeof(key)); /* padding included: the key is hashed byte for byte */
	if (!sa)
		return -EINVAL;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)sa;

		if (sa_len < sizeof(*s4))
			return -EINVAL;
		key.family = AF_INET;
		key.port = s4->sin_port;
		key.addr[0] = s4->sin_addr.s_addr;
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)sa;

		if (sa_len < sizeof(*s6))
			return -EINVAL;
		key.family = AF_INET6;
		key.port = s6->sin6_port;
		memcpy(key.addr, &s6->sin6_addr, sizeof(key.addr));
	} else {
		return -EAFNOSUPPORT;
	}
	*ret_key = key;
	return 0;
}
