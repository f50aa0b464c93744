/* argv_race SECONDS PROGRAM GOOD BAD: the TOCTOU attack on an exec's arguments.
 *
 * For SECONDS, repeatedly forks a child that starts a thread flipping one argument buffer
 * between GOOD and BAD (paths; the shorter one padded with leading slashes, so give them the
 * same length where a rule matches GOOD exactly) while its main thread execs PROGRAM with argv
 * [PROGRAM, buffer]. A checker that reads the arguments and answers CONTINUE (seccomp) can be
 * raced: it may read GOOD while the kernel then copies BAD into the new image. PROGRAM is
 * expected to be tests/helpers/marker, which creates the file named by its last argument: if
 * BAD ever exists, the program ran with arguments nobody allowed.
 *
 * Prints one line: "argv_race: tries=N exit0=N eacces=N killed=N other=N bad=yes|no". Exits 0
 * if BAD never appeared, 1 if it did, 2 on a usage or setup error. */
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
#define EXIT_OTHER  122

static char args[2][PATH_MAX];
static char arg[PATH_MAX];
static atomic_uint flips;

static void *flipper(void *unused)
{
	(void)unused;
	for (unsigned i = 0;; i++) {
		memcpy(arg, args[i & 1], sizeof(arg));
		atomic_store_explicit(&flips, i, memory_order_relaxed);
	}
	return NULL;
}

static void child(const char *program)
{
	pthread_t t;
	char *argv[] = {(char *)program, arg, NULL};
	char *envp[] = {NULL};

	memcpy(arg, args[0], sizeof(arg));
	if (pthread_create(&t, NULL, flipper, NULL) != 0)
		_exit(EXIT_OTHER);
	while (atomic_load_explicit(&flips, memory_order_relaxed) < 1000)
		;
	execve(program, argv, envp);
	_exit(errno == EACCES ? EXIT_EACCES : EXIT_OTHER);
}

static int pad(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), n = la > lb ? la : lb;

	if (a[0] != '/' || b[0] != '/' || n >= PATH_MAX)
		return -1;
	memset(args, '/', sizeof(args));
	memcpy(args[0] + (n - la), a, la + 1);
	memcpy(args[1] + (n - lb), b, lb + 1);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long tries = 0, exit0 = 0, eacces = 0, killed = 0, other = 0;
	struct timespec start, now;
	struct stat st;
	double seconds;
	int bad;

	if (argc != 5 || (seconds = strtod(argv[1], NULL)) <= 0 || pad(argv[3], argv[4]) < 0) {
		fprintf(stderr, "usage: argv_race SECONDS PROGRAM /GOOD /BAD\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		int status;
		pid_t pid = fork();

		if (pid < 0) {
			perror("argv_race: fork");
			return 2;
		}
		if (pid == 0)
			child(argv[2]);
		if (waitpid(pid, &status, 0) < 0) {
			perror("argv_race: waitpid");
			return 2;
		}
		tries++;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			exit0++;
		else if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_EACCES)
			eacces++;
		else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			killed++;
		else
			other++;
		if (stat(argv[4], &st) == 0)
			break; /* won: no need to go on */
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 <
	         seconds);
	bad = stat(argv[4], &st) == 0;
	printf("argv_race: tries=%lu exit0=%lu eacces=%lu killed=%lu other=%lu bad=%s\n", tries,
	       exit0, eacces, killed, other, bad ? "yes" : "no");
	return bad ? 1 : 0;
}
