/* The two byte streams of a terminal, read as far as drawing a prompt over an agent's screen
 * needs, and no further (the terminal is never emulated). Pure: no fds, no clocks.
 *
 * Output (what the agent writes, on its way to the user's terminal): where the stream stands
 * in an escape sequence or a UTF-8 character, so that a prompt goes in between two of them and
 * never into one; and the modes the agent set that a prompt changes: the alternate screen,
 * cursor visibility, insert mode, autowrap, the scroll region, bracketed paste, redefined
 * colors. From these, the bytes that take the screen for a prompt and give it back: on the
 * main screen the prompt goes to the alternate screen, which the terminal restores exactly;
 * an agent already on the alternate screen (vim, less, full-screen TUIs) must redraw
 * afterwards (vt_output_needs_redraw).
 *
 * Input (what the person types): the keys, without escape sequences (arrows, function keys,
 * mouse reports, the terminal's answers to queries) and without bracketed pastes, so that
 * neither a stray report nor pasted text answers a prompt.
 *
 * The states follow the DEC/ECMA-48 parser (CAN and SUB abort any sequence, ESC starts one
 * anywhere, strings end with BEL or ST). */
#ifndef CLOISTER_VT_PARSE_H
#define CLOISTER_VT_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VT_MAX_PARAMS 16

struct vt_output {
	uint8_t state;
	uint8_t utf8_left;  /* continuation bytes still due */
	uint8_t private_;   /* '?', '>'… before a CSI's parameters, or 0 */
	uint8_t n_params;   /* parameters seen so far (the current one included) */
	bool param_started; /* a digit of the current parameter was seen */
	bool intermediate;  /* the CSI has an intermediate byte: not one we track */
	uint32_t params[VT_MAX_PARAMS];
	uint32_t osc_number; /* the leading number of an OSC string */
	bool osc_number_done;
	bool in_osc;
	/* what the agent set */
	bool alt_screen;
	bool cursor_hidden;
	bool insert_mode;
	bool no_autowrap;
	bool bracketed_paste;
	bool colors_changed; /* OSC 4/10-19/104/110-119: palette or default colors */
	bool reports;        /* mouse or focus reporting turned on: the terminal types reports */
	bool kitty_keys;     /* kitty's keyboard protocol flags pushed or set */
	uint32_t margin_top, margin_bottom; /* 0: the whole screen */
	bool at_line_start;                 /* the last character was a newline */
};

void vt_output_init(struct vt_output *vt);

/* Account for LEN bytes written to the terminal. */
void vt_output_feed(struct vt_output *vt, const void *buf, size_t len);

/* Not inside an escape sequence, a string or a UTF-8 character. */
bool vt_output_at_ground(const struct vt_output *vt);

/* How many bytes of BUF, fed from VT's state, bring the stream to ground: 0 when it is there
 * already, SIZE_MAX when BUF does not get it there. VT is not changed. */
size_t vt_output_ground_after(const struct vt_output *vt, const void *buf, size_t len);

/* The prompt is drawn inline (below the agent's output, in the normal flow of lines) instead
 * of on a screen of its own: for terminals without an alternate screen. */
enum vt_prompt_style {
	VT_PROMPT_SCREEN = 0,
	VT_PROMPT_INLINE,
};

/* The bytes that take the terminal for a prompt: abort any sequence the terminal may think it
 * is in, switch to a screen of our own (or, inline, start a new line), reset what would make
 * the prompt unreadable (attributes, character set, insert and origin modes, the scroll
 * region, hidden cursor, redefined colors) and turn bracketed paste on. Into BUF (SIZE bytes,
 * NUL-terminated); returns the length, or the length it needs (like snprintf). */
size_t vt_output_prompt_enter(const struct vt_output *vt, enum vt_prompt_style style, char *buf,
                              size_t size);

/* The bytes that give the screen back as the agent left it: clear the prompt, put back the
 * modes it had, leave our screen and restore the cursor and attributes. Same contract. */
size_t vt_output_prompt_leave(const struct vt_output *vt, enum vt_prompt_style style, char *buf,
                              size_t size);

/* The bytes that undo what the agent left behind when it is gone, so that the user's shell
 * does not inherit it: a sequence cut off, the alternate screen, a scroll region, insert mode,
 * no autowrap, a hidden cursor, bracketed paste, mouse and focus reports and kitty's keyboard
 * flags (the terminal would type reports and encoded keys at the shell), attributes. Same
 * contract. */
size_t vt_output_agent_gone(const struct vt_output *vt, char *buf, size_t size);

/* After a prompt in STYLE, the agent must redraw its screen (it was on the alternate screen,
 * which the prompt cleared). */
bool vt_output_needs_redraw(const struct vt_output *vt, enum vt_prompt_style style);

struct vt_input {
	uint8_t state;
	uint8_t skip;     /* raw bytes of an X10 mouse report still to skip */
	uint8_t n_digits; /* of a CSI's parameters, to spot 200~ and 201~ */
	uint32_t param;   /* the first parameter */
	bool param_other; /* more than one parameter, or not digits */
	bool in_paste;    /* between ESC[200~ and ESC[201~ */
};

void vt_input_init(struct vt_input *in);

/* Feed LEN typed bytes; the keys among them (bytes outside escape sequences, terminal
 * reports and bracketed pastes) are copied to KEYS, which holds LEN bytes. Returns how many. */
size_t vt_input_keys(struct vt_input *in, const void *buf, size_t len, char *keys);

#endif
