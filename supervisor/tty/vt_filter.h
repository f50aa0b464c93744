/* What of the agent's output may reach the user's terminal. The relay passes the agent's
 * screen as it is (colours, cursor moves, the alternate screen, titles: a full-screen agent
 * needs them), but a terminal also obeys sequences that act outside the agent's screen or make
 * it answer with what the agent should not learn; those are dropped, whole, here. Pure: no
 * fds, no clocks.
 *
 * Dropped:
 *   - OSC strings but an allow-list: titles (0, 1, 2), the working directory (7), hyperlinks
 *     (8), shell marks (133), colour resets (104, 105, 110-119), and colour settings (4, 5,
 *     10-19) that query nothing (no "?" among their values). Gone: OSC 52 (set or read the
 *     clipboard), font (50), X properties (3), xterm's log file (46), iTerm2's 1337 (files),
 *     notifications (9, 99, 777) and whatever else a terminal may do;
 *   - every DCS, APC, PM and SOS string: DECRQSS and XTGETTCAP (answers), tmux's passthrough
 *     (which would carry any of the above to the terminal outside tmux), kitty's graphics,
 *     sixel;
 *   - CSI: window operations but the title stack (22, 23 t) and the size reports (14, 16, 18,
 *     19 t) — no title report (21 t: the terminal would type the title back), no moving,
 *     resizing or iconifying the user's window; media copy (i: print the screen); DECRQCRA
 *     (* y: checksums of what is on the user's screen); keyboard lock (KAM, 2 h); DSR 5 (n),
 *     which the relay sends itself to know when the terminal has answered everything;
 *   - ESC % (leaving UTF-8, after which bytes we pass as text would be C1 controls);
 *   - C1 controls (U+0080-U+009F as UTF-8, and bytes 0x80-0x9F that start no character),
 *     which some terminals obey as CSI, OSC, DCS….
 * Other answers (device attributes, cursor position, XTVERSION, DECRQM…) are harmless and
 * TUIs depend on them; their passing is noted (queried), so that the relay can wait for the
 * answers still on their way when the agent ends instead of leaving them for the user's shell.
 *
 * A sequence is held until it is known (a CSI to its final byte, an OSC to its number, a
 * colour OSC to its end, at most VT_FILTER_HOLD_MAX bytes; longer ones are dropped), so the
 * terminal never sees the start of a sequence it then does not get the end of. */
#ifndef CLOISTER_VT_FILTER_H
#define CLOISTER_VT_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VT_FILTER_HOLD_MAX 1024

struct vt_filter {
	uint8_t state;
	uint8_t utf8_left;   /* continuation bytes of a character still due */
	uint8_t c2_return;   /* the state a 0xc2 came in */
	uint32_t osc_number; /* the leading number of an OSC string */
	uint8_t osc_digits;
	bool queried;     /* a query passed: the terminal may be answering */
	uint64_t dropped; /* sequences dropped */
	size_t held;
	unsigned char hold[VT_FILTER_HOLD_MAX];
};

void vt_filter_init(struct vt_filter *f);

/* At most this many bytes come out of LEN fed while HELD were held: a string cut off by the
 * next sequence is ended with a CAN of our own, one for every 4 bytes at most ("] 0 ; ESC"
 * again and again). */
#define VT_FILTER_OUT_MAX(len, held) ((len) + (len) / 4 + (held) + 2)

/* Filter LEN bytes of the agent's output into OUT, which has room for
 * VT_FILTER_OUT_MAX(LEN, vt_filter_held(F)) bytes; returns how many were written there. */
size_t vt_filter_feed(struct vt_filter *f, const void *buf, size_t len, void *out);

/* Bytes held back, to be written (or dropped) with what comes next. */
size_t vt_filter_held(const struct vt_filter *f);

#endif
