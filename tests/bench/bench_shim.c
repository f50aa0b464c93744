/* bench_shim: what a shimmed call costs over running the tool directly.
 *
 * `true` through /…/bin/true -> cloister-shim, served by the real shim listener
 * (tests/helpers/shim_testserver, host strategy, allowed without asking), against a direct
 * fork+exec+wait of /bin/true. Calls alternate so both see the same machine; medians. */
#include "tests/bench/bench.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CALLS 300

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* fork+exec+wait of PATH (argv[0] = NAME) with ENVP in CWD; microseconds, or -1. */
static double run_once(const char *path, const char *name, char *const envp[], const char *cwd)
{
	char *argv[] = {(char *)name, NULL};
	double t0 = now_us();
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (chdir(cwd) < 0)
			_exit(127);
		execve(path, argv, envp);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	return now_us() - t0;
}

void bench_shim(void)
{
	const char *shim = getenv("SHIM"), *helpers = getenv("HELPERS");
	char tmp[] = "/tmp/cloister-bench-shim.XXXXXX";
	char server[600], wt[600], bin[600], link[700], sock[600], ready[600], envsock[700];
	char *envp[] = {envsock, "PATH=/usr/bin:/bin", "LC_ALL=C", NULL};
	static double direct[CALLS], shimmed[CALLS];
	pid_t pid;
	int n = 0;

	if (!shim || !helpers) {
		printf("shim: skipped (SHIM and HELPERS are set by make bench)\n");
		return;
	}
	if (!mkdtemp(tmp)) {
		printf("shim: skipped (mkdtemp: %s)\n", strerror(errno));
		return;
	}
	snprintf(server, sizeof(server), "%s/shim_testserver", helpers);
	snprintf(wt, sizeof(wt), "%s/wt", tmp);
	snprintf(bin, sizeof(bin), "%s/bin", tmp);
	snprintf(link, sizeof(link), "%s/true", bin);
	snprintf(sock, sizeof(sock), "%s/shim.sock", tmp);
	snprintf(ready, sizeof(ready), "%s/ready", tmp);
	snprintf(envsock, sizeof(envsock), "CLOISTER_SOCKET=%s", sock);
	if (mkdir(wt, 0755) < 0 || mkdir(bin, 0755) < 0 || symlink(shim, link) < 0) {
		printf("shim: skipped (setting up %s: %s)\n", tmp, strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		execl(server, server, "--worktree", wt, "--unix", sock, "--strategy", "host",
		      "--shim-dir", bin, "--allow", "true", "--ready", ready, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200 && access(ready, F_OK) < 0; i++)
		usleep(10000);

	for (int i = 0; i < CALLS; i++) {
		double d = run_once("/bin/true", "true", envp, wt);
		double s = run_once(link, "true", envp, wt);

		if (d < 0 || s < 0)
			break;
		direct[n] = d;
		shimmed[n] = s;
		n++;
	}
	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}
	unlink(link);
	unlink(ready);
	rmdir(bin);
	rmdir(wt);
	rmdir(tmp);
	if (n < CALLS) {
		printf("shim: FAILED after %d calls (is the shim server running?)\n", n);
		return;
	}
	qsort(direct, CALLS, sizeof(double), cmp_double);
	qsort(shimmed, CALLS, sizeof(double), cmp_double);
	printf("shim: `true` direct %.0f us, through cloister-shim %.0f us (median of %d): "
	       "%.2fx, +%.0f us a call\n",
	       direct[CALLS / 2], shimmed[CALLS / 2], CALLS, shimmed[CALLS / 2] / direct[CALLS / 2],
	       shimmed[CALLS / 2] - direct[CALLS / 2]);
}
