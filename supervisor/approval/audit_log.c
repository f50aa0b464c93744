/* The audit log's file and writer; see audit_log.h. */
#include "supervisor/approval/audit_log.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/dirs.h"
#include "base/loop.h"
#include "base/say.h"
#include "base/trace_timing.h"
#include "supervisor/approval/audit.h"
#include "supervisor/approval/audit_limit.h"

/* ---- the file --------------------------------------------------------------------------- */

int audit_log_path(const char *xdg_state_home, const char *home, char **ret_path)
{
	char *path = NULL;
	int r;

	/* The XDG spec says relative values are invalid and must be ignored. */
	if (xdg_state_home && xdg_state_home[0] == '/')
		r = asprintf(&path, "%s/cloister/audit.log", xdg_state_home);
	else if (home && home[0] == '/')
		r = asprintf(&path, "%s/.local/share/cloister/audit.log", home);
	else
		return -ENOENT;
	if (r < 0)
		return -ENOMEM;
	*ret_path = path;
	return 0;
}

int audit_log_open(const char *path, int *ret_fd)
{
	_cleanup_close_ int fd = -EBADF;
	struct stat st;
	int r;

	if (!path || path[0] != '/')
		return -EINVAL;
	r = dirs_make_parent(path, 0700);
	if (r < 0)
		return r;
	/* O_NONBLOCK: a FIFO planted at the path must not block the open; refused below. */
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
	if (fd < 0)
		return errno == ENXIO ? -EINVAL : -errno; /* ENXIO: a FIFO without a reader */
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) < 0)
		return -errno;
	if (fcntl(fd, F_SETFL, O_APPEND) < 0)
		return -errno;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int audit_log_write(int fd, const char *line)
{
	size_t len = strlen(line);
	ssize_t n;

	do
		n = write(fd, line, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/* ---- the writer ------------------------------------------------------------------------- */

struct audit_log {
	struct loop *loop;
	int fd;
	char *path;
	char *dir;
	struct audit_limit *automatic; /* automatic verdicts; NULL: every line is written */
	struct audit_limit *asks;      /* asks no person decided, same rate */
	struct audit_limit_config rate;
	struct loop_timer *lift; /* when the next suppressed count is due */
	bool freeing;
	/* Lines the file refused (a full disk: the agent can fill it) are counted, the file kept
	 * open, and the count written as one "lost" line before the next line that fits. */
	uint64_t lost;
	uint64_t lost_first_ms;
	int lost_error;
	bool torn;     /* a short write left the file's last line without its "\n" */
	bool lost_cut; /* …during this count: the reader is told that line is cut */
	audit_log_sink_fn sink;
	void *sink_userdata;
	/* Automatic lines gathered (audit_log_options.batch), whole lines only, written with one
	 * write(2) at most DELAY_MS after the first of them (the timer DUE), or sooner. */
	bool batch;
	bool stalled; /* the file refused them: they wait (stall) */
	uint64_t delay_ms;
	struct loop_timer *due;
	char *pending;
	size_t pending_len, pending_lines;
};

/* More gathered than this is written at once: at 20 ms, a busy loop gathers a few dozen lines. */
#define PENDING_MAX (64 * 1024)

uint64_t audit_log_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* LINE with one write(2), after a "\n" that ends a line a short write cut. 0, or -errno: then
 * nothing was written, or only a start (TORN says the file now ends mid-line). */
static int append(struct audit_log *log, const char *line)
{
	_cleanup_free_ char *joined = NULL;
	size_t len;
	ssize_t n;

	if (log->torn) {
		if (asprintf(&joined, "\n%s", line) < 0)
			return -ENOMEM;
		line = joined;
	}
	len = strlen(line);
	do
		n = write(log->fd, line, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n == len) {
		log->torn = false;
		return 0;
	}
	if (n > 0)
		log->torn = log->lost_cut = true;
	/* A regular file takes only part of a write when its file system or its size limit ran
	 * out; the next write would say which (ENOSPC, EDQUOT, EFBIG). */
	return -ENOSPC;
}

/* What a person must know even with -q: the log is not being written, and a decision of
 * theirs is not in it. */
#define say_loud(...)                      \
	do {                               \
		bool quiet_ = say_quiet(); \
                                           \
		say_set_quiet(false);      \
		say(__VA_ARGS__);          \
		say_set_quiet(quiet_);     \
	} while (0)

/* A person decided: the decision must reach someone even when the file does not take it. */
static bool is_decision(const struct audit_record *rec)
{
	return !rec->automatic && !rec->unanswered_ask &&
	       (rec->verdict == AUDIT_APPROVED || rec->verdict == AUDIT_DENIED);
}

static void count_lost(struct audit_log *log, const struct audit_record *rec, int error)
{
	if (log->lost == 0) {
		log->lost_first_ms = audit_log_now_ms();
		log->lost_error = error;
	}
	if (log->lost == 0 && !log->stalled) {
		say_loud("audit log %s: cannot write (%s); lines are counted until there is room",
		         log->path, strerror(-error));
	}
	log->lost++;
	if (rec && is_decision(rec))
		say_loud("audit log: not written: %s %s %s by %s", rec->kind ? rec->kind : "item",
		         rec->summary ? rec->summary : "", audit_verdict_to_string(rec->verdict),
		         rec->decided_by ? rec->decided_by : "a person");
}

/* The count of lines lost, as one line, once the file takes lines again. 0 when written or
 * none is owed. */
static int write_lost(struct audit_log *log)
{
	_cleanup_free_ char *line = NULL;
	char reason[256];
	struct audit_record rec = {
	        .time_ms = audit_log_now_ms(),
	        .kind = "audit",
	        .pid = -1,
	        .uid = -1,
	        .verdict = AUDIT_LOST,
	        .latency_ms = -1,
	        .reason = reason,
	        .lost = (int64_t)log->lost,
	};
	int r;

	if (log->lost == 0)
		return 0;
	snprintf(reason, sizeof(reason), "%llu lines not written in %.1f s: %s%s",
	         (unsigned long long)log->lost, (double)(rec.time_ms - log->lost_first_ms) / 1000.0,
	         strerror(-log->lost_error),
	         log->lost_cut ? " (the line before this one is the start of one of them)" : "");
	r = audit_format_line(&rec, &line);
	if (r >= 0)
		r = append(log, line);
	if (r < 0)
		return r;
	log->lost = 0;
	log->lost_cut = false;
	if (log->sink)
		log->sink(log->sink_userdata, NULL, line, strlen(line));
	return 0;
}

/* The gathered lines with one write(2). What the file refuses is counted as lost, line by line
 * (a line cut is said by the count, as for a line alone). */
static bool schedule_due(struct audit_log *log);

/* The file refuses the gathered lines (a full disk): they wait in memory, up to PENDING_MAX,
 * and are tried again after the delay, so an agent that fills the disk for a moment erases
 * nothing it did before. Said once, until they are written. */
static void stall(struct audit_log *log, int error)
{
	if (!log->stalled && log->lost == 0)
		say_loud("audit log %s: cannot write (%s); lines wait in memory (up to %u KiB, the "
		         "rest counted) until there is room",
		         log->path, strerror(-error), PENDING_MAX / 1024);
	log->stalled = true;
	(void)schedule_due(log);
}

/* The gathered lines with one write(2). What the file refuses waits in memory for the next
 * try (stall); at the LAST try (the end) it is counted as lost, line by line (a line cut is
 * said by the count, as for a line alone). */
static void write_pending(struct audit_log *log, bool last)
{
	size_t done = 0;
	int r = 0;

	if (log->pending_len == 0)
		return;
	r = write_lost(log);
	if (r >= 0 && log->torn) {
		r = append(log, ""); /* ends the cut line with its "\n" */
		if (r >= 0 && log->torn)
			r = -ENOSPC;
	}
	while (r >= 0 && done < log->pending_len) {
		ssize_t n = write(log->fd, log->pending + done, log->pending_len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : -ENOSPC;
			break;
		}
		done += (size_t)n;
	}
	if (done < log->pending_len) {
		/* The lines from the first not written whole. */
		size_t whole = 0, lines = 0;

		for (size_t i = 0; i < done; i++)
			if (log->pending[i] == '\n')
				whole = i + 1, lines++;
		if (done > whole)
			log->torn = true; /* that line is written again, whole, after a "\n" */
		if (!last) {
			log->pending_len -= whole;
			log->pending_lines -= lines;
			memmove(log->pending, log->pending + whole, log->pending_len);
			stall(log, r < 0 ? r : -ENOSPC);
			return;
		}
		if (done > whole)
			log->lost_cut = true;
		for (size_t i = lines; i < log->pending_lines; i++)
			count_lost(log, NULL, r < 0 ? r : -ENOSPC);
	}
	log->pending_len = 0;
	log->pending_lines = 0;
	log->stalled = false;
}

/* ---- a crash ----------------------------------------------------------------------------- */

/* A fault or an abort of the supervisor writes the automatic lines still in memory before it
 * ends, so that only a SIGKILL (or the machine) can lose them: a hostile agent that found a
 * way to crash us must not also erase what it did just before. The gathered lines are whole
 * up to pending_len (it grows after the copy), and write(2) is async-signal-safe. One log a
 * process has it: the last that gathers. */
static struct audit_log *volatile crash_log;
/* A child forked by the supervisor (the ptrace backstop's tracer) has a copy of the lines: they
 * are the parent's to write, not a second time by the child's crash. */
static volatile pid_t crash_pid;
static struct sigaction crash_old[NSIG];
static volatile sig_atomic_t crash_seen;

static void crash_on_signal(int sig, siginfo_t *si, void *uc)
{
	/* Taken by one thread only: two threads that fault at once write the lines once. */
	struct audit_log *log = __atomic_exchange_n(&crash_log, NULL, __ATOMIC_ACQ_REL);
	size_t len = log ? __atomic_load_n(&log->pending_len, __ATOMIC_ACQUIRE) : 0;
	int saved = errno;

	(void)uc;
	if (log && getpid() == crash_pid && log->fd >= 0 && len) {
		if (log->torn)
			(void)!write(log->fd, "\n", 1);
		(void)!write(log->fd, log->pending, len);
	}
	/* What was there before (the default, a sanitizer's, the terminal's rescue): a fault
	 * happens again on return, a sent signal is raised again (blocked until then). A second
	 * time here (a handler before us that hands back to us) ends it with the default. */
	if (__atomic_fetch_add(&crash_seen, 1, __ATOMIC_RELAXED))
		(void)signal(sig, SIG_DFL);
	else
		(void)sigaction(sig, &crash_old[sig], NULL);
	if (si->si_code <= 0)
		(void)raise(sig);
	errno = saved;
}

/* Ours where a signal ends the process, whatever was there kept to hand over to; where ours is
 * already, nothing. */
static void crash_install(void)
{
	static const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};
	struct sigaction sa = {.sa_sigaction = crash_on_signal, .sa_flags = SA_SIGINFO};

	sigfillset(&sa.sa_mask);
	for (size_t i = 0; i < ELEMENTSOF(fatal); i++) {
		int sig = fatal[i];
		struct sigaction cur;

		if (sigaction(sig, NULL, &cur) < 0 || cur.sa_handler == SIG_IGN ||
		    ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == crash_on_signal))
			continue;
		crash_old[sig] = cur;
		(void)sigaction(sig, &sa, NULL);
	}
}

void audit_log_sync(struct audit_log *log)
{
	if (log && log->fd >= 0)
		write_pending(log, false);
}

static int on_due(struct loop *loop, void *userdata)
{
	struct audit_log *log = userdata;

	(void)loop;
	log->due = NULL;
	if (!log->pending_len)
		return 0; /* written sooner: by a decision, a reader, a full buffer */
	/* The execs' lines: their phase's time, though written here. */
	trace_exec_more_begin();
	audit_log_sync(log);
	trace_exec_more_end(TRACE_EXEC_AUDIT);
	return 0;
}

/* The first line gathered since the last write sets when they all go. A timer from an earlier
 * line, whose lines were written sooner, fires before that: still within the bound. */
static bool schedule_due(struct audit_log *log)
{
	if (log->due)
		return true;
	return loop_add_timer(log->loop, loop_now_ms() + log->delay_ms, on_due, log, &log->due) >=
	       0;
}

/* Gather LINE; false when it must be written alone (not gathering, no memory). */
static bool gather(struct audit_log *log, const char *line)
{
	size_t len = strlen(line);

	if (!log->batch)
		return false;
	if (log->pending_len + len > PENDING_MAX)
		write_pending(log, false);
	if (!log->pending) {
		log->pending = malloc(PENDING_MAX);
		if (!log->pending)
			return false;
	}
	if (len > PENDING_MAX - log->pending_len || !schedule_due(log))
		return false;
	memcpy(log->pending + log->pending_len, line, len);
	/* The crash handler writes up to pending_len: the line is whole before it counts, also
	 * for a handler on another thread (the exec guard's; only the holder of the loop's lock
	 * gathers lines). */
	__atomic_store_n(&log->pending_len, log->pending_len + len, __ATOMIC_RELEASE);
	log->pending_lines++;
	return true;
}

static void write_line(struct audit_log *log, const struct audit_record *rec)
{
	_cleanup_free_ char *line = NULL;
	int r;

	if (log->fd < 0)
		return;
	r = audit_format_line(rec, &line);
	if (r >= 0 && rec->automatic && gather(log, line)) {
		if (log->sink)
			log->sink(log->sink_userdata, rec->sandbox, line, strlen(line));
		return;
	}
	/* Every line gathered before this one comes first; then the count of what was lost. */
	write_pending(log, false);
	if (r >= 0)
		r = write_lost(log);
	if (r >= 0)
		r = append(log, line);
	if (r < 0) {
		count_lost(log, rec, r);
		return;
	}
	if (log->sink)
		log->sink(log->sink_userdata, rec->sandbox, line, strlen(line));
}

/* Write the counts of lines left out that are due at NOW (ALL: every one). */
static void write_suppressed(struct audit_log *log, uint64_t now, bool all)
{
	struct audit_limit_report rep;
	struct audit_limit *limits[] = {log->automatic, log->asks};

	for (size_t i = 0; i < ELEMENTSOF(limits); i++)
		while (limits[i] && audit_limit_pop_due(limits[i], now, all, &rep) == 1) {
			char reason[256];
			struct audit_record rec = {
			        .time_ms = audit_log_now_ms(),
			        .sandbox = rep.sandbox,
			        .kind = "audit",
			        .pid = -1,
			        .uid = -1,
			        .verdict = AUDIT_SUPPRESSED,
			        .latency_ms = -1,
			        .reason = reason,
			        .suppressed = (int64_t)rep.count,
			};

			snprintf(reason, sizeof(reason),
			         "%llu %s lines not written in %.1f s: over the audit rate of %u "
			         "lines a second (burst %u)",
			         (unsigned long long)rep.count,
			         i == 0 ? "automatic" : "unanswered ask",
			         (double)(rep.last_ms - rep.first_ms) / 1000.0, log->rate.rate,
			         log->rate.burst);
			write_line(log, &rec);
		}
}

static int on_lift(struct loop *loop, void *userdata);

static void schedule_lift(struct audit_log *log)
{
	uint64_t due = log->automatic ? audit_limit_next_due(log->automatic) : UINT64_MAX;
	uint64_t ask_due = log->asks ? audit_limit_next_due(log->asks) : UINT64_MAX;

	if (ask_due < due)
		due = ask_due;
	if (log->lift || due == UINT64_MAX || log->freeing)
		return;
	if (loop_add_timer(log->loop, due, on_lift, log, &log->lift) < 0)
		log->lift = NULL; /* written with the next line, or at the end */
}

static int on_lift(struct loop *loop, void *userdata)
{
	struct audit_log *log = userdata;

	log->lift = NULL;
	write_suppressed(log, loop_now_ms(), false);
	schedule_lift(log);
	return 0;
}

bool audit_log_would_write(struct audit_log *log, const char *sandbox)
{
	if (!log || log->fd < 0)
		return false;
	return !log->automatic || audit_limit_would_take(log->automatic, sandbox, loop_now_ms());
}

void audit_log_record(struct audit_log *log, const struct audit_record *rec)
{
	if (!log || log->fd < 0)
		return;
	struct audit_limit *limit = rec->automatic        ? log->automatic
	                            : rec->unanswered_ask ? log->asks
	                                                  : NULL;

	if (limit) {
		uint64_t now = loop_now_ms();

		/* A count that is due comes before the lines after it. */
		write_suppressed(log, now, false);
		if (!audit_limit_take(limit, rec->sandbox, now)) {
			schedule_lift(log);
			return;
		}
	}
	write_line(log, rec);
}

/* The file from the environment: $XDG_STATE_HOME may be created (the XDG spec says so); a
 * home directory that is not there is not ours to create. */
static void open_file(struct audit_log *log)
{
	_cleanup_free_ char *path = NULL;
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	struct stat st;
	int r;

	r = audit_log_path(state, home, &path);
	if (r >= 0 && !(state && state[0] == '/') &&
	    (!home || stat(home, &st) < 0 || !S_ISDIR(st.st_mode)))
		r = -ENOENT;
	if (r >= 0)
		r = audit_log_open(path, &log->fd);
	if (r >= 0) {
		log->path = strdup(path);
		log->dir = strdup(path);
		if (log->dir && strrchr(log->dir, '/'))
			*strrchr(log->dir, '/') = '\0';
	}
	if (r < 0)
		say("audit log %s unavailable (%s); continuing without it",
		    path ? path : "(no HOME)", strerror(-r));
}

int audit_log_new(struct loop *loop, const struct audit_log_options *opts,
                  struct audit_log **ret_log)
{
	struct audit_log *log = calloc(1, sizeof(*log));
	int r = 0;

	if (!log)
		return -ENOMEM;
	log->loop = loop;
	log->fd = -EBADF;
	log->rate = (struct audit_limit_config){
	        .rate = opts->rate < 0    ? 0
	                : opts->rate == 0 ? AUDIT_LIMIT_RATE
	                                  : (uint32_t)opts->rate,
	        .burst = opts->burst > 0 ? (uint32_t)opts->burst : AUDIT_LIMIT_BURST,
	};
	if (log->rate.rate)
		r = audit_limit_new(&log->rate, &log->automatic);
	if (r >= 0 && log->rate.rate)
		r = audit_limit_new(&log->rate, &log->asks);
	if (r < 0) {
		audit_log_free(log);
		return r;
	}
	open_file(log);
	log->batch = opts->batch && log->fd >= 0 && loop;
	if (log->batch) {
		crash_install();
		crash_pid = getpid();
		/* Atomic, as the handler takes it: a fault may come on the exec guard's thread. */
		__atomic_store_n(&crash_log, log, __ATOMIC_RELEASE);
	}
	log->delay_ms = opts->delay_ms ? opts->delay_ms : AUDIT_LOG_DELAY_MS;
	if (log->delay_ms > AUDIT_LOG_DELAY_MAX_MS)
		log->delay_ms = AUDIT_LOG_DELAY_MAX_MS;
	*ret_log = log;
	return 0;
}

void audit_log_flush(struct audit_log *log)
{
	if (!log)
		return;
	log->freeing = true;
	log->batch = false;
	{
		struct audit_log *mine = log;

		/* Only if it is still ours, in one step against a handler taking it meanwhile. */
		(void)__atomic_compare_exchange_n(&crash_log, &mine, NULL, false, __ATOMIC_ACQ_REL,
		                                  __ATOMIC_ACQUIRE);
	}
	if (log->fd >= 0)
		write_pending(log, true);
	if (log->due)
		loop_cancel_timer(log->loop, log->due);
	log->due = NULL;
	if (log->lift)
		loop_cancel_timer(log->loop, log->lift);
	log->lift = NULL;
	write_suppressed(log, UINT64_MAX, true);
	if (log->fd >= 0 && write_lost(log) < 0)
		say_loud("audit log %s: %llu lines could not be written (%s)", log->path,
		         (unsigned long long)log->lost, strerror(-log->lost_error));
	audit_limit_free(log->automatic);
	log->automatic = NULL;
	audit_limit_free(log->asks);
	log->asks = NULL;
}

void audit_log_free(struct audit_log *log)
{
	if (!log)
		return;
	audit_log_flush(log);
	cl_closep(&log->fd);
	free(log->pending);
	free(log->path);
	free(log->dir);
	free(log);
}

const char *audit_log_file(const struct audit_log *log)
{
	return log ? log->path : NULL;
}

const char *audit_log_dir(const struct audit_log *log)
{
	return log ? log->dir : NULL;
}

void audit_log_set_sink(struct audit_log *log, audit_log_sink_fn fn, void *userdata)
{
	log->sink = fn;
	log->sink_userdata = userdata;
}
