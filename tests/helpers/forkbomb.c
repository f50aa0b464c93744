/* A bounded fork bomb, for the sandbox's task limit: make up to N processes (fork) or threads
 * (thread) that all wait on one pipe, until the kernel refuses one, then let them all go (close
 * the pipe: each sees EOF and exits), wait for them, and say how it went:
 *
 *   forkbomb fork|thread N
 *   -> "forkbomb: made K of N, then fork: Resource temporarily unavailable"   exit 0
 *   -> "forkbomb: made N of N, never refused"                                 exit 2
 *
 * Nothing outlives it: the children exit on EOF even if the parent is killed (the kernel closes
 * its end), and the parent reaps them before it exits. */
#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int wait_fd = -1;

static void *thread_main(void *arg)
{
	char c;

	(void)arg;
	while (read(wait_fd, &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

int main(int argc, char **argv)
{
	int p[2], err = 0;
	long n, made = 0;
	bool threads;
	pthread_t *tids = NULL;
	pthread_attr_t attr;

	if (argc != 3 || (strcmp(argv[1], "fork") && strcmp(argv[1], "thread")) ||
	    (n = strtol(argv[2], NULL, 10)) <= 0 || n > 100000) {
		fprintf(stderr, "usage: forkbomb fork|thread N (1..100000)\n");
		return 1;
	}
	threads = strcmp(argv[1], "thread") == 0;
	if (pipe(p) < 0) {
		perror("forkbomb: pipe");
		return 1;
	}
	wait_fd = p[0];
	signal(SIGPIPE, SIG_IGN);
	if (threads) {
		tids = calloc((size_t)n, sizeof(*tids));
		if (!tids || pthread_attr_init(&attr) != 0 ||
		    pthread_attr_setstacksize(&attr, 64 * 1024) != 0) {
			fprintf(stderr, "forkbomb: out of memory\n");
			return 1;
		}
	}
	while (made < n) {
		if (threads) {
			err = pthread_create(&tids[made], &attr, thread_main, NULL);
			if (err)
				break;
		} else {
			pid_t pid = fork();

			if (pid < 0) {
				err = errno;
				break;
			}
			if (pid == 0) {
				char c;

				close(p[1]);
				while (read(p[0], &c, 1) < 0 && errno == EINTR)
					;
				_exit(0);
			}
		}
		made++;
	}
	close(p[1]); /* every waiter sees EOF now */
	if (threads) {
		for (long i = 0; i < made; i++)
			pthread_join(tids[i], NULL);
	} else {
		while (wait(NULL) > 0 || errno == EINTR)
			;
	}
	if (made == n) {
		printf("forkbomb: made %ld of %ld, never refused\n", made, n);
		return 2;
	}
	printf("forkbomb: made %ld of %ld, then %s: %s\n", made, n, argv[1], strerror(err));
	return 0;
}
