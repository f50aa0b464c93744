/* peers.h's pure parts: the listener of a port in /proc/net/tcp{,6} and its uid, and the
 * dashboard origins a peer may have. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>

#include <cmocka.h>

#include "supervisor/web/peers.h"

static const char tcp[] =
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
        "timeout inode\n"
        "   0: 0100007F:270F 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000 "
        "       0 1111 1 0000000000000000 100 0 0 10 0\n"
        "   1: 0100007F:2710 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0 "
        "       0 2222 1 0000000000000000 20 4 30 10 -1\n"
        "   2: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0 "
        "       0 3333 1 0000000000000000 100 0 0 10 0\n"
        "   3: 0200007F:2711 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000 "
        "       0 4444 1 0000000000000000 100 0 0 10 0\n";

static const char tcp6[] =
        "  sl  local_address                         remote_address                        st "
        "tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
        "   0: 00000000000000000000000000000000:2712 00000000000000000000000000000000:0000 0A "
        "00000000:00000000 00:00000000 00000000  1001        0 5555 1 0000000000000000 100 0 0 "
        "10 0\n";

static void test_listener_uid(void **state)
{
	uid_t uid = 42;

	assert_int_equal(peers_listener_uid(tcp, 9999, &uid), 0);
	assert_int_equal(uid, 1000);
	/* 10000 is an established connection, not a listener. */
	assert_int_equal(peers_listener_uid(tcp, 10000, &uid), -ENOENT);
	/* 10001 listens on 127.0.0.2, not 127.0.0.1. */
	assert_int_equal(peers_listener_uid(tcp, 10001, &uid), -ENOENT);
	assert_int_equal(peers_listener_uid(tcp, 22, &uid), -ENOENT);
	assert_int_equal(peers_listener_uid("garbage", 9999, &uid), -EINVAL);
	assert_int_equal(peers_listener_uid("", 9999, &uid), -EINVAL);
}

static void test_port_listened(void **state)
{
	assert_true(peers_port_listened(tcp, 9999));
	assert_true(peers_port_listened(tcp, 22)); /* 0.0.0.0 serves 127.0.0.1 too */
	assert_true(peers_port_listened(tcp, 10001));
	assert_false(peers_port_listened(tcp, 10000));
	assert_true(peers_port_listened(tcp6, 10002));
	assert_false(peers_port_listened(tcp6, 9999));
	assert_false(peers_port_listened("", 9999));
}

static void test_origin_port(void **state)
{
	assert_int_equal(peers_origin_port("http://127.0.0.1:9999"), 9999);
	assert_int_equal(peers_origin_port("http://127.0.0.1:65535"), 65535);
	assert_int_equal(peers_origin_port("http://127.0.0.1:65536"), 0);
	assert_int_equal(peers_origin_port("http://127.0.0.1:0"), 0);
	assert_int_equal(peers_origin_port("http://127.0.0.1:09999"), 0);
	assert_int_equal(peers_origin_port("http://127.0.0.1:9999/"), 0);
	assert_int_equal(peers_origin_port("http://127.0.0.1:99999"), 0);
	assert_int_equal(peers_origin_port("http://localhost:9999"), 0);
	assert_int_equal(peers_origin_port("https://127.0.0.1:9999"), 0);
	assert_int_equal(peers_origin_port("http://127.0.0.1:"), 0);
	assert_int_equal(peers_origin_port("null"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_listener_uid),
	        cmocka_unit_test(test_port_listened),
	        cmocka_unit_test(test_origin_port),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
