/* `run`'s terminal on the loop: the user's terminal relayed to the agent's own pseudo-terminal
 * (pty_relay.h), and the terminal approver (tty_approver.h) prompting there — or on a terminal
 * of its own — answered through the approvals service (approvals.h), where it counts as one
 * who answers while the terminal is there.
 *
 * Life: terminal_open() before the sandbox starts (the agent's pty takes the user's modes and
 * size), terminal_start() once it runs, terminal_stop_asking() before the approvals service
 * goes, terminal_free() after the sandbox (what the agent wrote last is relayed to the end). */
#ifndef CLOISTER_TERMINAL_H
#define CLOISTER_TERMINAL_H

#include <stdbool.h>
#include <sys/ioctl.h>
#include <termios.h>

#include "base/error.h"

struct loop;
struct approvals;
struct terminal;

struct terminal_options {
	bool ask;            /* prompt at all (--ask tty, or the default) */
	bool ask_if_relayed; /* the default: only on the user's terminal, when its keys are ours */
	const char *ask_tty_path; /* --ask-tty: a terminal of its own */
	/* Pause (true) or resume the sandbox while prompts are up; may be NULL. */
	int (*pause)(void *userdata, bool paused);
	void *userdata;
	const char *fallback; /* what decides when nobody can be asked (said when no terminal) */
	/* --ask web: the dashboard's address, for the status in the relayed terminal's title
	 * ("1 ask waiting — URL"); NULL: none. */
	const char *status_url;
};

/* The user's terminal among our fds is relayed (none: *RET_TERMINAL relays nothing). -errno
 * (another than ENOTTY) when it cannot be set up. */
int terminal_open(struct terminal **ret_terminal);
/* The agent gets a pty of its own, with these modes and size. */
bool terminal_relays(const struct terminal *t);
void terminal_agent_modes(const struct terminal *t, struct termios *ret_modes,
                          struct winsize *ret_size);

/* Relay MASTER (the agent's pty, taken; -1 when not relayed) on LOOP, and prompt as O says.
 * -errno with ERR. */
int terminal_start(struct terminal *t, struct loop *loop, struct approvals *approvals, int master,
                   const struct terminal_options *o, struct cl_error *err);

/* Prompts can be drawn (a terminal approver is there), and whether one is up now. */
bool terminal_asks(const struct terminal *t);
bool terminal_prompting(const struct terminal *t);

/* The agent stopped (SIG): the user's shell gets the terminal back until `fg`. */
void terminal_suspend(struct terminal *t, int sig);
/* SIGWINCH, SIGCONT for the relay. */
void terminal_signal(struct terminal *t, int sig);
/* The agent is ending: a prompt's freeze is lifted (it must run to die of its signal). */
void terminal_unfreeze(struct terminal *t);

/* No more prompts: before the approvals service goes. */
void terminal_stop_asking(struct terminal *t);
/* NULL is fine. */
void terminal_free(struct terminal *t);

#endif
