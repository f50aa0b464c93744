/* The audit log's file and the writer of its lines on the loop; audit.h formats them.
 *
 * The file: $XDG_STATE_HOME/cloister/audit.log, else ~/.local/share/cloister/audit.log
 * (Cloister's default log.file), created 0600 in 0700 directories, appended to with one
 * write(2) a line so that concurrent writers never interleave. A log that cannot be opened is
 * said once; the supervisor goes on without one.
 *
 * The writer: automatic lines (audit_record.automatic) are rate-limited per sandbox, and so
 * are asks no person decided (audit_record.unanswered_ask), each with a bucket of its own
 * (audit_limit.h); what is over is counted and written as one "suppressed" record when the
 * limit lifts (a timer on the loop) and at audit_log_free(). Every line written also goes to
 * the sink (the dashboard's /logs streams).
 *
 * A line the file refuses (a full disk, which the agent can cause through any directory it
 * writes on the same file system) does not close the log: it is counted, said once on the
 * terminal (and a person's decision is said there whole; both even with -q), and the count is
 * written as one "lost" record before the next line that fits, or at audit_log_flush(), which says
 * it if it still cannot be written. A short write's partial line is ended before the next line. */
#ifndef CLOISTER_AUDIT_LOG_H
#define CLOISTER_AUDIT_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct loop;
struct audit_record;
struct audit_log;

/* ---- the file --------------------------------------------------------------------------- */

/* The log path from environment values (NULL when unset): XDG_STATE_HOME, if set and
 * absolute, gives $XDG_STATE_HOME/cloister/audit.log; otherwise HOME (absolute) gives
 * $HOME/.local/share/cloister/audit.log. -ENOENT when neither is usable. *ret_path is
 * malloc'd. */
int audit_log_path(const char *xdg_state_home, const char *home, char **ret_path);

/* Open PATH for appending (O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC|O_NOFOLLOW, mode 0600; an
 * existing file is narrowed to 0600), creating missing parent directories with mode 0700.
 * Refuses a symlink (-ELOOP) and anything but a regular file (-EINVAL). *ret_fd on success. */
int audit_log_open(const char *path, int *ret_fd);

/* Append LINE (as from audit_format_line) with one write(2). -EIO on a short write. */
int audit_log_write(int fd, const char *line);

/* ---- the writer ------------------------------------------------------------------------- */

struct audit_log_options {
	/* Automatic lines a second per sandbox (0: AUDIT_LIMIT_RATE, < 0: no limit) and at once
	 * (0: AUDIT_LIMIT_BURST); the same figures for unanswered asks. */
	int64_t rate;
	int64_t burst;
	/* Automatic lines (audit_record.automatic) gathered and written with one write(2) when
	 * the loop is about to wait (loop_add_prepare), instead of one write each. A line a
	 * person's decision makes, and any other line not automatic, is written at once, after
	 * the automatic lines gathered before it. A crash loses at most the automatic lines of
	 * one round of the loop; never a person's decision. */
	bool batch;
};

/* Opens the file from the environment (a failure is said and tolerated: the writer then
 * writes nothing). -ENOMEM only. */
int audit_log_new(struct loop *loop, const struct audit_log_options *opts,
                  struct audit_log **ret_log);
/* Write the automatic lines gathered (the loop does it before it waits). NULL is fine. */
void audit_log_sync(struct audit_log *log);
/* The end: every line gathered and every count still owed is written now, and from now on every
 * line is written whole (no rate). Call it while the sink still listens. NULL is fine. */
void audit_log_flush(struct audit_log *log);
/* Flushes, then closes. NULL is fine. */
void audit_log_free(struct audit_log *log);

/* Would an automatic line of SANDBOX be written now (the file open, its rate not over)? For a
 * writer that reads what only the line needs (an exec's cwd) only when it will be written. */
bool audit_log_would_write(struct audit_log *log, const char *sandbox);

/* Write REC as one line, unless the rate holds it back (then it is counted). An automatic
 * line may wait for the end of the loop's round (audit_log_options.batch); every other line is
 * in the file when this returns. */
void audit_log_record(struct audit_log *log, const struct audit_record *rec);

/* The file and its directory; NULL when there is none. */
const char *audit_log_file(const struct audit_log *log);
const char *audit_log_dir(const struct audit_log *log);

/* Every line written, as written ("\n" included), with its record's sandbox (may be NULL);
 * FN NULL: none. */
typedef void (*audit_log_sink_fn)(void *userdata, const char *sandbox, const char *line,
                                  size_t len);
void audit_log_set_sink(struct audit_log *log, audit_log_sink_fn fn, void *userdata);

/* Wall-clock milliseconds since the epoch, as audit records take them. */
uint64_t audit_log_now_ms(void);

#endif
