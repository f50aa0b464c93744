/* exec_appear SECONDS PATH PROGRAM MARKER: the "file appears between check and exec" attack.
 *
 * A second process makes PATH appear and disappear in a tight loop (a hard link to PROGRAM,
 * then unlinked), while this one, for SECONDS, forks children that exec PATH with argv
 * [PATH, MARKER] until the exec does anything but ENOENT. A checker that answers "does not
 * exist" by letting the kernel look again (seccomp CONTINUE) can be raced: it sees nothing, the
 * kernel then finds the file and runs it unchecked. PROGRAM is expected to be
 * tests/helpers/marker, which creates MARKER first thing if it ever runs.
 *
 * Prints one line: "exec_appear: tries=N ran=N eacces=N enoent=N killed=N other=N marker=yes|no"
 * (ran: an image ran and exited 0; enoent: the child gave up after many ENOENTs; killed:
 * SIGKILL, the exec backstop's answer). Exits 0 if MARKER never appeared, 1 if it did, 2 on a
 * usage or setup error. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXIT_EACCES 120
#define EXIT_ENOENT 121
#define EXIT_OTHER  122

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	unsigned long tries = 0, ran = 0, eacces = 0, enoent = 0, killed = 0, other = 0;
	double seconds, start;
	struct stat st;
	pid_t flipper;
	int marker_seen;

	if (argc != 5 || (seconds = strtod(argv[1], NULL)) <= 0) {
		fprintf(stderr, "usage: exec_appear SECONDS PATH PROGRAM MARKER\n");
		return 2;
	}
	unlink(argv[2]);
	flipper = fork();
	if (flipper < 0)
		return 2;
	if (flipper == 0) {
		for (;;) {
			if (link(argv[3], argv[2]) < 0 && errno != EEXIST)
				_exit(2);
			unlink(argv[2]);
		}
	}
	start = now();
	do {
		int status;
		pid_t pid = fork();

		if (pid < 0)
			break;
		if (pid == 0) {
			char *cargv[] = {argv[2], argv[4], NULL};
			char *envp[] = {NULL};

			for (int i = 0; i < 10000; i++) {
				execve(argv[2], cargv, envp);
				if (errno == EACCES)
					_exit(EXIT_EACCES);
				if (errno != ENOENT)
					_exit(EXIT_OTHER);
			}
			_exit(EXIT_ENOENT);
		}
		if (waitpid(pid, &status, 0) < 0)
			break;
		tries++;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			ran++;
		else if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_EACCES)
			eacces++;
		else if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_ENOENT)
			enoent++;
		else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			killed++;
		else
			other++;
	} while (stat(argv[4], &st) < 0 && now() - start < seconds);
	kill(flipper, SIGKILL);
	waitpid(flipper, NULL, 0);
	unlink(argv[2]);
	marker_seen = stat(argv[4], &st) == 0;
	printf("exec_appear: tries=%lu ran=%lu eacces=%lu enoent=%lu killed=%lu other=%lu "
	       "marker=%s\n",
	       tries, ran, eacces, enoent, killed, other, marker_seen ? "yes" : "no");
	return marker_seen ? 1 : 0;
}
