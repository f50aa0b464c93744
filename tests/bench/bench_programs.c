/* bench_programs: exec-heavy real programs, native vs under `cloister-supervisor run`.
 *
 *   - `./configure` of a small autotools project the bench generates (configure.ac, Makefile.am
 *     and one C file; `autoreconf -i` at set-up, outside the timing): a shell script that runs
 *     some 400 short programs (sed, grep, rm, cat, cc, cc1, as, ld, conftest…) and probes PATH
 *     for each, as build scripts and test suites do;
 *   - `make -j2` of a copy of this project's protocol/, notifier/ and netfilter/ (every C file in
 *     them, recursively, with the project's compiler flags), from clean: a real compile. The whole
 *     project would take a minute or more a build on a loaded 2-core machine, too long to repeat
 *     native and supervised in a bounded bench; these are some two dozen of its 90 C files,
 *     and each costs the exec path what any of the others does (cc, cc1, as). It runs three
 *     ways in turn: native, supervised without the file system's confinement
 *     (--test-no-fs-confinement) and supervised as shipped, with it (a read-only tree,
 *     writable binds, Landlock's write rules, and the write opens notified for the reason
 *     line of fs.ask: off): the last over the second is that confinement's cost;
 *   - the same compile with `fs.ask: on-write` in the agent's config, against native and the
 *     config as shipped (fs.ask: off): with both, every open that writes (cc1's and as's
 *     output, make's) is notified and decided by the supervisor (inside the worktree:
 *     continued); on-write over shipped is what the ask adds when nothing is asked.
 * Native and supervised runs take turns, each round starting with the other; the ratio is the
 * median of the rounds' ratios. */
#include "tests/bench/bench.h"

#include <errno.h>
#include <ftw.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "tests/bench/bench_agent.h"
#include "tests/bench/bench_summary.h"

#define CONFIGURE_ROUNDS 4
#define COMPILE_ROUNDS   3

static struct bench_agent agent;
static char configure_dir[160], compile_dir[160];

static const char configure_ac[] =
        "AC_INIT([cloister-bench], [1.0])\n"
        "AM_INIT_AUTOMAKE([foreign no-dependencies])\n"
        "AC_PROG_CC\n"
        "AC_CHECK_HEADERS([fcntl.h poll.h sys/socket.h sys/epoll.h linux/seccomp.h])\n"
        "AC_CHECK_FUNCS([pipe2 accept4 close_range getrandom strlcpy])\n"
        "AC_CHECK_SIZEOF([long])\n"
        "AC_SEARCH_LIBS([clock_gettime], [rt])\n"
        "AC_CONFIG_HEADERS([config.h])\n"
        "AC_CONFIG_FILES([Makefile])\n"
        "AC_OUTPUT\n";

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[256];
	_cleanup_fclose_ FILE *f = NULL;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "we");
	if (!f)
		return -errno;
	fputs(text, f);
	return fflush(f) == 0 ? 0 : -EIO;
}

/* Native, output discarded: 0 when it exited 0. */
static int run_native(const char *cwd, char *const argv[])
{
	return bench_agent_time(&agent, false, cwd, argv) < 0 ? -EIO : 0;
}

/* The audit log's exec lines so far: how many execs the supervised runs had decided. */
static long audit_execs(void)
{
	char path[256], line[8192];
	_cleanup_fclose_ FILE *f = NULL;
	long n = 0;

	snprintf(path, sizeof(path), "%s/cloister/audit.log", agent.state);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "\"kind\":\"exec\""))
			n++;
	return n;
}

/* Rounds of ARGV in CWD, native and supervised taking turns, CLEAN (may be NULL) run before each
 * outside the timing; ARGV runs once in each, timed by the agent (bench_agent_loop()). Prints
 * one line on WHAT and records ROW's figures. */
static void compare(enum bench_row row, const char *what, int rounds, const char *cwd,
                    char *const argv[], char *const clean[])
{
	double n[8], s[8], ratio[8], n_cpu[8], s_cpu[8], cpu_ratio[8], sup_cpu[8], wall, cpu;
	long execs0 = audit_execs();

	if (rounds > 8)
		rounds = 8;
	for (int i = 0; i < rounds; i++) {
		for (int k = 0; k < 2; k++) {
			bool supervised = (i + k) % 2 == 1; /* round 0 native first, round 1 not */
			struct bench_loop res;
			int r;

			if (clean && run_native(cwd, clean) < 0) {
				printf("%s: cleaning failed\n", what);
				return;
			}
			r = bench_agent_loop(&agent, supervised, cwd, 1, argv, 0, NULL, &res);
			if (r < 0) {
				char why[200];

				bench_agent_last_error(&agent, why, sizeof(why));
				printf("%s: %s run failed (%s)%s%s\n", what,
				       supervised ? "a supervised" : "a native", strerror(-r),
				       why[0] ? ": " : "", why);
				return;
			}
			if (supervised) {
				s[i] = res.loop_s;
				s_cpu[i] = res.agent_cpu_s + res.sup_cpu_s;
				sup_cpu[i] = res.sup_cpu_s;
			} else {
				n[i] = res.loop_s;
				n_cpu[i] = res.agent_cpu_s;
			}
		}
		ratio[i] = s[i] / n[i];
		cpu_ratio[i] = s_cpu[i] / n_cpu[i];
	}
	/* bench_median() sorts: the rounds' extremes are at both ends, to show the noise. */
	wall = bench_median(ratio, rounds);
	cpu = bench_median(cpu_ratio, rounds);
	printf("%s: native %.3f s, supervised %.3f s (medians of %d taking turns, run's start-up "
	       "left out): %.3fx (median of the rounds' ratios, %.3f to %.3f); CPU time %.3f s, "
	       "%.3f s with the supervisor's %.3f s: %.3fx (%.3f to %.3f); %ld auto-allowed execs "
	       "a run\n",
	       what, bench_median(n, rounds), bench_median(s, rounds), rounds, wall, ratio[0],
	       ratio[rounds - 1], bench_median(n_cpu, rounds), bench_median(s_cpu, rounds),
	       bench_median(sup_cpu, rounds), cpu, cpu_ratio[0], cpu_ratio[rounds - 1],
	       (audit_execs() - execs0) / rounds);
	bench_summary_set(row, wall, cpu);
}

static void bench_configure(void)
{
	char *autoreconf[] = {"/usr/bin/autoreconf", "-i", NULL};
	char *configure[] = {"/bin/sh", "./configure", "-q", NULL};

	if (access(autoreconf[0], X_OK) < 0) {
		printf("./configure: skipped (no autoreconf: scripts/install-deps installs "
		       "autoconf "
		       "and automake)\n");
		return;
	}
	if (write_file(configure_dir, "configure.ac", configure_ac) < 0 ||
	    write_file(configure_dir, "Makefile.am",
	               "bin_PROGRAMS = hello\nhello_SOURCES = hello.c\n") < 0 ||
	    write_file(configure_dir, "hello.c",
	               "#include \"config.h\"\nint main(void) { return 0; }\n") < 0 ||
	    run_native(configure_dir, autoreconf) < 0) {
		char why[200];

		bench_agent_last_error(&agent, why, sizeof(why));
		printf("./configure: could not generate it: %s\n",
		       why[0] ? why : "autoreconf failed");
		return;
	}
	compare(BENCH_ROW_CONFIGURE, "./configure of a generated autotools project",
	        CONFIGURE_ROUNDS, configure_dir, configure, NULL);
}

/* ---- the compile ------------------------------------------------------------------------- */

/* A second config directory, DIR: the agent's config with TEXT (a section of its own) at the
 * end. */
static int config_with(const struct bench_agent *a, const char *dir, const char *text)
{
	char from[256], to[256], line[1024];
	_cleanup_fclose_ FILE *in = NULL, *out = NULL;

	snprintf(from, sizeof(from), "%s/config.yaml", a->config_dir);
	snprintf(to, sizeof(to), "%s/config.yaml", dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	in = fopen(from, "re");
	out = fopen(to, "we");
	if (!in || !out)
		return -errno;
	while (fgets(line, sizeof(line), in))
		fputs(line, out);
	fputs(text, out);
	return fflush(out) == 0 ? 0 : -EIO;
}

static FILE *makefile;
static int n_sources;

static int add_source(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	size_t len = strlen(path);

	if (type == FTW_F && len > 2 && strcmp(path + len - 2, ".c") == 0) {
		/* Relative to the copy: nftw was given "DIR/…" with the copy as cwd. */
		fprintf(makefile, " \\\n\t%s", path);
		n_sources++;
	}
	return 0;
}

/* A copy of the project's sources and a Makefile that compiles those of DIRS. */
static int compile_setup(const char *sources, const char *cflags)
{
	static const char *const dirs[] = {"protocol", "notifier", "netfilter"};
	char script[512], path[256];
	char *copy[] = {"/bin/sh", "-c", script, NULL};
	_cleanup_free_ char *cwd = getcwd(NULL, 0);
	int r = 0;

	/* Every C source and header outside build/ and tests/: whatever includes what. */
	snprintf(script, sizeof(script),
	         "cd '%s' && find . \\( -path ./build -o -path ./tests -o -path ./.git \\) -prune "
	         "-o -name '*.[ch]' -print0 | xargs -0 cp --parents -t '%s'",
	         sources, compile_dir);
	if (run_native(NULL, copy) < 0)
		return -EIO;
	snprintf(path, sizeof(path), "%s/Makefile", compile_dir);
	makefile = fopen(path, "we");
	if (!makefile || !cwd || chdir(compile_dir) < 0) {
		if (makefile)
			fclose(makefile);
		return -errno;
	}
	fprintf(makefile, "CFLAGS := %s\nSRCS :=", cflags);
	n_sources = 0;
	/* A folder the project no longer has is left out; none at all is an error below. */
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && r >= 0; i++)
		if (nftw(dirs[i], add_source, 16, FTW_PHYS) < 0 && errno != ENOENT)
			r = -errno;
	if (chdir(cwd) < 0 && r >= 0)
		r = -errno;
	fprintf(makefile, "\nOBJS := $(SRCS:.c=.o)\n"
	                  "libbench.a: $(OBJS)\n\tar rcs $@ $^\n"
	                  "%%.o: %%.c\n\tcc $(CFLAGS) -c $< -o $@\n"
	                  "clean:\n\trm -f $(OBJS) $(OBJS:.o=.d) libbench.a\n");
	if (fclose(makefile) != 0 && r >= 0)
		r = -EIO;
	makefile = NULL;
	return r < 0 ? r : n_sources > 0 ? 0 : -ENOENT;
}

/* One timed run of ARGV in CWD after CLEAN: native (OPTION unused), or supervised with the
 * extra `run` OPTION (NULL: none). The loop's wall time and CPU time (agent's and
 * supervisor's) in RET_WALL and RET_CPU. */
static int timed(bool supervised, const char *option, const char *cwd, char *const argv[],
                 char *const clean[], double *ret_wall, double *ret_cpu, const char *what)
{
	struct bench_loop res;
	int r;

	if (clean && run_native(cwd, clean) < 0) {
		printf("%s: cleaning failed\n", what);
		return -EIO;
	}
	agent.run_option = option;
	r = bench_agent_loop(&agent, supervised, cwd, 1, argv, 0, NULL, &res);
	agent.run_option = NULL;
	if (r < 0) {
		char why[200];

		bench_agent_last_error(&agent, why, sizeof(why));
		printf("%s: a %s run failed (%s)%s%s\n", what,
		       !supervised ? "native"
		       : option    ? "supervised (no fs confinement)"
		                   : "supervised",
		       strerror(-r), why[0] ? ": " : "", why);
		return r;
	}
	*ret_wall = res.loop_s;
	*ret_cpu = res.agent_cpu_s + (supervised ? res.sup_cpu_s : 0);
	return 0;
}

/* The compile three ways, rotating which goes first: native (0), supervised without the file
 * system's confinement (1), supervised with it (2). Records BENCH_ROW_COMPILE (2 over 0: the
 * product as shipped) and BENCH_ROW_COMPILE_FS (2 over 1: the confinement's own cost). */
static void compare_compile(const char *what, int rounds, char *const argv[], char *const clean[])
{
	double wall[3][8], cpu[3][8], r20[8], r21[8], c20[8], c21[8], r10[8];

	if (rounds > 8)
		rounds = 8;
	for (int i = 0; i < rounds; i++) {
		for (int k = 0; k < 3; k++) {
			int way = (i + k) % 3;

			if (timed(way > 0, way == 1 ? "--test-no-fs-confinement" : NULL,
			          compile_dir, argv, clean, &wall[way][i], &cpu[way][i], what) < 0)
				return;
		}
		r20[i] = wall[2][i] / wall[0][i];
		r21[i] = wall[2][i] / wall[1][i];
		r10[i] = wall[1][i] / wall[0][i];
		c20[i] = cpu[2][i] / cpu[0][i];
		c21[i] = cpu[2][i] / cpu[1][i];
	}
	printf("%s: native %.3f s, supervised without the fs confinement %.3f s, with it %.3f s "
	       "(medians of %d rounds taking turns, run's start-up left out)\n",
	       what, bench_median(wall[0], rounds), bench_median(wall[1], rounds),
	       bench_median(wall[2], rounds), rounds);
	{
		double w20 = bench_median(r20, rounds), w21 = bench_median(r21, rounds);
		double w10 = bench_median(r10, rounds), cc20 = bench_median(c20, rounds);
		double cc21 = bench_median(c21, rounds);

		printf("  supervised with fs / native: %.3fx (CPU %.3fx); without fs / native: "
		       "%.3fx; with fs / without: %.3fx (CPU %.3fx, rounds %.3f to %.3f)\n",
		       w20, cc20, w10, w21, cc21, r21[0], r21[rounds - 1]);
		bench_summary_set(BENCH_ROW_COMPILE, w20, cc20);
		bench_summary_set(BENCH_ROW_COMPILE_FS, w21, cc21);
	}
}

/* The compile three ways, rotating which goes first: native (0), supervised as shipped (1),
 * supervised with fs.ask: on-write (2, a config of its own). Records BENCH_ROW_COMPILE_ASK (2
 * over 0) and prints 2 over 1, the ask's own cost. */
static void compare_compile_ask(const char *what, int rounds, char *const argv[],
                                char *const clean[])
{
	double wall[3][8], cpu[3][8], r20[8], r21[8], c20[8], c21[8];
	char shipped[sizeof(agent.config_dir)], ask[sizeof(agent.config_dir)];

	snprintf(shipped, sizeof(shipped), "%s", agent.config_dir);
	snprintf(ask, sizeof(ask), "%s/config-ask", agent.root);
	if (config_with(&agent, ask, "fs:\n  ask: on-write\n") < 0) {
		printf("%s: could not write its config\n", what);
		return;
	}
	if (rounds > 8)
		rounds = 8;
	for (int i = 0; i < rounds; i++) {
		for (int k = 0; k < 3; k++) {
			int way = (i + k) % 3, r;

			snprintf(agent.config_dir, sizeof(agent.config_dir), "%s",
			         way == 2 ? ask : shipped);
			r = timed(way > 0, NULL, compile_dir, argv, clean, &wall[way][i],
			          &cpu[way][i], what);
			snprintf(agent.config_dir, sizeof(agent.config_dir), "%s", shipped);
			if (r < 0)
				return;
		}
		r20[i] = wall[2][i] / wall[0][i];
		r21[i] = wall[2][i] / wall[1][i];
		c20[i] = cpu[2][i] / cpu[0][i];
		c21[i] = cpu[2][i] / cpu[1][i];
	}
	printf("%s: native %.3f s, supervised as shipped %.3f s, with fs.ask: on-write %.3f s "
	       "(medians of %d rounds taking turns)\n",
	       what, bench_median(wall[0], rounds), bench_median(wall[1], rounds),
	       bench_median(wall[2], rounds), rounds);
	{
		double w20 = bench_median(r20, rounds), w21 = bench_median(r21, rounds);
		double cc20 = bench_median(c20, rounds), cc21 = bench_median(c21, rounds);

		printf("  on-write / native: %.3fx (CPU %.3fx); on-write / shipped (ask: off): "
		       "%.3fx (CPU %.3fx, rounds %.3f to %.3f)\n",
		       w20, cc20, w21, cc21, r21[0], r21[rounds - 1]);
		bench_summary_set(BENCH_ROW_COMPILE_ASK, w20, cc20);
	}
}

static void bench_compile(void)
{
	const char *sources = getenv("BENCH_SOURCES"), *cflags = getenv("BENCH_CFLAGS");
	char *clean[] = {"/usr/bin/make", "-s", "clean", NULL};
	char *build[] = {"/usr/bin/make", "-s", "-j2", NULL};
	char what[128];
	int r;

	if (!sources || !cflags) {
		printf("compile: skipped (run through `make bench`: BENCH_SOURCES and BENCH_CFLAGS "
		       "unset)\n");
		return;
	}
	r = compile_setup(sources, cflags);
	if (r < 0) {
		printf("compile: could not copy the project's sources: %s\n", strerror(-r));
		return;
	}
	snprintf(what, sizeof(what),
	         "make -j2 of this project's protocol/, notifier/, netfilter/ (%d C files)",
	         n_sources);
	compare_compile(what, COMPILE_ROUNDS, build, clean);
	snprintf(what, sizeof(what), "the same with fs.ask: on-write (%d C files)", n_sources);
	compare_compile_ask(what, COMPILE_ROUNDS, build, clean);
}

void bench_programs(void)
{
	static const char *const work[] = {"configure", "compile", NULL};
	int r = bench_agent_setup(&agent, 0, work);

	if (r == -ENOENT) {
		printf("programs: skipped (run through `make bench`: SUPERVISOR and HELPERS "
		       "unset)\n");
		return;
	}
	snprintf(configure_dir, sizeof(configure_dir), "%s/configure", agent.root);
	snprintf(compile_dir, sizeof(compile_dir), "%s/compile", agent.root);
	if (r >= 0 && geteuid() != 0)
		printf("programs: skipped (needs root for the backstop and cgroups)\n");
	else if (r < 0)
		printf("programs: could not set up %s: %s\n", agent.root, strerror(-r));
	else {
		bench_configure();
		bench_compile();
	}
	bench_agent_cleanup(&agent);
}
