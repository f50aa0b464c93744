#include "supervisor/sandbox/sandbox_proto.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

bool sandbox_msg_has_fd(uint32_t type)
{
	return type == SANDBOX_MSG_LISTENER || type == SANDBOX_MSG_VIEW ||
	       type == SANDBOX_MSG_AGENT || type == SANDBOX_MSG_PTY;
}

int sandbox_msg_validate(const void *buf, size_t len, struct sandbox_msg *ret)
{
	struct sandbox_msg m;

	if (len != sizeof(m))
		return -EBADMSG;
	memcpy(&m, buf, sizeof(m));
	if (m.type < SANDBOX_MSG_GO || m.type >= SANDBOX_MSG_MAX_)
		return -EBADMSG;
	if (!memchr(m.text, '\0', sizeof(m.text)))
		return -EBADMSG;
	*ret = m;
	return 0;
}

int sandbox_exit_code_from_wait_status(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	/* Not a final status (stopped/continued): not an exit. */
	return -EINVAL;
}

int sandbox_format_id_map(unsigned inside, unsigned outside, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%u %u 1\n", inside, outside);

	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return n;
}

bool sandbox_want_userns(enum sandbox_userns mode, uid_t euid)
{
	switch (mode) {
	case SANDBOX_USERNS_ALWAYS:
		return true;
	case SANDBOX_USERNS_NEVER:
		return false;
	case SANDBOX_USERNS_AUTO:
	default:
		return euid != 0;
	}
}
