/* tcpsend PORT [-s]: connect to 127.0.0.1:PORT, send all of stdin, then copy everything the
 * server sends to stdout until it closes. With -s, shut down the sending side after stdin
 * ends (the server sees end of file); without, the connection stays open for writing, as a
 * client waiting for its answer keeps it. Gives up after 60 s. Exit 0, or 1 on an error. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = {.sin_family = AF_INET};
	char buf[65536];
	int fd;

	if (argc < 2) {
		fprintf(stderr, "usage: tcpsend PORT [-s]\n");
		return 2;
	}
	alarm(60);
	addr.sin_port = htons((unsigned short)atoi(argv[1]));
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		perror("tcpsend: connect");
		return 1;
	}
	for (;;) {
		ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		/* The server may answer and stop reading early (a line over its limit). */
		if (write_all(fd, buf, (size_t)n) < 0)
			break;
	}
	if (argc > 2 && strcmp(argv[2], "-s") == 0)
		shutdown(fd, SHUT_WR);
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			perror("tcpsend: read");
			return 1;
		}
		if (n == 0)
			break;
		if (write_all(STDOUT_FILENO, buf, (size_t)n) < 0)
			return 1;
	}
	close(fd);
	return 0;
}
