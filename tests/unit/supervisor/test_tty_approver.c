/* The terminal approver on a terminal of its own, driven through real pseudo-terminals (no root
 * needed): the prompt text, single-key answers, the key guard, hints and details, type-ahead,
 * EOF and hang-up, cancellation, one prompt at a time, terminal modes restored. (Through the
 * relay, on the user's terminal: test_pty_relay.c and the integration tests.) */
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

#include "supervisor/tty/tty_approver.h"

/* ---- pure --------------------------------------------------------------------------------- */

static void test_single_keys_answer(void **state)
{
	static const struct {
		char key;
		enum tty_answer want;
	} cases[] = {
	        {'a', TTY_ANSWER_ALLOW_ONCE},    {'A', TTY_ANSWER_ALLOW_SESSION},
	        {'d', TTY_ANSWER_DENY},          {'\x03', TTY_ANSWER_DENY},
	        {'?', TTY_ANSWER_DETAILS},       {'\r', TTY_ANSWER_NONE},
	        {'\n', TTY_ANSWER_NONE},         {'D', TTY_ANSWER_DENY_SESSION},
	        {'p', TTY_ANSWER_ALLOW_PROJECT}, {'P', TTY_ANSWER_DENY_PROJECT},
	        {'g', TTY_ANSWER_ALLOW_GLOBAL},  {'G', TTY_ANSWER_DENY_GLOBAL},
	        {'c', TTY_ANSWER_COVER},         {'C', TTY_ANSWER_INVALID},
	        {'y', TTY_ANSWER_INVALID},       {'n', TTY_ANSWER_INVALID},
	        {' ', TTY_ANSWER_INVALID},       {'\x1b', TTY_ANSWER_INVALID},
	        {'\0', TTY_ANSWER_INVALID},      {'x', TTY_ANSWER_INVALID},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum tty_answer got = tty_approver_parse_key(cases[i].key);
		if (got != cases[i].want)
			fail_msg("key %#x: got %d, want %d", (unsigned char)cases[i].key, got,
			         cases[i].want);
	}
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
	const char *want[] = {"approval needed",
	                      "exec in sandbox main (project my-api)",
	                      "command: ls -l",
	                      "exe:     /usr/bin/ls",
	                      "cwd:     /work",
	                      "script interpreter: /bin/sh",
	                      "pid: 4242",
	                      "uid: 1000",
	                      "expires in 4m59s",
	                      "allow: [a] once  [A] session  [p] project  [g] global",
	                      "deny:  [d] once  [D] session  [P] project  [G] global",
	                      "[c] a wider scope covers: this exact command   [e] edit the pattern "
	                      "  [?] details"};
	size_t len;

	assert_int_equal(queue_add(q, &r, 0, id), QUEUE_ADD_NEW);
	assert_int_equal(tty_approver_format_prompt(queue_find(q, id), 1000, false, &text), 0);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(text, want[i]))
			fail_msg("prompt lacks '%s':\n%s", want[i], text);
	assert_non_null(strstr(text, id));
	assert_null(strstr(text, "argv[0]"));
	/* The "> " comes when keys start to count (the guard), not with the text. */
	len = strlen(text);
	assert_true(len > 11 && strcmp(text + len - 11, "[?] details") == 0);
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

/* A time when the key guard of a prompt shown at 0 is over. */
#define G TTY_APPROVER_GUARD_MS

static void test_typed_answers_decide(void **state)
{
	static const struct {
		const char *typed;
		bool allow;
		enum queue_scope scope;
		const char *echo;
	} cases[] = {
	        {"a", true, QUEUE_SCOPE_ONCE, "allowed once"},
	        {"A", true, QUEUE_SCOPE_SESSION, "allowed for this session"},
	        {"d", false, QUEUE_SCOPE_ONCE, "denied"},
	        {"\x03", false, QUEUE_SCOPE_ONCE, "denied"},
	        {"\r\x1b[Aa", true, QUEUE_SCOPE_ONCE,
	         "allowed once"}, /* Enter, an arrow: nothing */
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
		expect_output(&p, &at,
		              "[c] a wider scope covers: this exact command   [e] edit the pattern "
		              "  [?] details");
		assert_int_equal(tty_approver_next_deadline(ta), G);
		tty_approver_tick(ta, G);
		expect_output(&p, &at, " > ");
		assert_int_equal(tty_approver_next_deadline(ta), UINT64_MAX);
		/* Single keys: not canonical, not echoed, ^C a key; output as usual. */
		assert_int_equal(tcgetattr(p.slave, &during), 0);
		assert_false(during.c_lflag & ICANON);
		assert_false(during.c_lflag & ECHO);
		assert_false(during.c_lflag & ISIG);
		assert_true(during.c_oflag & OPOST);

		pty_type(&p, cases[i].typed);
		assert_int_equal(readable(ta, q, G + 10, &dec), TTY_APPROVER_DECIDED);
		assert_string_equal(dec.id, id);
		assert_int_equal(dec.allow, cases[i].allow);
		assert_int_equal(dec.scope, cases[i].scope);
		expect_output(&p, &at, cases[i].echo);
		assert_false(tty_approver_active(ta));

		assert_int_equal(queue_decide(q, dec.id, dec.allow, dec.scope, "tty", NULL, G + 10),
		                 0);
		assert_int_equal(tty_approver_sync(ta, q, G + 10), 0);
		assert_false(tty_approver_active(ta));
		/* The terminal is back in its mode, and nothing said "decided by". */
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

static void test_keys_within_the_guard_do_not_count(void **state)
{
	struct pty p;
	struct queue *q = new_queue();
	struct queue_request r = request(1, "ls -l");
	struct tty_decision dec;
	char id[QUEUE_ID_LEN + 1];
	size_t at = 0;

	pty_open(&p);
	struct tty_approver *ta = separate_approver(&p, -1);
	assert_int_equal(queue_add(q, &r, 100, id), QUEUE_ADD_NEW);
	assert_int_equal(tty_approver_sync(ta, q, 100), 0);
	expect_output(&p, &at, "[?] details");
	/* Typed at once (meant for the agent, or for the prompt before): nothing. */
	pty_type(&p, "a");
	assert_int_equal(readable(ta, q, 100 + G - 1, &dec), TTY_APPROVER_NONE);
	assert_true(tty_approver_active(ta));
	pty_drain(&p);
	assert_null(strstr(p.out + at, " > "));
	/* Once the guard is over, the same key answers, and "> " shows it is time. */
	pty_type(&p, "a");
	assert_int_equal(readable(ta, q, 100 + G, &dec), TTY_APPROVER_DECIDED);
	expect_output(&p, &at, " > ");
	assert_true(dec.allow);
	tty_approver_free(ta);
	pty_close(&p);
	drain(q);
	queue_free(q);
}

/* An exec's scope keys, and `c` changing what a wider scope covers: exact → program → the
 * suggested pattern. A domain has no such keys. */
static void test_exec_scopes_and_what_they_cover(void **state)
{
	struct pty p;
	struct queue *q = new_queue();
	struct queue_request r = request(1, "ls -l");
	struct queue_request dom = {.kind = QUEUE_KIND_DOMAIN,
	                            .sandbox = "main",
	                            .summary = "example.com",
	                            .pid = -1,
	                            .uid = -1,
	                            .cookie = 2};
	struct tty_decision dec;
	char id[QUEUE_ID_LEN + 1];
	size_t at = 0;

	pty_open(&p);
	struct tty_approver *ta = separate_approver(&p, -1);
	assert_int_equal(queue_add(q, &r, 0, id), QUEUE_ADD_NEW);
	assert_int_equal(tty_approver_sync(ta, q, 0), 0);
	tty_approver_tick(ta, G);
	expect_output(&p, &at, "this exact command   [e] edit the pattern   [?] details > ");
	pty_type(&p, "c");
	assert_int_equal(readable(ta, q, G, &dec), TTY_APPROVER_NONE);
	expect_output(
	        &p, &at,
	        "covers: this program, any arguments   [e] edit the pattern   [?] details > ");
	pty_type(&p, "c");
	assert_int_equal(readable(ta, q, G, &dec), TTY_APPROVER_NONE);
	expect_output(&p, &at, "covers: the pattern ls **   [e] edit the pattern   [?] details > ");
	pty_type(&p, "P");
	assert_int_equal(readable(ta, q, G, &dec), TTY_APPROVER_DECIDED);
	expect_output(&p, &at, "denied for this project");
	assert_false(dec.allow);
	assert_int_equal(dec.scope, QUEUE_SCOPE_PROJECT);
	assert_int_equal(dec.match, EXEC_MATCH_PATTERN);
	assert_string_equal(dec.pattern, "ls **");
	assert_string_equal(dec.id, id);
	assert_int_equal(queue_decide(q, id, false, dec.scope, "tty", NULL, G), 0);
	drain(q);

	/* `e`: a line prefilled with the command; a pattern that makes no rule is refused on
	 * the card, which stays on the line; Enter keeps one that does, and a scope key decides
	 * with it. Keys typed on the line are text, not answers. */
	r.cookie = 3;
	assert_int_equal(queue_add(q, &r, G, id), QUEUE_ADD_NEW);
	assert_int_equal(tty_approver_sync(ta, q, G), 0);
	tty_approver_tick(ta, 2 * G);
	expect_output(&p, &at, "[?] details > ");
	pty_type(&p, "e");
	assert_int_equal(readable(ta, q, 2 * G, &dec), TTY_APPROVER_NONE);
	expect_output(&p, &at, "pattern: ls -l");
	pty_type(&p, "\x15rm *\r");
	assert_int_equal(readable(ta, q, 2 * G, &dec), TTY_APPROVER_NONE);
	expect_output(&p, &at, "refused: the pattern must start with the program's name");
	pty_type(&p, "\x15ls -a\x7f*\r");
	assert_int_equal(readable(ta, q, 2 * G, &dec), TTY_APPROVER_NONE);
	expect_output(&p, &at, "covers: the pattern ls -*   [e] edit the pattern   [?] details > ");
	pty_type(&p, "A");
	assert_int_equal(readable(ta, q, 2 * G, &dec), TTY_APPROVER_DECIDED);
	assert_true(dec.allow);
	assert_int_equal(dec.scope, QUEUE_SCOPE_SESSION);
	assert_int_equal(dec.match, EXEC_MATCH_PATTERN);
	assert_string_equal(dec.pattern, "ls -*");
	assert_int_equal(queue_decide(q, id, true, dec.scope, "tty", NULL, 2 * G), 0);
	drain(q);

	/* A domain: `g` is no answer there. */
	assert_int_equal(queue_add(q, &dom, 2 * G, id), QUEUE_ADD_NEW);
	assert_int_equal(tty_approver_sync(ta, q, 2 * G), 0);
	tty_approver_tick(ta, 3 * G);
	expect_output(&p, &at, "[A]lways (session)  [?] details > ");
	pty_type(&p, "g");
	assert_int_equal(readable(ta, q, 3 * G, &dec), TTY_APPROVER_NONE);
	expect_output(&p, &at, "Please answer a, d, A or ? > ");
	pty_type(&p, "A");
	assert_int_equal(readable(ta, q, 3 * G, &dec), TTY_APPROVER_DECIDED);
	assert_int_equal(dec.scope, QUEUE_SCOPE_SESSION);
	assert_int_equal(dec.match, EXEC_MATCH_EXACT);
	tty_approver_free(ta);
	pty_close(&p);
	drain(q);
	queue_free(q);
}

/* A write: allowed in every scope with the exec cards' keys, denied once only; the keys that
 * deny wider, or change what a scope covers, are no answer there. */
static void test_file_asks_take_project_and_global(void **state)
{
	static const struct {
		char key;
		enum queue_scope scope;
		const char *echo;
	} cases[] = {
	        {'p', QUEUE_SCOPE_PROJECT, "allowed for this project"},
	        {'g', QUEUE_SCOPE_GLOBAL, "allowed everywhere"},
	};
	struct pty p;
	struct queue *q = new_queue();
	struct queue_request f = {.kind = QUEUE_KIND_FILE,
	                          .sandbox = "main",
	                          .summary = "/home/u/.npmrc",
	                          .exe = "/usr/bin/npm",
	                          .pid = 7,
	                          .uid = -1,
	                          .cookie = 1};
	struct tty_decision dec;
	char id[QUEUE_ID_LEN + 1];
	uint64_t now = 0;
	size_t at = 0;

	(void)state;
	pty_open(&p);
	struct tty_approver *ta = separate_approver(&p, -1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		f.cookie = i + 1;
		assert_int_equal(queue_add(q, &f, now, id), QUEUE_ADD_NEW);
		assert_int_equal(tty_approver_sync(ta, q, now), 0);
		now += G;
		tty_approver_tick(ta, now);
		expect_output(&p, &at, "file:    /home/u/.npmrc");
		/* (the terminal ends lines with \r\n) */
		expect_output(&p, &at, "  allow: [a] once  [A] session  [p] project  [g] global");
		expect_output(&p, &at, "  deny:  [d] once (the next write asks again)");
		expect_output(&p, &at, "  [?] details > ");
		for (const char *k = "DPGce"; *k; k++) {
			char key[2] = {*k, 0};

			pty_type(&p, key);
			assert_int_equal(readable(ta, q, now, &dec), TTY_APPROVER_NONE);
			expect_output(&p, &at, "Please answer a, A, p, g, d or ? > ");
		}
		pty_type(&p, (char[]){cases[i].key, 0});
		assert_int_equal(readable(ta, q, now, &dec), TTY_APPROVER_DECIDED);
		expect_output(&p, &at, cases[i].echo);
		assert_true(dec.allow);
		assert_int_equal(dec.scope, cases[i].scope);
		assert_int_equal(dec.match, EXEC_MATCH_EXACT);
		assert_null(dec.pattern);
		assert_string_equal(dec.id, id);
		assert_int_equal(queue_decide(q, id, true, dec.scope, "tty", NULL, now), 0);
		drain(q);
	}
	tty_approver_free(ta);
	pty_close(&p);
	drain(q);
	queue_free(q);
}

static void test_other_keys_show_a_hint_and_details_show_argv(void **state)
{
	struct pty p;
	struct queue *q = new_queue();
	struct queue_request r = request(1, "ls -l");
	struct tty_decision dec;
	char id[QUEUE_ID_LEN + 1];
	size_t at = 0;

	pty_open(&p);
	struct tty_approver *ta = separate_approver(&p, -1);
	assert_int_equal(queue_add(q, &r, 0, id), QUEUE_ADD_NEW);
	assert_int_equal(tty_approver_sync(ta, q, 0), 0);
	tty_approver_tick(ta, G);
	expect_output(&p, &at, "details > ");

	pty_type(&p, "x");
	assert_int_equal(readable(ta, q, 1000, &dec), TTY_APPROVER_NONE);
	expect_output(&p, &at, "expires in 4m59s");
	expect_output(&p, &at, "Please answer a, A, p, g, d, D, P, G, c, e or ? > ");
	assert_true(tty_approver_active(ta));

	/* a paste is not keys */
	pty_type(&p, "\x1b[200~aaa\x1b[201~");
	assert_int_equal(readable(ta, q, 1000, &dec), TTY_APPROVER_NONE);
	assert_true(tty_approver_active(ta));

	pty_type(&p, "?");
	assert_int_equal(readable(ta, q, 1000, &dec), TTY_APPROVER_NONE);
	expect_output(&p, &at, "argv[0]: ls");
	expect_output(&p, &at, "argv[1]: -l");
	expect_output(&p, &at, "details > ");

	pty_type(&p, "d");
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
	pty_type(&p, "a"); /* typed before any prompt */
	usleep(50 * 1000);
	assert_int_equal(queue_add(q, &r, 0, id), QUEUE_ADD_NEW);
	assert_int_equal(tty_approver_sync(ta, q, 0), 0);
	expect_output(&p, &at, "[?] details");
	struct pollfd pfd = {.fd = tty_approver_fd(ta), .events = POLLIN};
	assert_int_equal(poll(&pfd, 1, 200), 0); /* discarded */
	assert_int_equal(tty_approver_on_readable(ta, q, G, &dec), TTY_APPROVER_NONE);
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
		expect_output(&p, &at, "[?] details");
		if (eof) {
			pty_type(&p, "\x04"); /* ^D alone */
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
	expect_output(&p, &at, "[?] details");
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
	expect_output(&p, &at, "[?] details");
	assert_true(tty_approver_active(ta));

	pty_type(&p, "d");
	assert_int_equal(epoll_wait(ep, &ev, 1, 3000), 1);
	assert_int_equal(ev.data.u64, 42);
	assert_int_equal(tty_approver_on_readable(ta, q, 2 + G, &dec), TTY_APPROVER_DECIDED);
	assert_string_equal(dec.id, id2);
	assert_int_equal(queue_decide(q, dec.id, dec.allow, dec.scope, "tty", NULL, 3), 0);
	assert_int_equal(tty_approver_sync(ta, q, 3), 0);
	expect_output(&p, &at, "command: third cmd");

	/* The third is cancelled (its process died): notice, and the session ends. */
	assert_int_equal(queue_cancel_waiter(q, 0, 3, 4), 1);
	assert_int_equal(tty_approver_sync(ta, q, 4), 0);
	expect_output(&p, &at, "cancelled by cancel");
	assert_false(tty_approver_active(ta));
	assert_int_equal(tcgetattr(p.slave, &after), 0);
	assert_true(termios_equal(&before, &after));
	/* Out of epoll: input for whoever else reads does not wake the supervisor. */
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
	/* neither a path nor a relay: nowhere to ask */
	cfg.tty_path = NULL;
	assert_int_equal(tty_approver_new(&cfg, &ta), -ENOTTY);
	tty_approver_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_single_keys_answer),
	        cmocka_unit_test(test_prompt_shows_what_is_asked_and_the_choices),
	        cmocka_unit_test(test_hostile_strings_cannot_rewrite_the_prompt),
	        cmocka_unit_test(test_long_commands_are_cut_on_the_prompt_not_in_details),
	        cmocka_unit_test(test_typed_answers_decide),
	        cmocka_unit_test(test_keys_within_the_guard_do_not_count),
	        cmocka_unit_test(test_other_keys_show_a_hint_and_details_show_argv),
	        cmocka_unit_test(test_keys_typed_before_the_prompt_do_not_answer_it),
	        cmocka_unit_test(test_hangup_and_eof_mean_nobody_is_there),
	        cmocka_unit_test(test_decided_elsewhere_removes_the_prompt_and_the_next_follows),
	        cmocka_unit_test(test_a_path_that_is_not_a_terminal_is_refused),
	        cmocka_unit_test(test_exec_scopes_and_what_they_cover),
	        cmocka_unit_test(test_file_asks_take_project_and_global),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
