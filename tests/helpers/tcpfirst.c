/* tcpfirst HOST PORT eof|wait: a TCP client that sends nothing before the server speaks.
 *   eof   shut the sending side at once (before any byte, as `nc -N HOST PORT </dev/null`),
 *         then copy what the server sends to stdout until it closes;
 *   wait  send nothing; copy the server's first bytes (a banner) to stdout, then send
 *         "QUIT\n", shut the sending side and copy the rest until the server closes.
 * HOST is resolved with getaddrinfo (IPv4 first). On stderr: "first-ms N", the time from the
 * connect to the server's first bytes (or its EOF). Gives up after 10 s. Exit 0, or 1 on an
 * error (its text on stderr). */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int dial(const char *host, const char *port)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_family = AF_INET}, *res;
	int fd, e = getaddrinfo(host, port, &hints, &res);

	if (e != 0) {
		fprintf(stderr, "tcpfirst: %s: %s\n", host, gai_strerror(e));
		return -1;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) < 0) {
		fprintf(stderr, "tcpfirst: connect: %s\n", strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

/* Copy from FD to stdout: once (ONCE) or until EOF. 0, or -1 on an error. */
static int copy_out(int fd, int once)
{
	char buf[4096];

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "tcpfirst: read: %s\n", strerror(errno));
			return -1;
		}
		if (n == 0 || fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
			return 0;
		fflush(stdout);
		if (once)
			return 0;
	}
}

int main(int argc, char **argv)
{
	struct pollfd p = {.events = POLLIN};
	long t0;
	int wait;

	if (argc != 4 || (strcmp(argv[3], "eof") != 0 && strcmp(argv[3], "wait") != 0)) {
		fprintf(stderr, "usage: tcpfirst HOST PORT eof|wait\n");
		return 2;
	}
	wait = strcmp(argv[3], "wait") == 0;
	alarm(10);
	t0 = now_ms();
	p.fd = dial(argv[1], argv[2]);
	if (p.fd < 0)
		return 1;
	if (!wait && shutdown(p.fd, SHUT_WR) < 0)
		return 1;
	if (poll(&p, 1, 10000) != 1)
		return 1;
	fprintf(stderr, "first-ms %ld\n", now_ms() - t0);
	if (copy_out(p.fd, wait) < 0)
		return 1;
	if (wait) {
		if (write(p.fd, "QUIT\n", 5) != 5 || shutdown(p.fd, SHUT_WR) < 0)
			return 1;
		if (copy_out(p.fd, 0) < 0)
			return 1;
	}
	close(p.fd);
	return 0;
}
