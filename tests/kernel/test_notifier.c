/* notifier/ against the real kernel (root): a child installs the filter, hands the listener
 * over a socketpair and execs things; this process receives, reads, checks and answers. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/sched.h> /* struct clone_args */
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <grp.h>
#include <termios.h>
#include <unistd.h>

#include "notifier/fdpass.h"
#include "notifier/filter.h"
#include "notifier/notify.h"
#include "notifier/target.h"

#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif

struct sandbox {
	pid_t pid;
	struct notifier *n;
	struct notifier_filter_info info;
};

typedef int (*child_fn)(void *arg);

static char *const test_envp[] = {"CLOISTER_TEST=1", "PATH=/usr/bin:/bin", NULL};

/* Fork a child that installs the filter, sends the listener back and returns fn(arg) as its
 * exit status (unless fn execs). */
static void start_opts(struct sandbox *sb, const struct notifier_filter_opts *opts, child_fn fn,
                       void *arg)
{
	struct notifier_filter_info info;
	size_t len = 0;
	int sv[2], lfd = -1;

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	sb->pid = fork();
	assert_true(sb->pid >= 0);
	if (sb->pid == 0) {
		struct rlimit no_core = {0, 0};
		int r;

		close(sv[0]);
		setrlimit(RLIMIT_CORE, &no_core); /* SIGSYS kills must not leave core files */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		r = notifier_filter_install(opts, &info, &lfd);
		if (r < 0) {
			fprintf(stderr, "filter install: %s\n", strerror(-r));
			_exit(100);
		}
		if (fdpass_send(sv[1], lfd, &info, sizeof(info)) < 0)
			_exit(101);
		close(lfd);
		close(sv[1]);
		_exit(fn(arg));
	}
	close(sv[1]);
	assert_int_equal(fdpass_recv(sv[0], &sb->info, sizeof(sb->info), &len, &lfd), 0);
	assert_int_equal(len, sizeof(sb->info));
	close(sv[0]);
	assert_true(fcntl(lfd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(notifier_new(lfd, &sb->n), 0);
}

static void start(struct sandbox *sb, child_fn fn, void *arg)
{
	start_opts(sb, NULL, fn, arg);
}

/* Wait (bounded) for the listener to poll readable. Returns 1 readable, 0 timeout. */
static int wait_readable(struct sandbox *sb, int timeout_ms)
{
	struct pollfd p = {.fd = notifier_fd(sb->n), .events = POLLIN};
	int r;

	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	assert_true(r >= 0);
	return r > 0 && (p.revents & POLLIN);
}

static void receive(struct sandbox *sb, struct seccomp_notif *req)
{
	if (!wait_readable(sb, 10000))
		fail_msg("no notification within 10 s");
	assert_int_equal(notifier_receive(sb->n, req), 0);
}

static struct exec_target *receive_exec(struct sandbox *sb, struct seccomp_notif *req)
{
	struct cl_error err = {{0}};
	struct exec_target *t = NULL;
	int r;

	receive(sb, req);
	r = notifier_read_exec(sb->n, req, &t, &err);
	if (r < 0)
		fail_msg("notifier_read_exec: %d %s", r, err.msg);
	return t;
}

/* Reap the child; returns its wait status. Keeps the notifier. */
static int finish_keep(struct sandbox *sb)
{
	int status = 0;

	assert_int_equal(waitpid(sb->pid, &status, 0), sb->pid);
	return status;
}

/* Reap the child; returns its wait status. Frees the notifier. */
static int finish(struct sandbox *sb)
{
	int status = 0;

	assert_int_equal(waitpid(sb->pid, &status, 0), sb->pid);
	notifier_free(sb->n);
	sb->n = NULL;
	return status;
}

static void assert_exited(int status, int code)
{
	if (!WIFEXITED(status))
		fail_msg("child did not exit: status 0x%x (signal %d)", status,
		         WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	assert_int_equal(WEXITSTATUS(status), code);
}

static void assert_same_file(const struct exec_file *f, const char *host_path)
{
	struct stat st;

	assert_int_equal(stat(host_path, &st), 0);
	assert_true(f->exists);
	assert_int_equal(f->dev, st.st_dev);
	assert_int_equal(f->ino, st.st_ino);
	assert_int_equal(f->kdev, (major(st.st_dev) << 20) | minor(st.st_dev));
}

/* Every case needs root: seccomp listeners of other processes, chroot, mounts. */
#define REQUIRE_ROOT()                                                              \
	do {                                                                        \
		if (geteuid() != 0) {                                               \
			print_message("# skipped: needs root (seccomp, chroot)\n"); \
			skip();                                                     \
		}                                                                   \
	} while (0)

static int guard(void **state)
{
	alarm(60); /* a hang is a failure, not a stuck CI job */
	return 0;
}

static int unguard(void **state)
{
	alarm(0);
	return 0;
}

/* ---- children ------------------------------------------------------------------------------ */

static int child_exec_true_with_args(void *arg)
{
	char *argv[] = {"true", "a b", "", "--flag=x", NULL};

	if (chdir("/tmp") < 0)
		return 90;
	execve("/bin/true", argv, test_envp);
	return errno;
}

static int child_exec_path(void *arg)
{
	char *argv[] = {(char *)arg, NULL};

	execve((const char *)arg, argv, test_envp);
	return errno;
}

static int child_exec_relative(void *arg)
{
	char *argv[] = {"true", NULL};

	if (chdir("/usr") < 0)
		return 90;
	execve("bin/../bin/true", argv, test_envp);
	return errno;
}

static int child_execveat_dirfd(void *arg)
{
	char *argv[] = {"true", NULL};
	int fd = open("/usr/bin", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return 90;
	syscall(SYS_execveat, fd, "true", argv, test_envp, 0);
	return errno;
}

static int copy_true_into(int fd)
{
	struct stat st;
	int src = open("/bin/true", O_RDONLY | O_CLOEXEC);

	if (src < 0 || fstat(src, &st) < 0)
		return -1;
	if (sendfile(fd, src, NULL, (size_t)st.st_size) != st.st_size)
		return -1;
	close(src);
	return 0;
}

static int child_exec_memfd(void *arg)
{
	char *argv[] = {"payload", NULL};
	int fd = memfd_create("payload", 0);

	if (fd < 0 || copy_true_into(fd) < 0)
		return 90;
	syscall(SYS_execveat, fd, "", argv, test_envp, AT_EMPTY_PATH);
	return errno;
}

static int child_fexecve(void *arg)
{
	char *argv[] = {"true", NULL};
	int fd = open("/bin/true", O_RDONLY);

	if (fd < 0)
		return 90;
	fexecve(fd, argv, test_envp);
	return errno;
}

static int child_execveat_nofollow(void *arg)
{
	char *argv[] = {"sh", NULL};

	syscall(SYS_execveat, AT_FDCWD, "/bin/sh", argv, test_envp, AT_SYMLINK_NOFOLLOW);
	return errno;
}

/* ---- tests --------------------------------------------------------------------------------- */

static void test_execve_reports_path_argv_cwd_and_file(void **state)
{
	struct sandbox sb;
	struct seccomp_notif req;
	struct exec_target *t;
	REQUIRE_ROOT();

	start(&sb, child_exec_true_with_args, NULL);
	t = receive_exec(&sb, &req);
	assert_int_equal(t->pid, sb.pid);
	assert_false(t->execveat);
	assert_string_equal(t->path, "/bin/true");
	assert_string_equal(t->abs_path, "/bin/true");
	assert_string_equal(t->cwd, "/tmp");
	assert_int_equal(t->argc, 4);
	assert_string_equal(t->argv[0], "true");
	assert_string_equal(t->argv[1], "a b");
	assert_string_equal(t->argv[2], "");
	assert_string_equal(t->argv[3], "--flag=x");
	assert_null(t->argv[4]);
	assert_int_equal(t->argv_bytes, 5 + 4 + 1 + 9);
	assert_false(t->argv_truncated);
	assert_false(t->argv_fault);
	assert_int_equal(t->uid, getuid());
	assert_int_equal(t->gid, getgid());
	assert_true(t->file.regular);
	assert_true(t->file.executable);
	assert_same_file(&t->file, "/bin/true");
	assert_non_null(t->file.real_path);
	assert_false(t->script);
	assert_int_equal(notifier_continue(sb.n, req.id), 0);
	exec_target_free(t);
	assert_exited(finish(&sb), 0);
}

static void test_relative_path_is_resolved_against_cwd(void **state)
{
	struct sandbox sb;
	struct seccomp_notif req;
	struct exec_target *t;
	REQUIRE_ROOT();

	start(&sb, child_exec_relative, NULL);
	t = receive_exec(&sb, &req);
	assert_string_equal(t->path, "bin/../bin/true");
	assert_string_equal(t->cwd, "/usr");
	assert_string_equal(t->abs_path, "/usr/bin/true");
	assert_same_file(&t->file, "/usr/bin/true");
	assert_int_equal(notifier_continue(sb.n, req.id), 0);
	exec_target_free(t);
	assert_exited(finish(&sb), 0);
}

static void test_execveat_resolves_against_dirfd(void **state)
{
	struct sandbox sb;
	struct seccomp_notif req;
	struct exec_target *t;
	REQUIRE_ROOT();

	start(&sb, child_execveat_dirfd, NULL);
	t = receive_exec(&sb, &req);
	assert_true(t->execveat);
	assert_true(t->dirfd >= 0);
	assert_false(t->empty_path);
	assert_string_equal(t->path, "true");
	assert_string_equal(t->abs_path, "/usr/bin/true");
	assert_same_file(&t->file, "/usr/bin/true");
	assert_int_equal(notifier_continue(sb.n, req.id), 0);
	exec_target_free(t);
	assert_exited(finish(&sb), 0);
}

static void test_execveat_empty_path_on_memfd(void **state)
{
	struct sandbox sb;
	struct seccomp_notif req;
	struct exec_target *t;
	REQUIRE_ROOT();

	start(&sb, child_exec_memfd, NULL);
	t = receive_exec(&sb, &req);
	assert_true(t->execveat);
	assert_true(t->empty_path);
	assert_string_equal(t->path, "");
	assert_string_equal(t->abs_path, "/memfd:payload (deleted)");
	assert_true(t->file.exists);
	assert_true(t->file.regular);
	assert_true(t->file.executable);
	assert_string_equal(t->argv[0], "payload");
	assert_int_equal(notifier_continue(sb.n, req.id), 0);
	exec_target_free(t);
	assert_exited(finish(&sb), 0);
}

static void test_fexecve_reports_the_open_file(void **state)
{
	struct sandbox sb;
	struct seccomp_notif req;
	struct exec_target *t;
	REQUIRE_ROOT();

	start(&sb, child_fexecve, NULL);
	t = receive_exec(&sb, &req);
	/* glibc uses execveat(fd, "", AT_EMPTY_PATH), or /proc/self/fd/N on old kernels. */
	if (t->execveat)
		assert_true(t->empty_path);
	else
		assert_memory_equal(t->path, "/proc/self/fd/", 14);
	assert_same_file(&t->file, "/bin/true");
	assert_true(t->file.executable);
	assert_int_equal(notifier_continue(sb.n, req.id), 0);
	exec_target_free(t);
	assert_exited(finish(&sb), 0);
}

static void test_proc_self_fd_path_is_the_targets_fd(void **state)
{
	struct sandbox sb;
	struct seccomp_notif req;
	struct exec_target *t;
	char path[64];
	int fd = open("/bin/true", O_RDONLY); /* inherited by the child, same number */
	REQUIRE_ROOT();

	assert_true(fd >= 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	start(&sb, child_exec_path, path);
	close(fd);
	t = receive_exec(&sb, &req);
	assert_string_equal(t->path, path);
	assert_same_file(&t->file, "/bin/true");
	assert_int_equal(notifier_continue(sb.n, req.id), 0);
	exec_target_free(t);
	assert_exited(finish(&sb), 0);
}

static char tmpdir[PATH_MAX];

static int make_tmpdir(void **state)
{
	guard(state);
	strcpy(tmpdir, "/tmp/cloister-notifier-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
	char cmd[PATH_MAX + 16];

	unguard(state);
	/* Only our own mkdtemp directory. */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void test_script_reports_interpreter(void **state)
{
	struct sandbox sb;
	struct seccomp_notif req;
	struct exec_target *t;
	char script[PATH_MAX + 16];
	REQUIRE_ROOT();

	snprintf(script, sizeof(script), "%s/script.sh", tmpdir);
	write_file(script, "#!/bin/sh -e\nexit 7\n", 0755);
	start(&sb, child_exec_path, script);
	t = receive_exec(&sb, &req);
	assert_string_equal(t->abs_path, script);
	assert_true(t->file.executable);
	assert_true(t->script);
	assert_string_equal(t->interp, "/bin/sh");
	assert_string_equal(t->interp_arg, "-e");
	assert_same_file(&t->interp_file, "/bin/sh");
	assert_true(t->interp_file.executable);
	assert_int_equal(notifier_continue(sb.n, req.id), 0);
	exec_target_free(t);
	assert_exited(finish(&sb), 7);
}

/* The reader of a process forked after notifier_new: the notifier's /proc/self/fd directory
 * shows its creator's fd table, so the fork must look its own fds up (the real path and the
 * "#!" line are read through an fd of the reader). */
static int read_script_exec(struct sandbox *sb, const char *script, const char *real)
{
	struct pollfd p = {.fd = notifier_fd(sb->n), .events = POLLIN};
	struct cl_error err = {{0}};
	struct seccomp_notif req;
	struct exec_target *t = NULL;
	int code = 0;

	/* Move our next fd numbers off any the parent has open. */
	for (int i = 0; i < 8; i++)
		if (open("/dev/null", O_RDONLY | O_CLOEXEC) < 0)
			return 90;
	if (poll(&p, 1, 10000) != 1 || notifier_receive(sb->n, &req) < 0)
		return 91;
	if (notifier_read_exec(sb->n, &req, &t, &err) < 0)
		code = 92;
	else if (!t->file.real_path || strcmp(t->file.real_path, real) != 0)
		code = 93;
	else if (!t->script || strcmp(t->interp, "/bin/sh") != 0 || !t->interp_file.exists)
		code = 94;
	exec_target_free(t);
	if (notifier_continue(sb->n, req.id) < 0)
		code = code ? code : 95;
	return code;
}

static void test_reads_in_a_process_forked_after_notifier_new(void **state)
{
	struct sandbox sb;
	char script[PATH_MAX + 16], real[PATH_MAX];
	int status = 0;
	pid_t reader;
	REQUIRE_ROOT();

	snprintf(script, sizeof(script), "%s/script.sh", tmpdir);
	write_file(script, "#!/bin/sh -e\nexit 7\n", 0755);
	assert_non_null(realpath(script, real));
	start(&sb, child_exec_path, script);
	reader = fork();
	assert_true(reader >= 0);
	if (reader == 0)
		_exit(read_script_exec(&sb, script, real));
	assert_int_equal(waitpid(reader, &status, 0), reader);
	assert_exited(status, 0);
	assert_exited(finish(&sb), 7);
}

static void test_non_executable_file_is_reported_not_decided(void **state)
{
	struct sandbox sb;
	struct seccomp_notif req;
	struct exec_target *t;
	char file[PATH_MAX + 16];
	REQUIRE_ROOT();

	snprintf(file, sizeof(file), "%s/data.txt", tmpdir);
	write_file(file, "just data\n", 0644);
	start(&sb, child_exec_path, file);
	t = receive_exec(&sb, &req);
	assert_true(t->file.exists);
	assert_true(t->file.regular);
	assert_false(t->file.executable);
	assert_false(t->script);
	assert_int_equal(notifier_continue(sb.n, req.id), 0);
	exec_target_free(t);
	assert_exited(finish(&sb), EACCES);
}

struct nobody_args {
	const char *restricted;
	bool dumpable;
};

static int child_as_nobody(void *arg)
{
	const struct nobody_args *a = arg;
	char *argv[] = {"x", NULL};
	int e;

	if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
	    setresuid(65534, 65534, 65534) < 0)
		return 90;
	/* Changing ids made us non-dumpable (/proc/PID now belongs to root). */
	if (a->dumpable && prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
		return 91;
	execve(a->restricted, argv, test_envp);
	e = errno;
	if (e != EACCES)
		return 92;
	execve("/bin/true", argv, test_envp);
	return errno;
}

static void check_nobody(bool dumpable)
{
	struct nobody_args a = {.dumpable = dumpable};
	struct sandbox sb;
	struct seccomp_notif req;
	struct exec_target *t;
	char file[PATH_MAX + 16];

	snprintf(file, sizeof(file), "%s/root-only", tmpdir);
	write_file(file, "#!/bin/sh\nexit 0\n", 0750);
	a.restricted = file;
	start(&sb, child_as_nobody, &a);
	/* Owner root, group root, no x for others: not for nobody. The fs ids are needed. */
	t = receive_exec(&sb, &req);
	assert_true(t->file.exists);
	assert_true(t->file.regular);
	assert_false(t->file.executable);
	assert_true(t->ids_exact);
	assert_int_equal(t->uid, 65534);
	assert_int_equal(t->euid, 65534);
	assert_int_equal(t->gid, 65534);
	assert_int_equal(notifier_continue(sb.n, req.id), 0);
	exec_target_free(t);
	/* 0755: executable for anyone, so only the effective ids are needed, and /proc/PID's
	 * owner gives them, dumpable or not. */
	t = receive_exec(&sb, &req);
	assert_true(t->file.executable);
	assert_false(t->ids_exact);
	assert_int_equal(t->uid, 65534);
	assert_int_equal(t->euid, 65534);
	assert_int_equal(t->egid, 65534);
	assert_int_equal(notifier_continue(sb.n, req.id), 0);
	exec_target_free(t);
	assert_exited(finish(&sb), 0);
}

static void test_non_root_target_ids_and_exec_permission(void **state)
{
	REQUIRE_ROOT();
	assert_int_equal(chmod(tmpdir, 0755), 0);
	check_nobody(true);
	check_nobody(false);
}

static void test_missing_path_is_reported_and_continue_gives_enoent(void **state)
{
	struct sandbox sb;
	struct seccomp_notif req;
	struct exec_target *t;
	REQUIRE_ROOT();

	start(&sb, child_exec_path, "/nonexistent/cloister/tool");
	t = receive_exec(&sb, &req);
	assert_false(t->file.exists);
	assert_int_equal(t->file.error, ENOENT);
	assert_string_equal(t->abs_path, "/nonexistent/cloister/tool");
	assert_int_equal(t->uid, (uid_t)-1); /* status and cwd are not read for a PATH probe */
	assert_null(t->cwd);
	assert_int_equal(notifier_continue(sb.n, req.id), 0);
	exec_target_free(t);
	assert_exited(finish(&sb), ENOENT);
}

static void test_nofollow_on_a_symlink_is_eloop(void **state)
{
	struct sandbox sb;
	struct seccomp_notif req;
	struct exec_target *t;
	struct stat st;
	REQUIRE_ROOT();

	if (lstat("/bin/sh", &st) < 0 || !S_ISLNK(st.st_mode)) {
		print_message("# skipped: /bin/sh is not a symlink here (Debian's is)\n");
		skip();
	}
	start(&sb, child_execveat_nofollow, NULL);
	t = receive_exec(&sb, &req);
	assert_true(t->nofollow);
	/* The kernel's answer, so that the caller can give it itself. */
	assert_false(t->file.exists);
	assert_int_equal(t->file.error, ELOOP);
	assert_int_equal(notifier_continue(sb.n, req.id), 0);
	exec_target_free(t);
	assert_exited(finish(&sb), ELOOP);
}

static void test_deny_gives_eacces_in_the_child(void **state)
{
	struct sandbox sb;
	struct seccomp_notif req;
	struct exec_target *t;
	REQUIRE_ROOT();

	start(&sb, child_exec_path, "/bin/true");
	t = receive_exec(&sb, &req);
	assert_int_equal(notifier_deny(sb.n, req.id, EACCES), 0);
	exec_target_free(t);
	assert_exited(finish(&sb), EACCES);
}

/* Reads pass the filter untouched; each kind of write open is notified, once, and answered
 * with an fd of ours that the child then writes through. */
static int child_opens(void *arg)
{
	const char *dir = arg;
	char path[PATH_MAX + 16];
	int fd;

	/* Not notified: if they were, nobody answers before the writes and the parent fails. */
	fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 90;
	close(fd);
	fd = open("/etc/hostname", O_RDONLY | O_APPEND);
	if (fd < 0)
		return 91;
	close(fd);
	/* Notified: the parent answers with its own fd of OUT. */
	snprintf(path, sizeof(path), "%s/asked", dir);
	fd = openat(AT_FDCWD, path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return 93;
	if (!(fcntl(fd, F_GETFD) & FD_CLOEXEC))
		return 94;
	if (write(fd, "via-addfd", 9) != 9)
		return 95;
	close(fd);
	fd = (int)syscall(SYS_creat, path, 0600);
	if (fd >= 0 || errno != EROFS)
		return 96;
	fd = (int)syscall(SYS_openat2, AT_FDCWD, path, NULL, 0);
	if (fd >= 0 || errno != ENOSYS)
		return 97;
	return 0;
}

static void test_write_opens_are_notified_and_answered_with_our_fd(void **state)
{
	struct notifier_filter_opts opts = {.notify_open_write = true};
	struct sandbox sb;
	struct seccomp_notif req;
	char path[PATH_MAX + 16], buf[32] = "";
	int fd, r;
	REQUIRE_ROOT();

	start_opts(&sb, &opts, child_opens, tmpdir);
	receive(&sb, &req);
	assert_int_equal(req.data.nr, SYS_openat);
	assert_int_equal(req.data.args[2] & (O_WRONLY | O_CREAT), O_WRONLY | O_CREAT);
	/* The file the child asked for is not created by the child: ours is handed over. */
	snprintf(path, sizeof(path), "%s/ours", tmpdir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	r = notifier_answer_fd(sb.n, req.id, fd, true);
	assert_true(r >= 0);
	receive(&sb, &req);
	assert_int_equal(req.data.nr, SYS_creat);
	assert_int_equal(notifier_deny(sb.n, req.id, EROFS), 0);
	assert_exited(finish(&sb), 0);
	assert_int_equal(pread(fd, buf, sizeof(buf) - 1, 0), 9);
	assert_string_equal(buf, "via-addfd");
	close(fd);
	snprintf(path, sizeof(path), "%s/asked", tmpdir);
	assert_int_equal(access(path, F_OK), -1); /* the child's own name was never opened */
}

/* Telling only (fs.ask: off): openat2 is let through, unseen — a read with it works. */
static int child_openat2(void *arg)
{
	struct {
		uint64_t flags, mode, resolve;
	} how = {O_RDONLY | O_CLOEXEC, 0, 0};
	int fd;

	(void)arg;
	fd = (int)syscall(SYS_openat2, AT_FDCWD, "/etc/hostname", &how, sizeof(how));
	if (fd < 0)
		return errno == ENOSYS ? 98 : 99;
	close(fd);
	return 0;
}

static void test_openat2_is_allowed_when_only_telling(void **state)
{
	struct notifier_filter_opts opts = {.notify_open_write = true,
	                                    .open_write_tell_only = true};
	struct sandbox sb;
	REQUIRE_ROOT();

	start_opts(&sb, &opts, child_openat2, NULL);
	assert_exited(finish(&sb), 0);
}

static int child_huge_argv(void *arg)
{
	static char big[4000];
	char **argv = calloc(5001, sizeof(char *));
	int e1, e2;

	for (int i = 0; i < 5000; i++)
		argv[i] = "x";
	execve("/bin/true", argv, test_envp);
	e1 = errno;
	memset(big, 'b', sizeof(big) - 1);
	for (int i = 0; i < 300; i++)
		argv[i] = big;
	argv[300] = NULL;
	execve("/bin/true", argv, test_envp);
	e2 = errno;
	return e1 == EACCES && e2 == EACCES ? 0 : 1;
}

static void test_huge_argv_is_truncated_not_failed(void **state)
{
	struct sandbox sb;
	struct seccomp_notif req;
	struct exec_target *t;
	REQUIRE_ROOT();

	start(&sb, child_huge_argv, NULL);
	t = receive_exec(&sb, &req);
	assert_true(t->argv_truncated);
	assert_int_equal(t->argc, EXEC_MAX_ARGS);
	assert_true(t->file.exists);
	assert_int_equal(notifier_deny(sb.n, req.id, EACCES), 0);
	exec_target_free(t);

	t = receive_exec(&sb, &req);
	assert_true(t->argv_truncated);
	assert_true(t->argc < 300);
	assert_true(t->argv_bytes <= EXEC_MAX_ARGV_BYTES);
	assert_int_equal(strlen(t->argv[0]), 3999);
	assert_int_equal(notifier_deny(sb.n, req.id, EACCES), 0);
	exec_target_free(t);
	assert_exited(finish(&sb), 0);
}

static void test_target_dying_while_pending_is_reported_not_hung(void **state)
{
	struct sandbox sb;
	struct seccomp_notif req;
	struct exec_target *t = NULL;
	struct cl_error err = {{0}};
	int status;
	REQUIRE_ROOT();

	start(&sb, child_exec_path, "/bin/true");
	receive(&sb, &req);
	assert_int_equal(notifier_id_valid(sb.n, req.id), 1);
	assert_int_equal(kill(sb.pid, SIGKILL), 0);
	assert_int_equal(waitpid(sb.pid, &status, 0), sb.pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(notifier_id_valid(sb.n, req.id), 0);
	assert_int_equal(notifier_read_exec(sb.n, &req, &t, &err), -ENOENT);
	assert_null(t);
	assert_int_equal(notifier_continue(sb.n, req.id), -ENOENT);
	assert_int_equal(notifier_deny(sb.n, req.id, EACCES), -ENOENT);
	notifier_free(sb.n);
}

static void test_target_dying_between_poll_and_receive_gives_enoent(void **state)
{
	struct sandbox sb;
	struct seccomp_notif req;
	int status;
	REQUIRE_ROOT();

	start(&sb, child_exec_path, "/bin/true");
	assert_true(wait_readable(&sb, 10000));
	assert_int_equal(kill(sb.pid, SIGKILL), 0);
	assert_int_equal(waitpid(sb.pid, &status, 0), sb.pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(notifier_receive(sb.n, &req), -ENOENT);
	notifier_free(sb.n);
}

static int child_forbidden_syscalls(void *arg)
{
	unsigned char params[120] = {0}; /* struct io_uring_params */
	int bad = 0, fd;

	errno = 0;
	if (syscall(__NR_io_uring_setup, 1, params) != -1 || errno != ENOSYS)
		bad |= 1;
	if (syscall(__NR_io_uring_enter, 0, 1, 0, 0, NULL, 0) != -1 || errno != ENOSYS)
		bad |= 2;
	if (syscall(__NR_io_uring_register, 0, 0, NULL, 0) != -1 || errno != ENOSYS)
		bad |= 4;
	if (syscall(__NR_userfaultfd, O_CLOEXEC) != -1 || errno != ENOSYS)
		bad |= 8;
	fd = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	if (fd >= 0 && (ioctl(fd, _IO(0xAA, 0x00), O_CLOEXEC) != -1 || errno != ENOSYS))
		bad |= 16;
	/* A nested listener would take the agent's execs from us. */
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, NULL) !=
	            -1 ||
	    errno != EPERM)
		bad |= 32;
	/* …but a plain nested filter is fine (the probe: EFAULT, not EPERM). */
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, NULL) != -1 || errno != EFAULT)
		bad |= 64;
	return bad;
}

static int child_nested_namespaces(void *arg)
{
	struct clone_args ca = {.exit_signal = SIGCHLD};

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
		return 1;
	if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return 2;
	if (syscall(SYS_clone3, &ca, sizeof(ca)) != -1 || errno != ENOSYS)
		return 3;
	return 0;
}

static void test_io_uring_userfaultfd_and_nested_listeners_are_refused(void **state)
{
	struct sandbox sb;
	REQUIRE_ROOT();

	start(&sb, child_forbidden_syscalls, NULL);
	assert_exited(finish(&sb), 0);
}

/* Bits of a pseudo-terminal's input the child can read back (non-blocking), or -1. */
static ssize_t pending_input(int slave, char *buf, size_t size)
{
	struct termios t;

	if (tcgetattr(slave, &t) < 0)
		return -1;
	t.c_lflag &= ~(tcflag_t)ICANON; /* what was pushed, even without a newline */
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 0;
	if (tcsetattr(slave, TCSANOW, &t) < 0)
		return -1;
	return read(slave, buf, size);
}

static int child_terminal_injection(void *arg)
{
	char c = 'x', buf[16];
	int master, slave, bad = 0;
	unsigned long sti_high = (1UL << 32) | TIOCSTI, linux_high = (1UL << 32) | TIOCLINUX;
	char sel[2] = {2, 0}; /* TIOCL_PASTESEL */

	master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0)
		return 100;
	slave = open(ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0)
		return 101;
	errno = 0;
	if (ioctl(slave, TIOCSTI, &c) != -1 || errno != EPERM)
		bad |= 1;
	/* The kernel reads the request as 32 bits: high bits must not slip past the rule. */
	if (syscall(SYS_ioctl, slave, sti_high, &c) != -1 || errno != EPERM)
		bad |= 2;
	if (ioctl(slave, TIOCLINUX, sel) != -1 || errno != EPERM)
		bad |= 4;
	if (syscall(SYS_ioctl, slave, linux_high, sel) != -1 || errno != EPERM)
		bad |= 8;
	if (pending_input(slave, buf, sizeof(buf)) > 0)
		bad |= 16; /* something reached the terminal's input anyway */
	/* Other terminal ioctls still work. */
	struct winsize ws;
	if (ioctl(slave, TIOCGWINSZ, &ws) < 0)
		bad |= 32;
	/* The userfaultfd rule compares the same way. */
	int uffd = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	if (uffd >= 0 &&
	    (syscall(SYS_ioctl, uffd, (1UL << 32) | _IO(0xAA, 0x00), O_CLOEXEC) != -1 ||
	     errno != ENOSYS))
		bad |= 64;
	return bad;
}

/* Without the filter the same push works here (dev.tty.legacy_tiocsti = 1, root): the test
 * above would see the difference. */
static bool tiocsti_works_unfiltered(void)
{
	char c = 'q', buf[4];
	int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC), slave;
	bool works;

	if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0)
		return false;
	slave = open(ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
	works = slave >= 0 && ioctl(slave, TIOCSTI, &c) == 0 &&
	        pending_input(slave, buf, sizeof(buf)) == 1 && buf[0] == 'q';
	if (slave >= 0)
		close(slave);
	close(master);
	return works;
}

static void test_terminal_input_injection_is_refused(void **state)
{
	struct sandbox sb;
	REQUIRE_ROOT();

	if (!tiocsti_works_unfiltered())
		print_message("note: TIOCSTI is refused here even without our filter "
		              "(dev.tty.legacy_tiocsti = 0)\n");
	start(&sb, child_terminal_injection, NULL);
	assert_exited(finish(&sb), 0);
}

/* The re-mapping calls fail with EPERM, clone3 with ENOSYS, plain fork and thread-like clones
 * work. Bit by bit what went wrong. */
static int child_remap_syscalls(void *arg)
{
	struct clone_args ca = {.exit_signal = SIGCHLD};
	int bad = 0, fd;
	pid_t pid;

	errno = 0;
	if (unshare(CLONE_NEWUSER) != -1 || errno != EPERM)
		bad |= 1;
	if (unshare(CLONE_NEWNS) != -1 || errno != EPERM)
		bad |= 2;
	if (syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, 0) != -1 ||
	    errno != EPERM)
		bad |= 4;
	if (syscall(SYS_clone3, &ca, sizeof(ca)) != -1 || errno != ENOSYS)
		bad |= 8;
	if (mount("none", "/", NULL, MS_REMOUNT | MS_BIND, NULL) != -1 || errno != EPERM)
		bad |= 16;
	if (chroot("/") != -1 || errno != EPERM)
		bad |= 32;
	fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, 0) != -1 || errno != EPERM)
		bad |= 64;
	if (socket(AF_PACKET, SOCK_RAW, 0) != -1 || errno != EPERM)
		bad |= 128;
	if (syscall(SYS_fsopen, "tmpfs", 0) != -1 || errno != EPERM)
		bad |= 256;
	/* Unaffected: fork (clone without namespace flags) and unshare of what is no namespace. */
	pid = fork();
	if (pid == 0)
		_exit(0);
	if (pid < 0 || waitpid(pid, NULL, 0) != pid)
		bad |= 512;
	if (unshare(CLONE_FILES) != 0)
		bad |= 1024;
	return bad;
}

/* Only unix, inet, inet6 and netlink sockets: AF_VSOCK (open outside on this VM), AF_ALG,
 * AF_XDP, a negative family and socketpair in another family fail with EAFNOSUPPORT. */
static int child_socket_families(void *arg)
{
	static const int refused[] = {AF_VSOCK,        AF_ALG, AF_BLUETOOTH, AF_TIPC,
	                              44 /* AF_XDP */, AF_MAX, 1000,         -1};
	int bad = 0, fd, sv[2];

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		for (int type = SOCK_STREAM; type <= SOCK_SEQPACKET; type++) {
			errno = 0;
			fd = socket(refused[i], type | SOCK_CLOEXEC, 0);
			if (fd >= 0 || errno != EAFNOSUPPORT)
				bad |= 1;
			if (fd >= 0)
				close(fd);
		}
	if (socketpair(AF_VSOCK, SOCK_STREAM, 0, sv) != -1 || errno != EAFNOSUPPORT)
		bad |= 2;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		bad |= 4;
	static const int allowed[][2] = {
	        {AF_UNIX, SOCK_STREAM}, {AF_INET, SOCK_DGRAM}, {AF_NETLINK, SOCK_DGRAM}};
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
		fd = socket(allowed[i][0], allowed[i][1] | SOCK_CLOEXEC, 0);
		if (fd < 0)
			bad |= 8;
		else
			close(fd);
	}
	return bad;
}

static void test_socket_families_beyond_the_allow_list_are_refused(void **state)
{
	struct sandbox sb;

	start(&sb, child_socket_families, NULL);
	assert_exited(finish(&sb), 0);
}

static void test_namespaces_and_mounts_are_refused_unless_nested_is_allowed(void **state)
{
	struct notifier_filter_opts nested = {.allow_nested_sandbox = true};
	struct sandbox sb;
	REQUIRE_ROOT();

	start(&sb, child_remap_syscalls, NULL);
	assert_exited(finish(&sb), 0);
	/* With the option: a user and mount namespace of its own (clone3 stays ENOSYS). */
	start_opts(&sb, &nested, child_nested_namespaces, NULL);
	assert_exited(finish(&sb), 0);
}

static int child_int80(void *arg)
{
	long ret = 20; /* i386 getpid */

	__asm__ volatile("int $0x80" : "+a"(ret) : : "memory");
	return 0; /* must not get here */
}

static int child_x32(void *arg)
{
	syscall(0x40000000 | 39); /* x32 getpid */
	return 0;
}

static void test_foreign_syscall_abi_kills_the_process(void **state)
{
	struct sandbox sb;
	int status;
	REQUIRE_ROOT();

	start(&sb, child_int80, NULL);
	status = finish(&sb);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGSYS);

	start(&sb, child_x32, NULL);
	status = finish(&sb);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGSYS);
}

static int child_exec_after_go(void *arg)
{
	int *pipefd = arg;
	char c;

	if (read(pipefd[0], &c, 1) != 1)
		return 90;
	return child_exec_path("/bin/true");
}

static void test_closed_listener_fails_exec_with_enosys(void **state)
{
	struct sandbox sb;
	int pipefd[2];
	REQUIRE_ROOT();

	/* Closed before the exec. */
	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	start(&sb, child_exec_after_go, pipefd);
	close(pipefd[0]);
	notifier_free(sb.n);
	sb.n = NULL;
	assert_int_equal(write(pipefd[1], "g", 1), 1);
	close(pipefd[1]);
	assert_exited(finish(&sb), ENOSYS);

	/* Closed while the exec is pending. */
	start(&sb, child_exec_path, "/bin/true");
	assert_true(wait_readable(&sb, 10000));
	notifier_free(sb.n);
	sb.n = NULL;
	assert_exited(finish(&sb), ENOSYS);
}

static int kernel_at_least(int maj, int min)
{
	struct utsname u;
	int a = 0, b = 0;

	if (uname(&u) < 0 || sscanf(u.release, "%d.%d", &a, &b) != 2)
		return -1;
	return a > maj || (a == maj && b >= min);
}

static void test_probes_report_what_the_kernel_has(void **state)
{
	struct sandbox sb;
	int killable = kernel_at_least(5, 19), sync = kernel_at_least(6, 6);
	REQUIRE_ROOT();

	start(&sb, child_exec_path, "/bin/true");
	print_message("# WAIT_KILLABLE_RECV %s, SYNC_WAKE_UP %s, flags 0x%lx\n",
	              sb.info.wait_killable_recv ? "active" : "absent",
	              notifier_sync_wake_up(sb.n) ? "active" : "absent", sb.info.flags);
	assert_true(sb.info.flags & SECCOMP_FILTER_FLAG_NEW_LISTENER);
	assert_int_equal(sb.info.wait_killable_recv, killable == 1);
	assert_int_equal(!!(sb.info.flags & SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV), killable == 1);
	assert_int_equal(notifier_sync_wake_up(sb.n), sync == 1);
	assert_false(sb.info.no_new_privs); /* root has CAP_SYS_ADMIN */
	assert_int_equal(notifier_filter_flags_supported(SECCOMP_FILTER_FLAG_NEW_LISTENER |
	                                                 SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV),
	                 killable == 1);
	assert_int_equal(notifier_filter_flags_supported(1UL << 30), 0);
	/* Turning SYNC_WAKE_UP off and on again works where it exists. */
	if (sync == 1) {
		assert_int_equal(notifier_set_sync_wake_up(sb.n, false), 0);
		assert_false(notifier_sync_wake_up(sb.n));
		assert_int_equal(notifier_set_sync_wake_up(sb.n, true), 0);
	}
	{
		struct seccomp_notif req;

		receive(&sb, &req);
		assert_int_equal(notifier_continue(sb.n, req.id), 0);
	}
	assert_exited(finish(&sb), 0);
}

static void on_winch(int sig)
{
}

static int child_exec_with_signal_handler(void *arg)
{
	struct sigaction sa = {.sa_handler = on_winch};

	sigaction(SIGWINCH, &sa, NULL);
	return child_exec_path("/bin/true");
}

/* A signal to a process whose exec waits for an answer: with WAIT_KILLABLE_RECV the pending
 * notification survives it (a pending ask is not cancelled by SIGCHLD or SIGWINCH); without it
 * the wait is interrupted and the exec fails with EINTR (the handler has no SA_RESTART). */
static void test_signal_to_a_pending_exec(void **state)
{
	struct notifier_filter_opts plain = {.no_wait_killable = true};
	struct sandbox sb;
	struct seccomp_notif req;
	int status;
	REQUIRE_ROOT();

	start(&sb, child_exec_with_signal_handler, NULL);
	if (!sb.info.wait_killable_recv) {
		print_message("# WAIT_KILLABLE_RECV absent on this kernel\n");
		kill(sb.pid, SIGKILL);
		finish(&sb);
		skip();
	}
	receive(&sb, &req);
	assert_int_equal(kill(sb.pid, SIGWINCH), 0);
	assert_false(wait_readable(&sb, 200)); /* no restarted notification */
	assert_int_equal(notifier_id_valid(sb.n, req.id), 1);
	assert_int_equal(notifier_continue(sb.n, req.id), 0);
	assert_exited(finish(&sb), 0);

	start_opts(&sb, &plain, child_exec_with_signal_handler, NULL);
	assert_false(sb.info.wait_killable_recv);
	receive(&sb, &req);
	assert_int_equal(kill(sb.pid, SIGWINCH), 0);
	status = finish_keep(&sb);
	assert_exited(status, EINTR);
	assert_int_equal(notifier_id_valid(sb.n, req.id), 0);
	assert_int_equal(notifier_continue(sb.n, req.id), -ENOENT);
	notifier_free(sb.n);
}

static void test_filter_without_cap_sys_admin_sets_no_new_privs(void **state)
{
	pid_t pid;
	int status;
	REQUIRE_ROOT();

	/* In a child that dropped CAP_SYS_ADMIN from its sets, install and report. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct notifier_filter_info info;
		int lfd;

		if (prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0) < 0)
			_exit(90);
		{
			struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
			struct __user_cap_data_struct data[2] = {{0}};

			if (syscall(SYS_capget, &hdr, data) < 0)
				_exit(91);
			data[0].effective &= ~(1U << CAP_SYS_ADMIN);
			data[0].permitted &= ~(1U << CAP_SYS_ADMIN);
			if (syscall(SYS_capset, &hdr, data) < 0)
				_exit(92);
		}
		if (notifier_filter_install(NULL, &info, &lfd) < 0)
			_exit(93);
		_exit(info.no_new_privs && prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1 ? 0 : 94);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_exited(status, 0);
}

static int child_connect(void *arg)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX, .sun_path = "\0cloister-test-none"};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return 90;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return 91;
	return errno;
}

static void test_connect_is_notified_only_when_asked(void **state)
{
	struct notifier_filter_opts opts = {.notify_connect = true};
	struct sandbox sb;
	struct seccomp_notif req;
	struct exec_target *t = NULL;
	struct cl_error err = {{0}};
	REQUIRE_ROOT();

	start_opts(&sb, &opts, child_connect, NULL);
	receive(&sb, &req);
	assert_int_equal(req.data.nr, __NR_connect);
	/* Not an exec: read_exec refuses it and the caller still answers. */
	assert_int_equal(notifier_read_exec(sb.n, &req, &t, &err), -EINVAL);
	assert_int_equal(notifier_continue(sb.n, req.id), 0);
	assert_exited(finish(&sb), ECONNREFUSED);

	/* Default: connect runs unnoticed. */
	start(&sb, child_connect, NULL);
	assert_exited(finish(&sb), ECONNREFUSED);
}

/* In its own mount namespace, chrooted into a tmpfs that only it can see: the file and an
 * absolute symlink resolve in its view, not ours. */
static int child_chrooted(void *arg)
{
	const char *dir = arg;
	char *argv[] = {"tool", NULL};
	int e1, e2, e3;

	if (execve("/cloister-link", argv, test_envp) == 0 || errno != EACCES)
		return 80;
	if (chdir("/bin") < 0)
		return 81;
	execve("cloister-tool", argv, test_envp);
	e1 = errno;
	execve("../cloister-link", argv, test_envp);
	e2 = errno;
	execve("/bin/true", argv, test_envp); /* the host's; not in the chroot */
	e3 = errno;
	(void)dir;
	return e1 == EACCES && e2 == EACCES && e3 == ENOENT ? 0 : 1;
}

static int child_setup_chroot_then(void *arg);

static void test_paths_resolve_in_the_sandboxs_mount_namespace_and_root(void **state)
{
	struct notifier_filter_opts nested = {.allow_nested_sandbox = true};
	struct sandbox sb;
	struct seccomp_notif req;
	struct exec_target *t;
	struct stat host;
	char hostpath[PATH_MAX + 32];
	REQUIRE_ROOT();

	/* The child builds its own mount namespace and root after the filter is installed, as
	 * an agent that sandboxes its own tools does (the filter refuses that by default). */
	start_opts(&sb, &nested, child_setup_chroot_then, tmpdir);
	/* 1: /cloister-link -> /bin/cloister-tool, inside the chroot */
	t = receive_exec(&sb, &req);
	assert_string_equal(t->cwd, "/");
	assert_string_equal(t->abs_path, "/cloister-link");
	assert_true(t->file.exists);
	assert_true(t->file.regular);
	assert_true(t->file.executable);
	assert_int_equal(t->file.mode & 07777, 0750);
	assert_int_equal(notifier_deny(sb.n, req.id, EACCES), 0);
	exec_target_free(t);
	/* 2: relative to cwd /bin */
	t = receive_exec(&sb, &req);
	assert_string_equal(t->cwd, "/bin");
	assert_string_equal(t->abs_path, "/bin/cloister-tool");
	assert_true(t->file.exists);
	assert_int_equal(t->file.mode & 07777, 0750);
	assert_int_equal(notifier_deny(sb.n, req.id, EACCES), 0);
	exec_target_free(t);
	/* 3: ../cloister-link from /bin */
	t = receive_exec(&sb, &req);
	assert_string_equal(t->abs_path, "/cloister-link");
	assert_true(t->file.exists);
	assert_int_equal(t->file.mode & 07777, 0750);
	assert_int_equal(notifier_deny(sb.n, req.id, EACCES), 0);
	exec_target_free(t);
	/* 4: /bin/true exists on the host but not in the sandbox */
	t = receive_exec(&sb, &req);
	assert_false(t->file.exists);
	assert_int_equal(t->file.error, ENOENT);
	assert_int_equal(notifier_continue(sb.n, req.id), 0);
	exec_target_free(t);
	assert_exited(finish(&sb), 0);
	/* The tmpfs was the child's alone. */
	snprintf(hostpath, sizeof(hostpath), "%s/bin/cloister-tool", tmpdir);
	assert_int_equal(stat(hostpath, &host), -1);
}

static int child_setup_chroot_then(void *arg)
{
	/* Runs after the filter is installed: only execs are notified, so setup is free. */
	const char *dir = arg;
	char p[PATH_MAX + 32];
	int fd;

	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return 70;
	if (mount("tmpfs", dir, "tmpfs", 0, "mode=0755") < 0)
		return 71;
	snprintf(p, sizeof(p), "%s/bin", dir);
	if (mkdir(p, 0755) < 0)
		return 72;
	snprintf(p, sizeof(p), "%s/bin/cloister-tool", dir);
	fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0750);
	if (fd < 0 || copy_true_into(fd) < 0 || fchmod(fd, 0750) < 0)
		return 73;
	close(fd);
	snprintf(p, sizeof(p), "%s/cloister-link", dir);
	if (symlink("/bin/cloister-tool", p) < 0)
		return 74;
	if (chdir(dir) < 0 || chroot(".") < 0 || chdir("/") < 0)
		return 75;
	return child_chrooted(arg);
}

static void *thread_exec(void *arg)
{
	char *argv[] = {"true", "from-thread", NULL};

	if (chdir("/usr/bin") < 0)
		return NULL;
	execve("true", argv, test_envp);
	return NULL;
}

static int child_thread_exec(void *arg)
{
	pthread_t th;

	if (pthread_create(&th, NULL, thread_exec, NULL) != 0)
		return 90;
	pthread_join(th, NULL); /* returns only if the exec failed */
	return 91;
}

static void test_exec_from_a_non_leader_thread(void **state)
{
	struct sandbox sb;
	struct seccomp_notif req;
	struct exec_target *t;
	REQUIRE_ROOT();

	start(&sb, child_thread_exec, NULL);
	t = receive_exec(&sb, &req);
	/* The notification names the thread; its /proc entry gives its own cwd and memory. */
	assert_int_not_equal(t->pid, sb.pid);
	assert_string_equal(t->cwd, "/usr/bin");
	assert_string_equal(t->abs_path, "/usr/bin/true");
	assert_string_equal(t->argv[1], "from-thread");
	assert_same_file(&t->file, "/usr/bin/true");
	assert_int_equal(notifier_continue(sb.n, req.id), 0);
	exec_target_free(t);
	assert_exited(finish(&sb), 0);
}

/* 50 processes of one sandbox exec at once; one loop answers them all. */
#define CONCURRENT 50

static int child_fork_many(void *arg)
{
	pid_t pids[CONCURRENT];
	int bad = 0;

	for (int i = 0; i < CONCURRENT; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			return 90;
		if (pids[i] == 0) {
			char num[16];
			char *argv[] = {"true", num, NULL};

			snprintf(num, sizeof(num), "%d", i);
			execve("/bin/true", argv, test_envp);
			_exit(errno);
		}
	}
	for (int i = 0; i < CONCURRENT; i++) {
		int status;

		if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			bad++;
	}
	return bad;
}

static void test_fifty_concurrent_execs_answered_in_one_loop(void **state)
{
	struct sandbox sb;
	bool seen[CONCURRENT] = {false};
	int answered = 0, overlapped = 0;
	REQUIRE_ROOT();

	start(&sb, child_fork_many, NULL);
	while (answered < CONCURRENT) {
		struct seccomp_notif req;
		struct exec_target *t;
		int i;

		receive(&sb, &req);
		{
			struct cl_error err = {{0}};

			assert_int_equal(notifier_read_exec(sb.n, &req, &t, &err), 0);
		}
		assert_int_equal(t->argc, 2);
		i = atoi(t->argv[1]);
		assert_true(i >= 0 && i < CONCURRENT);
		assert_false(seen[i]);
		seen[i] = true;
		assert_same_file(&t->file, "/bin/true");
		/* Another one already waiting while we hold this one: they really overlap. */
		if (wait_readable(&sb, 0))
			overlapped++;
		assert_int_equal(notifier_continue(sb.n, req.id), 0);
		exec_target_free(t);
		answered++;
	}
	print_message("# answered %d execs; %d times another was already pending\n", answered,
	              overlapped);
	assert_exited(finish(&sb), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_execve_reports_path_argv_cwd_and_file, guard,
	                                        unguard),
	        cmocka_unit_test_setup_teardown(test_relative_path_is_resolved_against_cwd, guard,
	                                        unguard),
	        cmocka_unit_test_setup_teardown(test_execveat_resolves_against_dirfd, guard,
	                                        unguard),
	        cmocka_unit_test_setup_teardown(test_execveat_empty_path_on_memfd, guard, unguard),
	        cmocka_unit_test_setup_teardown(test_fexecve_reports_the_open_file, guard, unguard),
	        cmocka_unit_test_setup_teardown(test_proc_self_fd_path_is_the_targets_fd, guard,
	                                        unguard),
	        cmocka_unit_test_setup_teardown(test_script_reports_interpreter, make_tmpdir,
	                                        remove_tmpdir),
	        cmocka_unit_test_setup_teardown(test_reads_in_a_process_forked_after_notifier_new,
	                                        make_tmpdir, remove_tmpdir),
	        cmocka_unit_test_setup_teardown(test_non_executable_file_is_reported_not_decided,
	                                        make_tmpdir, remove_tmpdir),
	        cmocka_unit_test_setup_teardown(test_non_root_target_ids_and_exec_permission,
	                                        make_tmpdir, remove_tmpdir),
	        cmocka_unit_test_setup_teardown(
	                test_missing_path_is_reported_and_continue_gives_enoent, guard, unguard),
	        cmocka_unit_test_setup_teardown(test_nofollow_on_a_symlink_is_eloop, guard,
	                                        unguard),
	        cmocka_unit_test_setup_teardown(test_deny_gives_eacces_in_the_child, guard,
	                                        unguard),
	        cmocka_unit_test_setup_teardown(test_huge_argv_is_truncated_not_failed, guard,
	                                        unguard),
	        cmocka_unit_test_setup_teardown(
	                test_target_dying_while_pending_is_reported_not_hung, guard, unguard),
	        cmocka_unit_test_setup_teardown(
	                test_target_dying_between_poll_and_receive_gives_enoent, guard, unguard),
	        cmocka_unit_test_setup_teardown(
	                test_io_uring_userfaultfd_and_nested_listeners_are_refused, guard, unguard),
	        cmocka_unit_test_setup_teardown(
	                test_socket_families_beyond_the_allow_list_are_refused, guard, unguard),
	        cmocka_unit_test_setup_teardown(test_terminal_input_injection_is_refused, guard,
	                                        unguard),
	        cmocka_unit_test_setup_teardown(test_foreign_syscall_abi_kills_the_process, guard,
	                                        unguard),
	        cmocka_unit_test_setup_teardown(test_closed_listener_fails_exec_with_enosys, guard,
	                                        unguard),
	        cmocka_unit_test_setup_teardown(test_probes_report_what_the_kernel_has, guard,
	                                        unguard),
	        cmocka_unit_test_setup_teardown(test_signal_to_a_pending_exec, guard, unguard),
	        cmocka_unit_test_setup_teardown(test_filter_without_cap_sys_admin_sets_no_new_privs,
	                                        guard, unguard),
	        cmocka_unit_test_setup_teardown(test_connect_is_notified_only_when_asked, guard,
	                                        unguard),
	        cmocka_unit_test_setup_teardown(
	                test_paths_resolve_in_the_sandboxs_mount_namespace_and_root, make_tmpdir,
	                remove_tmpdir),
	        cmocka_unit_test_setup_teardown(test_exec_from_a_non_leader_thread, guard, unguard),
	        cmocka_unit_test_setup_teardown(
	                test_namespaces_and_mounts_are_refused_unless_nested_is_allowed, guard,
	                unguard),
	        cmocka_unit_test_setup_teardown(
	                test_write_opens_are_notified_and_answered_with_our_fd, make_tmpdir,
	                remove_tmpdir),
	        cmocka_unit_test_setup_teardown(test_openat2_is_allowed_when_only_telling,
	                                        make_tmpdir, remove_tmpdir),
	        cmocka_unit_test_setup_teardown(test_fifty_concurrent_execs_answered_in_one_loop,
	                                        guard, unguard),
	};

	if (geteuid() != 0) {
		fprintf(stderr, "test_notifier: needs root (seccomp listeners, chroot, mounts)\n");
		/* cmocka has no whole-program skip: report every case skipped. */
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
