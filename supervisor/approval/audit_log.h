/* The audit log's file and the writer of its lines on the loop; audit.h formats them.
 *
 * The file: $XDG_STATE_HOME/cloister/audit.log, else ~/.local/share/cloister/audit.log
 * (Cloister's default log.file), created 0600 in 0700 directories, appended to (O_APPEND)
 * with writes of whole lines so that concurrent writers (every run of the user's) never
 * interleave within a line. A log that cannot be opened is said once; the supervisor goes on
 * without one.
 *
 * The writer: automatic lines (audit_record.automatic) are rate-limited per sandbox, and so
 * are asks no person decided (audit_record.unanswered_ask), each with a bucket of its own
 * (audit_limit.h); what is over is counted and written as one "suppressed" record when the
 * limit lifts (a timer on the loop) and at audit_log_free(). Every line written also goes to
 * the sink (the dashboard's /logs streams).
 *
 * Gathered lines the file refuses (a full disk, which the agent can cause through any
 * directory it writes on the same file system) wait in memory and are tried again after the
 * delay; only at the end, or beyond what memory keeps, are they lost. Any other line the file
 * refuses does not close the log: it is counted, said once on the terminal (and a person's
 * decision is said there whole; both even with -q), and the count is written as one "lost"
 * record before the next line that fits, or at audit_log_flush(), which says it if it still
 * cannot be written. A short write's partial line is ended before the next line. */
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
	/* Automatic lines (audit_record.automatic) gathered in memory and written with one
	 * write(2), instead of one write each: DELAY_MS after the first of them (a timer on the
	 * loop; 0: AUDIT_LOG_DELAY_MS, at most AUDIT_LOG_DELAY_MAX_MS), or sooner when 64 KiB
	 * are gathered, when any line that is not automatic comes (a person's decision, an ask,
	 * a count: written at once, after the lines gathered before it, so the file keeps their
	 * order), at audit_log_sync() (a reader of the file, an ending signal), at
	 * audit_log_flush(), and from a handler of the signals of a crash (SIGSEGV, SIGBUS,
	 * SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS; whatever handled them before is handed over
	 * to). A SIGKILL of the supervisor (or a stack overflow, which leaves the handler no
	 * stack) therefore loses at most DELAY_MS of automatic lines (and at most 64 KiB of
	 * them); never a person's decision, which is in the file before the process it lets go
	 * is answered. The sink hears every line when it
	 * is gathered. false: every line is written at once. */
	bool batch;
	uint64_t delay_ms;
};

#define AUDIT_LOG_DELAY_MS     20
#define AUDIT_LOG_DELAY_MAX_MS 60000

/* Opens the file from the environment (a failure is said and tolerated: the writer then
 * writes nothing). -ENOMEM only. */
int audit_log_new(struct loop *loop, const struct audit_log_options *opts,
                  struct audit_log **ret_log);
/* Write the automatic lines gathered now: before the file is read (the dashboard's /logs),
 * when an ending signal comes (a SIGKILL may follow). NULL is fine. */
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
 * line may wait in memory (audit_log_options.batch); every other line is in the file when this
 * returns, after every line recorded before it. */
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
