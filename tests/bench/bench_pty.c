/* bench_pty: the agent's terminal. 64 MiB of text, plain and coloured, written to a terminal,
 * natively (the writer on a pty, the bench reading its master) vs through `cloister-supervisor
 * run` (the writer on the agent's own pty, the supervisor relaying it to the bench's pty: one
 * pty more, the relay's copy, its filter and its escape-sequence tracking). Medians of ROUNDS, in
 * MiB/s. And what the pty costs `run -- true`: on a terminal (devpts mount, pty, relay) vs without
 * one. */
#include "tests/bench/bench.h"

#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 5
#define BYTES  "67108864"
#define LINE   "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ $ ls -l"
/* The same with colours, as `ls --color` or a TUI writes it: every sequence goes through the
 * relay's filter (held to its final byte, then judged). */
#define COLOR_LINE                                                                        \
	"\\033[1;34m0123456789\\033[0m \\033[38;5;208mabcdefghijklmnopqrstuvwxyz\\033[m " \
	"\\033[32mABCDEFGHIJKLMNOPQRSTUVWXYZ\\033[0m \\033[7m$ ls -l\\033[27m"

static char tmp[] = "/tmp/cloister-bench-pty.XXXXXX";

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Run ARGV with /dev/null as stdio; the seconds it took, or -1. */
static double timed_without_pty(char *const argv[])
{
	char h[600], s[600];
	char *envp[] = {h, s, "PATH=/usr/bin:/bin", "LC_ALL=C", NULL};
	double t0 = now_s();
	int status;
	pid_t pid;

	snprintf(h, sizeof(h), "HOME=%s/home", tmp);
	snprintf(s, sizeof(s), "XDG_STATE_HOME=%s/state", tmp);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (null < 0 || setsid() < 0)
			_exit(127);
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	return now_s() - t0;
}

/* Run ARGV on a new pty (its controlling terminal and stdio) and read the master until the
 * terminal closes; the seconds it took, or -1. */
static double timed_on_pty(char *const argv[], size_t *ret_bytes)
{
	static char buf[65536];
	char h[600], s[600];
	char *envp[] = {h, s, "PATH=/usr/bin:/bin", "LC_ALL=C", "TERM=xterm", NULL};
	int master, slave, status;
	size_t bytes = 0;
	double t0;
	pid_t pid;

	snprintf(h, sizeof(h), "HOME=%s/home", tmp);
	snprintf(s, sizeof(s), "XDG_STATE_HOME=%s/state", tmp);
	if (openpty(&master, &slave, NULL, NULL, NULL) < 0)
		return -1;
	t0 = now_s();
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) < 0)
			_exit(127);
		dup2(slave, 0);
		dup2(slave, 1);
		dup2(slave, 2);
		close(slave);
		close(master);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	close(slave);
	for (;;) {
		ssize_t n = read(master, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* EIO: the last slave is closed */
		bytes += (size_t)n;
	}
	close(master);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	*ret_bytes = bytes;
	return now_s() - t0;
}

void bench_pty(void)
{
	const char *supervisor = getenv("SUPERVISOR");
	char cfgdir[600], path[700], cmd[256];
	char *native[] = {"/bin/sh", "-c", cmd, NULL};
	char *supervised[] = {(char *)supervisor,
	                      "run",
	                      "--config-dir",
	                      cfgdir,
	                      "--ask",
	                      "none",
	                      "-q",
	                      "--no-web",
	                      "--net",
	                      "none",
	                      "--",
	                      "/bin/sh",
	                      "-c",
	                      cmd,
	                      NULL};
	double n[ROUNDS], s[ROUNDS];
	size_t nb = 0, sb = 0;
	FILE *f;

	if (!supervisor) {
		printf("pty: skipped (run through `make bench`: SUPERVISOR unset)\n");
		return;
	}
	if (geteuid() != 0) {
		printf("pty: skipped (needs root for the sandbox's cgroup)\n");
		return;
	}
	if (!mkdtemp(tmp)) {
		printf("pty: cannot create %s\n", tmp);
		return;
	}
	snprintf(cfgdir, sizeof(cfgdir), "%s/config", tmp);
	snprintf(path, sizeof(path), "%s/home", tmp);
	mkdir(cfgdir, 0700);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/state", tmp);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/config.yaml", cfgdir);
	f = fopen(path, "we");
	if (f) {
		fputs("exec:\n  security: allowlist\n  ask: off\n  allow:\n"
		      "    - path: \"/usr/bin/*\"\n",
		      f);
		fclose(f);
	}
	for (int colors = 0; colors < 2; colors++) {
		if (colors)
			snprintf(cmd, sizeof(cmd), "yes \"$(printf '%s')\" | head -c %s",
			         COLOR_LINE, BYTES);
		else
			snprintf(cmd, sizeof(cmd), "yes '%s' | head -c %s", LINE, BYTES);
		for (int i = 0; i < ROUNDS; i++) {
			n[i] = timed_on_pty(native, &nb);
			s[i] = timed_on_pty(supervised, &sb);
			if (n[i] < 0 || s[i] < 0 || nb < 67108864 || sb < 67108864) {
				printf("pty: failed to measure (native %zu bytes, supervised "
				       "%zu)\n",
				       nb, sb);
				goto out;
			}
		}
		qsort(n, ROUNDS, sizeof(*n), cmp_double);
		qsort(s, ROUNDS, sizeof(*s), cmp_double);
		printf("64 MiB of %s to the terminal: native pty %.0f MiB/s (%.3f s), through "
		       "run's "
		       "relay "
		       "%.0f MiB/s (%.3f s): %.2fx the time\n",
		       colors ? "coloured text" : "text", 64 / n[ROUNDS / 2], n[ROUNDS / 2],
		       64 / s[ROUNDS / 2], s[ROUNDS / 2], s[ROUNDS / 2] / n[ROUNDS / 2]);
	}
	{
		char *truth[] = {(char *)supervisor,
		                 "run",
		                 "--config-dir",
		                 cfgdir,
		                 "--ask",
		                 "none",
		                 "-q",
		                 "--",
		                 "/usr/bin/true",
		                 NULL};
		double with[11], without[11];
		size_t ignored;

		for (int i = 0; i < 11; i++) {
			with[i] = timed_on_pty(truth, &ignored);
			without[i] = timed_without_pty(truth);
			if (with[i] < 0 || without[i] < 0) {
				printf("run -- true on a terminal: failed to measure\n");
				goto out;
			}
		}
		qsort(with, 11, sizeof(*with), cmp_double);
		qsort(without, 11, sizeof(*without), cmp_double);
		printf("run -- true on a terminal (its own pty, relayed): %.1f ms; without a "
		       "terminal: "
		       "%.1f ms (medians of 11)\n",
		       with[5] * 1e3, without[5] * 1e3);
	}
out:
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		printf("pty: could not remove %s\n", tmp);
}
