/* The ask for writes outside fs.write; see write_ask.h. */
#include "supervisor/files/write_ask.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/loop.h"
#include "base/say.h"
#include "notifier/fdpass.h"
#include "notifier/notify.h"
#include "notifier/open_target.h"
#include "supervisor/approval/approvals.h"
#include "supervisor/approval/audit.h"
#include "supervisor/approval/audit_log.h"
#include "notifier/resolve.h"
#include "supervisor/files/write_rules.h"
#include "supervisor/files/write_shield.h"
#include "supervisor/files/write_target.h"
#include "supervisor/policy/config_files.h"
#include "supervisor/policy/decisions.h"
#include "supervisor/policy/fs_policy.h"

/* While asks are pending, how often to check that their processes are still alive. */
#define LIVENESS_INTERVAL_MS 200
/* The longest the supervisor's own open may take (a file system that hangs): then EACCES. */
#define OPEN_TIMEOUT_MS 5000
/* Opens waiting at once (each holds its directory open): past it, refused. The queue bounds
 * the items; identical asks merge, and this bounds their waiters. */
#define MAX_PENDING 256

/* One open waiting for a person, with what its approval needs. */
struct pending_write {
	uint64_t cookie; /* the seccomp notification id */
	pid_t pid;
	struct write_target where; /* its directory pinned in both views, its name, its path */
	int flags;
	mode_t mode, umask;
	uid_t fsuid;
	gid_t fsgid;
	gid_t groups[PROC_STATUS_MAX_GROUPS];
	size_t ngroups;
};

struct write_ask {
	struct loop *loop;
	struct approval_source *approvals;
	struct notifier *notifier;
	const struct config *config;
	char *name, *project, *home, *worktree, *decisions_dir;
	bool verbose, quiet_to_agent, terminating;
	struct agent_note_ttys ttys;
	struct write_answers *answers;
	struct write_shield *shield;
	struct write_notes notes; /* the reason lines' bound */
	struct pending_write *pending;
	size_t n_pending, cap_pending;
};

/* ---- telling ----------------------------------------------------------------------------- */

static void audit_refusal(struct write_ask *wa, const struct open_target *t, const char *path,
                          const char *rule, const char *reason)
{
	struct audit_record rec = {
	        .time_ms = audit_log_now_ms(),
	        .sandbox = wa->name,
	        .project = wa->project,
	        .kind = "file",
	        .pid = t->pid,
	        .uid = (int64_t)t->ids.fsuid,
	        .exe = t->exe[0] ? t->exe : NULL,
	        .argv = (const char *const *)t->argv,
	        .argc = t->argc,
	        .cwd = t->cwd,
	        .summary = path,
	        .verdict = AUDIT_DENY,
	        .rule = rule,
	        .decided_by = "policy",
	        .latency_ms = -1,
	        .reason = reason,
	        .automatic = true,
	};

	approvals_verdict(wa->approvals, &rec);
}

/* The reason line on the refused process's stderr, then the answer (the line first: while the
 * process is held, its pid is its own). */
static void refuse(struct write_ask *wa, uint64_t id, pid_t pid, const char *path, const char *why,
                   int error)
{
	if (!wa->quiet_to_agent && write_notes_admit(&wa->notes, loop_now_ms(), pid, path)) {
		char line[AGENT_NOTE_MAX];
		size_t n = agent_note_format(line, sizeof(line), "write to", path, why);

		(void)agent_note_send(wa->notifier, id, pid, line, n, &wa->ttys);
	}
	(void)notifier_deny(wa->notifier, id, error);
}

/* A refusal by the policy: said, one audit line, the reason line and EACCES. */
static void refuse_logged(struct write_ask *wa, const struct open_target *t, const char *path,
                          const char *rule)
{
	say("write to %s denied: %s", path, rule);
	audit_refusal(wa, t, path, rule, NULL);
	refuse(wa, t->id, t->pid, path, rule, EACCES);
}

static void let_kernel_decide(struct write_ask *wa, uint64_t id)
{
	(void)notifier_continue(wa->notifier, id);
}

/* ---- the supervisor's open ---------------------------------------------------------------- */

/* Close every fd above 2 but A and B: the child runs as the process for a moment, with none
 * of the supervisor's files. */
static void close_all_but(int a, int b)
{
	unsigned lo = (unsigned)(a < b ? a : b), hi = (unsigned)(a < b ? b : a);

	if (lo > 3)
		(void)syscall(SYS_close_range, 3U, lo - 1, 0U);
	if (hi > lo + 1)
		(void)syscall(SYS_close_range, lo + 1, hi - 1, 0U);
	(void)syscall(SYS_close_range, hi + 1, ~0U, 0U);
}

/* In the child: become the process's file identity and open. Never returns. */
static void open_child(const struct pending_write *p, int sock)
{
	int flags = (p->flags & ~O_CLOEXEC) | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
	int error = 0, fd = -1;
	struct stat st;

	close_all_but(p->where.host_dir, sock);

	if (getegid() != p->fsgid || geteuid() != p->fsuid || geteuid() == 0) {
		if (setgroups(p->ngroups, p->groups) < 0 ||
		    setresgid(p->fsgid, p->fsgid, p->fsgid) < 0 ||
		    setresuid(p->fsuid, p->fsuid, p->fsuid) < 0)
			error = errno;
	}
	if (!error) {
		umask(p->umask);
		/* O_NOFOLLOW: a symlink put in the file's place since the ask is refused, not
		 * followed. O_NONBLOCK: a FIFO put there fails instead of waiting for a reader. */
		fd = openat(p->where.host_dir, p->where.last, flags, p->mode);
		if (fd < 0)
			error = errno;
	}
	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)))
		error = EACCES;
	if (!error && !(p->flags & O_NONBLOCK))
		(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	if (!error && fdpass_send(sock, fd, &error, sizeof(error)) == 0)
		_exit(0);
	if (!error)
		error = EIO;
	(void)send(sock, &error, sizeof(error), MSG_NOSIGNAL);
	_exit(0);
}

/* Open the file of P as its process would, from outside the sandbox. The fd (O_CLOEXEC) or
 * the open's -errno. */
static int open_as_process(const struct pending_write *p)
{
	int sv[2], fd = -EBADF, error = EIO, r;
	struct pollfd pfd;
	pid_t child;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	child = fork();
	if (child < 0) {
		r = -errno;
		close(sv[0]);
		close(sv[1]);
		return r;
	}
	if (child == 0) {
		close(sv[0]);
		open_child(p, sv[1]);
	}
	close(sv[1]);
	pfd = (struct pollfd){.fd = sv[0], .events = POLLIN};
	do
		r = poll(&pfd, 1, OPEN_TIMEOUT_MS);
	while (r < 0 && errno == EINTR);
	if (r <= 0) {
		kill(child, SIGKILL);
		error = ETIMEDOUT;
	} else {
		r = fdpass_recv(sv[0], &error, sizeof(error), NULL, &fd);
		if (r == 0)
			error = 0;
		else if (r != -EBADMSG || error <= 0)
			error = EIO; /* the child's plain message carries its errno */
	}
	close(sv[0]);
	while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
		;
	return error ? -error : fd;
}

/* Open and hand the fd over as the syscall's result; EACCES (or the open's own errno) when
 * that fails. */
static void open_and_answer(struct write_ask *wa, const struct pending_write *p)
{
	int fd = open_as_process(p), r;

	if (fd < 0) {
		int error = -fd;
		char why[128];

		/* Errors the kernel gives an open itself reach the process as they are. */
		if (error != EEXIST && error != EISDIR && error != ENOENT && error != ENOTDIR &&
		    error != ENOSPC && error != EDQUOT && error != ETXTBSY && error != EROFS)
			error = EACCES;
		snprintf(why, sizeof(why), "the supervisor's open failed: %s", strerror(-fd));
		say("write to %s failed after approval: %s", p->where.path, strerror(-fd));
		refuse(wa, p->cookie, p->pid, p->where.path, why, error);
		return;
	}
	/* What was opened is still what the agent's view shows at that name, and no shielded
	 * file: a name swapped since the ask gets nothing. */
	{
		char why[256];
		struct stat st;

		if (!write_target_is(&p->where, fd)) {
			snprintf(why, sizeof(why), "the file changed since it was asked about");
		} else if (fstat(fd, &st) < 0 || write_shield_covers(wa->shield, p->where.host_dir,
		                                                     &st, why, sizeof(why))) {
			;
		} else {
			why[0] = '\0';
		}
		if (why[0]) {
			close(fd);
			say("write to %s refused after approval: %s", p->where.path, why);
			refuse(wa, p->cookie, p->pid, p->where.path, why, EACCES);
			return;
		}
	}
	r = notifier_answer_fd(wa->notifier, p->cookie, fd, (p->flags & O_CLOEXEC) != 0);
	close(fd);
	if (r < 0 && r != -ENOENT) {
		say("write to %s: handing the file over failed: %s", p->where.path, strerror(-r));
		(void)notifier_deny(wa->notifier, p->cookie, EACCES);
	} else if (r >= 0 && wa->verbose) {
		say("write to %s allowed: opened by the supervisor as fd %d of pid %d",
		    p->where.path, r, p->pid);
	}
}

/* ---- pending ------------------------------------------------------------------------------ */

static struct pending_write *pending_find(struct write_ask *wa, uint64_t cookie)
{
	for (size_t i = 0; i < wa->n_pending; i++)
		if (wa->pending[i].cookie == cookie)
			return &wa->pending[i];
	return NULL;
}

static void pending_done(struct pending_write *p)
{
	write_target_done(&p->where);
}

static void pending_remove(struct write_ask *wa, struct pending_write *p)
{
	pending_done(p);
	*p = wa->pending[--wa->n_pending];
}

static int pending_reserve(struct write_ask *wa)
{
	if (wa->n_pending == wa->cap_pending) {
		size_t cap = wa->cap_pending ? wa->cap_pending * 2 : 16;
		struct pending_write *grown = reallocarray(wa->pending, cap, sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		wa->pending = grown;
		wa->cap_pending = cap;
	}
	return 0;
}

/* ---- the approvals service's side --------------------------------------------------------- */

static void on_resolved(void *userdata, const struct queue_item *item, const uint64_t *cookies,
                        size_t n)
{
	struct write_ask *wa = userdata;
	bool allow = item->state == QUEUE_STATE_APPROVED;

	for (size_t i = 0; i < n; i++) {
		struct pending_write *p = pending_find(wa, cookies[i]);

		if (!p)
			continue;
		if (allow)
			open_and_answer(wa, p);
		else
			refuse(wa, p->cookie, p->pid, p->where.path,
			       item->reason && *item->reason ? item->reason : "the user denied it",
			       EACCES);
		pending_remove(wa, p);
	}
	if (item->state == QUEUE_STATE_DENIED || item->state == QUEUE_STATE_TIMED_OUT)
		say("write to %s %s: %s", item->summary, queue_state_to_string(item->state),
		    item->reason);
}

/* A project or global decision: written to its decisions file (fs.allow) for the next runs.
 * VALUE is the path, with a trailing "/" for a directory. */
static int persist(struct write_ask *wa, const struct queue_item *item, enum queue_scope scope,
                   const char *value, struct cl_error *err)
{
	const char *project = item->project ? item->project : wa->project;
	_cleanup_free_ char *path = NULL;
	struct decisions_entry e = {
	        .section = DECISIONS_FS,
	        .list = DECISIONS_ALLOW,
	        .fs_path = value,
	};
	int r;

	if (!wa->decisions_dir)
		return cl_error_set(err, -ENOENT, "no config directory to keep decisions in");
	if (scope == QUEUE_SCOPE_PROJECT && !project)
		return cl_error_set(
		        err, -EINVAL,
		        "no project (start with --project NAME to keep project decisions)");
	r = decisions_prepare_dir(wa->decisions_dir, err);
	if (r >= 0)
		r = decisions_path(wa->decisions_dir, scope == QUEUE_SCOPE_PROJECT ? project : NULL,
		                   &path, err);
	if (r >= 0)
		r = decisions_update_entry(path, &e, err);
	if (r >= 0)
		say("allowed writes to %s in %s", value, path);
	return r < 0 ? r : 0;
}

/* A scope wider than once: the path, or the directory the decision names, for the session;
 * project and global ones also for the next runs (the decisions files' fs.allow). */
static int on_decided(void *userdata, const struct queue_item *item,
                      const struct approval_decision *d, struct cl_error *err)
{
	struct write_ask *wa = userdata;
	_cleanup_free_ char *value = NULL, *entry = NULL;
	bool prefix;
	size_t len;
	int r = 0, k;

	if (!d->allow || d->scope == QUEUE_SCOPE_ONCE)
		return 0;
	value = strdup(d->value ? d->value : item->summary);
	if (!value)
		return cl_error_set(err, -ENOMEM, "out of memory");
	len = strlen(value);
	prefix = d->is_pattern || (len > 1 && value[len - 1] == '/');
	while (len > 1 && value[len - 1] == '/')
		value[--len] = '\0';
	if (value[0] != '/')
		return cl_error_set(err, -EINVAL, "a file decision needs an absolute path, not %s",
		                    value);
	/* The file first: what the next run will read. The session keeps it either way. */
	if (d->scope == QUEUE_SCOPE_PROJECT || d->scope == QUEUE_SCOPE_GLOBAL) {
		if (asprintf(&entry, "%s%s", value, prefix && len > 1 ? "/" : "") < 0)
			return cl_error_set(err, -ENOMEM, "out of memory");
		r = persist(wa, item, d->scope, entry, err);
	}
	k = write_answers_allow(wa->answers, value, prefix);
	if (k < 0 && r >= 0)
		r = cl_error_set(err, k, "the session's file decisions: %s", strerror(-k));
	return r;
}

static enum fs_verdict decide(const struct write_ask *wa, const char *path, char *rule,
                              size_t size);

/* Before a person's decision on a file ask is applied: what a scope wider than once would keep
 * must be a path an ask could reach. A denial is kept for no write but this one (the config's
 * fs.protect is the lasting refusal of a path). An allowance is refused when the file, as it
 * is now, is under fs.hide/fs.protect or shielded (Cloister's own files, several names): the
 * ask was made when it was none of these, and a card must not turn into a lasting rule for
 * what its file became meanwhile. -EINVAL with ERR's why, and nothing is decided. */
static int on_validate(void *userdata, const struct queue_item *item,
                       const struct approval_decision *d, struct cl_error *err)
{
	struct write_ask *wa = userdata;
	const struct pending_write *p = NULL;
	char rule[768], why[256];
	struct stat st;

	if (d->scope == QUEUE_SCOPE_ONCE)
		return 0;
	if (!d->allow)
		return cl_error_set(err, -EINVAL,
		                    "a write is denied once only (the next one asks again); "
		                    "fs.protect in the config refuses a path for good");
	if (decide(wa, item->summary, rule, sizeof(rule)) != FS_ASK)
		return cl_error_set(err, -EINVAL, "%s can never be remembered: %s", item->summary,
		                    rule);
	for (size_t i = 0; i < wa->n_pending && !p; i++)
		if (strcmp(wa->pending[i].where.path, item->summary) == 0)
			p = &wa->pending[i];
	if (!p)
		return 0; /* nobody waits: the decision keeps nothing this source could check */
	if (strcmp(p->where.host_path, p->where.path) != 0 &&
	    decide(wa, p->where.host_path, rule, sizeof(rule)) != FS_ASK)
		return cl_error_set(err, -EINVAL, "%s can never be remembered: %s", item->summary,
		                    rule);
	if (write_shield_covers(
	            wa->shield, p->where.host_dir,
	            fstatat(p->where.host_dir, p->where.last, &st, AT_SYMLINK_NOFOLLOW) == 0 ? &st
	                                                                                     : NULL,
	            why, sizeof(why)))
		return cl_error_set(err, -EINVAL, "%s can never be remembered: %s", item->summary,
		                    why);
	return 0;
}

static uint64_t on_tick(void *userdata, uint64_t now_ms)
{
	struct write_ask *wa = userdata;

	if (now_ms != UINT64_MAX) {
		for (size_t i = 0; i < wa->n_pending;) {
			uint64_t cookie = wa->pending[i].cookie;

			if (notifier_id_valid(wa->notifier, cookie) == 0) {
				pending_remove(wa, &wa->pending[i]);
				(void)approvals_withdraw(wa->approvals, cookie);
				continue;
			}
			i++;
		}
		return UINT64_MAX;
	}
	return wa->n_pending > 0 ? loop_now_ms() + LIVENESS_INTERVAL_MS : UINT64_MAX;
}

static const struct approval_source_ops write_source_ops = {
        .resolved = on_resolved,
        .decided = on_decided,
        .validate = on_validate,
        .tick = on_tick,
};

/* ---- one open ----------------------------------------------------------------------------- */

static void format_rule(const struct fs_result *res, char *buf, size_t size)
{
	if (res->rule && res->rule->origin.file)
		snprintf(buf, size, "%s[%u] \"%s\" (%s:%u)", res->rule->list, res->rule->index,
		         res->rule->pattern, res->rule->origin.file, res->rule->origin.line);
	else if (res->rule)
		snprintf(buf, size, "%s[%u] \"%s\" (built-in)", res->rule->list, res->rule->index,
		         res->rule->pattern);
	else if (res->verdict == FS_DENY_OUTSIDE)
		snprintf(buf, size, "not in fs.write (fs.ask: off)");
	else
		snprintf(buf, size, "%s", res->reason);
}

/* The verdict for PATH: FS_ALLOW / FS_ASK / a denial, with the rule in RULE. */
static enum fs_verdict decide(const struct write_ask *wa, const char *path, char *rule, size_t size)
{
	struct fs_vars vars = {.home = wa->home, .worktree = wa->worktree};
	struct cl_error err = {""};
	struct fs_result res;

	if (fs_policy_check(wa->config, &vars, path, true, &res, &err) < 0) {
		snprintf(rule, size, "%s", err.msg);
		return FS_DENY_OUTSIDE;
	}
	format_rule(&res, rule, size);
	return res.verdict;
}

static void ask(struct write_ask *wa, const struct open_target *t, struct pending_write *p)
{
	struct queue_request qr = {
	        .kind = QUEUE_KIND_FILE,
	        .sandbox = wa->name,
	        .project = wa->project,
	        .summary = p->where.path,
	        .exe = t->exe[0] ? t->exe : NULL,
	        .argv = (const char *const *)t->argv,
	        .argc = t->argc,
	        .cwd = t->cwd,
	        .pid = t->pid,
	        .uid = (int64_t)t->ids.fsuid,
	        .cookie = t->id,
	};
	int r;

	r = wa->n_pending >= MAX_PENDING ? QUEUE_E_WAITERS : pending_reserve(wa);
	if (r >= 0) {
		wa->pending[wa->n_pending++] = *p;
		r = approvals_ask(wa->approvals, &qr, NULL);
		if (r < 0) {
			*p = wa->pending[--wa->n_pending];
		} else {
			*p = (struct pending_write){
			        .where = {.view_dir = -EBADF, .host_dir = -EBADF}};
			approvals_schedule(wa->approvals);
			return;
		}
	}
	{
		const char *why = r == -ENOMEM ? "out of memory" : queue_strerror(r);

		say("write to %s denied: %s", p->where.path, why);
		audit_refusal(wa, t, p->where.path, NULL, why);
		refuse(wa, t->id, t->pid, p->where.path, why, EACCES);
	}
}

/* The agent's root and, for a relative path, its cwd or dirfd: opened through /proc/PID (the
 * notification checked valid after, so they are the process's own). -ESRCH: gone. */
static int open_view(const struct write_ask *wa, const struct open_target *t, int *ret_root,
                     int *ret_base)
{
	_cleanup_close_ int root = -EBADF, base = -EBADF;
	char name[32];

	root = openat(t->piddir, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -errno;
	if (t->path[0] != '/') {
		if (t->dirfd == AT_FDCWD)
			snprintf(name, sizeof(name), "cwd");
		else
			snprintf(name, sizeof(name), "fd/%d", t->dirfd);
		base = openat(t->piddir, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (base < 0)
			return -errno;
	}
	if (notifier_id_valid(wa->notifier, t->id) == 0)
		return -ESRCH;
	*ret_root = TAKE_FD(root);
	*ret_base = TAKE_FD(base);
	return 0;
}

/* resolve.h's access to the process's ids (read before: notifier_read_open_process). */
static int target_status(void *userdata, const struct proc_status **ret)
{
	const struct open_target *t = userdata;

	*ret = &t->ids;
	return 0;
}

/* The stricter of two verdicts: a denial over an ask over an allow. */
static enum fs_verdict stricter(enum fs_verdict a, enum fs_verdict b)
{
	static const int rank[] = {
	        [FS_ALLOW] = 0,        [FS_ASK] = 1,       [FS_DENY_OUTSIDE] = 2,
	        [FS_DENY_PROTECT] = 3, [FS_DENY_HIDE] = 4,
	};

	return rank[b] > rank[a] ? b : a;
}

/* fs.ask: off: the kernel layers refuse a write outside fs.write (EROFS from the read-only
 * mount, EACCES from Landlock) and the supervisor only says why, on the process's stderr, for
 * the file the open lands on when the agent's view there is the host's (not the agent's own
 * mount in a nested namespace); it never answers anything but CONTINUE, so a name that
 * misleads us changes no verdict, at worst a line. The mount layer covers only fs.protect and
 * fs.hide entries that existed at start (the shield's, write_shield.h): one absent then (a new
 * .envrc, created and moved aside at the end) is no refusal, so no line. */
static void tell_kernel_refusal(struct write_ask *wa, const struct open_target *t, const char *path,
                                const char *rule)
{
	if (!wa->quiet_to_agent && write_notes_admit(&wa->notes, loop_now_ms(), t->pid, path)) {
		char line[AGENT_NOTE_MAX];
		size_t n = agent_note_format(line, sizeof(line), "write to", path, rule);

		(void)agent_note_send(wa->notifier, t->id, t->pid, line, n, &wa->ttys);
	}
	let_kernel_decide(wa, t->id);
}

/* What an open notification's process tells, read by write_ask_read (see write_ask.h): how far
 * the read got, and what the answer needs. */
enum read_outcome {
	READ_GONE,         /* the notification is gone: nothing to answer */
	READ_FAILED,       /* the open itself could not be read: error is the answer */
	READ_CONTINUE,     /* the kernel decides */
	READ_REFUSE_NAMED, /* refused by the name as given (fs.protect, fs.hide): rule */
	READ_RESOLVED,     /* where is where it lands: the shield and the policy decide */
};

struct write_ask_read {
	enum read_outcome outcome;
	int error;                 /* READ_FAILED: the errno to answer */
	struct open_target *t;     /* not READ_GONE / READ_FAILED */
	struct write_target where; /* READ_RESOLVED */
	char rule[768];            /* READ_REFUSE_NAMED */
};

void write_ask_read_free(struct write_ask_read *rd)
{
	if (!rd)
		return;
	open_target_free(rd->t);
	write_target_done(&rd->where);
	free(rd);
}

int write_ask_read(const struct write_ask *wa, const struct seccomp_notif *req,
                   struct write_ask_read **ret)
{
	_cleanup_(write_ask_read_freep) struct write_ask_read *rd = NULL;
	_cleanup_close_ int root = -EBADF, base = -EBADF;
	struct cl_error err = {""};
	/* fs.ask: off: the kernel layers refuse; the supervisor only says why. */
	bool tell_only = wa->config->fs.ask != FS_ASK_ON_WRITE;
	struct open_target *t;
	enum fs_verdict v;
	int r;

	rd = calloc(1, sizeof(*rd));
	if (!rd)
		return -ENOMEM;
	rd->where = (struct write_target){.view_dir = -EBADF, .host_dir = -EBADF};
	r = notifier_read_open(wa->notifier, req, &rd->t, &err);
	if (r == -ESRCH) {
		rd->outcome = READ_GONE;
		goto out;
	}
	if (r < 0) {
		/* What the kernel itself would fail the open with. */
		rd->outcome = READ_FAILED;
		rd->error = r == -EFAULT || r == -ENAMETOOLONG || r == -EBADF || r == -ENOTDIR ||
		                            r == -ENOENT
		                    ? -r
		                    : EACCES;
		goto out;
	}
	t = rd->t;
	rd->outcome = READ_CONTINUE;
	if (!write_rules_flags_write(t->flags) || write_rules_kernel_only(t->abs_path))
		goto out;
	/* The name as given first: inside fs.write needs no more (the kernel layers hold). */
	v = decide(wa, t->abs_path, rd->rule, sizeof(rd->rule));
	if (v == FS_ALLOW)
		goto out;
	r = notifier_read_open_process(wa->notifier, t);
	if (r == -ESRCH) {
		rd->outcome = READ_GONE;
		goto out;
	}
	/* Outside fs.write: asked (on-write) or refused (off) — for the file it really is. */
	if (v != FS_ASK && v != FS_DENY_OUTSIDE && !tell_only) {
		rd->outcome = READ_REFUSE_NAMED;
		goto out;
	}
	/* Where it lands, as the agent sees it; and only if the host's view is the same there
	 * may the supervisor open it. Otherwise the kernel decides (a private mount of the
	 * sandbox, a covered path): a race then gains nothing the kernel would not give. */
	if (r >= 0) {
		r = open_view(wa, t, &root, &base);
		if (r == -ESRCH) {
			rd->outcome = READ_GONE;
			goto out;
		}
		/* No cwd or dirfd to start from (deleted, not a directory): the kernel fails
		 * the open as it sees fit. */
		if (r < 0)
			goto out;
	}
	if (r >= 0) {
		struct resolve_target rt = {
		        .root = root,
		        .piddir = t->piddir,
		        .status = target_status,
		        .userdata = t,
		};

		r = write_target_find(&rt, base, t->path, t->flags, &rd->where);
	}
	if (notifier_id_valid(wa->notifier, t->id) == 0) {
		rd->outcome = READ_GONE;
		goto out;
	}
	if (r == WRITE_TARGET_KERNEL || (r < 0 && tell_only))
		goto out;
	if (r < 0) {
		rd->outcome = READ_FAILED;
		rd->error = r == -ELOOP ? ELOOP : EACCES;
		goto out;
	}
	rd->outcome = READ_RESOLVED;
out:
	*ret = TAKE_PTR(rd);
	return 0;
}

void write_ask_answer(struct write_ask *wa, const struct seccomp_notif *req,
                      struct write_ask_read *rd_in)
{
	_cleanup_(write_ask_read_freep) struct write_ask_read *rd = rd_in;
	struct pending_write p = {.where = {.view_dir = -EBADF, .host_dir = -EBADF}};
	bool tell_only = wa->config->fs.ask != FS_ASK_ON_WRITE;
	struct open_target *t;
	enum fs_verdict v, hv;
	char rule[768], hrule[768], why[256];

	if (!rd) {
		/* Out of memory for the read: the open fails as the kernel's would. */
		(void)notifier_deny(wa->notifier, req->id, ENOMEM);
		return;
	}
	t = rd->t;
	switch (rd->outcome) {
	case READ_GONE:
		return;
	case READ_FAILED:
		(void)notifier_deny(wa->notifier, req->id, rd->error);
		return;
	case READ_CONTINUE:
		let_kernel_decide(wa, t->id);
		return;
	case READ_REFUSE_NAMED:
		refuse_logged(wa, t, t->abs_path, rd->rule);
		return;
	case READ_RESOLVED:
		break;
	}
	p.where = rd->where;
	rd->where = (struct write_target){.view_dir = -EBADF, .host_dir = -EBADF};
	/* A shielded file or directory, however it was reached: refused, never asked. */
	if (write_shield_covers(wa->shield, p.where.host_dir, p.where.exists ? &p.where.st : NULL,
	                        why, sizeof(why))) {
		/* The rule with its origin where the name says it too; else the shield's why. */
		if (tell_only)
			tell_kernel_refusal(wa, t, p.where.path,
			                    decide(wa, p.where.path, rule, sizeof(rule)) != FS_ALLOW
			                            ? rule
			                            : why);
		else
			refuse_logged(wa, t, p.where.path, why);
		pending_done(&p);
		return;
	}
	/* The file it really is, by both its names: decided again, the stricter wins. */
	v = decide(wa, p.where.path, rule, sizeof(rule));
	if (strcmp(p.where.host_path, p.where.path) != 0) {
		hv = decide(wa, p.where.host_path, hrule, sizeof(hrule));
		if (stricter(v, hv) != v) {
			v = hv;
			memcpy(rule, hrule, sizeof(rule));
		}
	}
	if (v == FS_ALLOW || write_rules_kernel_only(p.where.path)) {
		pending_done(&p);
		let_kernel_decide(wa, t->id);
		return;
	}
	/* fs.protect/fs.hide the shield did not cover: an entry absent at start (the agent's new
	 * .envrc, even written again), which no mount holds: no refusal, no line. */
	if (tell_only) {
		if (v == FS_DENY_PROTECT || v == FS_DENY_HIDE)
			let_kernel_decide(wa, t->id);
		else
			tell_kernel_refusal(wa, t, p.where.path, rule);
		pending_done(&p);
		return;
	}
	if (v != FS_ASK) {
		refuse_logged(wa, t, p.where.path, rule);
		pending_done(&p);
		return;
	}
	p.cookie = t->id;
	p.pid = t->pid;
	p.flags = t->flags;
	p.mode = t->mode;
	p.umask = t->umask;
	p.fsuid = t->ids.fsuid;
	p.fsgid = t->ids.fsgid;
	p.ngroups = t->ids.ngroups;
	memcpy(p.groups, t->ids.groups, sizeof(p.groups));

	if (write_answers_covers(wa->answers, p.where.path)) {
		open_and_answer(wa, &p);
		pending_done(&p);
		return;
	}
	if (wa->terminating) {
		refuse(wa, t->id, t->pid, p.where.path, "the sandbox is ending", EACCES);
		pending_done(&p);
		return;
	}
	ask(wa, t, &p);
	pending_done(&p);
}

/* ---- life cycle --------------------------------------------------------------------------- */

/* Shield what the fs.hide and fs.protect entries RULES name now (globs expanded). */
static int shield_rules(struct write_ask *wa, const struct config_fs_list *rules)
{
	struct fs_vars vars = {.home = wa->home, .worktree = wa->worktree};
	int r = 0;

	for (size_t i = 0; r >= 0 && i < rules->n; i++) {
		const struct config_fs_rule *rule = &rules->items[i];
		_cleanup_free_ char *expanded = NULL;
		char what[512];
		glob_t g = {0};
		bool dir;

		if (fs_pattern_expand(rule->pattern, &vars, &expanded, &dir) < 0)
			continue; /* a variable with no value: it names nothing */
		snprintf(what, sizeof(what), "%s[%u] \"%s\"", rule->list, rule->index,
		         rule->pattern);
		if (!fs_pattern_is_glob(expanded)) {
			r = write_shield_add(wa->shield, expanded, what);
			continue;
		}
		/* GLOB_PERIOD: a '*' matches a leading dot, as in fs_policy's fnmatch. */
		if (glob(expanded, GLOB_NOSORT | GLOB_PERIOD, NULL, &g) == 0)
			for (size_t k = 0; r >= 0 && k < g.gl_pathc; k++)
				r = write_shield_add(wa->shield, g.gl_pathv[k], what);
		globfree(&g);
	}
	return r;
}

/* The decisions files' fs.allow: answers of earlier runs, for this one. */
static int remembered(struct write_ask *wa, const struct config_fs_list *allow)
{
	int r = 0;

	for (size_t i = 0; r >= 0 && i < allow->n; i++) {
		_cleanup_free_ char *value = strdup(allow->items[i].pattern);
		size_t len = value ? strlen(value) : 0;
		bool prefix = len > 1 && value[len - 1] == '/';

		if (!value)
			return -ENOMEM;
		while (len > 1 && value[len - 1] == '/')
			value[--len] = '\0';
		r = write_answers_allow(wa->answers, value, prefix);
	}
	return r;
}

struct own_link {
	struct write_ask *wa;
	const char *what;
};

static int on_own_link(const char *path, void *userdata)
{
	const struct own_link *o = userdata;

	/* By the identity of what the link leads to: a stowed config.yaml is the config's. */
	return write_shield_add(o->wa->shield, path, o->what);
}

static int shield_all(struct write_ask *wa, const struct write_ask_config *config)
{
	int r = shield_rules(wa, &config->config->fs.hide);

	if (r >= 0)
		r = shield_rules(wa, &config->config->fs.protect);
	for (size_t i = 0; r >= 0 && i < config->n_own; i++) {
		struct own_link o = {wa, config->own[i].what};

		if (!config->own[i].path)
			continue;
		r = write_shield_add(wa->shield, config->own[i].path, config->own[i].what);
		if (r >= 0)
			r = config_files_links(config->own[i].path, on_own_link, &o);
	}
	return r;
}

int write_ask_new(struct loop *loop, struct approvals *approvals, struct notifier *n,
                  const struct write_ask_config *config, struct write_ask **ret)
{
	struct write_ask *wa = calloc(1, sizeof(*wa));
	int r;

	if (!wa)
		return -ENOMEM;
	wa->loop = loop;
	wa->notifier = n;
	wa->config = config->config;
	wa->verbose = config->verbose;
	wa->quiet_to_agent = config->quiet_to_agent;
	wa->ttys = config->ttys;
	wa->name = strdup(config->name);
	wa->project = config->project ? strdup(config->project) : NULL;
	wa->home = config->home ? strdup(config->home) : NULL;
	wa->worktree = config->worktree ? strdup(config->worktree) : NULL;
	wa->decisions_dir = config->decisions_dir ? strdup(config->decisions_dir) : NULL;
	if (!wa->name || (config->project && !wa->project) || (config->home && !wa->home) ||
	    (config->worktree && !wa->worktree) || (config->decisions_dir && !wa->decisions_dir)) {
		write_ask_free(wa);
		return -ENOMEM;
	}
	r = write_answers_new(&wa->answers);
	if (r >= 0)
		r = remembered(wa, &config->config->fs.allow);
	if (r >= 0)
		r = write_shield_new(&wa->shield);
	if (r >= 0)
		r = shield_all(wa, config);
	if (r >= 0)
		r = approvals_register(approvals, &write_source_ops, wa, &wa->approvals);
	if (r < 0) {
		write_ask_free(wa);
		return r;
	}
	*ret = wa;
	return 0;
}

void write_ask_free(struct write_ask *wa)
{
	if (!wa)
		return;
	approvals_unregister(wa->approvals);
	for (size_t i = 0; i < wa->n_pending; i++)
		pending_done(&wa->pending[i]);
	free(wa->pending);
	write_answers_free(wa->answers);
	write_shield_free(wa->shield);
	free(wa->name);
	free(wa->project);
	free(wa->home);
	free(wa->worktree);
	free(wa->decisions_dir);
	free(wa);
}

void write_ask_set_terminating(struct write_ask *wa, bool terminating)
{
	if (wa)
		wa->terminating = terminating;
}
