/* bench_run: what a user of `cloister-supervisor run` pays, native vs supervised, in one run.
 *
 * Workloads (each round alternates native and supervised, medians of ROUNDS):
 *   - 2000 fork+exec+wait of /bin/true (the worst case: nothing but execs), as root (eBPF
 *     backstop) and as an unprivileged user (ptrace backstop, and --no-backstop to show what
 *     the ptrace backstop costs);
 *   - `make -j2` of a generated C project (a real exec-heavy build: make, cc, cc1, as, ld);
 * plus `run -- true` end to end (root and unprivileged) and the supervisor's resident memory
 * while the agent idles. Every exec is auto-allowed by path rules; the audit log is written as
 * in real use. */
#include "tests/bench/bench.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS     5
#define EXECS      "2000"
#define MAKE_FILES 24

static char tmp[] = "/tmp/cloister-bench.XXXXXX";
static const char *supervisor, *helpers;
static char cfgdir[512], projdir[512], home[512], state[512];
/* The unprivileged user's own directory (config, home, state), owned by NOBODY. */
#define NOBODY 65534
static char userdir[512], user_cfgdir[600];
/* Who timed() runs as: 0 root, NOBODY the unprivileged user. */
static uid_t run_as;

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

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* Run ARGV with a quiet environment; the time it took, or -1 when it failed. */
static double timed(char *const argv[])
{
	char h[600], s[600];
	char *envp[] = {h, s, "PATH=/usr/bin:/bin", "LC_ALL=C", NULL};
	double t0 = now_s();
	int status;
	pid_t pid;

	snprintf(h, sizeof(h), "HOME=%s", run_as ? userdir : home);
	snprintf(s, sizeof(s), "XDG_STATE_HOME=%s/state", run_as ? userdir : tmp);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (null >= 0) {
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		if (run_as && (setgroups(0, NULL) < 0 || setresgid(run_as, run_as, run_as) < 0 ||
		               setresuid(run_as, run_as, run_as) < 0 || chdir(userdir) < 0))
			_exit(126);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	return now_s() - t0;
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	if (!f)
		return -errno;
	fputs(text, f);
	return fclose(f) == 0 ? 0 : -errno;
}

static int setup(void)
{
	char path[700], text[2048];

	if (!mkdtemp(tmp))
		return -errno;
	snprintf(cfgdir, sizeof(cfgdir), "%s/config", tmp);
	snprintf(projdir, sizeof(projdir), "%s/project", tmp);
	snprintf(home, sizeof(home), "%s/home", tmp);
	snprintf(state, sizeof(state), "%s/state", tmp);
	if (mkdir(cfgdir, 0700) < 0 || mkdir(projdir, 0755) < 0 || mkdir(home, 0700) < 0 ||
	    mkdir(state, 0700) < 0)
		return -errno;
	/* Auto-allowed by path, as a user's allowlist would do for the toolchain. */
	snprintf(path, sizeof(path), "%s/config.yaml", cfgdir);
	snprintf(text, sizeof(text),
	         "exec:\n  security: allowlist\n  ask: off\n  allow:\n"
	         "    - path: \"/usr/bin/*\"\n    - path: \"/bin/*\"\n"
	         "    - path: \"/usr/lib/gcc/*/*/*\"\n    - path: \"/usr/libexec/gcc/*/*/*\"\n"
	         "    - path: \"%s/*\"\n",
	         helpers);
	if (write_file(path, text) < 0)
		return -EIO;
	/* The unprivileged user's copy, in a directory of its own below a traversable tmp. */
	snprintf(userdir, sizeof(userdir), "%s/user", tmp);
	snprintf(user_cfgdir, sizeof(user_cfgdir), "%s/config", userdir);
	if (chmod(tmp, 0711) < 0 || mkdir(userdir, 0700) < 0 || mkdir(user_cfgdir, 0700) < 0)
		return -errno;
	snprintf(path, sizeof(path), "%s/config.yaml", user_cfgdir);
	if (write_file(path, text) < 0 || chown(path, NOBODY, NOBODY) < 0 ||
	    chown(user_cfgdir, NOBODY, NOBODY) < 0 || chown(userdir, NOBODY, NOBODY) < 0)
		return -EIO;
	snprintf(path, sizeof(path), "%s/Makefile", projdir);
	if (write_file(path, "SRCS := $(wildcard *.c)\nOBJS := $(SRCS:.c=.o)\n"
	                     "app: $(OBJS)\n\tcc -o $@ $^\n"
	                     "%.o: %.c\n\tcc -O1 -c $< -o $@\n"
	                     "clean:\n\trm -f *.o app\n") < 0)
		return -EIO;
	for (int i = 0; i < MAKE_FILES; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/unit%02d.c", projdir, i);
		f = fopen(path, "we");
		if (!f)
			return -errno;
		fprintf(f, "#include <stdio.h>\n#include <string.h>\n");
		for (int k = 0; k < 40; k++)
			fprintf(f,
			        "int f%d_%d(const char *s) { int h = %d; "
			        "for (size_t i = 0; i < strlen(s); i++) h = h * 31 + s[i]; return "
			        "h; }\n",
			        i, k, k);
		if (i == 0)
			fprintf(f,
			        "int main(void) { printf(\"%%d\\n\", f0_0(\"x\")); return 0; }\n");
		fclose(f);
	}
	return 0;
}

static void cleanup(void)
{
	char *argv[] = {"/bin/rm", "-rf", tmp, NULL};

	timed(argv);
}

static void report(const char *what, double native, double supervised)
{
	if (native <= 0 || supervised <= 0) {
		printf("%s: failed to measure\n", what);
		return;
	}
	printf("%s: native %.3f s, supervised %.3f s: %.3fx (%+.1f %%)\n", what, native, supervised,
	       supervised / native, (supervised / native - 1) * 100);
}

/* The exec loop as USER (0: root), supervised with EXTRA (a run option, or NULL). */
static void bench_execs_as(uid_t user, const char *extra, const char *what)
{
	char loop[600];
	char *native[] = {loop, EXECS, "/bin/true", NULL};
	char *supervised[] = {(char *)supervisor,
	                      "run",
	                      "--config-dir",
	                      user ? user_cfgdir : cfgdir,
	                      "--ask",
	                      "none",
	                      "-q",
	                      (char *)(extra ? extra : "--"),
	                      extra ? "--" : loop,
	                      extra ? loop : EXECS,
	                      extra ? EXECS : "/bin/true",
	                      extra ? "/bin/true" : NULL,
	                      NULL};
	double n[ROUNDS], s[ROUNDS];

	snprintf(loop, sizeof(loop), "%s/execloop", helpers);
	run_as = user;
	for (int i = 0; i < ROUNDS; i++) {
		n[i] = timed(native);
		s[i] = timed(supervised);
		if (n[i] < 0 || s[i] < 0) {
			run_as = 0;
			report(what, -1, -1);
			return;
		}
	}
	run_as = 0;
	report(what, median(n, ROUNDS), median(s, ROUNDS));
}

static void bench_execs(void)
{
	bench_execs_as(0, NULL, EXECS " fork+exec+wait of /bin/true, root (eBPF backstop)");
	bench_execs_as(NOBODY, NULL,
	               EXECS " fork+exec+wait of /bin/true, unprivileged (ptrace backstop)");
	bench_execs_as(NOBODY, "--no-backstop",
	               EXECS " fork+exec+wait of /bin/true, unprivileged, --no-backstop");
}

static void bench_make(void)
{
	char *clean[] = {"/usr/bin/make", "-s", "-C", projdir, "clean", NULL};
	char *native[] = {"/usr/bin/make", "-s", "-j2", "-C", projdir, NULL};
	char *supervised[] = {
	        (char *)supervisor, "run", "--config-dir", cfgdir, "--ask", "none", "-q", "--",
	        "/usr/bin/make",    "-s",  "-j2",          "-C",   projdir, NULL};
	double n[ROUNDS], s[ROUNDS];
	char what[64];

	snprintf(what, sizeof(what), "make -j2 of %d C files", MAKE_FILES);
	for (int i = 0; i < ROUNDS; i++) {
		if (timed(clean) < 0 || (n[i] = timed(native)) < 0 || timed(clean) < 0 ||
		    (s[i] = timed(supervised)) < 0) {
			report(what, -1, -1);
			return;
		}
	}
	report(what, median(n, ROUNDS), median(s, ROUNDS));
}

static void bench_startup_as(uid_t user, const char *who)
{
	char *native[] = {"/bin/true", NULL};
	char *supervised[] = {(char *)supervisor,
	                      "run",
	                      "--config-dir",
	                      user ? user_cfgdir : cfgdir,
	                      "--ask",
	                      "none",
	                      "-q",
	                      "--",
	                      "/bin/true",
	                      NULL};
	double n[11], s[11];

	run_as = user;
	for (int i = 0; i < 11; i++) {
		n[i] = timed(native);
		s[i] = timed(supervised);
		if (n[i] < 0 || s[i] < 0) {
			run_as = 0;
			printf("run -- true, %s: failed to measure\n", who);
			return;
		}
	}
	run_as = 0;
	printf("run -- true end to end, %s: %.1f ms (native /bin/true %.2f ms; medians of 11)\n",
	       who, median(s, 11) * 1e3, median(n, 11) * 1e3);
}

static void bench_startup(void)
{
	bench_startup_as(0, "root");
	bench_startup_as(NOBODY, "unprivileged");
}

/* The supervisor's resident set while its agent sleeps. */
static void bench_rss(void)
{
	char *argv[] = {(char *)supervisor,
	                "run",
	                "--config-dir",
	                cfgdir,
	                "--ask",
	                "none",
	                "-q",
	                "--",
	                "/bin/sleep",
	                "1",
	                NULL};
	char path[64], line[256];
	long rss_kb = -1;
	FILE *f;
	pid_t pid = fork();

	if (pid < 0)
		return;
	if (pid == 0) {
		char h[600], s[600];
		char *envp[] = {h, s, "PATH=/usr/bin:/bin", NULL};

		snprintf(h, sizeof(h), "HOME=%s", home);
		snprintf(s, sizeof(s), "XDG_STATE_HOME=%s", state);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	usleep(500000);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &rss_kb) == 1)
			break;
	if (f)
		fclose(f);
	waitpid(pid, NULL, 0);
	if (rss_kb < 0)
		printf("supervisor RSS: failed to measure\n");
	else
		printf("supervisor RSS while the agent idles: %.1f MB\n", rss_kb / 1024.0);
}

void bench_run(void)
{
	supervisor = getenv("SUPERVISOR");
	helpers = getenv("HELPERS");
	if (!supervisor || !helpers) {
		printf("end to end: skipped (run through `make bench`: SUPERVISOR and HELPERS "
		       "unset)\n");
		return;
	}
	if (geteuid() != 0) {
		printf("end to end: skipped (needs root for the backstop and cgroups)\n");
		return;
	}
	if (setup() < 0) {
		printf("end to end: could not set up %s\n", tmp);
		return;
	}
	bench_startup();
	bench_execs();
	bench_make();
	bench_rss();
	cleanup();
}
