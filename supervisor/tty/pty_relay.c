/* The user's terminal and the agent's pty, joined by the supervisor; see pty_relay.h.
 *
 * Over 900 lines on purpose: one relay's state (raw mode, job control, window size, held
 * output, a prompt on the screen) that every part reads and changes, and the terminal must be
 * put back from any of them (signals and exit included). What is pure is apart already:
 * vt_parse.c (the agent's screen mode, keys) and base/term_escape.c.
 */
#include "supervisor/tty/pty_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "supervisor/tty/vt_filter.h"
#include "supervisor/tty/vt_parse.h"

CL_DEFINE_TRIVIAL_CLEANUP(struct pty_relay *, pty_relay_free)

#define OUT_SIZE           (64 * 1024)  /* the agent's output on its way to the terminal */
#define IN_SIZE            4096         /* keys on their way to the agent */
#define FRONT_MAX          (512 * 1024) /* our own bytes: prompt screens (a details view is large) */
#define NOTICES_MAX        (16 * 1024)  /* say() lines waiting for their moment */
#define READ_CHUNK         4096
#define HOLD_GRACE_MS      250  /* how long the agent may stay inside a sequence before a prompt */
#define REDRAW_MAX_MS      1500 /* a full-screen agent's redraw: the size comes back by then */
#define REDRAW_QUIET_MS    60   /* … or once it has drawn and then been quiet this long */
#define SWALLOW_NEWLINE_MS 300  /* the Enter a person types after a prompt's key out of habit */
#define SUSPEND_DRAIN_MS   500
#define FOREGROUND_POLL_MS 250 /* in the background: how often to look whether `fg` came */
#define FREE_DRAIN_MS      1000
#define ANSWERS_MS         1000 /* at the end: how long the terminal may take to answer */

struct buf {
	char *data;
	size_t size, max; /* size grows up to max */
	size_t start, end;
};

enum hold {
	HOLD_NONE, /* the agent's output flows */
	HOLD_WAIT, /* a prompt is wanted: the output flows to its next ground point */
	HOLD_ON,   /* the prompt has the screen; the agent's output waits */
};

enum redraw {
	REDRAW_NONE,
	REDRAW_GROWN, /* the agent's pty is a column wider than the terminal until it redrew */
};

struct pty_relay {
	struct loop *loop;
	struct pty_relay_ops ops;
	int master;
	int tty;          /* the user's terminal: our own description, or a shared dup */
	bool tty_shared;  /* a dup sharing the shell's description: its flags are put back */
	int tty_flags;    /* what they were */
	bool readable;    /* the terminal can be read through tty */
	bool input;       /* our stdin is that terminal: its keys go to the agent */
	bool on_stderr;   /* our stderr is that terminal */
	bool job_control; /* it is our controlling terminal */
	bool foreground;  /* … and we are its foreground process group */
	bool started, closing;
	bool raw;
	bool saved_ok;
	struct termios saved; /* the user's modes */
	struct winsize ws;    /* the terminal's size, as last given to the agent */
	bool tty_gone, master_gone;
	uint32_t master_events, tty_events; /* registered with the loop (0: not registered) */

	struct buf out, in, front, notices;
	char *raw_out;           /* the agent's output as read, before the filter */
	struct vt_filter filter; /* what of it may reach the terminal */
	size_t dropped_notices;
	char *status;        /* the window title to set, NULL: give the old one back */
	bool status_dirty;   /* STATUS is not on the terminal yet */
	bool title_pushed;   /* the terminal's own title is on its stack */
	struct vt_output vt; /* the agent's output as written to the terminal */
	struct vt_input keys;

	bool prompt; /* a prompt wants the screen, or has it */
	enum hold hold;
	enum vt_prompt_style style;
	char *screen; /* what the prompt shows */
	struct loop_timer *hold_timer;

	enum redraw redraw;
	size_t redraw_stale; /* bytes the agent wrote before the resize */
	bool redraw_seen;
	uint64_t redraw_deadline, redraw_last;
	struct loop_timer *redraw_timer;

	uint64_t swallow_newline_until;
	/* A shell's `fg` of a job running in the background sends no SIGCONT: look. */
	struct loop_timer *fg_timer;
};

/* ---- restoring the terminal from anywhere --------------------------------------------------- */

/* The user's modes, for exit() and fatal signals: one terminal per process. */
static struct {
	int fd;
	struct termios modes;
	int flags; /* -1: leave them */
	volatile sig_atomic_t armed;
	bool installed;
} rescue = {.fd = -1, .flags = -1};
static struct sigaction rescue_old[NSIG];

static void rescue_terminal(void)
{
	/* Taken once, with what was set before it was armed: the handler may run on any thread
	 * (a fault on the exec guard's), and two of them, or one and exit(), at once. */
	if (!__atomic_exchange_n(&rescue.armed, 0, __ATOMIC_ACQ_REL))
		return;
	(void)tcsetattr(rescue.fd, TCSANOW, &rescue.modes);
	if (rescue.flags >= 0)
		(void)fcntl(rescue.fd, F_SETFL, rescue.flags);
}

static void rescue_on_signal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;

	rescue_terminal();
	/* What was there before (the default, or a sanitizer's report): a fault happens again
	 * on return, a sent signal is raised again (blocked until then). */
	(void)sigaction(sig, &rescue_old[sig], NULL);
	if (si->si_code <= 0)
		(void)raise(sig);
	errno = saved;
}

static void rescue_install(void)
{
	/* Those that end a process by default. The loop's own (SIGINT, SIGTERM…) are blocked
	 * and read from its signalfd once it has them; until then, they are these. */
	static const int fatal[] = {SIGSEGV, SIGBUS,    SIGILL,  SIGFPE,  SIGABRT,   SIGTRAP,
	                            SIGSYS,  SIGALRM,   SIGUSR1, SIGUSR2, SIGXCPU,   SIGXFSZ,
	                            SIGIO,   SIGVTALRM, SIGPROF, SIGPWR,  SIGSTKFLT, SIGINT,
	                            SIGTERM, SIGHUP,    SIGQUIT};
	struct sigaction sa = {.sa_sigaction = rescue_on_signal, .sa_flags = SA_SIGINFO};

	if (rescue.installed)
		return;
	rescue.installed = true;
	(void)atexit(rescue_terminal);
	sigfillset(&sa.sa_mask);
	for (size_t i = 0; i < ELEMENTSOF(fatal); i++) {
		int sig = fatal[i];

		if (sigaction(sig, NULL, &rescue_old[sig]) < 0 ||
		    rescue_old[sig].sa_handler == SIG_IGN)
			continue;
		(void)sigaction(sig, &sa, NULL);
	}
}

/* ---- buffers ------------------------------------------------------------------------------ */

static int buf_init(struct buf *b, size_t size, size_t max)
{
	b->data = malloc(size);
	if (!b->data)
		return -ENOMEM;
	b->size = size;
	b->max = max;
	b->start = b->end = 0;
	return 0;
}

static size_t buf_len(const struct buf *b)
{
	return b->end - b->start;
}

/* Room at the end, moving what is there to the front when that makes room. */
static size_t buf_room(struct buf *b)
{
	if (b->start == b->end) {
		b->start = b->end = 0;
	} else if (b->end == b->size && b->start > 0) {
		memmove(b->data, b->data + b->start, b->end - b->start);
		b->end -= b->start;
		b->start = 0;
	}
	return b->size - b->end;
}

static void buf_consume(struct buf *b, size_t n)
{
	b->start += n;
	if (b->start == b->end)
		b->start = b->end = 0;
}

static void buf_clear(struct buf *b)
{
	b->start = b->end = 0;
}

/* Append N bytes, growing up to the maximum; false when they do not fit. */
static bool buf_append(struct buf *b, const char *p, size_t n)
{
	if (buf_room(b) < n && b->start > 0) {
		memmove(b->data, b->data + b->start, b->end - b->start);
		b->end -= b->start;
		b->start = 0;
	}
	if (b->size - b->end < n) {
		size_t want = b->end + n, size = b->size;
		char *data;

		if (want > b->max)
			return false;
		while (size < want)
			size = size * 2 < b->max ? size * 2 : b->max;
		data = realloc(b->data, size);
		if (!data)
			return false;
		b->data = data;
		b->size = size;
	}
	memcpy(b->data + b->end, p, n);
	b->end += n;
	return true;
}

static bool buf_append_str(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

/* TEXT with "\n" as "\r\n": the terminal is raw, with no output processing. */
static bool buf_append_lines(struct buf *b, const char *text)
{
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (!buf_append(b, p, n) || (nl && !buf_append(b, "\r\n", 2)))
			return false;
		p += n + (nl ? 1 : 0);
	}
	return true;
}

/* ---- the terminal's state ------------------------------------------------------------------ */

static bool is_foreground(const struct pty_relay *r)
{
	return !r->job_control || tcgetpgrp(r->tty) == getpgrp();
}

/* Raw while the agent runs in the foreground with our keys, or a prompt waits for them. */
static void update_mode(struct pty_relay *r)
{
	bool want = r->started && !r->closing && r->saved_ok && !r->tty_gone && r->foreground &&
	            (r->input || r->prompt);

	if (want && !r->raw) {
		struct termios t;

		/* The user's modes as they are now: the shell may have changed them while we were
		 * stopped or in the background. */
		if (tcgetattr(r->tty, &r->saved) < 0)
			return;
		t = r->saved;
		cfmakeraw(&t);
		t.c_cc[VMIN] = 1;
		t.c_cc[VTIME] = 0;
		rescue_install();
		rescue.fd = r->tty;
		rescue.modes = r->saved;
		rescue.flags = r->tty_shared ? r->tty_flags : -1;
		__atomic_store_n(&rescue.armed, 1, __ATOMIC_RELEASE); /* after what it restores */
		if (tcsetattr(r->tty, TCSANOW, &t) == 0)
			r->raw = true;
		else
			__atomic_store_n(&rescue.armed, 0, __ATOMIC_RELEASE);
	} else if (!want && r->raw) {
		(void)tcsetattr(r->tty, TCSANOW, &r->saved);
		r->raw = false;
		__atomic_store_n(&rescue.armed, 0, __ATOMIC_RELEASE);
	}
}

/* The terminal's size to the agent's pty (the kernel sends SIGWINCH when it changes). */
static void sync_size(struct pty_relay *r)
{
	struct winsize ws;

	if (r->tty_gone || ioctl(r->tty, TIOCGWINSZ, &ws) < 0)
		return;
	if (r->redraw == REDRAW_NONE && ws.ws_row == r->ws.ws_row && ws.ws_col == r->ws.ws_col)
		return;
	r->ws = ws;
	r->redraw = REDRAW_NONE; /* a real resize makes the agent redraw anyway */
	if (r->redraw_timer) {
		loop_cancel_timer(r->loop, r->redraw_timer);
		r->redraw_timer = NULL;
	}
	if (!r->master_gone)
		(void)ioctl(r->master, TIOCSWINSZ, &r->ws);
}

static void tty_went_away(struct pty_relay *r)
{
	if (r->tty_gone)
		return;
	r->tty_gone = true;
	r->raw = false; /* nothing to restore on a terminal that is gone */
	__atomic_store_n(&rescue.armed, 0, __ATOMIC_RELEASE);
	buf_clear(&r->front);
	buf_clear(&r->notices);
	if (r->ops.gone)
		r->ops.gone(r->ops.userdata);
}

/* ---- the event loop ------------------------------------------------------------------------ */

static int on_master(struct loop *loop, int fd, uint32_t events, void *userdata);
static int on_tty(struct loop *loop, int fd, uint32_t events, void *userdata);
static void flush(struct pty_relay *r);

static void set_events(struct pty_relay *r, int fd, uint32_t *registered, uint32_t want,
                       loop_fd_fn fn)
{
	if (want == *registered)
		return;
	if (want == 0) {
		(void)loop_del_fd(r->loop, fd);
	} else if (*registered == 0) {
		if (loop_add_fd(r->loop, fd, want, fn, r) < 0)
			want = 0;
	} else if (loop_mod_fd(r->loop, fd, want) < 0) {
		want = *registered;
	}
	*registered = want;
}

/* How much of the agent's output may be read now: what the filter writes of it (a little more
 * than it reads, and what it holds: VT_FILTER_OUT_MAX) must fit in the room left. */
static size_t master_room(struct pty_relay *r)
{
	size_t room = buf_room(&r->out), held = vt_filter_held(&r->filter);

	if (room < held + 2 + 5)
		return 0;
	return (room - held - 2) * 4 / 5; /* n + n / 4 <= room - held - 2 */
}

static bool want_master_read(struct pty_relay *r)
{
	return !r->master_gone && r->hold != HOLD_ON && master_room(r) > 0;
}

static bool want_tty_read(struct pty_relay *r)
{
	return r->readable && !r->tty_gone && r->foreground &&
	       (r->prompt || (r->input && buf_room(&r->in) > 0));
}

static bool want_tty_write(const struct pty_relay *r)
{
	return !r->tty_gone &&
	       (buf_len(&r->front) > 0 || (r->hold != HOLD_ON && buf_len(&r->out) > 0));
}

static int on_fg_timer(struct loop *loop, void *userdata);

static void update_events(struct pty_relay *r)
{
	if (!r->started || r->closing)
		return;
	/* A timer that cannot be added is tried again at the next update (fg_timer stays NULL). */
	if (!r->fg_timer && r->job_control && !r->foreground && !r->tty_gone &&
	    (r->input || r->prompt) &&
	    loop_add_timer(r->loop, loop_now_ms() + FOREGROUND_POLL_MS, on_fg_timer, r,
	                   &r->fg_timer) < 0)
		r->fg_timer = NULL;
	set_events(r, r->master, &r->master_events,
	           (want_master_read(r) ? EPOLLIN : 0) |
	                   (!r->master_gone && buf_len(&r->in) ? EPOLLOUT : 0),
	           on_master);
	if (r->tty >= 0)
		set_events(r, r->tty, &r->tty_events,
		           (want_tty_read(r) ? EPOLLIN : 0) | (want_tty_write(r) ? EPOLLOUT : 0),
		           on_tty);
}

static int on_fg_timer(struct loop *loop, void *userdata)
{
	struct pty_relay *r = userdata;

	r->fg_timer = NULL;
	if (r->tty_gone || r->closing)
		return 0;
	r->foreground = is_foreground(r);
	if (r->foreground) {
		update_mode(r);
		sync_size(r);
	}
	flush(r); /* and the timer again while still in the background */
	return 0;
}

/* ---- prompts and notices ----------------------------------------------------------------- */

/* The prompt takes the screen: the agent's stream is at a ground point and held. */
static void enter_prompt(struct pty_relay *r)
{
	char seq[512];
	size_t n = vt_output_prompt_enter(&r->vt, r->style, seq, sizeof(seq));

	if (n >= sizeof(seq))
		n = sizeof(seq) - 1;
	/* The enter sequence aborts whatever the terminal was in: so is the agent's stream. */
	vt_output_feed(&r->vt, "\x18", 1);
	(void)buf_append(&r->front, seq, n);
	if (r->screen)
		(void)buf_append_lines(&r->front, r->screen);
	r->hold = HOLD_ON;
	if (r->hold_timer) {
		loop_cancel_timer(r->loop, r->hold_timer);
		r->hold_timer = NULL;
	}
}

static void emit_notices(struct pty_relay *r)
{
	if (!buf_len(&r->notices) && !r->dropped_notices)
		return;
	if (r->prompt || r->hold != HOLD_NONE || buf_len(&r->front) ||
	    !vt_output_at_ground(&r->vt) || r->vt.alt_screen)
		return;
	if (!r->vt.at_line_start)
		(void)buf_append_str(&r->front, "\r\n");
	(void)buf_append(&r->front, r->notices.data + r->notices.start, buf_len(&r->notices));
	buf_clear(&r->notices);
	if (r->dropped_notices) {
		char line[96];

		snprintf(line, sizeof(line), "cloister: %zu more lines were not shown\r\n",
		         r->dropped_notices);
		(void)buf_append_str(&r->front, line);
		r->dropped_notices = 0;
	}
	r->vt.at_line_start = true;
}

/* The status as the window title: OSC 2, after pushing the title the terminal had (XTerm's
 * CSI 22;2 t), popped again when the status goes. Only between the agent's sequences. */
static void emit_status(struct pty_relay *r)
{
	if (!r->status_dirty || r->prompt || r->hold != HOLD_NONE || buf_len(&r->front) ||
	    !vt_output_at_ground(&r->vt))
		return;
	r->status_dirty = false;
	if (r->status) {
		if (!r->title_pushed)
			(void)buf_append_str(&r->front, "\033[22;2t");
		r->title_pushed = true;
		(void)buf_append_str(&r->front, "\033]2;");
		(void)buf_append_str(&r->front, r->status);
		(void)buf_append_str(&r->front, "\007");
	} else if (r->title_pushed) {
		(void)buf_append_str(&r->front, "\033[23;2t");
		r->title_pushed = false;
	}
}

void pty_relay_status(struct pty_relay *r, const char *text)
{
	char *copy = NULL;

	if (r->tty_gone)
		return;
	if (text) {
		copy = strndup(text, 200);
		if (!copy)
			return;
		/* A title is one line of printable text: anything else would end the sequence. */
		for (char *c = copy; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = ' ';
	}
	if (!copy && !r->status && !r->title_pushed)
		return;
	free(r->status);
	r->status = copy;
	r->status_dirty = true;
	if (r->started)
		flush(r);
}

static int on_hold_timeout(struct loop *loop, void *userdata)
{
	struct pty_relay *r = userdata;

	r->hold_timer = NULL;
	if (r->hold == HOLD_WAIT) {
		/* The agent stopped inside a sequence: the prompt comes anyway. Whatever it had
		 * written of the sequence is cut off (the enter sequence starts with CAN). */
		enter_prompt(r);
		flush(r);
	}
	return 0;
}

static int on_redraw_timer(struct loop *loop, void *userdata);

/* The redraw's size back at DEADLINE_MS; at once when no timer can be had (a pty left a
 * column wider would stay so). */
static void redraw_end_at(struct pty_relay *r, uint64_t deadline_ms)
{
	if (loop_add_timer(r->loop, deadline_ms, on_redraw_timer, r, &r->redraw_timer) < 0) {
		r->redraw_timer = NULL;
		r->redraw = REDRAW_NONE;
		if (!r->master_gone)
			(void)ioctl(r->master, TIOCSWINSZ, &r->ws);
	}
}

static int on_redraw_timer(struct loop *loop, void *userdata)
{
	struct pty_relay *r = userdata;
	uint64_t now = loop_now_ms();

	r->redraw_timer = NULL;
	if (r->redraw != REDRAW_GROWN)
		return 0;
	if (now >= r->redraw_deadline ||
	    (r->redraw_seen && now >= r->redraw_last + REDRAW_QUIET_MS)) {
		r->redraw = REDRAW_NONE;
		if (!r->master_gone)
			(void)ioctl(r->master, TIOCSWINSZ, &r->ws);
		return 0;
	}
	redraw_end_at(r, r->redraw_seen && r->redraw_last + REDRAW_QUIET_MS < r->redraw_deadline
	                         ? r->redraw_last + REDRAW_QUIET_MS
	                         : r->redraw_deadline);
	return 0;
}

/* The prompt cleared a full-screen agent's screen: make it redraw. Programs redraw when their
 * window size changes (not on a SIGWINCH alone), so the pty grows by a column (growing never
 * makes a program scroll its view) and gets its size back once the program has drawn. */
static void start_redraw(struct pty_relay *r)
{
	struct winsize wide = r->ws;
	int pending = 0;

	if (r->master_gone || wide.ws_col == 0 || wide.ws_col == UINT16_MAX)
		return;
	wide.ws_col++;
	if (ioctl(r->master, TIOCSWINSZ, &wide) < 0)
		return;
	/* What it wrote before the resize is not its redraw. */
	if (ioctl(r->master, FIONREAD, &pending) < 0)
		pending = 0;
	r->redraw = REDRAW_GROWN;
	r->redraw_stale = buf_len(&r->out) + (size_t)(pending > 0 ? pending : 0);
	r->redraw_seen = false;
	r->redraw_deadline = loop_now_ms() + REDRAW_MAX_MS;
	if (r->redraw_timer)
		loop_cancel_timer(r->loop, r->redraw_timer);
	redraw_end_at(r, r->redraw_deadline);
}

static void redraw_saw(struct pty_relay *r, size_t n)
{
	if (r->redraw != REDRAW_GROWN)
		return;
	if (r->redraw_stale >= n) {
		r->redraw_stale -= n;
		return;
	}
	r->redraw_stale = 0;
	r->redraw_seen = true;
	r->redraw_last = loop_now_ms();
	if (r->redraw_timer)
		loop_cancel_timer(r->loop, r->redraw_timer);
	redraw_end_at(r, r->redraw_last + REDRAW_QUIET_MS);
}

/* ---- moving bytes -----------------------------------------------------------------------------
 */

/* Write what may be written to the terminal now: our bytes first, then the agent's (up to the
 * ground point a prompt waits for). Never blocks. */
static void flush(struct pty_relay *r)
{
	if (r->tty_gone) {
		buf_clear(&r->out); /* nobody to show it to: the agent must not block on it */
		buf_clear(&r->front);
	}
	while (!r->tty_gone) {
		const char *p;
		size_t n;
		bool agent = false;
		ssize_t w;

		if (r->hold == HOLD_WAIT && !buf_len(&r->front) && vt_output_at_ground(&r->vt))
			enter_prompt(r);
		emit_notices(r);
		emit_status(r);
		if (buf_len(&r->front)) {
			p = r->front.data + r->front.start;
			n = buf_len(&r->front);
		} else if (r->hold != HOLD_ON && buf_len(&r->out)) {
			p = r->out.data + r->out.start;
			n = buf_len(&r->out);
			if (r->hold == HOLD_WAIT) {
				size_t g = vt_output_ground_after(&r->vt, p, n);

				if (g != SIZE_MAX)
					n = g;
			}
			agent = true;
		} else {
			break;
		}
		w = write(r->tty, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			break;
		if (w <= 0) {
			tty_went_away(r);
			break;
		}
		if (agent) {
			vt_output_feed(&r->vt, p, (size_t)w);
			buf_consume(&r->out, (size_t)w);
		} else {
			buf_consume(&r->front, (size_t)w);
		}
	}
	update_events(r);
}

/* Read what the agent wrote, through the filter; false when there is nothing more now. */
static bool read_master(struct pty_relay *r)
{
	size_t room = master_room(r);
	ssize_t n;

	if (r->master_gone || r->hold == HOLD_ON || room == 0)
		return false;
	do
		n = read(r->master, r->raw_out, room);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return false;
	if (n <= 0) {
		/* EIO: every slave is closed, the sandbox is gone. */
		r->master_gone = true;
		buf_clear(&r->in);
		return false;
	}
	r->out.end += vt_filter_feed(&r->filter, r->raw_out, (size_t)n, r->out.data + r->out.end);
	redraw_saw(r, (size_t)n);
	return true;
}

static void write_master(struct pty_relay *r)
{
	while (buf_len(&r->in) && !r->master_gone) {
		ssize_t w = write(r->master, r->in.data + r->in.start, buf_len(&r->in));

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			break;
		if (w <= 0) {
			r->master_gone = true;
			buf_clear(&r->in);
			break;
		}
		buf_consume(&r->in, (size_t)w);
	}
}

static int on_master(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct pty_relay *r = userdata;

	if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
		write_master(r);
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
		(void)read_master(r);
	flush(r);
	return 0;
}

static void read_tty(struct pty_relay *r)
{
	char buf[READ_CHUNK], keys[READ_CHUNK];
	size_t max = sizeof(buf);
	ssize_t n;

	if (!r->prompt) {
		size_t room = buf_room(&r->in);

		if (room < max)
			max = room;
		if (max == 0)
			return;
	}
	do
		n = read(r->tty, buf, max);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return;
	if (n <= 0) {
		tty_went_away(r);
		return;
	}
	if (r->prompt) {
		size_t k = vt_input_keys(&r->keys, buf, (size_t)n, keys);

		/* Last: the callback may end the prompt (and so change our state). */
		if (k && r->ops.keys)
			r->ops.keys(r->ops.userdata, keys, k);
		return;
	}
	if (!r->input)
		return;
	{
		const char *p = buf;
		size_t len = (size_t)n;

		if (r->swallow_newline_until && loop_now_ms() < r->swallow_newline_until &&
		    (*p == '\r' || *p == '\n'))
			p++, len--;
		r->swallow_newline_until = 0;
		(void)buf_append(&r->in, p, len);
	}
	write_master(r);
}

static int on_tty(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct pty_relay *r = userdata;

	if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP)) && want_tty_read(r))
		read_tty(r);
	flush(r);
	/* A hang-up we may not read (in the background): learn it from a write. */
	if ((events & (EPOLLERR | EPOLLHUP)) && !r->tty_gone && !want_tty_read(r) &&
	    !want_tty_write(r) && write(r->tty, "", 0) < 0 && errno != EAGAIN)
		tty_went_away(r);
	update_events(r);
	return 0;
}

/* Relay synchronously until the agent's pty is drained (UNTIL_GONE: closed) and everything is
 * written, or MS milliseconds pass. For a suspend and the end, outside the loop's handlers. */
static void drain_now(struct pty_relay *r, int ms, bool until_gone)
{
	struct timespec ts;
	int64_t deadline;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	deadline = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + ms;
	for (;;) {
		struct pollfd p[2] = {{.fd = r->master, .events = 0}, {.fd = r->tty, .events = 0}};
		bool more = read_master(r);
		int64_t now;

		flush(r);
		if (!more && !want_tty_write(r) && (!until_gone || r->master_gone))
			return;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
		if (now >= deadline)
			return;
		if (want_master_read(r))
			p[0].events = POLLIN;
		if (want_tty_write(r))
			p[1].events = POLLOUT;
		if (!p[0].events && !p[1].events)
			return;
		if (poll(p, 2, (int)(deadline - now)) < 0 && errno != EINTR)
			return;
	}
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The agent asked the terminal something (vt_filter: queried) and is gone: the answers may
 * still be on their way, and once the terminal is the shell's again they would be typed at
 * it. Ask a question of our own that the agent cannot ask (DSR 5, dropped from its output):
 * a terminal answers in order, so once its "\e[0n" is read every answer before it has come.
 * Read and drop until then, at most ANSWERS_MS, still in raw mode (nothing echoed), then
 * flush the terminal's input. */
static void await_answers(struct pty_relay *r)
{
	static const char ask[] = "\x1b[5n", answer[] = "\x1b[0n";
	size_t sent = 0, matched = 0;
	int64_t deadline = now_ms() + ANSWERS_MS;

	if (!r->filter.queried || r->tty_gone || !r->readable || !r->raw)
		return;
	while (matched < sizeof(answer) - 1) {
		struct pollfd p = {.fd = r->tty,
		                   .events = sent < sizeof(ask) - 1 ? POLLOUT : POLLIN};
		int64_t left = deadline - now_ms();
		char buf[256];
		ssize_t n;

		if (left <= 0 || (poll(&p, 1, (int)left) < 0 && errno != EINTR))
			break;
		if (sent < sizeof(ask) - 1) {
			n = write(r->tty, ask + sent, sizeof(ask) - 1 - sent);
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				return;
			sent += n > 0 ? (size_t)n : 0;
			continue;
		}
		n = read(r->tty, buf, sizeof(buf));
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n && matched < sizeof(answer) - 1; i++)
			matched = buf[i] == answer[matched] ? matched + 1
			          : buf[i] == answer[0]     ? 1
			                                    : 0;
	}
	(void)tcflush(r->tty, TCIFLUSH);
}

/* ---- the public side ------------------------------------------------------------------------ */

/* Our own open file description of the terminal on FD: /dev/tty (our controlling terminal)
 * or /proc/self/fd/FD when it is that device, else a dup whose flags are put back later. */
static int open_own(struct pty_relay *r, int fd, dev_t rdev)
{
	static const char *const paths[] = {"/dev/tty", NULL};
	char self[64];
	struct stat st;
	int flags;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	for (int i = 0; i < 2; i++) {
		const char *path = paths[i] ? paths[i] : self;
		int own = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);

		if (own < 0)
			continue;
		if (fstat(own, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == rdev) {
			r->tty = own;
			r->readable = true;
			return 0;
		}
		close(own);
	}
	r->tty = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (r->tty < 0)
		return -errno;
	flags = fcntl(r->tty, F_GETFL);
	if (flags < 0 || fcntl(r->tty, F_SETFL, flags | O_NONBLOCK) < 0)
		return -errno;
	r->tty_shared = true;
	r->tty_flags = flags;
	r->readable = (flags & O_ACCMODE) != O_WRONLY;
	return 0;
}

static bool same_terminal(int fd, dev_t rdev)
{
	struct stat st;

	return isatty(fd) && fstat(fd, &st) == 0 && st.st_rdev == rdev;
}

static enum vt_prompt_style prompt_style(void)
{
	const char *term = getenv("TERM");

	/* No alternate screen on the Linux console or a dumb terminal. */
	if (!term || !*term || !strcmp(term, "dumb") || !strncmp(term, "linux", 5))
		return VT_PROMPT_INLINE;
	return VT_PROMPT_SCREEN;
}

int pty_relay_open(struct pty_relay **ret)
{
	_cleanup_(pty_relay_freep) struct pty_relay *r = NULL;
	struct stat st;
	int fd = -1, res;

	for (int i = 0; i < 3 && fd < 0; i++)
		if (isatty(i))
			fd = i;
	if (fd < 0)
		return -ENOTTY;
	if (fstat(fd, &st) < 0)
		return -errno;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->master = r->tty = -1;
	if (buf_init(&r->out, OUT_SIZE, OUT_SIZE) < 0 || buf_init(&r->in, IN_SIZE, IN_SIZE) < 0 ||
	    buf_init(&r->front, 4096, FRONT_MAX) < 0 ||
	    buf_init(&r->notices, 1024, NOTICES_MAX) < 0 || !(r->raw_out = malloc(OUT_SIZE)))
		return -ENOMEM;
	res = open_own(r, fd, st.st_rdev);
	if (res < 0)
		return res;
	r->job_control = tcgetpgrp(r->tty) >= 0;
	r->input = same_terminal(STDIN_FILENO, st.st_rdev);
	r->on_stderr = same_terminal(STDERR_FILENO, st.st_rdev);
	r->saved_ok = tcgetattr(r->tty, &r->saved) == 0;
	if (ioctl(r->tty, TIOCGWINSZ, &r->ws) < 0)
		memset(&r->ws, 0, sizeof(r->ws));
	r->style = prompt_style();
	vt_output_init(&r->vt);
	vt_filter_init(&r->filter);
	*ret = TAKE_PTR(r);
	return 0;
}

void pty_relay_agent_terminal(const struct pty_relay *r, struct termios *ret_termios,
                              struct winsize *ret_winsize)
{
	*ret_termios = r->saved;
	*ret_winsize = r->ws;
}

bool pty_relay_has_input(const struct pty_relay *r)
{
	return r->input;
}

bool pty_relay_has_stderr(const struct pty_relay *r)
{
	return r->on_stderr;
}

int pty_relay_start(struct pty_relay *r, struct loop *loop, int master,
                    const struct pty_relay_ops *ops)
{
	int flags = fcntl(master, F_GETFL);

	if (flags < 0 || fcntl(master, F_SETFL, flags | O_NONBLOCK) < 0) {
		close(master);
		return -errno;
	}
	r->loop = loop;
	r->master = master;
	if (ops)
		r->ops = *ops;
	r->started = true;
	r->foreground = is_foreground(r);
	update_mode(r);
	sync_size(r);
	update_events(r);
	return 0;
}

void pty_relay_free(struct pty_relay *r)
{
	if (!r)
		return;
	if (r->started) {
		if (r->prompt) {
			r->closing = true; /* no redraw: the agent is gone */
			pty_relay_prompt_end(r);
		}
		r->closing = false;
		drain_now(r, FREE_DRAIN_MS, true);
		/* The agent is gone: what it left (its alternate screen, a hidden cursor, a
		 * sequence cut off) is undone for the shell, then our last lines. */
		{
			char seq[256];
			size_t n = vt_output_agent_gone(&r->vt, seq, sizeof(seq));

			if (n && n < sizeof(seq) && !r->tty_gone) {
				(void)buf_append(&r->front, seq, n);
				vt_output_init(&r->vt);
				r->vt.at_line_start = false;
			}
			/* The terminal's own title back. */
			if (r->title_pushed && !r->tty_gone)
				(void)buf_append_str(&r->front, "\033[23;2t");
			r->title_pushed = false;
			drain_now(r, FREE_DRAIN_MS / 4, false);
		}
		await_answers(r);
		r->closing = true;
		if (r->master_events)
			(void)loop_del_fd(r->loop, r->master);
		if (r->tty_events)
			(void)loop_del_fd(r->loop, r->tty);
		if (r->hold_timer)
			loop_cancel_timer(r->loop, r->hold_timer);
		if (r->redraw_timer)
			loop_cancel_timer(r->loop, r->redraw_timer);
		if (r->fg_timer)
			loop_cancel_timer(r->loop, r->fg_timer);
	}
	r->closing = true;
	update_mode(r); /* the user's modes back */
	if (r->tty_shared && !r->tty_gone)
		(void)fcntl(r->tty, F_SETFL, r->tty_flags);
	if (rescue.fd == r->tty) {
		__atomic_store_n(&rescue.armed, 0, __ATOMIC_RELEASE);
		rescue.fd = -1;
	}
	if (r->master >= 0)
		close(r->master);
	if (r->tty >= 0)
		close(r->tty);
	free(r->out.data);
	free(r->raw_out);
	free(r->in.data);
	free(r->front.data);
	free(r->notices.data);
	free(r->status);
	free(r->screen);
	free(r);
}

void pty_relay_signal(struct pty_relay *r, int sig)
{
	if (!r->started || r->tty_gone)
		return;
	if (sig == SIGCONT) {
		r->foreground = is_foreground(r);
		update_mode(r);
		sync_size(r);
	} else if (sig == SIGWINCH) {
		sync_size(r);
	}
	flush(r);
}

static bool controlling_foreground(void)
{
	_cleanup_close_ int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);

	return fd >= 0 && tcgetpgrp(fd) == getpgrp();
}

/* Stop our process group with SIG as the terminal would have (the whole job: a pipeline's
 * other members too), and return once continued. A TSTP/TTIN/TTOU to an orphaned process
 * group is discarded by the kernel: then this returns at once. */
static void stop_self(int sig)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL}, old;
	sigset_t set, mask;

	if (sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU) {
		(void)kill(0, SIGSTOP);
		return;
	}
	(void)sigaction(sig, &dfl, &old);
	sigemptyset(&set);
	sigaddset(&set, sig);
	(void)kill(0, sig);
	pthread_sigmask(SIG_UNBLOCK, &set, &mask); /* the stop happens here */
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	(void)sigaction(sig, &old, NULL);
}

int pty_relay_suspend(struct pty_relay *r, int sig)
{
	if (r ? !r->job_control || r->tty_gone : !controlling_foreground())
		return -ENOTTY;
	if (r) {
		/* What it wrote before it stopped (vim leaving its screen) goes out first. */
		drain_now(r, SUSPEND_DRAIN_MS, false);
		r->foreground = false;
		update_mode(r);
		if (r->tty_shared)
			(void)fcntl(r->tty, F_SETFL, r->tty_flags);
	}
	stop_self(sig);
	if (r) {
		if (r->tty_shared)
			(void)fcntl(r->tty, F_SETFL, r->tty_flags | O_NONBLOCK);
		r->foreground = is_foreground(r);
		update_mode(r);
		sync_size(r);
		flush(r);
	}
	return 0;
}

bool pty_relay_can_prompt(const struct pty_relay *r)
{
	return r->readable && !r->tty_gone;
}

void pty_relay_prompt_begin(struct pty_relay *r)
{
	if (r->prompt)
		return;
	r->prompt = true;
	vt_input_init(&r->keys);
	free(r->screen);
	r->screen = NULL;
	update_mode(r);
	if (r->redraw == REDRAW_GROWN) {
		/* Still redrawing after the last prompt: its real size first. */
		r->redraw = REDRAW_NONE;
		if (!r->master_gone)
			(void)ioctl(r->master, TIOCSWINSZ, &r->ws);
	}
	r->hold = HOLD_WAIT;
	/* Without the grace's timer, an agent stopped inside a sequence would hold the prompt
	 * back forever: the prompt comes at once then (what the timeout does). */
	if (!r->hold_timer && loop_add_timer(r->loop, loop_now_ms() + HOLD_GRACE_MS,
	                                     on_hold_timeout, r, &r->hold_timer) < 0) {
		r->hold_timer = NULL;
		enter_prompt(r);
	}
	flush(r);
}

void pty_relay_prompt_show(struct pty_relay *r, const char *text)
{
	if (!r->prompt)
		return;
	free(r->screen);
	r->screen = strdup(text);
	if (r->hold != HOLD_ON)
		return; /* drawn when the prompt gets the screen */
	(void)buf_append_str(&r->front, r->style == VT_PROMPT_SCREEN ? "\x1b[H\x1b[2J" : "\r\n");
	(void)buf_append_lines(&r->front, text);
	flush(r);
}

void pty_relay_prompt_add(struct pty_relay *r, const char *text)
{
	char *more;

	if (!r->prompt)
		return;
	if (asprintf(&more, "%s%s", r->screen ? r->screen : "", text) >= 0) {
		free(r->screen);
		r->screen = more;
	}
	if (r->hold != HOLD_ON)
		return;
	(void)buf_append_lines(&r->front, text);
	flush(r);
}

void pty_relay_prompt_end(struct pty_relay *r)
{
	if (!r->prompt)
		return;
	r->prompt = false;
	if (r->hold == HOLD_ON) {
		char seq[512];
		size_t n = vt_output_prompt_leave(&r->vt, r->style, seq, sizeof(seq));

		if (n >= sizeof(seq))
			n = sizeof(seq) - 1;
		(void)buf_append(&r->front, seq, n);
		if (!r->closing && vt_output_needs_redraw(&r->vt, r->style))
			start_redraw(r);
	}
	r->hold = HOLD_NONE;
	if (r->hold_timer) {
		loop_cancel_timer(r->loop, r->hold_timer);
		r->hold_timer = NULL;
	}
	free(r->screen);
	r->screen = NULL;
	r->swallow_newline_until = loop_now_ms() + SWALLOW_NEWLINE_MS;
	update_mode(r);
	flush(r);
}

void pty_relay_notice(struct pty_relay *r, const char *line)
{
	if (r->tty_gone)
		return;
	if (buf_len(&r->notices) + strlen(line) + 2 > NOTICES_MAX ||
	    !buf_append_str(&r->notices, line) || !buf_append_str(&r->notices, "\r\n")) {
		r->dropped_notices++;
		return;
	}
	if (r->started)
		flush(r);
}
