/* marker FILE…: creates the file named by its last argument, first thing, then exits 0.
 *
 * Tests exec it where the exec backstop must stop it: if the file exists afterwards, the image
 * ran. The last argument (not argv[1]) so that it also works as the interpreter of a #! script,
 * which the kernel runs as `marker SCRIPT ARGS…`. */
#include <fcntl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int fd;

	if (argc < 2)
		return 2;
	fd = open(argv[argc - 1], O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return 1;
	close(fd);
	return 0;
}
