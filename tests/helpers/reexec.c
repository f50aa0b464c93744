/* reexec FILE…: execs itself once more with the very same arguments (only the environment
 * differs: REEXEC_AGAIN=1), and that second image creates the file named by its last argument.
 *
 * Tests exec it where the exec backstop must stop the second exec: the supervisor decided on
 * the first one, and its expectation must not be spent twice (the same thread, the same
 * arguments). If the file exists afterwards, the second image ran. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char *env[] = {"REEXEC_AGAIN=1", NULL};
	int fd;

	if (argc < 2)
		return 2;
	if (!getenv("REEXEC_AGAIN")) {
		execve("/proc/self/exe", argv, env);
		return 127;
	}
	fd = open(argv[argc - 1], O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return 1;
	close(fd);
	return 0;
}
