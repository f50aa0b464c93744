/* execloop N [-j PAR] PROGRAM [ARGS…]: run PROGRAM N times (fork + exec + wait), PAR at a time.
 * Used by the bench (exec-heavy workload, native vs supervised) and by the integration tests
 * (many concurrent execs). Exits 0 when every run exited 0, else 1, and prints how many failed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n, par = 1, running = 0, failed = 0;
	int argi = 2;
	char *end;

	if (argc < 3)
		goto usage;
	n = strtol(argv[1], &end, 10);
	if (*end || n < 0)
		goto usage;
	if (strcmp(argv[2], "-j") == 0) {
		if (argc < 5)
			goto usage;
		par = strtol(argv[3], &end, 10);
		if (*end || par < 1)
			goto usage;
		argi = 4;
	}
	for (long started = 0; started < n || running > 0;) {
		int status;

		if (started < n && running < par) {
			pid_t pid = fork();

			if (pid < 0) {
				perror("execloop: fork");
				return 2;
			}
			if (pid == 0) {
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
	if (failed) {
		fprintf(stderr, "execloop: %ld of %ld runs failed\n", failed, n);
		return 1;
	}
	return 0;
usage:
	fprintf(stderr, "usage: execloop N [-j PAR] PROGRAM [ARGS...]\n");
	return 2;
}
