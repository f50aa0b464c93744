/* tcpget [-f] ADDR PORT PATH: send "GET PATH HTTP/1.0" to ADDR (an IPv4 or IPv6 literal) and
 * print the first line of the answer. With -f the connection is opened by sendto() with
 * MSG_FASTOPEN (TCP Fast Open: no connect() call at all). On failure prints
 * "tcpget: STEP: ERROR" and exits 1. Gives up after 10 s. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int fail(const char *step)
{
	printf("tcpget: %s: %s\n", step, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	struct sockaddr_storage ss = {0};
	socklen_t len;
	char req[512], buf[512];
	int fastopen = argc > 1 && strcmp(argv[1], "-f") == 0;
	size_t got = 0;
	ssize_t n;
	int fd;

	if (argc - fastopen != 4) {
		fprintf(stderr, "usage: tcpget [-f] ADDR PORT PATH\n");
		return 2;
	}
	argv += fastopen;
	alarm(10);
	if (inet_pton(AF_INET, argv[1], &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		ss.ss_family = AF_INET;
		((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)atoi(argv[2]));
		len = sizeof(struct sockaddr_in);
	} else if (inet_pton(AF_INET6, argv[1], &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		ss.ss_family = AF_INET6;
		((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)atoi(argv[2]));
		len = sizeof(struct sockaddr_in6);
	} else {
		fprintf(stderr, "tcpget: not an address: %s\n", argv[1]);
		return 2;
	}
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", argv[3]);
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail("socket");
	if (fastopen) {
		if (sendto(fd, req, strlen(req), MSG_FASTOPEN, (struct sockaddr *)&ss, len) < 0)
			return fail("sendto");
	} else {
		if (connect(fd, (struct sockaddr *)&ss, len) < 0)
			return fail("connect");
		if (write(fd, req, strlen(req)) < 0)
			return fail("write");
	}
	while (got < sizeof(buf) - 1 && (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0) {
		got += (size_t)n;
		if (memchr(buf, '\n', got))
			break;
	}
	buf[got] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	if (got == 0)
		return fail("read");
	printf("%s\n", buf);
	return 0;
}
