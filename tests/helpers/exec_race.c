/* exec_race SECONDS ALLOWED DENIED MARKER: the TOCTOU attack on exec path checks.
 *
 * For SECONDS, repeatedly forks a child that starts a thread flipping one path buffer between
 * ALLOWED and DENIED in a tight loop while its main thread execs whatever the buffer holds, with
 * argv [path, MARKER]. A checker that reads the path and answers CONTINUE (seccomp) can be
 * raced: it may read ALLOWED while the kernel then opens DENIED. DENIED is expected to be
 * tests/helpers/marker, which creates MARKER first thing if it ever runs.
 *
 * Prints one line: "exec_race: tries=N exit0=N eacces=N eperm=N killed=N other=N marker=yes|no"
 * (exit0: an image ran and exited 0; eacces/eperm: execve failed so; killed: SIGKILL, the exec
 * backstop's answer; other: anything else, e.g. a torn path). Exits 0 if MARKER never
 * appeared, 1 if it did (the denied binary ran), 2 on a usage or setup error. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXIT_EACCES 120
#define EXIT_EPERM  121
#define EXIT_OTHER  122

static char paths[2][PATH_MAX];
static char target[PATH_MAX];
static atomic_uint flips;

static void *flipper(void *arg)
{
	(void)arg;
	for (unsigned i = 0;; i++) {
		memcpy(target, paths[i & 1], sizeof(target));
		atomic_store_explicit(&flips, i, memory_order_relaxed);
	}
	return NULL;
}

static void child(const char *marker)
{
	pthread_t t;
	char *argv[] = {target, (char *)marker, NULL};
	char *envp[] = {NULL};

	memcpy(target, paths[0], sizeof(target));
	if (pthread_create(&t, NULL, flipper, NULL) != 0)
		_exit(EXIT_OTHER);
	/* Race only once the flipper really runs (on another CPU, or we get preempted). */
	while (atomic_load_explicit(&flips, memory_order_relaxed) < 1000)
		;
	for (int i = 0; i < 100000; i++) {
		execve(target, argv, envp);
		/* A torn path (ENOENT) is no verdict: try again while the thread flips. */
		if (errno == EACCES)
			_exit(EXIT_EACCES);
		if (errno == EPERM)
			_exit(EXIT_EPERM);
		if (errno != ENOENT && errno != ENOTDIR)
			_exit(EXIT_OTHER);
	}
	_exit(EXIT_OTHER); /* neither path could ever be opened */
}

/* Pad the shorter path with leading slashes ("///x" names "/x") so both have the same length:
 * a half-copied buffer then still mostly names one of the two files. */
static int pad_paths(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), n = la > lb ? la : lb;

	if (a[0] != '/' || b[0] != '/' || n >= PATH_MAX)
		return -1;
	memset(paths, '/', sizeof(paths));
	memcpy(paths[0] + (n - la), a, la + 1);
	memcpy(paths[1] + (n - lb), b, lb + 1);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long tries = 0, exit0 = 0, eacces = 0, eperm = 0, killed = 0, other = 0;
	struct timespec start, now;
	struct stat st;
	double seconds;
	int marker_seen;

	if (argc != 5 || (seconds = strtod(argv[1], NULL)) <= 0 ||
	    pad_paths(argv[2], argv[3]) < 0) {
		fprintf(stderr, "usage: exec_race SECONDS /ALLOWED /DENIED MARKER\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		int status;
		pid_t pid = fork();

		if (pid < 0) {
			perror("exec_race: fork");
			return 2;
		}
		if (pid == 0)
			child(argv[4]);
		if (waitpid(pid, &status, 0) < 0) {
			perror("exec_race: waitpid");
			return 2;
		}
		tries++;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			exit0++;
		else if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_EACCES)
			eacces++;
		else if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_EPERM)
			eperm++;
		else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			killed++;
		else
			other++;
		if (stat(argv[4], &st) == 0)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 <
	         seconds);

	marker_seen = stat(argv[4], &st) == 0;
	printf("exec_race: tries=%lu exit0=%lu eacces=%lu eperm=%lu killed=%lu other=%lu "
	       "marker=%s\n",
	       tries, exit0, eacces, eperm, killed, other, marker_seen ? "yes" : "no");
	return marker_seen ? 1 : 0;
}
