/* The exec backstop a sandbox gets: the eBPF one (bpf/backstop.h) where it loads, which is as
 * root, else the ptrace one (ptrace_backstop.h); without either the sandbox does not start,
 * unless the user accepts the race (--no-backstop). The exec guard tells the one chosen which
 * files each approved exec may run; what it refuses or kills is one audit line (never
 * rate-limited: a security event) and one line for the person.
 *
 * Life: backstops_open() before the agent exists (the ptrace tracer is forked while the
 * supervisor has a single thread), backstops_seize() when the agent is forked,
 * backstops_watch() once the sandbox runs, backstops_free() after the sandbox. */
#ifndef CLOISTER_BACKSTOPS_H
#define CLOISTER_BACKSTOPS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

struct loop;
struct approvals;
struct backstop;
struct ptrace_backstop;
struct backstops;

struct backstops_options {
	bool none;    /* --no-backstop: run without one */
	bool require; /* --require-backstop: the eBPF one, or no start */
	bool verbose;
};

/* *RET_BACKSTOPS holds no backstop with O->none. -errno with ERR: none could be had. */
int backstops_open(const struct backstops_options *o, struct cl_error *err,
                   struct backstops **ret_backstops);
/* The agent (forked, waiting): the ptrace backstop traces it before it runs. */
int backstops_seize(struct backstops *b, pid_t agent, struct cl_error *err);
/* The sandbox runs in CGROUP_ID (0: none): the eBPF backstop checks it; the reports of
 * SANDBOX (of PROJECT, may be NULL) go to APPROVALS' audit log from LOOP. */
int backstops_watch(struct backstops *b, struct loop *loop, struct approvals *approvals,
                    uint64_t cgroup_id, const char *sandbox, const char *project,
                    struct cl_error *err);
/* The sandbox is gone: the eBPF backstop forgets its cgroup. NULL is fine. */
void backstops_free(struct backstops *b);

/* The one in use, for the exec guard; NULL when it is the other one or none. */
struct backstop *backstops_ebpf(const struct backstops *b);
struct ptrace_backstop *backstops_ptrace(const struct backstops *b);
/* "lsm", "tp_btf + SIGKILL", "ptrace", or "off". */
const char *backstops_mode(const struct backstops *b);

#endif
