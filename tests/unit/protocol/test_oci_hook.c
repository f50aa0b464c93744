/* The hook's reply: one status byte and a bounded, printable reason. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "protocol/oci_hook.h"

static void test_ok_and_failure_round_trip(void **state)
{
	char buf[OCI_HOOK_REPLY_MAX], msg[OCI_HOOK_MAX_REPLY_MSG + 1];
	size_t n;

	n = oci_hook_reply_format(true, NULL, buf);
	assert_int_equal(n, 1);
	assert_int_equal(oci_hook_reply_parse(buf, n, msg), 1);
	assert_string_equal(msg, "");

	n = oci_hook_reply_format(false, "nft: no table\nsecond line", buf);
	assert_int_equal(oci_hook_reply_parse(buf, n, msg), 0);
	assert_string_equal(msg, "nft: no table second line");
}

static void test_long_reason_is_cut_and_control_bytes_hidden(void **state)
{
	char buf[OCI_HOOK_REPLY_MAX], msg[OCI_HOOK_MAX_REPLY_MSG + 1], big[1000];
	size_t n;

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	n = oci_hook_reply_format(false, big, buf);
	assert_int_equal(n, OCI_HOOK_REPLY_MAX);
	assert_int_equal(oci_hook_reply_parse(buf, n, msg), 0);
	assert_int_equal(strlen(msg), OCI_HOOK_MAX_REPLY_MSG);

	memcpy(buf, "\x01\x1b[2Jhi\0x", 9);
	assert_int_equal(oci_hook_reply_parse(buf, 9, msg), 0);
	assert_string_equal(msg, "?[2Jhi?x");
	assert_int_equal(oci_hook_reply_parse(buf, 0, msg), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_ok_and_failure_round_trip),
	        cmocka_unit_test(test_long_reason_is_cut_and_control_bytes_hidden),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
