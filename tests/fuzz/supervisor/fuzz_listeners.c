/* libFuzzer target: the reading of the kernel's inet_diag answer (listeners_parse), for both
 * kinds of listener. The kernel alone answers (the sender is checked first), but its bytes
 * are read as data all the same: no length is trusted. Byte 0 picks the kind and the request
 * number; the rest is the datagram, copied to an aligned buffer as recvfrom() fills one. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <linux/netlink.h>

#include "supervisor/web/listeners.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static _Alignas(struct nlmsghdr) unsigned char buf[32 * 1024];
	struct listeners_answer ans = {0};

	if (size < 1 || size - 1 > sizeof(buf))
		return 0;
	memcpy(buf, data + 1, size - 1);
	(void)listeners_parse(buf, size - 1, data[0] >> 1, 9999,
	                      (data[0] & 1) ? LISTENERS_ANY : LISTENERS_LOOPBACK4, &ans);
	return 0;
}
