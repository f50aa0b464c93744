/* The exec backstop against the real kernel (root): each test gets its own backstop, its own
 * cgroup2 cgroup(s) and temp directory, and its teardown removes them all, even after a failure.
 *
 * A binary that must not run is tests/helpers/marker: it creates the file named by its last
 * argument first thing, so "the marker never appeared" proves the image never ran. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/mount.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/backstop.h"
#include "bpf/backstop_abi.h"
#include "base/cleanup.h"
#include "supervisor/exec/args_digest.h"

#define MAX_CGROUPS 4

struct fixture {
	const char *skip_reason;
	struct backstop *b;
	char *cg_mount;
	/* Created cgroups, parents first; removed in reverse order. */
	char cgroups[MAX_CGROUPS][PATH_MAX];
	size_t n_cgroups;
	char tmpdir[PATH_MAX];
	char helpers[PATH_MAX];
};

static unsigned cgroup_counter;

static void path_join(char *buf, const char *dir, const char *name)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", dir, name);

	assert_true(n > 0 && n < PATH_MAX);
}

/* Create a cgroup under parent (the cgroup2 mount when NULL) with a unique name; returns its
 * index in f->cgroups. */
static size_t make_cgroup(struct fixture *f, const char *parent)
{
	char name[64];
	char *path;

	assert_true(f->n_cgroups < MAX_CGROUPS);
	path = f->cgroups[f->n_cgroups];
	snprintf(name, sizeof(name), "cloister-test-backstop-%d-%u", getpid(), cgroup_counter++);
	path_join(path, parent ? parent : f->cg_mount, name);
	assert_int_equal(mkdir(path, 0755), 0);
	return f->n_cgroups++;
}

static uint64_t cgroup_id_of(const char *path)
{
	uint64_t id = 0;

	assert_int_equal(backstop_cgroup_id(path, &id), 0);
	assert_true(id != 0);
	return id;
}

static void remove_cgroup(const char *path)
{
	char file[PATH_MAX];
	int fd;

	/* Kill anything a failed test left behind, then wait for the cgroup to empty. */
	snprintf(file, sizeof(file), "%s/cgroup.kill", path);
	fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)!write(fd, "1", 1);
		close(fd);
	}
	for (int i = 0; i < 200; i++) {
		if (rmdir(path) == 0 || errno == ENOENT)
			return;
		usleep(5000);
	}
	fprintf(stderr, "test_backstop: could not remove cgroup %s: %s\n", path, strerror(errno));
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

static void remove_tmpdir(const char *dir)
{
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

static void find_helpers(char *buf)
{
	const char *env = getenv("HELPERS");
	char exe[PATH_MAX];
	ssize_t n;
	char *slash;

	if (env && *env) {
		snprintf(buf, PATH_MAX, "%s", env);
		return;
	}
	/* build[/sanitize-…]/tests/kernel/test_backstop → build[/…]/tests/helpers */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	assert_non_null(slash);
	*slash = '\0';
	path_join(buf, exe, "../helpers");
}

/* What run_in_cgroup's child tells the backstop about its own exec's arguments, as the
 * supervisor does before it lets an exec through: the argv it execs (the default), other
 * arguments than it execs, the argv it execs with one byte changed (byte expect_flip_at of
 * argument expect_flip_arg), or nothing. */
enum expect { EXPECT_SAME, EXPECT_OTHER, EXPECT_ONE_BYTE_OFF, EXPECT_NOTHING };
static struct backstop *expect_b;
static enum expect expect_how = EXPECT_SAME;
static size_t expect_flip_arg, expect_flip_at;

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct cl_error err = {{0}};
	int r;

	if (!f)
		return -1;
	*state = f;
	if (geteuid() != 0) {
		f->skip_reason = "needs root (BPF programs, cgroups)";
		return 0;
	}
	if (backstop_cgroup2_mount(&f->cg_mount) < 0) {
		f->skip_reason = "no cgroup2 hierarchy in /proc/self/mountinfo";
		return 0;
	}
	r = backstop_open(&f->b, &err);
	if (r < 0) {
		fprintf(stderr, "test_backstop: %s\n", err.msg);
		f->skip_reason = "the exec backstop loads in neither mode here (see above)";
		return 0;
	}
	expect_b = f->b;
	snprintf(f->tmpdir, sizeof(f->tmpdir), "/tmp/cloister-test-backstop-XXXXXX");
	if (!mkdtemp(f->tmpdir))
		return -1;
	find_helpers(f->helpers);
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (!f)
		return 0;
	while (f->n_cgroups > 0)
		remove_cgroup(f->cgroups[--f->n_cgroups]);
	backstop_free(f->b);
	if (f->tmpdir[0])
		remove_tmpdir(f->tmpdir);
	free(f->cg_mount);
	free(f);
	return 0;
}

static struct fixture *fixture_or_skip(void **state)
{
	struct fixture *f = *state;

	if (f->skip_reason) {
		print_message("skipped: %s\n", f->skip_reason);
		skip();
	}
	return f;
}

/* Copy src to tmpdir/name (mode 0755): a file whose inode the test controls. */
static void copy_file(struct fixture *f, const char *src, const char *name, char *ret_path)
{
	char buf[65536];
	ssize_t n;
	int in, out;

	path_join(ret_path, f->tmpdir, name);
	in = open(src, O_RDONLY | O_CLOEXEC);
	assert_true(in >= 0);
	out = open(ret_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	assert_true(out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	assert_int_equal(n, 0);
	close(in);
	assert_int_equal(close(out), 0);
}

/* DST's content replaced by SRC's, in place (same inode). */
static void rewrite_file(const char *src, const char *dst)
{
	char buf[65536];
	ssize_t n;
	int in, out;

	in = open(src, O_RDONLY | O_CLOEXEC);
	assert_true(in >= 0);
	out = open(dst, O_WRONLY | O_TRUNC | O_CLOEXEC);
	assert_true(out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	assert_int_equal(n, 0);
	close(in);
	assert_int_equal(close(out), 0);
}

static void write_script(struct fixture *f, const char *name, const char *interp, char *ret_path)
{
	char text[PATH_MAX + 16];
	int fd, n;

	path_join(ret_path, f->tmpdir, name);
	n = snprintf(text, sizeof(text), "#!%s\n", interp);
	fd = open(ret_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, (size_t)n), n);
	assert_int_equal(close(fd), 0);
}

/* The content version of ST (one at a time: the tests are single-threaded). */
static const struct backstop_version *ver(const struct stat *st)
{
	static struct backstop_version v;

	v = backstop_stat_version(st);
	return &v;
}

/* Fake files (the full-map test): any version. */
static const struct backstop_version nover;

static void allow_file(struct fixture *f, uint64_t cg, const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(backstop_allow(f->b, cg, st.st_dev, st.st_ino, ver(&st)), 0);
}

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Fork a child that moves itself into cgroup, then execs path with argv. Returns its wait
 * status; *ret_pid (if not NULL) is its pid. The child exits 126 if the exec fails with EPERM
 * (LSM mode's denial), 127 otherwise, 125 if it could not enter the cgroup. */

static bool is_script(const char *path)
{
	char head[2] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool script = fd >= 0 && read(fd, head, 2) == 2 && head[0] == '#' && head[1] == '!';

	if (fd >= 0)
		close(fd);
	return script;
}

static void expect_own_args(const char *path, char *const argv[])
{
	static const char *const other[] = {"not", "these", "arguments"};
	struct backstop_args a;
	uint64_t key[2];
	size_t argc = 0;

	if (!expect_b || expect_how == EXPECT_NOTHING)
		return;
	while (argv[argc])
		argc++;
	backstop_args_key(expect_b, key);
	if (expect_how == EXPECT_OTHER) {
		args_digest_of_exec(key, other, 3, is_script(path), false, &a);
	} else if (expect_how == EXPECT_ONE_BYTE_OFF) {
		/* In the child: the copy is left to the exec. */
		const char *flipped[8];
		char *arg;
		size_t len;

		if (argc > ELEMENTSOF(flipped) || expect_flip_arg >= argc)
			_exit(124);
		memcpy(flipped, argv, argc * sizeof(*argv));
		len = strlen(argv[expect_flip_arg]);
		arg = strdup(argv[expect_flip_arg]);
		if (!arg || expect_flip_at >= len)
			_exit(124);
		arg[expect_flip_at] ^= 1;
		flipped[expect_flip_arg] = arg;
		args_digest_of_exec(key, flipped, argc, is_script(path), false, &a);
	} else {
		args_digest_of_exec(key, (const char *const *)argv, argc, is_script(path), false,
		                    &a);
	}
	if (backstop_expect_args(expect_b, getpid(), &a) < 0)
		_exit(124);
}

static int run_in_cgroup(const char *cgroup, const char *path, char *const argv[], pid_t *ret_pid)
{
	char procs[PATH_MAX];
	int fd, status;
	pid_t pid;

	path_join(procs, cgroup, "cgroup.procs");
	fd = open(procs, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *envp[] = {NULL};

		if (write(fd, "0", 1) != 1)
			_exit(125);
		expect_own_args(path, argv);
		execve(path, argv, envp);
		_exit(errno == EPERM ? 126 : 127);
	}
	close(fd);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (ret_pid)
		*ret_pid = pid;
	return status;
}

static void assert_ran_ok(int status)
{
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("expected exit 0, got %s %d", WIFEXITED(status) ? "exit" : "signal",
		         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

/* The backstop's answer: SIGKILL (tp_btf) or a failed exec with EPERM (LSM). */
static void assert_stopped(struct fixture *f, int status)
{
	if (backstop_mode(f->b) == BACKSTOP_MODE_TP_BTF) {
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
			fail_msg("expected SIGKILL, got %s %d",
			         WIFEXITED(status) ? "exit" : "signal",
			         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	} else {
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 126)
			fail_msg("expected exec EPERM (126), got %s %d",
			         WIFEXITED(status) ? "exit" : "signal",
			         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	}
}

/* Killed after the exec, in either mode (the arguments are checked at sched_process_exec). */
static void assert_killed(int status)
{
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		fail_msg("expected SIGKILL, got %s %d", WIFEXITED(status) ? "exit" : "signal",
		         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

/* Whether a minimal BPF LSM program loads and attaches here, independently of backstop.c. */
static bool lsm_attaches_here(char *why, size_t why_len)
{
	struct bpf_insn insns[] = {
	        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
	        {.code = BPF_JMP | BPF_EXIT},
	};
	int btf_id, prog, link;

	btf_id = libbpf_find_vmlinux_btf_id("bprm_check_security", BPF_LSM_MAC);
	if (btf_id < 0) {
		snprintf(why, why_len, "no BTF id for bprm_check_security: %s", strerror(-btf_id));
		return false;
	}
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_LSM_MAC,
	            .attach_btf_id = (__u32)btf_id);
	prog = bpf_prog_load(BPF_PROG_TYPE_LSM, "lsm_probe", "GPL", insns, ELEMENTSOF(insns),
	                     &opts);
	if (prog < 0) {
		snprintf(why, why_len, "BPF_PROG_LOAD of an LSM program: %s", strerror(-prog));
		return false;
	}
	link = bpf_link_create(prog, 0, BPF_LSM_MAC, NULL);
	close(prog);
	if (link < 0) {
		snprintf(why, why_len, "BPF_LINK_CREATE of an LSM program: %s", strerror(-link));
		return false;
	}
	close(link);
	snprintf(why, why_len, "an LSM program loads and attaches");
	return true;
}

/* Every run loads the programs, so the verifier's walk over them is start-up time (~100 ns an
 * instruction here): hashing the arguments 4 KiB per step with a loop inside made it walk
 * ~690 000 instructions, half a second of every run. Counted, not timed. */
static void test_loading_walks_few_verifier_instructions(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	uint64_t insns = 0;
	int r = backstop_verified_insns(f->b, &insns);

	if (r == -EOPNOTSUPP) {
		print_message(
		        "skipped: the kernel does not count verified instructions (< 5.16)\n");
		skip();
	}
	assert_int_equal(r, 0);
	printf("# verifier walked %llu instructions\n", (unsigned long long)insns);
	/* ~2500 here (6.18, tp_btf): loops written so that the verifier walks them once (bpf_loop
	 * callbacks, a search without early exit). One loop more kept state across iterations
	 * and cost 16644, ~1.5 ms of every run's start: the budget catches that, with room for
	 * other kernels' verifiers and for LSM mode's second program. */
	if (insns > 10000)
		fail_msg("the verifier walked %llu instructions (budget 10000)",
		         (unsigned long long)insns);
}

static void test_mode_probe_picks_lsm_only_where_it_attaches(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	char why[256];
	bool lsm = lsm_attaches_here(why, sizeof(why));

	print_message("backstop mode: %s (independent LSM probe: %s)\n", backstop_mode_name(f->b),
	              why);
	assert_int_equal(backstop_mode(f->b), lsm ? BACKSTOP_MODE_LSM : BACKSTOP_MODE_TP_BTF);
}

static void test_unregistered_cgroup_is_never_touched(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	size_t plain = make_cgroup(f, NULL), sandbox = make_cgroup(f, NULL);
	char marker_bin[PATH_MAX], marker[PATH_MAX];

	path_join(marker_bin, f->helpers, "marker");
	path_join(marker, f->tmpdir, "ran");
	/* Another cgroup is a sandbox, so the program is active... */
	assert_int_equal(backstop_add_sandbox(f->b, cgroup_id_of(f->cgroups[sandbox])), 0);

	/* ...yet a process outside it runs an unapproved binary untouched. */
	assert_ran_ok(run_in_cgroup(f->cgroups[plain], marker_bin,
	                            (char *[]){marker_bin, marker, NULL}, NULL));
	assert_true(exists(marker));

	/* Control: the same exec in the sandbox is stopped. */
	assert_int_equal(unlink(marker), 0);
	assert_stopped(f, run_in_cgroup(f->cgroups[sandbox], marker_bin,
	                                (char *[]){marker_bin, marker, NULL}, NULL));
	assert_false(exists(marker));
}

static void test_approved_binary_runs_normally(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	size_t cg = make_cgroup(f, NULL);
	uint64_t id = cgroup_id_of(f->cgroups[cg]);
	char truebin[PATH_MAX];

	copy_file(f, "/bin/true", "true", truebin);
	assert_int_equal(backstop_add_sandbox(f->b, id), 0);
	allow_file(f, id, truebin);
	assert_ran_ok(run_in_cgroup(f->cgroups[cg], truebin, (char *[]){truebin, NULL}, NULL));
	/* Approving twice is harmless. */
	allow_file(f, id, truebin);
	assert_ran_ok(run_in_cgroup(f->cgroups[cg], truebin, (char *[]){truebin, NULL}, NULL));
}

static void test_unapproved_binary_never_runs_an_instruction(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	size_t cg = make_cgroup(f, NULL);
	uint64_t id = cgroup_id_of(f->cgroups[cg]);
	char truebin[PATH_MAX], marker_bin[PATH_MAX], marker[PATH_MAX];

	copy_file(f, "/bin/true", "true", truebin);
	path_join(marker_bin, f->helpers, "marker");
	path_join(marker, f->tmpdir, "ran");
	assert_int_equal(backstop_add_sandbox(f->b, id), 0);
	allow_file(f, id, truebin);

	for (int i = 0; i < 20; i++)
		assert_stopped(f, run_in_cgroup(f->cgroups[cg], marker_bin,
		                                (char *[]){marker_bin, marker, NULL}, NULL));
	assert_false(exists(marker));
	/* The approved file still runs in the same sandbox. */
	assert_ran_ok(run_in_cgroup(f->cgroups[cg], truebin, (char *[]){truebin, NULL}, NULL));
}

static void test_same_bytes_other_inode_is_not_approved(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	size_t cg = make_cgroup(f, NULL);
	uint64_t id = cgroup_id_of(f->cgroups[cg]);
	char approved[PATH_MAX], copy[PATH_MAX];

	copy_file(f, "/bin/true", "true", approved);
	copy_file(f, "/bin/true", "true-copy", copy);
	assert_int_equal(backstop_add_sandbox(f->b, id), 0);
	allow_file(f, id, approved);
	assert_stopped(f, run_in_cgroup(f->cgroups[cg], copy, (char *[]){copy, NULL}, NULL));
	/* Revoked, the approved one is stopped too. */
	struct stat st;
	assert_int_equal(stat(approved, &st), 0);
	assert_int_equal(backstop_revoke(f->b, id, st.st_dev, st.st_ino, ver(&st)), 0);
	assert_int_equal(backstop_revoke(f->b, id, st.st_dev, st.st_ino, ver(&st)), -ENOENT);
	assert_stopped(f,
	               run_in_cgroup(f->cgroups[cg], approved, (char *[]){approved, NULL}, NULL));
}

/* backstop_allow skips the map update for a file it already approved; an approval taken back
 * (revoke, sandbox removal) must then really be written again. */
static void test_approving_again_after_revoke_or_removal_reaches_the_kernel(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	size_t cg = make_cgroup(f, NULL);
	uint64_t id = cgroup_id_of(f->cgroups[cg]);
	char approved[PATH_MAX];
	char *argv[] = {approved, NULL};
	struct stat st;

	copy_file(f, "/bin/true", "true", approved);
	assert_int_equal(stat(approved, &st), 0);
	assert_int_equal(backstop_add_sandbox(f->b, id), 0);
	allow_file(f, id, approved);
	allow_file(f, id, approved); /* already approved: no map update, still fine */
	assert_ran_ok(run_in_cgroup(f->cgroups[cg], approved, argv, NULL));

	assert_int_equal(backstop_revoke(f->b, id, st.st_dev, st.st_ino, ver(&st)), 0);
	assert_stopped(f, run_in_cgroup(f->cgroups[cg], approved, argv, NULL));
	allow_file(f, id, approved);
	assert_ran_ok(run_in_cgroup(f->cgroups[cg], approved, argv, NULL));

	assert_int_equal(backstop_remove_sandbox(f->b, id), 0);
	assert_int_equal(backstop_add_sandbox(f->b, id), 0);
	assert_stopped(f, run_in_cgroup(f->cgroups[cg], approved, argv, NULL));
	allow_file(f, id, approved);
	assert_ran_ok(run_in_cgroup(f->cgroups[cg], approved, argv, NULL));
}

static void test_script_checks_its_interpreter(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	size_t cg = make_cgroup(f, NULL);
	uint64_t id = cgroup_id_of(f->cgroups[cg]);
	char interp[PATH_MAX], other[PATH_MAX], good[PATH_MAX], bad[PATH_MAX], marker[PATH_MAX];

	/* The interpreter is the marker: the script ran iff the marker appears. */
	path_join(other, f->helpers, "marker");
	copy_file(f, other, "interp", interp);
	write_script(f, "good.sh", interp, good);
	write_script(f, "bad.sh", other, bad);
	path_join(marker, f->tmpdir, "ran");
	assert_int_equal(backstop_add_sandbox(f->b, id), 0);
	allow_file(f, id, interp);

	/* Script and interpreter approved: runs (both modes). */
	allow_file(f, id, good);
	assert_ran_ok(run_in_cgroup(f->cgroups[cg], good, (char *[]){good, marker, NULL}, NULL));
	assert_true(exists(marker));
	assert_int_equal(unlink(marker), 0);

	/* Script approved, its interpreter not: stopped, nothing ran. */
	allow_file(f, id, bad);
	assert_stopped(f, run_in_cgroup(f->cgroups[cg], bad, (char *[]){bad, marker, NULL}, NULL));
	assert_false(exists(marker));

	/* Interpreter approved, script not: tp_btf checks the final binary only (bprm->file is
	 * the interpreter at sched_process_exec), LSM checks every stage of the chain. */
	struct stat st;
	assert_int_equal(stat(good, &st), 0);
	assert_int_equal(backstop_revoke(f->b, id, st.st_dev, st.st_ino, ver(&st)), 0);
	if (backstop_mode(f->b) == BACKSTOP_MODE_TP_BTF) {
		assert_ran_ok(
		        run_in_cgroup(f->cgroups[cg], good, (char *[]){good, marker, NULL}, NULL));
		assert_true(exists(marker));
	} else {
		assert_stopped(f, run_in_cgroup(f->cgroups[cg], good,
		                                (char *[]){good, marker, NULL}, NULL));
		assert_false(exists(marker));
	}
}

static void test_descendant_cgroups_are_checked(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	size_t cg = make_cgroup(f, NULL);
	size_t child = make_cgroup(f, f->cgroups[cg]);
	size_t grandchild = make_cgroup(f, f->cgroups[child]);
	uint64_t id = cgroup_id_of(f->cgroups[cg]);
	char truebin[PATH_MAX], marker_bin[PATH_MAX], marker[PATH_MAX];

	copy_file(f, "/bin/true", "true", truebin);
	path_join(marker_bin, f->helpers, "marker");
	path_join(marker, f->tmpdir, "ran");
	assert_int_equal(backstop_add_sandbox(f->b, id), 0);
	allow_file(f, id, truebin);

	for (size_t c = child; c <= grandchild; c++) {
		assert_stopped(f, run_in_cgroup(f->cgroups[c], marker_bin,
		                                (char *[]){marker_bin, marker, NULL}, NULL));
		assert_false(exists(marker));
		assert_ran_ok(
		        run_in_cgroup(f->cgroups[c], truebin, (char *[]){truebin, NULL}, NULL));
	}
}

/* The agent is pid 1 of its own pid namespace, where signals from inside are ignored unless
 * handled: the backstop's kernel-sent SIGKILL must still kill it. */
static void test_pid_namespace_init_is_stopped_too(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	size_t cg = make_cgroup(f, NULL);
	uint64_t id = cgroup_id_of(f->cgroups[cg]);
	char procs[PATH_MAX], marker_bin[PATH_MAX], marker[PATH_MAX];
	int fd, status;
	pid_t pid;

	path_join(marker_bin, f->helpers, "marker");
	path_join(marker, f->tmpdir, "ran");
	path_join(procs, f->cgroups[cg], "cgroup.procs");
	assert_int_equal(backstop_add_sandbox(f->b, id), 0);
	fd = open(procs, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *argv[] = {marker_bin, marker, NULL}, *envp[] = {NULL};
		pid_t init;

		if (write(fd, "0", 1) != 1 || unshare(CLONE_NEWPID) < 0)
			_exit(125);
		init = fork();
		if (init < 0)
			_exit(125);
		if (init == 0) {
			if (getpid() != 1)
				_exit(124);
			execve(marker_bin, argv, envp);
			_exit(errno == EPERM ? 126 : 127);
		}
		/* Relay how pid 1 ended: 128+signal like a shell. */
		if (waitpid(init, &status, 0) != init)
			_exit(125);
		_exit(WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status));
	}
	close(fd);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status),
	                 backstop_mode(f->b) == BACKSTOP_MODE_TP_BTF ? 128 + SIGKILL : 126);
	assert_false(exists(marker));
}

struct collected {
	struct backstop_event ev[16];
	size_t n;
};

static int collect(const struct backstop_event *ev, void *userdata)
{
	struct collected *c = userdata;

	if (c->n < ELEMENTSOF(c->ev))
		c->ev[c->n++] = *ev;
	return 0;
}

static void test_events_name_pid_cgroup_and_file(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	size_t cg = make_cgroup(f, NULL);
	size_t child = make_cgroup(f, f->cgroups[cg]);
	uint64_t id = cgroup_id_of(f->cgroups[cg]), child_id = cgroup_id_of(f->cgroups[child]);
	char marker_bin[PATH_MAX], marker[PATH_MAX];
	struct collected c = {.n = 0};
	struct pollfd pfd;
	struct stat st;
	pid_t pid;

	path_join(marker_bin, f->helpers, "marker");
	path_join(marker, f->tmpdir, "ran");
	assert_int_equal(stat(marker_bin, &st), 0);
	assert_int_equal(backstop_add_sandbox(f->b, id), 0);
	assert_int_equal(backstop_consume_events(f->b, collect, &c), 0);

	assert_stopped(f, run_in_cgroup(f->cgroups[child], marker_bin,
	                                (char *[]){marker_bin, marker, NULL}, &pid));
	pfd = (struct pollfd){.fd = backstop_events_fd(f->b), .events = POLLIN};
	assert_int_equal(poll(&pfd, 1, 2000), 1);
	assert_int_equal(backstop_consume_events(f->b, collect, &c), 1);
	assert_int_equal(c.n, 1);
	print_message("event: pid %d comm %s file %s dev %u:%u ino %lu action %d\n", c.ev[0].pid,
	              c.ev[0].comm, c.ev[0].filename, major(c.ev[0].st_dev), minor(c.ev[0].st_dev),
	              (unsigned long)c.ev[0].st_ino, c.ev[0].action);
	assert_int_equal(c.ev[0].pid, pid);
	assert_true(c.ev[0].sandbox_cgroup_id == id);
	assert_true(c.ev[0].cgroup_id == child_id);
	assert_true(c.ev[0].st_dev == st.st_dev);
	assert_true(c.ev[0].st_ino == st.st_ino);
	assert_string_equal(c.ev[0].filename, marker_bin);
	assert_int_equal(c.ev[0].action, backstop_mode(f->b) == BACKSTOP_MODE_TP_BTF
	                                         ? BACKSTOP_KILLED
	                                         : BACKSTOP_DENIED);
	assert_int_equal(c.ev[0].error, backstop_mode(f->b) == BACKSTOP_MODE_TP_BTF ? 0 : -EPERM);
	assert_true(backstop_events_dropped(f->b) == 0);
}

/* The arguments: an approved file runs only with the arguments the supervisor expected for
 * the exec (long ones too: the kernel side hashes them chunk by chunk), and an exec nobody
 * let through is stopped (fail closed). Killed after the exec (the check needs the new
 * image), in both modes. */
static void test_arguments_other_than_expected_are_stopped(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	size_t cg = make_cgroup(f, NULL);
	uint64_t id = cgroup_id_of(f->cgroups[cg]);
	char marker_bin[PATH_MAX], marker[PATH_MAX], script[PATH_MAX];
	static char longarg[10000];
	struct collected c = {.n = 0};
	struct pollfd pfd;

	path_join(script, f->helpers, "marker");
	copy_file(f, script, "m", marker_bin);
	path_join(marker, f->tmpdir, "ran");
	write_script(f, "args.sh", marker_bin, script);
	assert_int_equal(backstop_add_sandbox(f->b, id), 0);
	allow_file(f, id, marker_bin);
	allow_file(f, id, script);
	assert_int_equal(backstop_consume_events(f->b, collect, &c), 0);

	/* As expected: runs (a short argv, one over a chunk, a script's). */
	assert_ran_ok(run_in_cgroup(f->cgroups[cg], marker_bin,
	                            (char *[]){marker_bin, marker, NULL}, NULL));
	assert_true(exists(marker));
	assert_int_equal(unlink(marker), 0);
	memset(longarg, 'x', sizeof(longarg) - 1);
	assert_ran_ok(run_in_cgroup(f->cgroups[cg], marker_bin,
	                            (char *[]){marker_bin, longarg, marker, NULL}, NULL));
	assert_true(exists(marker));
	assert_int_equal(unlink(marker), 0);
	assert_ran_ok(
	        run_in_cgroup(f->cgroups[cg], script, (char *[]){script, marker, NULL}, NULL));
	assert_true(exists(marker));
	assert_int_equal(unlink(marker), 0);

	/* Other arguments than expected, or none expected: killed before the first instruction. */
	expect_how = EXPECT_OTHER;
	assert_killed(run_in_cgroup(f->cgroups[cg], marker_bin,
	                            (char *[]){marker_bin, marker, NULL}, NULL));
	assert_killed(
	        run_in_cgroup(f->cgroups[cg], script, (char *[]){script, marker, NULL}, NULL));
	expect_how = EXPECT_NOTHING;
	assert_killed(run_in_cgroup(f->cgroups[cg], marker_bin,
	                            (char *[]){marker_bin, marker, NULL}, NULL));
	/* One byte off, wherever it is: every word of every chunk is hashed (the last bytes,
	 * past the last whole word; a byte deep in a later chunk; the first byte). */
	expect_how = EXPECT_ONE_BYTE_OFF;
	const size_t flips[][2] = {{2, strlen(marker) - 1}, {1, 5000}, {0, 0}};
	for (size_t k = 0; k < ELEMENTSOF(flips); k++) {
		expect_flip_arg = flips[k][0];
		expect_flip_at = flips[k][1];
		assert_killed(run_in_cgroup(f->cgroups[cg], marker_bin,
		                            (char *[]){marker_bin, longarg, marker, NULL}, NULL));
	}
	expect_how = EXPECT_SAME;
	assert_false(exists(marker));
	pfd = (struct pollfd){.fd = backstop_events_fd(f->b), .events = POLLIN};
	assert_int_equal(poll(&pfd, 1, 2000), 1);
	assert_int_equal(backstop_consume_events(f->b, collect, &c), 6);
	assert_int_equal(c.ev[0].why, BACKSTOP_WHY_ARGS);
	assert_int_equal(c.ev[1].why, BACKSTOP_WHY_ARGS);
	assert_int_equal(c.ev[2].why, BACKSTOP_WHY_NO_ARGS);
	for (size_t k = 3; k < 6; k++)
		assert_int_equal(c.ev[k].why, BACKSTOP_WHY_ARGS);
}

/* An expectation is spent by the exec it was for: the same thread exec'ing the very same
 * arguments again (its new image re-execs itself) is stopped, since nothing decided on that
 * second exec. */
static void test_an_expectation_is_spent_by_one_exec(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	size_t cg = make_cgroup(f, NULL);
	uint64_t id = cgroup_id_of(f->cgroups[cg]);
	char reexec[PATH_MAX], marker[PATH_MAX];
	struct collected c = {.n = 0};
	struct pollfd pfd;

	path_join(reexec, f->helpers, "reexec");
	path_join(marker, f->tmpdir, "ran");
	assert_int_equal(backstop_add_sandbox(f->b, id), 0);
	allow_file(f, id, reexec);
	assert_int_equal(backstop_consume_events(f->b, collect, &c), 0);

	assert_killed(
	        run_in_cgroup(f->cgroups[cg], reexec, (char *[]){reexec, marker, NULL}, NULL));
	assert_false(exists(marker));
	pfd = (struct pollfd){.fd = backstop_events_fd(f->b), .events = POLLIN};
	assert_int_equal(poll(&pfd, 1, 2000), 1);
	assert_int_equal(backstop_consume_events(f->b, collect, &c), 1);
	assert_int_equal(c.ev[0].why, BACKSTOP_WHY_NO_ARGS);
}

/* A child in CGROUP that execs PATH with ARGV once *GO is written to: its pid is known before
 * it execs, so that the test writes its expectation (as the supervisor does). */
static pid_t spawn_held(const char *cgroup, const char *path, char *const argv[], int *ret_go)
{
	char procs[PATH_MAX];
	int go[2], fd;
	pid_t pid;

	path_join(procs, cgroup, "cgroup.procs");
	fd = open(procs, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *envp[] = {NULL}, c;

		close(go[1]);
		if (write(fd, "0", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(125);
		execve(path, argv, envp);
		_exit(127);
	}
	close(fd);
	close(go[0]);
	*ret_go = go[1];
	return pid;
}

static int release_held(pid_t pid, int go)
{
	int status;

	assert_int_equal(write(go, "x", 1), 1);
	close(go);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

/* Thread ids other than TID whose expectations share TID's window of slots (no such threads
 * need exist: the table is keyed by the number). */
static void colliding_tids(pid_t tid, pid_t *ret, size_t n)
{
	uint32_t home = backstop_abi_expect_home((uint32_t)tid);
	size_t k = 0;

	for (uint32_t t = 5000000; k < n; t++)
		if (backstop_abi_expect_home(t) == home)
			ret[k++] = (pid_t)t;
}

/* The expectations live in a table of windows of BACKSTOP_EXPECT_WINDOW slots: a thread's
 * newest expectation replaces its older one; a full window gives the oldest slot to the newest
 * expectation, and the exec that lost it is stopped (fail closed), never let through. */
static void test_expectations_replace_and_a_full_window_drops_the_oldest(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	size_t cg = make_cgroup(f, NULL);
	uint64_t id = cgroup_id_of(f->cgroups[cg]);
	static const char *const other[] = {"not", "these", "arguments"};
	char marker_bin[PATH_MAX], marker[PATH_MAX];
	pid_t fake[BACKSTOP_EXPECT_WINDOW], pid;
	struct backstop_args a, wrong;
	uint64_t key[2];
	int go;

	path_join(marker_bin, f->helpers, "marker");
	path_join(marker, f->tmpdir, "ran");
	char *const argv[] = {marker_bin, marker, NULL};
	assert_int_equal(backstop_add_sandbox(f->b, id), 0);
	allow_file(f, id, marker_bin);
	backstop_args_key(f->b, key);
	args_digest_of_exec(key, (const char *const *)argv, 2, false, false, &a);
	args_digest_of_exec(key, other, 3, false, false, &wrong);

	/* A wrong expectation, then the right one: the newer counts. The window then filled. */
	pid = spawn_held(f->cgroups[cg], marker_bin, argv, &go);
	assert_int_equal(backstop_expect_args(f->b, pid, &wrong), 0);
	assert_int_equal(backstop_expect_args(f->b, pid, &a), 0);
	colliding_tids(pid, fake, BACKSTOP_EXPECT_WINDOW);
	for (size_t k = 0; k + 1 < BACKSTOP_EXPECT_WINDOW; k++)
		assert_int_equal(backstop_expect_args(f->b, fake[k], &wrong), 0);
	assert_ran_ok(release_held(pid, go));
	assert_true(exists(marker));
	assert_int_equal(unlink(marker), 0);

	/* One more than the window holds: the oldest, this exec's, is dropped. */
	pid = spawn_held(f->cgroups[cg], marker_bin, argv, &go);
	assert_int_equal(backstop_expect_args(f->b, pid, &a), 0);
	colliding_tids(pid, fake, BACKSTOP_EXPECT_WINDOW);
	for (size_t k = 0; k < BACKSTOP_EXPECT_WINDOW; k++)
		assert_int_equal(backstop_expect_args(f->b, fake[k], &wrong), 0);
	assert_killed(release_held(pid, go));
	assert_false(exists(marker));
}

/* A file rewritten in place keeps its inode, not its ctime: the approval of what it held does
 * not cover what it holds now. */
static void test_file_rewritten_in_place_is_not_approved(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	size_t cg = make_cgroup(f, NULL);
	uint64_t id = cgroup_id_of(f->cgroups[cg]);
	char prog[PATH_MAX], marker[PATH_MAX], marker_bin[PATH_MAX];
	struct stat before, after;

	copy_file(f, "/bin/true", "prog", prog);
	path_join(marker, f->tmpdir, "ran");
	assert_int_equal(backstop_add_sandbox(f->b, id), 0);
	allow_file(f, id, prog);
	assert_int_equal(stat(prog, &before), 0);
	path_join(marker_bin, f->helpers, "marker");
	rewrite_file(marker_bin, prog); /* same name, same inode, new content */
	assert_int_equal(stat(prog, &after), 0);
	assert_true(after.st_ino == before.st_ino);
	assert_stopped(f,
	               run_in_cgroup(f->cgroups[cg], prog, (char *[]){prog, marker, NULL}, NULL));
	assert_false(exists(marker));
	allow_file(f, id, prog); /* approved as it is now: runs */
	assert_ran_ok(run_in_cgroup(f->cgroups[cg], prog, (char *[]){prog, marker, NULL}, NULL));
	assert_true(exists(marker));
}

struct overlay_paths {
	char l[PATH_MAX], u[PATH_MAX], up[PATH_MAX], wk[PATH_MAX], m[PATH_MAX], bin[PATH_MAX];
	char opts[4 * PATH_MAX];
};

/* Child of the overlay test: in a mount namespace of its own (so nothing leaks to the host),
 * mount an overlay at m over l, then for every byte read from go, exec m/true in a grandchild
 * and write back one byte: its exit code, or 128+signal. */
static void overlay_child(const struct overlay_paths *p, int procs_fd, int ready, int go,
                          int result)
{
	const char *u = p->u, *up = p->up, *wk = p->wk, *m = p->m, *opts = p->opts;
	char bin[PATH_MAX], c;

	memcpy(bin, p->bin, sizeof(bin));
	if (write(procs_fd, "0", 1) != 1 || unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("cloister-test", u, "tmpfs", 0, "size=1m") < 0 || mkdir(up, 0755) < 0 ||
	    mkdir(wk, 0755) < 0 || mount("cloister-test", m, "overlay", 0, opts) < 0) {
		(void)!write(ready, "E", 1);
		_exit(1);
	}
	if (write(ready, "R", 1) != 1)
		_exit(1);
	while (read(go, &c, 1) == 1) {
		char *argv[] = {bin, NULL}, *envp[] = {NULL};
		int status;
		pid_t pid = fork();

		if (pid < 0)
			_exit(1);
		if (pid == 0) {
			execve(bin, argv, envp);
			_exit(127);
		}
		if (waitpid(pid, &status, 0) != pid)
			_exit(1);
		c = (char)(WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status));
		if (write(result, &c, 1) != 1)
			_exit(1);
	}
	_exit(0);
}

static int overlay_exec(int go, int result)
{
	unsigned char c = 'x';

	assert_int_equal(write(go, &c, 1), 1);
	assert_int_equal(read(result, &c, 1), 1);
	return c;
}

/* On overlayfs stat's st_dev is a per-layer pseudo device; the kernel executes the file from
 * the overlay's superblock. backstop_file_id gives what the program compares. */
static void test_overlay_files_are_approved_by_superblock_device(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	size_t cg = make_cgroup(f, NULL);
	uint64_t id = cgroup_id_of(f->cgroups[cg]);
	static struct overlay_paths op;
	char lower_true[PATH_MAX], procs[PATH_MAX], via_proc[2 * PATH_MAX];
	int ready[2], go[2], result[2], procs_fd, fd, status;
	char c = 0;
	struct stat st;
	dev_t dev;
	ino_t ino;
	pid_t pid;

	path_join(op.l, f->tmpdir, "l");
	path_join(op.u, f->tmpdir, "u");
	path_join(op.up, op.u, "up");
	path_join(op.wk, op.u, "wk");
	path_join(op.m, f->tmpdir, "m");
	path_join(op.bin, op.m, "true");
	assert_true(snprintf(op.opts, sizeof(op.opts), "lowerdir=%s,upperdir=%s,workdir=%s", op.l,
	                     op.up, op.wk) < (int)sizeof(op.opts));
	assert_int_equal(mkdir(op.l, 0755), 0);
	assert_int_equal(mkdir(op.u, 0755), 0);
	assert_int_equal(mkdir(op.m, 0755), 0);
	copy_file(f, "/bin/true", "l/true", lower_true);
	/* The file check alone: nobody decides on the arguments here. */
	assert_int_equal(backstop_add_sandbox_checks(f->b, id, false), 0);
	path_join(procs, f->cgroups[cg], "cgroup.procs");
	procs_fd = open(procs, O_WRONLY | O_CLOEXEC);
	assert_true(procs_fd >= 0);
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	assert_int_equal(pipe2(result, O_CLOEXEC), 0);
	/* The child joins the test cgroup: teardown's cgroup.kill reaps it if we fail. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		close(go[1]);
		close(result[0]);
		overlay_child(&op, procs_fd, ready[1], go[0], result[1]);
	}
	close(procs_fd);
	close(ready[1]);
	close(go[0]);
	close(result[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	if (c != 'R') {
		close(go[1]);
		close(result[0]);
		waitpid(pid, &status, 0);
		print_message("skipped: cannot mount an overlay here\n");
		skip();
	}

	snprintf(via_proc, sizeof(via_proc), "/proc/%d/root%s/m/true", (int)pid, f->tmpdir);
	fd = open(via_proc, O_PATH | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(backstop_file_id(fd, pid, &dev, &ino), 0);
	close(fd);
	print_message("overlay file: stat %u:%u ino %lu, superblock %u:%u ino %lu\n",
	              major(st.st_dev), minor(st.st_dev), (unsigned long)st.st_ino, major(dev),
	              minor(dev), (unsigned long)ino);
	assert_true(ino == st.st_ino);

	/* Approved by stat(): the devices differ, so the exec is still stopped (fail closed). */
	if (st.st_dev != dev) {
		assert_int_equal(backstop_allow(f->b, id, st.st_dev, st.st_ino, ver(&st)), 0);
		assert_int_equal(overlay_exec(go[1], result[0]),
		                 backstop_mode(f->b) == BACKSTOP_MODE_TP_BTF ? 128 + SIGKILL : 127);
	}
	/* Approved by backstop_file_id: runs. */
	assert_int_equal(backstop_allow(f->b, id, dev, ino, ver(&st)), 0);
	assert_int_equal(overlay_exec(go[1], result[0]), 0);

	close(go[1]);
	close(result[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_ran_ok(status);
}

static int count_events(const struct backstop_event *ev, void *userdata)
{
	(void)ev;
	(*(size_t *)userdata)++;
	return 0;
}

/* An exec storm cannot grow the ring buffer: events beyond its size are counted as dropped. */
static void test_event_storm_is_bounded_and_counted(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	size_t cg = make_cgroup(f, NULL), seen = 0;
	uint64_t id = cgroup_id_of(f->cgroups[cg]);
	char marker_bin[PATH_MAX], marker[PATH_MAX];
	const int storm = 1600; /* > 256 KiB / 192-byte records */
	uint64_t dropped;

	path_join(marker_bin, f->helpers, "marker");
	path_join(marker, f->tmpdir, "ran");
	assert_int_equal(backstop_add_sandbox(f->b, id), 0);
	for (int i = 0; i < storm; i++)
		assert_stopped(f, run_in_cgroup(f->cgroups[cg], marker_bin,
		                                (char *[]){marker_bin, marker, NULL}, NULL));
	assert_false(exists(marker));
	assert_true(backstop_consume_events(f->b, count_events, &seen) >= 0);
	dropped = backstop_events_dropped(f->b);
	print_message("%d stopped execs: %zu events delivered, %llu dropped\n", storm, seen,
	              (unsigned long long)dropped);
	assert_true(dropped > 0);
	assert_true(seen + dropped == (uint64_t)storm);
}

static void test_removing_the_sandbox_stops_checks_and_drops_approvals(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	size_t cg = make_cgroup(f, NULL);
	uint64_t id = cgroup_id_of(f->cgroups[cg]);
	char truebin[PATH_MAX], marker_bin[PATH_MAX], marker[PATH_MAX];

	copy_file(f, "/bin/true", "true", truebin);
	path_join(marker_bin, f->helpers, "marker");
	path_join(marker, f->tmpdir, "ran");
	assert_int_equal(backstop_add_sandbox(f->b, id), 0);
	allow_file(f, id, truebin);

	assert_int_equal(backstop_remove_sandbox(f->b, id), 0);
	assert_int_equal(backstop_remove_sandbox(f->b, id), -ENOENT);
	assert_ran_ok(run_in_cgroup(f->cgroups[cg], marker_bin,
	                            (char *[]){marker_bin, marker, NULL}, NULL));
	assert_true(exists(marker));

	/* Registered again, the old approval is gone. */
	assert_int_equal(backstop_add_sandbox(f->b, id), 0);
	assert_stopped(f, run_in_cgroup(f->cgroups[cg], truebin, (char *[]){truebin, NULL}, NULL));
}

static void test_full_maps_are_reported(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	const dev_t dev = makedev(8, 1);
	uint64_t id = 4242, other = 4343;
	int r = 0;

	/* Fake ids: no cgroup needed to fill the maps. */
	assert_int_equal(backstop_add_sandbox(f->b, id), 0);
	for (ino_t ino = 1; ino <= 65536 && r == 0; ino++)
		r = backstop_allow(f->b, ino % 2 ? id : other, dev, ino, &nover);
	assert_int_equal(r, 0);
	assert_int_equal(backstop_allow(f->b, id, dev, 100000, &nover), -E2BIG);
	assert_int_equal(backstop_allow(f->b, id, dev, 1, &nover), 0); /* already there: fine */
	/* Removing one sandbox frees exactly its approvals. */
	assert_int_equal(backstop_remove_sandbox(f->b, id), 0);
	for (ino_t ino = 100000; ino < 100000 + 32768; ino++)
		assert_int_equal(backstop_allow(f->b, id, dev, ino, &nover), 0);
	assert_int_equal(backstop_allow(f->b, id, dev, 200000, &nover), -E2BIG);

	for (uint64_t s = 1; s <= 64; s++)
		assert_int_equal(backstop_add_sandbox(f->b, 1000 + s), 0);
	assert_int_equal(backstop_add_sandbox(f->b, 2000), -E2BIG);
	assert_int_equal(backstop_add_sandbox(f->b, 1001), 0);
	assert_int_equal(backstop_add_sandbox(f->b, 0), -EINVAL);
}

static void test_dev_encoding_round_trips(void **state)
{
	uint32_t k = 0;

	(void)state;
	assert_int_equal(backstop_dev_to_kernel(makedev(8, 1), &k), 0);
	assert_int_equal(k, (8u << 20) | 1);
	assert_true(backstop_dev_from_kernel(k) == makedev(8, 1));
	assert_int_equal(backstop_dev_to_kernel(makedev(259, 0x12345), &k), 0);
	assert_true(backstop_dev_from_kernel(k) == makedev(259, 0x12345));
	assert_int_equal(backstop_dev_to_kernel(makedev(4096, 0), &k), -EOVERFLOW);
	assert_int_equal(backstop_dev_to_kernel(makedev(0, 1u << 20), &k), -EOVERFLOW);
}

static void test_cgroup_id_rejects_non_cgroup2_paths(void **state)
{
	uint64_t id;

	(void)state;
	assert_int_equal(backstop_cgroup_id("/tmp", &id), -EMEDIUMTYPE);
	assert_int_equal(backstop_cgroup_id("/nonexistent/cgroup", &id), -ENOENT);
}

/* The TOCTOU attack: a thread flips the exec path between an approved and an unapproved binary
 * while another execs. Only the approved inode may ever run. */
static void test_racing_path_flips_never_run_the_unapproved_binary(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	size_t cg = make_cgroup(f, NULL);
	uint64_t id = cgroup_id_of(f->cgroups[cg]);
	char truebin[PATH_MAX], race[PATH_MAX], marker_bin[PATH_MAX], marker[PATH_MAX];
	char procs[PATH_MAX], out[512] = "";
	unsigned long tries, exit0, eacces, eperm, killed, other;
	int pipefd[2], fd, status;
	ssize_t n;
	pid_t pid;

	copy_file(f, "/bin/true", "true", truebin);
	path_join(race, f->helpers, "exec_race");
	path_join(marker_bin, f->helpers, "marker");
	path_join(marker, f->tmpdir, "ran");
	/* The file check alone: the helper's execs are nobody's decisions. */
	assert_int_equal(backstop_add_sandbox_checks(f->b, id, false), 0);
	allow_file(f, id, truebin);
	allow_file(f, id, race);

	path_join(procs, f->cgroups[cg], "cgroup.procs");
	fd = open(procs, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (write(fd, "0", 1) != 1 || dup2(pipefd[1], 1) < 0)
			_exit(125);
		execl(race, race, "3", truebin, marker_bin, marker, (char *)NULL);
		_exit(127);
	}
	close(fd);
	close(pipefd[1]);
	n = read(pipefd[0], out, sizeof(out) - 1);
	close(pipefd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	out[n > 0 ? n : 0] = '\0';
	print_message("%s", out);
	assert_int_equal(sscanf(out,
	                        "exec_race: tries=%lu exit0=%lu eacces=%lu eperm=%lu killed=%lu "
	                        "other=%lu",
	                        &tries, &exit0, &eacces, &eperm, &killed, &other),
	                 6);
	assert_ran_ok(status);
	assert_false(exists(marker));
	/* The race was real: both binaries were exec'd many times. */
	assert_true(exit0 > 10);
	if (backstop_mode(f->b) == BACKSTOP_MODE_TP_BTF)
		assert_true(killed > 10);
	else
		assert_true(eperm > 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	        T(test_mode_probe_picks_lsm_only_where_it_attaches),
	        T(test_loading_walks_few_verifier_instructions),
	        T(test_unregistered_cgroup_is_never_touched),
	        T(test_approved_binary_runs_normally),
	        T(test_unapproved_binary_never_runs_an_instruction),
	        T(test_same_bytes_other_inode_is_not_approved),
	        T(test_approving_again_after_revoke_or_removal_reaches_the_kernel),
	        T(test_script_checks_its_interpreter),
	        T(test_descendant_cgroups_are_checked),
	        T(test_pid_namespace_init_is_stopped_too),
	        T(test_overlay_files_are_approved_by_superblock_device),
	        T(test_events_name_pid_cgroup_and_file),
	        T(test_arguments_other_than_expected_are_stopped),
	        T(test_an_expectation_is_spent_by_one_exec),
	        T(test_expectations_replace_and_a_full_window_drops_the_oldest),
	        T(test_file_rewritten_in_place_is_not_approved),
	        T(test_event_storm_is_bounded_and_counted),
	        T(test_removing_the_sandbox_stops_checks_and_drops_approvals),
	        T(test_full_maps_are_reported),
	        T(test_racing_path_flips_never_run_the_unapproved_binary),
	        cmocka_unit_test(test_dev_encoding_round_trips),
	        cmocka_unit_test(test_cgroup_id_rejects_non_cgroup2_paths),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
