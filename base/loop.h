/* The supervisor's one event loop: epoll for fds, one timerfd for every timer, signalfd for
 * signals. Handlers run on the loop's thread and must never block; blocking work goes to a
 * worker that reports back through an fd, or to a thread that takes the loop's lock (below).
 *
 * Handlers may add and remove fds and timers (their own included) while being called.
 *
 * Cost: fd registration, change and removal are O(1) (a table indexed by fd number); adding
 * and cancelling a timer are O(log n) (a heap). Timers with equal deadlines fire in the order
 * they were added. */
#ifndef CLOISTER_LOOP_H
#define CLOISTER_LOOP_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

struct loop;
struct loop_timer;

/* Called when FD is ready; EVENTS are epoll flags. A negative return stops the loop with it. */
typedef int (*loop_fd_fn)(struct loop *loop, int fd, uint32_t events, void *userdata);
typedef int (*loop_timer_fn)(struct loop *loop, void *userdata);
typedef int (*loop_signal_fn)(struct loop *loop, int sig, void *userdata);

int loop_new(struct loop **ret);
/* Frees the loop and every registration; does not close the registered fds. NULL is fine. */
void loop_free(struct loop *loop);

/* Registering and changing can fail (memory, epoll): a caller that went on would wait for an
 * event or a timer that never comes. The compiler holds every caller to looking. */
#define LOOP_MUST_CHECK __attribute__((warn_unused_result))

LOOP_MUST_CHECK int loop_add_fd(struct loop *loop, int fd, uint32_t events, loop_fd_fn fn,
                                void *userdata);
LOOP_MUST_CHECK int loop_mod_fd(struct loop *loop, int fd, uint32_t events);
/* Register FD with FN and USERDATA, or hand its registration over to them: one epoll_ctl
 * (MOD) where a loop_del_fd() and a loop_add_fd() would cost two, and the kernel reports it at
 * once when it is ready, as after an add. An event of FD already fetched in this round goes to
 * FN: the new handler must take an event it did not wait for. */
LOOP_MUST_CHECK int loop_set_fd(struct loop *loop, int fd, uint32_t events, loop_fd_fn fn,
                                void *userdata);
/* -ENOENT when FD is not registered, and nothing else: a teardown may ignore it. */
int loop_del_fd(struct loop *loop, int fd);

/* A one-shot timer at DEADLINE_MS on the loop's clock (CLOCK_MONOTONIC milliseconds); a
 * deadline in the past (0 included) fires as soon as the loop gets back to its timers.
 * The returned handle stays valid until the timer fires or is cancelled: a callback must
 * forget its own handle. Cancelling the timer from its own callback does nothing. */
LOOP_MUST_CHECK int loop_add_timer(struct loop *loop, uint64_t deadline_ms, loop_timer_fn fn,
                                   void *userdata, struct loop_timer **ret);
void loop_cancel_timer(struct loop *loop, struct loop_timer *timer);

/* Block SIGS for the whole process and deliver them through a signalfd to FN. */
LOOP_MUST_CHECK int loop_add_signals(struct loop *loop, const sigset_t *sigs, loop_signal_fn fn,
                                     void *userdata);

/* FN runs each time the loop is about to wait, after a round of handlers: for work gathered
 * over the round and done once. At most LOOP_MAX_PREPARE;
 * -ENOSPC beyond. Removed by the same (FN, USERDATA); removing one not there does nothing. */
#define LOOP_MAX_PREPARE 8
typedef void (*loop_prepare_fn)(struct loop *loop, void *userdata);
int loop_add_prepare(struct loop *loop, loop_prepare_fn fn, void *userdata);
void loop_del_prepare(struct loop *loop, loop_prepare_fn fn, void *userdata);

uint64_t loop_now_ms(void);

/* ---- other threads ------------------------------------------------------------------------
 * The loop's lock: whoever holds it runs the loop's logic, alone. The thread that called
 * loop_new() holds it from then on and lets go only while loop_run() sleeps in epoll_wait; a
 * thread that blocks in a syscall of its own (a seccomp RECV) takes it to handle what it got,
 * with every loop_* call and every structure the handlers touch, as the loop's thread would.
 * Nothing else needs a lock of its own. Whoever forks holds it, and so no other thread is in
 * the loop's logic then. */

/* A thread that may outlive the loop (one loop_thread_join() gives up on) is counted from
 * before it starts (with the lock held) until it leaves, its last touch of the loop: a
 * loop_free() in between leaves the lock's memory to the last thread to leave, and its
 * loop_thread_lock() (with *CANCEL set, which its owner does before it frees the loop)
 * returns -ECANCELED. A thread always joined before loop_free() need not be counted. */
void loop_thread_enter(struct loop *loop);
void loop_thread_leave(struct loop *loop);

/* Blocks until the loop's thread waits; 0 with the lock held, or -ECANCELED (not held) once
 * *CANCEL is set by loop_thread_cancel(). */
int loop_thread_lock(struct loop *loop, const bool *cancel);
/* Runs the prepare hooks (this thread's work has not been through them) and lets go. The
 * timers and fds it changed reached the kernel already: the loop's thread is woken only when
 * it must stop (loop_exit() was called). */
void loop_thread_unlock(struct loop *loop);
/* With the lock held: sets *CANCEL and wakes a thread waiting for the lock with it. */
void loop_thread_cancel(struct loop *loop, bool *cancel);
/* After loop_thread_cancel(): sends SIG to THREAD (a handler without SA_RESTART ends its
 * blocking system call with EINTR; one sent just before the call is lost, so it is sent again
 * every 20 ms) until THREAD is joined, for at most BOUND_MS. 0 once joined; -ETIMEDOUT when it
 * is still somewhere no signal ends (an uninterruptible sleep: a read of a hung file system),
 * and then it is detached: it ends by itself once that call returns, and whatever it still
 * touches is the caller's to leave it (see exec_guard.c). */
int loop_thread_join(pthread_t thread, int sig, unsigned bound_ms);
/* How many times epoll_wait returned (the loop's thread woke up). */
uint64_t loop_wakeups(const struct loop *loop);

/* Run until loop_exit() is called or a handler fails; returns the exit code or the failure.
 * It can be run again afterwards. */
int loop_run(struct loop *loop);
void loop_exit(struct loop *loop, int code);

#endif
