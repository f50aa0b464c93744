/* The terminal approver (see tty_approver.h): pure key parsing and prompt text, and a thin
 * shell around them for its two terminals: the relay's, and one of its own. */
#include "supervisor/tty/tty_approver.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <termios.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/term_escape.h"
#include "protocol/quote.h"
#include "supervisor/tty/vt_parse.h"

#define SHOW_COMMAND_MAX 512  /* bytes of the command shown on the one-line prompt */
#define SHOW_ARG_MAX     1024 /* bytes of each argument in the details view */
#define SHOW_ARGS_MAX    64   /* arguments listed in the details view */
#define READ_MAX         256

#define CHOICES "[a]llow once  [d]eny  [A]lways (session)  [?] details"
#define HINT    "Please answer a, d, A or ?"
/* An exec: every scope, both ways, and what a wider one covers ([c] to change). */
#define EXEC_CHOICES_ALLOW "  allow: [a] once  [A] session  [p] project  [g] global\n"
#define EXEC_CHOICES_DENY  "  deny:  [d] once  [D] session  [P] project  [G] global\n"
#define EXEC_HINT          "Please answer a, A, p, g, d, D, P, G, c, e or ?"
/* A write: allowed in every scope, the path itself; denied once (a lasting refusal of a path
 * is fs.protect's, in the config). */
#define FILE_CHOICES \
	EXEC_CHOICES_ALLOW "  deny:  [d] once (the next write asks again)\n  [?] details"
#define FILE_HINT "Please answer a, A, p, g, d or ?"
#define EDIT_HINT                                                                        \
	"  edit the pattern: * any characters of one argument, ? one character, ** any " \
	"arguments\n"                                                                    \
	"  Enter keeps it, Ctrl-U clears the line, Ctrl-C leaves it as it was\n"

/* ---- pure ------------------------------------------------------------------------------- */

enum tty_answer tty_approver_parse_key(char key)
{
	switch (key) {
	case 'a':
		return TTY_ANSWER_ALLOW_ONCE;
	case 'A':
		return TTY_ANSWER_ALLOW_SESSION;
	case 'p':
		return TTY_ANSWER_ALLOW_PROJECT;
	case 'g':
		return TTY_ANSWER_ALLOW_GLOBAL;
	case 'D':
		return TTY_ANSWER_DENY_SESSION;
	case 'P':
		return TTY_ANSWER_DENY_PROJECT;
	case 'G':
		return TTY_ANSWER_DENY_GLOBAL;
	case 'c':
		return TTY_ANSWER_COVER;
	case 'e':
		return TTY_ANSWER_EDIT;
	case 'd':
	case '\x03': /* Ctrl-C: whoever presses it wants nothing to happen */
		return TTY_ANSWER_DENY;
	case '?':
		return TTY_ANSWER_DETAILS;
	case '\r':
	case '\n':
		return TTY_ANSWER_NONE;
	default:
		return TTY_ANSWER_INVALID;
	}
}

static void put_duration(FILE *f, uint64_t ms)
{
	uint64_t s = (ms + 999) / 1000;

	if (s >= 3600)
		fprintf(f, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s % 3600 / 60);
	else if (s >= 60)
		fprintf(f, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else
		fprintf(f, "%" PRIu64 "s", s);
}

int tty_approver_format_prompt(const struct queue_item *item, uint64_t now_ms, bool details,
                               char **ret_text)
{
	return tty_approver_format_exec_prompt(item, now_ms, details, EXEC_MATCH_EXACT, NULL,
	                                       ret_text);
}

int tty_approver_format_exec_prompt(const struct queue_item *item, uint64_t now_ms, bool details,
                                    enum exec_match cover, const char *pattern, char **ret_text)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	if (!f)
		return -ENOMEM;
	fputs("\n\xe2\x94\x80\xe2\x94\x80 cloister: approval needed ", f);
	fprintf(f, "[%s]\n", item->id);
	fprintf(f, "  %s in sandbox ", queue_kind_to_string(item->kind));
	term_escape_put(f, item->sandbox, SHOW_COMMAND_MAX);
	if (item->project) {
		fputs(" (project ", f);
		term_escape_put(f, item->project, SHOW_COMMAND_MAX);
		fputs(")", f);
	}
	fputs(item->kind == QUEUE_KIND_DOMAIN ? "\n  domain:  "
	      : item->kind == QUEUE_KIND_FILE ? "\n  file:    "
	                                      : "\n  command: ",
	      f);
	term_escape_put(f, item->summary, details ? SIZE_MAX / 2 : SHOW_COMMAND_MAX);
	fputs("\n", f);
	if (item->exe) {
		fputs("  exe:     ", f);
		term_escape_put(f, item->exe, SHOW_ARG_MAX);
		fputs("\n", f);
	}
	if (item->note) {
		fputs("  why:     ", f);
		term_escape_put(f, item->note, SHOW_ARG_MAX);
		fputs("\n", f);
	}
	if (item->interpreter) {
		fputs("  script interpreter: ", f);
		term_escape_put(f, item->interpreter, SHOW_ARG_MAX);
		fputs("\n", f);
	}
	if (item->cwd) {
		fputs("  cwd:     ", f);
		term_escape_put(f, item->cwd, SHOW_ARG_MAX);
		fputs("\n", f);
	}
	if (item->pid >= 0 || item->uid >= 0) {
		fputs(" ", f);
		if (item->pid >= 0)
			fprintf(f, " pid: %" PRId64, item->pid);
		if (item->uid >= 0)
			fprintf(f, " uid: %" PRId64, item->uid);
		if (item->n_waiters > 1)
			fprintf(f, " (+%zu identical)", item->n_waiters - 1);
		fputs("\n", f);
	}
	if (details) {
		size_t shown = item->argc < SHOW_ARGS_MAX ? item->argc : SHOW_ARGS_MAX;
		for (size_t i = 0; i < shown; i++) {
			fprintf(f, "  argv[%zu]: ", i);
			term_escape_put(f, item->argv[i], SHOW_ARG_MAX);
			fputs("\n", f);
		}
		if (shown < item->argc)
			fprintf(f, "  … %zu more arguments\n", item->argc - shown);
	}
	if (item->deadline_ms == UINT64_MAX) {
		fputs("  no time limit\n", f);
	} else {
		fputs("  expires in ", f);
		put_duration(f, item->deadline_ms > now_ms ? item->deadline_ms - now_ms : 0);
		fputs(" (then denied)\n", f);
	}
	if (item->kind == QUEUE_KIND_EXEC && item->exe) {
		fputs(EXEC_CHOICES_ALLOW EXEC_CHOICES_DENY "  [c] a wider scope covers: ", f);
		if (cover == EXEC_MATCH_PROGRAM) {
			fputs("this program, any arguments", f);
		} else if (cover == EXEC_MATCH_PATTERN) {
			fputs("the pattern ", f);
			term_escape_put(f, pattern ? pattern : "", SHOW_ARG_MAX);
		} else {
			fputs("this exact command", f);
		}
		fputs("   [e] edit the pattern   [?] details", f);
	} else if (item->kind == QUEUE_KIND_FILE) {
		fputs(FILE_CHOICES, f);
	} else {
		fputs(CHOICES, f);
	}
	if (fclose(f) != 0) {
		free(text);
		return -ENOMEM;
	}
	*ret_text = text;
	return 0;
}

/* ---- the terminal ------------------------------------------------------------------------ */

struct tty_approver {
	struct tty_approver_config cfg;
	struct pty_relay *relay; /* the user's terminal, or NULL: fd */
	int fd;                  /* a terminal of its own, or -1 */
	bool gone;
	bool in_session;
	bool paused;
	bool termios_saved;
	struct termios saved_termios;
	bool in_epoll;
	struct vt_input keys;
	char current[QUEUE_ID_LEN + 1]; /* the item prompted for; "" when none */
	bool answered;                  /* current was answered here */
	bool details;                   /* the details view is up */
	bool hint;                      /* a key that is no answer was typed */
	bool armed;                     /* keys count */
	uint64_t guard_until;
	char *text;           /* the current prompt's text */
	enum queue_kind kind; /* the current item's */
	/* An exec: what a wider scope covers, and the pattern offered for it. */
	enum exec_match cover;
	char *pattern;
	/* The pattern being edited ([e]): the line, and why the last one was refused. */
	bool editing;
	char edit[EXEC_PATTERN_MAX + 1];
	size_t edit_len;
	char edit_error[256];
};

/* Best effort: a terminal stopped by flow control must not block the loop. */
static void put(struct tty_approver *ta, const char *s)
{
	size_t len = strlen(s);

	while (ta->fd >= 0 && len > 0) {
		ssize_t n = write(ta->fd, s, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		s += n;
		len -= (size_t)n;
	}
}

static void epoll_want(struct tty_approver *ta, bool want)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = ta->cfg.epoll_data};

	if (ta->fd < 0 || ta->cfg.epoll_fd < 0 || want == ta->in_epoll)
		return;
	if (epoll_ctl(ta->cfg.epoll_fd, want ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, ta->fd, &ev) == 0 ||
	    !want)
		ta->in_epoll = want;
}

static int session_begin(struct tty_approver *ta)
{
	struct termios t;

	ta->in_session = true;
	if (ta->cfg.pause && ta->cfg.pause(ta->cfg.userdata, true) >= 0)
		ta->paused = true;
	if (ta->relay) {
		pty_relay_prompt_begin(ta->relay);
		return 0;
	}
	epoll_want(ta, true);
	if (tcgetattr(ta->fd, &ta->saved_termios) < 0)
		return -errno;
	ta->termios_saved = true;
	/* Keys one by one, not shown, ^C and ^Z mere keys; output as usual. */
	t = ta->saved_termios;
	t.c_iflag |= ICRNL;
	t.c_iflag &= ~(INLCR | IGNCR | ISTRIP | IXON);
	t.c_oflag |= OPOST | ONLCR;
	t.c_lflag &= ~(ICANON | ECHO | ECHONL | ISIG | IEXTEN | TOSTOP);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	return tcsetattr(ta->fd, TCSANOW, &t) < 0 ? -errno : 0;
}

static void session_end(struct tty_approver *ta)
{
	if (!ta->in_session)
		return;
	if (ta->relay) {
		pty_relay_prompt_end(ta->relay);
	} else {
		epoll_want(ta, false);
		if (ta->termios_saved)
			(void)tcsetattr(ta->fd, TCSADRAIN, &ta->saved_termios);
	}
	if (ta->paused && ta->cfg.pause)
		(void)ta->cfg.pause(ta->cfg.userdata, false);
	ta->in_session = ta->paused = ta->termios_saved = false;
}

void tty_approver_unfreeze(struct tty_approver *ta)
{
	if (ta->paused && ta->cfg.pause)
		(void)ta->cfg.pause(ta->cfg.userdata, false);
	ta->paused = false;
}

/* The line being edited, under the prompt, its text escaped (the agent chose the command it
 * was prefilled from). */
static char *edit_screen(const struct tty_approver *ta)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	if (!f)
		return NULL;
	fputs(ta->text ? ta->text : "", f);
	fputs("\n" EDIT_HINT, f);
	if (ta->edit_error[0])
		fprintf(f, "  refused: %s\n", ta->edit_error);
	fputs("  pattern: ", f);
	term_escape_put(f, ta->edit, sizeof(ta->edit));
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* The prompt for the current item as it stands: its text, a hint, and "> " once keys count. */
static void show(struct tty_approver *ta, bool fresh)
{
	_cleanup_free_ char *screen = NULL;

	if (ta->editing) {
		screen = edit_screen(ta);
		if (!screen)
			return;
		if (ta->relay) {
			pty_relay_prompt_show(ta->relay, screen);
			return;
		}
		if (fresh)
			put(ta, "\n");
		put(ta, screen);
		return;
	}
	if (asprintf(&screen, "%s%s%s", ta->text ? ta->text : "approval needed " CHOICES,
	             !ta->hint                                     ? ""
	             : ta->text && strstr(ta->text, "[c] a wider") ? "\n" EXEC_HINT
	             : ta->kind == QUEUE_KIND_FILE                 ? "\n" FILE_HINT
	                                                           : "\n" HINT,
	             ta->armed ? " > " : "") < 0)
		return;
	if (ta->relay) {
		pty_relay_prompt_show(ta->relay, screen);
		return;
	}
	if (fresh)
		put(ta, "\n");
	put(ta, screen);
}

static void set_text(struct tty_approver *ta, const struct queue_item *item, uint64_t now)
{
	free(ta->text);
	ta->text = NULL;
	if (tty_approver_format_exec_prompt(item, now, ta->details, ta->cover, ta->pattern,
	                                    &ta->text) < 0)
		ta->text = NULL; /* show() says what it can */
}

static void arm(struct tty_approver *ta)
{
	if (ta->armed)
		return;
	ta->armed = true;
	if (ta->relay)
		pty_relay_prompt_add(ta->relay, " > ");
	else
		put(ta, " > ");
}

int tty_approver_new(const struct tty_approver_config *config, struct tty_approver **ret)
{
	_cleanup_close_ int fd = -EBADF;
	struct tty_approver *ta;

	if (config->tty_path) {
		fd = open(config->tty_path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		if (!isatty(fd))
			return -ENOTTY;
	} else if (!config->relay || !pty_relay_can_prompt(config->relay)) {
		return -ENOTTY;
	}
	ta = calloc(1, sizeof(*ta));
	if (!ta)
		return -ENOMEM;
	ta->cfg = *config;
	ta->cfg.tty_path = NULL; /* not kept: the caller owns the string */
	ta->relay = config->tty_path ? NULL : config->relay;
	ta->fd = TAKE_FD(fd);
	vt_input_init(&ta->keys);
	*ret = ta;
	return 0;
}

void tty_approver_free(struct tty_approver *ta)
{
	if (!ta)
		return;
	session_end(ta);
	if (ta->fd >= 0)
		close(ta->fd);
	free(ta->text);
	free(ta->pattern);
	free(ta);
}

int tty_approver_fd(const struct tty_approver *ta)
{
	return ta->fd;
}

bool tty_approver_active(const struct tty_approver *ta)
{
	return !ta->gone && ta->current[0] && !ta->answered;
}

bool tty_approver_gone(const struct tty_approver *ta)
{
	return ta->gone;
}

void tty_approver_set_gone(struct tty_approver *ta)
{
	session_end(ta);
	ta->gone = true;
	ta->current[0] = '\0';
}

/* How the item prompted for ended, when it did elsewhere. */
static void say_withdrawn(struct tty_approver *ta, const struct queue *q)
{
	const struct queue_item *done = queue_lookup(q, ta->current);
	char msg[160];

	if (done)
		snprintf(msg, sizeof(msg), "[%s] %s by %s", done->id,
		         queue_state_to_string(done->state), done->decided_by);
	else
		snprintf(msg, sizeof(msg), "[%s] no longer pending", ta->current);
	if (ta->relay) {
		char line[192];

		snprintf(line, sizeof(line), "cloister: %s", msg);
		pty_relay_notice(ta->relay, line);
	} else {
		put(ta, "\n");
		put(ta, msg);
		put(ta, "\n");
	}
}

int tty_approver_sync(struct tty_approver *ta, const struct queue *q, uint64_t now_ms)
{
	const struct queue_item *item;
	int r = 0;

	if (ta->gone)
		return 0;
	if (ta->current[0]) {
		item = queue_find(q, ta->current);
		if (item && !ta->answered)
			return 0; /* still waiting for the person */
		if (!item && !ta->answered)
			say_withdrawn(ta, q);
		ta->current[0] = '\0';
		ta->answered = false;
	}

	item = queue_first(q);
	if (!item) {
		session_end(ta);
		return 0;
	}
	if (!ta->in_session)
		r = session_begin(ta);
	/* Keys typed before the prompt was shown were meant for someone else. */
	if (!ta->relay)
		(void)tcflush(ta->fd, TCIFLUSH);
	vt_input_init(&ta->keys);
	memcpy(ta->current, item->id, sizeof(ta->current));
	ta->kind = item->kind;
	ta->details = ta->hint = ta->armed = ta->editing = false;
	ta->cover = EXEC_MATCH_EXACT;
	free(ta->pattern);
	ta->pattern = NULL;
	if (item->exe)
		(void)exec_pattern_suggest(item->exe, (const char *const *)item->argv, item->argc,
		                           &ta->pattern, NULL);
	ta->guard_until = now_ms + TTY_APPROVER_GUARD_MS;
	set_text(ta, item, now_ms);
	show(ta, true);
	return r;
}

uint64_t tty_approver_next_deadline(const struct tty_approver *ta)
{
	return tty_approver_active(ta) && !ta->armed ? ta->guard_until : UINT64_MAX;
}

void tty_approver_tick(struct tty_approver *ta, uint64_t now_ms)
{
	if (tty_approver_active(ta) && !ta->armed && now_ms >= ta->guard_until)
		arm(ta);
}

/* The command of ITEM as a pattern matching just it: the program's name and each argument,
 * quoted as the card shows them; the person edits it from there. */
static void edit_begin(struct tty_approver *ta, const struct queue_item *item)
{
	const char *slash = strrchr(item->exe, '/');
	size_t len = 0;

	ta->editing = true;
	ta->edit_error[0] = '\0';
	if (ta->cover == EXEC_MATCH_PATTERN && ta->pattern) {
		len = (size_t)snprintf(ta->edit, sizeof(ta->edit), "%s", ta->pattern);
	} else {
		for (size_t i = 0; i < (item->argc ? item->argc : 1); i++) {
			const char *arg = i == 0 ? (slash ? slash + 1 : item->exe) : item->argv[i];
			size_t alen = strlen(arg), qlen = cl_quote_arg_length(arg, alen);

			if (len + (i > 0) + qlen >= sizeof(ta->edit)) {
				/* Too long to spell whole: the rest is any arguments. */
				if (len + 3 < sizeof(ta->edit))
					len += (size_t)snprintf(ta->edit + len,
					                        sizeof(ta->edit) - len, " **");
				break;
			}
			if (i > 0)
				ta->edit[len++] = ' ';
			if (cl_quote_arg(arg, alen, ta->edit + len, sizeof(ta->edit) - len) < 0)
				break;
			len += qlen;
		}
	}
	if (len >= sizeof(ta->edit))
		len = sizeof(ta->edit) - 1;
	ta->edit[len] = '\0';
	ta->edit_len = len;
}

/* One key while the pattern line is edited: Enter keeps the line as what a wider scope
 * covers (once it makes a rule), Backspace, Ctrl-U, Ctrl-C, and text. */
static void edit_key(struct tty_approver *ta, const struct queue_item *item, uint64_t now, char key)
{
	unsigned char c = (unsigned char)key;

	switch (c) {
	case '\r':
	case '\n': {
		struct exec_pattern_rule rule = {0};
		struct cl_error err = {""};
		char *copy;

		if (exec_pattern_rule(item->exe, (const char *const *)item->argv, item->argc,
		                      EXEC_MATCH_PATTERN, ta->edit, &rule, &err) < 0) {
			snprintf(ta->edit_error, sizeof(ta->edit_error), "%.250s", err.msg);
			break;
		}
		exec_pattern_rule_done(&rule);
		copy = strdup(ta->edit);
		if (!copy) {
			snprintf(ta->edit_error, sizeof(ta->edit_error), "out of memory");
			break;
		}
		free(ta->pattern);
		ta->pattern = copy;
		ta->cover = EXEC_MATCH_PATTERN;
		ta->editing = false;
		set_text(ta, item, now);
		break;
	}
	case 0x03: /* Ctrl-C: nothing changes (Esc starts a key's escape sequence) */
		ta->editing = false;
		break;
	case 0x15: /* Ctrl-U */
		ta->edit_len = 0;
		ta->edit[0] = '\0';
		break;
	case 0x7f:
	case 0x08:
		/* One character: back over UTF-8 continuation bytes. */
		while (ta->edit_len > 0 && ((unsigned char)ta->edit[--ta->edit_len] & 0xc0) == 0x80)
			;
		ta->edit[ta->edit_len] = '\0';
		break;
	default:
		if (c < 0x20 || ta->edit_len + 1 >= sizeof(ta->edit))
			return; /* no control characters in a pattern; full */
		ta->edit[ta->edit_len++] = key;
		ta->edit[ta->edit_len] = '\0';
		break;
	}
	show(ta, true);
}

static int handle_key(struct tty_approver *ta, const struct queue *q, uint64_t now, char key,
                      struct tty_decision *ret)
{
	const struct queue_item *item = queue_find(q, ta->current);
	enum tty_answer a = tty_approver_parse_key(key);

	if (!item)
		return TTY_APPROVER_NONE; /* sync() will say what happened to it */
	if (ta->editing) {
		if (item->kind == QUEUE_KIND_EXEC && item->exe)
			edit_key(ta, item, now, key);
		return TTY_APPROVER_NONE;
	}
	/* A write: allowed in every scope (its path), denied once. */
	if (item->kind == QUEUE_KIND_FILE) {
		if (a == TTY_ANSWER_DENY_SESSION || a == TTY_ANSWER_DENY_PROJECT ||
		    a == TTY_ANSWER_DENY_GLOBAL || a == TTY_ANSWER_COVER || a == TTY_ANSWER_EDIT)
			a = TTY_ANSWER_INVALID;
	} else if (item->kind != QUEUE_KIND_EXEC || !item->exe) {
		/* Scopes beyond the session's "A", and what they cover, are for execs. */
		if (a == TTY_ANSWER_ALLOW_PROJECT || a == TTY_ANSWER_ALLOW_GLOBAL ||
		    a == TTY_ANSWER_DENY_SESSION || a == TTY_ANSWER_DENY_PROJECT ||
		    a == TTY_ANSWER_DENY_GLOBAL || a == TTY_ANSWER_COVER || a == TTY_ANSWER_EDIT)
			a = TTY_ANSWER_INVALID;
	}
	switch (a) {
	case TTY_ANSWER_ALLOW_ONCE:
	case TTY_ANSWER_ALLOW_SESSION:
	case TTY_ANSWER_ALLOW_PROJECT:
	case TTY_ANSWER_ALLOW_GLOBAL:
	case TTY_ANSWER_DENY:
	case TTY_ANSWER_DENY_SESSION:
	case TTY_ANSWER_DENY_PROJECT:
	case TTY_ANSWER_DENY_GLOBAL: {
		static const char *const said[] = {
		        [TTY_ANSWER_ALLOW_ONCE] = "a\nallowed once\n",
		        [TTY_ANSWER_ALLOW_SESSION] = "A\nallowed for this session\n",
		        [TTY_ANSWER_ALLOW_PROJECT] = "p\nallowed for this project\n",
		        [TTY_ANSWER_ALLOW_GLOBAL] = "g\nallowed everywhere\n",
		        [TTY_ANSWER_DENY] = "d\ndenied\n",
		        [TTY_ANSWER_DENY_SESSION] = "D\ndenied for this session\n",
		        [TTY_ANSWER_DENY_PROJECT] = "P\ndenied for this project\n",
		        [TTY_ANSWER_DENY_GLOBAL] = "G\ndenied everywhere\n",
		};

		memcpy(ret->id, item->id, sizeof(ret->id));
		ret->allow = a == TTY_ANSWER_ALLOW_ONCE || a == TTY_ANSWER_ALLOW_SESSION ||
		             a == TTY_ANSWER_ALLOW_PROJECT || a == TTY_ANSWER_ALLOW_GLOBAL;
		ret->scope = a == TTY_ANSWER_ALLOW_SESSION || a == TTY_ANSWER_DENY_SESSION
		                     ? QUEUE_SCOPE_SESSION
		             : a == TTY_ANSWER_ALLOW_PROJECT || a == TTY_ANSWER_DENY_PROJECT
		                     ? QUEUE_SCOPE_PROJECT
		             : a == TTY_ANSWER_ALLOW_GLOBAL || a == TTY_ANSWER_DENY_GLOBAL
		                     ? QUEUE_SCOPE_GLOBAL
		                     : QUEUE_SCOPE_ONCE;
		ret->match = item->kind == QUEUE_KIND_EXEC ? ta->cover : EXEC_MATCH_EXACT;
		ret->pattern = ret->match == EXEC_MATCH_PATTERN ? ta->pattern : NULL;
		ta->answered = true;
		if (!ta->relay)
			put(ta, said[a]);
		return TTY_APPROVER_DECIDED;
	}
	case TTY_ANSWER_COVER:
		/* this command → this program → the suggested pattern → this command */
		ta->cover = ta->cover == EXEC_MATCH_EXACT                    ? EXEC_MATCH_PROGRAM
		            : ta->cover == EXEC_MATCH_PROGRAM && ta->pattern ? EXEC_MATCH_PATTERN
		                                                             : EXEC_MATCH_EXACT;
		ta->hint = false;
		set_text(ta, item, now);
		show(ta, true);
		return TTY_APPROVER_NONE;
	case TTY_ANSWER_EDIT:
		ta->hint = false;
		edit_begin(ta, item);
		show(ta, true);
		return TTY_APPROVER_NONE;
	case TTY_ANSWER_DETAILS:
		ta->details = true;
		ta->hint = false;
		set_text(ta, item, now);
		show(ta, true);
		return TTY_APPROVER_NONE;
	case TTY_ANSWER_NONE:
		return TTY_APPROVER_NONE;
	default:
		if (!ta->hint || !ta->relay) {
			ta->hint = true;
			set_text(ta, item, now);
			show(ta, true);
		}
		return TTY_APPROVER_NONE;
	}
}

int tty_approver_on_keys(struct tty_approver *ta, const struct queue *q, uint64_t now_ms,
                         const char *keys, size_t n, struct tty_decision *ret)
{
	if (ta->gone)
		return TTY_APPROVER_GONE;
	if (!tty_approver_active(ta))
		return TTY_APPROVER_NONE; /* typed after the answer, at this prompt: dropped */
	if (now_ms < ta->guard_until)
		return TTY_APPROVER_NONE; /* typed before anyone could have read the prompt */
	arm(ta);
	for (size_t i = 0; i < n; i++) {
		int r = handle_key(ta, q, now_ms, keys[i], ret);

		if (r != TTY_APPROVER_NONE)
			return r; /* the rest was typed at a prompt that is over */
	}
	return TTY_APPROVER_NONE;
}

static int went_away(struct tty_approver *ta)
{
	tty_approver_set_gone(ta);
	return TTY_APPROVER_GONE;
}

int tty_approver_on_readable(struct tty_approver *ta, const struct queue *q, uint64_t now_ms,
                             struct tty_decision *ret)
{
	char buf[READ_MAX], keys[READ_MAX];
	ssize_t n;

	if (ta->gone)
		return TTY_APPROVER_GONE;
	if (ta->fd < 0)
		return TTY_APPROVER_NONE;
	do
		n = read(ta->fd, buf, sizeof(buf));
	while (n < 0 && errno == EINTR);
	if (n == 0 || (n < 0 && errno == EIO))
		return went_away(ta);
	/* A lone ^D is EOF in canonical mode, a key here: nobody types it at a prompt. */
	if (n == 1 && buf[0] == '\x04')
		return went_away(ta);
	if (n < 0)
		return TTY_APPROVER_NONE; /* EAGAIN */
	return tty_approver_on_keys(ta, q, now_ms, keys,
	                            vt_input_keys(&ta->keys, buf, (size_t)n, keys), ret);
}
