/* ttyinject TEXT: what a hostile agent does to type TEXT into the user's shell: push it with
 * TIOCSTI into every terminal it can reach (fds 0-2, /dev/tty, every /dev/pts/N it can
 * open), also with the request's high bits set (the kernel reads 32 bits), and TIOCLINUX's
 * paste on each. Prints one line per attempt ("fd0: Operation not permitted", "/dev/pts/0:
 * pushed") and last "pushed N", the number of pushes that worked: 0 when every way was
 * closed. Exits with N too (a sanitizer's exit status may replace it: read the line). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int pushed;

static void push(int fd, const char *what, const char *text)
{
	unsigned long high = (1UL << 32) | TIOCSTI;
	char paste[2] = {2, 0}; /* TIOCL_PASTESEL */
	int err = 0;

	for (const char *p = text; *p; p++)
		if (ioctl(fd, TIOCSTI, p) < 0) {
			err = errno;
			break;
		}
	printf("%s: %s\n", what, err ? strerror(err) : "pushed");
	pushed += err == 0;
	if (syscall(SYS_ioctl, fd, high, text) == 0) {
		printf("%s (high bits): pushed\n", what);
		pushed++;
	}
	if (ioctl(fd, TIOCLINUX, paste) == 0) {
		printf("%s (TIOCLINUX): pasted\n", what);
		pushed++;
	}
}

int main(int argc, char **argv)
{
	char path[300];
	DIR *d;
	int fd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2) {
		fprintf(stderr, "usage: ttyinject TEXT\n");
		return 255;
	}
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "fd%d", i);
		if (isatty(i))
			push(i, path, argv[1]);
		else
			printf("%s: not a terminal\n", path);
	}
	fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fd >= 0) {
		push(fd, "/dev/tty", argv[1]);
		close(fd);
	} else {
		printf("/dev/tty: %s\n", strerror(errno));
	}
	d = opendir("/dev/pts");
	for (struct dirent *de; d && (de = readdir(d));) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/dev/pts/%s", de->d_name);
		fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (fd < 0) {
			printf("%s: %s\n", path, strerror(errno));
			continue;
		}
		push(fd, path, argv[1]);
		close(fd);
	}
	if (d)
		closedir(d);
	printf("pushed %d\n", pushed);
	return pushed > 254 ? 254 : pushed;
}
