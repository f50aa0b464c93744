/* A terminal's two byte streams, read as far as prompts need; see vt_parse.h. */
#include "supervisor/tty/vt_parse.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define ESC 0x1b
#define CAN 0x18
#define SUB 0x1a
#define BEL 0x07

#define PARAM_MAX 99999u /* beyond any mode or line number; keeps the sums in range */

enum {
	S_GROUND = 0,
	S_UTF8,       /* inside a UTF-8 character */
	S_ESC,        /* after ESC */
	S_ESC_INTER,  /* ESC and intermediate bytes: ends with the next final byte */
	S_CSI,        /* ESC [ … */
	S_CSI_IGNORE, /* a malformed CSI: skipped to its final byte */
	S_STRING,     /* OSC, DCS, SOS, PM, APC: ends with ST (OSC also with BEL) */
	S_STRING_ESC, /* ESC inside a string: ST when a backslash follows */
	S_SS3,        /* input only: ESC O and one byte */
	S_SKIP,       /* input only: the three raw bytes of an X10 mouse report */
};

/* ---- output ------------------------------------------------------------------------------ */

static void reset_modes(struct vt_output *vt)
{
	vt->alt_screen = vt->cursor_hidden = vt->insert_mode = vt->no_autowrap = false;
	vt->bracketed_paste = vt->colors_changed = false;
	vt->reports = vt->kitty_keys = false;
	vt->margin_top = vt->margin_bottom = 0;
}

void vt_output_init(struct vt_output *vt)
{
	memset(vt, 0, sizeof(*vt));
	vt->state = S_GROUND;
	vt->at_line_start = true;
}

static bool is_color_osc(uint32_t n)
{
	return n == 4 || n == 5 || (n >= 10 && n <= 19) || n == 104 || n == 105 ||
	       (n >= 110 && n <= 119);
}

static void enter_esc(struct vt_output *vt)
{
	vt->state = S_ESC;
	vt->utf8_left = 0;
}

static void csi_dispatch(struct vt_output *vt, uint8_t final)
{
	bool set = final == 'h';

	if (vt->intermediate)
		return;
	if (vt->private_ == '?' && (final == 'h' || final == 'l')) {
		for (unsigned i = 0; i < vt->n_params; i++) {
			switch (vt->params[i]) {
			case 47:
			case 1047:
			case 1049:
				vt->alt_screen = set;
				break;
			case 25:
				vt->cursor_hidden = !set;
				break;
			case 7:
				vt->no_autowrap = !set;
				break;
			case 2004:
				vt->bracketed_paste = set;
				break;
			case 9:
			case 1000:
			case 1001:
			case 1002:
			case 1003:
			case 1004:
			case 1005:
			case 1006:
			case 1015:
			case 1016:
				vt->reports |= set; /* all are turned off at the end */
				break;
			default:
				break;
			}
		}
	} else if (vt->private_ == 0 && (final == 'h' || final == 'l')) {
		for (unsigned i = 0; i < vt->n_params; i++)
			if (vt->params[i] == 4)
				vt->insert_mode = set;
	} else if ((vt->private_ == '>' || vt->private_ == '=') && final == 'u') {
		vt->kitty_keys = true;
	} else if (vt->private_ == 0 && final == 'r') {
		uint32_t top = vt->n_params > 0 ? vt->params[0] : 0;
		uint32_t bottom = vt->n_params > 1 ? vt->params[1] : 0;

		if (top <= 1 && bottom == 0)
			top = 0; /* the whole screen */
		vt->margin_top = top;
		vt->margin_bottom = top ? bottom : 0;
	}
}

static void ground_byte(struct vt_output *vt, uint8_t c)
{
	if (c < 0x20) {
		if (c == '\n')
			vt->at_line_start = true;
		else if (c != '\r' && c != BEL)
			vt->at_line_start = false;
		return;
	}
	if (c == 0x7f)
		return;
	vt->at_line_start = false;
	if (c < 0x80)
		return;
	if (c >= 0xc2 && c <= 0xdf)
		vt->utf8_left = 1;
	else if (c >= 0xe0 && c <= 0xef)
		vt->utf8_left = 2;
	else if (c >= 0xf0 && c <= 0xf4)
		vt->utf8_left = 3;
	else
		return; /* not a lead byte: the terminal shows a replacement character */
	vt->state = S_UTF8;
}

static void osc_number_end(struct vt_output *vt)
{
	if (vt->in_osc && !vt->osc_number_done && is_color_osc(vt->osc_number))
		vt->colors_changed = true;
	vt->osc_number_done = true;
}

static void out_byte(struct vt_output *vt, uint8_t c)
{
	/* From anywhere: CAN and SUB abort, ESC starts a sequence (in a string, maybe ST). */
	if (c == CAN || c == SUB) {
		vt->state = S_GROUND;
		vt->utf8_left = 0;
		return;
	}
	if (c == ESC) {
		if (vt->state == S_STRING)
			vt->state = S_STRING_ESC;
		else
			enter_esc(vt);
		return;
	}
	switch (vt->state) {
	case S_GROUND:
		ground_byte(vt, c);
		return;
	case S_UTF8:
		if (c >= 0x80 && c <= 0xbf) {
			if (--vt->utf8_left == 0)
				vt->state = S_GROUND;
			return;
		}
		/* A broken character: the terminal shows a replacement, then this byte. */
		vt->utf8_left = 0;
		vt->state = S_GROUND;
		ground_byte(vt, c);
		return;
	case S_STRING_ESC:
		if (c == '\\') {
			osc_number_end(vt);
			vt->state = S_GROUND;
			return;
		}
		/* Not ST: the string ended and this ESC starts a sequence. */
		osc_number_end(vt);
		enter_esc(vt);
		out_byte(vt, c);
		return;
	case S_ESC:
		if (c < 0x20 || c == 0x7f)
			return; /* executed or ignored, the sequence goes on */
		if (c <= 0x2f) {
			vt->state = S_ESC_INTER;
			return;
		}
		if (c == '[') {
			vt->state = S_CSI;
			vt->private_ = 0;
			vt->n_params = 0;
			vt->param_started = false;
			vt->intermediate = false;
			vt->params[0] = 0;
			return;
		}
		if (c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_') {
			vt->state = S_STRING;
			vt->in_osc = c == ']';
			vt->osc_number = 0;
			vt->osc_number_done = false;
			return;
		}
		if (c == 'c')
			reset_modes(vt); /* RIS */
		vt->state = S_GROUND;
		return;
	case S_ESC_INTER:
		if (c >= 0x30 && c <= 0x7e)
			vt->state = S_GROUND;
		return;
	case S_CSI:
		if (c < 0x20 || c == 0x7f)
			return;
		if (c >= '0' && c <= '9') {
			if (vt->n_params == 0)
				vt->n_params = 1;
			if (vt->n_params <= VT_MAX_PARAMS) {
				uint32_t *p = &vt->params[vt->n_params - 1];
				*p = *p * 10 + (uint32_t)(c - '0');
				if (*p > PARAM_MAX)
					*p = PARAM_MAX;
			}
			vt->param_started = true;
			return;
		}
		if (c == ';' || c == ':') {
			if (vt->n_params == 0)
				vt->n_params = 1;
			if (vt->n_params < VT_MAX_PARAMS)
				vt->params[vt->n_params] = 0;
			if (vt->n_params <= VT_MAX_PARAMS)
				vt->n_params++;
			return;
		}
		if (c >= 0x3c && c <= 0x3f) {
			if (vt->n_params == 0 && !vt->private_)
				vt->private_ = c;
			else
				vt->state = S_CSI_IGNORE;
			return;
		}
		if (c >= 0x20 && c <= 0x2f) {
			vt->intermediate = true;
			return;
		}
		if (c >= 0x40 && c <= 0x7e) {
			if (vt->n_params > VT_MAX_PARAMS)
				vt->n_params = VT_MAX_PARAMS;
			csi_dispatch(vt, c);
			vt->state = S_GROUND;
			return;
		}
		vt->state = S_CSI_IGNORE;
		return;
	case S_CSI_IGNORE:
		if (c >= 0x40 && c <= 0x7e)
			vt->state = S_GROUND;
		return;
	case S_STRING:
		if (c == BEL && vt->in_osc) {
			osc_number_end(vt);
			vt->state = S_GROUND;
			return;
		}
		if (vt->in_osc && !vt->osc_number_done) {
			if (c >= '0' && c <= '9' && vt->osc_number < PARAM_MAX)
				vt->osc_number = vt->osc_number * 10 + (uint32_t)(c - '0');
			else
				osc_number_end(vt);
		}
		return;
	default:
		vt->state = S_GROUND;
		return;
	}
}

void vt_output_feed(struct vt_output *vt, const void *buf, size_t len)
{
	const uint8_t *p = buf, *end = p + len;

	while (p < end) {
		/* The common case, printable ASCII in ground state, without the state machine. */
		if (vt->state == S_GROUND && *p >= 0x20 && *p < 0x7f) {
			while (p < end && *p >= 0x20 && *p < 0x7f)
				p++;
			vt->at_line_start = false;
			continue;
		}
		out_byte(vt, *p++);
	}
}

bool vt_output_at_ground(const struct vt_output *vt)
{
	return vt->state == S_GROUND;
}

size_t vt_output_ground_after(const struct vt_output *vt, const void *buf, size_t len)
{
	struct vt_output copy = *vt;
	const uint8_t *p = buf;

	if (copy.state == S_GROUND)
		return 0;
	for (size_t i = 0; i < len; i++) {
		out_byte(&copy, p[i]);
		if (copy.state == S_GROUND)
			return i + 1;
	}
	return SIZE_MAX;
}

struct out {
	char *buf;
	size_t size, len;
};

__attribute__((format(printf, 2, 3))) static void add(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(o->len < o->size ? o->buf + o->len : NULL,
	              o->len < o->size ? o->size - o->len : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n;
}

size_t vt_output_prompt_enter(const struct vt_output *vt, enum vt_prompt_style style, char *buf,
                              size_t size)
{
	struct out o = {buf, size, 0};

	if (size)
		buf[0] = '\0';
	/* Whatever the terminal thinks it is in (a sequence we read otherwise), it is not. */
	add(&o, "\x18");
	if (style == VT_PROMPT_SCREEN)
		add(&o, vt->alt_screen ? "\x1b"
		                         "7"
		                       : "\x1b[?1049h");
	/* Scroll region and origin mode first (they move the cursor), then what would make the
	 * prompt unreadable or unanswerable: attributes, the G0 character set, insert mode, no
	 * autowrap, a hidden cursor, colors the agent redefined; bracketed paste on, so that a
	 * paste is not taken for keys. */
	if (vt->margin_top)
		add(&o, "\x1b[r");
	add(&o, "\x1b[?6l\x1b[0m\x1b(B\x0f\x1b[4l\x1b[?7h\x1b[?25h\x1b[?2004h");
	if (vt->colors_changed)
		add(&o, "\x1b]104\x07\x1b]110\x07\x1b]111\x07\x1b]112\x07");
	if (style == VT_PROMPT_SCREEN)
		add(&o, "\x1b[H\x1b[2J");
	else if (!vt->at_line_start)
		add(&o, "\r\n");
	return o.len;
}

size_t vt_output_prompt_leave(const struct vt_output *vt, enum vt_prompt_style style, char *buf,
                              size_t size)
{
	struct out o = {buf, size, 0};

	if (size)
		buf[0] = '\0';
	if (style == VT_PROMPT_SCREEN && vt->alt_screen)
		add(&o, "\x1b[H\x1b[2J"); /* the agent's screen, which it must redraw */
	if (vt->margin_top && vt->margin_bottom)
		add(&o, "\x1b[%u;%ur", (unsigned)vt->margin_top, (unsigned)vt->margin_bottom);
	else if (vt->margin_top)
		add(&o, "\x1b[%ur", (unsigned)vt->margin_top);
	if (vt->insert_mode)
		add(&o, "\x1b[4h");
	if (vt->no_autowrap)
		add(&o, "\x1b[?7l");
	if (vt->cursor_hidden)
		add(&o, "\x1b[?25l");
	if (!vt->bracketed_paste)
		add(&o, "\x1b[?2004l");
	/* The cursor, its attributes, character set and origin mode as they were. */
	if (style == VT_PROMPT_SCREEN)
		add(&o, vt->alt_screen ? "\x1b"
		                         "8"
		                       : "\x1b[?1049l");
	return o.len;
}

size_t vt_output_agent_gone(const struct vt_output *vt, char *buf, size_t size)
{
	struct out o = {buf, size, 0};

	if (size)
		buf[0] = '\0';
	if (vt->state != S_GROUND)
		add(&o, "\x18");
	if (vt->alt_screen)
		add(&o, "\x1b[?1049l");
	if (vt->margin_top)
		add(&o, "\x1b[r");
	if (vt->insert_mode)
		add(&o, "\x1b[4l");
	if (vt->no_autowrap)
		add(&o, "\x1b[?7h");
	if (vt->cursor_hidden)
		add(&o, "\x1b[?25h");
	if (vt->bracketed_paste)
		add(&o, "\x1b[?2004l");
	if (vt->reports)
		add(&o, "\x1b[?9l\x1b[?1000l\x1b[?1001l\x1b[?1002l\x1b[?1003l\x1b[?1004l\x1b[?1005l"
		        "\x1b[?1006l\x1b[?1015l\x1b[?1016l");
	if (vt->kitty_keys)
		add(&o, "\x1b[<999u"); /* pops every entry: the stack is empty, the flags reset */
	if (o.len)
		add(&o, "\x1b[0m");
	return o.len;
}

bool vt_output_needs_redraw(const struct vt_output *vt, enum vt_prompt_style style)
{
	return style == VT_PROMPT_SCREEN && vt->alt_screen;
}

/* ---- input ------------------------------------------------------------------------------- */

void vt_input_init(struct vt_input *in)
{
	memset(in, 0, sizeof(*in));
	in->state = S_GROUND;
}

static bool in_byte(struct vt_input *in, uint8_t c)
{
	if (in->state == S_SKIP) {
		if (--in->skip == 0)
			in->state = S_GROUND;
		return false;
	}
	if (c == CAN || c == SUB) {
		in->state = S_GROUND;
		return false;
	}
	if (c == ESC) {
		in->state = in->state == S_STRING ? S_STRING_ESC : S_ESC;
		return false;
	}
	switch (in->state) {
	case S_GROUND:
		return !in->in_paste;
	case S_ESC:
		if (c == '[') {
			in->state = S_CSI;
			in->param = 0;
			in->n_digits = 0;
			in->param_other = false;
		} else if (c == 'O') {
			in->state = S_SS3;
		} else if (c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_') {
			in->state = S_STRING;
		} else if (c >= 0x20 && c <= 0x2f) {
			in->state = S_ESC_INTER;
		} else {
			in->state = S_GROUND; /* Alt+key, or the Escape key and the next one */
		}
		return false;
	case S_ESC_INTER:
		if (c >= 0x30 && c <= 0x7e)
			in->state = S_GROUND;
		return false;
	case S_SS3:
		in->state = S_GROUND;
		return false;
	case S_CSI:
		if (c >= '0' && c <= '9') {
			if (in->n_digits < 6)
				in->param = in->param * 10 + (uint32_t)(c - '0');
			in->n_digits++;
		} else if (c >= 0x40 && c <= 0x7e) {
			in->state = S_GROUND;
			if (c == 'M' && in->n_digits == 0 && !in->param_other) {
				in->state =
				        S_SKIP; /* X10 mouse: button, column, row as raw bytes */
				in->skip = 3;
			} else if (c == '~' && !in->param_other && in->param == 200) {
				in->in_paste = true;
			} else if (c == '~' && !in->param_other && in->param == 201) {
				in->in_paste = false;
			}
		} else if (c >= 0x20) {
			in->param_other = true; /* ';', private markers, intermediates */
		}
		return false;
	case S_STRING:
		if (c == BEL)
			in->state = S_GROUND;
		return false;
	case S_STRING_ESC:
		if (c == '\\') {
			in->state = S_GROUND;
			return false;
		}
		in->state = S_ESC;
		return in_byte(in, c);
	default:
		in->state = S_GROUND;
		return false;
	}
}

size_t vt_input_keys(struct vt_input *in, const void *buf, size_t len, char *keys)
{
	const uint8_t *p = buf;
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		if (in_byte(in, p[i]))
			keys[n++] = (char)p[i];
	return n;
}
