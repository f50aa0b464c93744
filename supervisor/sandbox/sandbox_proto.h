/* The pure parts of the sandbox launcher: the messages between the sandbox's init and the
 * supervisor, and the small decisions (exit code, id maps, user namespace or not). Kept apart
 * from sandbox.c so that they are unit-tested without the kernel-facing code.
 *
 * The init and the supervisor talk over a SOCK_SEQPACKET socketpair, one fixed-size message per
 * packet; some carry an fd (SCM_RIGHTS): sandbox_msg_has_fd(). */
#ifndef CLOISTER_SUPERVISOR_SANDBOX_PROTO_H
#define CLOISTER_SUPERVISOR_SANDBOX_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum sandbox_msg_type {
	/* supervisor → init */
	SANDBOX_MSG_GO = 1,   /* id maps written: set up and start the agent */
	SANDBOX_MSG_SIGNAL,   /* value = signal to pass on to the agent */
	SANDBOX_MSG_CONTINUE, /* value = 1: give the agent the terminal first; then SIGCONT */
	/* init → supervisor */
	SANDBOX_MSG_LISTENER, /* carries the seccomp listener fd */
	SANDBOX_MSG_READY,    /* the agent has been started */
	SANDBOX_MSG_ERROR,    /* value = -errno, text = what failed; the init exits */
	SANDBOX_MSG_STOPPED,  /* value = stop signal */
	SANDBOX_MSG_CONTINUED,
	SANDBOX_MSG_EXITED,    /* value = the agent's wait status */
	SANDBOX_MSG_SIGNALLED, /* value = the signal now sent to the agent (after MSG_SIGNAL) */
	SANDBOX_MSG_VIEW,      /* carries an fd of the sandbox's view: value 0 its root directory,
	                        * 1 its /proc/self/mountinfo (sent once the mounts are done) */
	SANDBOX_MSG_AGENT,     /* carries a pidfd of the agent, which waits for AGENT_GO */
	SANDBOX_MSG_AGENT_GO,  /* supervisor → init: the agent may start */
	SANDBOX_MSG_PTY,       /* init → supervisor: carries the agent's pty master */
	SANDBOX_MSG_SIGNAL_GROUP, /* supervisor → init: value = signal for the agent's group */
	SANDBOX_MSG_MAX_,
};

#define SANDBOX_MSG_TEXT_MAX 200

struct sandbox_msg {
	uint32_t type;
	int32_t value;
	char text[SANDBOX_MSG_TEXT_MAX]; /* NUL-terminated */
};

/* Does a message of this type carry an fd (SCM_RIGHTS)? */
bool sandbox_msg_has_fd(uint32_t type);

/* Check a received packet of len bytes: the right size, a known type, a terminated text.
 * -EBADMSG otherwise. */
int sandbox_msg_validate(const void *buf, size_t len, struct sandbox_msg *ret);

/* What `run` exits with for a wait status: the exit code, or 128+signal. */
int sandbox_exit_code_from_wait_status(int wstatus);

/* "<inside> <outside> 1\n": a uid_map/gid_map line mapping one id. -ENAMETOOLONG if too small. */
int sandbox_format_id_map(unsigned inside, unsigned outside, char *buf, size_t size);

enum sandbox_userns {
	SANDBOX_USERNS_AUTO = 0, /* a user namespace when the caller is not root */
	SANDBOX_USERNS_ALWAYS,
	SANDBOX_USERNS_NEVER,
};

/* Whether to use a user namespace for this mode and effective uid. */
bool sandbox_want_userns(enum sandbox_userns mode, uid_t euid);

#endif
