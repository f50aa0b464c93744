/* A bidirectional byte relay between two connected stream sockets, on the loop.
 *
 * A direction starts small: recv(2) into a buffer on the stack and send(2) on at once, the
 * cheapest way to pass a request and its answer (no pipe, two system calls a message). The
 * first read that fills that buffer (16 KiB) makes the direction bulk for good: from then on
 * its bytes move with splice(2) through a pipe, so they are never copied through user space;
 * where splice fails (no pipe to be had, a socket type that cannot splice) it stays with
 * recv/send. What one direction holds is bounded by its pipe (or by one read): a slow reader
 * stops the writer's side being read, nothing queues up. A bulk direction's pipe starts at the
 * kernel's default size and grows to pipe_size once it runs full; where the kernel refuses that
 * size (F_SETPIPE_SZ: over fs.pipe-max-size without CAP_SYS_RESOURCE, the user's pipe quota,
 * memory) it tries half as much, and so on down to the size it has.
 *
 * Half-close: when one side ends its sending (EOF), the other side's sending is shut
 * (shutdown(SHUT_WR)) once everything before the EOF was delivered; the relay finishes when
 * both directions did (the second end needs no shutdown: closing both sockets sends its FIN).
 * An error on either side (a reset, EPIPE) ends both at once, and the other side is reset too
 * (SO_LINGER 0), so an abort is seen as one. A relay in which no byte moved for idle_ms ends as
 * well.
 *
 * The sockets are registered edge-triggered once and never modified; the idle timer is one
 * loop timer per relay that is re-armed only when it fires.
 *
 * Set-up cost: a prefix is sent at once by relay_start() (the request that named the
 * connection reaches the server without a round through the loop), a request and its answer
 * cost a recv and a send each way, and a relay given a relay_pipes cache takes its pipes (for
 * bulk) from it and gives them back when it ends, so a bulk connection costs no pipe2() and no
 * close() of pipes. Only a pipe known to be empty (the relay's count and the kernel's FIONREAD
 * both say 0) and still at the default size goes back: bytes of one connection can never come
 * out in another's. */
#ifndef CLOISTER_RELAY_H
#define CLOISTER_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/loop.h"

enum relay_end {
	RELAY_END_CLOSED,   /* both sides finished sending (the normal end) */
	RELAY_END_IDLE,     /* no byte moved for idle_ms */
	RELAY_END_ERROR,    /* a socket failed (errno in relay_stats.error) */
	RELAY_END_CANCELED, /* relay_cancel() */
};

struct relay_stats {
	uint64_t bytes_a_to_b;
	uint64_t bytes_b_to_a;
	uint64_t started_ms, ended_ms; /* loop_now_ms() */
	enum relay_end end;
	int error;             /* negative errno for RELAY_END_ERROR, else 0 */
	bool spliced;          /* no direction had to give up splicing (no pipe, EINVAL) */
	uint64_t bytes_copied; /* of the bytes read, those moved with recv/send (small reads) */
	size_t pipe_size;      /* the biggest pipe a direction had (0: none was made) */
};

struct relay;

/* Called once when the relay ends (from the loop, never from relay_start), after both sockets
 * were closed; the relay is freed right after it returns. */
typedef void (*relay_done_fn)(void *userdata, const struct relay_stats *stats);

/* A bounded cache of empty pipes at the kernel's default size, shared by the relays of one
 * loop (never by two threads). */
struct relay_pipes;

/* Keep at most MAX pipes (2 fds each); -EINVAL for 0, -ENOMEM. */
int relay_pipes_new(size_t max, struct relay_pipes **ret);
/* Closes the pipes it holds. Every relay using it must have ended. NULL is fine. */
void relay_pipes_free(struct relay_pipes *pipes);
/* How many pipes it holds now, and how many it handed out since it was made (for tests). */
size_t relay_pipes_held(const struct relay_pipes *pipes);
uint64_t relay_pipes_reused(const struct relay_pipes *pipes);

struct relay_options {
	size_t pipe_size; /* the most a pipe grows to; 0: RELAY_DEFAULT_PIPE_SIZE; at most
	                     RELAY_MAX_PIPE_SIZE */
	uint64_t idle_ms; /* 0: no idle timeout */
	/* Bytes to send to B before anything read from A (copied; may be NULL). */
	const void *prefix;
	size_t prefix_len;
	struct relay_pipes *pipes; /* where pipes come from and go back to; NULL: pipe2/close */
};

#define RELAY_DEFAULT_PIPE_SIZE (1024u * 1024)
#define RELAY_MAX_PIPE_SIZE     (64u * 1024 * 1024)
#define RELAY_MAX_PREFIX        (64u * 1024)

/* Start relaying between the connected sockets A and B (non-blocking; the relay owns them from
 * now on, also when this fails: they are closed then, and no longer registered on the loop).
 * Either may still be registered on LOOP by the caller: the relay takes the registration over
 * (loop_set_fd), so the caller must not delete it. The prefix is sent to B at once as far
 * as B takes it (an error is met again, and reported, by the first pump). -EINVAL for a prefix over
 * RELAY_MAX_PREFIX, -ENOMEM, or the loop's error. *ret (may be NULL) is valid until DONE is
 * called. */
int relay_start(struct loop *loop, int a, int b, const struct relay_options *opts,
                relay_done_fn done, void *userdata, struct relay **ret);

/* End the relay now (both sockets reset); DONE is called with RELAY_END_CANCELED. */
void relay_cancel(struct relay *r);

#endif
