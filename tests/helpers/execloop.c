/* execloop N [-j PAR] [-s] PROGRAM [ARGS…]: run PROGRAM N times (fork + exec + wait), PAR at a
 * time. Used by the bench (exec-heavy workload, native vs supervised) and by the integration tests
 * (many concurrent execs). Exits 0 when every run exited 0, else 1, and prints how many failed.
 *
 * -s (synchronised, for the bench): print "ready" and wait for one byte on stdin before the loop,
 * print "done WALL CPU" (the loop's own wall time, and the CPU time this process and its children
 * spent in it, in nanoseconds) and wait for one more byte (or EOF) before exiting; PROGRAM's
 * stdout goes to stderr. So the loop alone is timed, without `run`'s start-up and teardown, and
 * whoever drives it can read the supervisor's CPU time at both ends while nothing else happens. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t tv_ns(struct timeval tv)
{
	return (uint64_t)tv.tv_sec * 1000000000ULL + (uint64_t)tv.tv_usec * 1000ULL;
}

/* User + system time of this process and of its reaped children. */
static uint64_t cpu_ns(void)
{
	struct rusage self, children;

	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &children);
	return tv_ns(self.ru_utime) + tv_ns(self.ru_stime) + tv_ns(children.ru_utime) +
	       tv_ns(children.ru_stime);
}

/* One byte from stdin: the driver's go-ahead. False on EOF or error. */
static bool await_go(void)
{
	char c;
	ssize_t n;

	do
		n = read(STDIN_FILENO, &c, 1);
	while (n < 0 && errno == EINTR);
	return n == 1;
}

int main(int argc, char **argv)
{
	long n, par = 1, running = 0, failed = 0;
	bool sync = false;
	uint64_t t0, c0;
	int argi = 2;
	char *end;

	if (argc < 3)
		goto usage;
	n = strtol(argv[1], &end, 10);
	if (*end || n < 0)
		goto usage;
	for (;;) {
		if (argi < argc && strcmp(argv[argi], "-j") == 0) {
			if (argi + 1 >= argc)
				goto usage;
			par = strtol(argv[argi + 1], &end, 10);
			if (*end || par < 1)
				goto usage;
			argi += 2;
		} else if (argi < argc && strcmp(argv[argi], "-s") == 0) {
			sync = true;
			argi++;
		} else {
			break;
		}
	}
	if (argi >= argc)
		goto usage;
	if (sync) {
		printf("ready\n");
		fflush(stdout);
		if (!await_go())
			return 2;
	}
	c0 = cpu_ns();
	t0 = now_ns();
	for (long started = 0; started < n || running > 0;) {
		int status;

		if (started < n && running < par) {
			pid_t pid = fork();

			if (pid < 0) {
				perror("execloop: fork");
				return 2;
			}
			if (pid == 0) {
				/* stdout carries the protocol: the program's output goes to stderr.
				 */
				if (sync && dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
					_exit(127);
				execv(argv[argi], argv + argi);
				_exit(errno == EACCES ? 126 : 127);
			}
			started++;
			running++;
			continue;
		}
		if (wait(&status) < 0) {
			perror("execloop: wait");
			return 2;
		}
		running--;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed++;
	}
	if (sync) {
		uint64_t wall = now_ns() - t0;

		printf("done %llu %llu\n", (unsigned long long)wall,
		       (unsigned long long)(cpu_ns() - c0));
		fflush(stdout);
		(void)await_go();
	}
	if (failed) {
		fprintf(stderr, "execloop: %ld of %ld runs failed\n", failed, n);
		return 1;
	}
	return 0;
usage:
	fprintf(stderr, "usage: execloop N [-j PAR] [-s] PROGRAM [ARGS...]\n");
	return 2;
}
