/* The terminal approver (see tty_approver.h): pure answer parsing and prompt text, and a thin
 * terminal shell around them. */
#include "supervisor/tty_approver.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <termios.h>
#include <unistd.h>

#include "protocol/cleanup.h"
#include "supervisor/term_escape.h"

#define LINE_MAX_BYTES   256  /* an answer longer than this is garbage */
#define SHOW_COMMAND_MAX 512  /* bytes of the command shown on the one-line prompt */
#define SHOW_ARG_MAX     1024 /* bytes of each argument in the details view */
#define SHOW_ARGS_MAX    64   /* arguments listed in the details view */

/* ---- pure ------------------------------------------------------------------------------- */

enum tty_answer tty_approver_parse_answer(const char *line, size_t len)
{
	static const struct {
		const char *word;
		enum tty_answer answer;
	} words[] = {
	        {"allow", TTY_ANSWER_ALLOW_ONCE}, {"y", TTY_ANSWER_ALLOW_ONCE},
	        {"yes", TTY_ANSWER_ALLOW_ONCE},   {"d", TTY_ANSWER_DENY},
	        {"deny", TTY_ANSWER_DENY},        {"n", TTY_ANSWER_DENY},
	        {"no", TTY_ANSWER_DENY},          {"always", TTY_ANSWER_ALLOW_SESSION},
	        {"?", TTY_ANSWER_DETAILS},        {"details", TTY_ANSWER_DETAILS},
	};

	while (len > 0 && (*line == ' ' || *line == '\t'))
		line++, len--;
	while (len > 0 && (line[len - 1] == ' ' || line[len - 1] == '\t' || line[len - 1] == '\r'))
		len--;
	if (len == 1 && line[0] == 'a')
		return TTY_ANSWER_ALLOW_ONCE;
	if (len == 1 && line[0] == 'A')
		return TTY_ANSWER_ALLOW_SESSION;
	for (size_t i = 0; i < ELEMENTSOF(words); i++)
		if (strlen(words[i].word) == len && strncasecmp(line, words[i].word, len) == 0)
			return words[i].answer;
	return TTY_ANSWER_INVALID;
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
	fputs(item->kind == QUEUE_KIND_DOMAIN ? "\n  domain:  " : "\n  command: ", f);
	term_escape_put(f, item->summary, details ? SIZE_MAX / 2 : SHOW_COMMAND_MAX);
	fputs("\n", f);
	if (item->exe) {
		fputs("  exe:     ", f);
		term_escape_put(f, item->exe, SHOW_ARG_MAX);
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
	fputs("[a]llow once  [d]eny  [A]lways (session)  [?] details > ", f);
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
	int fd;
	bool shared; /* the controlling terminal, shared with the agent */
	bool gone;
	bool in_session;
	bool paused;
	bool pgrp_taken;
	pid_t saved_pgrp;
	bool termios_saved;
	struct termios saved_termios;
	bool in_epoll;
	char current[QUEUE_ID_LEN + 1]; /* the item prompted for; "" when none */
	bool answered;                  /* current was answered here */
	char line[LINE_MAX_BYTES];
	size_t line_len;
	bool discarding; /* an over-long line: drop until its newline */
};

/* Best effort: a terminal stopped by flow control must not block the loop. */
static void put(struct tty_approver *ta, const char *s)
{
	size_t len = strlen(s);

	while (len > 0) {
		ssize_t n = write(ta->fd, s, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		s += n;
		len -= (size_t)n;
	}
}

/* tcsetpgrp from a background process group raises SIGTTOU unless it is blocked or ignored;
 * block it for the call only. */
static int set_foreground(int fd, pid_t pgrp)
{
	sigset_t ttou, old;
	int r;

	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	sigprocmask(SIG_BLOCK, &ttou, &old);
	r = tcsetpgrp(fd, pgrp) < 0 ? -errno : 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
	return r;
}

static void epoll_want(struct tty_approver *ta, bool want)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = ta->cfg.epoll_data};

	if (ta->cfg.epoll_fd < 0 || want == ta->in_epoll)
		return;
	if (epoll_ctl(ta->cfg.epoll_fd, want ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, ta->fd, &ev) == 0 ||
	    !want)
		ta->in_epoll = want;
}

static int session_begin(struct tty_approver *ta)
{
	struct termios t;
	int r = 0;

	ta->in_session = true;
	if (ta->shared) {
		if (ta->cfg.pause && ta->cfg.pause(ta->cfg.userdata, true) >= 0)
			ta->paused = true;
		pid_t fg = tcgetpgrp(ta->fd);
		if (fg < 0) {
			r = -errno;
		} else if (fg != getpgrp()) {
			r = set_foreground(ta->fd, getpgrp());
			if (r == 0) {
				ta->pgrp_taken = true;
				ta->saved_pgrp = fg;
			}
		}
	}
	if (tcgetattr(ta->fd, &ta->saved_termios) < 0)
		return r < 0 ? r : -errno;
	ta->termios_saved = true;
	t = ta->saved_termios;
	t.c_iflag |= ICRNL | BRKINT;
	t.c_iflag &= ~(INLCR | IGNCR | ISTRIP);
	t.c_oflag |= OPOST | ONLCR;
	t.c_lflag |= ICANON | ECHO | ECHOE | ECHOK | IEXTEN;
	t.c_lflag &= ~(ISIG | ECHONL | NOFLSH | TOSTOP);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	if (tcsetattr(ta->fd, TCSANOW, &t) < 0 && r == 0)
		r = -errno;
	epoll_want(ta, true);
	return r;
}

static void session_end(struct tty_approver *ta)
{
	if (!ta->in_session)
		return;
	epoll_want(ta, false);
	if (ta->termios_saved)
		(void)tcsetattr(ta->fd, TCSADRAIN, &ta->saved_termios);
	if (ta->pgrp_taken)
		(void)set_foreground(ta->fd, ta->saved_pgrp);
	if (ta->paused && ta->cfg.pause)
		(void)ta->cfg.pause(ta->cfg.userdata, false);
	ta->in_session = ta->paused = ta->pgrp_taken = ta->termios_saved = false;
}

void tty_approver_unfreeze(struct tty_approver *ta)
{
	if (ta->paused && ta->cfg.pause)
		(void)ta->cfg.pause(ta->cfg.userdata, false);
	ta->paused = false;
	/* The terminal too: an agent reading it from the background would stop (SIGTTIN). */
	if (ta->pgrp_taken)
		(void)set_foreground(ta->fd, ta->saved_pgrp);
	ta->pgrp_taken = false;
}

static void show_prompt(struct tty_approver *ta, const struct queue_item *item, uint64_t now,
                        bool details)
{
	_cleanup_free_ char *text = NULL;

	if (tty_approver_format_prompt(item, now, details, &text) < 0)
		put(ta, "\ncloister: approval needed (out of memory to show it) > ");
	else
		put(ta, text);
}

int tty_approver_new(const struct tty_approver_config *config, struct tty_approver **ret)
{
	const char *path = config->tty_path ? config->tty_path : "/dev/tty";
	_cleanup_close_ int fd = -EBADF;
	struct tty_approver *ta;

	fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!isatty(fd))
		return -ENOTTY;
	ta = calloc(1, sizeof(*ta));
	if (!ta)
		return -ENOMEM;
	ta->cfg = *config;
	ta->cfg.tty_path = NULL; /* not kept: the caller owns the string */
	ta->shared = !config->tty_path;
	ta->fd = TAKE_FD(fd);
	*ret = ta;
	return 0;
}

void tty_approver_free(struct tty_approver *ta)
{
	if (!ta)
		return;
	session_end(ta);
	close(ta->fd);
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
		if (!item && !ta->answered) {
			const struct queue_item *done = queue_lookup(q, ta->current);
			char msg[160];
			if (done)
				snprintf(msg, sizeof(msg), "\n[%s] %s by %s\n", done->id,
				         queue_state_to_string(done->state), done->decided_by);
			else
				snprintf(msg, sizeof(msg), "\n[%s] no longer pending\n",
				         ta->current);
			put(ta, msg);
		}
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
	(void)tcflush(ta->fd, TCIFLUSH);
	ta->line_len = 0;
	ta->discarding = false;
	memcpy(ta->current, item->id, sizeof(ta->current));
	show_prompt(ta, item, now_ms, false);
	return r;
}

static int handle_line(struct tty_approver *ta, const struct queue *q, uint64_t now,
                       const char *line, size_t len, struct tty_decision *ret)
{
	const struct queue_item *item = queue_find(q, ta->current);
	enum tty_answer a = tty_approver_parse_answer(line, len);

	if (!item)
		return TTY_APPROVER_NONE; /* sync() will say what happened to it */
	switch (a) {
	case TTY_ANSWER_ALLOW_ONCE:
	case TTY_ANSWER_ALLOW_SESSION:
	case TTY_ANSWER_DENY:
		memcpy(ret->id, item->id, sizeof(ret->id));
		ret->allow = a != TTY_ANSWER_DENY;
		ret->scope = a == TTY_ANSWER_ALLOW_SESSION ? QUEUE_SCOPE_SESSION : QUEUE_SCOPE_ONCE;
		ta->answered = true;
		put(ta, a == TTY_ANSWER_DENY            ? "denied\n"
		        : a == TTY_ANSWER_ALLOW_SESSION ? "allowed for this session\n"
		                                        : "allowed once\n");
		return TTY_APPROVER_DECIDED;
	case TTY_ANSWER_DETAILS:
		show_prompt(ta, item, now, true);
		return TTY_APPROVER_NONE;
	default:
		put(ta, "Please answer a, d, A or ?\n");
		show_prompt(ta, item, now, false);
		return TTY_APPROVER_NONE;
	}
}

static int went_away(struct tty_approver *ta)
{
	session_end(ta);
	ta->gone = true;
	ta->current[0] = '\0';
	return TTY_APPROVER_GONE;
}

int tty_approver_on_readable(struct tty_approver *ta, const struct queue *q, uint64_t now_ms,
                             struct tty_decision *ret)
{
	char buf[LINE_MAX_BYTES];
	ssize_t n;

	if (ta->gone)
		return TTY_APPROVER_GONE;
	do
		n = read(ta->fd, buf, sizeof(buf));
	while (n < 0 && errno == EINTR);
	if (n == 0 || (n < 0 && errno == EIO))
		return went_away(ta);
	if (n < 0 || !tty_approver_active(ta))
		return TTY_APPROVER_NONE; /* EAGAIN, or input nobody asked for */

	for (ssize_t i = 0; i < n; i++) {
		char c = buf[i];
		if (c != '\n') {
			if (ta->line_len < sizeof(ta->line))
				ta->line[ta->line_len++] = c;
			else
				ta->discarding = true;
			continue;
		}
		if (ta->discarding) {
			ta->discarding = false;
			ta->line_len = 0;
			put(ta, "Answer too long.\n");
			continue;
		}
		size_t len = ta->line_len;
		ta->line_len = 0;
		int r = handle_line(ta, q, now_ms, ta->line, len, ret);
		if (r != TTY_APPROVER_NONE)
			return r; /* the rest of the input was typed before this prompt ended */
	}
	return TTY_APPROVER_NONE;
}
