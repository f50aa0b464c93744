/* Run one command asynchronously on the supervisor's loop: no shell, stdin from /dev/null,
 * stdout and stderr through pipes the loop reads, exit watched through a pidfd.
 *
 * The child runs in its own process group (its pid), with every signal at its default action
 * and unblocked, and no fd but 0, 1 and 2. The executable is found like execvp(3) does, but in
 * the PATH of the child's environment (the merged one, see struct command_spec); PATH entries
 * that are not absolute (an empty one included) are skipped, so the workdir never supplies a
 * program by accident; without PATH, "/bin:/usr/bin". There is no fallback to /bin/sh for a
 * file the kernel cannot execute.
 *
 * Output is consumed one of two ways:
 *   captured   (on_output NULL) each stream is kept by a capture (capture.h: head + tail,
 *              bounded) and handed to on_done as valid UTF-8 text;
 *   streaming  (on_output set) every chunk read is handed to on_output as it arrives, in order
 *              within a stream; nothing is kept. command_pause_output() stops reading (the
 *              child then blocks on a full pipe) for a consumer that must apply backpressure.
 *
 * The command is done when its process has exited and both pipes are at end of file; if
 * something else (a background grandchild) holds a pipe open, it waits at most
 * COMMAND_DRAIN_MS after the exit (not counting time the output was paused), then stops
 * reading. on_done is called exactly once, from the
 * loop, never from command_start(). */
#ifndef CLOISTER_COMMAND_H
#define CLOISTER_COMMAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "protocol/message.h"
#include "base/loop.h"

/* Wait for pipes to close after the process exited. */
#define COMMAND_DRAIN_MS 500
/* command_cancel(): SIGTERM, then SIGKILL after this long. */
#define COMMAND_KILL_GRACE_MS_DEFAULT 2000

struct command;

enum command_stream {
	COMMAND_STDOUT = 1,
	COMMAND_STDERR = 2,
};

enum command_status {
	COMMAND_COMPLETED, /* the process exited or was killed by a signal it did not get from us */
	COMMAND_TIMEOUT,   /* timeout_ms passed: the process group got SIGKILL */
	COMMAND_CANCELLED, /* command_cancel() was called before the process ended */
};

struct command_result {
	enum command_status status;
	/* COMPLETED and CANCELLED: 0..255 from exit(), or 128+N for a death by signal N, as a shell
	 * reports it (137 for SIGKILL). TIMEOUT: -1. */
	int exit_code;
	/* Captured mode: NUL-terminated valid UTF-8 without NUL bytes, never NULL; the callback may
	 * take them (set the field to NULL), otherwise they are freed after it returns. Streaming
	 * mode: NULL. */
	char *stdout_text;
	char *stderr_text;
	/* Bytes the command wrote on each stream, kept or not. */
	uint64_t stdout_bytes;
	uint64_t stderr_bytes;
};

/* A chunk of output (len > 0). May call command_pause_output() and command_cancel(); must not
 * call command_free(). */
typedef void (*command_output_fn)(struct command *cmd, enum command_stream stream, const void *data,
                                  size_t len, void *userdata);
/* The end. May call command_free(cmd) (and nothing else on cmd afterwards). */
typedef void (*command_done_fn)(struct command *cmd, struct command_result *result, void *userdata);

struct command_spec {
	/* The executable: a path when it contains '/', otherwise looked up in PATH. Required. */
	const char *file;
	/* The argument vector, argv[0] included, NULL-terminated; NULL means { file, NULL }. */
	char *const *argv;
	/* Working directory; NULL keeps the supervisor's. */
	const char *workdir;
	/* When set (absolute), workdir is relative to it (NULL: the root itself) and is resolved
	 * beneath it (child_setup.h): neither ".." nor a symlink leads outside. */
	const char *workdir_root;
	/* Base environment ("NAME=VALUE", NULL-terminated); NULL means the supervisor's environ. */
	char *const *base_env;
	/* Overrides: each replaces every base entry of the same name, in this order, after the
	 * base entries that remain. */
	const struct cl_env_pair *env;
	size_t envc;
	/* 0: no timeout. */
	uint64_t timeout_ms;
	/* 0: COMMAND_KILL_GRACE_MS_DEFAULT. */
	uint64_t kill_grace_ms;
	/* When the process exits, SIGKILL whatever else is left in its process group (background
	 * jobs), so nothing it started outlives it. */
	bool kill_group_at_exit;
	/* Captured mode limits per stream; 0: CAPTURE_MAX_DEFAULT / CAPTURE_TAIL_DEFAULT. */
	size_t capture_max;
	size_t capture_tail;
	command_output_fn on_output; /* NULL: captured mode */
	command_done_fn on_done;     /* required */
	void *userdata;
};

/* Start the command. Returns 0 with *ret set once the program is running (exec succeeded);
 * on_done follows later. Otherwise nothing is left running and err says why:
 *   -ENOENT  exec: "nope": executable file not found in $PATH   (a name without '/')
 *   -EACCES  exec: "tool": permission denied                      (found, none executable)
 *   -errno   fork/exec /abs/path: no such file or directory      (exec of the path failed)
 *   -errno   chdir /work/dir: no such file or directory   (with workdir_root: root/workdir)
 *   -EINVAL  bad spec; -ENOMEM; -errno for pipes, /dev/null, clone.
 * The messages follow Go's os/exec, which the reference executor uses. */
int command_start(struct loop *loop, const struct command_spec *spec, struct cl_error *err,
                  struct command **ret);

/* SIGTERM to the process group, SIGKILL after kill_grace_ms. on_done still follows, with
 * status COMMAND_CANCELLED and the exit code the process got. Nothing once it is done. */
void command_cancel(struct command *cmd);

/* Streaming mode: stop (true) or resume (false) reading the pipes. */
void command_pause_output(struct command *cmd, bool paused);

/* The child's pid (also its process group id). */
int command_pid(const struct command *cmd);

/* Release the command. One still running is killed first (SIGKILL to its group) and reaped
 * here: this waits for the kernel to finish the kill, which takes microseconds, so keep it for
 * tear-down and use command_cancel() in a running loop. on_done is not called. NULL is fine. */
void command_free(struct command *cmd);

/* The merged environment as command_start() builds it: base (NULL: environ) minus the entries
 * overridden, then the overrides. A malloc'd NULL-terminated array of malloc'd strings; free
 * with command_env_free(). */
int command_env_merge(char *const *base, const struct cl_env_pair *env, size_t envc,
                      char ***ret_env);
void command_env_free(char **env);

#endif
