/* The pure parts of the sandbox launcher: exit codes, id maps, the user-namespace decision and
 * the validation of the init's messages (which the supervisor must not trust blindly). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <string.h>

#include "supervisor/sandbox/sandbox_proto.h"

/* wait(2) status words, built as the kernel does */
#define EXITED(code) (((code)&0xff) << 8)
#define KILLED(sig)  ((sig)&0x7f)
#define STOPPED(sig) ((((sig)&0xff) << 8) | 0x7f)
#define CONTINUED    0xffff

static void test_exit_code_is_the_code_or_128_plus_signal(void **state)
{
	assert_int_equal(sandbox_exit_code_from_wait_status(EXITED(0)), 0);
	assert_int_equal(sandbox_exit_code_from_wait_status(EXITED(3)), 3);
	assert_int_equal(sandbox_exit_code_from_wait_status(EXITED(255)), 255);
	assert_int_equal(sandbox_exit_code_from_wait_status(KILLED(SIGKILL)), 137);
	assert_int_equal(sandbox_exit_code_from_wait_status(KILLED(SIGINT)), 130);
	assert_int_equal(sandbox_exit_code_from_wait_status(KILLED(SIGSEGV) | 0x80), 139);
	/* a stop or a continue is not an exit */
	assert_int_equal(sandbox_exit_code_from_wait_status(STOPPED(SIGTSTP)), -EINVAL);
	assert_int_equal(sandbox_exit_code_from_wait_status(CONTINUED), -EINVAL);
}

static void test_id_map_maps_one_id_to_itself(void **state)
{
	char buf[32];

	assert_int_equal(sandbox_format_id_map(1000, 1000, buf, sizeof(buf)), 12);
	assert_string_equal(buf, "1000 1000 1\n");
	assert_int_equal(sandbox_format_id_map(4294967294U, 4294967294U, buf, sizeof(buf)), 24);
	assert_string_equal(buf, "4294967294 4294967294 1\n");
	assert_int_equal(sandbox_format_id_map(1000, 1000, buf, 12), -ENAMETOOLONG);
}

static void test_user_namespace_only_for_non_root_by_default(void **state)
{
	assert_false(sandbox_want_userns(SANDBOX_USERNS_AUTO, 0));
	assert_true(sandbox_want_userns(SANDBOX_USERNS_AUTO, 1000));
	assert_true(sandbox_want_userns(SANDBOX_USERNS_ALWAYS, 0));
	assert_false(sandbox_want_userns(SANDBOX_USERNS_NEVER, 1000));
}

static void test_messages_are_validated(void **state)
{
	struct sandbox_msg m = {.type = SANDBOX_MSG_EXITED, .value = 3}, out;
	char big[sizeof(m) + 1];

	assert_int_equal(sandbox_msg_validate(&m, sizeof(m), &out), 0);
	assert_int_equal(out.type, SANDBOX_MSG_EXITED);
	assert_int_equal(out.value, 3);
	/* short, long, unknown type, unterminated text */
	assert_int_equal(sandbox_msg_validate(&m, sizeof(m) - 1, &out), -EBADMSG);
	memset(big, 0, sizeof(big));
	assert_int_equal(sandbox_msg_validate(big, sizeof(big), &out), -EBADMSG);
	m.type = 0;
	assert_int_equal(sandbox_msg_validate(&m, sizeof(m), &out), -EBADMSG);
	m.type = SANDBOX_MSG_MAX_;
	assert_int_equal(sandbox_msg_validate(&m, sizeof(m), &out), -EBADMSG);
	m.type = SANDBOX_MSG_ERROR;
	memset(m.text, 'x', sizeof(m.text));
	assert_int_equal(sandbox_msg_validate(&m, sizeof(m), &out), -EBADMSG);
	m.text[sizeof(m.text) - 1] = '\0';
	assert_int_equal(sandbox_msg_validate(&m, sizeof(m), &out), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_exit_code_is_the_code_or_128_plus_signal),
	        cmocka_unit_test(test_id_map_maps_one_id_to_itself),
	        cmocka_unit_test(test_user_namespace_only_for_non_root_by_default),
	        cmocka_unit_test(test_messages_are_validated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
