/* One sandbox's exec interception: its seccomp listener, the policy, the approval queue and the
 * exec backstop; see exec_guard.h. */
#include "supervisor/exec/exec_guard.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <netinet/in.h>
#include <unistd.h>

#include "bpf/backstop.h"
#include "notifier/agent_note.h"
#include "notifier/notify.h"
#include "notifier/target.h"
#include "notifier/view.h"
#include "base/cleanup.h"
#include "supervisor/approval/audit.h"
#include "supervisor/approval/audit_log.h"
#include "supervisor/policy/config.h"
#include "supervisor/policy/config_regex.h"
#include "supervisor/exec/args_digest.h"
#include "supervisor/exec/deny_ids.h"
#include "supervisor/exec/exec_decisions.h"
#include "supervisor/exec/exec_verdict.h"
#include "supervisor/exec/file_digest.h"
#include "supervisor/approval/sha256.h"
#include "supervisor/policy/exec_decision.h"
#include "supervisor/approval/approvals.h"
#include "base/loop.h"
#include "base/say.h"
#include "supervisor/approval/metrics.h"
#include "supervisor/policy/policy.h"
#include "supervisor/exec/ptrace_backstop.h"
#include "supervisor/exec/verdict_cache.h"
#include "base/trace_timing.h"

/* While asks are pending, how often to check that their processes are still alive. */
#define LIVENESS_INTERVAL_MS 200
/* Connects remembered for attribution, and for how long. */
#define CONNECTS_KEPT   256
#define CONNECT_KEEP_MS 10000

/* The files an approved exec may run: the program and, for a script, its interpreter, as they
 * were read (content version: a file rewritten in place is not the one decided on). dev is
 * the superblock's (the eBPF backstop's view), st_dev what stat says (the ptrace backstop's). */
struct exec_files {
	unsigned n;
	dev_t dev[2];
	dev_t st_dev[2];
	ino_t ino[2];
	struct backstop_version version[2];
};

/* What the new image's arguments must be, per backstop (each has its own key). */
struct exec_args {
	struct backstop_args ebpf;
	struct backstop_args ptrace;
};

/* One blocked exec waiting in the queue (a waiter; several may share one item). */
struct pending_exec {
	uint64_t cookie; /* the seccomp notification id */
	pid_t pid;
	struct exec_files files;
	struct exec_args args;
	int fd; /* the file as it was read (O_PATH), to see at approval whether it changed */
	char *session_key;              /* what an "always" answer adds to the session (NULL:
	                                 * nothing: the argv was only read in part) */
	char sha256[FILE_DIGEST_HEX];   /* the file's content digest, "" when it is not known */
	char item_id[QUEUE_ID_LEN + 1]; /* the ask it waits on */
};

struct exec_guard {
	struct loop *loop;
	struct approval_source *approvals; /* this guard's asks */
	struct metrics *metrics;
	struct notifier *notifier;
	const struct config *config;
	struct backstop *backstop;
	uint64_t cgroup_id;
	struct ptrace_backstop *ptrace_backstop;
	struct deny_ids *deny_ids;
	char *name;
	char *project;
	bool verbose;
	bool quiet_to_agent;
	struct agent_note_ttys ttys;
	bool terminating; /* asks are denied without asking */
	bool listening;
	/* The thread that blocks in RECV (see "the receiving thread"); without it the loop polls
	 * the listener. STOP is set under the loop's lock machinery (loop_thread_cancel). */
	bool threaded;
	bool stop;
	pthread_t thread;
	/* Whether the last exec's audit line was left out (over the rate): the next read, made
	 * before the lock is taken, leaves out the cwd and ids then too. Only the receiving
	 * thread (or the loop's, when none is) reads and writes it. */
	bool lean_hint;
	/* Who frees the guard's last part (the struct and the listener) when the thread did not
	 * stop in time (stop_thread): THREAD_RUNNING, then whichever of the two comes second. */
	int thread_end;
	void (*gone)(void *userdata, struct exec_guard *eg);
	void *gone_userdata;
	/* Set once, under the loop's lock, while the receiving thread may already run: published
	 * with release order (userdata first), read by the thread with acquire. */
	const struct exec_guard_open_ops *open_ops;
	void *open_userdata;

	struct pending_exec *pending;
	size_t n_pending, cap_pending;
	struct exec_answers *answers;   /* "always", and denials of a moment ago */
	struct exec_decisions *decided; /* people's decisions wider than once */
	struct file_digests *digests;   /* content digests of asked files, by identity */
	struct approvals *service;      /* to decide asks a new decision covers */
	bool recheck;                   /* a decision was kept: look at the other asks */
	struct verdict_cache *verdicts; /* allows of a moment ago (cleared by forget_verdicts) */
	uint64_t notifications;
	struct {
		uint64_t time_ms;
		struct connect_target who;
	} connects[CONNECTS_KEPT];
	unsigned next_connect;
};

/* ---- audit ------------------------------------------------------------------------------- */

static void format_rule(const struct policy_result *res, char *buf, size_t size)
{
	if (res->origin.file && res->origin.line)
		snprintf(buf, size, "%s (%s:%u)", res->rule, res->origin.file, res->origin.line);
	else if (res->origin.file)
		snprintf(buf, size, "%s (%s)", res->rule, res->origin.file);
	else
		snprintf(buf, size, "%s", res->rule);
}

static void audit_verdict(struct exec_guard *eg, const struct exec_target *t, const char *exe,
                          const char *const *argv, size_t argc, const struct policy_result *res,
                          enum audit_verdict verdict, const char *reason)
{
	char rule[1024];
	struct audit_record rec = {
	        .time_ms = audit_log_now_ms(),
	        .sandbox = eg->name,
	        .project = eg->project,
	        .kind = "exec",
	        .pid = t->pid,
	        .uid = t->uid == (uid_t)-1 ? -1 : (int64_t)t->uid,
	        .exe = exe,
	        .argv = argv,
	        .argc = argc,
	        .argv_incomplete = t->argv_truncated,
	        .cwd = t->cwd,
	        .interpreter = t->interp,
	        .summary = res ? res->subject : NULL,
	        .verdict = verdict,
	        .rule = NULL,
	        .decided_by = "policy",
	        .latency_ms = -1,
	        .reason = reason ? reason : (res ? res->reason : NULL),
	        .automatic = true, /* the policy's: the agent can repeat it at will */
	};

	if (res) {
		format_rule(res, rule, sizeof(rule));
		rec.rule = rule;
	}
	approvals_verdict(eg->approvals, &rec);
}

/* Tell the refused process why, on its own stderr (before it is answered: see agent_note.h).
 * Best effort: a process whose stderr cannot take the line simply does not get it. */
static void tell_agent(struct exec_guard *eg, uint64_t id, pid_t pid, const char *exe,
                       const char *why)
{
	char line[AGENT_NOTE_MAX];
	size_t n;

	if (eg->quiet_to_agent)
		return;
	n = agent_note_format(line, sizeof(line), "exec of", exe, why);
	(void)agent_note_send(eg->notifier, id, pid, line, n, &eg->ttys);
}

/* The session's answers, people's decisions or termination changed: a verdict kept may rest
 * on what they were (verdict_cache.h). */
static void forget_verdicts(struct exec_guard *eg)
{
	verdict_cache_clear(eg->verdicts);
}

/* ---- pending execs and session answers --------------------------------------------------- */

static struct pending_exec *pending_find(struct exec_guard *eg, uint64_t cookie)
{
	for (size_t i = 0; i < eg->n_pending; i++)
		if (eg->pending[i].cookie == cookie)
			return &eg->pending[i];
	return NULL;
}

/* Takes *FD (set to -1) once added. */
static int pending_add(struct exec_guard *eg, uint64_t cookie, pid_t pid,
                       const struct exec_files *files, const struct exec_args *args, int *fd,
                       const char *session_key, const char *sha256)
{
	struct pending_exec *p;

	if (eg->n_pending == eg->cap_pending) {
		size_t cap = eg->cap_pending ? eg->cap_pending * 2 : 16;
		struct pending_exec *grown = reallocarray(eg->pending, cap, sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		eg->pending = grown;
		eg->cap_pending = cap;
	}
	p = &eg->pending[eg->n_pending];
	p->cookie = cookie;
	p->pid = pid;
	p->files = *files;
	p->args = *args;
	p->item_id[0] = '\0';
	snprintf(p->sha256, sizeof(p->sha256), "%s", sha256 ? sha256 : "");
	p->session_key = session_key ? strdup(session_key) : NULL;
	if (session_key && !p->session_key)
		return -ENOMEM;
	p->fd = *fd;
	*fd = -1;
	eg->n_pending++;
	return 0;
}

static void pending_remove(struct exec_guard *eg, struct pending_exec *p)
{
	if (p->fd >= 0)
		close(p->fd);
	free(p->session_key);
	*p = eg->pending[--eg->n_pending];
}

/* ---- answering --------------------------------------------------------------------------- */

/* Tell the backstop which files this exec (thread PID) may run and with which arguments; an
 * exec it cannot vouch for is refused. */
static int backstop_approve(struct exec_guard *eg, pid_t pid, const struct exec_files *files,
                            const struct exec_args *args)
{
	int r = 0;

	for (unsigned i = 0; i < files->n && r >= 0; i++) {
		if (eg->backstop && eg->cgroup_id)
			r = backstop_allow(eg->backstop, eg->cgroup_id, files->dev[i],
			                   files->ino[i], &files->version[i]);
		if (r >= 0 && eg->ptrace_backstop)
			r = ptrace_backstop_allow(eg->ptrace_backstop, files->st_dev[i],
			                          files->ino[i], &files->version[i]);
	}
	/* Last, right before the exec is let through: the thread's newest exec is this one. */
	if (r >= 0 && eg->backstop && eg->cgroup_id)
		r = backstop_expect_args(eg->backstop, pid, &args->ebpf);
	if (r >= 0 && eg->ptrace_backstop)
		r = ptrace_backstop_expect_args(eg->ptrace_backstop, pid, &args->ptrace);
	return r;
}

/* Returns 0, or the backstop's -errno when an allow had to become a denial. */
static int answer(struct exec_guard *eg, uint64_t id, pid_t pid, bool allow,
                  const struct exec_files *files, const struct exec_args *args)
{
	int r, refused = 0;

	if (allow) {
		r = backstop_approve(eg, pid, files, args);
		if (r < 0) {
			say("exec denied: the backstop could not record the approval (%s)",
			    strerror(-r));
			allow = false;
			refused = r;
		}
	}
	r = allow ? notifier_continue(eg->notifier, id) : notifier_deny(eg->notifier, id, EACCES);
	if (r < 0 && r != -ENOENT)
		say("answering an exec failed: %s", strerror(-r));
	return refused;
}

/* Whether the file P's card was for was written to (or had its inode changed) since it was
 * read: then what a person approved is not what would run. The backstop would kill it; this
 * refuses it first, with a reason. */
static bool changed_while_waiting(const struct pending_exec *p)
{
	struct statx x;

	if (p->fd < 0 || p->files.n == 0)
		return false;
	if (statx(p->fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_CTIME | STATX_SIZE, &x) <
	    0)
		return true;
	return (uint64_t)x.stx_ctime.tv_sec * 1000000000u + x.stx_ctime.tv_nsec !=
	               p->files.version[0].ctime_ns ||
	       x.stx_size != p->files.version[0].size;
}

static void audit_changed(struct exec_guard *eg, const struct queue_item *item,
                          const struct pending_exec *p)
{
	static const char why[] = "the file changed while its card waited: what was approved is "
	                          "not what would run";
	struct audit_record rec = {
	        .time_ms = audit_log_now_ms(),
	        .sandbox = eg->name,
	        .project = eg->project,
	        .kind = "exec",
	        .pid = p->pid,
	        .uid = item->uid,
	        .exe = item->exe,
	        .argv = (const char *const *)item->argv,
	        .argc = item->argc,
	        .cwd = item->cwd,
	        .verdict = AUDIT_DENY,
	        .rule = "identity",
	        .decided_by = "policy",
	        .latency_ms = -1,
	        .reason = why,
	};

	say("exec %s refused: %s", item->exe ? item->exe : item->summary, why);
	approvals_verdict(eg->approvals, &rec);
}

/* The queue decided an exec item: answer this guard's notifications waiting on it. */
static void on_resolved(void *userdata, const struct queue_item *item, const uint64_t *cookies,
                        size_t n)
{
	struct exec_guard *eg = userdata;
	bool allow = item->state == QUEUE_STATE_APPROVED;

	forget_verdicts(eg);
	for (size_t i = 0; i < n; i++) {
		struct pending_exec *p = pending_find(eg, cookies[i]);

		if (!p)
			continue;
		if (allow && changed_while_waiting(p)) {
			audit_changed(eg, item, p);
			answer(eg, p->cookie, p->pid, false, NULL, NULL);
			pending_remove(eg, p);
			continue;
		}
		if (allow && item->scope == QUEUE_SCOPE_SESSION && p->session_key)
			exec_answers_allow_always(eg->answers, p->session_key);
		/* A shell whose exec was refused tries the next PATH entry (/usr/bin/x, then
		 * /bin/x): the same process asking again this soon gets the same answer. */
		if (!allow && item->state != QUEUE_STATE_CANCELLED) {
			if (p->session_key)
				exec_answers_denied(eg->answers, p->session_key, p->pid,
				                    loop_now_ms());
			tell_agent(eg, p->cookie, p->pid, item->exe ? item->exe : item->summary,
			           item->reason && *item->reason ? item->reason
			                                         : "the user denied it");
		}
		answer(eg, p->cookie, p->pid, allow, &p->files, &p->args);
		pending_remove(eg, p);
	}
	if (item->state == QUEUE_STATE_DENIED || item->state == QUEUE_STATE_TIMED_OUT)
		say("exec %s %s: %s", item->exe ? item->exe : item->summary,
		    queue_state_to_string(item->state), item->reason);
}

/* The content digest of the file the ask ID is about (its waiters all name the same file as
 * it was read: they merged on its identity); NULL when not known. */
static const char *pending_sha256(const struct exec_guard *eg, const char *id)
{
	for (size_t i = 0; i < eg->n_pending; i++)
		if (strcmp(eg->pending[i].item_id, id) == 0)
			return eg->pending[i].sha256[0] ? eg->pending[i].sha256 : NULL;
	return NULL;
}

/* A decision was kept: decide the waiting asks of this guard it covers. */
static void recheck_pending(struct exec_guard *eg)
{
	char(*ids)[QUEUE_ID_LEN + 1];
	size_t n = 0;

	eg->recheck = false;
	ids = calloc(eg->n_pending ? eg->n_pending : 1, sizeof(*ids));
	if (!ids)
		return;
	for (size_t i = 0; i < eg->n_pending; i++)
		if (eg->pending[i].item_id[0])
			memcpy(ids[n++], eg->pending[i].item_id, sizeof(*ids));
	for (size_t i = 0; i < n; i++) {
		const struct queue_item *item = queue_find(approvals_queue(eg->service), ids[i]);
		struct policy_result res = {.verdict = POLICY_ASK};
		struct approval_decision d = {.scope = QUEUE_SCOPE_ONCE, .by = "decision"};

		if (!item || !item->exe ||
		    !exec_decisions_apply(eg->decided, item->exe, item->exe,
		                          (const char *const *)item->argv, item->argc, false,
		                          pending_sha256(eg, ids[i]), &res))
			continue;
		d.allow = res.verdict == POLICY_ALLOW;
		d.reason = res.reason;
		(void)approvals_decide(eg->service, ids[i], &d, NULL);
	}
	free(ids);
}

/* With NOW_MS: cancel waiters whose process died (or left the syscall). Either way, say when
 * to look again: soon while execs wait. */
static uint64_t on_tick(void *userdata, uint64_t now_ms)
{
	struct exec_guard *eg = userdata;

	if (now_ms != UINT64_MAX && eg->recheck)
		recheck_pending(eg);
	if (now_ms != UINT64_MAX) {
		for (size_t i = 0; i < eg->n_pending;) {
			uint64_t cookie = eg->pending[i].cookie;

			if (notifier_id_valid(eg->notifier, cookie) == 0) {
				/* Its own resolution (the last waiter gone) carries no waiter. */
				pending_remove(eg, &eg->pending[i]);
				(void)approvals_withdraw(eg->approvals, cookie);
				continue;
			}
			i++;
		}
		return UINT64_MAX;
	}
	if (eg->recheck)
		return loop_now_ms();
	return eg->n_pending > 0 ? loop_now_ms() + LIVENESS_INTERVAL_MS : UINT64_MAX;
}

/* A person decided with a scope wider than once: keep what it covers (exec_decisions.h). */
/* A person's decision must be one this guard can keep (exec_decisions_validate()). */
static int on_validate(void *userdata, const struct queue_item *item,
                       const struct approval_decision *d, struct cl_error *err)
{
	struct exec_guard *eg = userdata;

	return exec_decisions_validate(item, d, pending_sha256(eg, item->id), err);
}

static int on_decided(void *userdata, const struct queue_item *item,
                      const struct approval_decision *d, struct cl_error *err)
{
	struct exec_guard *eg = userdata;

	int r = exec_decisions_keep(eg->decided, item, d, pending_sha256(eg, item->id), err);

	forget_verdicts(eg);
	/* The other asks waiting now that it covers are answered too, from the timer (not
	 * from inside this decision). */
	if (d->scope != QUEUE_SCOPE_ONCE && r != -EINVAL) {
		eg->recheck = true;
		approvals_schedule(eg->approvals);
	}
	return r;
}

/* The decisions files changed (another run decided): look at the waiting asks again. */
static void on_shared_decisions(void *userdata)
{
	struct exec_guard *eg = userdata;

	forget_verdicts(eg); /* a decision removed there must not live on here */
	eg->recheck = true;
	approvals_schedule(eg->approvals);
}

static const struct approval_source_ops exec_source_ops = {
        .resolved = on_resolved,
        .decided = on_decided,
        .validate = on_validate,
        .tick = on_tick,
};

/* ---- one exec ---------------------------------------------------------------------------- */

static void exec_files_from_target(const struct exec_target *t, struct exec_files *ret)
{
	ret->n = 0;
	/* By the superblock the kernel executes from (kdev), which is not st_dev on overlayfs. */
	if (t->file.exists) {
		ret->dev[ret->n] = backstop_dev_from_kernel(t->file.kdev);
		ret->st_dev[ret->n] = t->file.dev;
		ret->version[ret->n] = (struct backstop_version){t->file.ctime_ns, t->file.size};
		ret->ino[ret->n++] = t->file.ino;
	}
	/* The backstop sees the interpreter of a script, not the script. */
	if (t->script && t->interp_file.exists) {
		ret->dev[ret->n] = backstop_dev_from_kernel(t->interp_file.kdev);
		ret->st_dev[ret->n] = t->interp_file.dev;
		ret->version[ret->n] =
		        (struct backstop_version){t->interp_file.ctime_ns, t->interp_file.size};
		ret->ino[ret->n++] = t->interp_file.ino;
	}
}

/* What the exec's new image must hold as its arguments: the argv read, as decided on. */
static void exec_args_from_target(const struct exec_guard *eg, const struct exec_target *t,
                                  struct exec_args *ret)
{
	const char *const *argv = (const char *const *)t->argv;
	uint64_t key[2];

	memset(ret, 0, sizeof(*ret));
	if (eg->backstop && eg->cgroup_id) {
		backstop_args_key(eg->backstop, key);
		args_digest_of_exec(key, argv, t->argc, t->script, t->argv_truncated, &ret->ebpf);
	}
	if (eg->ptrace_backstop) {
		ptrace_backstop_args_key(eg->ptrace_backstop, key);
		args_digest_of_exec(key, argv, t->argc, t->script, t->argv_truncated, &ret->ptrace);
	}
}

/* The files as one string: identical asks merge only when they name the same files as they
 * were read, so that one approval never covers a file renamed or rewritten under the name. */
static void exec_files_identity(const struct exec_files *files, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < files->n && len < size; i++) {
		int n = snprintf(buf + len, size - len, "%s%u:%u %llu %llu %llu", i ? " " : "",
		                 major(files->dev[i]), minor(files->dev[i]),
		                 (unsigned long long)files->ino[i],
		                 (unsigned long long)files->version[i].ctime_ns,
		                 (unsigned long long)files->version[i].size);

		if (n < 0)
			break;
		len += (size_t)n;
	}
}

/* A deny rule's file under another name: check the exec as if it had used that name. */
static int decide_alias(struct exec_guard *eg, const struct exec_file *f, const char *const *argv,
                        size_t argc, bool truncated, struct policy_result *res,
                        struct cl_error *err)
{
	const char *alias;

	if (!eg->deny_ids || !f->exists || res->by_deny_rule)
		return 0;
	alias = deny_ids_find(eg->deny_ids, f->dev, f->ino, f->nlink);
	if (!alias || (f->real_path && strcmp(alias, f->real_path) == 0))
		return 0;
	return exec_decide_alias(eg->config, alias, argv, argc, truncated, res, err);
}

/* The policy's verdict on T, its file's content SHA256 (NULL: unknown): the program's exec,
 * the deny rules' files under other names, a script's interpreter. */
static int decide(struct exec_guard *eg, const struct exec_target *t, const char *sha256,
                  struct policy_result *res, struct cl_error *err)
{
	const char *const *argv = (const char *const *)t->argv;
	size_t argc = t->argc;
	int r;

	r = exec_decide_content(eg->config, t->abs_path, t->file.real_path, argv, argc,
	                        t->argv_truncated, sha256, res, err);
	/* The file is a deny rule's file under another name (a hard link): that rule holds. */
	if (r >= 0)
		r = decide_alias(eg, &t->file, argv, argc, t->argv_truncated, res, err);
	/* The interpreter's exec is decided too. */
	if (r >= 0 && t->script)
		r = exec_decide_interpreter(eg->config, t->interp[0] == '/' ? t->interp : NULL,
		                            t->interp_file.real_path, t->interp_arg,
		                            t->path[0] ? t->path : t->abs_path, argv, argc,
		                            t->argv_truncated, res, err);
	if (r >= 0 && t->script)
		r = decide_alias(eg, &t->interp_file, argv, argc, t->argv_truncated, res, err);
	return r;
}

/* What a session's answer to T is kept by: its real file, the files as they were read
 * (device, inode, ctime, size: another content at the name is another key) and a digest of
 * its whole argv, argv[0] included (a multi-call program acts on it; a display string would
 * be cut). *RET NULL when the argv was only read in part: nothing certain to keep. */
static int session_key_of(const struct exec_target *t, const struct exec_files *files, char **ret)
{
	uint8_t digest[SHA256_DIGEST_SIZE];
	char hex[2 * SHA256_DIGEST_SIZE + 1], identity[256];
	struct sha256 ctx;

	*ret = NULL;
	if (t->argv_truncated)
		return 0;
	sha256_init(&ctx);
	for (size_t i = 0; i < t->argc; i++) {
		uint64_t len = strlen(t->argv[i]);

		/* Length first: ["a b"] and ["a", "b"] differ. */
		sha256_update(&ctx, &len, sizeof(len));
		sha256_update(&ctx, t->argv[i], len);
	}
	sha256_final(&ctx, digest);
	sha256_hex(digest, hex);
	exec_files_identity(files, identity, sizeof(identity));
	if (asprintf(ret, "%s\n%s\n%zu %s", t->file.real_path ? t->file.real_path : t->abs_path,
	             identity, t->argc, hex) < 0) {
		*ret = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* What a notification's process told us, read before the loop's lock is taken: reading its
 * memory waits for its mm's lock, which its other threads may hold for seconds (a large
 * populated mmap, an munmap), and a lookup in its file systems waits for them; meanwhile no
 * other sandbox's exec, no dashboard, no proxy would be served. The read touches only the
 * notifier's own state (its file facts, lookup hints and the sandbox's view), which nothing
 * else uses: the loop's thread takes the notifier only to answer, check ids and read names.
 * An open's read is its handler's (exec_guard_open_ops: the ask for writes, which uses only
 * what stays unchanged after its start). */
struct notification_read {
	bool done;
	int r;
	struct exec_target *t;     /* an exec's, when r is 0 */
	struct cl_error err;       /* an exec's failure */
	struct connect_target who; /* a connect's, when r is 0 */
	/* An open's, by the open handler's read (open_ops): what it returned and with whose
	 * ops and userdata, so that the answer is the same handler's. */
	const struct exec_guard_open_ops *open_ops;
	void *open_userdata;
	void *open_read;
};

static void notification_read_done(struct notification_read *rd)
{
	exec_target_free(rd->t);
	rd->t = NULL;
	if (rd->open_read)
		rd->open_ops->read_free(rd->open_read);
	rd->open_read = NULL;
}

static bool is_open(const struct seccomp_notif *req)
{
	return req->data.nr == SYS_open || req->data.nr == SYS_openat || req->data.nr == SYS_creat;
}

static void read_notification(struct exec_guard *eg, const struct seccomp_notif *req,
                              struct notification_read *ret)
{
	*ret = (struct notification_read){.err = {""}};
	if (req->data.nr == SYS_execve || req->data.nr == SYS_execveat) {
		ret->r = notifier_read_exec_some(eg->notifier, req,
		                                 eg->lean_hint ? 0 : EXEC_READ_RECORD, &ret->t,
		                                 &ret->err);
		ret->done = true;
	} else if (req->data.nr == SYS_connect) {
		ret->r = notifier_read_connect(eg->notifier, req, &ret->who);
		ret->done = true;
	} else if (is_open(req)) {
		/* The handler's own read (the path, the process, the lookups: files/write_ask.h);
		 * none set yet: the open fails with ENOSYS under the lock. */
		ret->open_ops = __atomic_load_n(&eg->open_ops, __ATOMIC_ACQUIRE);
		if (!ret->open_ops)
			return;
		ret->open_userdata = eg->open_userdata;
		ret->r = ret->open_ops->read(ret->open_userdata, req, &ret->open_read);
		ret->done = true;
	}
}

/* An open: answered by the handler that read it (RD), or read and answered here. */
static void handle_open(struct exec_guard *eg, const struct seccomp_notif *req,
                        struct notification_read *rd)
{
	const struct exec_guard_open_ops *ops = rd ? rd->open_ops : eg->open_ops;
	void *userdata = rd ? rd->open_userdata : eg->open_userdata;
	void *read = NULL;

	if (!ops) {
		notifier_deny(eg->notifier, req->id, ENOSYS);
		return;
	}
	if (rd)
		read = TAKE_PTR(rd->open_read);
	else
		(void)ops->read(userdata, req, &read);
	ops->answer(userdata, req, read);
}

/* RD: the exec read before the lock (taken), or NULL to read it here. */
static void handle_exec(struct exec_guard *eg, const struct seccomp_notif *req,
                        struct notification_read *rd)
{
	_cleanup_(exec_target_freep) struct exec_target *t = NULL;
	_cleanup_free_ char *session_key = NULL;
	struct cl_error err = {""};
	struct verdict_key key;
	struct policy_result res;
	bool lean;
	char sha256[FILE_DIGEST_HEX];
	bool have_sha256 = false;
	struct exec_files files;
	struct exec_args args;
	const char *const *argv;
	const char *exe;
	size_t argc;
	int r;

	/* Over the audit rate, the line is not written: the cwd and ids only it needs are read
	 * if an ask needs them after all. */
	lean = !approvals_verdict_written(eg->approvals, eg->name);
	eg->lean_hint = lean;
	if (rd) {
		r = rd->r;
		t = TAKE_PTR(rd->t);
		err = rd->err;
	} else {
		r = notifier_read_exec_some(eg->notifier, req, lean ? 0 : EXEC_READ_RECORD, &t,
		                            &err);
		trace_exec_phase(TRACE_EXEC_READ);
	}
	/* Read lean, and the line is written after all: its cwd and ids (/proc only). */
	if (r >= 0 && !lean)
		r = notifier_read_exec_record(eg->notifier, req, t, &err);
	if (r == -ENOENT)
		return; /* the process is gone: nothing to answer */
	if (r < 0) {
		/* A denial like any other: it goes to the audit log too. */
		struct audit_record rec = {
		        .time_ms = audit_log_now_ms(),
		        .sandbox = eg->name,
		        .project = eg->project,
		        .kind = "exec",
		        .pid = req->pid,
		        .uid = -1,
		        .verdict = AUDIT_DENY,
		        .decided_by = "policy",
		        .latency_ms = -1,
		        .reason = err.msg,
		        .automatic = true,
		};

		say("exec by pid %d denied: %s", req->pid, err.msg);
		approvals_verdict(eg->approvals, &rec);
		notifier_deny(eg->notifier, req->id, EACCES);
		return;
	}

	/* execvp and PATH probing: fail these as the kernel would, ourselves. Let through, a
	 * file that appears (or turns executable) in between would run unchecked. Silent: a
	 * command probes every PATH entry. */
	if (!t->file.exists || !t->file.executable) {
		notifier_deny(eg->notifier, req->id, t->file.error ? t->file.error : EACCES);
		return;
	}
	if (t->argv_fault) {
		notifier_deny(eg->notifier, req->id, EFAULT);
		return;
	}

	/* A script runs its interpreter: a missing or non-executable one fails as the kernel
	 * would fail the exec. */
	if (t->script && (!t->interp_file.exists || !t->interp_file.executable)) {
		notifier_deny(eg->notifier, req->id,
		              t->interp_file.error ? t->interp_file.error : EACCES);
		return;
	}

	argv = (const char *const *)t->argv;
	argc = t->argc;
	/* The policy matches the names, and so does the cache's key: read before the answer (a
	 * readlink only when a symlink was on the way; see verdict_cache.h). */
	r = notifier_read_exec_names(eg->notifier, t, true);
	exe = t->file.real_path ? t->file.real_path : t->abs_path;
	if (r < 0) {
		cl_error_set(&err, r, "reading the file's name: %s", strerror(-r));
	} else {
		/* The same exec as a moment ago, nothing it rests on changed: the same allow. */
		verdict_key_of(t, &key);
		if (verdict_cache_find(eg->verdicts, &key, &res)) {
			exec_files_from_target(t, &files);
			exec_args_from_target(eg, t, &args);
			goto decided;
		}
		r = decide(eg, t, NULL, &res, &err);
	}
	/* An ask: the file's content counts, for the decisions pinned to one (a person's) and
	 * for what a decision on this ask will be pinned to; so it does when a pinned rule would
	 * allow what the settings deny (exec.ask off). An exec the config allows costs no
	 * digest. */
	if (r >= 0 &&
	    (res.verdict == POLICY_ASK || (res.pin_wanted && res.verdict != POLICY_ALLOW))) {
		if (file_digest_get(eg->digests, t->file_fd, t->file.dev, t->file.ino,
		                    t->file.ctime_ns, t->file.size, sha256) == 0)
			have_sha256 = true;
		if (have_sha256 && res.pin_wanted)
			r = decide(eg, t, sha256, &res, &err);
	}
	if (r < 0) {
		say("exec %s denied: %s", exe, err.msg);
		audit_verdict(eg, t, exe, argv, argc, NULL, AUDIT_DENY, err.msg);
		tell_agent(eg, req->id, t->pid, exe, err.msg);
		notifier_deny(eg->notifier, req->id, EACCES);
		return;
	}
	exec_files_from_target(t, &files);
	exec_args_from_target(eg, t, &args);
	/* An ask is known by its files as they were read and its whole argv: what a person
	 * answers is kept by that. */
	if (res.verdict == POLICY_ASK && session_key_of(t, &files, &session_key) < 0) {
		notifier_deny(eg->notifier, req->id, EACCES);
		return;
	}
	exec_verdict_rewrite(t, eg->answers, session_key, eg->terminating, loop_now_ms(), &res);
	/* An ask a person's wider decision covers is answered by it. */
	exec_decisions_apply(eg->decided, t->abs_path, t->file.real_path, argv, argc,
	                     t->argv_truncated, have_sha256 ? sha256 : NULL, &res);
	/* Allows only. A pinned decision's allow is kept by the same identity its digest was
	 * taken at (ctime and size are in the key). */
	(void)verdict_cache_put(eg->verdicts, &key, &res);
decided:

	/* An ask shows the cwd and the user on its card. */
	if (lean && res.verdict == POLICY_ASK) {
		r = notifier_read_exec_record(eg->notifier, req, t, &err);
		if (r == -ENOENT)
			return;
		if (r < 0) {
			say("exec %s denied: %s", exe, err.msg);
			audit_verdict(eg, t, exe, argv, argc, NULL, AUDIT_DENY, err.msg);
			notifier_deny(eg->notifier, req->id, EACCES);
			return;
		}
	}
	trace_exec_phase(TRACE_EXEC_DECIDE);
	switch (res.verdict) {
	case POLICY_ALLOW: {
		/* Answer first: the decision is made, and the waiting exec need not also wait for
		 * the log line. The line follows in this same call, so it is never lost; a backstop
		 * failure turned the answer into a denial, and the line says so. */
		int answered = answer(eg, req->id, t->pid, true, &files, &args);

		trace_exec_phase(TRACE_EXEC_ANSWER);
		if (answered < 0) {
			audit_verdict(eg, t, exe, argv, argc, &res, AUDIT_DENY,
			              "the backstop could not record the approval");
			return;
		}
		audit_verdict(eg, t, exe, argv, argc, &res, AUDIT_ALLOW, NULL);
		trace_exec_phase(TRACE_EXEC_AUDIT);
		if (eg->verbose)
			say("exec %s allowed: %s", res.subject, res.rule);
		return;
	}
	case POLICY_DENY: {
		char rule[1024];

		format_rule(&res, rule, sizeof(rule));
		say("exec %s denied: %s", exe, rule);
		audit_verdict(eg, t, exe, argv, argc, &res, AUDIT_DENY, NULL);
		tell_agent(eg, req->id, t->pid, exe, rule);
		answer(eg, req->id, t->pid, false, NULL, NULL);
		return;
	}
	case POLICY_ASK:
		break;
	}

	{
		char interp[PATH_MAX + 64], identity[256];
		struct queue_request qr = {
		        .kind = QUEUE_KIND_EXEC,
		        .sandbox = eg->name,
		        .project = eg->project,
		        .summary = res.subject,
		        .exe = exe,
		        .argv = argv,
		        .argc = argc,
		        .cwd = t->cwd,
		        .interpreter = NULL,
		        .identity = identity,
		        .note = res.content_changed ? "the file changed since you allowed it (its "
		                                      "content is not the one decided on)"
		                                    : NULL,
		        .pid = t->pid,
		        .uid = t->uid == (uid_t)-1 ? -1 : (int64_t)t->uid,
		        .allowlist_matched = res.fallback == POLICY_ALLOW,
		        .cookie = req->id,
		};

		exec_files_identity(&files, identity, sizeof(identity));
		if (t->interp) {
			snprintf(interp, sizeof(interp), "%s%s%s", t->interp,
			         t->interp_arg ? " " : "", t->interp_arg ? t->interp_arg : "");
			qr.interpreter = interp;
		}
		char item_id[QUEUE_ID_LEN + 1] = "";

		r = pending_add(eg, req->id, t->pid, &files, &args, &t->file_fd, session_key,
		                have_sha256 ? sha256 : NULL);
		if (r >= 0)
			r = approvals_ask(eg->approvals, &qr, item_id);
		if (r >= 0 && r != QUEUE_ADD_DECIDED) {
			struct pending_exec *p = pending_find(eg, req->id);

			if (p)
				memcpy(p->item_id, item_id, sizeof(p->item_id));
		}
		if (r < 0) {
			const char *why = r == -ENOMEM ? "out of memory" : queue_strerror(r);
			struct pending_exec *p = pending_find(eg, req->id);

			if (p)
				pending_remove(eg, p);
			say("exec %s denied: %s", exe, why);
			audit_verdict(eg, t, exe, argv, argc, &res, AUDIT_DENY, why);
			tell_agent(eg, req->id, t->pid, exe, why);
			answer(eg, req->id, t->pid, false, NULL, NULL);
			return;
		}
	}
	/* While it waits, its process is watched (on_tick). */
	approvals_schedule(eg->approvals);
}

/* A connect: remember who went where, and let it go at once. Netfilter and the proxy
 * decide; this only names the process on a domain card and in the audit log. */
static void handle_connect(struct exec_guard *eg, const struct seccomp_notif *req,
                           const struct notification_read *rd)
{
	struct connect_target who;

	if (rd ? (who = rd->who, rd->r) == 0
	       : notifier_read_connect(eg->notifier, req, &who) == 0) {
		unsigned i = eg->next_connect++ % CONNECTS_KEPT;

		eg->connects[i].time_ms = loop_now_ms();
		eg->connects[i].who = who;
	}
	notifier_continue(eg->notifier, req->id);
}

/* Copied out rather than read through a cast: the storage's declared type is not
 * sockaddr_in, and strict aliasing lets the compiler assume the read sees nothing. */
static bool same_endpoint(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		struct sockaddr_in x, y;

		memcpy(&x, a, sizeof(x));
		memcpy(&y, b, sizeof(y));
		return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
	}
	if (a->ss_family == AF_INET6) {
		struct sockaddr_in6 x, y;

		memcpy(&x, a, sizeof(x));
		memcpy(&y, b, sizeof(y));
		return x.sin6_port == y.sin6_port &&
		       !memcmp(&x.sin6_addr, &y.sin6_addr, sizeof(x.sin6_addr));
	}
	return false;
}

int exec_guard_who_connected(const struct exec_guard *eg, const struct sockaddr_storage *dst,
                             struct connect_target *ret)
{
	uint64_t now = loop_now_ms();

	/* Newest first. */
	for (unsigned k = 1; k <= CONNECTS_KEPT && k <= eg->next_connect; k++) {
		unsigned i = (eg->next_connect - k) % CONNECTS_KEPT;

		if (now - eg->connects[i].time_ms > CONNECT_KEEP_MS)
			break;
		if (same_endpoint(&eg->connects[i].who.addr, dst)) {
			*ret = eg->connects[i].who;
			return 0;
		}
	}
	return -ENOENT;
}

/* RD: what was read before the lock (read_notification), or NULL. */
static void on_notification(struct exec_guard *eg, const struct seccomp_notif *req,
                            struct notification_read *rd)
{
	if (rd && !rd->done)
		rd = NULL;
	eg->notifications++;
	eg->metrics->notifications++;
	if (req->data.nr == SYS_execve || req->data.nr == SYS_execveat)
		handle_exec(eg, req, rd);
	else if (req->data.nr == SYS_connect)
		handle_connect(eg, req, rd);
	else if (is_open(req))
		handle_open(eg, req, rd);
	else
		notifier_deny(eg->notifier, req->id, ENOSYS);
}

/* The loop's handler of the listener: its notifications when no thread receives them, and
 * its hang-up (every filtered process is gone) always. */
static int on_listener(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct exec_guard *eg = userdata;
	struct seccomp_notif req;
	int r;

	if ((events & EPOLLIN) && !eg->threaded) {
		trace_exec_begin();
		r = notifier_receive(eg->notifier, &req);
		trace_exec_phase(TRACE_EXEC_RECEIVE);
		if (r == 0)
			on_notification(eg, &req, NULL);
		else if (r != -ENOENT && r != -EINTR)
			say("receiving a notification failed: %s", strerror(-r));
		return 0;
	}
	/* Every filtered process is gone. */
	if (events & (EPOLLHUP | EPOLLERR)) {
		loop_del_fd(loop, fd);
		eg->listening = false;
		if (eg->gone)
			eg->gone(eg->gone_userdata, eg); /* may free eg */
	}
	return 0;
}

/* ---- the receiving thread -----------------------------------------------------------------
 * A thread per listener blocks in SECCOMP_IOCTL_NOTIF_RECV, which answers sooner and with
 * less CPU than the loop's epoll_wait + RECV (docs/ARCHITECTURE.md, "who receives"), then
 * takes the loop's lock and runs the handlers the loop would: nothing in them runs beside
 * another. It blocks every signal but the faults (the crash handlers must run where the fault
 * is) and WAKE_SIG, which interrupts its RECV when the guard is freed. The hang-up stays the
 * loop's (on_listener). */

static int wake_sig(void)
{
	return SIGRTMIN + 4;
}

/* How long the guard's free waits for the thread to end (loop_thread_join). It takes at most
 * one signal's round trip from RECV or a wait for the lock: only a call no signal ends (none of
 * ours outside the lock; the stall a hostile file system could make) keeps it past this. */
#define THREAD_STOP_MS 2000
enum { THREAD_RUNNING, THREAD_LEFT, THREAD_ABANDONED };

/* The thread's last steps, whether it was told to stop or not: the guard's last part is its
 * to free when the guard's free did not wait for it (stop_thread). */
static void thread_leaves(struct exec_guard *eg)
{
	struct loop *loop = eg->loop;

	config_regex_thread_free();
	if (__atomic_exchange_n(&eg->thread_end, THREAD_LEFT, __ATOMIC_ACQ_REL) ==
	    THREAD_ABANDONED) {
		notifier_free(eg->notifier);
		free(eg);
	}
	loop_thread_leave(loop);
}

static void on_wake_sig(int sig)
{
	(void)sig; /* only there to interrupt the RECV (no SA_RESTART) */
}

static pthread_once_t wake_once = PTHREAD_ONCE_INIT;
static int wake_installed = -1;

static void install_wake_sig(void)
{
	struct sigaction sa = {.sa_handler = on_wake_sig};

	sigfillset(&sa.sa_mask);
	wake_installed = sigaction(wake_sig(), &sa, NULL) == 0 ? 0 : -errno;
}

static bool listener_hung_up(const struct exec_guard *eg)
{
	struct pollfd p = {.fd = notifier_fd(eg->notifier), .events = POLLIN};

	return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR | POLLNVAL));
}

static void *receive_thread(void *userdata)
{
	struct exec_guard *eg = userdata;
	static const int faults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};
	struct seccomp_notif req;
	struct notification_read rd = {0};
	struct trace_exec_span span = {0};
	sigset_t mask;

	sigfillset(&mask);
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
		sigdelset(&mask, faults[i]);
	sigdelset(&mask, wake_sig());
	pthread_sigmask(SIG_SETMASK, &mask, NULL);

	while (!__atomic_load_n(&eg->stop, __ATOMIC_ACQUIRE)) {
		int r = notifier_receive(eg->notifier, &req);

		if (r == -EINTR)
			continue; /* WAKE_SIG: look at STOP */
		if (r == -ENOENT) {
			/* The process died before it was received, or every one is gone: then RECV
			 * fails at once, forever, and the loop hears the hang-up. */
			if (listener_hung_up(eg))
				break;
			continue;
		}
		/* The process's memory and files, before the lock (notification_read). */
		rd = (struct notification_read){.done = false};
		if (r == 0) {
			trace_exec_span_begin(&span);
			read_notification(eg, &req, &rd);
			trace_exec_span_end(&span);
		}
		if (loop_thread_lock(eg->loop, &eg->stop) < 0) {
			notification_read_done(&rd);
			break; /* being freed: closing the listener fails the syscall */
		}
		if (r < 0) {
			struct loop *loop = eg->loop;

			/* Not a failure of one notification: the loop polls the listener from now
			 * on (and says so if that fails too), the thread leaves on its own. */
			say("receiving a notification failed: %s", strerror(-r));
			eg->threaded = false;
			(void)pthread_detach(pthread_self());
			if (loop_mod_fd(loop, notifier_fd(eg->notifier), EPOLLIN) < 0)
				say("the exec listener is not watched any more: execs wait");
			loop_thread_unlock(loop); /* EG may be freed from here on */
			config_regex_thread_free();
			loop_thread_leave(loop);
			return NULL;
		}
		trace_exec_begin();
		trace_exec_phase(TRACE_EXEC_RECEIVE); /* waiting for the lock */
		if (req.data.nr == SYS_execve || req.data.nr == SYS_execveat)
			trace_exec_span_add(TRACE_EXEC_READ, &span);
		on_notification(eg, &req, &rd);
		notification_read_done(&rd);
		loop_thread_unlock(eg->loop);
	}
	thread_leaves(eg);
	return NULL;
}

/* Starts the thread; false when it cannot (the loop polls the listener then). */
static bool start_thread(struct exec_guard *eg)
{
	sigset_t all, old;
	int r;

	(void)pthread_once(&wake_once, install_wake_sig);
	if (wake_installed < 0)
		return false;
	/* The loop's thread never takes WAKE_SIG; the new thread starts with every signal blocked
	 * and opens its own. */
	sigemptyset(&all);
	sigaddset(&all, wake_sig());
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	loop_thread_enter(eg->loop);
	r = pthread_create(&eg->thread, NULL, receive_thread, eg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		loop_thread_leave(eg->loop);
		return false;
	}
	(void)pthread_setname_np(eg->thread, "cloister-exec"); /* for ps, gdb, perf */
	return true;
}

/* With the loop's lock held, so the thread is not running a handler: it is in RECV (the
 * signal ends it), reading a notification before the lock (what a read waits on ends with
 * the sandbox's processes; a read outliving THREAD_STOP_MS is left, see below), or waiting for the
 * lock (the cancel ends that). False when it did not end within THREAD_STOP_MS: it is detached, to
 * end by itself, and the guard's free must leave it the struct and the listener (thread_leaves). */
static bool stop_thread(struct exec_guard *eg)
{
	loop_thread_cancel(eg->loop, &eg->stop);
	eg->threaded = false;
	if (loop_thread_join(eg->thread, wake_sig(), THREAD_STOP_MS) == 0)
		return true;
	say("the exec guard's thread of %s did not stop within %d ms: left to end by itself "
	    "(its listener stays open until then)",
	    eg->name, THREAD_STOP_MS);
	return false;
}

/* ---- life cycle -------------------------------------------------------------------------- */

int exec_guard_new(struct loop *loop, struct approvals *approvals, int listener_fd,
                   const struct exec_guard_config *config, struct exec_guard **ret)
{
	struct exec_guard *eg = calloc(1, sizeof(*eg));
	int r;

	if (!eg) {
		close(listener_fd);
		return -ENOMEM;
	}
	eg->loop = loop;
	eg->metrics = approvals_metrics(approvals);
	eg->config = config->config;
	eg->backstop = config->backstop;
	eg->cgroup_id = config->cgroup_id;
	eg->ptrace_backstop = config->ptrace_backstop;
	eg->deny_ids = config->deny_ids;
	eg->verbose = config->verbose;
	eg->quiet_to_agent = config->quiet_to_agent;
	eg->ttys = config->ttys;
	eg->gone = config->gone;
	eg->gone_userdata = config->gone_userdata;
	eg->name = strdup(config->name);
	eg->project = config->project ? strdup(config->project) : NULL;
	if (!eg->name || (config->project && !eg->project)) {
		close(listener_fd);
		exec_guard_free(eg);
		return -ENOMEM;
	}
	r = exec_answers_new(&eg->answers);
	if (r >= 0)
		r = verdict_cache_new(&eg->verdicts);
	if (r >= 0)
		r = file_digests_new(&eg->digests);
	if (r >= 0)
		r = exec_decisions_new(config->decisions_dir, config->project, &eg->decided);
	eg->service = approvals;
	if (r >= 0)
		r = approvals_register(approvals, &exec_source_ops, eg, &eg->approvals);
	/* Other runs' project and global decisions, as they are made. Without it (no inotify),
	 * they hold from the next run, as before. */
	if (r >= 0) {
		struct cl_error err = {""};

		if (exec_decisions_watch(eg->decided, loop, on_shared_decisions, eg, &err) < 0 &&
		    config->verbose)
			say("decisions of other runs are read at start only: %s", err.msg);
	}
	if (r < 0) {
		close(listener_fd);
		exec_guard_free(eg);
		return r;
	}
	r = notifier_new(listener_fd, &eg->notifier);
	if (r < 0) {
		close(listener_fd);
		exec_guard_free(eg);
		return r;
	}
	notifier_set_view(eg->notifier, config->view);
	if (config->view && config->fixed_root) {
		r = notifier_set_fixed_root(eg->notifier, true);
		if (r < 0) {
			exec_guard_free(eg);
			return r;
		}
	}
	/* With the thread the loop only hears the hang-up (epoll reports it unasked). */
	eg->threaded = start_thread(eg);
	r = loop_add_fd(loop, notifier_fd(eg->notifier), eg->threaded ? 0 : EPOLLIN, on_listener,
	                eg);
	if (r < 0) {
		exec_guard_free(eg);
		return r;
	}
	eg->listening = true;
	*ret = eg;
	return 0;
}

bool exec_guard_free(struct exec_guard *eg)
{
	bool abandoned = false;

	if (!eg)
		return false;
	/* First: the thread uses the guard until it is gone. */
	if (eg->threaded)
		abandoned = !stop_thread(eg);
	/* Whatever still waits is cancelled; closing the listener fails its syscalls. */
	approvals_unregister(eg->approvals);
	for (size_t i = 0; i < eg->n_pending; i++) {
		if (eg->pending[i].fd >= 0)
			close(eg->pending[i].fd);
		free(eg->pending[i].session_key);
	}
	free(eg->pending);
	if (eg->listening)
		loop_del_fd(eg->loop, notifier_fd(eg->notifier));
	exec_answers_free(eg->answers);
	exec_decisions_free(eg->decided);
	verdict_cache_free(eg->verdicts);
	file_digests_free(eg->digests);
	free(eg->name);
	free(eg->project);
	/* A thread left to end by itself still looks at the listener (its fd must not be
	 * another's by then) and at STOP: the second of us two to get here frees them (it may
	 * have left meanwhile; detached, it needs no join). */
	if (abandoned &&
	    __atomic_exchange_n(&eg->thread_end, THREAD_ABANDONED, __ATOMIC_ACQ_REL) != THREAD_LEFT)
		return true;
	notifier_free(eg->notifier);
	free(eg);
	return false;
}

void exec_guard_set_terminating(struct exec_guard *eg, bool terminating)
{
	eg->terminating = terminating;
	forget_verdicts(eg);
}

void exec_guard_set_open_handler(struct exec_guard *eg, const struct exec_guard_open_ops *ops,
                                 void *userdata)
{
	eg->open_userdata = userdata;
	__atomic_store_n(&eg->open_ops, ops, __ATOMIC_RELEASE);
}

struct notifier *exec_guard_notifier(const struct exec_guard *eg)
{
	return eg->notifier;
}

uint64_t exec_guard_notifications(const struct exec_guard *eg)
{
	return eg->notifications;
}
