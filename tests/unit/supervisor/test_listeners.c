/* listeners.h: the inet_diag request, the reading of the kernel's answers (made up here, with
 * the kernel's layout), and a question to the real kernel about a socket of this test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "supervisor/web/listeners.h"

#define LISTEN      10
#define ESTABLISHED 1
#define TIME_WAIT   6

/* A datagram of the kernel's answer, message by message. */
struct answer {
	_Alignas(struct nlmsghdr) unsigned char buf[4096];
	size_t len;
};

static void add_socket(struct answer *a, uint32_t seq, int family, int state, const char *addr,
                       uint16_t port, uint32_t uid)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)(a->buf + a->len);
	struct inet_diag_msg *m = NLMSG_DATA(nlh);

	memset(nlh, 0, NLMSG_SPACE(sizeof(*m)));
	nlh->nlmsg_len = NLMSG_LENGTH(sizeof(*m));
	nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
	nlh->nlmsg_seq = seq;
	m->idiag_family = (uint8_t)family;
	m->idiag_state = (uint8_t)state;
	m->id.idiag_sport = htons(port);
	assert_int_equal(inet_pton(family, addr, m->id.idiag_src), 1);
	m->idiag_uid = uid;
	a->len += NLMSG_SPACE(sizeof(*m));
}

static void add_done(struct answer *a, uint32_t seq)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)(a->buf + a->len);

	memset(nlh, 0, NLMSG_SPACE(sizeof(int)));
	nlh->nlmsg_len = NLMSG_LENGTH(sizeof(int));
	nlh->nlmsg_type = NLMSG_DONE;
	nlh->nlmsg_seq = seq;
	a->len += NLMSG_SPACE(sizeof(int));
}

static void add_error(struct answer *a, uint32_t seq, int error)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)(a->buf + a->len);
	struct nlmsgerr *e = NLMSG_DATA(nlh);

	memset(nlh, 0, NLMSG_SPACE(sizeof(*e)));
	nlh->nlmsg_len = NLMSG_LENGTH(sizeof(*e));
	nlh->nlmsg_type = NLMSG_ERROR;
	nlh->nlmsg_seq = seq;
	e->error = error;
	a->len += NLMSG_SPACE(sizeof(*e));
}

static void test_the_request_names_the_state_and_the_port(void **state)
{
	_Alignas(struct nlmsghdr) unsigned char buf[LISTENERS_REQUEST_SIZE];
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)buf;
	const struct inet_diag_req_v2 *req = NLMSG_DATA(nlh);
	int n;

	(void)state;
	n = listeners_request(AF_INET6, 9999, 7, buf, sizeof(buf));
	assert_int_equal(n, (int)NLMSG_LENGTH(sizeof(*req)));
	assert_int_equal(nlh->nlmsg_len, (unsigned)n);
	assert_int_equal(nlh->nlmsg_type, SOCK_DIAG_BY_FAMILY);
	assert_int_equal(nlh->nlmsg_flags, NLM_F_REQUEST | NLM_F_DUMP);
	assert_int_equal(nlh->nlmsg_seq, 7);
	assert_int_equal(req->sdiag_family, AF_INET6);
	assert_int_equal(req->sdiag_protocol, IPPROTO_TCP);
	/* LISTEN alone: the kernel never walks the established and TIME_WAIT sockets. */
	assert_int_equal(req->idiag_states, 1U << LISTEN);
	assert_int_equal(ntohs(req->id.idiag_sport), 9999);
	assert_int_equal(req->id.idiag_dport, 0);
	assert_int_equal(listeners_request(AF_INET, 1, 1, buf, 8), -ENOBUFS);
}

static void test_a_listener_of_the_port_is_found_with_its_owner(void **state)
{
	struct answer a = {0};
	struct listeners_answer ans = {0};

	(void)state;
	/* What does not count comes first: another request's, a connection, TIME_WAIT, another
	 * port, another loopback address, the wildcard address. */
	add_socket(&a, 3, AF_INET, LISTEN, "127.0.0.1", 9999, 5);
	add_socket(&a, 1, AF_INET, ESTABLISHED, "127.0.0.1", 9999, 6);
	add_socket(&a, 1, AF_INET, TIME_WAIT, "127.0.0.1", 9999, 0);
	add_socket(&a, 1, AF_INET, LISTEN, "127.0.0.1", 9998, 7);
	add_socket(&a, 1, AF_INET, LISTEN, "127.0.0.2", 9999, 8);
	add_socket(&a, 1, AF_INET, LISTEN, "0.0.0.0", 9999, 9);
	assert_int_equal(listeners_parse(a.buf, a.len, 1, 9999, LISTENERS_LOOPBACK4, &ans), 0);
	assert_false(ans.found);
	assert_false(ans.done);

	add_socket(&a, 1, AF_INET, LISTEN, "127.0.0.1", 9999, 1000);
	add_socket(&a, 1, AF_INET, LISTEN, "127.0.0.1", 9999, 1001);
	add_done(&a, 1);
	assert_int_equal(listeners_parse(a.buf, a.len, 1, 9999, LISTENERS_LOOPBACK4, &ans), 0);
	assert_true(ans.found);
	assert_int_equal(ans.uid, 1000); /* the first */
	assert_true(ans.done);
}

static void test_any_address_counts_for_the_port_held(void **state)
{
	struct answer a = {0};
	struct listeners_answer ans = {0};

	(void)state;
	add_socket(&a, 1, AF_INET6, LISTEN, "::", 10002, 1001);
	assert_int_equal(listeners_parse(a.buf, a.len, 1, 10002, LISTENERS_LOOPBACK4, &ans), 0);
	assert_false(ans.found);
	assert_int_equal(listeners_parse(a.buf, a.len, 1, 10002, LISTENERS_ANY, &ans), 0);
	assert_true(ans.found);
	assert_int_equal(ans.uid, 1001);
}

static void test_errors_and_malformed_answers(void **state)
{
	struct answer a = {0};
	struct listeners_answer ans = {0};

	(void)state;
	add_error(&a, 1, 0); /* an acknowledgement */
	add_done(&a, 1);
	assert_int_equal(listeners_parse(a.buf, a.len, 1, 1, LISTENERS_ANY, &ans), 0);
	assert_true(ans.done);

	a.len = 0;
	add_error(&a, 1, -ENOENT);
	assert_int_equal(listeners_parse(a.buf, a.len, 1, 1, LISTENERS_ANY, &ans), -ENOENT);
	a.len = 0;
	add_error(&a, 1, 5); /* no errno */
	assert_int_equal(listeners_parse(a.buf, a.len, 1, 1, LISTENERS_ANY, &ans), -EBADMSG);

	/* Cut short: a header that claims more than there is, or a socket message too short. */
	a.len = 0;
	add_socket(&a, 1, AF_INET, LISTEN, "127.0.0.1", 1, 0);
	memset(&ans, 0, sizeof(ans));
	assert_int_equal(listeners_parse(a.buf, a.len - 8, 1, 1, LISTENERS_ANY, &ans), -EBADMSG);
	assert_false(ans.found);
	((struct nlmsghdr *)a.buf)->nlmsg_len = NLMSG_LENGTH(4);
	assert_int_equal(listeners_parse(a.buf, a.len, 1, 1, LISTENERS_ANY, &ans), -EBADMSG);
	assert_int_equal(listeners_parse(a.buf, 3, 1, 1, LISTENERS_ANY, &ans), -EBADMSG);
	assert_int_equal(listeners_parse(a.buf, 0, 1, 1, LISTENERS_ANY, &ans), 0);
}

/* The real kernel: a socket of ours that listens on 127.0.0.1 is found, with our uid; once
 * closed, nothing is. */
static void test_the_kernel_names_our_listener(void **state)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sin);
	uid_t uid = (uid_t)-1;
	int fd, r;

	(void)state;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	/* Bound, not listening yet: not a listener. */
	r = listeners_find(ntohs(sin.sin_port), LISTENERS_ANY, NULL);
	if (r == -EPROTONOSUPPORT || r == -EAFNOSUPPORT) {
		print_message("skipped: the kernel has no NETLINK_SOCK_DIAG (%s)\n", strerror(-r));
		close(fd);
		skip();
	}
	assert_int_equal(r, -ENOENT);
	assert_int_equal(listen(fd, 1), 0);
	r = listeners_find(ntohs(sin.sin_port), LISTENERS_LOOPBACK4, &uid);
	assert_int_equal(r, 0);
	assert_int_equal(uid, geteuid());
	assert_int_equal(listeners_find(ntohs(sin.sin_port), LISTENERS_ANY, NULL), 0);
	close(fd);
	assert_int_equal(listeners_find(ntohs(sin.sin_port), LISTENERS_LOOPBACK4, NULL), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_the_request_names_the_state_and_the_port),
	        cmocka_unit_test(test_a_listener_of_the_port_is_found_with_its_owner),
	        cmocka_unit_test(test_any_address_counts_for_the_port_held),
	        cmocka_unit_test(test_errors_and_malformed_answers),
	        cmocka_unit_test(test_the_kernel_names_our_listener),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
