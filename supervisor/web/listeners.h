/* Who listens on a TCP port of this network namespace, asked of the kernel's socket table
 * (NETLINK_SOCK_DIAG, inet_diag) instead of read from /proc/net/tcp{,6}: the request names the
 * state (LISTEN) and the port, so the kernel walks its listening sockets only and answers with
 * the socket of that port, however many connections the machine has (a host with tens of
 * thousands of TIME_WAIT sockets made /proc/net/tcp several megabytes). Waiting for the answer
 * is bounded: LISTENERS_TIMEOUT_MS in all, then -ETIMEDOUT.
 *
 * The request and the reading of an answer are pure, for the tests; listeners_find() is the
 * thin shell that talks to the kernel. */
#ifndef CLOISTER_LISTENERS_H
#define CLOISTER_LISTENERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define LISTENERS_TIMEOUT_MS 500
/* Bytes enough for listeners_request(). */
#define LISTENERS_REQUEST_SIZE 128

/* Which listeners count. */
enum listeners_where {
	LISTENERS_LOOPBACK4, /* 127.0.0.1:PORT only (a supervisor's approval server) */
	LISTENERS_ANY,       /* PORT on any address, IPv4 or IPv6 */
};

/* What an answer said so far. */
struct listeners_answer {
	bool found; /* a listener that counts */
	uid_t uid;  /* the first one's owner */
	bool done;  /* the kernel said it has no more */
};

/* Pure: the inet_diag dump request for TCP listeners of FAMILY (AF_INET, AF_INET6) on PORT,
 * numbered SEQ, into BUF (SIZE bytes). Its length, or -ENOBUFS. */
int listeners_request(int family, uint16_t port, uint32_t seq, void *buf, size_t size);

/* Pure: read one datagram of the kernel's answer to request SEQ (LEN bytes of BUF) into ANS:
 * each socket of PORT in state LISTEN that WHERE counts sets found (and uid, the first time);
 * NLMSG_DONE sets done. 0; -EBADMSG for a malformed answer, or the kernel's error (-errno)
 * when it refused the request. Messages of another SEQ are skipped. */
int listeners_parse(const void *buf, size_t len, uint32_t seq, uint16_t port,
                    enum listeners_where where, struct listeners_answer *ans);

/* Is PORT listened on, as WHERE says, in this network namespace? 0 with *RET_UID (may be
 * NULL) the owner of one such socket; -ENOENT none; -ETIMEDOUT the kernel did not answer in
 * time; other -errno when it could not be asked. */
int listeners_find(uint16_t port, enum listeners_where where, uid_t *ret_uid);

#endif
