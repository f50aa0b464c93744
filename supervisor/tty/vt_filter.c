/* What of the agent's output reaches the user's terminal; see vt_filter.h. */
#include "supervisor/tty/vt_filter.h"

#include <string.h>

#define ESC 0x1b
#define CAN 0x18
#define SUB 0x1a
#define BEL 0x07

#define CSI_PARAMS 16

enum {
	F_GROUND = 0,
	F_C2,           /* 0xc2 in text: U+0080-U+009F (C1) or a character */
	F_ESC,          /* ESC held */
	F_ESC_INTER,    /* ESC and intermediates held */
	F_CSI,          /* ESC [ … held to the final byte */
	F_CSI_DROP,     /* a CSI too long to hold: dropped to its final byte */
	F_OSC_NUM,      /* ESC ] and the digits of its number, held */
	F_OSC_HOLD,     /* a colour OSC, held to its end */
	F_OSC_HOLD_ESC, /* … and an ESC: ST, or the string is over */
	F_STR_PASS,     /* an allowed OSC, passed to its end */
	F_STR_PASS_ESC, /* … and an ESC (held) */
	F_STR_DROP,     /* a string dropped to its end */
	F_STR_DROP_ESC,
};

enum osc_class { OSC_DROP, OSC_PASS, OSC_HOLD };

void vt_filter_init(struct vt_filter *f)
{
	memset(f, 0, sizeof(*f));
	f->state = F_GROUND;
}

size_t vt_filter_held(const struct vt_filter *f)
{
	return f->held;
}

static enum osc_class osc_class(uint32_t n, bool has_number)
{
	if (!has_number)
		return OSC_DROP;
	if (n == 0 || n == 1 || n == 2 || n == 7 || n == 8 || n == 133 || n == 104 || n == 105 ||
	    (n >= 110 && n <= 119))
		return OSC_PASS;
	if (n == 4 || n == 5 || (n >= 10 && n <= 19))
		return OSC_HOLD;
	return OSC_DROP;
}

/* A held colour OSC (ESC ] N ; … and its terminator): no value may be a query ("?"). */
static bool osc_sets_only(const unsigned char *s, size_t len)
{
	for (size_t i = 2; i < len; i++)
		if (s[i] == ';' && i + 1 < len && s[i + 1] == '?')
			return false;
	return true;
}

/* The held CSI (ESC [ … FINAL): may it pass? Notes the queries that do. */
static bool csi_allowed(struct vt_filter *f, const unsigned char *s, size_t len)
{
	unsigned char final = s[len - 1], private_ = 0, inter = 0;
	uint32_t p[CSI_PARAMS] = {0};
	size_t np = 0, i = 2;

	if (i < len - 1 && s[i] >= 0x3c && s[i] <= 0x3f)
		private_ = s[i++];
	/* The common case (colours, cursor moves, erasing) needs no parameters read. */
	if (!strchr("itynhcqpwuxmS", final) || (final == 'm' && private_ != '?'))
		return true;
	for (; i < len - 1; i++) {
		unsigned char c = s[i];

		if (c >= '0' && c <= '9') {
			if (np == 0)
				np = 1;
			if (np <= CSI_PARAMS && p[np - 1] < 100000)
				p[np - 1] = p[np - 1] * 10 + (uint32_t)(c - '0');
		} else if (c == ';' || c == ':') {
			if (np == 0)
				np = 1;
			np++;
		} else if (c >= 0x20 && c <= 0x2f) {
			inter = c;
		}
	}
	if (np > CSI_PARAMS)
		np = CSI_PARAMS;
	switch (final) {
	case 'i': /* media copy: the terminal prints its screen, or becomes a printer's pipe */
		return false;
	case 't':
		if (inter)
			return true; /* DECSWBV, DECCARA… */
		if (private_)
			return false; /* xterm's title modes */
		if (p[0] == 14 || p[0] == 16 || p[0] == 18 || p[0] == 19) {
			f->queried = true; /* sizes: harmless */
			return true;
		}
		return p[0] == 22 || p[0] == 23; /* the title stack */
	case 'y':
		return inter != '*'; /* DECRQCRA: what is on the user's screen, by checksum */
	case 'n':
		if (!private_ && !inter && p[0] == 5)
			return false; /* ours: the relay's last question at the end */
		f->queried = true;
		return true;
	case 'h':
		if (!private_ && !inter)
			for (size_t k = 0; k < np; k++)
				if (p[k] == 2)
					return false; /* KAM: the user's keyboard locked */
		return true;
	case 'c':
		if (!inter)
			f->queried = true; /* device attributes */
		return true;
	case 'q':
		if (private_ == '>')
			f->queried = true; /* XTVERSION */
		return true;
	case 'p':
	case 'w':
		if (inter == '$')
			f->queried = true; /* DECRQM, DECRQPSR */
		return true;
	case 'u':
		if (private_ == '?' || inter == '$')
			f->queried = true; /* keyboard flags, DECRQTSR */
		return true;
	case 'x':
		if (!private_ && !inter)
			f->queried = true; /* DECREQTPARM */
		return true;
	case 'm':
	case 'S':
		if (private_ == '?')
			f->queried = true; /* XTQMODKEYS, XTSMGRAPHICS */
		return true;
	default:
		return true;
	}
}

struct sink {
	unsigned char *p;
	size_t n;
};

static void put(struct sink *o, const unsigned char *s, size_t n)
{
	memcpy(o->p + o->n, s, n);
	o->n += n;
}

static void put1(struct sink *o, unsigned char c)
{
	o->p[o->n++] = c;
}

static bool hold(struct vt_filter *f, unsigned char c)
{
	if (f->held >= VT_FILTER_HOLD_MAX)
		return false;
	f->hold[f->held++] = c;
	return true;
}

static void release(struct vt_filter *f, struct sink *o)
{
	put(o, f->hold, f->held);
	f->held = 0;
}

static void drop(struct vt_filter *f)
{
	f->held = 0;
	f->dropped++;
}

static void start_esc(struct vt_filter *f)
{
	f->held = 0;
	hold(f, ESC);
	f->state = F_ESC;
}

/* A held OSC has ended (its terminator held too): pass it or not. */
static void osc_end(struct vt_filter *f, struct sink *o)
{
	enum osc_class k = osc_class(f->osc_number, f->osc_digits > 0);

	if (k == OSC_PASS || (k == OSC_HOLD && osc_sets_only(f->hold, f->held)))
		release(f, o);
	else
		drop(f);
	f->state = F_GROUND;
}

/* A byte of text, at ground or in a string that passes: UTF-8 passes, C1 controls do not
 * (a terminal may take U+009C for ST and U+009D for OSC, inside a title too). */
static void text(struct vt_filter *f, unsigned char c, struct sink *o)
{
	if (c >= 0x80 && c <= 0xbf && f->utf8_left) {
		f->utf8_left--;
		put1(o, c);
		return;
	}
	f->utf8_left = 0;
	if (c == 0xc2) {
		f->held = 0;
		hold(f, c);
		f->c2_return = f->state;
		f->state = F_C2;
		return;
	}
	if (c >= 0x80 && c <= 0x9f) {
		f->dropped++; /* a C1 control on its own */
		return;
	}
	if (c >= 0xc3 && c <= 0xdf)
		f->utf8_left = 1;
	else if (c >= 0xe0 && c <= 0xef)
		f->utf8_left = 2;
	else if (c >= 0xf0 && c <= 0xf4)
		f->utf8_left = 3;
	put1(o, c);
}

static void ground(struct vt_filter *f, unsigned char c, struct sink *o)
{
	if (c == ESC) {
		f->utf8_left = 0;
		start_esc(f);
		return;
	}
	text(f, c, o);
}

static void step(struct vt_filter *f, unsigned char c, struct sink *o);

/* C starts over at ground (what was held is dropped). */
static void restart(struct vt_filter *f, unsigned char c, struct sink *o)
{
	f->held = 0;
	f->state = F_GROUND;
	step(f, c, o);
}

static void step(struct vt_filter *f, unsigned char c, struct sink *o)
{
	switch (f->state) {
	case F_GROUND:
		ground(f, c, o);
		return;
	case F_C2:
		f->state = f->c2_return;
		if (c >= 0x80 && c <= 0x9f) {
			drop(f); /* U+0080-U+009F: a C1 control, as some terminals read it */
			return;
		}
		release(f, o);
		if (c >= 0xa0 && c <= 0xbf)
			put1(o, c);
		else
			step(f, c, o);
		return;
	case F_STR_PASS:
		if (c == ESC) {
			f->utf8_left = 0;
			f->held = 0;
			hold(f, ESC);
			f->state = F_STR_PASS_ESC;
			return;
		}
		if (c == BEL || c == CAN || c == SUB) {
			f->utf8_left = 0;
			put1(o, c);
			f->state = F_GROUND;
			return;
		}
		text(f, c, o);
		return;
	case F_STR_PASS_ESC:
		if (c == '\\') {
			release(f, o);
			put1(o, c);
			f->state = F_GROUND;
			return;
		}
		/* The string is over for the terminal only when the next sequence starts; that one
		 * may be dropped, so end it now. */
		put1(o, CAN);
		start_esc(f);
		step(f, c, o);
		return;
	case F_STR_DROP:
		if (c == ESC)
			f->state = F_STR_DROP_ESC;
		else if (c == BEL || c == CAN || c == SUB)
			f->state = F_GROUND;
		return;
	case F_STR_DROP_ESC:
		if (c == '\\') {
			f->state = F_GROUND;
			return;
		}
		start_esc(f);
		step(f, c, o);
		return;
	default:
		break;
	}

	/* Holding a sequence the terminal has not seen yet. */
	if (c == CAN || c == SUB) {
		drop(f);
		f->state = F_GROUND;
		return;
	}
	switch (f->state) {
	case F_ESC:
		if (c == ESC) {
			start_esc(f);
		} else if (c == '[') {
			hold(f, c);
			f->state = F_CSI;
		} else if (c == ']') {
			hold(f, c);
			f->osc_number = 0;
			f->osc_digits = 0;
			f->state = F_OSC_NUM;
		} else if (c == 'P' || c == 'X' || c == '^' || c == '_') {
			drop(f); /* DCS, SOS, PM, APC */
			f->state = F_STR_DROP;
		} else if (c >= 0x20 && c <= 0x2f) {
			hold(f, c);
			f->state = F_ESC_INTER;
		} else if (c >= 0x30 && c <= 0x7e) {
			if (c == 'Z')
				f->queried = true; /* DECID: answered as device attributes */
			release(f, o);
			put1(o, c);
			f->state = F_GROUND;
		} else if (c < 0x20 || c == 0x7f) {
			put1(o, c); /* executed, the sequence goes on */
		} else {
			restart(f, c, o);
		}
		return;
	case F_ESC_INTER:
		if (c == ESC) {
			start_esc(f);
		} else if (c >= 0x20 && c <= 0x2f) {
			if (!hold(f, c)) {
				drop(f);
				f->state = F_GROUND;
			}
		} else if (c >= 0x30 && c <= 0x7e) {
			if (f->hold[1] == '%') {
				drop(f); /* out of UTF-8 (or back): not the agent's to switch */
			} else {
				release(f, o);
				put1(o, c);
			}
			f->state = F_GROUND;
		} else if (c < 0x20 || c == 0x7f) {
			put1(o, c);
		} else {
			restart(f, c, o);
		}
		return;
	case F_CSI:
		if (c == ESC) {
			start_esc(f);
		} else if (c >= 0x20 && c <= 0x3f) {
			if (!hold(f, c)) {
				drop(f);
				f->state = F_CSI_DROP;
			}
		} else if (c >= 0x40 && c <= 0x7e) {
			if (hold(f, c) && csi_allowed(f, f->hold, f->held))
				release(f, o);
			else
				drop(f);
			f->state = F_GROUND;
		} else if (c < 0x20) {
			put1(o, c);
		} else if (c >= 0x80) {
			restart(f, c, o);
		}
		return;
	case F_CSI_DROP:
		if (c == ESC)
			start_esc(f);
		else if (c >= 0x40 && c <= 0x7e)
			f->state = F_GROUND;
		else if (c >= 0x80)
			restart(f, c, o);
		return;
	case F_OSC_NUM:
	case F_OSC_HOLD:
		if (c == ESC) {
			if (!hold(f, c)) {
				start_esc(f);
				return;
			}
			f->state = F_OSC_HOLD_ESC;
			return;
		}
		if (!hold(f, c)) {
			drop(f);
			f->state = F_STR_DROP;
			return;
		}
		if (f->state == F_OSC_NUM && c >= '0' && c <= '9' && f->osc_digits < 6) {
			f->osc_number = f->osc_number * 10 + (uint32_t)(c - '0');
			f->osc_digits++;
			return;
		}
		if (c == BEL) {
			osc_end(f, o);
			return;
		}
		if (f->state == F_OSC_NUM) {
			f->utf8_left = 0;
			switch (osc_class(f->osc_number, f->osc_digits > 0 && c == ';')) {
			case OSC_PASS:
				release(f, o);
				f->state = F_STR_PASS;
				return;
			case OSC_HOLD:
				f->state = F_OSC_HOLD;
				return;
			case OSC_DROP:
				drop(f);
				f->state = F_STR_DROP;
				return;
			}
		}
		return;
	case F_OSC_HOLD_ESC:
		if (c == '\\') {
			if (!hold(f, c)) {
				drop(f);
				f->state = F_GROUND;
				return;
			}
			osc_end(f, o);
			return;
		}
		/* The OSC was cut off by another sequence: it never reaches the terminal. */
		drop(f);
		start_esc(f);
		step(f, c, o);
		return;
	default:
		f->state = F_GROUND;
		return;
	}
}

size_t vt_filter_feed(struct vt_filter *f, const void *buf, size_t len, void *out)
{
	const unsigned char *p = buf, *end = p + len;
	struct sink o = {out, 0};

	while (p < end) {
		/* The common case, printable ASCII at ground, in one copy. */
		if (f->state == F_GROUND && !f->utf8_left && *p >= 0x20 && *p < 0x7f) {
			const unsigned char *q = p;

			while (q < end && *q >= 0x20 && *q < 0x7f)
				q++;
			put(&o, p, (size_t)(q - p));
			p = q;
			continue;
		}
		/* A CSI's parameters, held as they come, to its final byte. */
		if (f->state == F_CSI) {
			while (p < end && *p >= 0x20 && *p <= 0x3f && f->held < VT_FILTER_HOLD_MAX)
				f->hold[f->held++] = *p++;
			if (p == end)
				break;
		}
		step(f, *p++, &o);
	}
	return o.n;
}
