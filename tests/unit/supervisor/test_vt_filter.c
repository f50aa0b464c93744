/* What of the agent's output reaches the user's terminal: its screen whole, and nothing that
 * sets or reads the clipboard, makes the terminal report what the agent should not learn, acts
 * on the user's window, or hides a control as a C1 character; fed whole or byte by byte. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/tty/vt_filter.h"

#define OUT_MAX 8192

/* S through a fresh filter, in one piece (STEP 0) or STEP bytes at a time. */
static size_t filtered(const char *s, size_t len, size_t step, char *out, bool *ret_queried)
{
	struct vt_filter f;
	size_t n = 0;

	vt_filter_init(&f);
	if (!step)
		step = len ? len : 1;
	for (size_t i = 0; i < len; i += step) {
		size_t k = len - i < step ? len - i : step;

		n += vt_filter_feed(&f, s + i, k, out + n);
	}
	if (ret_queried)
		*ret_queried = f.queried;
	return n;
}

/* IN gives WANT, whole and byte by byte. */
static void check(const char *in, const char *want)
{
	char out[OUT_MAX];
	size_t steps[] = {0, 1, 3};

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		size_t n = filtered(in, strlen(in), steps[i], out, NULL);

		out[n] = '\0';
		if (n != strlen(want) || memcmp(out, want, n) != 0) {
			fprintf(stderr, "in:   ");
			for (const char *p = in; *p; p++)
				fprintf(stderr,
				        (unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f
				                ? "\\x%02x"
				                : "%c",
				        (unsigned char)*p);
			fprintf(stderr, "\nout:  ");
			for (size_t k = 0; k < n; k++)
				fprintf(stderr,
				        (unsigned char)out[k] < 0x20 ||
				                        (unsigned char)out[k] >= 0x7f
				                ? "\\x%02x"
				                : "%c",
				        (unsigned char)out[k]);
			fprintf(stderr, " (step %zu)\n", steps[i]);
			fail();
		}
	}
}

static void same(const char *in)
{
	check(in, in);
}

static void test_a_screen_passes_as_it_is(void **state)
{
	same("hello, world\r\n");
	same("caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80 \xc2\xa0nbsp");
	same("\x1b[1;31mred\x1b[0m \x1b[38;2;255;128;0mrgb\x1b[m");
	same("\x1b[?1049h\x1b[H\x1b[2J\x1b[10;20Hx\x1b[?25l\x1b[?2004h\x1b[3;20r\x1b[?1049l");
	same("\x1b"
	     "7\x1b"
	     "8\x1b(B\x1b)0\x0e\x0f\x1b=\x1b>\x1b"
	     "c");
	same("\x1b]0;my title\x07\x1b]2;other\x1b\\");
	same("\x1b]8;;https://example.org/\x1b\\link\x1b]8;;\x1b\\");
	same("\x1b]7;file://host/dir\x07\x1b]133;A\x07");
	same("\x1b]4;1;rgb:ff/00/00\x07\x1b]10;#ffffff\x07\x1b]11;#000000;#ffffff\x1b\\");
	same("\x1b]104\x07\x1b]110\x07\x1b]111\x1b\\");
	same("\x1b[22;0t\x1b[23;0t\x1b[2 q\x1b[>4;2m\x1b[?2026h");
	same("\x1b[4h\x1b[4l\x1b[2J\x1b[K");
	same("bell\x07 tab\t bs\x08 can\x18 sub\x1a");
}

static void test_the_clipboard_is_out_of_reach(void **state)
{
	check("a\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07"
	      "b",
	      "ab");
	check("a\x1b]52;c;?\x07"
	      "b",
	      "ab");
	check("a\x1b]52;c;?\x1b\\b", "ab");
	check("a\x1b]52;;Zm9v\x1b\\b", "ab");
	/* tmux's passthrough would carry it to the terminal outside tmux. */
	check("a\x1bPtmux;\x1b\x1b]52;c;Zm9v\x07\x1b\\b", "a\x1b\\b");
}

static void test_queries_that_leak_or_act_are_dropped(void **state)
{
	/* Colour queries (the settings pass). */
	check("\x1b]4;1;?\x07x", "x");
	check("\x1b]10;?\x07x", "x");
	check("\x1b]11;#000000;?\x1b\\x", "x");
	/* Fonts, X properties, xterm's log file, iTerm2's files, notifications. */
	check("\x1b]50;?\x07\x1b]3;WM_NAME=x\x07\x1b]46;/tmp/log\x07\x1b]1337;File=x\x07"
	      "\x1b]9;hi\x07\x1b]777;notify;a;b\x07x",
	      "x");
	/* DECRQSS, XTGETTCAP, kitty's graphics, SOS, PM. */
	check("\x1bP$qm\x1b\\\x1bP+q544e\x1b\\\x1b_Ga=q;x\x1b\\\x1bXsos\x1b\\\x1b^pm\x1b\\x", "x");
	/* Title report, window moves, resize, iconify; media copy; DECRQCRA; KAM; DSR 5. */
	check("\x1b[21t\x1b[20t\x1b[3;0;0t\x1b[8;50;100t\x1b[2t\x1b[9;1t\x1b[>0tx", "x");
	check("\x1b[5i\x1b[0i\x1b[?5ix", "x");
	check("\x1b[1;1;1;1;10;10*yx", "x");
	check("\x1b[2hx\x1b[4;2h", "x");
	check("\x1b[5nx", "x");
	/* Leaving UTF-8. */
	check("\x1b%@x\x1b%Gy", "xy");
}

static void test_c1_controls_are_dropped_wherever_text_goes(void **state)
{
	check("a\xc2\x9d"
	      "52;c;Zm9v\x07"
	      "b",
	      "a52;c;Zm9v\x07"
	      "b");
	check("a\xc2\x9b"
	      "21tb",
	      "a21tb");
	check("a\x9d\x9b\x90z", "az");
	/* In a title that passes: a terminal could end the string at U+009C and start another. */
	check("\x1b]0;t\xc2\x9c\xc2\x9d"
	      "52;c;x\x07",
	      "\x1b]0;t52;c;x\x07");
	/* Continuation bytes of a character are not controls. */
	same("\xe2\x80\x9c quotes \xe2\x80\x9d");
}

static void test_harmless_answers_pass_and_are_noted(void **state)
{
	static const char *const queries[] = {"\x1b[c",
	                                      "\x1b[>c",
	                                      "\x1b[6n",
	                                      "\x1b[?6n",
	                                      "\x1b[>q",
	                                      "\x1b[?2026$p",
	                                      "\x1b[?u",
	                                      "\x1b[18t",
	                                      "\x1b"
	                                      "Z"};
	char out[OUT_MAX];
	bool queried;

	for (size_t i = 0; i < sizeof(queries) / sizeof(queries[0]); i++) {
		size_t n = filtered(queries[i], strlen(queries[i]), 0, out, &queried);

		assert_int_equal(n, strlen(queries[i]));
		assert_memory_equal(out, queries[i], n);
		assert_true(queried);
	}
	filtered("\x1b[1mtext\x1b]0;t\x07", 14, 0, out, &queried);
	assert_false(queried);
}

static void test_a_string_cut_short_is_ended_for_the_terminal(void **state)
{
	/* The title string passes as it comes; the CSI that cuts it is ours to end it first. */
	check("\x1b]0;title\x1b[31mx", "\x1b]0;title\x18\x1b[31mx");
	check("\x1b]0;title\x1b]52;c;?\x07x", "\x1b]0;title\x18x");
	/* Held ones never reached the terminal. */
	check("\x1b]4;1;rgb:0/0/0\x1b[31mx", "\x1b[31mx");
	check("\x1b[12\x1b[31mx", "\x1b[31mx");
	check("\x1b[12\x18x", "x");
}

static void test_what_is_too_long_to_hold_is_dropped_whole(void **state)
{
	char in[3 * VT_FILTER_HOLD_MAX], out[OUT_MAX];
	size_t n = 0, got;

	n += (size_t)sprintf(in, "\x1b[");
	while (n < 2 * VT_FILTER_HOLD_MAX)
		in[n++] = ';';
	n += (size_t)sprintf(in + n, "21tok");
	got = filtered(in, n, 0, out, NULL);
	assert_int_equal(got, 2);
	assert_memory_equal(out, "ok", 2);

	n = (size_t)sprintf(in, "\x1b]4;");
	while (n < 2 * VT_FILTER_HOLD_MAX)
		in[n++] = '1';
	n += (size_t)sprintf(in + n, ";?\x07ok");
	got = filtered(in, n, 7, out, NULL);
	assert_int_equal(got, 2);
	assert_memory_equal(out, "ok", 2);
}

/* Whatever comes, the filter writes no more than it said it might (VT_FILTER_OUT_MAX). */
static void test_random_bytes_stay_within_the_output_bound(void **state)
{
	/* The worst case: a title cut off by another, again and again. */
	{
		static const char worst[] = "\x1b]0;\x1b]0;\x1b]0;\x1b]0;\x1b]0;\x1b]0;\x1b]0;";
		unsigned char out[VT_FILTER_OUT_MAX(sizeof(worst), 0)];
		struct vt_filter w;
		size_t n;

		vt_filter_init(&w);
		n = vt_filter_feed(&w, worst, sizeof(worst) - 1, out);
		assert_true(n <= VT_FILTER_OUT_MAX(sizeof(worst) - 1, 0));
		assert_true(n > sizeof(worst) - 1 - 4); /* the CANs do come */
	}
	static const char alphabet[] = "\x1b\x1b\x1b[]P\\\x07\x18;?0125:%c\xc2\x9c\x9d\xe2\x80 a";
	struct vt_filter f;
	unsigned seed = 12345;

	vt_filter_init(&f);
	for (int round = 0; round < 20000; round++) {
		char in[64];
		unsigned char out[VT_FILTER_OUT_MAX(sizeof(in), VT_FILTER_HOLD_MAX) + 16];
		size_t len = (size_t)(rand_r(&seed) % sizeof(in)) + 1;
		size_t bound = VT_FILTER_OUT_MAX(len, vt_filter_held(&f)), n;

		for (size_t i = 0; i < len; i++)
			in[i] = alphabet[(size_t)rand_r(&seed) % (sizeof(alphabet) - 1)];
		memset(out, 0xaa, sizeof(out));
		n = vt_filter_feed(&f, in, len, out);
		assert_true(n <= bound);
		for (size_t i = bound; i < sizeof(out); i++)
			assert_int_equal(out[i], 0xaa);
		/* Never a clipboard string or C1 control in what passes. */
		for (size_t i = 0; i + 1 < n; i++)
			assert_false(out[i] == 0xc2 && out[i + 1] >= 0x80 && out[i + 1] <= 0x9f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_a_screen_passes_as_it_is),
	        cmocka_unit_test(test_the_clipboard_is_out_of_reach),
	        cmocka_unit_test(test_queries_that_leak_or_act_are_dropped),
	        cmocka_unit_test(test_c1_controls_are_dropped_wherever_text_goes),
	        cmocka_unit_test(test_harmless_answers_pass_and_are_noted),
	        cmocka_unit_test(test_a_string_cut_short_is_ended_for_the_terminal),
	        cmocka_unit_test(test_what_is_too_long_to_hold_is_dropped_whole),
	        cmocka_unit_test(test_random_bytes_stay_within_the_output_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
