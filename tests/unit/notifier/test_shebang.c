/* shebang_parse: the interpreter and argument exactly as the kernel's binfmt_script takes them. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "notifier/shebang.h"

static int parse(const char *s, struct shebang *sb)
{
	return shebang_parse(s, strlen(s), sb);
}

static void test_plain_interpreter(void **state)
{
	struct shebang sb;

	assert_int_equal(parse("#!/bin/sh\necho hi\n", &sb), 0);
	assert_string_equal(sb.interp, "/bin/sh");
	assert_false(sb.has_arg);
	assert_string_equal(sb.arg, "");
}

static void test_space_after_bang_and_one_argument(void **state)
{
	struct shebang sb;

	assert_int_equal(parse("#! /usr/bin/env python3\nprint(1)\n", &sb), 0);
	assert_string_equal(sb.interp, "/usr/bin/env");
	assert_true(sb.has_arg);
	assert_string_equal(sb.arg, "python3");
}

static void test_everything_after_the_interpreter_is_one_argument(void **state)
{
	struct shebang sb;

	assert_int_equal(parse("#!/usr/bin/env  -S python3 -u \t \nx", &sb), 0);
	assert_string_equal(sb.interp, "/usr/bin/env");
	assert_string_equal(sb.arg, "-S python3 -u");
	assert_int_equal(parse("#!\t/bin/bash\t-e\n", &sb), 0);
	assert_string_equal(sb.interp, "/bin/bash");
	assert_string_equal(sb.arg, "-e");
}

static void test_no_newline_at_end_of_file(void **state)
{
	struct shebang sb;

	assert_int_equal(parse("#!/bin/sh", &sb), 0);
	assert_string_equal(sb.interp, "/bin/sh");
	assert_false(sb.has_arg);
	assert_int_equal(parse("#!/bin/sh -x", &sb), 0);
	assert_string_equal(sb.arg, "-x");
}

static void test_carriage_return_is_part_of_the_name_as_in_the_kernel(void **state)
{
	struct shebang sb;

	assert_int_equal(parse("#!/bin/sh\r\nexit 0\r\n", &sb), 0);
	assert_string_equal(sb.interp, "/bin/sh\r");
	assert_int_equal(parse("#!/usr/bin/env python3\r\n", &sb), 0);
	assert_string_equal(sb.interp, "/usr/bin/env");
	assert_string_equal(sb.arg, "python3\r");
}

static void test_over_long_line(void **state)
{
	char buf[600];
	struct shebang sb;

	/* The name itself runs past 256 bytes: cut off, the kernel refuses it. */
	memset(buf, 'a', sizeof(buf));
	memcpy(buf, "#!/", 3);
	assert_int_equal(shebang_parse(buf, sizeof(buf), &sb), -ENOEXEC);

	/* The name fits, the argument is cut at 255 bytes, as in the kernel. */
	memset(buf, 'b', sizeof(buf));
	memcpy(buf, "#!/bin/sh ", 10);
	assert_int_equal(shebang_parse(buf, sizeof(buf), &sb), 0);
	assert_string_equal(sb.interp, "/bin/sh");
	assert_int_equal(strlen(sb.arg), SHEBANG_BUF_SIZE - 1 - 10);

	/* A newline after byte 256 is never seen. */
	memset(buf, ' ', sizeof(buf));
	memcpy(buf, "#!", 2);
	buf[400] = '\n';
	assert_int_equal(shebang_parse(buf, sizeof(buf), &sb), -ENOEXEC);
}

static void test_not_a_script_or_no_interpreter(void **state)
{
	struct shebang sb;

	assert_int_equal(parse("\x7f"
	                       "ELF\x02\x01",
	                       &sb),
	                 -ENOMSG);
	assert_int_equal(parse("", &sb), -ENOMSG);
	assert_int_equal(parse("#", &sb), -ENOMSG);
	assert_int_equal(parse(" #!/bin/sh\n", &sb), -ENOMSG);
	assert_int_equal(parse("#!\n", &sb), -ENOEXEC);
	assert_int_equal(parse("#!   \t\n/bin/sh\n", &sb), -ENOEXEC);
	assert_int_equal(parse("#!", &sb), -ENOEXEC);
}

static void test_nul_ends_the_name(void **state)
{
	static const char data[] = "#!/bin/sh\0junk\n";
	struct shebang sb;

	assert_int_equal(shebang_parse(data, sizeof(data) - 1, &sb), 0);
	assert_string_equal(sb.interp, "/bin/sh");
	assert_false(sb.has_arg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_plain_interpreter),
	        cmocka_unit_test(test_space_after_bang_and_one_argument),
	        cmocka_unit_test(test_everything_after_the_interpreter_is_one_argument),
	        cmocka_unit_test(test_no_newline_at_end_of_file),
	        cmocka_unit_test(test_carriage_return_is_part_of_the_name_as_in_the_kernel),
	        cmocka_unit_test(test_over_long_line),
	        cmocka_unit_test(test_not_a_script_or_no_interpreter),
	        cmocka_unit_test(test_nul_ends_the_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
