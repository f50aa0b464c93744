/* `run`: a sandbox of our own around the agent, its exec interception (exec_guard.h) with its
 * backstop (backstops.h), its terminal (terminal.h) and what run shares with serve
 * (frontend.h: the approvals service, audit log, dashboard and APIs, egress), wired into one
 * event loop. Exits with the agent's status.
 *
 * Over 900 lines on purpose: run's options, its set-up step by step and its ending are one
 * order of steps around one struct run, in the order they happen. What run shares with serve
 * is frontend.c; its concerns are in their folders (sandbox/, exec/, egress/, tty/).
 */
#include "supervisor/run.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/dirs.h"
#include "base/error.h"
#include "base/loop.h"
#include "base/say.h"
#include "base/trace_timing.h"
#include "bpf/connattr.h"
#include "notifier/filter.h"
#include "notifier/notify.h"
#include "notifier/target.h"
#include "notifier/view.h"
#include "supervisor/approval/approvals.h"
#include "supervisor/approval/audit_log.h"
#include "supervisor/approval/labels.h"
#include "supervisor/approval/worktree.h"
#include "supervisor/cli_policy.h"
#include "supervisor/egress/egress.h"
#include "supervisor/egress/peer_listeners.h"
#include "supervisor/exec/agent_files.h"
#include "supervisor/exec/backstops.h"
#include "supervisor/exec/deny_ids.h"
#include "supervisor/exec/exec_guard.h"
#include "supervisor/files/write_ask.h"
#include "supervisor/frontend.h"
#include "supervisor/policy/config.h"
#include "supervisor/policy/config_files.h"
#include "supervisor/policy/env_scrub.h"
#include "supervisor/sandbox/fs_confine.h"
#include "supervisor/sandbox/run_confine.h"
#include "supervisor/sandbox/sandbox.h"
#include "supervisor/tty/terminal.h"
#include "supervisor/web/api_info.h"
#include "supervisor/web/web.h"

/* After passing SIGTERM/SIGHUP on, how long the agent has before everything is killed. */
#define TERMINATE_GRACE_MS 5000
/* When no config says limits.pids_max (the built-in one does). */
#define RUN_PIDS_MAX_DEFAULT 4096
/* The agent's processes go first when the machine runs out of memory: +500 adds half of the
 * machine's memory to their OOM score, so the killer takes the agent before any other
 * program that does not use more than half of it. */
#define RUN_OOM_SCORE_ADJ 500

enum ask_mode {
	ASK_AUTO, /* the terminal when there is one, and the dashboard */
	ASK_TTY,
	ASK_WEB, /* the dashboard and the CLI client: asks wait for them until the timeout */
	ASK_NONE,
};

struct options {
	struct frontend_options common; /* what serve takes too */
	const char *ask_tty_path;
	enum ask_mode ask;
	bool lenient;
	bool require_backstop;
	bool no_backstop;          /* run without an exec backstop: the user accepts the race */
	bool allow_nested_sandbox; /* the agent may make user and mount namespaces of its own */
	bool no_web;
	bool net_none; /* --net none: loopback only, no egress at all */
	bool net_host; /* --net host: the host's network, eBPF redirect on the cgroup */
	bool real_ip;  /* --real-ip: the agent's DNS gets real addresses */
	const char *keep_env[RUN_KEEP_ENV_MAX]; /* --keep-env NAME */
	size_t n_keep_env;
	bool allow_abstract_sockets; /* --net host without Landlock's abstract socket scope */
	bool quiet_to_agent;         /* no reason line on a refused process's stderr */
	bool require_fs_confinement; /* both file system layers, or no start */
	bool test_no_fs_mounts;      /* tests only: Landlock alone confines the files */
	bool test_no_fs_confinement; /* tests only: the files are not confined (bench)*/
	bool pids_max_set;           /* --pids-max given */
	uint64_t pids_max;           /* ... with this (0: off) */
	char **agent_argv;
};

struct run {
	struct options opt;
	struct config *config;
	char *sandbox_name;
	char *config_dir; /* read-only inside the sandbox */
	/* With --config-dir, the directory a plain run would read: read-only too, or the agent
	 * would plant the next plain run's config there. NULL: none, or config_dir itself. */
	char *default_config_dir;
	char *audit_dir; /* hidden inside the sandbox */
	char *exe;       /* our own executable (/proc/self/exe): read-only inside the sandbox */
	struct loop *loop;
	struct frontend_setup setup;
	struct frontend *fe;         /* the approvals service, audit log, dashboard and APIs */
	struct approvals *approvals; /* the front end's */
	struct sandbox *sandbox;
	struct exec_guard *guard;     /* its execs */
	bool thread_left;             /* the guard's thread left running (exec_guard_free) */
	struct write_ask *writes;     /* its writes outside fs.write (fs.ask: on-write) */
	struct backstops *backstops;  /* their backstop */
	struct exec_view *view;       /* the sandbox's own view, for the identity check */
	struct deny_ids *deny_ids;    /* deny rules' files, by identity */
	struct fs_sweep *fs_sweep;    /* protected paths absent at the start, checked at the end */
	struct egress *egress;        /* its connections */
	struct connattr *connattr;    /* who made each connection, as root (else: notifications) */
	bool net_ready;               /* the netns got its rules and listeners */
	struct terminal *terminal;    /* the user's, relayed, and the prompts */
	struct loop_timer *terminate; /* the grace after an ending signal */

	uint64_t pids_max;             /* the sandbox's task limit, 0: none */
	bool pids_said;                /* its "hit the limit" line was said */
	struct loop_timer *pids_timer; /* looks at the refusals once a second (cgroup v1) */

	bool paused; /* by the dashboard's kill switch */
	uint64_t started_wall_ms;

	bool terminating;  /* SIGTERM or SIGHUP came: asks are denied without asking */
	bool killed;       /* the kill switch: the sandbox is stopped, whatever is left of it */
	int ending_signal; /* which one: its acknowledgement cancels the asks */
	bool exited;
	int exit_code;
};

/* ---- the network ------------------------------------------------------------------------------
 */

static void add_port(uint16_t *ports, size_t *n, uint16_t port)
{
	for (size_t i = 0; i < *n; i++)
		if (ports[i] == port)
			return;
	ports[(*n)++] = port;
}

/* The ports the agent may not reach on the host's loopback (--net host): what every Cloister
 * process listens on (peer_listeners.h, this one included), and our dashboard, token API and
 * executor in any case; less the two meant for the agent, which need its token: our request
 * server (hostexec) and our CONNECT proxy. A scan that fails refuses the start: the agent
 * would reach what it missed. */
static int refused_ports(void *userdata, uint16_t *ports, size_t max, size_t *ret_n)
{
	struct run *run = userdata;
	const struct web *web = frontend_web(run->fe);
	uint16_t keep[2] = {web ? web_request_port(web) : 0,
	                    (uint16_t)egress_connect_port(run->egress)};
	uint16_t own[3] = {web ? web_approval_port(web) : 0, web ? web_tokens_port(web) : 0,
	                   frontend_executor_port(run->fe)};
	size_t n = 0, k = 0, dropped = 0;
	int r;

	/* Room for ours after the scan's. */
	if (max < ELEMENTSOF(own))
		return -E2BIG;
	r = peer_listeners_scan("/proc", PEER_LISTENERS_EXE, geteuid(), ports,
	                        max - ELEMENTSOF(own), &n, &dropped);
	if (r < 0)
		return r;
	if (dropped)
		say("warning: --net host: %zu listening ports of other users' cloister-supervisor "
		    "processes are not refused to the agent (no room)",
		    dropped);
	for (size_t i = 0; i < ELEMENTSOF(own); i++)
		if (own[i])
			add_port(ports, &n, own[i]);
	for (size_t i = 0; i < n; i++)
		if (ports[i] != keep[0] && ports[i] != keep[1])
			ports[k++] = ports[i];
	if (run->opt.common.verbose)
		say("--net host: %zu of Cloister's ports refused to the agent, and those that "
		    "other supervisors bind from now on",
		    k);
	*ret_n = k;
	return 0;
}

/* The cgroup programs that name the process of each connection. Loaded before the sandbox
 * (its filter was then made without connect notifications): failing here costs the cards
 * their process name, nothing else, so it is said and the run goes on. */
static void attach_connattr(struct run *run, int cgroup_fd)
{
	struct cl_error why = {""};

	if (!run->connattr)
		return;
	if (cgroup_fd < 0)
		cl_error_set(&why, -ENOENT, "the sandbox has no cgroup");
	else if (connattr_attach(run->connattr, cgroup_fd, &why) >= 0)
		return;
	say("warning: domain cards will not name the process: %s", why.msg);
}

/* sandbox_start's hook, before the agent runs: its own netns gets a route, rules and
 * listeners; on the host's network (--net host) its cgroup gets the eBPF redirect. */
static int setup_network(void *userdata, int netns_fd, int cgroup_fd, struct cl_error *err)
{
	struct run *run = userdata;
	struct cl_error why = {""};
	int r;

	if (!run->egress)
		return run->opt.net_host ? cl_error_set(err, -ENOSYS, "--net host: no egress proxy")
		                         : 0;
	if (run->opt.net_host) {
		/* On the host's network a failure would leave every way out open: refuse to start.
		 */
		attach_connattr(run, cgroup_fd);
		r = egress_attach_cgroup(run->egress, cgroup_fd, run->sandbox_name,
		                         run->opt.common.project, refused_ports, run, &why);
		if (r < 0)
			return cl_error_set(err, r, "--net host: %s", why.msg);
		run->net_ready = true;
		return 0;
	}
	attach_connattr(run, cgroup_fd);
	r = egress_attach_netns(run->egress, netns_fd, run->sandbox_name, run->opt.common.project,
	                        &why);
	if (r < 0) {
		/* Without rules the netns still has no way out: fail closed, say so. */
		say("warning: no network for the agent: %s", why.msg);
		return 0;
	}
	run->net_ready = true;
	return 0;
}

/* As root, the cgroup programs' map, by the client's end; else the connect notifications,
 * by the destination. /proc is read only now, for the card that asks. */
static int who_connected(void *userdata, const struct sockaddr_storage *peer,
                         const struct sockaddr_storage *dst, struct connect_target *ret)
{
	const struct run *run = userdata;
	pid_t tgid, pid;
	int r;

	if (run->connattr) {
		r = connattr_lookup(run->connattr, (const struct sockaddr *)peer, sizeof(*peer),
		                    &tgid, &pid);
		if (r < 0)
			return r;
		memset(ret, 0, sizeof(*ret));
		ret->addr = *dst;
		connect_target_read_process(ret, tgid);
		ret->pid = pid;
		return 0;
	}
	return run->guard ? exec_guard_who_connected(run->guard, dst, ret) : -ENOENT;
}

/* ---- the sandbox ------------------------------------------------------------------------- */

/* The ask for writes' two halves (files/write_ask.h): the read without the loop's lock. */
static int on_open_read(void *userdata, const struct seccomp_notif *req, void **ret)
{
	struct write_ask_read *rd = NULL;
	int r = write_ask_read(userdata, req, &rd);

	*ret = rd;
	return r;
}

static void on_open_answer(void *userdata, const struct seccomp_notif *req, void *read)
{
	write_ask_answer(userdata, req, read);
}

static void on_open_read_free(void *read)
{
	write_ask_read_free(read);
}

static const struct exec_guard_open_ops open_ops = {
        .read = on_open_read,
        .answer = on_open_answer,
        .read_free = on_open_read_free,
};

/* fs.ask: on-write: opens that write, outside fs.write, are asked (files/write_ask.h). The
 * project is run's directory, as fs: patterns' {worktree}. */
static int start_write_ask(struct run *run, const struct agent_note_ttys *ttys)
{
	_cleanup_free_ char *worktree = realpath(".", NULL);
	_cleanup_free_ char *home = getenv("HOME") ? realpath(getenv("HOME"), NULL) : NULL;
	_cleanup_free_ char *run_dir = NULL;
	struct write_ask_own own[5] = {
	        {run->config_dir, "Cloister's config directory"},
	        {run->default_config_dir, "Cloister's config directory"},
	        {run->audit_dir, "the audit log's directory"},
	        {run->exe, "the supervisor's executable"},
	        {NULL, "Cloister's API files and dashboard secret"},
	};
	struct write_ask_config wc = {
	        .name = run->sandbox_name,
	        .project = run->opt.common.project,
	        .config = run->config,
	        .home = home,
	        .worktree = worktree,
	        .decisions_dir = run->config_dir,
	        .verbose = run->opt.common.verbose,
	        .quiet_to_agent = run->opt.quiet_to_agent,
	        .ttys = *ttys,
	        .own = own,
	        .n_own = ELEMENTSOF(own),
	};
	int r;

	if (!worktree)
		return -errno;
	if (api_info_dir(&run_dir) >= 0 && strrchr(run_dir, '/')) {
		*strrchr(run_dir, '/') = '\0'; /* …/cloister: the api files and the secret */
		own[4].path = run_dir;
	}
	r = write_ask_new(run->loop, run->approvals, exec_guard_notifier(run->guard), &wc,
	                  &run->writes);
	if (r < 0)
		return r;
	exec_guard_set_open_handler(run->guard, &open_ops, run->writes);
	return 0;
}

/* The agent is ending: what it waits for is cancelled. */
static void cancel_for_termination(struct run *run)
{
	approvals_cancel_sandbox(run->approvals, run->sandbox_name,
	                         "the agent is being terminated");
}

/* From now on asks are denied without asking. */
static void set_terminating(struct run *run)
{
	run->terminating = true;
	if (run->guard)
		exec_guard_set_terminating(run->guard, true);
	write_ask_set_terminating(run->writes, true);
}

/* The agent stopped. Ctrl-Z (or a SIGSTOP): stop with it, so the user's shell gets the
 * terminal back; `fg` continues both. Not while it is ending: a stopped supervisor could not
 * end it (an agent that stops itself on SIGTERM would hold both); nor while a prompt is up
 * (the keys are the prompt's, so this is the agent's own doing); nor without job control
 * (nobody would continue us). SIGTTIN/SIGTTOU come from the agent's own pty (it read or set
 * it from the background of its own session): it gets its pty's foreground back. */
static void on_agent_stopped(struct run *run, int sig)
{
	bool own_tty = sig == SIGTTIN || sig == SIGTTOU;

	if (!run->terminating && !own_tty && !terminal_prompting(run->terminal))
		terminal_suspend(run->terminal, sig); /* returns once `fg` (or `bg`) came */
	/* The agent goes on in its pty's foreground: that terminal is its own. */
	sandbox_continue(run->sandbox, true);
}

/* One line, once, when the sandbox's task limit refused a fork: the agent sees EAGAIN and
 * may not say why. Only the cgroup counts refusals (RLIMIT_NPROC's go uncounted). */
static void check_pids_limit(struct run *run)
{
	uint64_t refused = 0;
	int fd = run->sandbox ? sandbox_pids_events_fd(run->sandbox, NULL) : -1;

	if (run->pids_said || fd < 0 || sandbox_pids_refused(run->sandbox, &refused) < 0 ||
	    refused == 0)
		return;
	run->pids_said = true;
	(void)loop_del_fd(run->loop, fd);
	if (run->pids_timer)
		loop_cancel_timer(run->loop, run->pids_timer);
	run->pids_timer = NULL;
	say("sandbox \"%s\" hit its task limit (%" PRIu64 " processes and threads): a fork "
	    "failed with EAGAIN (--pids-max, limits.pids_max)",
	    run->sandbox_name, run->pids_max);
}

static int on_pids_event(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	(void)loop;
	(void)fd;
	(void)events;
	check_pids_limit(userdata);
	return 0;
}

/* cgroup v1's pids.events does not wake a poll (cgroup2's does): read it once a second, a
 * pread, until it has something to say. */
static int on_pids_timer(struct loop *loop, void *userdata)
{
	struct run *run = userdata;

	run->pids_timer = NULL;
	check_pids_limit(run);
	if (!run->pids_said &&
	    loop_add_timer(loop, loop_now_ms() + 1000, on_pids_timer, run, &run->pids_timer) < 0)
		run->pids_timer = NULL; /* said at the end instead */
	return 0;
}

static int on_sandbox_status(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct run *run = userdata;
	struct sandbox_status st;

	while (sandbox_handle_status(run->sandbox, &st) == 0) {
		switch (st.kind) {
		case SANDBOX_EXITED:
			run->exited = true;
			run->exit_code = st.exit_code;
			loop_exit(loop, 0);
			return 0;
		case SANDBOX_STOPPED:
			on_agent_stopped(run, st.stop_signal);
			break;
		case SANDBOX_CONTINUED:
			break;
		case SANDBOX_SIGNALLED:
			/* Not an earlier SIGINT's acknowledgement: the ending signal's. */
			if (run->terminating && st.signal == run->ending_signal)
				cancel_for_termination(run);
			break;
		}
	}
	return 0;
}

static int on_terminate_timeout(struct loop *loop, void *userdata)
{
	struct run *run = userdata;

	run->terminate = NULL;
	say("the agent did not exit after the signal; killing the sandbox");
	sandbox_kill(run->sandbox);
	return 0;
}

static int on_signal(struct loop *loop, int sig, void *userdata)
{
	struct run *run = userdata;
	bool ending = sig == SIGTERM || sig == SIGHUP;

	if (sig == SIGWINCH || sig == SIGCONT) {
		terminal_signal(run->terminal, sig);
		return 0;
	}
	/* An end may be near, and a SIGKILL after it (a service manager's stop): the automatic
	 * audit lines still in memory go to the file now. */
	frontend_audit_sync(run->fe);
	if (sig == SIGINT || sig == SIGQUIT || sig == SIGTSTP) {
		/* From the user's terminal when it is not raw (or from kill): to the agent's job,
		 * as a terminal would. Its stop then stops us (on_agent_stopped). */
		sandbox_signal_group(run->sandbox, sig);
		return 0;
	}

	if (ending) {
		/* Nothing asks any more. A prompt on the agent's own terminal froze it, the init
		 * that passes the signal on too: thaw them. The ask it waits for is cancelled only
		 * once the init says the signal is pending in the agent (SANDBOX_SIGNALLED), or
		 * the agent, denied its exec, could go on before the signal reaches it. */
		set_terminating(run);
		run->ending_signal = sig;
		terminal_unfreeze(run->terminal);
		/* Paused from the dashboard: it must run to end gracefully. */
		if (run->paused && sandbox_pause(run->sandbox, false) >= 0)
			run->paused = false;
	}
	if (sandbox_signal(run->sandbox, sig) < 0 && ending)
		cancel_for_termination(run);
	/* Without the timer, the agent may take as long as it likes to end. */
	if (ending && !run->terminate &&
	    loop_add_timer(loop, loop_now_ms() + TERMINATE_GRACE_MS, on_terminate_timeout, run,
	                   &run->terminate) < 0)
		run->terminate = NULL;
	return 0;
}

/* Opens that write reach the supervisor with either fs.ask: for the ask (on-write), and with
 * off for the reason line: the kernel layers refuse a write outside fs.write with a bare EROFS
 * or EACCES, and the supervisor, answering CONTINUE, tells the agent why (files/write_ask.h).
 * The filter notifies only opens whose flags write; one inside fs.write is continued at once.
 * Without the file system's confinement (a bench's switch) nothing is refused: no line. */
static bool writes_watched(const struct run *run)
{
	return run->config->fs.ask == FS_ASK_ON_WRITE || !run->opt.test_no_fs_confinement;
}

static int install_filter(void *userdata, int *ret_listener_fd)
{
	const struct run *run = userdata;
	/* With egress, connects are notified too, to name the process on a domain card, unless
	 * the cgroup programs do (as root). */
	struct notifier_filter_opts fo = {
	        .notify_connect = run->egress != NULL && !run->connattr,
	        .notify_open_write = writes_watched(run),
	        .open_write_tell_only = run->config->fs.ask != FS_ASK_ON_WRITE,
	        .refuse_untraced = backstops_ptrace(run->backstops) != NULL,
	        .allow_nested_sandbox = run->opt.allow_nested_sandbox,
	};

	return notifier_filter_install(&fo, NULL, ret_listener_fd);
}

/* sandbox_start's hook: the agent waits for us; the ptrace backstop seizes it first. */
static int agent_forked(void *userdata, pid_t agent, struct cl_error *err)
{
	struct run *run = userdata;

	return backstops_seize(run->backstops, agent, err);
}

static int pause_sandbox(void *userdata, bool paused)
{
	struct run *run = userdata;

	return sandbox_pause(run->sandbox, paused);
}

/* A readable sandbox name from the working directory ("my-api"), or "sandbox". */
static char *default_name(void)
{
	char cwd[PATH_MAX];
	const char *base;

	if (!getcwd(cwd, sizeof(cwd)))
		return strdup("sandbox");
	base = strrchr(cwd, '/');
	base = base && base[1] ? base + 1 : "sandbox";
	return strndup(base, 64);
}

/* ---- the dashboard's view of this sandbox -------------------------------------------------- */

static int owner_sandbox_action(void *userdata, const char *name, const char *action)
{
	struct run *run = userdata;
	int r;

	if (!run->sandbox || strcmp(name, run->sandbox_name))
		return -ENOENT;
	if (!strcmp(action, "kill")) {
		say("sandbox \"%s\" killed from the dashboard", name);
		set_terminating(run);
		run->killed = true;
		approvals_cancel_sandbox(run->approvals, run->sandbox_name,
		                         "the sandbox was killed");
		return sandbox_kill(run->sandbox);
	}
	r = sandbox_pause(run->sandbox, !strcmp(action, "pause"));
	if (r >= 0) {
		run->paused = !strcmp(action, "pause");
		say("sandbox \"%s\" %s from the dashboard", name,
		    run->paused ? "paused" : "resumed");
	}
	return r;
}

static unsigned owner_sandboxes(void *userdata, struct web_sandbox_info *out, unsigned max)
{
	struct run *run = userdata;

	if (!run->sandbox || max == 0)
		return 0;
	out[0] = (struct web_sandbox_info){
	        .name = run->sandbox_name,
	        .project = run->opt.common.project,
	        .state = run->exited || run->killed ? "stopped"
	                 : run->paused              ? "paused"
	                                            : "running",
	        .pid = sandbox_init_pid(run->sandbox),
	        .started_ms = run->started_wall_ms,
	};
	return 1;
}

static const struct frontend_owner_ops run_owner_ops = {
        .sandbox_action = owner_sandbox_action,
        .sandboxes = owner_sandboxes,
};

/* ---- options ----------------------------------------------------------------------------- */

static void usage(FILE *out)
{
	fputs("usage: " PROG " run [OPTIONS] -- AGENT [ARGS...]\n"
	      "\n"
	      "Start AGENT in a sandbox (own pid, mount and network namespaces, its own\n"
	      "pseudo-terminal) where every program it executes is decided by the policy, and\n"
	      "every connection goes through the supervisor's proxy and the domain policy.\n"
	      "Exits with AGENT's status.\n"
	      "\n"
	      "options:\n"
	      "  --config-dir DIR     config directory (default $XDG_CONFIG_HOME/cloister)\n"
	      "  --project NAME       also load projects/NAME.yaml and its decisions\n"
	      "  --name NAME          the sandbox's name in prompts and logs (default: cwd's "
	      "name)\n"
	      "  --ask tty|web|none   who answers asks: the terminal (and the dashboard), the\n"
	      "                       dashboard and the CLI client only (asks wait for them\n"
	      "                       until the timeout), or nobody (exec.ask_fallback "
	      "decides);\n"
	      "                       default: the terminal when there is one, and any open\n"
	      "                       dashboard\n"
	      "  --ask-tty PATH       prompt on this terminal instead of this one\n"
	      "  --ask-timeout DUR    how long an ask waits (Go duration, default 5m)\n"
	      "  --require-backstop   refuse to start without the eBPF exec backstop\n"
	      "  --no-backstop        run without an exec backstop (no eBPF, no ptrace): a\n"
	      "                       racing agent may run a file other than the one approved\n"
	      "  --allow-nested-sandbox\n"
	      "                       let the agent make user and mount namespaces of its own\n"
	      "                       (bubblewrap in the agent); files mounted there are refused\n"
	      "  --listen-approval A  dashboard and approval API (default 127.0.0.1:9999; a\n"
	      "                       taken port is replaced by a free one; \"off\" disables)\n"
	      "  --listen-tokens A    token API (default 127.0.0.1:9997)\n"
	      "  --listen-request A   hostexec request server (default 127.0.0.1:9998, or the\n"
	      "                       config's request.listen)\n"
	      "  --no-web             no dashboard and no local APIs\n"
	      "  --net none           loopback only (default: every connection and DNS query goes\n"
	      "                       through the supervisor's proxy and the domain policy)\n"
	      "  --net host           share the host's network; cgroup eBPF programs send TCP and\n"
	      "                       DNS to the proxy and refuse other UDP and raw sockets\n"
	      "  --real-ip            answer the agent's DNS with real addresses (default: a\n"
	      "                       private address per name, so any protocol is decided by "
	      "name)\n"
	      "  --hosts FILE         /etc/hosts-style names the proxy resolves before DNS\n"
	      "  --listen-proxy A     also serve the CONNECT proxy (e.g. 127.0.0.1:3128)\n"
	      "  --executor HOST:PORT run approved hostexec commands through this\n"
	      "                       `" PROG " executor` (secret in CLOISTER_EXECUTOR_SECRET);\n"
	      "                       default: in this process\n"
	      "  --keep-env NAME      pass NAME on to the agent although it looks like a\n"
	      "                       credential or a way to another program (repeatable)\n"
	      "  --allow-abstract-sockets  with --net host on a kernel without Landlock scopes,\n"
	      "                       accept that the agent reaches the host's abstract sockets\n"
	      "  --require-fs-confinement  refuse to start unless both file system layers (the\n"
	      "                       mount namespace and Landlock) confine the config's fs:\n"
	      "  --test-no-fs-mounts  FOR TESTS ONLY: leave out the file system's mount layer, so\n"
	      "                       that Landlock alone refuses the writes (weaker: fs.hide\n"
	      "                       and fs.protect are then not applied)\n"
	      "  --test-no-fs-confinement  FOR TESTS ONLY: neither layer (to measure their cost)\n"
	      "  --pids-max N|off     at most N tasks (processes and threads) in the sandbox\n"
	      "                       (default 4096, or the config's limits.pids_max)\n"
	      "  --audit-rate N|off   automatic audit lines a second per sandbox (default 100;\n"
	      "                       over it they are counted, not written)\n"
	      "  --audit-burst N      ... and at once (default 1000)\n"
	      "  --audit-delay DUR    how long automatic audit lines may wait in memory to be\n"
	      "                       written together (default 20ms; 0: each at once)\n"
	      "  --lenient            skip invalid regexes in the config with a warning\n"
	      "  --quiet-to-agent     write no \"cloister: ... refused\" line to the stderr of a\n"
	      "                       refused process\n"
	      "  -v, --verbose        say what is allowed, and which kernel features are in use\n"
	      "  -q, --quiet          print nothing of our own (denials included)\n",
	      out);
}

static int parse_options(int argc, char **argv, struct options *o)
{
	enum {
		OPT_ASK = 256,
		OPT_ASK_TTY,
		OPT_REQUIRE_BACKSTOP,
		OPT_NO_BACKSTOP,
		OPT_ALLOW_NESTED_SANDBOX,
		OPT_LENIENT,
		OPT_NO_WEB,
		OPT_NET,
		OPT_REAL_IP,
		OPT_KEEP_ENV,
		OPT_ALLOW_ABSTRACT_SOCKETS,
		OPT_QUIET_TO_AGENT,
		OPT_REQUIRE_FS_CONFINEMENT,
		OPT_TEST_NO_FS_MOUNTS,
		OPT_TEST_NO_FS_CONFINEMENT,
		OPT_PIDS_MAX,
	};
	static const struct option longopts[] = {
	        FRONTEND_LONGOPTS,
	        {"ask", required_argument, NULL, OPT_ASK},
	        {"ask-tty", required_argument, NULL, OPT_ASK_TTY},
	        {"require-backstop", no_argument, NULL, OPT_REQUIRE_BACKSTOP},
	        {"no-backstop", no_argument, NULL, OPT_NO_BACKSTOP},
	        {"allow-nested-sandbox", no_argument, NULL, OPT_ALLOW_NESTED_SANDBOX},
	        {"lenient", no_argument, NULL, OPT_LENIENT},
	        {"no-web", no_argument, NULL, OPT_NO_WEB},
	        {"net", required_argument, NULL, OPT_NET},
	        {"real-ip", no_argument, NULL, OPT_REAL_IP},
	        {"keep-env", required_argument, NULL, OPT_KEEP_ENV},
	        {"allow-abstract-sockets", no_argument, NULL, OPT_ALLOW_ABSTRACT_SOCKETS},
	        {"quiet-to-agent", no_argument, NULL, OPT_QUIET_TO_AGENT},
	        {"require-fs-confinement", no_argument, NULL, OPT_REQUIRE_FS_CONFINEMENT},
	        {"test-no-fs-mounts", no_argument, NULL, OPT_TEST_NO_FS_MOUNTS},
	        {"test-no-fs-confinement", no_argument, NULL, OPT_TEST_NO_FS_CONFINEMENT},
	        {"pids-max", required_argument, NULL, OPT_PIDS_MAX},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	int c, r;

	o->ask = ASK_AUTO;
	o->common.ask_timeout_ms = 5 * 60 * 1000;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+vqh", longopts, NULL)) != -1) {
		r = frontend_parse_option(&o->common, "run", c, optarg);
		if (r < 0)
			return r;
		if (r > 0)
			continue;
		switch (c) {
		case OPT_ASK:
			if (strcmp(optarg, "tty") == 0)
				o->ask = ASK_TTY;
			else if (strcmp(optarg, "none") == 0)
				o->ask = ASK_NONE;
			else if (strcmp(optarg, "web") == 0)
				o->ask = ASK_WEB;
			else {
				fprintf(stderr,
				        PROG ": run: --ask must be tty, web or none, not \"%s\"\n",
				        optarg);
				return -EINVAL;
			}
			break;
		case OPT_ASK_TTY:
			o->ask = ASK_TTY;
			o->ask_tty_path = optarg;
			break;
		case OPT_REQUIRE_BACKSTOP:
			o->require_backstop = true;
			break;
		case OPT_NO_BACKSTOP:
			o->no_backstop = true;
			break;
		case OPT_ALLOW_NESTED_SANDBOX:
			o->allow_nested_sandbox = true;
			break;
		case OPT_LENIENT:
			o->lenient = true;
			break;
		case OPT_NO_WEB:
			o->no_web = true;
			break;
		case OPT_NET:
			if (strcmp(optarg, "none") && strcmp(optarg, "proxy") &&
			    strcmp(optarg, "host")) {
				fprintf(stderr, PROG ": run: --net must be proxy, host or none\n");
				return -EINVAL;
			}
			o->net_none = !strcmp(optarg, "none");
			o->net_host = !strcmp(optarg, "host");
			break;
		case OPT_REAL_IP:
			o->real_ip = true;
			break;
		case OPT_KEEP_ENV:
			if (!optarg[0] || strchr(optarg, '=') ||
			    o->n_keep_env == RUN_KEEP_ENV_MAX) {
				fprintf(stderr,
				        PROG
				        ": run: --keep-env takes a variable's name (at most %d)\n",
				        RUN_KEEP_ENV_MAX);
				return -EINVAL;
			}
			/* The supervisor's own secrets would let the agent answer its own asks. */
			if (strncmp(optarg, "CLOISTER_", 9) == 0) {
				fprintf(stderr,
				        PROG ": run: --keep-env %s: the supervisor's own "
				             "variables never reach the agent\n",
				        optarg);
				return -EINVAL;
			}
			o->keep_env[o->n_keep_env++] = optarg;
			break;
		case OPT_ALLOW_ABSTRACT_SOCKETS:
			o->allow_abstract_sockets = true;
			break;
		case OPT_QUIET_TO_AGENT:
			o->quiet_to_agent = true;
			break;
		case OPT_REQUIRE_FS_CONFINEMENT:
			o->require_fs_confinement = true;
			break;
		case OPT_TEST_NO_FS_MOUNTS:
			o->test_no_fs_mounts = true;
			break;
		case OPT_TEST_NO_FS_CONFINEMENT:
			o->test_no_fs_confinement = true;
			break;
		case OPT_PIDS_MAX:
			if (config_parse_pids_max(optarg, &o->pids_max) < 0) {
				fprintf(stderr,
				        PROG ": run: --pids-max takes a number of tasks from 1 to "
				             "%d, or off, not \"%s\"\n",
				        CONFIG_PIDS_MAX_LIMIT, optarg);
				return -EINVAL;
			}
			o->pids_max_set = true;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, PROG ": run: no agent given (run [OPTIONS] -- AGENT [ARGS...])\n");
		return -EINVAL;
	}
	if (o->no_backstop && o->require_backstop) {
		fprintf(stderr, PROG ": run: --no-backstop and --require-backstop contradict\n");
		return -EINVAL;
	}
	if (o->ask_tty_path) {
		/* A prompt nobody can see would only wait for the fallback: refuse it up front. */
		int fd = open(o->ask_tty_path, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
		bool ok = fd >= 0 && isatty(fd);

		if (fd >= 0)
			close(fd);
		if (!ok) {
			fprintf(stderr, PROG ": run: --ask-tty %s: not a terminal we can open\n",
			        o->ask_tty_path);
			return -EINVAL;
		}
	}
	o->agent_argv = argv + optind;
	return frontend_check_options(&o->common, "run");
}

/* ---- setting up, step by step ------------------------------------------------------------ */

static enum queue_fallback fallback_of(enum exec_security s)
{
	switch (s) {
	case EXEC_SECURITY_FULL:
		return QUEUE_FALLBACK_FULL;
	case EXEC_SECURITY_ALLOWLIST:
		return QUEUE_FALLBACK_ALLOWLIST;
	case EXEC_SECURITY_DENY:
		break;
	}
	return QUEUE_FALLBACK_DENY;
}

static bool contains_cwd(const char *dir)
{
	char cwd[PATH_MAX], real[PATH_MAX];
	size_t n;

	if (!getcwd(cwd, sizeof(cwd)) || !realpath(dir, real))
		return false;
	n = strlen(real);
	return strncmp(cwd, real, n) == 0 && (cwd[n] == '/' || cwd[n] == '\0' || n == 1);
}

static bool is_dir(const char *path)
{
	struct stat st;

	return path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Whether DIR's parent is a directory. */
static bool parent_exists(const char *dir)
{
	_cleanup_free_ char *parent = strdup(dir);

	if (!parent || !strrchr(parent, '/'))
		return false;
	*strrchr(parent, '/') = '\0';
	return is_dir(parent[0] ? parent : "/");
}

/* Whether a config directory may be created: --config-dir's parent must exist; the default
 * one is created under $XDG_CONFIG_HOME (itself created where its parent exists, as the XDG
 * spec asks) or $HOME. Never create a home directory that is not there. */
static bool config_base_exists(const char *dir, bool explicit)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");

	if (explicit)
		return parent_exists(dir);
	if (xdg && xdg[0] == '/')
		return is_dir(xdg) || parent_exists(xdg);
	return is_dir(getenv("HOME"));
}

/* The loop and what run shares with serve: the approvals service, the audit log, the
 * dashboard and APIs; /pending names the agent and the branch it works on. */
static int start_frontend(struct run *run, struct cl_error *err)
{
	char branch[LABELS_VALUE_MAX] = "";
	const char *agent = strrchr(run->opt.agent_argv[0], '/');
	int r;

	r = loop_new(&run->loop);
	if (r < 0)
		return cl_error_set(err, r, "run: the event loop: %s", strerror(-r));
	run->started_wall_ms = audit_log_now_ms();
	run->setup = (struct frontend_setup){
	        .config = run->config,
	        .name = run->sandbox_name,
	        .config_dir = run->config_dir,
	        .exec_fallback = fallback_of(run->config->exec.ask_fallback),
	        .no_web = run->opt.no_web,
	        .always_attended = run->opt.ask == ASK_WEB,
	};
	r = frontend_new(run->loop, &run->opt.common, &run->setup, &run_owner_ops, run, err,
	                 &run->fe);
	if (r < 0)
		return r;
	trace_timing_mark("front end (approvals, audit, web)");
	run->approvals = frontend_approvals(run->fe);
	/* The worktree is our cwd. */
	(void)worktree_git_branch(".", branch, sizeof(branch));
	(void)web_set_labels(frontend_web(run->fe), run->sandbox_name, branch,
	                     agent ? agent + 1 : run->opt.agent_argv[0]);
	if (frontend_audit_dir(run->fe) && !(run->audit_dir = strdup(frontend_audit_dir(run->fe))))
		return cl_error_set(err, -ENOMEM, "out of memory");
	return 0;
}

/* Egress, unless --net none: without it the agent gets no network, which is fatal only when
 * an option asked for what egress alone gives. */
static int start_egress(struct run *run, struct cl_error *err)
{
	struct egress_config ec = {
	        .who = who_connected,
	        .who_userdata = run,
	        .real_ip = run->opt.real_ip,
	};
	struct cl_error why = {""};
	int r;

	if (run->opt.net_none)
		return 0;
	r = frontend_egress_new(run->fe, &ec, &why, &run->egress);
	if (r < 0) {
		run->egress = NULL;
		if (run->opt.common.listen_proxy || run->opt.common.hosts_file)
			return cl_error_set(err, r, "run: %s", why.msg);
		say("warning: no egress proxy (%s): the agent gets no network", why.msg);
		return 0;
	}
	trace_timing_mark("egress (proxy, resolver)");
	/* Without the privilege to load it (not root), connects are notified instead. */
	if (connattr_open(&run->connattr, &why) < 0) {
		run->connattr = NULL;
		if (run->opt.common.verbose)
			say("domain cards name the process through connect notifications (%s)",
			    why.msg);
	}
	trace_timing_mark("egress: connection attribution");
	return 0;
}

/* Before the agent runs: its exec backstop (every approval must reach it), and the deny
 * rules' files by identity. */
static int start_exec_checks(struct run *run, struct cl_error *err)
{
	struct backstops_options bo = {
	        .none = run->opt.no_backstop,
	        .require = run->opt.require_backstop,
	        .verbose = run->opt.common.verbose,
	};
	struct cl_error why = {""};
	int r;

	r = backstops_open(&bo, &why, &run->backstops);
	if (r < 0)
		return cl_error_set(err, r, "run: %s", why.msg);
	r = deny_ids_new(run->config, &run->deny_ids, &why);
	if (r < 0)
		return cl_error_set(err, r, "run: %s", why.msg);
	if (deny_ids_truncated(run->deny_ids))
		say("warning: exec.deny's path rules name more than %d files: the others are "
		    "denied by name only, not as hard links",
		    DENY_IDS_MAX);
	trace_timing_mark("deny rules' files");
	return 0;
}

/* DIR created if missing. IN_USE: the directory this run reads; for the default one beside
 * it, a directory we may not create (a HOME that is not ours) needs no word: the agent, with
 * our uid, may not either. */
static void make_one_config_dir(const char *dir, bool explicit, bool in_use)
{
	int r;

	if (!dir)
		return;
	if (!config_base_exists(dir, explicit))
		say("warning: %s cannot be created (its base directory is missing): the agent "
		    "could create a config there",
		    dir);
	else if ((r = dirs_make(dir, 0700)) < 0 && (in_use || (r != -EACCES && r != -EPERM)))
		say("warning: cannot create %s (%s): the agent could create a config there", dir,
		    strerror(-r));
}

/* The agent may not rewrite the policy it runs under (nor the next run's, with or without
 * --config-dir): a config directory must exist to be mounted read-only over, so an absent one
 * is created. */
static void make_config_dir(struct run *run)
{
	_cleanup_free_ char *dflt = NULL;
	struct cl_error why = {""};
	char a[PATH_MAX], b[PATH_MAX];

	make_one_config_dir(run->config_dir, run->opt.common.config_dir != NULL, true);
	if (!run->opt.common.config_dir ||
	    config_files_dir(NULL, getenv("XDG_CONFIG_HOME"), getenv("HOME"), &dflt, &why) < 0)
		return;
	make_one_config_dir(dflt, false, false);
	/* One we cannot reach (a HOME that is not ours) the agent cannot reach either. */
	if (!is_dir(dflt) || (run->config_dir && realpath(run->config_dir, a) &&
	                      realpath(dflt, b) && strcmp(a, b) == 0))
		return;
	run->default_config_dir = TAKE_PTR(dflt);
}

/* Our own executable, which the next run starts outside the sandbox: renamed over or
 * rewritten, it would run the agent's code unconfined. */
static void find_exe(struct run *run)
{
	run->exe = realpath("/proc/self/exe", NULL);
	if (!run->exe)
		say("warning: cannot resolve /proc/self/exe (%m): the agent could replace "
		    "this program");
}

/* The sandbox, with the agent forked in it: its environment scrubbed, its confinement
 * planned, the config directory read-only, the API files and the audit log hidden. */
static int start_sandbox(struct run *run, struct cl_error *err)
{
	_cleanup_(env_scrub_freep) char **envp = NULL;
	_cleanup_(sandbox_confine_freep) struct sandbox_confine *confine = NULL;
	_cleanup_free_ char *run_dir = NULL;
	struct cl_error why = {""};
	const char *readonly[5] = {NULL};
	/* The CLI's API files and the dashboard secret: the agent must not approve its own
	 * asks. The audit log: every run's commands, with whatever secrets they carried. */
	const char *hidden[3] = {NULL};
	size_t n_readonly = 0, n_hidden = 0;
	const char *pids_why = NULL;
	bool pids_required = false;
	struct termios modes;
	struct winsize size;
	int r;

	if (api_info_dir(&run_dir) >= 0 && strrchr(run_dir, '/'))
		*strrchr(run_dir, '/') = '\0'; /* …/cloister: the api files and the secret */
	hidden[n_hidden++] = run_dir;
	{
		struct run_confine_options co = {
		        .keep_env = run->opt.keep_env,
		        .n_keep_env = run->opt.n_keep_env,
		        .host_network = run->opt.net_host,
		        .allow_abstract_sockets = run->opt.allow_abstract_sockets,
		        .config = run->opt.test_no_fs_confinement ? NULL : run->config,
		        .require_fs_confinement = run->opt.require_fs_confinement,
		        .test_no_fs_mounts = run->opt.test_no_fs_mounts,
		        .nested_sandbox = run->opt.allow_nested_sandbox,
		        .verbose = run->opt.common.verbose,
		        .config_dir = run->config_dir,
		        .default_config_dir = run->default_config_dir,
		        .exe = run->exe,
		        .audit_dir = run->audit_dir,
		        .run_dir = run_dir,
		        .agent_argv = run->opt.agent_argv,
		};

		r = run_confine_environ(&co, &why, &envp);
		if (r >= 0)
			r = run_confine_plan(&co, &why, &confine);
		if (r < 0)
			return cl_error_set(err, r, "run: %s", why.msg);
		trace_timing_mark("confinement plan (sockets, environment)");
	}
	if (terminal_relays(run->terminal))
		terminal_agent_modes(run->terminal, &modes, &size);
	if (run->config_dir && contains_cwd(run->config_dir))
		say("warning: the config directory %s holds the working directory, so it stays "
		    "writable for the agent",
		    run->config_dir);
	else if (run->config_dir)
		readonly[n_readonly++] = run->config_dir;
	if (run->default_config_dir && contains_cwd(run->default_config_dir))
		say("warning: the default config directory %s holds the working directory, so it "
		    "stays writable for the agent",
		    run->default_config_dir);
	else if (run->default_config_dir)
		readonly[n_readonly++] = run->default_config_dir;
	if (run->exe)
		readonly[n_readonly++] = run->exe;
	if (run->audit_dir && contains_cwd(run->audit_dir)) {
		say("warning: the audit log's directory %s holds the working directory, so it "
		    "stays readable for the agent",
		    run->audit_dir);
		readonly[n_readonly++] = run->audit_dir;
	} else if (run->audit_dir) {
		hidden[n_hidden++] = run->audit_dir;
	}
	/* The task limit: --pids-max, else the config's (the built-in one's), else ours. One a
	 * person asked for is held or the run refused; the default may only be said missing. */
	{
		const struct config_scalar *at = &run->config->limits.pids_max_at;

		run->pids_max = at->text ? run->config->limits.pids_max : RUN_PIDS_MAX_DEFAULT;
		pids_required = at->text && at->origin.layer != CONFIG_LAYER_BUILTIN;
		if (run->opt.pids_max_set) {
			run->pids_max = run->opt.pids_max;
			pids_required = true;
		}
	}
	{
		struct sandbox_opts so = {
		        .argv = run->opt.agent_argv,
		        .envp = envp,
		        .cwd = NULL,
		        .name = run->sandbox_name,
		        .pty = terminal_relays(run->terminal),
		        .pty_termios = &modes,
		        .pty_winsize = &size,
		        .userns = SANDBOX_USERNS_AUTO,
		        .install_filter = install_filter,
		        .install_filter_userdata = run,
		        .cgroup_optional = geteuid() != 0,
		        .pids_max = run->pids_max,
		        .pids_max_required = pids_required,
		        .oom_score_adj = RUN_OOM_SCORE_ADJ,
		        .readonly_paths = readonly,
		        .hidden_paths = hidden,
		        .confine = confine,
		        .share_network = run->opt.net_host,
		        .setup_network = setup_network,
		        .setup_network_userdata = run,
		        .agent_forked = backstops_ptrace(run->backstops) ? agent_forked : NULL,
		        .agent_forked_userdata = run,
		};

		r = sandbox_start(&so, &run->sandbox, &why);
		if (r < 0)
			return cl_error_set(err, r, "run: %s", why.msg);
		if (run->pids_max && !sandbox_pids_limit(run->sandbox, &pids_why))
			say("warning: the sandbox's tasks are not limited (a fork bomb takes the "
			    "machine's pids): %s",
			    pids_why ? pids_why : "no mechanism");
		run->fs_sweep = fs_confine_take_sweep(sandbox_confine_fs(confine));
	}
	trace_timing_mark("sandbox started (agent forked)");
	return 0;
}

/* The running sandbox watched: its terminal relayed (and prompted on), its backstop told of
 * its cgroup, its execs guarded in its own view, its status and our signals on the loop. */
static int watch_sandbox(struct run *run, struct cl_error *err)
{
	struct terminal_options to = {
	        .ask = run->opt.ask == ASK_AUTO || run->opt.ask == ASK_TTY,
	        .ask_if_relayed = run->opt.ask == ASK_AUTO,
	        .ask_tty_path = run->opt.ask_tty_path,
	        .pause = pause_sandbox,
	        .userdata = run,
	        .fallback = exec_security_to_string(run->config->exec.ask_fallback),
	};
	struct cl_error why = {""};
	const struct web *web = frontend_web(run->fe);
	char status_url[64];
	struct agent_note_ttys ttys = {0};
	bool pids_polls = false;
	int root_fd, mountinfo_fd, master;
	sigset_t sigs;
	int r;

	/* --ask web: the terminal's title says when asks wait, and where to answer them. */
	if (run->opt.ask == ASK_WEB && web && web_approval_port(web)) {
		snprintf(status_url, sizeof(status_url), "http://127.0.0.1:%u",
		         web_approval_port(web));
		to.status_url = status_url;
	}
	master = terminal_relays(run->terminal) ? sandbox_take_pty_master(run->sandbox) : -1;
	/* The agent's pty is the one terminal a refused process's reason line may go to. */
	if (master >= 0)
		(void)agent_note_add_pty(master, &ttys);
	r = terminal_start(run->terminal, run->loop, run->approvals, master, &to, &why);
	if (r < 0)
		return cl_error_set(err, r, "run: %s", why.msg);
	trace_timing_mark("terminal relay");
	r = backstops_watch(run->backstops, run->loop, run->approvals,
	                    sandbox_cgroup_id(run->sandbox), run->sandbox_name,
	                    run->opt.common.project, &why);
	if (r < 0)
		return cl_error_set(err, r, "run: %s", why.msg);
	r = sandbox_take_view(run->sandbox, &root_fd, &mountinfo_fd);
	if (r >= 0)
		r = exec_view_new(root_fd, mountinfo_fd, &run->view);
	if (r < 0)
		return cl_error_set(err, r, "run: the sandbox's view: %s", strerror(-r));
	{
		struct exec_guard_config gc = {
		        .name = run->sandbox_name,
		        .project = run->opt.common.project,
		        .config = run->config,
		        .backstop = backstops_ebpf(run->backstops),
		        .cgroup_id = sandbox_cgroup_id(run->sandbox),
		        .ptrace_backstop = backstops_ptrace(run->backstops),
		        .view = run->view,
		        /* The filter refuses every way to another root (see filter.h). */
		        .fixed_root = !run->opt.allow_nested_sandbox,
		        .deny_ids = run->deny_ids,
		        .verbose = run->opt.common.verbose,
		        .quiet_to_agent = run->opt.quiet_to_agent,
		        .ttys = ttys,
		        .decisions_dir = run->config_dir,
		};

		r = exec_guard_new(run->loop, run->approvals,
		                   sandbox_take_listener_fd(run->sandbox), &gc, &run->guard);
		if (r < 0)
			return cl_error_set(err, r, "run: the exec guard: %s", strerror(-r));
	}
	if (writes_watched(run)) {
		r = start_write_ask(run, &ttys);
		if (r < 0)
			return cl_error_set(err, r, "run: the ask for writes: %s", strerror(-r));
	}
	r = loop_add_fd(run->loop, sandbox_status_fd(run->sandbox), EPOLLIN, on_sandbox_status,
	                run);
	if (r >= 0 && sandbox_pids_events_fd(run->sandbox, &pids_polls) >= 0)
		r = pids_polls ? loop_add_fd(run->loop, sandbox_pids_events_fd(run->sandbox, NULL),
		                             EPOLLPRI, on_pids_event, run)
		               : loop_add_timer(run->loop, loop_now_ms() + 1000, on_pids_timer, run,
		                                &run->pids_timer);
	if (r >= 0) {
		frontend_ending_signals(&sigs);
		sigaddset(&sigs, SIGQUIT);
		sigaddset(&sigs, SIGTSTP);
		sigaddset(&sigs, SIGWINCH);
		sigaddset(&sigs, SIGCONT);
		r = loop_add_signals(run->loop, &sigs, on_signal, run);
	}
	if (r < 0)
		return cl_error_set(err, r, "run: the event loop: %s", strerror(-r));
	trace_timing_mark("exec guard, loop set up");
	return 0;
}

/* What -v and a terminal are told once the agent runs. */
static void say_started(struct run *run)
{
	const struct web *web = frontend_web(run->fe);

	if (run->opt.common.verbose) {
		const char *pids = sandbox_pids_limit(run->sandbox, NULL);

		say("sandbox \"%s\": cgroup %s", run->sandbox_name,
		    sandbox_cgroup_path(run->sandbox) ? sandbox_cgroup_path(run->sandbox)
		                                      : "(none)");
		if (pids)
			say("sandbox \"%s\": at most %" PRIu64 " tasks (%s)", run->sandbox_name,
			    run->pids_max, pids);
		say("seccomp: SYNC_WAKE_UP %s, WAIT_KILLABLE_RECV %s",
		    notifier_sync_wake_up(exec_guard_notifier(run->guard)) ? "on" : "unavailable",
		    notifier_filter_flags_supported(SECCOMP_FILTER_FLAG_NEW_LISTENER |
		                                    SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV) == 1
		            ? "on"
		            : "unavailable");
	}
	if (run->opt.common.verbose || isatty(STDERR_FILENO))
		say("sandbox \"%s\": execs decided by policy; backstop: %s; network: %s; "
		    "asks: %s",
		    run->sandbox_name, backstops_mode(run->backstops),
		    !run->net_ready     ? "none"
		    : run->opt.net_host ? "the host's, TCP and DNS through the proxy (eBPF)"
		                        : "through the proxy, by domain policy",
		    terminal_asks(run->terminal)
		            ? (run->opt.ask_tty_path ? run->opt.ask_tty_path : "this terminal")
		    : web && run->opt.ask == ASK_WEB ? "the dashboard and the CLI client"
		    : web                            ? "an open dashboard, else exec.ask_fallback"
		                                     : "nobody (exec.ask_fallback decides)");
}

/* Everything up to the agent running; ERR says what failed, as printed after PROG ": ". */
static int start(struct run *run, struct cl_error *err)
{
	int r;

	r = start_frontend(run, err);
	if (r >= 0)
		r = start_egress(run, err);
	if (r >= 0)
		r = start_exec_checks(run, err);
	if (r < 0)
		return r;
	make_config_dir(run);
	find_exe(run);
	r = terminal_open(&run->terminal);
	if (r < 0)
		return cl_error_set(err, r, "run: the terminal: %s", strerror(-r));
	r = start_sandbox(run, err);
	if (r >= 0)
		r = watch_sandbox(run, err);
	if (r < 0)
		return r;
	say_started(run);
	return 0;
}

/* Said even with -q: a file of the person's project moved, or one to look at. */
static void report_swept(void *userdata, enum fs_sweep_what what, const char *path,
                         const char *moved_to, int r)
{
	const char *why = what == FS_SWEEP_GIT      ? "git runs it on the host"
	                  : what == FS_SWEEP_HIDDEN ? "it is hidden (fs.hide)"
	                                            : "it is protected (fs.protect)";
	bool quiet = say_quiet();

	say_set_quiet(false);
	if (what == FS_SWEEP_UNCHECKED)
		say("warning: %s was not checked for a .git of the agent's: %s; check it before "
		    "you run git there",
		    path, r == -ELOOP ? "too deep" : strerror(-r));
	else if (r < 0)
		say("warning: the agent made or changed %s (%s), and it could not be moved aside: "
		    "%s; check it before anything runs it",
		    path, why, strerror(-r));
	else if (what == FS_SWEEP_GIT)
		say("the agent made or changed %s (%s): moved to %s; check it before you use it",
		    path, why, moved_to);
	else
		say("the agent created %s, which is %s: moved to %s; check it before you use it",
		    path, what == FS_SWEEP_HIDDEN ? "hidden (fs.hide)" : "protected (fs.protect)",
		    moved_to);
	say_set_quiet(quiet);
}

static void teardown(struct run *run)
{
	if (run->approvals && run->sandbox_name)
		approvals_cancel_sandbox(run->approvals, run->sandbox_name, NULL);
	/* The guard first: its thread may be reading an open for the ask for writes
	 * (write_ask_read, without the loop's lock), and its free joins the thread. A thread
	 * that did not stop in time (a read waiting on a hung file system) may still come back
	 * to the write ask, the config and the view: those are then kept until we exit. */
	run->thread_left = exec_guard_free(run->guard);
	run->guard = NULL;
	if (!run->thread_left)
		write_ask_free(run->writes);
	run->writes = NULL;
	/* Before the init dies: the last reference to the sandbox's mount namespace pays for
	 * tearing it down (an RCU grace period), and that should be the init's exit, not us. */
	if (!run->thread_left)
		exec_view_free(run->view);
	run->view = NULL;
	trace_timing_mark("teardown: queue, exec guard");
	egress_free(run->egress);
	run->egress = NULL;
	connattr_free(run->connattr);
	run->connattr = NULL;
	trace_timing_mark("teardown: egress");
	terminal_stop_asking(run->terminal);
	frontend_free(run->fe);
	run->fe = NULL;
	run->approvals = NULL;
	trace_timing_mark("teardown: front end");
	/* A refusal just before the end, not yet read from the loop. */
	check_pids_limit(run);
	if (run->sandbox && sandbox_pids_events_fd(run->sandbox, NULL) >= 0)
		(void)loop_del_fd(run->loop, sandbox_pids_events_fd(run->sandbox, NULL));
	if (run->pids_timer)
		loop_cancel_timer(run->loop, run->pids_timer);
	run->pids_timer = NULL;
	sandbox_free(run->sandbox);
	trace_timing_mark("teardown: sandbox (kill, cgroup)");
	/* The agent is gone: what it created at a protected name is moved aside. */
	fs_sweep_run(run->fs_sweep, report_swept, run);
	fs_sweep_free(run->fs_sweep);
	/* After the sandbox: its pty is closed, what it wrote last is read to the end. */
	terminal_free(run->terminal);
	trace_timing_mark("teardown: terminal");
	backstops_free(run->backstops);
	trace_timing_mark("teardown: backstop detach");
	deny_ids_free(run->deny_ids);
	loop_free(run->loop);
	if (!run->thread_left)
		config_free(run->config);
	run->config = NULL;
	free(run->sandbox_name);
	free(run->config_dir);
	free(run->default_config_dir);
	free(run->audit_dir);
	free(run->exe);
}

/* The agent's own files and the worktree (agent_files.h): the person named them, so the agent
 * runs its own parts and what it builds without asks, as long as the built-in allow list is
 * in effect. Deny rules still win. */
static int allow_agent_files(struct run *run)
{
	struct agent_files files;
	_cleanup_free_ char *cwd = NULL, *home = NULL;
	bool builtin_list = false;
	int r;

	/* Part of the built-in defaults: a config that writes its own exec.allow list (instead
	 * of the built-in's) decides about these too. */
	for (size_t i = 0; i < run->config->exec.allow.n && !builtin_list; i++)
		builtin_list =
		        run->config->exec.allow.items[i].origin.layer == CONFIG_LAYER_BUILTIN;
	if (!builtin_list)
		return 0;
	cwd = realpath(".", NULL);
	home = getenv("HOME") ? realpath(getenv("HOME"), NULL) : NULL;
	r = agent_files_find(run->opt.agent_argv[0], getenv("PATH"), &files);
	if (r < 0)
		return r;
	for (size_t i = 0; i < files.n && r >= 0; i++) {
		r = config_allow_exec_tree(run->config, files.paths[i], "the agent");
		if (r == 0 && run->opt.common.verbose)
			say("allowed for this run: %s (the agent's own)", files.paths[i]);
	}
	agent_files_done(&files);
	if (r < 0)
		return r == -EINVAL ? 0 : r;
	if (cwd && agent_files_worktree_ok(cwd, home)) {
		r = config_allow_exec_tree(run->config, cwd, "the worktree");
		if (r == 0 && run->opt.common.verbose)
			say("allowed for this run: programs under %s (the worktree)", cwd);
	}
	return r == -EINVAL ? 0 : r;
}

int run_main(int argc, char **argv)
{
	struct run run = {0};
	struct cl_error err = {""};
	int r;

	trace_timing_init();
	r = parse_options(argc, argv, &run.opt);
	if (r != 0)
		return r > 0 ? 0 : CLI_EXIT_USAGE;
	{
		/* The ending signals wait for the loop's signalfd from now on. One that came
		 * during start-up was lost (a background job of a non-interactive shell ignores
		 * SIGINT, and an ignored signal that is not blocked is discarded) or ended us
		 * before the sandbox could be cleaned up. */
		sigset_t ending;

		frontend_ending_signals(&ending);
		sigaddset(&ending, SIGQUIT);
		/* The terminal's too: a resize or a continue during start-up must reach the relay
		 * (ignored by default, they would be lost), a Ctrl-Z the agent. */
		sigaddset(&ending, SIGTSTP);
		sigaddset(&ending, SIGWINCH);
		sigaddset(&ending, SIGCONT);
		sigprocmask(SIG_BLOCK, &ending, NULL);
	}
	r = frontend_load_config(&run.opt.common, run.opt.lenient, &err, &run.config,
	                         &run.config_dir);
	if (r < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return CLI_EXIT_CONFIG;
	}
	trace_timing_mark("options, config");
	run.sandbox_name = run.opt.common.name ? strdup(run.opt.common.name) : default_name();
	if (!run.sandbox_name) {
		teardown(&run);
		return RUN_EXIT_FAILED;
	}

	r = allow_agent_files(&run);
	if (r < 0) {
		fprintf(stderr, PROG ": run: %s\n", strerror(-r));
		teardown(&run);
		return RUN_EXIT_FAILED;
	}

	r = start(&run, &err);
	if (r < 0) {
		if (err.msg[0])
			fprintf(stderr, PROG ": %s\n", err.msg);
		else
			fprintf(stderr, PROG ": run: cannot start the sandbox: %s\n", strerror(-r));
		teardown(&run);
		return RUN_EXIT_FAILED;
	}
	r = loop_run(run.loop);
	trace_timing_mark("the agent ran (event loop)");
	trace_exec_report();
	if (r < 0)
		say("run: event loop failed: %s", strerror(-r));
	if (run.opt.common.verbose)
		say("%llu exec notifications handled; the event loop woke %llu times",
		    (unsigned long long)(run.guard ? exec_guard_notifications(run.guard) : 0),
		    (unsigned long long)loop_wakeups(run.loop));
	teardown(&run);
	trace_timing_mark("teardown");
	if (!run.exited)
		return RUN_EXIT_FAILED;
	return run.exit_code;
}
