/* peers.h's pure part: the dashboard origins a peer may have (who listens on a port is
 * test_listeners.c's). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>

#include <cmocka.h>

#include "supervisor/web/peers.h"

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
	        cmocka_unit_test(test_origin_port),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
