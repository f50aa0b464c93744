/* Native and supervised runs of a program, see bench_agent.h. */
#include "tests/bench/bench_agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"

#define MAX_ARGS 64
#define LINE_MS  120000 /* for the agent's "ready" and "done": a bound, never a pace */

double bench_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* PATH (made by us) is the agent's. */
static int hand_over(const struct bench_agent *a, const char *path)
{
	return a->user && chown(path, a->user, a->group) < 0 ? -errno : 0;
}

int bench_agent_setup(struct bench_agent *a, uid_t user, const char *const work_dirs[])
{
	char path[256];
	_cleanup_fclose_ FILE *f = NULL;
	struct passwd *pw = user ? getpwuid(user) : NULL;

	memset(a, 0, sizeof(*a));
	a->supervisor = getenv("SUPERVISOR");
	a->helpers = getenv("HELPERS");
	if (!a->supervisor || !a->helpers)
		return -ENOENT;
	a->user = user;
	a->group = pw ? pw->pw_gid : (gid_t)user;
	snprintf(a->root, sizeof(a->root), "/tmp/cloister-bench.XXXXXX");
	if (!mkdtemp(a->root)) {
		a->root[0] = '\0';
		return -errno;
	}
	snprintf(a->config_dir, sizeof(a->config_dir), "%s/config", a->root);
	snprintf(a->home, sizeof(a->home), "%s/home", a->root);
	snprintf(a->state, sizeof(a->state), "%s/state", a->root);
	snprintf(a->stderr_path, sizeof(a->stderr_path), "%s/stderr", a->root);
	/* The user crosses the root (0711) to its own directories. */
	if ((user && chmod(a->root, 0711) < 0) || mkdir(a->config_dir, 0700) < 0 ||
	    mkdir(a->home, 0700) < 0 || mkdir(a->state, 0700) < 0 ||
	    hand_over(a, a->config_dir) < 0 || hand_over(a, a->home) < 0 ||
	    hand_over(a, a->state) < 0)
		return -errno;
	/* Auto-allowed by path, as a user's allowlist would do for the toolchain. */
	snprintf(path, sizeof(path), "%s/config.yaml", a->config_dir);
	f = fopen(path, "we");
	if (!f || hand_over(a, path) < 0)
		return -errno;
	fprintf(f, "exec:\n  security: allowlist\n  ask: off\n  allow:\n"
	           "    - path: \"/usr/bin/*\"\n    - path: \"/bin/*\"\n"
	           "    - path: \"/usr/lib/gcc/*/*/*\"\n    - path: \"/usr/libexec/gcc/*/*/*\"\n");
	fprintf(f, "    - path: \"%s/*\"\n", a->helpers);
	for (size_t i = 0; work_dirs && work_dirs[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s", a->root, work_dirs[i]);
		if (mkdir(path, 0755) < 0 || hand_over(a, path) < 0)
			return -errno;
		fprintf(f, "    - path: \"%s/*\"\n", path);
	}
	return fflush(f) == 0 ? 0 : -EIO;
}

void bench_agent_cleanup(struct bench_agent *a)
{
	char *argv[] = {"/bin/rm", "-rf", a->root, NULL};
	pid_t pid;

	if (!a->root[0])
		return;
	pid = fork();
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
	a->root[0] = '\0';
}

int bench_agent_spawn(const struct bench_agent *a, const struct bench_spawn *s, pid_t *ret_pid)
{
	char h[200], st[200];
	char *envp[] = {h, st, "PATH=/usr/bin:/bin", "LC_ALL=C", (char *)s->extra_env, NULL};
	char *argv[MAX_ARGS + 10];
	size_t n = 0;
	pid_t pid;

	snprintf(h, sizeof(h), "HOME=%s", a->home);
	snprintf(st, sizeof(st), "XDG_STATE_HOME=%s", a->state);
	if (s->supervised) {
		char *run[] = {(char *)a->supervisor,
		               "run",
		               "--config-dir",
		               (char *)a->config_dir,
		               "--ask",
		               "none",
		               "-q",
		               "--"};

		for (size_t i = 0; i < sizeof(run) / sizeof(run[0]); i++) {
			if (i == sizeof(run) / sizeof(run[0]) - 1 && a->run_option)
				argv[n++] = (char *)a->run_option; /* before the "--" */
			argv[n++] = run[i];
		}
	}
	for (size_t i = 0; s->argv[i]; i++) {
		if (i >= MAX_ARGS)
			return -E2BIG;
		argv[n++] = s->argv[i];
	}
	argv[n] = NULL;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		int err = open(a->stderr_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (null < 0 || err < 0 ||
		    (a->user &&
		     (setgroups(0, NULL) < 0 || setresgid(a->group, a->group, a->group) < 0 ||
		      setresuid(a->user, a->user, a->user) < 0)) ||
		    chdir(s->cwd ? s->cwd : a->home) < 0 ||
		    dup2(s->stdin_fd >= 0 ? s->stdin_fd : null, STDIN_FILENO) < 0 ||
		    dup2(s->stdout_fd >= 0 ? s->stdout_fd : null, STDOUT_FILENO) < 0 ||
		    dup2(err, STDERR_FILENO) < 0)
			_exit(127);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	*ret_pid = pid;
	return 0;
}

/* Reap PID if it ended within TIMEOUT_MS: its status, or -ETIMEDOUT. */
static int wait_for(pid_t pid, int timeout_ms, int *ret_status)
{
	_cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct pollfd p = {.fd = pidfd, .events = POLLIN};
	int r;

	if (pidfd >= 0) {
		do
			r = poll(&p, 1, timeout_ms);
		while (r < 0 && errno == EINTR);
		if (r == 0)
			return -ETIMEDOUT;
	}
	/* Without a pidfd (an old kernel), wait without a bound. */
	do
		r = (int)waitpid(pid, ret_status, 0);
	while (r < 0 && errno == EINTR);
	return r == pid ? 0 : -ECHILD;
}

int bench_agent_wait(pid_t pid, int timeout_ms)
{
	int status = 0, r;

	r = wait_for(pid, timeout_ms, &status);
	if (r == -ETIMEDOUT) {
		/* The supervisor tears its sandbox down on SIGTERM; SIGKILL if it does not. */
		kill(pid, SIGTERM);
		if (wait_for(pid, 10000, &status) == -ETIMEDOUT) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
		}
		return -ETIMEDOUT;
	}
	if (r < 0)
		return r;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

double bench_agent_time(const struct bench_agent *a, bool supervised, const char *cwd,
                        char *const argv[])
{
	struct bench_spawn s = {.supervised = supervised,
	                        .cwd = cwd,
	                        .argv = argv,
	                        .stdin_fd = -1,
	                        .stdout_fd = -1};
	double t0 = bench_now_s();
	pid_t pid;

	if (bench_agent_spawn(a, &s, &pid) < 0 || bench_agent_wait(pid, 120000) < 0)
		return -1;
	return bench_now_s() - t0;
}

static double cpu_s(clockid_t clock)
{
	struct timespec ts;

	if (clock_gettime(clock, &ts) < 0)
		return -1;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The number on the KEY line of /proc/PID/FILE ("VmRSS" of status, in kB; "Pss" of
 * smaps_rollup), or -1. */
static long proc_kib(pid_t pid, const char *file, const char *key)
{
	char path[64], line[256];
	size_t len = strlen(key);
	long kib = -1;
	_cleanup_fclose_ FILE *f = NULL;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, key, len) == 0 && line[len] == ':' &&
		    sscanf(line + len + 1, "%ld", &kib) == 1)
			break;
	return kib;
}

/* One line from FD into BUF (without the newline), waiting at most LINE_MS in all. */
static int read_line(int fd, char *buf, size_t size)
{
	double deadline = bench_now_s() + LINE_MS / 1e3;
	size_t len = 0;

	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int left = (int)((deadline - bench_now_s()) * 1e3), r;
		char c;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -ETIMEDOUT;
		if (read(fd, &c, 1) != 1)
			return -EPIPE;
		if (c == '\n')
			break;
		if (len + 1 < size)
			buf[len++] = c;
	}
	buf[len] = '\0';
	return 0;
}

/* The supervisor's idle baseline: its CPU time over IDLE_MS while the agent waits. */
static int measure_idle(pid_t pid, clockid_t clock, int idle_ms, struct bench_loop *res)
{
	struct timespec idle = {.tv_sec = idle_ms / 1000, .tv_nsec = idle_ms % 1000 * 1000000L};
	double c0 = cpu_s(clock), t0 = bench_now_s();

	while (nanosleep(&idle, &idle) < 0 && errno == EINTR)
		;
	res->sup_idle_cpu_s = cpu_s(clock) - c0;
	res->idle_s = bench_now_s() - t0;
	return c0 < 0 || res->sup_idle_cpu_s < 0 ? -EIO : 0;
}

/* Voluntary and involuntary context switches of PID, over its threads (the loop's and the
 * exec guard's, which receives the notifications; a thread that ended is not counted). */
static long switches(pid_t pid)
{
	char dir[64];
	long sum = 0;
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	d = opendir(dir);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char file[64];
		long v, nv;

		if (e->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "task/%.20s/status", e->d_name);
		v = proc_kib(pid, file, "voluntary_ctxt_switches");
		nv = proc_kib(pid, file, "nonvoluntary_ctxt_switches");
		if (v >= 0 && nv >= 0)
			sum += v + nv;
	}
	closedir(d);
	return sum;
}

int bench_agent_loop(const struct bench_agent *a, bool supervised, const char *cwd, long n,
                     char *const argv[], int idle_ms, const struct bench_loop_hooks *hooks,
                     struct bench_loop *ret)
{
	char loop[256], count[32], line[128];
	char *args[MAX_ARGS + 4] = {loop, count, "-s"};
	_cleanup_close_ int in_r = -EBADF, in_w = -EBADF, out_r = -EBADF, out_w = -EBADF;
	struct bench_loop res = {0};
	unsigned long long wall_ns, cpu_ns;
	clockid_t clock = 0;
	double c1 = 0;
	long sw1 = 0;
	pid_t pid = -1;
	int fds[2], r, w;

	snprintf(loop, sizeof(loop), "%s/execloop", a->helpers);
	snprintf(count, sizeof(count), "%ld", n);
	for (size_t i = 0; argv[i]; i++) {
		if (i >= MAX_ARGS)
			return -E2BIG;
		args[3 + i] = argv[i];
	}
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	in_r = fds[0];
	in_w = fds[1];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	out_r = fds[0];
	out_w = fds[1];
	r = bench_agent_spawn(a,
	                      &(struct bench_spawn){.supervised = supervised,
	                                            .cwd = cwd,
	                                            .argv = args,
	                                            .stdin_fd = in_r,
	                                            .stdout_fd = out_w},
	                      &pid);
	cl_closep(&in_r);
	cl_closep(&out_w);
	if (r < 0)
		return r;
	/* From here on, every path reaps PID. */
	r = read_line(out_r, line, sizeof(line));
	if (r >= 0 && strcmp(line, "ready") != 0)
		r = -EPROTO;
	if (r >= 0 && supervised) {
		r = -clock_getcpuclockid(pid, &clock);
		if (r >= 0 && idle_ms > 0)
			r = measure_idle(pid, clock, idle_ms, &res);
		res.rss_idle_kib = proc_kib(pid, "status", "VmRSS");
		res.rss_anon_idle_kib = proc_kib(pid, "status", "RssAnon");
		res.rss_file_idle_kib = proc_kib(pid, "status", "RssFile");
		res.pss_idle_kib = proc_kib(pid, "smaps_rollup", "Pss");
		if (r >= 0 && hooks && hooks->before)
			r = hooks->before(pid, hooks->userdata);
		sw1 = switches(pid);
		c1 = cpu_s(clock);
	}
	if (r >= 0 && write(in_w, "g", 1) != 1)
		r = -EPIPE;
	if (r >= 0)
		r = read_line(out_r, line, sizeof(line));
	if (r >= 0 && sscanf(line, "done %llu %llu", &wall_ns, &cpu_ns) != 2)
		r = -EPROTO;
	if (r >= 0) {
		res.loop_s = (double)wall_ns / 1e9;
		res.agent_cpu_s = (double)cpu_ns / 1e9;
		if (supervised) {
			res.sup_cpu_s = cpu_s(clock) - c1;
			res.sup_switches = switches(pid) - sw1;
			res.rss_after_kib = proc_kib(pid, "status", "VmRSS");
			if (hooks && hooks->after)
				r = hooks->after(pid, hooks->userdata);
		}
		/* Now it may exit. */
		if (write(in_w, "g", 1) != 1)
			r = -EPIPE;
	}
	cl_closep(&in_w); /* EOF: an agent still waiting for a byte exits */
	w = bench_agent_wait(pid, LINE_MS);
	if (r >= 0)
		r = w;
	if (r >= 0)
		*ret = res;
	return r;
}

void bench_agent_last_error(const struct bench_agent *a, char *buf, size_t size)
{
	_cleanup_fclose_ FILE *f = fopen(a->stderr_path, "re");

	buf[0] = '\0';
	while (f && fgets(buf, (int)size, f)) {
		buf[strcspn(buf, "\n")] = '\0';
		if (buf[0])
			return;
	}
	buf[0] = '\0';
}
