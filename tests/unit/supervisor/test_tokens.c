/* The token registry: register, replace, revoke, lookups, bounds, the comparison's semantics. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/approval/tokens.h"

#define T1 "af3b2c1d00112233445566778899aabb"
#define T2 "0000000000000000ffffffffffffffff"

static void test_register_lookup_replace_revoke(void **state)
{
	struct tokens *t;
	const struct token_entry *e;

	assert_int_equal(tokens_new(&t), 0);
	assert_int_equal(tokens_count(t), 0);
	assert_null(tokens_lookup(t, T1));
	assert_null(tokens_lookup(t, NULL));
	assert_null(tokens_at(t, 0));

	assert_int_equal(tokens_register(t, T1, "my-api-main", "my-api", "/home/u/my-api"), 0);
	assert_int_equal(tokens_register(t, T2, "other", NULL, ""), 0);
	assert_int_equal(tokens_count(t), 2);
	e = tokens_lookup(t, T1);
	assert_non_null(e);
	assert_string_equal(e->token, T1);
	assert_string_equal(e->cloister, "my-api-main");
	assert_string_equal(e->project, "my-api");
	assert_string_equal(e->worktree, "/home/u/my-api");
	e = tokens_lookup(t, T2);
	assert_non_null(e);
	assert_null(e->project);  /* not given */
	assert_null(e->worktree); /* empty is not given */

	/* A prefix, an extension or a near miss is not the token. */
	assert_null(tokens_lookup(t, "af3b2c1d00112233445566778899aab"));
	assert_null(tokens_lookup(t, T1 "c"));
	assert_null(tokens_lookup(t, "Af3b2c1d00112233445566778899aabb"));
	assert_null(tokens_lookup(t, ""));

	/* Registering the same token again replaces its entry. */
	assert_int_equal(tokens_register(t, T1, "renamed", NULL, NULL), 0);
	assert_int_equal(tokens_count(t), 2);
	e = tokens_lookup(t, T1);
	assert_string_equal(e->cloister, "renamed");
	assert_null(e->project);

	assert_int_equal(tokens_revoke(t, T1), 0);
	assert_int_equal(tokens_revoke(t, T1), -ENOENT);
	assert_int_equal(tokens_revoke(t, "never-registered-token"), -ENOENT);
	assert_null(tokens_lookup(t, T1));
	assert_int_equal(tokens_count(t), 1);
	assert_string_equal(tokens_at(t, 0)->token, T2);
	assert_null(tokens_at(t, 1));
	assert_non_null(tokens_lookup(t, T2));
	tokens_free(t);
	tokens_free(NULL);
}

static void test_invalid_input_changes_nothing(void **state)
{
	struct tokens *t;
	char buf[TOKEN_MAX_LEN + 2];
	char *field;

	assert_int_equal(tokens_new(&t), 0);
	/* Length: 16..256. */
	memset(buf, 'a', sizeof(buf));
	buf[TOKEN_MIN_LEN - 1] = '\0';
	assert_int_equal(tokens_register(t, buf, "c", NULL, NULL), -EINVAL);
	memset(buf, 'a', sizeof(buf));
	buf[TOKEN_MIN_LEN] = '\0';
	assert_int_equal(tokens_register(t, buf, "c", NULL, NULL), 0);
	memset(buf, 'b', sizeof(buf));
	buf[TOKEN_MAX_LEN] = '\0';
	assert_int_equal(tokens_register(t, buf, "c", NULL, NULL), 0);
	memset(buf, 'c', sizeof(buf));
	buf[TOKEN_MAX_LEN + 1] = '\0';
	assert_int_equal(tokens_register(t, buf, "c", NULL, NULL), -EINVAL);
	/* Printable ASCII without spaces. */
	assert_int_equal(tokens_register(t, "0123456789 abcdef", "c", NULL, NULL), -EINVAL);
	assert_int_equal(tokens_register(t, "0123456789\tabcdef", "c", NULL, NULL), -EINVAL);
	assert_int_equal(tokens_register(t,
	                                 "0123456789\x7f"
	                                 "abcdef",
	                                 "c", NULL, NULL),
	                 -EINVAL);
	assert_int_equal(tokens_register(t,
	                                 "0123456789\xc3\xa9"
	                                 "abcdef",
	                                 "c", NULL, NULL),
	                 -EINVAL);
	assert_int_equal(tokens_register(t, NULL, "c", NULL, NULL), -EINVAL);
	/* A cloister name is required. */
	assert_int_equal(tokens_register(t, T1, NULL, NULL, NULL), -EINVAL);
	assert_int_equal(tokens_register(t, T1, "", NULL, NULL), -EINVAL);
	/* Fields are bounded. */
	field = malloc(TOKENS_FIELD_MAX + 2);
	assert_non_null(field);
	memset(field, 'x', TOKENS_FIELD_MAX + 1);
	field[TOKENS_FIELD_MAX + 1] = '\0';
	assert_int_equal(tokens_register(t, T1, field, NULL, NULL), -EINVAL);
	assert_int_equal(tokens_register(t, T1, "c", field, NULL), -EINVAL);
	assert_int_equal(tokens_register(t, T1, "c", NULL, field), -EINVAL);
	field[TOKENS_FIELD_MAX] = '\0';
	assert_int_equal(tokens_register(t, T1, field, field, field), 0);
	free(field);
	assert_int_equal(tokens_count(t), 3);
	/* An invalid re-registration leaves the old entry alone. */
	assert_int_equal(tokens_register(t, T1, "", NULL, NULL), -EINVAL);
	assert_int_equal(strlen(tokens_lookup(t, T1)->cloister), TOKENS_FIELD_MAX);
	tokens_free(t);
}

static void test_bounded_number_of_tokens(void **state)
{
	struct tokens *t;
	char tok[32];

	assert_int_equal(tokens_new(&t), 0);
	for (unsigned i = 0; i < TOKENS_MAX; i++) {
		snprintf(tok, sizeof(tok), "token-%010u", i);
		assert_int_equal(tokens_register(t, tok, "c", NULL, NULL), 0);
	}
	assert_int_equal(tokens_count(t), TOKENS_MAX);
	assert_int_equal(tokens_register(t, "one-token-too-many", "c", NULL, NULL), -ENOSPC);
	assert_null(tokens_lookup(t, "one-token-too-many"));
	/* Replacing one is still possible when full; revoking frees a slot. */
	assert_int_equal(tokens_register(t, "token-0000000007", "seven", NULL, NULL), 0);
	assert_string_equal(tokens_lookup(t, "token-0000000007")->cloister, "seven");
	assert_int_equal(tokens_revoke(t, "token-0000000000"), 0);
	assert_int_equal(tokens_register(t, "one-token-too-many", "c", NULL, NULL), 0);
	assert_int_equal(tokens_count(t), TOKENS_MAX);
	/* Every entry is still found after the moves a revoke makes. */
	for (unsigned i = 1; i < TOKENS_MAX; i++) {
		snprintf(tok, sizeof(tok), "token-%010u", i);
		assert_non_null(tokens_lookup(t, tok));
	}
	tokens_free(t);
}

static void test_equal_semantics(void **state)
{
	assert_true(tokens_equal("", ""));
	assert_true(tokens_equal("abc", "abc"));
	assert_false(tokens_equal("abc", "abd"));
	assert_false(tokens_equal("abd", "abc"));
	assert_false(tokens_equal("ab", "abc"));
	assert_false(tokens_equal("abc", "ab"));
	assert_false(tokens_equal("", "a"));
	assert_false(tokens_equal("a", ""));
	assert_false(tokens_equal("abc", "ABC"));
	/* Bytes above 0x7f compare as bytes. */
	assert_true(tokens_equal("\xff\x80", "\xff\x80"));
	assert_false(tokens_equal("\xff\x80", "\xff\x81"));
	/* A difference in the last byte of a long string. */
	assert_false(tokens_equal(T1 T1 "x", T1 T1 "y"));
	/* A longer A whose first bytes are B, and B's NUL against A's byte. */
	assert_false(tokens_equal("abc\x01", "abc"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_register_lookup_replace_revoke),
	        cmocka_unit_test(test_invalid_input_changes_nothing),
	        cmocka_unit_test(test_bounded_number_of_tokens),
	        cmocka_unit_test(test_equal_semantics),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
