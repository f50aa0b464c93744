/* stamp FILE: appends the CLOCK_MONOTONIC time in nanoseconds as one line to FILE, first
 * thing, then exits 0. The benchmarks exec it to learn when a held exec resumed. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct timespec ts;
	char line[32];
	int fd, n;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (argc < 2)
		return 2;
	n = snprintf(line, sizeof(line), "%lld\n",
	             (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	fd = open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, line, (size_t)n) != n)
		return 1;
	close(fd);
	return 0;
}
