/* "The agent learns why": one line on a refused process's own stderr, so that an agent that
 * would otherwise see only "Permission denied" knows a person has to allow it, e.g.
 *
 *   cloister: exec of /usr/bin/nc refused: exec.deny[0] path "/usr/bin/nc" (config.yaml:12) —
 *   ask the user to allow it
 *
 * (one line: cut here only to fit this comment.)
 *
 * The line is written to the process's fd 2, taken with pidfd_getfd(2) while the process is
 * still blocked in the notified syscall (so its pid names it), and written only where writing
 * cannot hurt the supervisor or reach anyone else:
 *   - a pipe or FIFO: reopened non-blocking (a full pipe nobody reads loses the line);
 *   - a socket: one non-blocking send (MSG_NOSIGNAL);
 *   - a terminal: only one the supervisor owns (the sandbox's own pseudo-terminal), reopened
 *     non-blocking with O_NOCTTY; never a terminal of someone else's;
 *   - a regular file on a local file system (not FUSE or network, where a write can block);
 *   - anything else (closed, /dev/null, other devices): nothing.
 * SIGPIPE and SIGXFSZ are held while writing and dropped if raised. The text is built by
 * agent_note_format: every byte the agent controls is escaped (term_escape.h). */
#ifndef CLOISTER_NOTIFIER_AGENT_NOTE_H
#define CLOISTER_NOTIFIER_AGENT_NOTE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The longest line written, newline included; longer text is cut with "…". */
#define AGENT_NOTE_MAX 512

/* Pure: "cloister: WHAT SUBJECT refused: WHY — ask the user to allow it\n" into BUF (SIZE ≥ 64),
 * SUBJECT and WHY escaped, cut to fit. WHAT is ours ("exec of", "write to"). Returns the
 * length. */
size_t agent_note_format(char *buf, size_t size, const char *what, const char *subject,
                         const char *why);

/* The terminals the supervisor owns, where a line may go: by the device number and the devpts
 * instance it lives in (a private devpts numbers its ptys from 0 too). */
struct agent_note_ttys {
	unsigned n;
	dev_t dev[2];
	dev_t rdev[2];
};

/* The pseudo-terminal whose master is MASTER, as a terminal the supervisor owns: added to
 * *TTYS. 0 or -errno. */
int agent_note_add_pty(int master, struct agent_note_ttys *ttys);

/* Write TEXT (LEN bytes) to fd 2 of PID, the process of notification ID of N, as above. Call
 * it before answering: the notification still valid after PID was opened proves PID is that
 * process (not a reused pid). Returns 0 written (perhaps partly), -EAGAIN full, -ENOTSUP a
 * kind of fd 2 not written to, other -errno (-ESRCH gone, -EBADF no fd 2, -EPERM not ours to
 * take). TTYS may be NULL: no terminal. */
struct notifier;
int agent_note_send(const struct notifier *n, uint64_t id, pid_t pid, const char *text, size_t len,
                    const struct agent_note_ttys *ttys);

#endif
