/* Programs run natively and as the agent of `cloister-supervisor run`, for the sections that
 * compare the two (bench_run.c, bench_programs.c): a temporary home, state and config directory
 * whose config auto-allows by path the toolchain, the helpers and the directories a section
 * names, as a user's allowlist would; every run with a quiet environment, stdin not a terminal
 * (so `run` gives the agent no pty of its own to relay) and a bounded wait. */
#ifndef CLOISTER_BENCH_AGENT_H
#define CLOISTER_BENCH_AGENT_H

#include <stdbool.h>
#include <sys/types.h>

struct bench_agent {
	char root[64]; /* the temporary directory, removed by bench_agent_cleanup() */
	char config_dir[128], home[128], state[128], stderr_path[128];
	const char *supervisor, *helpers; /* $SUPERVISOR, $HELPERS */
	uid_t user;                       /* who runs the programs (0: root) */
	gid_t group;
	const char *run_option; /* one more option of `run` (e.g. --no-backstop), or NULL */
};

/* $SUPERVISOR and $HELPERS, the temporary directories and the config, all owned by USER (0:
 * root), who will run the programs, native and supervised (`run` as that user). WORK_DIRS
 * (NULL-ended, may be NULL) are made in the temporary directory, where a section keeps its
 * workloads, and their programs are auto-allowed too (ROOT/DIR/ *). -errno; -ENOENT when the
 * variables are unset. */
int bench_agent_setup(struct bench_agent *a, uid_t user, const char *const work_dirs[]);
void bench_agent_cleanup(struct bench_agent *a);

struct bench_spawn {
	bool supervised;       /* as `SUPERVISOR run --config-dir … --ask none -q -- ARGV` */
	const char *cwd;       /* NULL: the agent's home */
	char *const *argv;     /* argv[0] is a path */
	int stdin_fd;          /* -1: /dev/null */
	int stdout_fd;         /* -1: /dev/null */
	const char *extra_env; /* one more NAME=VALUE, or NULL */
};

/* Start S; its stderr (the supervisor's, or the program's) goes to a->stderr_path. */
int bench_agent_spawn(const struct bench_agent *a, const struct bench_spawn *s, pid_t *ret_pid);

/* Wait up to TIMEOUT_MS for PID (then SIGTERM, and SIGKILL if that is not enough). 0 when it
 * exited 0, -ETIMEDOUT, -ECHILD, or -EIO for another exit. */
int bench_agent_wait(pid_t pid, int timeout_ms);

/* The wall time of one run of ARGV (output discarded), in seconds; -1 when it failed. */
double bench_agent_time(const struct bench_agent *a, bool supervised, const char *cwd,
                        char *const argv[]);

/* One run of tests/helpers/execloop N -s ARGV (ARGV N times in a row), natively or as run's
 * agent, in CWD (NULL: the agent's home), driven through its stdin and stdout so that what is timed
 * is the loop alone, by the agent's clock, without run's start-up and teardown. Supervised, the
 * supervisor's CPU time (its process CPU clock: every thread) is read at both ends of the loop,
 * and over IDLE_MS before it (0: not) while the agent waits, which is its idle baseline. */
struct bench_loop {
	double loop_s;          /* the loop's wall time */
	double agent_cpu_s;     /* the CPU time of the agent (execloop) and its children in it */
	double sup_cpu_s;       /* the supervisor's CPU time over the loop (supervised) */
	double sup_idle_cpu_s;  /* …over the idle window before it */
	double idle_s;          /* the idle window's length */
	long rss_idle_kib;      /* the supervisor's RSS while the agent waits, before the loop */
	long rss_anon_idle_kib; /* …of which anonymous */
	long rss_file_idle_kib; /* …and of files (our binary, the shared libraries) */
	long pss_idle_kib;  /* …its proportional set size (shared pages divided among users) */
	long rss_after_kib; /* …and right after it */
	long sup_switches;  /* the supervisor's context switches over the loop */
};
/* Supervised runs only: BEFORE is called with the supervisor's pid once the agent waits (after
 * the idle window), AFTER once the loop is done, before the agent may exit. A hook that fails
 * fails the run. */
struct bench_loop_hooks {
	int (*before)(pid_t supervisor, void *userdata);
	int (*after)(pid_t supervisor, void *userdata);
	void *userdata;
};
int bench_agent_loop(const struct bench_agent *a, bool supervised, const char *cwd, long n,
                     char *const argv[], int idle_ms, const struct bench_loop_hooks *hooks,
                     struct bench_loop *ret);

/* The first line of the last run's stderr, for a "failed to measure" line ("" when none). */
void bench_agent_last_error(const struct bench_agent *a, char *buf, size_t size);

double bench_now_s(void);

/* The median of N values (sorts V). */
double bench_median(double *v, int n);

#endif
