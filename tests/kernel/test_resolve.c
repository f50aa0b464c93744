/* notifier/resolve against the real kernel: for a table of paths (symlinks relative and
 * absolute, "..", trailing slashes, loops, missing and non-directory components, /proc/self,
 * /proc/thread-self, /dev/fd), our walk must end where the kernel's own lookup ends — the same
 * file, or the same errno. Then the case the walk exists for: a process in a pid namespace of
 * its own with its own /proc, where "/proc/self/fd/N" names nothing for us but its fd for the
 * kernel (root). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "notifier/proc_status.h"
#include "notifier/resolve.h"
#include "base/cleanup.h"

static char tmpdir[64];
static int tmpfd = -1, rootfd = -1, selffd = -1;

static int read_status(int piddir, struct proc_status *ret)
{
	char buf[65536];
	int fd = openat(piddir, "status", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0)
		return -errno;
	return proc_status_parse(buf, (size_t)n, ret);
}

struct status_cache {
	int piddir;
	bool have;
	struct proc_status st;
};

static int status_cb(void *userdata, const struct proc_status **ret)
{
	struct status_cache *c = userdata;

	if (!c->have) {
		int r = read_status(c->piddir, &c->st);

		if (r < 0)
			return r;
		c->have = true;
	}
	*ret = &c->st;
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

static void mk(const char *rel, const char *link_to)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
	if (link_to) {
		assert_int_equal(symlink(link_to, path), 0);
	} else if (rel[strlen(rel) - 1] == '/') {
		assert_int_equal(mkdir(path, 0755), 0);
	} else {
		int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0755);

		assert_true(fd >= 0);
		close(fd);
	}
}

static int setup(void **state)
{
	char link[PATH_MAX * 2];

	strcpy(tmpdir, "/tmp/cloister-resolve-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	mk("a/", NULL);
	mk("a/b/", NULL);
	mk("a/file", NULL);
	mk("rel", "a/file");
	snprintf(link, sizeof(link), "%s/a/file", tmpdir);
	mk("abs", link);
	mk("dirlink", "a");
	mk("dirlink2", "a/b/..");
	mk("loop1", "loop2");
	mk("loop2", "loop1");
	mk("dangling", "nowhere/x");
	mk("a/up", "../rel");
	/* 41 links in a row: one more than the kernel follows. */
	for (int i = 0; i < 41; i++) {
		char name[32], to[32];

		snprintf(name, sizeof(name), "chain%d", i);
		snprintf(to, sizeof(to), i == 40 ? "a/file" : "chain%d", i + 1);
		mk(name, to);
	}
	mk("chain40b", "a/file");
	tmpfd = open(tmpdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	selffd = open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
	*state = NULL;
	return tmpfd >= 0 && rootfd >= 0 && selffd >= 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	close(tmpfd);
	close(rootfd);
	close(selffd);
	nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

/* "dev:ino" of the file the path leads to, or "-ERRNO". */
static void outcome(int fd, char *buf, size_t size)
{
	struct stat st;

	if (fd < 0) {
		snprintf(buf, size, "%s", strerror(-fd));
		return;
	}
	assert_int_equal(fstat(fd, &st), 0);
	snprintf(buf, size, "%llu:%llu", (unsigned long long)st.st_dev,
	         (unsigned long long)st.st_ino);
	close(fd);
}

/* The name the lookup settles without a readlink (resolve.h) is the one /proc/self/fd/N shows
 * for the file (our root is the target's here); a path through a symlink settles none. */
static void check_name(const char *path)
{
	struct resolve_target t = {.root = rootfd, .piddir = -EBADF, .status = status_cb};
	struct status_cache c = {.piddir = selffd};
	_cleanup_free_ char *name = NULL;
	char self[64], link[PATH_MAX];
	bool symlinks = false;
	ssize_t n;
	int fd;

	t.userdata = &c;
	fd = resolve_exec_path_hinted(&t, tmpfd, tmpdir, path, 0, &symlinks, &name);
	if (fd < 0) {
		if (name)
			fail_msg("%s: no file (%d), yet a name %s", path, fd, name);
		return;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	n = readlink(self, link, sizeof(link) - 1);
	close(fd);
	assert_true(n > 0);
	link[n] = '\0';
	if (name && strcmp(name, link) != 0)
		fail_msg("%s: the lookup's name %s, /proc's %s", path, name, link);
	if (!name && !symlinks && !strstr(path, "proc") && !strstr(path, "fd/"))
		fail_msg("%s: found without a symlink (%s), yet no name", path, link);
	if (name && symlinks)
		fail_msg("%s: a name (%s) for a path through a symlink", path, name);
}

static void check_like_the_kernel(const char *path, int piddir)
{
	struct status_cache c = {.piddir = piddir};
	struct resolve_target t = {
	        .root = rootfd, .piddir = piddir, .status = status_cb, .userdata = &c};
	char want[64], walk[64], fast[64], hinted[64];
	int kfd = openat(tmpfd, path, O_PATH | O_CLOEXEC);
	bool symlinks = true;

	outcome(kfd < 0 ? -errno : kfd, want, sizeof(want));
	outcome(resolve_walk(&t, tmpfd, path, 0), walk, sizeof(walk));
	outcome(resolve_exec_path(&t, tmpfd, tmpdir, path, 0), fast, sizeof(fast));
	/* The hint to try symlinks first changes the cost, never the answer. */
	outcome(resolve_exec_path_hinted(&t, tmpfd, tmpdir, path, 0, &symlinks, NULL), hinted,
	        sizeof(hinted));
	if (strcmp(want, walk) != 0 || strcmp(want, fast) != 0 || strcmp(want, hinted) != 0)
		fail_msg("%s: the kernel gives %s, the walk %s, resolve_exec_path %s (symlinks "
		         "first: %s)",
		         path, want, walk, fast, hinted);
	check_name(path);
}

static void test_paths_end_where_the_kernels_lookup_ends(void **state)
{
	static const char *const paths[] = {
	        "a/file",
	        "rel",
	        "abs",
	        "dirlink/file",
	        "dirlink2/file",
	        "a/../a/file",
	        "a/b/../file",
	        "a/b/../../a/file",
	        "/../..//./a/../",
	        "a/b",
	        "dirlink/../rel",
	        "a/up",
	        "./a/./file",
	        "a//file",
	        "a/file/",
	        "a/file/x",
	        "nope",
	        "nope/x",
	        "loop1",
	        "dangling",
	        "chain0",
	        "chain1",
	        "chain40b",
	        "a/",
	        "/",
	        "..",
	        "../../../..",
	        "/proc/self/exe",
	        "/proc/self/status",
	        "/proc/thread-self/status",
	        "/proc/self/nope/x",
	        "/proc/mounts",
	};

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		check_like_the_kernel(paths[i], selffd);
}

static void test_fd_names_lead_to_the_open_file(void **state)
{
	char path[4][64];
	int fd = open("/bin/sh", O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	snprintf(path[0], sizeof(path[0]), "/proc/self/fd/%d", fd);
	snprintf(path[1], sizeof(path[1]), "/dev/fd/%d", fd);
	snprintf(path[2], sizeof(path[2]), "/proc/thread-self/fd/%d", fd);
	snprintf(path[3], sizeof(path[3]), "/proc/%d/fd/%d", (int)getpid(), fd);
	for (size_t i = 0; i < 4; i++)
		check_like_the_kernel(path[i], selffd);
	check_like_the_kernel("/proc/self/fd/999", selffd);
	close(fd);
}

static void test_nofollow_refuses_a_final_symlink(void **state)
{
	struct status_cache c = {.piddir = selffd};
	struct resolve_target t = {
	        .root = rootfd, .piddir = selffd, .status = status_cb, .userdata = &c};
	int fd;

	assert_int_equal(resolve_walk(&t, tmpfd, "rel", RESOLVE_EXEC_NOFOLLOW), -ELOOP);
	assert_int_equal(resolve_exec_path(&t, tmpfd, tmpdir, "rel", RESOLVE_EXEC_NOFOLLOW),
	                 -ELOOP);
	/* Only the last component: a symlinked directory on the way is followed. */
	fd = resolve_walk(&t, tmpfd, "dirlink/file", RESOLVE_EXEC_NOFOLLOW);
	assert_true(fd >= 0);
	close(fd);
}

/* A process in a pid namespace of its own, /proc remounted for it, holding /bin/sh open as fd
 * 7; it waits for us to close the pipe. */
static pid_t start_inner(int *ret_pipe)
{
	int go[2], ready[2];
	pid_t pid;

	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pid_t inner;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(go[1]);
		close(ready[0]);
		if (unshare(CLONE_NEWPID | CLONE_NEWNS) < 0)
			_exit(1);
		inner = fork();
		if (inner == 0) {
			char c;
			int fd;

			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
			    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) <
			            0)
				_exit(2);
			fd = open("/bin/sh", O_RDONLY);
			if (fd < 0 || dup2(fd, 7) < 0)
				_exit(3);
			if (write(ready[1], "r", 1) != 1)
				_exit(4);
			(void)!read(go[0], &c, 1);
			_exit(0);
		}
		_exit(inner > 0 && waitpid(inner, NULL, 0) == inner ? 0 : 5);
	}
	close(go[0]);
	close(ready[1]);
	{
		char c;

		assert_int_equal(read(ready[0], &c, 1), 1);
	}
	close(ready[0]);
	*ret_pipe = go[1];
	return pid;
}

static void test_self_in_a_procfs_of_another_pid_namespace(void **state)
{
	char path[PATH_MAX], children[64], want[64], got[64];
	struct status_cache c = {0};
	struct resolve_target t = {.status = status_cb, .userdata = &c};
	int go, inner_root, inner_dir, sh;
	pid_t outer, inner = 0;
	FILE *f;

	if (geteuid() != 0) {
		print_message("# skipped: needs root (a pid namespace and a procfs of its own)\n");
		skip();
	}
	outer = start_inner(&go);
	snprintf(children, sizeof(children), "/proc/%d/task/%d/children", (int)outer, (int)outer);
	f = fopen(children, "re");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%d", &inner), 1);
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%d", (int)inner);
	inner_dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(inner_dir >= 0);
	inner_root = openat(inner_dir, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(inner_root >= 0);
	t.root = inner_root;
	t.piddir = inner_dir;
	c.piddir = inner_dir;

	sh = open("/bin/sh", O_PATH | O_CLOEXEC);
	outcome(sh, want, sizeof(want));
	/* What a plain lookup of ours makes of it: nothing (we have no pid there). */
	{
		int fd = openat(inner_root, "proc/self/fd/7", O_PATH | O_CLOEXEC);

		outcome(fd < 0 ? -errno : fd, got, sizeof(got));
		print_message("# /proc/self/fd/7 looked up by us directly: %s\n", got);
	}
	{
		static const char *const forms[] = {"/proc/self/fd/7", "/dev/fd/7",
		                                    "/proc/thread-self/fd/7", "/proc/1/fd/7"};

		for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
			outcome(resolve_exec_path(&t, -EBADF, NULL, forms[i], 0), got, sizeof(got));
			if (strcmp(got, want) != 0)
				fail_msg("%s: %s, want /bin/sh's %s", forms[i], got, want);
		}
	}
	outcome(resolve_exec_path(&t, -EBADF, NULL, "/proc/self/fd/900", 0), got, sizeof(got));
	assert_string_equal(got, strerror(ENOENT));

	close(go);
	assert_int_equal(waitpid(outer, NULL, 0), outer);
	close(inner_root);
	close(inner_dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_paths_end_where_the_kernels_lookup_ends),
	        cmocka_unit_test(test_fd_names_lead_to_the_open_file),
	        cmocka_unit_test(test_nofollow_refuses_a_final_symlink),
	        cmocka_unit_test(test_self_in_a_procfs_of_another_pid_namespace),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
