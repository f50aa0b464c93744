#include "supervisor/sandbox/landlock.h"

#include <errno.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cleanup.h"

#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif

/* The kernel's struct landlock_ruleset_attr as of ABI 6. The kernel accepts a shorter struct
 * from older callers and checks that the bytes it does not know are zero, so the size we pass
 * tells it which fields we mean. */
struct cl_landlock_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

/* The first ABI with scopes. */
#define LANDLOCK_ABI_SCOPES 6

int landlock_abi(void)
{
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	if (v >= 0)
		return (int)v;
	if (errno == ENOSYS || errno == EOPNOTSUPP)
		return 0;
	return -errno;
}

uint64_t landlock_scopes_supported(int abi)
{
	if (abi < LANDLOCK_ABI_SCOPES)
		return 0;
	return CL_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | CL_LANDLOCK_SCOPE_SIGNAL;
}

int landlock_restrict(const struct landlock_plan *plan)
{
	struct cl_landlock_ruleset_attr attr = {.scoped = plan->scoped};
	_cleanup_close_ int fd = -EBADF;

	if (!plan->scoped)
		return 0;
	fd = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
	if (fd < 0)
		return errno == ENOSYS || errno == EINVAL || errno == E2BIG ? -EOPNOTSUPP : -errno;
	if (syscall(SYS_landlock_restrict_self, fd, 0) < 0)
		return -errno;
	return 0;
}
