/* The terminal streams as prompts read them: where the agent's output stands in a sequence,
 * the modes it set, the bytes that take the screen and give it back, and the keys among what
 * a person types. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "supervisor/tty/vt_parse.h"

static struct vt_output fed(const char *s)
{
	struct vt_output vt;

	vt_output_init(&vt);
	vt_output_feed(&vt, s, strlen(s));
	return vt;
}

static void test_ground_is_between_sequences_and_characters(void **state)
{
	static const struct {
		const char *text;
		bool ground;
	} cases[] = {
	        {"", true},
	        {"hello\r\n", true},
	        {"\x1b", false},
	        {"\x1b[", false},
	        {"\x1b[1;3", false},
	        {"\x1b[1;31m", true},
	        {"\x1b[?1049h", true},
	        {"\x1b]0;title", false},
	        {"\x1b]0;title\x07", true},
	        {"\x1b]8;;http://x\x1b", false},
	        {"\x1b]8;;http://x\x1b\\", true},
	        {"\x1bP1$r", false},
	        {"\x1bP1$r\x07", false}, /* BEL does not end a DCS */
	        {"\x1bP1$r\x1b\\", true},
	        {"\x1b(", false},
	        {"\x1b(B", true},
	        {"\x1b"
	         "7",
	         true},
	        {"caf\xc3", false},
	        {"caf\xc3\xa9", true},
	        {"\xe2\x9c", false},
	        {"\xe2\x9c\x93", true},
	        {"\xf0\x9f\x90", false},
	        {"\xff", true},            /* not a lead byte: shown as a replacement */
	        {"\xc3x", true},           /* a broken character ends */
	        {"\x1b[12\x18", true},     /* CAN aborts */
	        {"\x1b]0;x\x1a", true},    /* SUB too */
	        {"\x1b[1\n2m", true},      /* C0 inside a CSI is executed, the CSI goes on */
	        {"\x1b[1\x1b[2", false},   /* ESC restarts */
	        {"\x1b]0;x\x1b[1m", true}, /* ESC not followed by \ ends the string */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vt_output vt = fed(cases[i].text);

		if (vt_output_at_ground(&vt) != cases[i].ground)
			fail_msg("case %zu: at ground %d, want %d", i, vt_output_at_ground(&vt),
			         cases[i].ground);
	}
}

static void test_ground_after_finds_the_first_boundary(void **state)
{
	struct vt_output vt = fed("x\x1b[3");

	assert_int_equal(vt_output_ground_after(&vt, "1mHello", 7), 2);
	assert_int_equal(vt_output_ground_after(&vt, "1;4", 3), SIZE_MAX);
	/* the state is not changed by asking */
	assert_false(vt_output_at_ground(&vt));
	vt = fed("ok");
	assert_int_equal(vt_output_ground_after(&vt, "\x1b[1m", 4), 0);
	vt = fed("\xe2");
	assert_int_equal(vt_output_ground_after(&vt, "\x9c\x93z", 3), 2);
}

static void test_modes_the_agent_sets_are_tracked(void **state)
{
	struct vt_output vt = fed("");

	assert_false(vt.alt_screen);
	assert_true(vt.at_line_start);
	vt = fed("\x1b[?1049h\x1b[?25l\x1b[4h\x1b[?7l\x1b[?2004h\x1b[3;20r");
	assert_true(vt.alt_screen);
	assert_true(vt.cursor_hidden);
	assert_true(vt.insert_mode);
	assert_true(vt.no_autowrap);
	assert_true(vt.bracketed_paste);
	assert_int_equal(vt.margin_top, 3);
	assert_int_equal(vt.margin_bottom, 20);
	assert_false(vt.colors_changed);
	/* several modes in one sequence, and reset */
	vt_output_feed(&vt, "\x1b[?1049;2004;25h\x1b[?7h\x1b[4l\x1b[r",
	               strlen("\x1b[?1049;2004;25h\x1b[?7h\x1b[4l\x1b[r"));
	vt_output_feed(&vt, "\x1b[?1049;2004l", strlen("\x1b[?1049;2004l"));
	assert_false(vt.alt_screen);
	assert_false(vt.cursor_hidden);
	assert_false(vt.insert_mode);
	assert_false(vt.no_autowrap);
	assert_false(vt.bracketed_paste);
	assert_int_equal(vt.margin_top, 0);
	/* the older alternate-screen modes */
	vt = fed("\x1b[?47h");
	assert_true(vt.alt_screen);
	vt = fed("\x1b[?1047h");
	assert_true(vt.alt_screen);
	/* a full reset */
	vt = fed("\x1b[?1049h\x1b[?25l\x1b]11;#000000\x07\x1b"
	         "c");
	assert_false(vt.alt_screen);
	assert_false(vt.cursor_hidden);
	assert_false(vt.colors_changed);
	/* private modes that are not ours, SGR, and an intermediate change nothing */
	vt = fed("\x1b[?1000h\x1b[38;2;1;2;3m\x1b[4 q\x1b[>4h");
	assert_false(vt.insert_mode);
	assert_false(vt.alt_screen);
	/* colors */
	vt = fed("\x1b]10;#ffffff\x1b\\");
	assert_true(vt.colors_changed);
	vt = fed("\x1b]4;1;rgb:00/00/00\x07");
	assert_true(vt.colors_changed);
	vt = fed("\x1b]0;title 11\x07\x1b]2;x\x07\x1b]8;;u\x07");
	assert_false(vt.colors_changed);
	/* line starts */
	vt = fed("text\r\n");
	assert_true(vt.at_line_start);
	vt = fed("text\r");
	assert_false(vt.at_line_start);
	vt = fed("\n\x1b[1m");
	assert_true(vt.at_line_start);
}

static void test_overlong_parameters_are_bounded(void **state)
{
	char big[400];
	struct vt_output vt;

	/* more parameters than kept: the ones kept still count, nothing overflows */
	snprintf(big, sizeof(big), "\x1b[?1;2;3;4;5;6;7;8;9;10;11;12;13;14;15;16;17;18;1049h");
	vt = fed(big);
	assert_true(vt_output_at_ground(&vt));
	assert_false(vt.alt_screen); /* the 19th parameter is beyond what is kept */
	memset(big, '9', sizeof(big) - 2);
	big[0] = '\x1b';
	big[1] = '[';
	big[sizeof(big) - 2] = 'r';
	big[sizeof(big) - 1] = '\0';
	vt = fed(big);
	assert_true(vt_output_at_ground(&vt));
	assert_int_equal(vt.margin_top, 99999);
}

static void test_prompt_on_the_main_screen_uses_the_alternate_screen(void **state)
{
	struct vt_output vt = fed("$ ls\r\nfile\r\n$ ");
	char enter[512], leave[512];

	assert_true(vt_output_prompt_enter(&vt, VT_PROMPT_SCREEN, enter, sizeof(enter)) <
	            sizeof(enter));
	assert_true(vt_output_prompt_leave(&vt, VT_PROMPT_SCREEN, leave, sizeof(leave)) <
	            sizeof(leave));
	assert_int_equal(enter[0], '\x18');
	assert_non_null(strstr(enter, "\x1b[?1049h"));
	assert_non_null(strstr(enter, "\x1b[0m"));
	assert_non_null(strstr(enter, "\x1b[?25h"));
	assert_non_null(strstr(enter, "\x1b[?2004h"));
	assert_non_null(strstr(enter, "\x1b[H\x1b[2J"));
	assert_null(strstr(enter, "\x1b]110"));
	/* leaving: paste off again (the agent had it off), then the main screen and cursor */
	assert_non_null(strstr(leave, "\x1b[?2004l"));
	assert_true(strlen(leave) >= 8 && !strcmp(leave + strlen(leave) - 8, "\x1b[?1049l"));
	assert_false(vt_output_needs_redraw(&vt, VT_PROMPT_SCREEN));
}

static void test_prompt_over_a_full_screen_agent_restores_its_modes(void **state)
{
	struct vt_output vt = fed("\x1b[?1049h\x1b[?25l\x1b[2;23r\x1b[4h\x1b[?7l\x1b[?2004h"
	                          "\x1b]11;#101010\x07\x1b[5;5Hvim");
	char enter[512], leave[512];

	vt_output_prompt_enter(&vt, VT_PROMPT_SCREEN, enter, sizeof(enter));
	vt_output_prompt_leave(&vt, VT_PROMPT_SCREEN, leave, sizeof(leave));
	/* already on the alternate screen: save the cursor, clear, reset */
	assert_null(strstr(enter, "1049"));
	assert_non_null(strstr(enter, "\x1b"
	                              "7"));
	assert_non_null(strstr(enter, "\x1b[r"));
	assert_non_null(strstr(enter, "\x1b[4l"));
	assert_non_null(strstr(enter, "\x1b[?7h"));
	assert_non_null(strstr(enter, "\x1b]111\x07"));
	/* back: the agent's margins, insert mode, no autowrap, hidden cursor, its paste mode
	 * left on; the cursor last */
	assert_non_null(strstr(leave, "\x1b[2;23r"));
	assert_non_null(strstr(leave, "\x1b[4h"));
	assert_non_null(strstr(leave, "\x1b[?7l"));
	assert_non_null(strstr(leave, "\x1b[?25l"));
	assert_null(strstr(leave, "2004"));
	assert_true(strlen(leave) >= 2 && !strcmp(leave + strlen(leave) - 2, "\x1b"
	                                                                     "8"));
	assert_true(vt_output_needs_redraw(&vt, VT_PROMPT_SCREEN));
	assert_false(vt_output_needs_redraw(&vt, VT_PROMPT_INLINE));
}

static void test_inline_prompts_start_on_a_new_line(void **state)
{
	struct vt_output vt = fed("partial line");
	char enter[512], leave[512];

	vt_output_prompt_enter(&vt, VT_PROMPT_INLINE, enter, sizeof(enter));
	vt_output_prompt_leave(&vt, VT_PROMPT_INLINE, leave, sizeof(leave));
	assert_null(strstr(enter, "1049"));
	assert_null(strstr(enter, "\x1b[2J"));
	assert_true(strlen(enter) >= 2 && !strcmp(enter + strlen(enter) - 2, "\r\n"));
	assert_null(strstr(leave, "1049"));
	vt = fed("whole line\r\n");
	vt_output_prompt_enter(&vt, VT_PROMPT_INLINE, enter, sizeof(enter));
	assert_false(strlen(enter) >= 2 && !strcmp(enter + strlen(enter) - 2, "\r\n"));
}

static void test_prompt_bytes_report_the_size_they_need(void **state)
{
	struct vt_output vt = fed("\x1b[?1049h\x1b]4;1;red\x07\x1b[3;9r");
	char small[8], big[512];
	size_t need = vt_output_prompt_enter(&vt, VT_PROMPT_SCREEN, small, sizeof(small));

	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_int_equal(vt_output_prompt_enter(&vt, VT_PROMPT_SCREEN, big, sizeof(big)), need);
	assert_int_equal(strlen(big), need);
	need = vt_output_prompt_leave(&vt, VT_PROMPT_SCREEN, NULL, 0);
	assert_int_equal(vt_output_prompt_leave(&vt, VT_PROMPT_SCREEN, big, sizeof(big)), need);
}

static void test_what_a_gone_agent_left_is_undone(void **state)
{
	struct vt_output vt = fed("$ ls\r\n");
	char buf[256];

	/* a well-behaved agent: nothing to undo */
	assert_int_equal(vt_output_agent_gone(&vt, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	/* a crashed full-screen one, cut off inside a sequence */
	vt = fed("\x1b[?1049h\x1b[?25l\x1b[2;20r\x1b[4h\x1b[?7l\x1b[?2004h\x1b[38;5");
	vt_output_agent_gone(&vt, buf, sizeof(buf));
	assert_int_equal(buf[0], '\x18');
	assert_non_null(strstr(buf, "\x1b[?1049l"));
	assert_non_null(strstr(buf, "\x1b[r"));
	assert_non_null(strstr(buf, "\x1b[4l"));
	assert_non_null(strstr(buf, "\x1b[?7h"));
	assert_non_null(strstr(buf, "\x1b[?25h"));
	assert_non_null(strstr(buf, "\x1b[?2004l"));
	assert_non_null(strstr(buf, "\x1b[0m"));
	assert_null(strstr(buf, "\x1b[?1000l"));
	/* reports the terminal would type at the shell: mouse, focus; kitty's encoded keys */
	vt = fed("\x1b[?1002h\x1b[?1006h\x1b[?1004h\x1b[>1u");
	vt_output_agent_gone(&vt, buf, sizeof(buf));
	assert_non_null(strstr(buf, "\x1b[?1002l"));
	assert_non_null(strstr(buf, "\x1b[?1006l"));
	assert_non_null(strstr(buf, "\x1b[?1004l"));
	assert_non_null(strstr(buf, "\x1b[<999u"));
}

static size_t keys_of(struct vt_input *in, const char *typed, char *keys)
{
	size_t n = vt_input_keys(in, typed, strlen(typed), keys);

	keys[n] = '\0';
	return n;
}

static void test_keys_are_what_is_typed_outside_sequences_and_pastes(void **state)
{
	static const struct {
		const char *typed, *keys;
	} cases[] = {
	        {"a", "a"},
	        {"aAd?", "aAd?"},
	        {"\x03", "\x03"},
	        {"\r", "\r"},
	        {"\x1b[A\x1b[B\x1bOC", ""},               /* arrows, both modes */
	        {"\x1b[15~\x1b[1;5A", ""},                /* F5, Ctrl-Up */
	        {"\x1b[12;40R", ""},                      /* a cursor position report */
	        {"\x1b]11;rgb:0000/0000/0000\x1b\\", ""}, /* a color report */
	        {"\x1b]11;rgb:0/0/0\x07", ""},
	        {"\x1bP1$r0m\x1b\\", ""},             /* a DCS report */
	        {"\x1b[<0;65;10M\x1b[<0;65;10m", ""}, /* SGR mouse */
	        {"\x1b[M a!", ""},                    /* X10 mouse: "a" is the column */
	        {"\x1b[200~allow a A\x1b[201~", ""},  /* a bracketed paste */
	        {"\x1b[200~a\x1b[Ab\x1b[201~d", "d"}, /* sequences inside a paste too */
	        {"\x1b"
	         "a",
	         ""}, /* Alt+a */
	        {"x\x1b[Dy", "xy"},
	        {"\xc3\xa9", "\xc3\xa9"}, /* typed UTF-8: keys (not answers) */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vt_input in;
		char keys[128];

		vt_input_init(&in);
		keys_of(&in, cases[i].typed, keys);
		if (strcmp(keys, cases[i].keys) != 0)
			fail_msg("case %zu: keys '%s', want '%s'", i, keys, cases[i].keys);
	}
}

static void test_keys_are_found_across_reads(void **state)
{
	struct vt_input in;
	char keys[16];

	vt_input_init(&in);
	assert_int_equal(keys_of(&in, "\x1b", keys), 0);
	assert_int_equal(keys_of(&in, "[", keys), 0);
	assert_int_equal(keys_of(&in, "A", keys), 0);
	assert_int_equal(keys_of(&in, "a", keys), 1);
	assert_int_equal(keys_of(&in, "\x1b[20", keys), 0);
	assert_int_equal(keys_of(&in, "0~a", keys), 0);
	assert_int_equal(keys_of(&in, "A\x1b[201", keys), 0);
	assert_int_equal(keys_of(&in, "~A", keys), 1);
	assert_string_equal(keys, "A");
	assert_int_equal(keys_of(&in, "\x1b[M", keys), 0);
	assert_int_equal(keys_of(&in, " a", keys), 0);
	assert_int_equal(keys_of(&in, "!d", keys), 1);
	assert_string_equal(keys, "d");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_ground_is_between_sequences_and_characters),
	        cmocka_unit_test(test_ground_after_finds_the_first_boundary),
	        cmocka_unit_test(test_modes_the_agent_sets_are_tracked),
	        cmocka_unit_test(test_overlong_parameters_are_bounded),
	        cmocka_unit_test(test_prompt_on_the_main_screen_uses_the_alternate_screen),
	        cmocka_unit_test(test_prompt_over_a_full_screen_agent_restores_its_modes),
	        cmocka_unit_test(test_inline_prompts_start_on_a_new_line),
	        cmocka_unit_test(test_prompt_bytes_report_the_size_they_need),
	        cmocka_unit_test(test_what_a_gone_agent_left_is_undone),
	        cmocka_unit_test(test_keys_are_what_is_typed_outside_sequences_and_pastes),
	        cmocka_unit_test(test_keys_are_found_across_reads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
