/* mapwrite FILE OFFSET TEXT [WAIT-FILE TEXT2]: write TEXT into FILE at OFFSET through a shared
 * writable mapping (mmap MAP_SHARED and a store, never write(2)): the way an agent changes a
 * file's content without the kernel giving it a new ctime (tmpfs never sets one for a write
 * through a mapping; other file systems set none while the page is dirty and mapped writable).
 * With WAIT-FILE: print "mapped", keep the mapping until WAIT-FILE exists (30 s at most), then
 * write TEXT2 at the same offset through the same mapping. The file keeps its size.
 * Exits 0 on success, 1 with the errno on stderr otherwise. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int wait_for(const char *path)
{
	const struct timespec tick = {.tv_nsec = 10 * 1000 * 1000};

	for (int i = 0; i < 3000; i++) {
		if (access(path, F_OK) == 0)
			return 0;
		nanosleep(&tick, NULL);
	}
	fprintf(stderr, "mapwrite: %s did not appear\n", path);
	return -1;
}

int main(int argc, char **argv)
{
	struct stat st;
	size_t off, len;
	char *end, *map;
	int fd;

	if (argc != 4 && argc != 6) {
		fprintf(stderr, "usage: mapwrite FILE OFFSET TEXT [WAIT-FILE TEXT2]\n");
		return 2;
	}
	errno = 0;
	off = strtoul(argv[2], &end, 10);
	len = strlen(argv[3]);
	fd = open(argv[1], O_RDWR | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		perror("mapwrite: open");
		return 1;
	}
	if (errno || *end || off > (size_t)st.st_size || len > (size_t)st.st_size - off ||
	    (argc == 6 && strlen(argv[5]) > (size_t)st.st_size - off)) {
		fprintf(stderr, "mapwrite: %s..+%zu is outside the file's %lld bytes\n", argv[2],
		        len, (long long)st.st_size);
		return 1;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror("mapwrite: mmap");
		return 1;
	}
	close(fd);
	memcpy(map + off, argv[3], len);
	if (argc == 6) {
		printf("mapped\n");
		fflush(stdout);
		if (wait_for(argv[4]) < 0)
			return 1;
		memcpy(map + off, argv[5], strlen(argv[5]));
	}
	if (munmap(map, (size_t)st.st_size) < 0) {
		perror("mapwrite: munmap");
		return 1;
	}
	return 0;
}
