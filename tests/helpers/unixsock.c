/* unixsock: a unix stream socket server and client for the containment tests.
 *
 *   unixsock serve ADDR READY   listen on ADDR, create the file READY once listening, then
 *                               answer every connection with "hello\n" until killed
 *   unixsock connect ADDR       connect to ADDR and print the first line it answers (exit 0);
 *                               print "connect: <why>" and exit 1 when it cannot
 *
 * ADDR is a path, or "@NAME" for the abstract name NAME. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int address(const char *text, struct sockaddr_un *sun, socklen_t *len)
{
	size_t n = strlen(text);

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (n == 0 || n >= sizeof(sun->sun_path))
		return -1;
	memcpy(sun->sun_path, text, n);
	if (text[0] == '@')
		sun->sun_path[0] = '\0';
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (text[0] == '@' ? 0 : 1));
	return 0;
}

static int serve(const char *addr, const char *ready)
{
	struct sockaddr_un sun;
	socklen_t len;
	int fd, rfd;

	if (address(addr, &sun, &len) < 0)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, len) < 0 || listen(fd, 16) < 0) {
		fprintf(stderr, "unixsock serve %s: %s\n", addr, strerror(errno));
		return 1;
	}
	rfd = open(ready, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (rfd < 0)
		return 1;
	close(rfd);
	for (;;) {
		int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

		if (c < 0)
			continue;
		(void)!write(c, "hello\n", 6);
		close(c);
	}
}

static int client(const char *addr)
{
	struct sockaddr_un sun;
	socklen_t len;
	char buf[64];
	ssize_t n;
	int fd;

	if (address(addr, &sun, &len) < 0)
		return 2;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, len) < 0) {
		printf("connect: %s\n", strerror(errno));
		return 1;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0) {
		printf("read: %s\n", strerror(errno));
		return 1;
	}
	buf[n] = '\0';
	fputs(buf, stdout);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "serve") == 0)
		return serve(argv[2], argv[3]);
	if (argc == 3 && strcmp(argv[1], "connect") == 0)
		return client(argv[2]);
	fprintf(stderr, "usage: unixsock serve ADDR READY | connect ADDR\n");
	return 2;
}
