/* The exec backstop a sandbox gets; see backstops.h. */
#include "supervisor/exec/backstops.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/loop.h"
#include "base/say.h"
#include "base/trace_timing.h"
#include "bpf/backstop.h"
#include "supervisor/approval/approvals.h"
#include "supervisor/approval/audit.h"
#include "supervisor/approval/audit_log.h"
#include "supervisor/exec/ptrace_backstop.h"

struct backstops {
	struct backstop *ebpf;
	struct ptrace_backstop *ptrace;
	struct loop *loop;
	struct approvals *approvals;
	uint64_t cgroup_id; /* registered with the eBPF backstop */
	char *sandbox;
	char *project;
};

#define NO_BACKSTOP_TAIL                                                                           \
	"refusing to start; --no-backstop runs without one, accepting that a racing agent may "   \
	"run a file other than the one approved"

int backstops_open(const struct backstops_options *o, struct cl_error *err,
                   struct backstops **ret_backstops)
{
	struct backstops *b = calloc(1, sizeof(*b));
	struct cl_error why = {""}, pwhy = {""};
	int r;

	if (!b)
		return cl_error_set(err, -ENOMEM, "out of memory");
	if (o->none) {
		say("warning: --no-backstop: no exec backstop; a racing multi-threaded agent could "
		    "run a file other than the one approved");
		*ret_backstops = b;
		return 0;
	}
	/* Only root: the eBPF backstop checks the sandbox's cgroup, which a non-root run may not
	 * get (no delegated subtree), and that is known only once the sandbox runs. */
	if (geteuid() == 0) {
		r = backstop_open(&b->ebpf, &why);
		/* Loading parsed the kernel's BTF (megabytes, freed by now): give that back. */
		malloc_trim(0);
		trace_timing_mark("backstop open, load, attach");
	} else {
		r = cl_error_set(&why, -EPERM, "the eBPF backstop needs root");
	}
	if (r >= 0) {
		*ret_backstops = b;
		return 0;
	}
	b->ebpf = NULL;
	if (o->require) {
		free(b);
		return cl_error_set(err, -EPERM, "no exec backstop: %s", why.msg);
	}
	r = ptrace_backstop_start(&b->ptrace, &pwhy);
	trace_timing_mark("ptrace backstop (tracer forked)");
	if (r < 0) {
		free(b);
		return cl_error_set(err, -EPERM, "no exec backstop (%s; %s): " NO_BACKSTOP_TAIL,
		                    why.msg, pwhy.msg);
	}
	if (o->verbose)
		say("no eBPF exec backstop (%s): the ptrace one instead", why.msg);
	*ret_backstops = b;
	return 0;
}

int backstops_seize(struct backstops *b, pid_t agent, struct cl_error *err)
{
	struct cl_error why = {""};
	int r;

	if (!b->ptrace)
		return 0;
	r = ptrace_backstop_seize(b->ptrace, agent, &why);
	if (r < 0)
		return cl_error_set(err, r, "no exec backstop (%s%s): " NO_BACKSTOP_TAIL, why.msg,
		                    r == -EPERM ? "; is something tracing it already?" : "");
	return 0;
}

/* A refused or killed exec: one line for the person, one for the audit log (never limited). */
static int on_event(const struct backstop_event *ev, void *userdata)
{
	struct backstops *b = userdata;
	const char *what = ev->action == BACKSTOP_DENIED   ? "refused"
	                   : ev->action == BACKSTOP_KILLED ? "killed"
	                                                   : "FAILED to kill";
	char reason[256];
	struct audit_record rec = {
	        .time_ms = audit_log_now_ms(),
	        .sandbox = b->sandbox,
	        .project = b->project,
	        .kind = "exec",
	        .pid = ev->pid,
	        .uid = -1,
	        .exe = ev->filename[0] ? ev->filename : NULL,
	        .verdict = AUDIT_DENY,
	        .rule = "backstop",
	        .decided_by = "backstop",
	        .latency_ms = -1,
	        .reason = reason,
	};

	if (ev->action == BACKSTOP_KILLED && ev->error)
		snprintf(reason, sizeof(reason), "the file executed could not be inspected (%s)",
		         strerror(-ev->error));
	else
		snprintf(reason, sizeof(reason),
		         "the file executed (dev %u:%u inode %llu) was not the one approved",
		         major(ev->st_dev), minor(ev->st_dev), (unsigned long long)ev->st_ino);
	say("backstop %s pid %d (%s) exec of %s: %s", what, ev->pid, ev->comm,
	    ev->filename[0] ? ev->filename : "a file it may not read", reason);
	approvals_audit(b->approvals, &rec);
	return 0;
}

static int on_ebpf(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct backstops *b = userdata;

	backstop_consume_events(b->ebpf, on_event, b);
	return 0;
}

static int on_ptrace(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct backstops *b = userdata;

	ptrace_backstop_consume_events(b->ptrace, on_event, b);
	if (events & (EPOLLHUP | EPOLLERR))
		loop_del_fd(loop, fd); /* the tracer is gone, and with it every traced process */
	return 0;
}

int backstops_watch(struct backstops *b, struct loop *loop, struct approvals *approvals,
                    uint64_t cgroup_id, const char *sandbox, const char *project,
                    struct cl_error *err)
{
	int r = 0;

	b->loop = loop;
	b->approvals = approvals;
	b->sandbox = strdup(sandbox);
	b->project = project ? strdup(project) : NULL;
	if (!b->sandbox || (project && !b->project))
		return cl_error_set(err, -ENOMEM, "out of memory");
	if (b->ebpf) {
		/* Only a root run loads it, and a root run always has a cgroup. */
		if (!cgroup_id)
			return cl_error_set(err, -EPERM,
			                    "no cgroup for the sandbox, so no exec backstop");
		r = backstop_add_sandbox(b->ebpf, cgroup_id);
		if (r < 0)
			return cl_error_set(err, r, "backstop: %s", strerror(-r));
		b->cgroup_id = cgroup_id;
		r = loop_add_fd(loop, backstop_events_fd(b->ebpf), EPOLLIN, on_ebpf, b);
	}
	if (r >= 0 && b->ptrace)
		r = loop_add_fd(loop, ptrace_backstop_events_fd(b->ptrace), EPOLLIN, on_ptrace, b);
	if (r < 0)
		return cl_error_set(err, r, "the backstop's reports: %s", strerror(-r));
	return 0;
}

void backstops_free(struct backstops *b)
{
	if (!b)
		return;
	if (b->ebpf && b->cgroup_id)
		backstop_remove_sandbox(b->ebpf, b->cgroup_id);
	backstop_free(b->ebpf);
	ptrace_backstop_free(b->ptrace);
	free(b->sandbox);
	free(b->project);
	free(b);
}

struct backstop *backstops_ebpf(const struct backstops *b)
{
	return b ? b->ebpf : NULL;
}

struct ptrace_backstop *backstops_ptrace(const struct backstops *b)
{
	return b ? b->ptrace : NULL;
}

const char *backstops_mode(const struct backstops *b)
{
	return b && b->ebpf     ? backstop_mode_name(b->ebpf)
	       : b && b->ptrace ? ptrace_backstop_mode_name()
	                        : "off";
}
