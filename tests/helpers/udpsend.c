/* udpsend ADDR PORT: send one datagram ("x") to ADDR (IPv4 or IPv6) PORT and exit 0 when the
 * kernel took it; otherwise print the errno's text and exit 1. Tests use it to show that UDP
 * is refused in a sandbox (busybox nc may be built without -u). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_storage ss = {0};
	socklen_t len;
	int fd;

	if (argc != 3)
		return 2;
	if (inet_pton(AF_INET, argv[1], &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		((struct sockaddr_in *)&ss)->sin_family = AF_INET;
		((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)atoi(argv[2]));
		len = sizeof(struct sockaddr_in);
	} else if (inet_pton(AF_INET6, argv[1], &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		((struct sockaddr_in6 *)&ss)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)atoi(argv[2]));
		len = sizeof(struct sockaddr_in6);
	} else {
		return 2;
	}
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || sendto(fd, "x", 1, 0, (struct sockaddr *)&ss, len) != 1) {
		printf("udpsend: %s\n", strerror(errno));
		return 1;
	}
	close(fd);
	return 0;
}
