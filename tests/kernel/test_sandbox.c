/* The sandbox launcher against the real kernel (root): namespaces, the init, exit codes, the
 * cgroup (freeze, kill, stale cleanup), the listener-fd handover, the user-namespace path for a
 * non-root caller, and the agent's own terminal (its own devpts, session and controlling
 * terminal, Ctrl-C, Ctrl-Z, window size; none at all without one) under a test pty.
 *
 * Every test runs its sandboxes under a cgroup parent of its own (<cgroup2>/cloister-test-PID)
 * which the teardown kills and removes, together with any process a test forked. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "supervisor/sandbox/cgroup.h"
#include "supervisor/sandbox/sandbox.h"

#define MAX_TRACKED 8

static char test_parent[512]; /* cgroup parent of this test program's sandboxes */
static char tmpdir[64];
static struct sandbox *tracked_sb[MAX_TRACKED];
static pid_t tracked_pid[MAX_TRACKED];

static char *default_env[] = {"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LC_ALL=C",
                              NULL};

static void track_sb(struct sandbox *sb)
{
	for (int i = 0; i < MAX_TRACKED; i++)
		if (!tracked_sb[i]) {
			tracked_sb[i] = sb;
			return;
		}
	fail_msg("too many sandboxes");
}

static void untrack_free_sb(struct sandbox *sb)
{
	for (int i = 0; i < MAX_TRACKED; i++)
		if (tracked_sb[i] == sb)
			tracked_sb[i] = NULL;
	sandbox_free(sb);
}

static void track_pid(pid_t pid)
{
	for (int i = 0; i < MAX_TRACKED; i++)
		if (!tracked_pid[i]) {
			tracked_pid[i] = pid;
			return;
		}
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void remove_all_leaves(const char *parent)
{
	DIR *d = opendir(parent);

	if (!d)
		return;
	for (struct dirent *de; (de = readdir(d));) {
		char path[PATH_MAX];

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", parent, de->d_name);
		remove_all_leaves(path); /* delegated test subtrees nest one level */
		if (cgroup_remove_path(path, 5000) < 0)
			print_message("teardown: cannot remove %s\n", path);
	}
	closedir(d);
}

static int group_setup(void **state)
{
	char mount[256];

	if (geteuid() != 0) {
		print_message("test_sandbox needs root\n");
		return -1;
	}
	if (cgroup_find_cgroup2(mount, sizeof(mount)) < 0) {
		print_message("no cgroup2 mount in /proc/self/mountinfo\n");
		return -1;
	}
	snprintf(test_parent, sizeof(test_parent), "%s/cloister-test-%d", mount, (int)getpid());
	if (mkdir(test_parent, 0755) < 0 && errno != EEXIST)
		return -1;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/cloister-sbtest-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	chmod(tmpdir, 0777);
	return 0;
}

static int group_teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	remove_all_leaves(test_parent);
	if (rmdir(test_parent) < 0)
		print_message("teardown: rmdir %s: %s\n", test_parent, strerror(errno));
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		print_message("teardown: cannot remove %s\n", tmpdir);
	return 0;
}

static int test_teardown(void **state)
{
	for (int i = 0; i < MAX_TRACKED; i++) {
		if (tracked_pid[i] > 0) {
			kill(tracked_pid[i], SIGKILL);
			waitpid(tracked_pid[i], NULL, 0);
		}
		tracked_pid[i] = 0;
		if (tracked_sb[i])
			sandbox_free(tracked_sb[i]);
		tracked_sb[i] = NULL;
	}
	remove_all_leaves(test_parent);
	return 0;
}

static int count_leaves(const char *parent)
{
	DIR *d = opendir(parent);
	int n = 0;

	if (!d)
		return -errno;
	for (struct dirent *de; (de = readdir(d));)
		if (de->d_type == DT_DIR && de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static struct sandbox_opts base_opts(char *const *argv)
{
	return (struct sandbox_opts){
	        .argv = argv,
	        .envp = default_env,
	        .cwd = "/",
	        .name = "test",
	        .cgroup_parent = test_parent,
	};
}

/* Wait (with a deadline) for the sandbox's next status. */
static int wait_status(struct sandbox *sb, struct sandbox_status *st, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;

	for (;;) {
		struct pollfd p = {.fd = sandbox_status_fd(sb), .events = POLLIN};
		int r = sandbox_handle_status(sb, st);

		if (r != -EAGAIN)
			return r;
		if (now_ms() >= deadline)
			return -ETIMEDOUT;
		poll(&p, 1, (int)(deadline - now_ms()));
	}
}

/* Read until EOF (or the buffer is full); NUL-terminates. */
static ssize_t read_until_eof(int fd, char *out, size_t size)
{
	size_t len = 0;

	while (len + 1 < size) {
		ssize_t n = read(fd, out + len, size - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	out[len] = '\0';
	return (ssize_t)len;
}

/* Run argv in a sandbox with stdout captured; returns the exit code and the output. */
static int run_capture(struct sandbox_opts *o, char *out, size_t out_size)
{
	int pfd[2], devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int stdio[3];
	struct cl_error err = {{0}};
	struct sandbox *sb = NULL;
	struct sandbox_status st;
	int r;

	assert_true(devnull >= 0);
	assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
	stdio[0] = devnull;
	stdio[1] = pfd[1];
	stdio[2] = STDERR_FILENO;
	o->stdio_fds = stdio;
	r = sandbox_start(o, &sb, &err);
	close(pfd[1]);
	close(devnull);
	if (r < 0) {
		close(pfd[0]);
		fail_msg("sandbox_start: %s (%d)", err.msg, r);
	}
	track_sb(sb);
	read_until_eof(pfd[0], out, out_size);
	close(pfd[0]);
	r = wait_status(sb, &st, 10000);
	assert_int_equal(r, 0);
	assert_int_equal(st.kind, SANDBOX_EXITED);
	untrack_free_sb(sb);
	return st.exit_code;
}

static int sh(const char *script, char *out, size_t out_size)
{
	char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
	struct sandbox_opts o = base_opts(argv);

	return run_capture(&o, out, out_size);
}

/* ---- namespaces and process layout ------------------------------------------------------- */

static void test_agent_is_pid_2_under_our_init(void **state)
{
	char out[256];

	assert_int_equal(sh("echo $$; cat /proc/1/comm", out, sizeof(out)), 0);
	/* the init is a clone of this test program, which never execs */
	char want[64];
	char comm[32] = "";
	FILE *f = fopen("/proc/self/comm", "re");
	assert_non_null(f);
	assert_non_null(fgets(comm, sizeof(comm), f));
	fclose(f);
	snprintf(want, sizeof(want), "2\n%s", comm);
	assert_string_equal(out, want);
}

static void test_proc_shows_only_the_sandbox(void **state)
{
	char out[256];

	/* A shell builtin loop: no other process runs while it lists /proc. */
	assert_int_equal(sh("for p in /proc/[0-9]*; do echo ${p#/proc/}; done", out, sizeof(out)),
	                 0);
	assert_string_equal(out, "1\n2\n");
}

static void test_network_has_only_loopback_up(void **state)
{
	char out[512];

	assert_int_equal(sh("ls /sys/class/net; cat /sys/class/net/lo/flags", out, sizeof(out)), 0);
	assert_string_equal(out, "lo\n0x9\n"); /* IFF_UP | IFF_LOOPBACK */
	assert_int_equal(sh("ip -o link | cut -d' ' -f2; ip -o link | grep -c 'LOOPBACK,UP'", out,
	                    sizeof(out)),
	                 0);
	assert_string_equal(out, "lo:\n1\n");
}

static void test_mounts_do_not_propagate_to_the_host(void **state)
{
	char out[256], dir[128], cmd[512];
	struct stat st;

	snprintf(dir, sizeof(dir), "%s/mnt", tmpdir);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(cmd, sizeof(cmd), "mount -t tmpfs none %s && touch %s/inside && ls %s", dir, dir,
	         dir);
	assert_int_equal(sh(cmd, out, sizeof(out)), 0);
	assert_string_equal(out, "inside\n");
	snprintf(cmd, sizeof(cmd), "%s/inside", dir);
	assert_int_equal(stat(cmd, &st), -1);
	assert_int_equal(errno, ENOENT);
	rmdir(dir);
}

static void test_cwd_env_and_ids_are_kept(void **state)
{
	char *argv[] = {"/bin/sh", "-c", "pwd; echo \"$FOO\"; id -u; id -g", NULL};
	char *env[] = {"PATH=/usr/bin:/bin", "FOO=bar baz", NULL};
	struct sandbox_opts o = base_opts(argv);
	char out[512], want[PATH_MAX + 64];

	o.envp = env;
	o.cwd = tmpdir;
	assert_int_equal(run_capture(&o, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s\nbar baz\n0\n0\n", tmpdir);
	assert_string_equal(out, want);
}

static void test_readonly_paths_cannot_be_written_by_the_agent(void **state)
{
	char dir[PATH_MAX], file[PATH_MAX + 16], script[3 * PATH_MAX];
	char *argv[] = {"/bin/sh", "-c", script, NULL};
	const char *readonly[2] = {dir, NULL};
	struct sandbox_opts o = base_opts(argv);
	char out[512];

	snprintf(dir, sizeof(dir), "%s/protected", tmpdir);
	snprintf(file, sizeof(file), "%s/config.yaml", dir);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(script, sizeof(script),
	         "touch %s 2>/dev/null && echo wrote || echo refused; "
	         "touch %s/other 2>/dev/null && echo outside || echo blocked",
	         file, tmpdir);
	o.readonly_paths = readonly;
	assert_int_equal(run_capture(&o, out, sizeof(out)), 0);
	assert_string_equal(out, "refused\noutside\n");
	assert_int_equal(access(file, F_OK), -1); /* nothing reached the host either */
}

static void test_missing_cwd_fails_clearly(void **state)
{
	char *argv[] = {"/bin/true", NULL};
	struct sandbox_opts o = base_opts(argv);
	struct cl_error err = {{0}};
	struct sandbox *sb = NULL;

	o.cwd = "/nonexistent/cloister";
	assert_int_equal(sandbox_start(&o, &sb, &err), -ENOENT);
	assert_null(sb);
	assert_non_null(strstr(err.msg, "chdir /nonexistent/cloister"));
	assert_int_equal(count_leaves(test_parent), 0); /* nothing left behind */
}

static void test_exit_codes_propagate(void **state)
{
	char out[64];

	assert_int_equal(sh("exit 0", out, sizeof(out)), 0);
	assert_int_equal(sh("exit 3", out, sizeof(out)), 3);
	assert_int_equal(sh("kill -9 $$", out, sizeof(out)), 128 + 9);
	char *argv[] = {"/nonexistent-cloister-cmd", NULL};
	struct sandbox_opts o = base_opts(argv);
	assert_int_equal(run_capture(&o, out, sizeof(out)), 127);
}

/* The host pids in the sandbox's cgroup (init first as the kernel lists them). */
static int cgroup_pids(const char *cg, pid_t *pids, int max)
{
	char path[PATH_MAX + 16];
	int n = 0, pid;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (n < max && fscanf(f, "%d", &pid) == 1)
		pids[n++] = pid;
	fclose(f);
	return n;
}

static bool pidfd_exits_within(int pidfd, int timeout_ms)
{
	struct pollfd p = {.fd = pidfd, .events = POLLIN};

	return poll(&p, 1, timeout_ms) == 1;
}

static void test_grandchild_dies_with_the_sandbox(void **state)
{
	/* sh starts a long sleep in the background, then waits for a line on stdin and exits. */
	char *argv[] = {"/bin/sh", "-c", "sleep 1000 & read x", NULL};
	struct sandbox_opts o = base_opts(argv);
	struct cl_error err = {{0}};
	struct sandbox *sb = NULL;
	struct sandbox_status st;
	int in[2], stdio[3] = {-1, STDOUT_FILENO, STDERR_FILENO};
	pid_t pids[8];
	int n = 0, sleep_pidfd = -1;

	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	stdio[0] = in[0];
	o.stdio_fds = stdio;
	assert_int_equal(sandbox_start(&o, &sb, &err), 0);
	track_sb(sb);
	close(in[0]);
	/* wait until init, sh and sleep (exec'd, not just forked) are all there */
	for (int64_t end = now_ms() + 5000; now_ms() < end && sleep_pidfd < 0; usleep(10000)) {
		n = cgroup_pids(sandbox_cgroup_path(sb), pids, 8);
		for (int i = 0; i < n && sleep_pidfd < 0; i++) {
			char path[64], comm[32] = "";
			FILE *f;

			snprintf(path, sizeof(path), "/proc/%d/comm", (int)pids[i]);
			f = fopen(path, "re");
			if (f && fgets(comm, sizeof(comm), f) && strcmp(comm, "sleep\n") == 0)
				sleep_pidfd = (int)syscall(SYS_pidfd_open, pids[i], 0);
			if (f)
				fclose(f);
		}
	}
	assert_int_equal(n, 3);
	assert_true(sleep_pidfd >= 0);
	/* the agent exits; its background child must not survive it */
	assert_int_equal(write(in[1], "\n", 1), 1);
	close(in[1]);
	assert_int_equal(wait_status(sb, &st, 5000), 0);
	assert_int_equal(st.kind, SANDBOX_EXITED);
	assert_int_equal(st.exit_code, 0);
	assert_true(pidfd_exits_within(sleep_pidfd, 5000));
	close(sleep_pidfd);
	untrack_free_sb(sb);
}

/* ---- non-root caller: the user-namespace path ------------------------------------------ */

static void chown_path(const char *dir, const char *file, uid_t uid)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s%s%s", dir, file ? "/" : "", file ? file : "");
	assert_int_equal(chown(path, uid, uid), 0);
}

/* Fork, optionally move into JOIN_CGROUP (as root), drop to nobody, run a sandbox with the
 * given cgroup options; the agent's stdout goes to out, the child's exit status is returned
 * (the agent's exit code, or 10+ for a failure before it). */
static int run_as_nobody(const char *join_cgroup, const char *cgroup_parent, bool optional,
                         const char *script, char *out, size_t out_size)
{
	const uid_t nobody = 65534;
	int pfd[2], status;
	pid_t child;

	assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
		struct sandbox_opts o = base_opts(argv);
		struct cl_error err = {{0}};
		struct sandbox *sb = NULL;
		struct sandbox_status st;
		int stdio[3] = {STDIN_FILENO, pfd[1], STDERR_FILENO};

		if (join_cgroup) {
			char path[PATH_MAX], buf[32];
			int fd;

			snprintf(path, sizeof(path), "%s/cgroup.procs", join_cgroup);
			snprintf(buf, sizeof(buf), "%d", (int)getpid());
			fd = open(path, O_WRONLY | O_CLOEXEC);
			if (fd < 0 || write(fd, buf, strlen(buf)) < 0)
				_exit(10);
			close(fd);
		}
		if (setgroups(0, NULL) < 0 || setgid(nobody) < 0 || setuid(nobody) < 0)
			_exit(11);
		o.cgroup_parent = cgroup_parent;
		o.cgroup_optional = optional;
		o.stdio_fds = stdio;
		if (sandbox_start(&o, &sb, &err) < 0) {
			dprintf(STDERR_FILENO, "non-root sandbox_start: %s\n", err.msg);
			_exit(12);
		}
		close(pfd[1]);
		if (wait_status(sb, &st, 10000) < 0 || st.kind != SANDBOX_EXITED)
			_exit(13);
		if (optional &&
		    (sandbox_cgroup_id(sb) != 0 || sandbox_pause(sb, true) != -EOPNOTSUPP))
			_exit(14);
		sandbox_free(sb);
		_exit(st.exit_code);
	}
	track_pid(child);
	close(pfd[1]);
	read_until_eof(pfd[0], out, out_size);
	close(pfd[0]);
	assert_int_equal(waitpid(child, &status, 0), child);
	for (int i = 0; i < MAX_TRACKED; i++)
		if (tracked_pid[i] == child)
			tracked_pid[i] = 0;
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void test_non_root_caller_gets_a_user_namespace(void **state)
{
	const uid_t nobody = 65534;
	char deleg[600], self_cg[700], sandboxes[700], out[800];

	/* A delegated subtree, as systemd gives a user: the user owns the directory and its
	 * cgroup.procs, and the test's non-root process starts inside it. */
	snprintf(deleg, sizeof(deleg), "%s/deleg", test_parent);
	snprintf(self_cg, sizeof(self_cg), "%s/self", deleg);
	snprintf(sandboxes, sizeof(sandboxes), "%s/sandboxes", deleg);
	assert_int_equal(mkdir(deleg, 0755), 0);
	assert_int_equal(mkdir(self_cg, 0755), 0);
	chown_path(deleg, NULL, nobody);
	chown_path(deleg, "cgroup.procs", nobody);
	chown_path(self_cg, NULL, nobody);
	chown_path(self_cg, "cgroup.procs", nobody);

	assert_int_equal(run_as_nobody(self_cg, sandboxes, false,
	                               "id -u; id -g; echo $$; ls /sys/class/net; "
	                               "ls /proc/1/fd >/dev/null 2>&1 && echo init-open || echo "
	                               "init-closed",
	                               out, sizeof(out)),
	                 0);
	/* the init is not dumpable: the agent (same uid) cannot look into it */
	assert_string_equal(out, "65534\n65534\n2\nlo\ninit-closed\n");
	assert_int_equal(count_leaves(sandboxes), 0); /* its leaf was removed */
}

static void test_non_root_caller_without_a_cgroup_subtree(void **state)
{
	char out[256];

	/* No delegation: the default parent is not writable for nobody. Without cgroup_optional
	 * the start fails; with it the sandbox runs (pid ns, no cgroup). */
	assert_int_equal(run_as_nobody(NULL, NULL, false, "exit 0", out, sizeof(out)), 12);
	assert_int_equal(run_as_nobody(NULL, NULL, true, "id -u; exit 5", out, sizeof(out)), 5);
	assert_string_equal(out, "65534\n");
}

/* ---- supervisor death, stale cleanup ---------------------------------------------------- */

/* A forked "supervisor" starts `sleep 1000` (and pauses the sandbox when PAUSED: a frozen init
 * cannot notice anything itself, only PR_SET_PDEATHSIG's SIGKILL gets through), then is
 * SIGKILLed. The init and the agent must die, and the next stale cleanup removes the leaf. */
static void supervisor_death(bool paused)
{
	char path[PATH_MAX];
	pid_t pids[8], child;
	int pfd[2], pidfds[8], n = 0, r;
	ssize_t len;
	struct stat st;

	assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		char *argv[] = {"sleep", "1000", NULL};
		struct sandbox_opts o = base_opts(argv);
		struct cl_error err = {{0}};
		struct sandbox *sb = NULL;

		if (sandbox_start(&o, &sb, &err) < 0) {
			dprintf(STDERR_FILENO, "supervisor: %s\n", err.msg);
			_exit(1);
		}
		if (paused && sandbox_pause(sb, true) < 0)
			_exit(3);
		if (write(pfd[1], sandbox_cgroup_path(sb), strlen(sandbox_cgroup_path(sb))) < 0)
			_exit(2);
		close(pfd[1]);
		for (;;)
			pause();
	}
	track_pid(child);
	close(pfd[1]);
	len = read(pfd[0], path, sizeof(path) - 1);
	close(pfd[0]);
	assert_true(len > 0);
	path[len] = '\0';
	for (int64_t end = now_ms() + 5000; now_ms() < end; usleep(10000)) {
		n = cgroup_pids(path, pids, 8);
		if (n >= 2)
			break;
	}
	assert_int_equal(n, 2); /* init and sleep */
	for (int i = 0; i < n; i++) {
		pidfds[i] = (int)syscall(SYS_pidfd_open, pids[i], 0);
		assert_true(pidfds[i] >= 0);
	}

	kill(child, SIGKILL);
	assert_int_equal(waitpid(child, NULL, 0), child);
	for (int i = 0; i < MAX_TRACKED; i++)
		if (tracked_pid[i] == child)
			tracked_pid[i] = 0;
	for (int i = 0; i < n; i++) {
		assert_true(pidfds[i] >= 0 && pidfd_exits_within(pidfds[i], 5000));
		close(pidfds[i]);
	}
	/* Its leaf is still there (nobody removed it) until the next supervisor's cleanup. */
	assert_int_equal(stat(path, &st), 0);
	r = cgroup_cleanup_stale(test_parent, 5000);
	assert_true(r >= 1);
	assert_int_equal(stat(path, &st), -1);
	assert_int_equal(errno, ENOENT);
}

static void test_supervisor_death_kills_the_agent_and_cleanup_removes_its_cgroup(void **state)
{
	supervisor_death(false);
}

static void test_supervisor_death_kills_a_paused_sandbox(void **state)
{
	supervisor_death(true);
}

static void test_stale_cleanup_spares_live_supervisors(void **state)
{
	char *argv[] = {"sleep", "1000", NULL};
	struct sandbox_opts o = base_opts(argv);
	struct cl_error err = {{0}};
	struct sandbox *sb = NULL;
	struct cgroup_owner fake = {0};
	struct cgroup *stale = NULL;
	struct stat st;
	char stale_path[PATH_MAX];

	assert_int_equal(sandbox_start(&o, &sb, &err), 0);
	track_sb(sb);
	/* a leaf whose owner is our pid with another start time: pid reused → stale */
	assert_int_equal(cgroup_owner_self(&fake), 0);
	fake.start_time += 1;
	assert_int_equal(cgroup_create(test_parent, "old", &fake, &stale, &err), 0);
	snprintf(stale_path, sizeof(stale_path), "%s", cgroup_path(stale));
	assert_int_equal(cgroup_cleanup_stale(test_parent, 5000), 1);
	assert_int_equal(stat(stale_path, &st), -1);
	assert_int_equal(stat(sandbox_cgroup_path(sb), &st), 0);
	/* destroying the object of a leaf that is already gone is fine */
	assert_int_equal(cgroup_destroy(stale, 1000), 0);
	untrack_free_sb(sb);
}

/* ---- freeze, signals, kill ------------------------------------------------------------- */

static long read_counter(const char *path)
{
	char buf[32] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? atol(buf) : -1;
}

static void test_pause_stops_the_sandbox_and_resume_continues_it(void **state)
{
	char script[512], counter[128];
	char *argv[] = {"/bin/sh", "-c", script, NULL};
	struct sandbox_opts o = base_opts(argv);
	struct cl_error err = {{0}};
	struct sandbox *sb = NULL;
	long a = -1, b, c;

	snprintf(counter, sizeof(counter), "%s/counter", tmpdir);
	snprintf(script, sizeof(script),
	         "i=0; while :; do i=$((i+1)); echo $i > %s.tmp; mv %s.tmp %s; done", counter,
	         counter, counter);
	assert_int_equal(sandbox_start(&o, &sb, &err), 0);
	track_sb(sb);
	for (int64_t end = now_ms() + 5000; now_ms() < end && a < 5; usleep(10000))
		a = read_counter(counter);
	assert_true(a >= 5);

	assert_int_equal(sandbox_pause(sb, true), 0);
	a = read_counter(counter);
	usleep(300000);
	b = read_counter(counter);
	assert_int_equal(a, b);

	assert_int_equal(sandbox_pause(sb, false), 0);
	usleep(300000);
	c = read_counter(counter);
	assert_true(c > b);
	assert_int_equal(sandbox_kill(sb), 0);
	untrack_free_sb(sb);
}

static void test_free_while_paused_leaves_nothing(void **state)
{
	char *argv[] = {"/bin/sh", "-c", "sleep 1000 & sleep 1000", NULL};
	struct sandbox_opts o = base_opts(argv);
	struct cl_error err = {{0}};
	struct sandbox *sb = NULL;
	pid_t init;
	int pidfd;

	assert_int_equal(sandbox_start(&o, &sb, &err), 0);
	track_sb(sb);
	init = sandbox_init_pid(sb);
	pidfd = (int)syscall(SYS_pidfd_open, init, 0);
	assert_true(pidfd >= 0);
	assert_int_equal(sandbox_pause(sb, true), 0);
	untrack_free_sb(sb);
	assert_true(pidfd_exits_within(pidfd, 0)); /* reaped already */
	close(pidfd);
	assert_int_equal(count_leaves(test_parent), 0);
}

static void test_signal_is_passed_on_to_the_agent(void **state)
{
	char *argv[] = {"sleep", "1000", NULL};
	struct sandbox_opts o = base_opts(argv);
	struct cl_error err = {{0}};
	struct sandbox *sb = NULL;
	struct sandbox_status st;

	assert_int_equal(sandbox_start(&o, &sb, &err), 0);
	track_sb(sb);
	assert_int_equal(sandbox_signal(sb, SIGTERM), 0);
	/* First the init says it passed it on, then the agent dies of it. */
	assert_int_equal(wait_status(sb, &st, 5000), 0);
	assert_int_equal(st.kind, SANDBOX_SIGNALLED);
	assert_int_equal(st.signal, SIGTERM);
	assert_int_equal(wait_status(sb, &st, 5000), 0);
	assert_int_equal(st.kind, SANDBOX_EXITED);
	assert_int_equal(st.exit_code, 128 + SIGTERM);
	assert_int_equal(sandbox_handle_status(sb, &st), -ECHILD);
	untrack_free_sb(sb);
}

static void test_kill_ends_everything(void **state)
{
	char *argv[] = {"/bin/sh", "-c", "trap '' TERM INT; sleep 1000 & sleep 1000", NULL};
	struct sandbox_opts o = base_opts(argv);
	struct cl_error err = {{0}};
	struct sandbox *sb = NULL;
	struct sandbox_status st;

	assert_int_equal(sandbox_start(&o, &sb, &err), 0);
	track_sb(sb);
	assert_true(sandbox_cgroup_id(sb) > 0);
	assert_int_equal(sandbox_kill(sb), 0);
	assert_int_equal(wait_status(sb, &st, 5000), 0);
	assert_int_equal(st.kind, SANDBOX_EXITED);
	assert_int_equal(st.exit_code, 128 + SIGKILL);
	untrack_free_sb(sb);
}

static void test_cgroup_id_is_the_leaf_inode(void **state)
{
	char *argv[] = {"sleep", "1000", NULL};
	struct sandbox_opts o = base_opts(argv);
	struct cl_error err = {{0}};
	struct sandbox *sb = NULL;
	struct stat st;
	char path[PATH_MAX];

	assert_int_equal(sandbox_start(&o, &sb, &err), 0);
	track_sb(sb);
	snprintf(path, sizeof(path), "%s", sandbox_cgroup_path(sb));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(sandbox_cgroup_id(sb), (uint64_t)st.st_ino);
	untrack_free_sb(sb);
	/* sandbox_free removed the leaf */
	assert_int_equal(stat(path, &st), -1);
}

/* ---- the listener-fd hook --------------------------------------------------------------- */

struct hook_data {
	char marker[128];
};

/* Stands in for the seccomp filter installer: it must run in the init (pid 1 of the sandbox)
 * before the agent starts; its "listener" is an eventfd whose value is the pid it ran as. */
static int eventfd_hook(void *userdata, int *ret_listener_fd)
{
	struct hook_data *d = userdata;
	int fd = eventfd((unsigned)getpid(), EFD_CLOEXEC);
	int m;

	if (fd < 0)
		return -errno;
	m = open(d->marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (m < 0) {
		close(fd);
		return -errno;
	}
	close(m);
	/* an fd the hook forgets to close must not reach the agent */
	(void)open("/dev/null", O_RDONLY);
	*ret_listener_fd = fd;
	return 0;
}

static int failing_hook(void *userdata, int *ret_listener_fd)
{
	return -EPERM;
}

static void test_filter_hook_runs_in_init_and_its_fd_reaches_the_supervisor(void **state)
{
	struct hook_data d;
	char script[PATH_MAX * 2], out[256];
	char *argv[] = {"/bin/sh", "-c", script, NULL};
	struct sandbox_opts o = base_opts(argv);
	struct cl_error err = {{0}};
	struct sandbox *sb = NULL;
	struct sandbox_status st;
	uint64_t value = 0;
	int pfd[2], stdio[3];

	snprintf(d.marker, sizeof(d.marker), "%s/hook-ran", tmpdir);
	unlink(d.marker);
	/* the agent sees the hook's marker (the hook ran first) and no fd beyond 0-2 (ls's own
	 * directory fd is 3) */
	snprintf(script, sizeof(script), "test -e %s && echo ran; ls /proc/self/fd | tr '\\n' ' '",
	         d.marker);
	o.install_filter = eventfd_hook;
	o.install_filter_userdata = &d;
	assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
	stdio[0] = STDIN_FILENO;
	stdio[1] = pfd[1];
	stdio[2] = STDERR_FILENO;
	o.stdio_fds = stdio;
	assert_int_equal(sandbox_start(&o, &sb, &err), 0);
	track_sb(sb);
	close(pfd[1]);
	assert_true(sandbox_listener_fd(sb) >= 0);
	assert_int_equal(read(sandbox_listener_fd(sb), &value, sizeof(value)), sizeof(value));
	assert_int_equal(value, 1); /* the hook ran as pid 1: the init */
	read_until_eof(pfd[0], out, sizeof(out));
	close(pfd[0]);
	assert_string_equal(out, "ran\n0 1 2 3 ");
	assert_int_equal(wait_status(sb, &st, 5000), 0);
	assert_int_equal(st.exit_code, 0);
	untrack_free_sb(sb);

	/* a failing hook fails the start, with the reason, and leaves nothing behind */
	o.install_filter = failing_hook;
	o.stdio_fds = NULL;
	sb = NULL;
	assert_int_equal(sandbox_start(&o, &sb, &err), -EPERM);
	assert_null(sb);
	assert_non_null(strstr(err.msg, "seccomp filter"));
	assert_int_equal(count_leaves(test_parent), 0);
}

/* ---- the terminal ---------------------------------------------------------------------- */

/* Read the agent's pty MASTER until the sandbox exits and the pty is drained; the output in
 * OUT; returns the exit code, or -1 on a timeout. */
static int relay_until_exit(struct sandbox *sb, int master, char *out, size_t size)
{
	struct sandbox_status st = {0};
	size_t len = 0;
	bool exited = false, eof = false;
	int64_t end = now_ms() + 10000;

	/* The pty's end (EIO once every slave is closed) and the exit status come on two fds in
	 * either order: wait for both, or the deadline. */
	while (now_ms() < end && !(exited && eof)) {
		struct pollfd p[2] = {{.fd = eof ? -1 : master, .events = POLLIN},
		                      {.fd = sandbox_status_fd(sb), .events = POLLIN}};
		ssize_t n;

		if (!exited && sandbox_handle_status(sb, &st) == 0 && st.kind == SANDBOX_EXITED)
			exited = true;
		if (poll(p, 2, exited ? 200 : 100) < 0)
			break;
		if (exited && !(p[0].revents & (POLLIN | POLLHUP)))
			break; /* exited and drained */
		if (eof || !(p[0].revents & (POLLIN | POLLHUP)))
			continue;
		n = read(master, out + len, size - 1 - len);
		if (n <= 0)
			eof = true; /* EIO: every slave closed */
		else
			len += (size_t)n;
	}
	out[len] = '\0';
	return exited ? st.exit_code : -1;
}

/* Runs in a child that is a session leader with the test's pty (the "user's terminal") as its
 * controlling terminal and stdio. Returns 0 or a step number, and says what failed on errfd. */
static int terminal_session(int user_master, int errfd)
{
	struct winsize size = {.ws_row = 33, .ws_col = 77};
	struct cl_error err = {{0}};
	struct sandbox_status st;
	struct sandbox *sb = NULL;
	char out[4096];
	int master, code;

	/* 1. its own terminal: from its own devpts (the user's is not there), the controlling
	 * terminal of its own session (the init's: sid 1), with the size given */
	{
		char *argv[] = {"/bin/sh", "-c",
		                "tty; ls -1 /dev/pts; stty size; echo via-dev-tty >/dev/tty; "
		                "cut -d' ' -f6 /proc/self/stat; "
		                "ls -l /dev/ptmx /dev/pts/ptmx | grep -c ' 5, *2 ' || :",
		                NULL};
		struct sandbox_opts o = base_opts(argv);

		o.pty = true;
		o.pty_winsize = &size;
		if (sandbox_start(&o, &sb, &err) < 0) {
			dprintf(errfd, "start: %s\n", err.msg);
			return 1;
		}
		master = sandbox_take_pty_master(sb);
		if (master < 0)
			return 2;
		code = relay_until_exit(sb, master, out, sizeof(out));
		close(master);
		sandbox_free(sb);
		if (code != 0 ||
		    !strstr(out, "/dev/pts/0\r\n0\r\nptmx\r\n33 77\r\nvia-dev-tty\r\n1\r\n")) {
			dprintf(errfd, "exit %d, the agent's terminal said:\n%s\n", code, out);
			return 3;
		}
		/* /dev/ptmx is the sandbox's ptmx, not the host's device */
		if (strstr(out, "1\r\n1\r\n")) {
			dprintf(errfd, "/dev/ptmx is still the host's: %s\n", out);
			return 4;
		}
		/* nothing of it reached the user's terminal, which stayed ours */
		struct pollfd p = {.fd = user_master, .events = POLLIN};
		if (poll(&p, 1, 100) != 0) {
			dprintf(errfd, "output reached the user's terminal\n");
			return 5;
		}
		if (tcgetpgrp(STDIN_FILENO) != getpgrp())
			return 6;
	}
	/* 2. Ctrl-C and Ctrl-Z through its pty's line discipline; continued in its foreground */
	{
		char *argv[] = {"sleep", "1000", NULL};
		struct sandbox_opts o = base_opts(argv);

		o.pty = true;
		if (sandbox_start(&o, &sb, &err) < 0)
			return 7;
		master = sandbox_take_pty_master(sb);
		if (write(master, "\x1a", 1) != 1)
			return 8;
		if (wait_status(sb, &st, 5000) < 0 || st.kind != SANDBOX_STOPPED ||
		    st.stop_signal != SIGTSTP) {
			dprintf(errfd, "after ^Z: kind %d sig %d\n", st.kind, st.stop_signal);
			return 9;
		}
		if (sandbox_continue(sb, true) < 0)
			return 10;
		if (wait_status(sb, &st, 5000) < 0 || st.kind != SANDBOX_CONTINUED) {
			dprintf(errfd, "after continue: kind %d\n", st.kind);
			return 11;
		}
		if (write(master, "\x03", 1) != 1)
			return 12;
		if (wait_status(sb, &st, 5000) < 0 || st.kind != SANDBOX_EXITED ||
		    st.exit_code != 128 + SIGINT) {
			dprintf(errfd, "after ^C: kind %d code %d\n", st.kind, st.exit_code);
			return 13;
		}
		close(master);
		sandbox_free(sb);
	}
	/* 3. a new size on the master reaches the agent (SIGWINCH) */
	{
		char *argv[] = {
		        "/bin/sh", "-c",
		        "trap 'stty size; exit 0' WINCH; echo ready; while :; do sleep 0.05; "
		        "done",
		        NULL};
		struct sandbox_opts o = base_opts(argv);
		struct winsize ws = {.ws_row = 40, .ws_col = 90};
		size_t len = 0;

		o.pty = true;
		if (sandbox_start(&o, &sb, &err) < 0)
			return 14;
		master = sandbox_take_pty_master(sb);
		for (int64_t end = now_ms() + 5000; now_ms() < end && !strstr(out, "ready");) {
			struct pollfd p = {.fd = master, .events = POLLIN};
			ssize_t n;

			out[len] = '\0';
			if (poll(&p, 1, 100) == 1 && (n = read(master, out + len, 100)) > 0)
				len += (size_t)n;
			out[len] = '\0';
		}
		if (ioctl(master, TIOCSWINSZ, &ws) < 0)
			return 15;
		code = relay_until_exit(sb, master, out, sizeof(out));
		close(master);
		sandbox_free(sb);
		if (code != 0 || !strstr(out, "40 90")) {
			dprintf(errfd, "exit %d after the resize, it said: %s\n", code, out);
			return 16;
		}
	}
	/* 4. without a pty: no terminal at all, not the user's (fds 0-2 were it) */
	{
		char *argv[] = {"/bin/sh", "-c",
		                "[ -t 0 ] || [ -t 1 ] || [ -t 2 ] && echo has-tty || echo no-tty; "
		                "(: </dev/tty) 2>/dev/null && echo has-ctty || echo no-ctty",
		                NULL};
		struct sandbox_opts o = base_opts(argv);
		int pfd[2], stdio[3];

		if (pipe2(pfd, O_CLOEXEC) < 0)
			return 17;
		stdio[0] = STDIN_FILENO; /* the user's terminal */
		stdio[1] = pfd[1];
		stdio[2] = STDERR_FILENO; /* the user's terminal */
		o.stdio_fds = stdio;
		if (sandbox_start(&o, &sb, &err) < 0)
			return 18;
		close(pfd[1]);
		read_until_eof(pfd[0], out, sizeof(out));
		close(pfd[0]);
		if (wait_status(sb, &st, 5000) < 0 || st.kind != SANDBOX_EXITED || st.exit_code)
			return 19;
		sandbox_free(sb);
		if (strcmp(out, "no-tty\nno-ctty\n") != 0) {
			dprintf(errfd, "without a pty the agent said: %s\n", out);
			return 20;
		}
	}
	return 0;
}

static void test_agent_gets_its_own_terminal_never_the_users(void **state)
{
	int master, slave, status;
	pid_t child;

	assert_int_equal(openpty(&master, &slave, NULL, NULL, NULL), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		int errfd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);

		if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) < 0)
			_exit(100);
		dup2(slave, 0);
		dup2(slave, 1);
		dup2(slave, 2);
		close(slave);
		_exit(terminal_session(master, errfd));
	}
	track_pid(child);
	close(slave);
	assert_int_equal(waitpid(child, &status, 0), child);
	for (int i = 0; i < MAX_TRACKED; i++)
		if (tracked_pid[i] == child)
			tracked_pid[i] = 0;
	close(master);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) != 0)
		fail_msg("terminal session failed at step %d", WEXITSTATUS(status));
}

static void test_non_root_agent_gets_its_own_terminal(void **state)
{
	int status, pfd[2];
	char out[2048];
	pid_t child;

	/* The pty of a sandbox in a user namespace: devpts mounted there, the same checks. */
	assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		char *argv[] = {"/bin/sh", "-c", "tty; ls -1 /dev/pts; id -u", NULL};
		struct sandbox_opts o = base_opts(argv);
		struct cl_error err = {{0}};
		struct sandbox *sb = NULL;
		int master, code, user_master, user_slave, stdio[3];

		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
			_exit(11);
		/* The user's terminal: a pty of this user's (never reaching the agent). */
		if (openpty(&user_master, &user_slave, NULL, NULL, NULL) < 0)
			_exit(15);
		stdio[0] = stdio[1] = stdio[2] = user_slave;
		o.stdio_fds = stdio;
		o.pty = true;
		o.cgroup_parent = NULL;
		o.cgroup_optional = true;
		if (sandbox_start(&o, &sb, &err) < 0) {
			dprintf(STDERR_FILENO, "non-root sandbox_start: %s\n", err.msg);
			_exit(12);
		}
		master = sandbox_take_pty_master(sb);
		code = relay_until_exit(sb, master, out, sizeof(out));
		if (write(pfd[1], out, strlen(out)) < 0)
			_exit(13);
		sandbox_free(sb);
		_exit(code < 0 ? 14 : code);
	}
	track_pid(child);
	close(pfd[1]);
	read_until_eof(pfd[0], out, sizeof(out));
	close(pfd[0]);
	assert_int_equal(waitpid(child, &status, 0), child);
	for (int i = 0; i < MAX_TRACKED; i++)
		if (tracked_pid[i] == child)
			tracked_pid[i] = 0;
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) != 0)
		fail_msg("status %d; the agent said: %s", WEXITSTATUS(status), out);
	assert_string_equal(out, "/dev/pts/0\r\n0\r\nptmx\r\n65534\r\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_teardown(test_agent_is_pid_2_under_our_init, test_teardown),
	        cmocka_unit_test_teardown(test_proc_shows_only_the_sandbox, test_teardown),
	        cmocka_unit_test_teardown(test_network_has_only_loopback_up, test_teardown),
	        cmocka_unit_test_teardown(test_mounts_do_not_propagate_to_the_host, test_teardown),
	        cmocka_unit_test_teardown(test_cwd_env_and_ids_are_kept, test_teardown),
	        cmocka_unit_test_teardown(test_readonly_paths_cannot_be_written_by_the_agent,
	                                  test_teardown),
	        cmocka_unit_test_teardown(test_missing_cwd_fails_clearly, test_teardown),
	        cmocka_unit_test_teardown(test_exit_codes_propagate, test_teardown),
	        cmocka_unit_test_teardown(test_grandchild_dies_with_the_sandbox, test_teardown),
	        cmocka_unit_test_teardown(test_non_root_caller_gets_a_user_namespace,
	                                  test_teardown),
	        cmocka_unit_test_teardown(test_non_root_caller_without_a_cgroup_subtree,
	                                  test_teardown),
	        cmocka_unit_test_teardown(
	                test_supervisor_death_kills_the_agent_and_cleanup_removes_its_cgroup,
	                test_teardown),
	        cmocka_unit_test_teardown(test_supervisor_death_kills_a_paused_sandbox,
	                                  test_teardown),
	        cmocka_unit_test_teardown(test_stale_cleanup_spares_live_supervisors,
	                                  test_teardown),
	        cmocka_unit_test_teardown(test_pause_stops_the_sandbox_and_resume_continues_it,
	                                  test_teardown),
	        cmocka_unit_test_teardown(test_free_while_paused_leaves_nothing, test_teardown),
	        cmocka_unit_test_teardown(test_signal_is_passed_on_to_the_agent, test_teardown),
	        cmocka_unit_test_teardown(test_kill_ends_everything, test_teardown),
	        cmocka_unit_test_teardown(test_cgroup_id_is_the_leaf_inode, test_teardown),
	        cmocka_unit_test_teardown(
	                test_filter_hook_runs_in_init_and_its_fd_reaches_the_supervisor,
	                test_teardown),
	        cmocka_unit_test_teardown(test_agent_gets_its_own_terminal_never_the_users,
	                                  test_teardown),
	        cmocka_unit_test_teardown(test_non_root_agent_gets_its_own_terminal, test_teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
