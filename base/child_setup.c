#include "base/child_setup.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The kernel's struct sigaction for rt_sigaction(2), which glibc's does not match. */
struct kernel_sigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

void child_setup_reset_signals(void)
{
	struct kernel_sigaction dfl = {0}; /* SIG_DFL, no flags, empty mask */
	sigset_t none;

	for (int sig = 1; sig < NSIG; sig++) {
		struct kernel_sigaction old;

		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		if (syscall(SYS_rt_sigaction, sig, NULL, &old, sizeof(old.mask)) < 0 ||
		    old.handler == NULL /* SIG_DFL already */)
			continue;
		syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof(dfl.mask));
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

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

#if defined(__SANITIZE_THREAD__)
#define CLONE_PAST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CLONE_PAST_TSAN 1
#endif
#endif

#ifdef CLONE_PAST_TSAN
/* glibc's own name for clone(), which the tool does not intercept. */
extern int __clone(int (*fn)(void *), void *stack, int flags, void *arg, ...);
#define clone_shared __clone
#else
#define clone_shared clone
#endif

int child_setup_clone_vm(int (*fn)(void *), void *stack_top, int flags, void *arg, int *pidfd)
{
	return clone_shared(fn, stack_top, flags, arg, pidfd);
}
