/* The user's terminal and the agent's pseudo-terminal, joined by the supervisor, as sudo's
 * use_pty and ssh do. The agent never holds the user's terminal (sandbox.h gives it a pty of
 * its own); the supervisor owns the real one:
 *
 *   - raw mode while the agent runs in the foreground (so Ctrl-C, Ctrl-Z and every other key
 *     reach the agent's pty, whose line discipline makes them signals for the agent's
 *     foreground job), the user's modes restored on every way out: normal end, a suspend, a
 *     failed start, exit(), a fatal signal;
 *   - bytes relayed both ways on the event loop: non-blocking, bounded buffers (a full one
 *     stops reading its source: back-pressure, the agent blocks on its full pty), EOF and
 *     hang-up handled on both sides; the agent's output through vt_filter.h (no clipboard,
 *     no reports that leak, no window operations), and at the end, when it asked the
 *     terminal something, the answers still on their way read and dropped (until the answer
 *     to a DSR 5 of ours, at most a second) and the terminal's input flushed, so that none is
 *     typed at the user's shell;
 *   - the window size (SIGWINCH → TIOCSWINSZ on the master), and job control: when the agent
 *     is stopped (Ctrl-Z), pty_relay_suspend() gives the user's shell its terminal back and
 *     stops the supervisor's process group; `fg` resumes both;
 *   - prompts: drawn by the supervisor while the agent's output is held (the master is not
 *     read), between two of the agent's escape sequences, on a screen of their own (the
 *     alternate screen, or a cleared one over a full-screen agent, which is then made to
 *     redraw: its window size grows by a column and comes back once it has redrawn); every
 *     key typed meanwhile goes to the prompt, never to the agent; the agent's screen and
 *     modes come back afterwards (vt_parse.h);
 *   - the supervisor's own lines (say.h) go in between the agent's output, never over a
 *     prompt, and wait while the agent is on the alternate screen.
 *
 * Without a terminal among our fds 0-2 there is no relay: pty_relay_open() says -ENOTTY, the
 * agent gets no terminal, and pipes and files pass as they are. */
#ifndef CLOISTER_PTY_RELAY_H
#define CLOISTER_PTY_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <termios.h>

#include "base/loop.h"

struct pty_relay;

struct pty_relay_ops {
	/* While a prompt is up: the keys typed (no escape sequences, reports or pastes). */
	void (*keys)(void *userdata, const char *keys, size_t n);
	/* The user's terminal hung up: nobody is at it any more. */
	void (*gone)(void *userdata);
	void *userdata;
};

/* Find the user's terminal among fds 0-2 and open a description of it of our own (so that
 * O_NONBLOCK does not leak into the shell's). -ENOTTY when none of them is a terminal. Nothing
 * about the terminal changes until pty_relay_start(). */
int pty_relay_open(struct pty_relay **ret);

/* The modes and window size the agent's pty starts with: the user's terminal's. */
void pty_relay_agent_terminal(const struct pty_relay *r, struct termios *ret_termios,
                              struct winsize *ret_winsize);

/* Our stdin is the user's terminal (its keys go to the agent); our stderr is (say() lines go
 * through the relay). */
bool pty_relay_has_input(const struct pty_relay *r);
bool pty_relay_has_stderr(const struct pty_relay *r);

/* Start relaying between the user's terminal and MASTER (the relay owns it from now on). */
int pty_relay_start(struct pty_relay *r, struct loop *loop, int master,
                    const struct pty_relay_ops *ops);

/* Drain what the agent wrote until its pty closes (at most about a second), take the prompt
 * down if one is up, give the terminal its modes back, close. NULL is accepted. */
void pty_relay_free(struct pty_relay *r);

/* Signals the caller's loop received: SIGWINCH (the size goes to the agent's pty), SIGCONT
 * (we may be in the foreground again: raw mode, input, size). Others are ignored. */
void pty_relay_signal(struct pty_relay *r, int sig);

/* The agent stopped (SIG: SIGTSTP, SIGSTOP…) and the user's shell should get its terminal:
 * relay what the agent wrote before it stopped, restore the terminal's modes and stop our
 * process group with SIG; return once continued, the terminal ours again if we are in the
 * foreground. R may be NULL (no terminal relayed): then only the stop. Returns 0, or -ENOTTY
 * (nothing done) when there is no job control: no shell would ever continue us. */
int pty_relay_suspend(struct pty_relay *r, int sig);

/* ---- prompts (tty_approver.h) ---------------------------------------------------------- */

/* Keys can be read from the terminal (it is open for reading). */
bool pty_relay_can_prompt(const struct pty_relay *r);

/* Take the screen: the agent's output is held from its next ground point on (at most a
 * quarter second later), then the prompt's screen is drawn. */
void pty_relay_prompt_begin(struct pty_relay *r);
/* Replace what the prompt shows by TEXT ("\n" line ends; shown as it is: the caller escapes
 * what it did not write itself). */
void pty_relay_prompt_show(struct pty_relay *r, const char *text);
/* Append TEXT to what the prompt shows. */
void pty_relay_prompt_add(struct pty_relay *r, const char *text);
/* Give the screen back to the agent, as it left it. */
void pty_relay_prompt_end(struct pty_relay *r);

/* A status for the person, in the terminal's window title (TEXT printable, ours: not the
 * agent's), so that the agent's screen is not touched, on the alternate screen or not; written
 * at the agent's next ground point. The title the terminal had is pushed on its title stack
 * first and popped when TEXT is NULL (and when the relay ends); a terminal without that stack
 * keeps TEXT's last "nothing" form, which the caller gives before NULL. */
void pty_relay_status(struct pty_relay *r, const char *text);

/* A line for the person (escaped by the caller, no line end): shown between the agent's
 * output at a line start, after any prompt, once the agent is off the alternate screen.
 * Bounded: lines that do not fit are counted and the count is shown instead. */
void pty_relay_notice(struct pty_relay *r, const char *line);

#endif
