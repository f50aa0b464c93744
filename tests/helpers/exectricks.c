/* exectricks MODE PROGRAM [ARGS…]: exec PROGRAM in one of the ways an agent could use to dodge a
 * path-based check, so the integration tests can prove each one is intercepted:
 *   memfd     copy PROGRAM into a memfd, execveat(fd, "", AT_EMPTY_PATH)
 *   fexecve   open PROGRAM, fexecve(fd)
 *   dirfd     open PROGRAM's directory, execveat(dirfd, basename, 0)
 *   relative  chdir to PROGRAM's directory, execve("./basename")
 *   thread    execve from a second thread of a multi-threaded process
 *   procfd    open PROGRAM, execve("/proc/self/fd/N")
 *   devfd     open PROGRAM, execve("/dev/fd/N")
 *   threadfd  open PROGRAM, execve("/proc/thread-self/fd/N")
 *   pidfd     open PROGRAM, execve("/proc/<own pid>/fd/N")
 *   nsfd      PROGRAM ALLOWED [ARGS…]: a child in a user and mount namespace of its own binds
 *             PROGRAM over ALLOWED, opens ALLOWED and hands the fd back; this process, still
 *             in the sandbox's namespace, fexecve()s it with argv [ALLOWED, ARGS…]
 * On failure it prints the errno and exits 126 (EACCES) or 127 (anything else). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;
static char **prog_argv;

static int fail(const char *what)
{
	int e = errno;

	fprintf(stderr, "exectricks: %s: %s\n", what, strerror(e));
	return e == EACCES ? 126 : 127;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* In a child: a user and mount namespace of its own, PROGRAM bound over ALLOWED, ALLOWED opened
 * and sent back over SOCK. */
static int nsfd_child(int sock, const char *program, const char *allowed)
{
	char map[64], buf[1] = {0};
	struct iovec iov = {.iov_base = buf, .iov_len = 1};
	union {
		char space[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct msghdr msg = {.msg_iov = &iov,
	                     .msg_iovlen = 1,
	                     .msg_control = ctl.space,
	                     .msg_controllen = sizeof(ctl.space)};
	struct cmsghdr *c;
	uid_t uid = getuid();
	gid_t gid = getgid();
	int fd;

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return fail("unshare");
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
	if (write_file("/proc/self/uid_map", map) < 0)
		return fail("uid_map");
	(void)write_file("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
	if (write_file("/proc/self/gid_map", map) < 0)
		return fail("gid_map");
	if (mount(program, allowed, NULL, MS_BIND, NULL) < 0)
		return fail("bind mount");
	fd = open(allowed, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail("open");
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	if (sendmsg(sock, &msg, 0) != 1)
		return fail("sendmsg");
	/* Keep the namespace (and so the mount's name) alive until the parent is done. */
	(void)!read(sock, buf, 1);
	return 0;
}

static int nsfd(char **argv)
{
	char buf[1];
	struct iovec iov = {.iov_base = buf, .iov_len = 1};
	union {
		char space[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct msghdr msg = {.msg_iov = &iov,
	                     .msg_iovlen = 1,
	                     .msg_control = ctl.space,
	                     .msg_controllen = sizeof(ctl.space)};
	struct cmsghdr *c;
	int sv[2], fd, status = 0;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) < 0)
		return fail("socketpair");
	pid = fork();
	if (pid < 0)
		return fail("fork");
	if (pid == 0) {
		close(sv[0]);
		_exit(nsfd_child(sv[1], argv[2], argv[3]));
	}
	close(sv[1]);
	if (recvmsg(sv[0], &msg, 0) != 1 || !(c = CMSG_FIRSTHDR(&msg)) ||
	    c->cmsg_type != SCM_RIGHTS) {
		waitpid(pid, &status, 0);
		return 127;
	}
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	/* argv: ALLOWED and the rest. */
	prog_argv = argv + 3;
	fexecve(fd, prog_argv, environ);
	return fail("fexecve of a file from another mount namespace");
}

static void *thread_exec(void *unused)
{
	execve(prog_argv[0], prog_argv, environ);
	exit(fail("execve from thread"));
}

int main(int argc, char **argv)
{
	const char *mode;
	char dir[4096], base[4096];
	int fd;

	if (argc < 3) {
		fprintf(stderr,
		        "usage: exectricks memfd|fexecve|dirfd|relative|thread|procfd|devfd|"
		        "threadfd|pidfd PROGRAM [ARGS...]\n");
		return 2;
	}
	mode = argv[1];
	prog_argv = argv + 2;
	snprintf(dir, sizeof(dir), "%s", argv[2]);
	snprintf(base, sizeof(base), "%s", argv[2]);

	if (strcmp(mode, "memfd") == 0) {
		struct stat st;
		int src = open(argv[2], O_RDONLY | O_CLOEXEC);

		if (src < 0 || fstat(src, &st) < 0)
			return fail("open");
		fd = memfd_create("exectricks", MFD_CLOEXEC);
		if (fd < 0)
			return fail("memfd_create");
		for (off_t off = 0; off < st.st_size;)
			if (sendfile(fd, src, &off, (size_t)(st.st_size - off)) <= 0)
				return fail("sendfile");
		syscall(SYS_execveat, fd, "", prog_argv, environ, AT_EMPTY_PATH);
		return fail("execveat(AT_EMPTY_PATH)");
	}
	if (strcmp(mode, "fexecve") == 0) {
		fd = open(argv[2], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return fail("open");
		fexecve(fd, prog_argv, environ);
		return fail("fexecve");
	}
	if (strcmp(mode, "dirfd") == 0) {
		fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return fail("open dir");
		syscall(SYS_execveat, fd, basename(base), prog_argv, environ, 0);
		return fail("execveat(dirfd)");
	}
	if (strcmp(mode, "relative") == 0) {
		char rel[4200];

		if (chdir(dirname(dir)) < 0)
			return fail("chdir");
		snprintf(rel, sizeof(rel), "./%s", basename(base));
		execve(rel, prog_argv, environ);
		return fail("execve(relative)");
	}
	if (strcmp(mode, "procfd") == 0 || strcmp(mode, "devfd") == 0 ||
	    strcmp(mode, "threadfd") == 0 || strcmp(mode, "pidfd") == 0) {
		char path[64];

		/* Not O_CLOEXEC: the fd must still be open when the kernel follows the link. */
		fd = open(argv[2], O_RDONLY);
		if (fd < 0)
			return fail("open");
		if (strcmp(mode, "procfd") == 0)
			snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		else if (strcmp(mode, "devfd") == 0)
			snprintf(path, sizeof(path), "/dev/fd/%d", fd);
		else if (strcmp(mode, "threadfd") == 0)
			snprintf(path, sizeof(path), "/proc/thread-self/fd/%d", fd);
		else
			snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)getpid(), fd);
		execve(path, prog_argv, environ);
		return fail(path);
	}
	if (strcmp(mode, "nsfd") == 0)
		return argc < 4 ? 2 : nsfd(argv);
	if (strcmp(mode, "thread") == 0) {
		pthread_t t;

		if (pthread_create(&t, NULL, thread_exec, NULL) != 0)
			return 127;
		pthread_join(t, NULL);
		return 127;
	}
	fprintf(stderr, "exectricks: unknown mode %s\n", mode);
	return 2;
}
