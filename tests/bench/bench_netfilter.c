/* bench_netfilter: what the nat redirect alone costs, the lower bound for the transparent
 * proxy. In a netns of ours with the egress rules installed, a plain accept + echo / sink
 * server on 127.0.0.1 is reached directly and through the redirect (a connect to 203.0.113.7,
 * rewritten to the server's port), with no proxy logic on the way. */
#include "tests/bench/bench.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "netfilter/netns.h"
#include "netfilter/nft_egress.h"
#include "base/cleanup.h"

#define CONNECTS   2000
#define BULK_BYTES (512u << 20)
#define BULK_CHUNK (256u << 10)
#define BULK_RUNS  3

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The server: one connection at a time. First byte 'e': echo every byte until EOF. 's': read
 * and discard until EOF, then answer one byte. 'q': stop. */
static void *server_main(void *arg)
{
	int lfd = *(int *)arg;
	static char buf[BULK_CHUNK];

	for (;;) {
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		char mode;
		ssize_t n;

		if (c < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		if (read(c, &mode, 1) != 1) {
			close(c);
			continue;
		}
		if (mode == 'q') {
			close(c);
			return NULL;
		}
		if (mode == 'e') {
			if (write(c, &mode, 1) != 1) {
				close(c);
				continue;
			}
			while ((n = read(c, buf, sizeof(buf))) > 0)
				if (write(c, buf, (size_t)n) != n)
					break;
		} else {
			while ((n = read(c, buf, sizeof(buf))) > 0)
				;
			(void)!write(c, "k", 1);
		}
		close(c);
	}
}

struct client_args {
	struct sockaddr_in dst;
	char mode;           /* 'e' connect + echo round trip, 's' bulk, 'q' stop the server */
	uint64_t *samples;   /* 'e': CONNECTS set-up times */
	double gbytes_per_s; /* 's' */
};

static int connect_to(const struct sockaddr_in *dst)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)dst, sizeof(*dst)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

/* Runs inside the netns: the sockets are the netns's, as an agent's would be. */
static int client_main(void *userdata)
{
	struct client_args *a = userdata;
	static char buf[BULK_CHUNK];

	if (a->mode == 'q') {
		int fd = connect_to(&a->dst);

		if (fd < 0)
			return fd;
		(void)!write(fd, "q", 1);
		close(fd);
		return 0;
	}
	if (a->mode == 'e') {
		for (int i = 0; i < CONNECTS; i++) {
			uint64_t t0 = now_ns();
			int fd = connect_to(&a->dst);
			char c = 'e';

			if (fd < 0)
				return fd;
			if (write(fd, &c, 1) != 1 || read(fd, &c, 1) != 1) {
				close(fd);
				return -EIO;
			}
			a->samples[i] = now_ns() - t0;
			close(fd);
		}
		return 0;
	}
	{
		int fd = connect_to(&a->dst);
		uint64_t t0, sent = 0;
		char c = 's';

		if (fd < 0)
			return fd;
		memset(buf, 'x', sizeof(buf));
		t0 = now_ns();
		if (write(fd, &c, 1) != 1) {
			close(fd);
			return -EIO;
		}
		while (sent < BULK_BYTES) {
			ssize_t n = write(fd, buf, sizeof(buf));

			if (n <= 0) {
				close(fd);
				return -EIO;
			}
			sent += (uint64_t)n;
		}
		shutdown(fd, SHUT_WR);
		if (read(fd, &c, 1) != 1) {
			close(fd);
			return -EIO;
		}
		a->gbytes_per_s = (double)sent / (double)(now_ns() - t0);
		close(fd);
		return 0;
	}
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

struct measure {
	double connect_median_us;
	double bulk_gbytes_per_s;
};

static int measure(int netns_fd, const struct sockaddr_in *dst, struct measure *ret)
{
	_cleanup_free_ uint64_t *samples = calloc(CONNECTS, sizeof(uint64_t));
	struct client_args a = {.dst = *dst, .mode = 'e', .samples = samples};
	double best = 0;
	int r;

	if (!samples)
		return -ENOMEM;
	r = netfilter_run_in_netns(netns_fd, client_main, &a);
	if (r < 0)
		return r;
	qsort(samples, CONNECTS, sizeof(uint64_t), cmp_u64);
	ret->connect_median_us = (double)samples[CONNECTS / 2] / 1e3;
	for (int i = 0; i < BULK_RUNS; i++) {
		a.mode = 's';
		r = netfilter_run_in_netns(netns_fd, client_main, &a);
		if (r < 0)
			return r;
		if (a.gbytes_per_s > best)
			best = a.gbytes_per_s;
	}
	ret->bulk_gbytes_per_s = best;
	return 0;
}

struct listen_args {
	int fd;
	uint16_t port;
};

static int listen_in_netns(void *userdata)
{
	struct listen_args *a = userdata;
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, SOMAXCONN) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	a->fd = fd;
	a->port = ntohs(sin.sin_port);
	return 0;
}

void bench_netfilter(void)
{
	_cleanup_close_ int netns = -EBADF;
	_cleanup_close_ int lfd = -EBADF;
	struct listen_args la = {.fd = -EBADF};
	struct nft_egress *rules = NULL;
	struct cl_error err = {{0}};
	struct sockaddr_in direct = {.sin_family = AF_INET}, redirected = {.sin_family = AF_INET};
	struct measure d, n;
	struct client_args stop;
	pthread_t server;
	int r;

	if (geteuid() != 0) {
		printf("netfilter redirect: skipped (needs root: network namespaces, nftables)\n");
		return;
	}
	r = netfilter_netns_create(&netns);
	if (r >= 0)
		r = netfilter_netns_setup(netns, &err);
	if (r >= 0)
		r = netfilter_run_in_netns(netns, listen_in_netns, &la);
	if (r < 0) {
		printf("netfilter redirect: set-up failed: %s\n",
		       err.msg[0] ? err.msg : strerror(-r));
		return;
	}
	lfd = la.fd;
	/* Every TCP connection not local goes to the plain server (DNS to a port nobody uses). */
	r = nft_egress_install(netns,
	                       &(struct nft_egress_config){.proxy_port = la.port, .dns_port = 9},
	                       &rules, &err);
	if (r < 0) {
		printf("netfilter redirect: rules: %s\n", err.msg);
		return;
	}
	if (pthread_create(&server, NULL, server_main, &lfd) != 0) {
		nft_egress_free(rules);
		printf("netfilter redirect: cannot start the server thread\n");
		return;
	}
	direct.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	direct.sin_port = htons(la.port);
	inet_pton(AF_INET, "203.0.113.7", &redirected.sin_addr);
	redirected.sin_port = htons(443);

	r = measure(netns, &direct, &d);
	if (r >= 0)
		r = measure(netns, &redirected, &n);
	stop = (struct client_args){.dst = direct, .mode = 'q'};
	(void)netfilter_run_in_netns(netns, client_main, &stop);
	pthread_join(server, NULL);
	nft_egress_free(rules);
	if (r < 0) {
		printf("netfilter redirect: measuring failed: %s\n", strerror(-r));
		return;
	}
	printf("connect + 1-byte echo, median of %d: direct %.1f µs, through the nat redirect "
	       "%.1f µs (%.2fx, %+.1f µs)\n",
	       CONNECTS, d.connect_median_us, n.connect_median_us,
	       n.connect_median_us / d.connect_median_us,
	       n.connect_median_us - d.connect_median_us);
	printf("bulk %u MiB one way, best of %d: direct %.2f GB/s, through the nat redirect "
	       "%.2f GB/s (%.0f %%)\n",
	       BULK_BYTES >> 20, BULK_RUNS, d.bulk_gbytes_per_s, n.bulk_gbytes_per_s,
	       100.0 * n.bulk_gbytes_per_s / d.bulk_gbytes_per_s);
}
