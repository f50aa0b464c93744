#include "supervisor/child_setup.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

int child_setup_open_beneath(const char *root, const char *relative)
{
	struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
	                       .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
	int rootfd, fd;

	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return -errno;
	fd = (int)syscall(SYS_openat2, rootfd, relative, &how, sizeof(how));
	if (fd < 0)
		fd = -errno;
	close(rootfd);
	return fd;
}
