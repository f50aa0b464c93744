/* The terminal approver (`--ask tty`): asks a person on a terminal, one prompt at a time.
 *
 * Without a path it uses the controlling terminal (/dev/tty), which the agent shares; it must
 * not fight the agent for it. While a prompt is up it
 *   1. pauses the sandbox through the caller's callback (the launcher freezes its cgroup), so
 *      nothing in the agent reads the answer or draws over the prompt;
 *   2. makes the supervisor's process group the terminal's foreground (tcsetpgrp, SIGTTOU
 *      blocked around the call rather than ignored, so no disposition leaks into children);
 *   3. saves the terminal's mode and switches to a sane line mode (canonical, echo, no ISIG:
 *      ^C and ^Z are just characters here, the prompt owns the terminal);
 *   4. discards type-ahead before each prompt, so keys typed for the agent never answer;
 * and when no ask is left it restores the mode, gives the foreground back to the process
 * group that had it and resumes the sandbox. Queued asks are prompted one after another in
 * the queue's order without resuming in between. With a path (`--ask-tty PATH`, a separate
 * terminal) steps 1 and 2 are skipped.
 *
 * It never blocks: the fd is O_NONBLOCK and is read only when readable. The caller's loop
 * calls tty_approver_sync() after every queue change (it starts, advances, cancels prompts:
 * an item decided elsewhere, timed out or cancelled loses its prompt with a notice) and
 * tty_approver_on_readable() when the fd is readable (returns the person's decision for the
 * caller to apply with queue_decide(..., "tty", ...)). EOF or a hang-up on the terminal means
 * nobody is there any more: the approver restores what it can, resumes the sandbox, stops for
 * good and returns TTY_APPROVER_GONE; the caller then lowers the queue's approver count so
 * that ask_fallback applies.
 *
 * Everything the agent controls (argv, paths) is shown escaped: control characters, C1
 * controls, bidirectional overrides and invalid UTF-8 become visible escapes, so a hostile
 * argument cannot rewrite or hide part of the prompt. */
#ifndef CLOISTER_TTY_APPROVER_H
#define CLOISTER_TTY_APPROVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "supervisor/queue.h"

/* ---- pure: answers and prompt text --------------------------------------------------------- */

enum tty_answer {
	TTY_ANSWER_INVALID,
	TTY_ANSWER_ALLOW_ONCE,    /* "a", "allow", "y", "yes" */
	TTY_ANSWER_DENY,          /* "d", "deny", "n", "no" */
	TTY_ANSWER_ALLOW_SESSION, /* "A", "always" */
	TTY_ANSWER_DETAILS,       /* "?", "details" */
};

/* One line of input (LEN bytes, without the newline; may hold any bytes). Surrounding blanks
 * are ignored; words are case-insensitive, the single letters are not ("a" once, "A" always).
 * An empty line is INVALID: nothing is ever allowed by default. */
enum tty_answer tty_approver_parse_answer(const char *line, size_t len);

/* The prompt for ITEM at NOW_MS: what is asked, where, the time left and the choices; with
 * DETAILS the full argv (each argument bounded) instead of the one-line command. *ret_text is
 * malloc'd. -ENOMEM. */
int tty_approver_format_prompt(const struct queue_item *item, uint64_t now_ms, bool details,
                               char **ret_text);

/* ---- the terminal ---------------------------------------------------------------------------- */

struct tty_approver_config {
	const char *tty_path; /* NULL: the controlling terminal, shared with the agent */
	/* Pause (true) or resume (false) the sandbox; may be NULL. A failure to pause does not
	 * stop the prompt. Not called with a tty_path. */
	int (*pause)(void *userdata, bool paused);
	void *userdata;
	/* When >= 0, the approver adds its fd (EPOLLIN, data.u64 = epoll_data) while it wants
	 * input and removes it otherwise. When < 0, the caller polls tty_approver_fd() itself
	 * while tty_approver_active(). */
	int epoll_fd;
	uint64_t epoll_data;
};

struct tty_approver;

/* Opens the terminal (O_RDWR|O_NOCTTY|O_NONBLOCK|O_CLOEXEC). -ENOTTY when it is not a
 * terminal, -errno from open. */
int tty_approver_new(const struct tty_approver_config *config, struct tty_approver **ret);
/* Restores the terminal and resumes the sandbox if a prompt was up; accepts NULL. */
void tty_approver_free(struct tty_approver *ta);

int tty_approver_fd(const struct tty_approver *ta);
/* A prompt is up and waits for input. */
bool tty_approver_active(const struct tty_approver *ta);
/* Nobody is at the terminal any more (EOF / hang-up seen). */
bool tty_approver_gone(const struct tty_approver *ta);

/* Thaw the agent a prompt on its terminal froze and give it the terminal's foreground back,
 * leaving the prompt up: for an agent that is being terminated, which must run to die of its
 * signal. */
void tty_approver_unfreeze(struct tty_approver *ta);

/* Bring the terminal in line with Q: drop the prompt of an item no longer pending (with a
 * notice of how it ended), prompt for the oldest pending item when none is up, end the
 * session when nothing is pending. Returns 0, or -errno when the terminal could not be
 * prepared (the prompt is still attempted). */
int tty_approver_sync(struct tty_approver *ta, const struct queue *q, uint64_t now_ms);

enum {
	TTY_APPROVER_NONE = 0,    /* nothing decided (partial line, re-prompt, details shown) */
	TTY_APPROVER_DECIDED = 1, /* *ret holds the person's decision */
	TTY_APPROVER_GONE = 2,    /* EOF or hang-up: nobody is there any more */
};

struct tty_decision {
	char id[QUEUE_ID_LEN + 1];
	bool allow;
	enum queue_scope scope; /* once, or session for "always" */
};

/* Read what is available and act on complete lines. Returns TTY_APPROVER_*. */
int tty_approver_on_readable(struct tty_approver *ta, const struct queue *q, uint64_t now_ms,
                             struct tty_decision *ret);

#endif
