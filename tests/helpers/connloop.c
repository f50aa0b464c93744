/* connloop N: N times, a TCP connect to a listener of its own on 127.0.0.1 and its accept,
 * both ends closed (what an agent's test suite does against its own dev server). Prints
 * "connloop-us X", the mean microseconds per round, on stdout. Exit 0, or 1 on an error (its
 * text on stderr). */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sin);
	long n = argc == 2 ? strtol(argv[1], NULL, 10) : 0;
	double t0;
	int lfd;

	if (n <= 0 || n > 10000000) {
		fprintf(stderr, "usage: connloop N\n");
		return 1;
	}
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(lfd, 64) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sin, &len) < 0) {
		fprintf(stderr, "connloop: listener: %s\n", strerror(errno));
		return 1;
	}
	t0 = now_us();
	for (long i = 0; i < n; i++) {
		int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int a;

		if (c < 0 || connect(c, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
			fprintf(stderr, "connloop: connect: %s\n", strerror(errno));
			return 1;
		}
		a = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (a < 0) {
			fprintf(stderr, "connloop: accept: %s\n", strerror(errno));
			return 1;
		}
		close(a);
		close(c);
	}
	printf("connloop-us %.1f\n", (now_us() - t0) / (double)n);
	return 0;
}
