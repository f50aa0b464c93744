/* threadstop PID TID: holds one thread of a running process stopped, the others running, at a
 * moment it sleeps in epoll_wait (a loop's thread that holds no lock there), until this program
 * gets SIGTERM or SIGINT, or 60 s passed; then lets it go. Prints "stopped TID in epoll_wait"
 * once it holds it. Exits 0 after a clean release, 1 when the thread was never found in
 * epoll_wait (a few hundred tries), 2 on a usage or ptrace error.
 *
 * PTRACE_SEIZE and PTRACE_INTERRUPT stop that thread alone. Stopped in epoll_wait, the syscall
 * returns EINTR when it is let go, which an event loop retries. Where the thread is comes from
 * /proc/PID/task/TID/syscall, read while it is stopped: the number of the syscall it entered
 * last, which the interrupt of a sleeping syscall leaves (an interrupt from user code says -1). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TRIES    500
#define HOLD_S   60
#define RETRY_NS 10000000L

static long current_syscall(const char *path)
{
	char buf[64] = {0};
	FILE *f = fopen(path, "re");
	long nr = -2;

	if (!f)
		return -2;
	if (fgets(buf, sizeof(buf), f) && strncmp(buf, "running", 7) != 0)
		nr = strtol(buf, NULL, 10);
	fclose(f);
	return nr;
}

static int is_epoll_wait(long nr)
{
#ifdef SYS_epoll_wait
	if (nr == SYS_epoll_wait)
		return 1;
#endif
#ifdef SYS_epoll_pwait2
	if (nr == SYS_epoll_pwait2)
		return 1;
#endif
	return nr == SYS_epoll_pwait;
}

/* Stops TID (interrupt, then the stop it reports): 0, or -1. A signal-delivery stop on the
 * way gets its signal back. */
static int stop_thread(pid_t tid)
{
	int status;

	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0)
		return -1;
	for (;;) {
		if (waitpid(tid, &status, __WALL) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (!WIFSTOPPED(status))
			return -1; /* gone */
		if ((status >> 16) == PTRACE_EVENT_STOP)
			return 0;
		if (ptrace(PTRACE_CONT, tid, 0, WSTOPSIG(status)) < 0)
			return -1;
	}
}

int main(int argc, char **argv)
{
	struct timespec retry = {0, RETRY_NS}, hold = {HOLD_S, 0};
	char path[64];
	sigset_t sigs;
	pid_t pid, tid;
	int t;

	if (argc != 3)
		return fprintf(stderr, "usage: threadstop PID TID\n"), 2;
	pid = (pid_t)atoi(argv[1]);
	tid = (pid_t)atoi(argv[2]);
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0)
		return fprintf(stderr, "threadstop: seize %d: %s\n", (int)tid, strerror(errno)), 2;
	for (t = 0; t < TRIES; t++) {
		long nr;

		if (stop_thread(tid) < 0)
			return fprintf(stderr, "threadstop: stop %d: %s\n", (int)tid,
			               strerror(errno)),
			       2;
		nr = current_syscall(path);
		if (is_epoll_wait(nr))
			break;
		if (ptrace(PTRACE_CONT, tid, 0, 0) < 0)
			return fprintf(stderr, "threadstop: resume %d: %s\n", (int)tid,
			               strerror(errno)),
			       2;
		nanosleep(&retry, NULL);
	}
	if (t == TRIES) {
		fprintf(stderr, "threadstop: %d was never in epoll_wait in %d tries\n", (int)tid,
		        TRIES);
		(void)ptrace(PTRACE_DETACH, tid, 0, 0);
		return 1;
	}
	printf("stopped %d in epoll_wait\n", (int)tid);
	fflush(stdout);
	(void)sigtimedwait(&sigs, NULL, &hold);
	if (ptrace(PTRACE_DETACH, tid, 0, 0) < 0)
		return fprintf(stderr, "threadstop: detach %d: %s\n", (int)tid, strerror(errno)), 2;
	return 0;
}
