#include "supervisor/sandbox/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/stat.h>
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

/* struct landlock_path_beneath_attr (packed, as the kernel's). */
struct cl_landlock_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

#define CL_LANDLOCK_RULE_PATH_BENEATH 1

/* The first ABI with scopes. */
#define LANDLOCK_ABI_SCOPES 6

/* The rights a rule on a file (not a directory) may hold: execute, write, read, truncate,
 * ioctl on a device. */
#define FILE_RIGHTS                                                                        \
	((1ULL << 0) | CL_LANDLOCK_FS_WRITE_FILE | (1ULL << 2) | CL_LANDLOCK_FS_TRUNCATE | \
	 CL_LANDLOCK_FS_IOCTL_DEV)

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

uint64_t landlock_fs_write_rights(int abi)
{
	uint64_t rights;

	if (abi < 1)
		return 0;
	rights = CL_LANDLOCK_FS_WRITE_FILE | CL_LANDLOCK_FS_REMOVE_DIR |
	         CL_LANDLOCK_FS_REMOVE_FILE | CL_LANDLOCK_FS_MAKE_CHAR | CL_LANDLOCK_FS_MAKE_DIR |
	         CL_LANDLOCK_FS_MAKE_REG | CL_LANDLOCK_FS_MAKE_SOCK | CL_LANDLOCK_FS_MAKE_FIFO |
	         CL_LANDLOCK_FS_MAKE_BLOCK | CL_LANDLOCK_FS_MAKE_SYM;
	/* From ABI 2 a rename or link across directories is refused unless REFER is handled
	 * and granted, whether or not the ruleset names it: handle it and grant it with the
	 * rest. */
	if (abi >= 2)
		rights |= CL_LANDLOCK_FS_REFER;
	if (abi >= 3)
		rights |= CL_LANDLOCK_FS_TRUNCATE;
	if (abi >= 5)
		rights |= CL_LANDLOCK_FS_IOCTL_DEV;
	return rights;
}

static int add_path_rule(int ruleset, const struct landlock_path_rule *rule, uint64_t handled)
{
	struct cl_landlock_path_beneath_attr pb = {0};
	_cleanup_close_ int fd = open(rule->path, O_PATH | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	pb.allowed_access = rule->rights & handled;
	if (!S_ISDIR(st.st_mode))
		pb.allowed_access &= FILE_RIGHTS;
	if (!pb.allowed_access)
		return 0;
	pb.parent_fd = fd;
	if (syscall(SYS_landlock_add_rule, ruleset, CL_LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
		return -errno;
	return 0;
}

int landlock_restrict(const struct landlock_plan *plan, const char **ret_failed_path)
{
	struct cl_landlock_ruleset_attr attr = {
	        .handled_access_fs = plan->handled_fs,
	        .scoped = plan->scoped,
	};
	/* Without scopes, the struct as ABI 1 knew it: an older kernel refuses a longer one. */
	size_t size = plan->scoped ? sizeof(attr) : sizeof(attr.handled_access_fs);
	_cleanup_close_ int fd = -EBADF;

	if (!plan->scoped && !plan->handled_fs)
		return 0;
	fd = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (fd < 0)
		return errno == ENOSYS || errno == EINVAL || errno == E2BIG ? -EOPNOTSUPP : -errno;
	for (size_t i = 0; plan->handled_fs && i < plan->n_rules; i++) {
		int r = add_path_rule(fd, &plan->rules[i], plan->handled_fs);

		if (r < 0) {
			if (ret_failed_path)
				*ret_failed_path = plan->rules[i].path;
			return r;
		}
	}
	if (syscall(SYS_landlock_restrict_self, fd, 0) < 0)
		return -errno;
	return 0;
}
