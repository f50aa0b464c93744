/* The terminal approver, driven through real pseudo-terminals (no root needed): the prompt
 * text, answers, re-prompts, type-ahead, EOF and hang-up, cancellation, one prompt at a time,
 * terminal modes restored, and on a shared controlling terminal the foreground process group
 * and the pause callback. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "supervisor/tty_approver.h"

/* ---- pure --------------------------------------------------------------------------------- */

static void test_answers_are_parsed_strictly(void **state)
{
	static const struct {
		const char *line;
		enum tty_answer want;
	} cases[] = {
	        {"a", TTY_ANSWER_ALLOW_ONCE},
	        {"  a\t", TTY_ANSWER_ALLOW_ONCE},
	        {"allow", TTY_ANSWER_ALLOW_ONCE},
	        {"Allow", TTY_ANSWER_ALLOW_ONCE},
	        {"y", TTY_ANSWER_ALLOW_ONCE},
	        {"YES", TTY_ANSWER_ALLOW_ONCE},
	        {"a\r", TTY_ANSWER_ALLOW_ONCE},
	        {"A", TTY_ANSWER_ALLOW_SESSION},
	        {"always", TTY_ANSWER_ALLOW_SESSION},
	        {"ALWAYS", TTY_ANSWER_ALLOW_SESSION},
	        {"d", TTY_ANSWER_DENY},
	        {"D", TTY_ANSWER_DENY},
	        {"deny", TTY_ANSWER_DENY},
	        {"n", TTY_ANSWER_DENY},
	        {"No", TTY_ANSWER_DENY},
	        {"?", TTY_ANSWER_DETAILS},
	        {"details", TTY_ANSWER_DETAILS},
	        {"", TTY_ANSWER_INVALID},
	        {"   ", TTY_ANSWER_INVALID},
	        {"aa", TTY_ANSWER_INVALID},
	        {"a d", TTY_ANSWER_INVALID},
	        {"allowed", TTY_ANSWER_INVALID},
	        {"x", TTY_ANSWER_INVALID},
	        {"\x03", TTY_ANSWER_INVALID},
	        {"yes please", TTY_ANSWER_INVALID},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum tty_answer got =
		        tty_approver_parse_answer(cases[i].line, strlen(cases[i].line));
		if (got != cases[i].want)
			fail_msg("'%s': got %d, want %d", cases[i].line, got, cases[i].want);
	}
	/* Bytes after a NUL still count: "a\0x" is not "a". */
	assert_int_equal(tty_approver_parse_answer("a\0x", 3), TTY_ANSWER_INVALID);
}

static const char *const ARGV[] = {"ls", "-l"};

static struct queue_request request(uint64_t cookie, const char *summary)
{
	return (struct queue_request){
	        .kind = QUEUE_KIND_EXEC,
	        .sandbox = "main",
	        .project = "my-api",
	        .summary = summary,
	        .exe = "/usr/bin/ls",
	        .argv = ARGV,
	        .argc = 2,
	        .cwd = "/work",
	        .interpreter = "/bin/sh",
	        .pid = 4242,
	        .uid = 1000,
	        .cookie = cookie,
	};
}

static struct queue *new_queue(void)
{
	struct queue_config cfg;
	struct queue *q = NULL;

	queue_config_init(&cfg);
	memcpy(cfg.id_key, "tty-approver-key", 16);
	assert_int_equal(queue_new(&cfg, &q), 0);
	queue_set_approvers(q, 1, 0);
	return q;
}

static void drain(struct queue *q)
{
	struct queue_event ev;
	struct queue_resolution res;

	while (queue_pop_event(q, &ev))
		queue_event_release(&ev);
	while (queue_pop_resolution(q, &res))
		queue_resolution_release(&res);
}

static void test_prompt_shows_what_is_asked_and_the_choices(void **state)
{
	struct queue *q = new_queue();
	struct queue_request r = request(1, "ls -l");
	char id[QUEUE_ID_LEN + 1], *text = NULL;
	const char *want[] = {"approval needed",  "exec in sandbox main (project my-api)",
	                      "command: ls -l",   "exe:     /usr/bin/ls",
	                      "cwd:     /work",   "script interpreter: /bin/sh",
	                      "pid: 4242",        "uid: 1000",
	                      "expires in 4m59s", "[a]llow once",
	                      "[d]eny",           "[A]lways (session)",
	                      "[?] details"};

	assert_int_equal(queue_add(q, &r, 0, id), QUEUE_ADD_NEW);
	assert_int_equal(tty_approver_format_prompt(queue_find(q, id), 1000, false, &text), 0);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(text, want[i]))
			fail_msg("prompt lacks '%s':\n%s", want[i], text);
	assert_non_null(strstr(text, id));
	assert_null(strstr(text, "argv[0]"));
	free(text);

	assert_int_equal(tty_approver_format_prompt(queue_find(q, id), 1000, true, &text), 0);
	assert_non_null(strstr(text, "argv[0]: ls\n"));
	assert_non_null(strstr(text, "argv[1]: -l\n"));
	free(text);

	struct queue_request d = {.kind = QUEUE_KIND_DOMAIN,
	                          .sandbox = "main",
	                          .summary = "docs.example.com",
	                          .pid = -1,
	                          .uid = -1,
	                          .cookie = 2};
	assert_int_equal(queue_add(q, &d, 0, id), QUEUE_ADD_NEW);
	assert_int_equal(tty_approver_format_prompt(queue_find(q, id), 59000, false, &text), 0);
	assert_non_null(strstr(text, "domain in sandbox main\n"));
	assert_non_null(strstr(text, "domain:  docs.example.com"));
	assert_non_null(strstr(text, "expires in 1s"));
	assert_null(strstr(text, "pid:"));
	free(text);
	drain(q);
	queue_free(q);
}

static void test_hostile_strings_cannot_rewrite_the_prompt(void **state)
{
	struct queue *q = new_queue();
	/* An OSC title change, a C1 CSI, a right-to-left override, a bell, invalid UTF-8. */
	static const char hostile[] = "rm \x1b]0;pwned\x07 \xc2\x9b"
	                              "2J \xe2\x80\xae"
	                              "fdp \xff \xe0\x80\xaf";
	const char *argv[] = {"rm", hostile};
	struct queue_request r = request(1, hostile);
	char id[QUEUE_ID_LEN + 1], *text = NULL;

	r.argv = argv;
	r.cwd = "/tmp/\r\x1b[2K";
	assert_int_equal(queue_add(q, &r, 0, id), QUEUE_ADD_NEW);
	for (int details = 0; details <= 1; details++) {
		assert_int_equal(tty_approver_format_prompt(queue_find(q, id), 0, details, &text),
		                 0);
		assert_null(strchr(text, '\x1b'));
		assert_null(strchr(text, '\x07'));
		assert_null(strchr(text, '\r'));
		assert_null(strstr(text, "\xc2\x9b"));
		assert_null(strstr(text, "\xe2\x80\xae"));
		assert_null(strstr(text, "\xff"));
		assert_null(strstr(text, "\xe0"));
		assert_non_null(strstr(text, "\\x1b]0;pwned\\x07 \\u{009b}2J \\u{202e}fdp \\xff "
		                             "\\xe0\\x80\\xaf"));
		assert_non_null(strstr(text, "cwd:     /tmp/\\x0d\\x1b[2K"));
		free(text);
	}
	drain(q);
	queue_free(q);
}

static void test_long_commands_are_cut_on_the_prompt_not_in_details(void **state)
{
	struct queue *q = new_queue();
	char big[2001], run[600], *text = NULL, id[QUEUE_ID_LEN + 1];
	struct queue_request r;

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memset(run, 'x', sizeof(run) - 1);
	run[sizeof(run) - 1] = '\0';
	r = request(1, big);
	assert_int_equal(queue_add(q, &r, 0, id), QUEUE_ADD_NEW);
	assert_int_equal(tty_approver_format_prompt(queue_find(q, id), 0, false, &text), 0);
	assert_null(strstr(text, run));
	assert_non_null(strstr(text, "\xe2\x80\xa6"));
	free(text);
	assert_int_equal(tty_approver_format_prompt(queue_find(q, id), 0, true, &text), 0);
	assert_non_null(strstr(text, big));
	free(text);
	drain(q);
	queue_free(q);
}

/* ---- pseudo-terminals ------------------------------------------------------------------- */

struct pty {
	int master, slave;
	char name[128];
	char out[65536]; /* what the approver wrote, as the person sees it */
	size_t out_len;
};

static void pty_open(struct pty *p)
{
	struct termios raw;

	memset(p, 0, sizeof(*p));
	assert_int_equal(openpty(&p->master, &p->slave, p->name, NULL, NULL), 0);
	fcntl(p->master, F_SETFD, FD_CLOEXEC);
	fcntl(p->slave, F_SETFD, FD_CLOEXEC);
	/* Start from a mode an agent could have left: raw, no echo. */
	assert_int_equal(tcgetattr(p->slave, &raw), 0);
	cfmakeraw(&raw);
	assert_int_equal(tcsetattr(p->slave, TCSANOW, &raw), 0);
}

static void pty_close(struct pty *p)
{
	if (p->master >= 0)
		close(p->master);
	if (p->slave >= 0)
		close(p->slave);
}

/* Read the master side until TEXT appears after position *from (or 3 s pass). */
static bool pty_wait_for(struct pty *p, size_t *from, const char *text)
{
	for (int waited = 0; waited < 3000;) {
		p->out[p->out_len] = '\0';
		char *hit = strstr(p->out + *from, text);
		if (hit) {
			*from = (size_t)(hit - p->out) + strlen(text);
			return true;
		}
		struct pollfd pfd = {.fd = p->master, .events = POLLIN};
		if (poll(&pfd, 1, 50) == 1 && (pfd.revents & POLLIN)) {
			ssize_t n = read(p->master, p->out + p->out_len,
			                 sizeof(p->out) - 1 - p->out_len);
			if (n > 0)
				p->out_len += (size_t)n;
		} else {
			waited += 50;
		}
	}
	return false;
}

/* Read whatever the approver writes within 100 ms. */
static void pty_drain(struct pty *p)
{
	struct pollfd pfd = {.fd = p->master, .events = POLLIN};

	while (poll(&pfd, 1, 100) == 1 && (pfd.revents & POLLIN)) {
		ssize_t n = read(p->master, p->out + p->out_len, sizeof(p->out) - 1 - p->out_len);
		if (n <= 0)
			break;
		p->out_len += (size_t)n;
	}
	p->out[p->out_len] = '\0';
}

static void pty_type(struct pty *p, const char *s)
{
	assert_int_equal(write(p->master, s, strlen(s)), (ssize_t)strlen(s));
}

static void expect_output(struct pty *p, size_t *from, const char *text)
{
	if (!pty_wait_for(p, from, text))
		fail_msg("the terminal never showed '%s'; it showed:\n%s", text, p->out);
}

/* Wait until the approver's fd is readable, then let it read. */
static int readable(struct tty_approver *ta, const struct queue *q, uint64_t now,
                    struct tty_decision *dec)
{
	struct pollfd pfd = {.fd = tty_approver_fd(ta), .events = POLLIN};

	if (poll(&pfd, 1, 3000) != 1)
		fail_msg("the approver's fd never became readable");
	return tty_approver_on_readable(ta, q, now, dec);
}

static struct tty_approver *separate_approver(struct pty *p, int epoll_fd)
{
	struct tty_approver_config cfg = {
	        .tty_path = p->name, .epoll_fd = epoll_fd, .epoll_data = 42};
	struct tty_approver *ta = NULL;

	assert_int_equal(tty_approver_new(&cfg, &ta), 0);
	assert_non_null(ta);
	return ta;
}

static bool termios_equal(const struct termios *a, const struct termios *b)
{
	return a->c_iflag == b->c_iflag && a->c_oflag == b->c_oflag && a->c_cflag == b->c_cflag &&
	       a->c_lflag == b->c_lflag && memcmp(a->c_cc, b->c_cc, sizeof(a->c_cc)) == 0;
}

static void test_typed_answers_decide(void **state)
{
	static const struct {
		const char *typed;
		bool allow;
		enum queue_scope scope;
		const char *echo;
	} cases[] = {
	        {"a\n", true, QUEUE_SCOPE_ONCE, "allowed once"},
	        {"A\n", true, QUEUE_SCOPE_SESSION, "allowed for this session"},
	        {"d\n", false, QUEUE_SCOPE_ONCE, "denied"},
	        {"  yes \n", true, QUEUE_SCOPE_ONCE, "allowed once"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pty p;
		struct queue *q = new_queue();
		struct queue_request r = request(1, "ls -l");
		struct termios before, during, after;
		struct tty_decision dec;
		char id[QUEUE_ID_LEN + 1];
		size_t at = 0;

		pty_open(&p);
		assert_int_equal(tcgetattr(p.slave, &before), 0);
		struct tty_approver *ta = separate_approver(&p, -1);
		assert_false(tty_approver_active(ta));
		assert_int_equal(queue_add(q, &r, 0, id), QUEUE_ADD_NEW);
		assert_int_equal(tty_approver_sync(ta, q, 0), 0);
		assert_true(tty_approver_active(ta));
		expect_output(&p, &at, id);
		expect_output(&p, &at, "command: ls -l");
		expect_output(&p, &at, "expires in 5m00s");
		expect_output(&p, &at, "[a]llow once  [d]eny  [A]lways (session)  [?] details > ");
		/* A sane line mode while the prompt is up. */
		assert_int_equal(tcgetattr(p.slave, &during), 0);
		assert_true(during.c_lflag & ICANON);
		assert_true(during.c_lflag & ECHO);
		assert_false(during.c_lflag & ISIG);

		pty_type(&p, cases[i].typed);
		assert_int_equal(readable(ta, q, 10, &dec), TTY_APPROVER_DECIDED);
		assert_string_equal(dec.id, id);
		assert_int_equal(dec.allow, cases[i].allow);
		assert_int_equal(dec.scope, cases[i].scope);
		expect_output(&p, &at, cases[i].echo);
		assert_false(tty_approver_active(ta));

		assert_int_equal(queue_decide(q, dec.id, dec.allow, dec.scope, "tty", NULL, 10), 0);
		assert_int_equal(tty_approver_sync(ta, q, 10), 0);
		assert_false(tty_approver_active(ta));
		/* The terminal is back in the agent's mode, and nothing said "decided by". */
		assert_int_equal(tcgetattr(p.slave, &after), 0);
		assert_true(termios_equal(&before, &after));
		p.out[p.out_len] = '\0';
		assert_null(strstr(p.out, "approved by tty"));

		tty_approver_free(ta);
		pty_close(&p);
		drain(q);
		queue_free(q);
	}
}

static void test_garbage_reprompts_and_details_show_argv(void **state)
{
	struct pty p;
	struct queue *q = new_queue();
	struct queue_request r = request(1, "ls -l");
	struct tty_decision dec;
	char id[QUEUE_ID_LEN + 1], longline[600];
	size_t at = 0;

	pty_open(&p);
	struct tty_approver *ta = separate_approver(&p, -1);
	assert_int_equal(queue_add(q, &r, 0, id), QUEUE_ADD_NEW);
	assert_int_equal(tty_approver_sync(ta, q, 0), 0);
	expect_output(&p, &at, "details > ");

	pty_type(&p, "maybe\n");
	assert_int_equal(readable(ta, q, 1000, &dec), TTY_APPROVER_NONE);
	expect_output(&p, &at, "Please answer a, d, A or ?");
	expect_output(&p, &at, "expires in 4m59s");
	expect_output(&p, &at, "details > ");
	assert_true(tty_approver_active(ta));

	pty_type(&p, "\n"); /* an empty line never allows */
	assert_int_equal(readable(ta, q, 1000, &dec), TTY_APPROVER_NONE);
	expect_output(&p, &at, "Please answer");

	memset(longline, 'a', sizeof(longline) - 2);
	longline[sizeof(longline) - 2] = '\n';
	longline[sizeof(longline) - 1] = '\0';
	pty_type(&p, longline); /* "aaaa…a": not "a" */
	/* Read in pieces until the approver has seen the whole line. */
	for (int tries = 0; tries < 10 && !strstr(p.out + at, "Answer too long"); tries++) {
		assert_int_equal(readable(ta, q, 1000, &dec), TTY_APPROVER_NONE);
		pty_drain(&p);
	}
	expect_output(&p, &at, "Answer too long");

	pty_type(&p, "?\n");
	assert_int_equal(readable(ta, q, 1000, &dec), TTY_APPROVER_NONE);
	expect_output(&p, &at, "argv[0]: ls");
	expect_output(&p, &at, "argv[1]: -l");

	pty_type(&p, "d\n");
	assert_int_equal(readable(ta, q, 2000, &dec), TTY_APPROVER_DECIDED);
	assert_false(dec.allow);
	tty_approver_free(ta);
	pty_close(&p);
	drain(q);
	queue_free(q);
}

static void test_keys_typed_before_the_prompt_do_not_answer_it(void **state)
{
	struct pty p;
	struct queue *q = new_queue();
	struct queue_request r = request(1, "ls -l");
	struct tty_decision dec;
	char id[QUEUE_ID_LEN + 1];
	size_t at = 0;

	pty_open(&p);
	struct tty_approver *ta = separate_approver(&p, -1);
	pty_type(&p, "a\n"); /* meant for the agent */
	usleep(50 * 1000);
	assert_int_equal(queue_add(q, &r, 0, id), QUEUE_ADD_NEW);
	assert_int_equal(tty_approver_sync(ta, q, 0), 0);
	expect_output(&p, &at, "details > ");
	struct pollfd pfd = {.fd = tty_approver_fd(ta), .events = POLLIN};
	assert_int_equal(poll(&pfd, 1, 200), 0);
	assert_int_equal(tty_approver_on_readable(ta, q, 0, &dec), TTY_APPROVER_NONE);
	assert_true(tty_approver_active(ta));
	tty_approver_free(ta);
	pty_close(&p);
	drain(q);
	queue_free(q);
}

static void test_hangup_and_eof_mean_nobody_is_there(void **state)
{
	for (int eof = 0; eof <= 1; eof++) {
		struct pty p;
		struct queue *q = new_queue();
		struct queue_request r = request(9, "ls -l");
		struct tty_decision dec;
		struct queue_resolution res;
		char id[QUEUE_ID_LEN + 1];
		size_t at = 0;

		pty_open(&p);
		struct tty_approver *ta = separate_approver(&p, -1);
		assert_int_equal(queue_add(q, &r, 0, id), QUEUE_ADD_NEW);
		assert_int_equal(tty_approver_sync(ta, q, 0), 0);
		expect_output(&p, &at, "details > ");
		if (eof) {
			pty_type(&p, "\x04"); /* ^D at the start of a line */
		} else {
			close(p.master);
			p.master = -1;
		}
		assert_int_equal(readable(ta, q, 5, &dec), TTY_APPROVER_GONE);
		assert_true(tty_approver_gone(ta));
		assert_false(tty_approver_active(ta));
		/* The caller's part: one approver fewer, and ask_fallback (deny) decides. */
		assert_int_equal(queue_set_approvers(q, 0, 5), 1);
		assert_int_equal(queue_pop_resolution(q, &res), 1);
		assert_string_equal(res.item->id, id);
		assert_int_equal(res.item->state, QUEUE_STATE_DENIED);
		assert_string_equal(res.item->decided_by, "fallback");
		queue_resolution_release(&res);
		/* Nothing more happens on a gone terminal. */
		assert_int_equal(tty_approver_sync(ta, q, 6), 0);
		assert_int_equal(tty_approver_on_readable(ta, q, 6, &dec), TTY_APPROVER_GONE);
		tty_approver_free(ta);
		pty_close(&p);
		drain(q);
		queue_free(q);
	}
}

static void test_decided_elsewhere_removes_the_prompt_and_the_next_follows(void **state)
{
	struct pty p;
	struct queue *q = new_queue();
	struct queue_request r1 = request(1, "first cmd"), r2 = request(2, "second cmd"),
	                     r3 = request(3, "third cmd");
	struct termios before, after;
	struct tty_decision dec;
	char id1[QUEUE_ID_LEN + 1], id2[QUEUE_ID_LEN + 1], id3[QUEUE_ID_LEN + 1];
	size_t at = 0;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev;

	assert_true(ep >= 0);
	pty_open(&p);
	assert_int_equal(tcgetattr(p.slave, &before), 0);
	struct tty_approver *ta = separate_approver(&p, ep);
	assert_int_equal(queue_add(q, &r1, 0, id1), QUEUE_ADD_NEW);
	assert_int_equal(queue_add(q, &r2, 0, id2), QUEUE_ADD_NEW);
	assert_int_equal(tty_approver_sync(ta, q, 0), 0);
	expect_output(&p, &at, "command: first cmd");
	expect_output(&p, &at, "details > ");
	/* One prompt at a time, and sync while it is up changes nothing. */
	assert_int_equal(queue_add(q, &r3, 1, id3), QUEUE_ADD_NEW);
	assert_int_equal(tty_approver_sync(ta, q, 1), 0);
	pty_drain(&p);
	assert_null(strstr(p.out, "second cmd"));
	assert_int_equal(epoll_wait(ep, &ev, 1, 0), 0);

	/* The dashboard approves the first: its prompt goes, the second's comes. */
	assert_int_equal(queue_decide(q, id1, true, QUEUE_SCOPE_ONCE, "web", NULL, 2), 0);
	assert_int_equal(tty_approver_sync(ta, q, 2), 0);
	expect_output(&p, &at, "approved by web");
	expect_output(&p, &at, "command: second cmd");
	expect_output(&p, &at, "details > ");
	assert_true(tty_approver_active(ta));

	pty_type(&p, "d\n");
	assert_int_equal(epoll_wait(ep, &ev, 1, 3000), 1);
	assert_int_equal(ev.data.u64, 42);
	assert_int_equal(tty_approver_on_readable(ta, q, 3, &dec), TTY_APPROVER_DECIDED);
	assert_string_equal(dec.id, id2);
	assert_int_equal(queue_decide(q, dec.id, dec.allow, dec.scope, "tty", NULL, 3), 0);
	assert_int_equal(tty_approver_sync(ta, q, 3), 0);
	expect_output(&p, &at, "command: third cmd");

	/* The third is cancelled (its process died): notice, and the session ends. */
	assert_int_equal(queue_cancel_waiter(q, 3, 4), 1);
	assert_int_equal(tty_approver_sync(ta, q, 4), 0);
	expect_output(&p, &at, "cancelled by cancel");
	assert_false(tty_approver_active(ta));
	assert_int_equal(tcgetattr(p.slave, &after), 0);
	assert_true(termios_equal(&before, &after));
	/* Out of epoll: input for the agent does not wake the supervisor. */
	pty_type(&p, "x");
	assert_int_equal(epoll_wait(ep, &ev, 1, 100), 0);

	/* A timeout also takes the prompt down. */
	struct queue_request r4 = request(4, "fourth cmd");
	char id4[QUEUE_ID_LEN + 1];
	assert_int_equal(queue_add(q, &r4, 10, id4), QUEUE_ADD_NEW);
	assert_int_equal(tty_approver_sync(ta, q, 10), 0);
	expect_output(&p, &at, "command: fourth cmd");
	assert_int_equal(queue_tick(q, 10 + 5 * 60 * 1000), 1);
	assert_int_equal(tty_approver_sync(ta, q, 10 + 5 * 60 * 1000), 0);
	expect_output(&p, &at, "timed_out by timeout");
	assert_false(tty_approver_active(ta));

	tty_approver_free(ta);
	close(ep);
	pty_close(&p);
	drain(q);
	queue_free(q);
}

static void test_a_path_that_is_not_a_terminal_is_refused(void **state)
{
	struct tty_approver_config cfg = {.tty_path = "/dev/null", .epoll_fd = -1};
	struct tty_approver *ta = NULL;

	assert_int_equal(tty_approver_new(&cfg, &ta), -ENOTTY);
	assert_null(ta);
	cfg.tty_path = "/nonexistent/tty";
	assert_int_equal(tty_approver_new(&cfg, &ta), -ENOENT);
	tty_approver_free(NULL);
}

/* ---- the shared controlling terminal ------------------------------------------------------ */

static int pause_log[8];
static int pause_calls;

static int record_pause(void *userdata, bool paused)
{
	if (pause_calls < 8)
		pause_log[pause_calls] = paused;
	pause_calls++;
	return 0;
}

#define CHECK(cond)                                                                         \
	do {                                                                                \
		if (!(cond)) {                                                              \
			fprintf(stderr, "supervisor side: %s:%d: %s\n", __FILE__, __LINE__, \
			        #cond);                                                     \
			if (agent > 0)                                                      \
				kill(agent, SIGKILL);                                       \
			_exit(10);                                                          \
		}                                                                           \
	} while (0)

/* The "supervisor": a session on the pty's slave with the "agent" in the foreground. */
static void run_supervisor_side(const char *slave_name)
{
	pid_t agent = -1;
	struct termios before, during, after;
	struct tty_decision dec;
	char id[QUEUE_ID_LEN + 1];
	int tty;

	CHECK(setsid() > 0);
	tty = open(slave_name, O_RDWR | O_CLOEXEC);
	CHECK(tty >= 0);
	CHECK(ioctl(tty, TIOCSCTTY, 0) == 0);
	agent = fork();
	CHECK(agent >= 0);
	if (agent == 0) {
		setpgid(0, 0);
		for (;;)
			pause();
	}
	setpgid(agent, agent);
	/* The agent's mode: raw but with signals (what pty_open left, plus ISIG). Set while
	 * still in the foreground: this orphaned process group may not change it later. */
	CHECK(tcgetattr(tty, &before) == 0);
	before.c_lflag |= ISIG;
	CHECK(tcsetattr(tty, TCSANOW, &before) == 0);
	CHECK(tcgetattr(tty, &before) == 0);
	CHECK(tcsetpgrp(tty, agent) == 0);
	CHECK(tcgetpgrp(tty) == agent);

	struct queue_config cfg;
	struct queue *q = NULL;
	queue_config_init(&cfg);
	CHECK(queue_new(&cfg, &q) == 0);
	queue_set_approvers(q, 1, 0);
	struct queue_request r = request(1, "ls -l");
	CHECK(queue_add(q, &r, 0, id) == QUEUE_ADD_NEW);

	struct tty_approver_config tc = {.pause = record_pause, .epoll_fd = -1};
	struct tty_approver *ta = NULL;
	CHECK(tty_approver_new(&tc, &ta) == 0);
	CHECK(tty_approver_sync(ta, q, 0) == 0);
	/* Paused, foreground taken, line mode. */
	CHECK(pause_calls == 1 && pause_log[0] == 1);
	CHECK(tcgetpgrp(tty) == getpgrp());
	CHECK(tcgetattr(tty, &during) == 0);
	CHECK(during.c_lflag & ICANON);
	CHECK(before.c_lflag & ISIG);
	CHECK(!(during.c_lflag & ISIG)); /* ^C is a character here, not a signal */

	struct pollfd pfd = {.fd = tty_approver_fd(ta), .events = POLLIN};
	CHECK(poll(&pfd, 1, 5000) == 1);
	CHECK(tty_approver_on_readable(ta, q, 1, &dec) == TTY_APPROVER_DECIDED);
	CHECK(dec.allow && strcmp(dec.id, id) == 0);
	CHECK(queue_decide(q, dec.id, dec.allow, dec.scope, "tty", NULL, 1) == 0);
	CHECK(tty_approver_sync(ta, q, 1) == 0);
	/* Foreground back to the agent, mode restored, resumed. */
	CHECK(tcgetpgrp(tty) == agent);
	CHECK(tcgetattr(tty, &after) == 0);
	CHECK(termios_equal(&before, &after));
	CHECK(pause_calls == 2 && pause_log[1] == 0);
	/* Still a normal process: no SIGTTOU disposition changed. */
	struct sigaction sa;
	CHECK(sigaction(SIGTTOU, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL);
	sigset_t mask;
	CHECK(sigprocmask(SIG_SETMASK, NULL, &mask) == 0 && !sigismember(&mask, SIGTTOU));

	tty_approver_free(ta);
	drain(q);
	queue_free(q);
	kill(agent, SIGKILL);
	waitpid(agent, NULL, 0);
	_exit(0);
}

static void test_shared_terminal_takes_the_foreground_and_gives_it_back(void **state)
{
	struct pty p;
	size_t at = 0;
	pid_t child;
	int status;

	pty_open(&p);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		close(p.master);
		run_supervisor_side(p.name);
	}
	expect_output(&p, &at, "command: ls -l");
	expect_output(&p, &at, "details > ");
	pty_type(&p, "a\n");
	expect_output(&p, &at, "allowed once");
	assert_int_equal(waitpid(child, &status, 0), child);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("the supervisor side failed (status %#x); the terminal showed:\n%s",
		         status, p.out);
	pty_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_answers_are_parsed_strictly),
	        cmocka_unit_test(test_prompt_shows_what_is_asked_and_the_choices),
	        cmocka_unit_test(test_hostile_strings_cannot_rewrite_the_prompt),
	        cmocka_unit_test(test_long_commands_are_cut_on_the_prompt_not_in_details),
	        cmocka_unit_test(test_typed_answers_decide),
	        cmocka_unit_test(test_garbage_reprompts_and_details_show_argv),
	        cmocka_unit_test(test_keys_typed_before_the_prompt_do_not_answer_it),
	        cmocka_unit_test(test_hangup_and_eof_mean_nobody_is_there),
	        cmocka_unit_test(test_decided_elsewhere_removes_the_prompt_and_the_next_follows),
	        cmocka_unit_test(test_a_path_that_is_not_a_terminal_is_refused),
	        cmocka_unit_test(test_shared_terminal_takes_the_foreground_and_gives_it_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
