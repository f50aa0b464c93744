/* The terminal approver (`--ask tty`): asks a person on a terminal, one prompt at a time,
 * answered with single keys, no Enter: `a` allow once, `A` allow for the rest of the session,
 * `d` (or Ctrl-C) deny, `?` the full argv. Any other key shows the choices again.
 * An exec has every scope, both ways: allow `a` once, `A` session, `p` project, `g` global;
 * deny `d` once, `D` session, `P` project, `G` global; and `c` changes what a wider scope
 * covers: this exact command → this program with any arguments → the suggested pattern
 * (exec_pattern.h); `e` opens a line to edit the pattern, prefilled with the command (or the
 * pattern chosen): Enter keeps it once it makes a rule (else it says why and stays open),
 * Backspace, Ctrl-U clears, Ctrl-C leaves it as it was; then a scope key decides.
 * A write (a file ask) takes the exec's allow keys (a, A, p, g: its path) and `d` only: a
 * denial is for that write (the write source refuses a wider one).
 *
 * Where it asks:
 *   - on the user's own terminal, through the relay (config.relay, pty_relay.h): the agent
 *     has a pseudo-terminal of its own, so it can neither type into the prompt nor draw over
 *     it; the relay holds the agent's output, draws the prompt on a screen of its own, hands
 *     every key typed meanwhile to the approver and gives the agent its screen back
 *     afterwards. The sandbox is also paused while prompts are up (the caller's callback:
 *     the launcher freezes its cgroup where it has one), though safety does not depend on it;
 *   - on a terminal of its own (config.tty_path: `--ask-tty PATH`, or /dev/tty when the
 *     agent has no terminal on it), which the agent cannot reach: non-canonical, no echo, no
 *     signals while prompts are up, its modes restored afterwards; type-ahead is discarded
 *     before each prompt.
 *
 * Keys typed within TTY_APPROVER_GUARD_MS of a prompt appearing do not count (a key meant for
 * the agent, or for the previous prompt, must not answer one nobody has read yet): the
 * prompt's "> " appears when they start to. The caller's loop calls tty_approver_tick() at
 * tty_approver_next_deadline() for that.
 *
 * It never blocks. The caller calls tty_approver_sync() after every queue change (it starts,
 * advances, cancels prompts: an item decided elsewhere, timed out or cancelled loses its
 * prompt with a notice), and hands it the keys: tty_approver_on_readable() when its own
 * terminal's fd is readable, tty_approver_on_keys() with what the relay read. Both return the
 * person's decision for the caller to apply with queue_decide(..., "tty", ...). EOF or a
 * hang-up means nobody is there any more: the approver restores what it can, resumes the
 * sandbox, stops for good and returns TTY_APPROVER_GONE (tty_approver_set_gone() when the
 * relay saw it); the caller then lowers the queue's approver count so that ask_fallback
 * applies.
 *
 * Everything the agent controls (argv, paths) is shown escaped (term_escape.h). */
#ifndef CLOISTER_TTY_APPROVER_H
#define CLOISTER_TTY_APPROVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "supervisor/tty/pty_relay.h"
#include "supervisor/approval/queue.h"
#include "supervisor/policy/exec_pattern.h"

#define TTY_APPROVER_GUARD_MS 400

/* ---- pure: answers and prompt text --------------------------------------------------------- */

enum tty_answer {
	TTY_ANSWER_INVALID,
	TTY_ANSWER_ALLOW_ONCE,    /* a */
	TTY_ANSWER_DENY,          /* d, Ctrl-C */
	TTY_ANSWER_ALLOW_SESSION, /* A */
	TTY_ANSWER_DETAILS,       /* ? */
	TTY_ANSWER_NONE,          /* Enter, typed out of habit: nothing */
	TTY_ANSWER_ALLOW_PROJECT, /* p (execs, files) */
	TTY_ANSWER_ALLOW_GLOBAL,  /* g */
	TTY_ANSWER_DENY_SESSION,  /* D */
	TTY_ANSWER_DENY_PROJECT,  /* P */
	TTY_ANSWER_DENY_GLOBAL,   /* G */
	TTY_ANSWER_COVER,         /* c: what a wider scope covers, next */
	TTY_ANSWER_EDIT,          /* e: edit the pattern a wider scope covers */
};

/* One key. Case matters: "a" once, "A" always. Nothing is ever allowed by default. */
enum tty_answer tty_approver_parse_key(char key);

/* The prompt for ITEM at NOW_MS: what is asked, where, the time left and the choices (without
 * the final "> "); with DETAILS the full argv (each argument bounded) instead of the one-line
 * command. "\n" line ends. *ret_text is malloc'd. -ENOMEM. */
int tty_approver_format_prompt(const struct queue_item *item, uint64_t now_ms, bool details,
                               char **ret_text);
/* The same, saying for an exec what a wider scope covers (COVER, PATTERN for a pattern). */
int tty_approver_format_exec_prompt(const struct queue_item *item, uint64_t now_ms, bool details,
                                    enum exec_match cover, const char *pattern, char **ret_text);

/* ---- the terminal ---------------------------------------------------------------------------- */

struct tty_approver_config {
	const char *tty_path;    /* a terminal of its own */
	struct pty_relay *relay; /* else: the user's terminal, shared with the agent's output */
	/* Pause (true) or resume (false) the sandbox; may be NULL. A failure to pause does not
	 * stop the prompt. */
	int (*pause)(void *userdata, bool paused);
	void *userdata;
	/* With tty_path: when >= 0, the approver adds its fd (EPOLLIN, data.u64 = epoll_data)
	 * while it wants input and removes it otherwise. When < 0, the caller polls
	 * tty_approver_fd() itself while tty_approver_active(). */
	int epoll_fd;
	uint64_t epoll_data;
};

struct tty_approver;

/* With tty_path: opens the terminal (O_RDWR|O_NOCTTY|O_NONBLOCK|O_CLOEXEC); -ENOTTY when it is
 * not a terminal, -errno from open. With relay: -ENOTTY when keys cannot be read there. */
int tty_approver_new(const struct tty_approver_config *config, struct tty_approver **ret);
/* Takes a prompt down (the terminal's modes back) and resumes the sandbox; accepts NULL. */
void tty_approver_free(struct tty_approver *ta);

/* Its own terminal's fd, or -1 through the relay. */
int tty_approver_fd(const struct tty_approver *ta);
/* A prompt is up and waits for input. */
bool tty_approver_active(const struct tty_approver *ta);
/* Nobody is at the terminal any more (EOF / hang-up seen). */
bool tty_approver_gone(const struct tty_approver *ta);
/* The relay saw the terminal hang up. */
void tty_approver_set_gone(struct tty_approver *ta);

/* Thaw the agent a prompt paused, leaving the prompt up: for an agent that is being
 * terminated, which must run to die of its signal. */
void tty_approver_unfreeze(struct tty_approver *ta);

/* Bring the terminal in line with Q: drop the prompt of an item no longer pending (with a
 * notice of how it ended), prompt for the oldest pending item when none is up, end the
 * session when nothing is pending. Returns 0, or -errno when the terminal could not be
 * prepared (the prompt is still attempted). */
int tty_approver_sync(struct tty_approver *ta, const struct queue *q, uint64_t now_ms);

/* When tty_approver_tick() wants to run next (UINT64_MAX: no need). */
uint64_t tty_approver_next_deadline(const struct tty_approver *ta);
/* The guard ended: keys count, "> " is shown. */
void tty_approver_tick(struct tty_approver *ta, uint64_t now_ms);

enum {
	TTY_APPROVER_NONE = 0,    /* nothing decided (ignored key, details shown) */
	TTY_APPROVER_DECIDED = 1, /* *ret holds the person's decision */
	TTY_APPROVER_GONE = 2,    /* EOF or hang-up: nobody is there any more */
};

struct tty_decision {
	char id[QUEUE_ID_LEN + 1];
	bool allow;
	enum queue_scope scope;
	enum exec_match match; /* an exec: what a scope wider than once covers */
	const char *pattern;   /* with EXEC_MATCH_PATTERN; valid until the next sync */
};

/* Its own terminal: read what is available and act on the keys. Returns TTY_APPROVER_*. */
int tty_approver_on_readable(struct tty_approver *ta, const struct queue *q, uint64_t now_ms,
                             struct tty_decision *ret);
/* Through the relay: act on N keys typed. Returns TTY_APPROVER_NONE or _DECIDED; keys after
 * a decision are dropped (they were typed at this prompt, never for the agent). */
int tty_approver_on_keys(struct tty_approver *ta, const struct queue *q, uint64_t now_ms,
                         const char *keys, size_t n, struct tty_decision *ret);

#endif
