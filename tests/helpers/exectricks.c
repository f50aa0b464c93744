/* exectricks MODE PROGRAM [ARGS…]: exec PROGRAM in one of the ways an agent could use to dodge a
 * path-based check, so the integration tests can prove each one is intercepted:
 *   memfd     copy PROGRAM into a memfd, execveat(fd, "", AT_EMPTY_PATH)
 *   fexecve   open PROGRAM, fexecve(fd)
 *   dirfd     open PROGRAM's directory, execveat(dirfd, basename, 0)
 *   relative  chdir to PROGRAM's directory, execve("./basename")
 *   thread    execve from a second thread of a multi-threaded process
 * On failure it prints the errno and exits 126 (EACCES) or 127 (anything else). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
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
		fprintf(stderr, "usage: exectricks memfd|fexecve|dirfd|relative|thread PROGRAM "
		                "[ARGS...]\n");
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
