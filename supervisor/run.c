/* `run`: a sandbox of our own around the agent, its exec interception (exec_guard.h), the
 * terminal approver and the queue's surroundings (hub.h: audit log, dashboard, APIs), wired
 * into one event loop. Exits with the agent's status. */
#include "supervisor/run.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "bpf/backstop.h"
#include "notifier/filter.h"
#include "notifier/notify.h"
#include "notifier/view.h"
#include "base/cleanup.h"
#include "base/error.h"
#include "supervisor/web/api_info.h"
#include "supervisor/approval/audit.h"
#include "supervisor/approval/audit_log.h"
#include "supervisor/approval/audit_limit.h"
#include "supervisor/cli_policy.h"
#include "supervisor/policy/config.h"
#include "supervisor/policy/config_files.h"
#include "supervisor/exec/deny_ids.h"
#include "base/loop.h"
#include "base/dirs.h"
#include "base/say.h"
#include "supervisor/tty/pty_relay.h"
#include "supervisor/approval/queue.h"
#include "supervisor/sandbox/run_confine.h"
#include "supervisor/sandbox/sandbox.h"
#include "supervisor/tty/tty_approver.h"
#include "supervisor/egress/egress.h"
#include "supervisor/policy/env_scrub.h"
#include "supervisor/exec/exec_guard.h"
#include "supervisor/approval/approvals.h"
#include "supervisor/frontend.h"
#include "supervisor/approval/labels.h"
#include "supervisor/approval/metrics.h"
#include "supervisor/egress/peer_listeners.h"
#include "supervisor/exec/ptrace_backstop.h"
#include "base/trace_timing.h"
#include "supervisor/web/web.h"
#include "supervisor/approval/worktree.h"

/* After passing SIGTERM/SIGHUP on, how long the agent has before everything is killed. */
#define TERMINATE_GRACE_MS 5000

enum ask_mode {
	ASK_AUTO, /* the terminal when there is one, and the dashboard */
	ASK_TTY,
	ASK_WEB, /* the dashboard and the CLI client: asks wait for them until the timeout */
	ASK_NONE,
};

struct options {
	const char *config_dir;
	const char *project;
	const char *name;
	const char *ask_tty_path;
	enum ask_mode ask;
	uint64_t ask_timeout_ms;
	bool lenient;
	bool verbose;
	bool require_backstop;
	bool no_backstop;          /* run without an exec backstop: the user accepts the race */
	bool allow_nested_sandbox; /* the agent may make user and mount namespaces of its own */
	bool no_web;
	const char *listen[3]; /* approval, tokens, request: "ADDR:PORT" */
	const char *executor;  /* "HOST:PORT" of a `cloister-supervisor executor`, or NULL */
	bool net_none;         /* --net none: loopback only, no egress at all */
	bool net_host;         /* --net host: the host's network, eBPF redirect on the cgroup */
	bool real_ip;          /* --real-ip: the agent's DNS gets real addresses */
	const char *hosts_file;
	const char *listen_proxy;               /* the CONNECT proxy, off by default for run */
	const char *keep_env[RUN_KEEP_ENV_MAX]; /* --keep-env NAME */
	size_t n_keep_env;
	bool allow_abstract_sockets;     /* --net host without Landlock's abstract socket scope */
	int64_t audit_rate, audit_burst; /* hub_options' */
	char **agent_argv;
};

struct run {
	struct options opt;
	struct config *config;
	char *sandbox_name;
	char *config_dir; /* read-only inside the sandbox, like the audit log's directory */
	char *audit_dir;  /* read-only inside the sandbox */
	struct loop *loop;
	struct hub *hub; /* the queue, audit log, dashboard and APIs */
	struct sandbox *sandbox;
	struct exec_guard *guard; /* its execs */
	struct egress *egress;    /* its connections */
	bool net_ready;           /* the netns got its rules and listeners */
	struct backstop *backstop;
	uint64_t cgroup_id;
	struct ptrace_backstop *ptrace; /* the backstop without root (or without eBPF) */
	struct exec_view *view;         /* the sandbox's own view, for the identity check */
	struct deny_ids *deny_ids;      /* deny rules' files, by identity */
	struct approvals *approvals;    /* the hub's */
	struct pty_relay *relay; /* the user's terminal and the agent's pty, when we have one */
	struct tty_approver *tty;
	bool tty_watched;
	struct loop_timer *tty_timer;
	struct loop_timer *terminate;

	bool paused; /* by the dashboard's kill switch */
	uint64_t started_wall_ms;

	bool terminating;  /* SIGTERM or SIGHUP came: asks are denied without asking */
	int ending_signal; /* which one: its acknowledgement cancels the asks */
	bool exited;
	int exit_code;
};

/* ---- the terminal approver ---------------------------------------------------------------- */

/* Who can answer on this side: the terminal while it is there (dashboards count themselves). */
static void update_approvers(struct run *run)
{
	approvals_set_approvers(run->approvals, APPROVER_TTY,
	                        run->tty && !tty_approver_gone(run->tty) ? 1 : 0);
}

/* Watch the terminal only while a prompt waits: otherwise its input belongs to the agent. */
static void tty_update_watch(struct run *run);

/* Up to REDIRECT_MAX_REFUSED ports: leave room for ours after the scan's. */
#define MAX_REFUSED 240

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
static int refused_ports(struct run *run, uint16_t *ports, size_t *ret_n)
{
	const struct web *web = hub_web(run->hub);
	uint16_t keep[2] = {web ? web_request_port(web) : 0,
	                    (uint16_t)egress_connect_port(run->egress)};
	uint16_t own[3] = {web ? web_approval_port(web) : 0, web ? web_tokens_port(web) : 0,
	                   hub_executor_port(run->hub)};
	size_t n = 0, k = 0, dropped = 0;
	int r;

	r = peer_listeners_scan("/proc", PEER_LISTENERS_EXE, geteuid(), ports, MAX_REFUSED, &n,
	                        &dropped);
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
	*ret_n = k;
	return 0;
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
		uint16_t refused[MAX_REFUSED + 3];
		size_t n_refused = 0;

		r = refused_ports(run, refused, &n_refused);
		if (r < 0)
			return cl_error_set(err, r, "--net host: listing Cloister's listeners: %s",
			                    strerror(-r));
		if (run->opt.verbose)
			say("--net host: %zu of Cloister's ports refused to the agent", n_refused);
		r = egress_attach_cgroup(run->egress, cgroup_fd, run->sandbox_name,
		                         run->opt.project, refused, n_refused, &why);
		if (r < 0)
			return cl_error_set(err, r, "--net host: %s", why.msg);
		run->net_ready = true;
		return 0;
	}
	r = egress_attach_netns(run->egress, netns_fd, run->sandbox_name, run->opt.project, &why);
	if (r < 0) {
		/* Without rules the netns still has no way out: fail closed, say so. */
		say("warning: no network for the agent: %s", why.msg);
		return 0;
	}
	run->net_ready = true;
	return 0;
}

/* After every drain: the terminal prompt follows the queue. */
static void on_drained(void *userdata)
{
	struct run *run = userdata;

	if (run->tty) {
		tty_approver_sync(run->tty, approvals_queue(run->approvals), loop_now_ms());
		tty_update_watch(run);
	}
}

static const struct approvals_observer_ops tty_observer_ops = {.drained = on_drained};

static void tty_apply(struct run *run, int r, const struct tty_decision *d)
{
	if (r == TTY_APPROVER_DECIDED) {
		struct approval_decision ad = {
		        .allow = d->allow,
		        .scope = d->scope,
		        .by = "tty",
		        .reason = d->allow ? NULL : "Command denied by user",
		};

		/* An answer to a prompt of an item decided meanwhile is harmless. */
		(void)approvals_decide(run->approvals, d->id, &ad, NULL);
	} else if (r == TTY_APPROVER_GONE) {
		say("the terminal is gone; only the dashboard can answer from now on");
		update_approvers(run);
	}
	/* The prompt follows even when nothing changed (a key that showed the details). */
	on_drained(run);
}

static int on_tty_readable(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct run *run = userdata;
	struct tty_decision d;

	tty_apply(run,
	          tty_approver_on_readable(run->tty, approvals_queue(run->approvals), loop_now_ms(),
	                                   &d),
	          &d);
	return 0;
}

/* Keys the relay read while a prompt was up. */
static void on_relay_keys(void *userdata, const char *keys, size_t n)
{
	struct run *run = userdata;
	struct tty_decision d;

	if (run->tty)
		tty_apply(run,
		          tty_approver_on_keys(run->tty, approvals_queue(run->approvals),
		                               loop_now_ms(), keys, n, &d),
		          &d);
}

static void on_relay_gone(void *userdata)
{
	struct run *run = userdata;

	if (run->tty && !tty_approver_gone(run->tty)) {
		tty_approver_set_gone(run->tty);
		tty_apply(run, TTY_APPROVER_GONE, NULL);
	}
}

static int on_tty_timer(struct loop *loop, void *userdata)
{
	struct run *run = userdata;

	run->tty_timer = NULL;
	if (run->tty)
		tty_approver_tick(run->tty, loop_now_ms());
	tty_update_watch(run);
	return 0;
}

static void tty_update_watch(struct run *run)
{
	bool want = run->tty && tty_approver_fd(run->tty) >= 0 && tty_approver_active(run->tty) &&
	            !tty_approver_gone(run->tty);
	uint64_t next = run->tty ? tty_approver_next_deadline(run->tty) : UINT64_MAX;

	/* The prompt's key guard. */
	if (run->tty_timer) {
		loop_cancel_timer(run->loop, run->tty_timer);
		run->tty_timer = NULL;
	}
	if (next != UINT64_MAX)
		(void)loop_add_timer(run->loop, next, on_tty_timer, run, &run->tty_timer);
	if (want == run->tty_watched)
		return;
	if (want)
		run->tty_watched = loop_add_fd(run->loop, tty_approver_fd(run->tty), EPOLLIN,
		                               on_tty_readable, run) == 0;
	else
		run->tty_watched = loop_del_fd(run->loop, tty_approver_fd(run->tty)) < 0;
}

/* ---- the backstop's reports --------------------------------------------------------------- */

static int on_backstop_event(const struct backstop_event *ev, void *userdata)
{
	struct run *run = userdata;
	const char *what = ev->action == BACKSTOP_DENIED   ? "refused"
	                   : ev->action == BACKSTOP_KILLED ? "killed"
	                                                   : "FAILED to kill";
	char reason[256];
	struct audit_record rec = {
	        .time_ms = audit_log_now_ms(),
	        .sandbox = run->sandbox_name,
	        .project = run->opt.project,
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
	hub_audit(run->hub, &rec);
	return 0;
}

static int on_backstop(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct run *run = userdata;

	backstop_consume_events(run->backstop, on_backstop_event, run);
	return 0;
}

static int on_ptrace_backstop(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct run *run = userdata;

	ptrace_backstop_consume_events(run->ptrace, on_backstop_event, run);
	if (events & (EPOLLHUP | EPOLLERR))
		loop_del_fd(loop, fd); /* the tracer is gone, and with it every traced process */
	return 0;
}

/* sandbox_start's hook: the agent waits for us; the ptrace backstop seizes it first. */
static int agent_forked(void *userdata, pid_t agent, struct cl_error *err)
{
	struct run *run = userdata;
	struct cl_error why = {""};
	int r;

	if (!run->ptrace)
		return 0;
	r = ptrace_backstop_seize(run->ptrace, agent, &why);
	if (r < 0)
		return cl_error_set(
		        err, r,
		        "no exec backstop (%s%s): refusing to start; --no-backstop runs "
		        "without one, accepting that a racing agent may run a file other "
		        "than the one approved",
		        why.msg, r == -EPERM ? "; is something tracing it already?" : "");
	return 0;
}

/* ---- the sandbox ------------------------------------------------------------------------- */

/* The agent is ending: what it waits for is cancelled. */
static void cancel_for_termination(struct run *run)
{
	approvals_cancel_sandbox(run->approvals, run->sandbox_name,
	                         "the agent is being terminated");
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

	if (!run->terminating && !own_tty && !(run->tty && tty_approver_active(run->tty)))
		(void)pty_relay_suspend(run->relay, sig); /* returns once `fg` (or `bg`) came */
	/* The agent goes on in its pty's foreground: that terminal is its own. */
	sandbox_continue(run->sandbox, true);
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
		if (run->relay)
			pty_relay_signal(run->relay, sig);
		return 0;
	}
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
		run->terminating = true;
		run->ending_signal = sig;
		if (run->guard)
			exec_guard_set_terminating(run->guard, true);
		if (run->tty)
			tty_approver_unfreeze(run->tty);
		/* Paused from the dashboard: it must run to end gracefully. */
		if (run->paused && sandbox_pause(run->sandbox, false) >= 0)
			run->paused = false;
	}
	if (sandbox_signal(run->sandbox, sig) < 0 && ending)
		cancel_for_termination(run);
	if ((sig == SIGTERM || sig == SIGHUP) && !run->terminate)
		loop_add_timer(loop, loop_now_ms() + TERMINATE_GRACE_MS, on_terminate_timeout, run,
		               &run->terminate);
	return 0;
}

static int install_filter(void *userdata, int *ret_listener_fd)
{
	const struct run *run = userdata;
	/* With egress, connects are notified too: to name the process on a domain card. */
	struct notifier_filter_opts fo = {
	        .notify_connect = run->egress != NULL,
	        .refuse_untraced = run->ptrace != NULL,
	        .allow_nested_sandbox = run->opt.allow_nested_sandbox,
	};

	return notifier_filter_install(&fo, NULL, ret_listener_fd);
}

static int who_connected(void *userdata, const struct sockaddr_storage *dst,
                         struct connect_target *ret)
{
	const struct run *run = userdata;

	return run->guard ? exec_guard_who_connected(run->guard, dst, ret) : -ENOENT;
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
		run->terminating = true;
		if (run->guard)
			exec_guard_set_terminating(run->guard, true);
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
	        .project = run->opt.project,
	        .state = run->exited   ? "stopped"
	                 : run->paused ? "paused"
	                               : "running",
	        .pid = sandbox_init_pid(run->sandbox),
	        .started_ms = run->started_wall_ms,
	};
	return 1;
}

static const struct hub_owner_ops run_owner_ops = {
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
	      "  --audit-rate N|off   automatic audit lines a second per sandbox (default 100;\n"
	      "                       over it they are counted, not written)\n"
	      "  --audit-burst N      ... and at once (default 1000)\n"
	      "  --lenient            skip invalid regexes in the config with a warning\n"
	      "  -v, --verbose        say what is allowed, and which kernel features are in use\n"
	      "  -q, --quiet          print nothing of our own (denials included)\n",
	      out);
}

static int parse_options(int argc, char **argv, struct options *o)
{
	enum {
		OPT_CONFIG_DIR = 256,
		OPT_PROJECT,
		OPT_NAME,
		OPT_ASK,
		OPT_ASK_TTY,
		OPT_TIMEOUT,
		OPT_REQUIRE_BACKSTOP,
		OPT_NO_BACKSTOP,
		OPT_ALLOW_NESTED_SANDBOX,
		OPT_LENIENT,
		OPT_LISTEN_APPROVAL,
		OPT_LISTEN_TOKENS,
		OPT_LISTEN_REQUEST,
		OPT_NO_WEB,
		OPT_EXECUTOR,
		OPT_NET,
		OPT_REAL_IP,
		OPT_HOSTS,
		OPT_LISTEN_PROXY,
		OPT_KEEP_ENV,
		OPT_ALLOW_ABSTRACT_SOCKETS,
		OPT_AUDIT_RATE,
		OPT_AUDIT_BURST,
	};
	static const struct option longopts[] = {
	        {"config-dir", required_argument, NULL, OPT_CONFIG_DIR},
	        {"project", required_argument, NULL, OPT_PROJECT},
	        {"name", required_argument, NULL, OPT_NAME},
	        {"ask", required_argument, NULL, OPT_ASK},
	        {"ask-tty", required_argument, NULL, OPT_ASK_TTY},
	        {"ask-timeout", required_argument, NULL, OPT_TIMEOUT},
	        {"require-backstop", no_argument, NULL, OPT_REQUIRE_BACKSTOP},
	        {"no-backstop", no_argument, NULL, OPT_NO_BACKSTOP},
	        {"allow-nested-sandbox", no_argument, NULL, OPT_ALLOW_NESTED_SANDBOX},
	        {"lenient", no_argument, NULL, OPT_LENIENT},
	        {"listen-approval", required_argument, NULL, OPT_LISTEN_APPROVAL},
	        {"listen-tokens", required_argument, NULL, OPT_LISTEN_TOKENS},
	        {"listen-request", required_argument, NULL, OPT_LISTEN_REQUEST},
	        {"no-web", no_argument, NULL, OPT_NO_WEB},
	        {"executor", required_argument, NULL, OPT_EXECUTOR},
	        {"net", required_argument, NULL, OPT_NET},
	        {"real-ip", no_argument, NULL, OPT_REAL_IP},
	        {"hosts", required_argument, NULL, OPT_HOSTS},
	        {"listen-proxy", required_argument, NULL, OPT_LISTEN_PROXY},
	        {"keep-env", required_argument, NULL, OPT_KEEP_ENV},
	        {"allow-abstract-sockets", no_argument, NULL, OPT_ALLOW_ABSTRACT_SOCKETS},
	        {"audit-rate", required_argument, NULL, OPT_AUDIT_RATE},
	        {"audit-burst", required_argument, NULL, OPT_AUDIT_BURST},
	        {"verbose", no_argument, NULL, 'v'},
	        {"quiet", no_argument, NULL, 'q'},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	int c;

	o->ask = ASK_AUTO;
	o->ask_timeout_ms = 5 * 60 * 1000;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+vqh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_CONFIG_DIR:
			o->config_dir = optarg;
			break;
		case OPT_PROJECT:
			o->project = optarg;
			break;
		case OPT_NAME:
			o->name = optarg;
			break;
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
		case OPT_TIMEOUT:
			if (config_parse_duration(optarg, &o->ask_timeout_ms) < 0 ||
			    o->ask_timeout_ms == 0) {
				fprintf(stderr,
				        PROG
				        ": run: --ask-timeout: \"%s\" is not a duration like 30s "
				        "or 5m\n",
				        optarg);
				return -EINVAL;
			}
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
		case OPT_LISTEN_APPROVAL:
		case OPT_LISTEN_TOKENS:
		case OPT_LISTEN_REQUEST:
			o->listen[c - OPT_LISTEN_APPROVAL] = optarg;
			break;
		case OPT_NO_WEB:
			o->no_web = true;
			break;
		case OPT_EXECUTOR:
			o->executor = optarg;
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
		case OPT_HOSTS:
			o->hosts_file = optarg;
			break;
		case OPT_LISTEN_PROXY:
			o->listen_proxy = optarg;
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
		case OPT_AUDIT_RATE:
		case OPT_AUDIT_BURST:
			if (audit_limit_parse(optarg, c == OPT_AUDIT_RATE,
			                      c == OPT_AUDIT_RATE ? &o->audit_rate
			                                          : &o->audit_burst) < 0) {
				fprintf(stderr,
				        PROG ": run: --audit-%s takes a number of lines (1 to "
				             "1000000)%s, not \"%s\"\n",
				        c == OPT_AUDIT_RATE ? "rate" : "burst",
				        c == OPT_AUDIT_RATE ? " or off" : "", optarg);
				return -EINVAL;
			}
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'q':
			say_set_quiet(true);
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
	o->agent_argv = argv + optind;
	return 0;
}

/* ---- setup and teardown ------------------------------------------------------------------ */

static int load_config(struct run *run)
{
	_cleanup_free_ char *dir = NULL;
	struct config_load_options lo = {.lenient = run->opt.lenient};
	struct cl_error err = {""};
	int r;

	r = config_files_dir(run->opt.config_dir, getenv("XDG_CONFIG_HOME"), getenv("HOME"), &dir,
	                     &err);
	if (r >= 0)
		r = config_load_dir(dir, run->opt.project, &lo, &run->config, &err);
	if (r < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return CLI_EXIT_CONFIG;
	}
	for (size_t i = 0; i < run->config->n_warnings; i++)
		fprintf(stderr, PROG ": warning: %s\n", run->config->warnings[i]);
	/* A relative --config-dir is taken from here, once: the directory is created, mounted
	 * read-only for the agent and written by decisions by that one absolute name. */
	if (dir[0] != '/') {
		char cwd[PATH_MAX];
		char *abs = NULL;

		if (!getcwd(cwd, sizeof(cwd)) || asprintf(&abs, "%s/%s", cwd, dir) < 0) {
			fprintf(stderr, PROG ": --config-dir %s: cannot make it absolute: %m\n",
			        dir);
			return CLI_EXIT_CONFIG;
		}
		free(dir);
		dir = abs;
	}
	run->config_dir = TAKE_PTR(dir);
	return 0;
}

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

/* The directory the config directory may be created under: --config-dir's parent, else
 * $XDG_CONFIG_HOME or $HOME. Never create a home directory that is not there. */
static bool config_base_exists(const struct run *run)
{
	_cleanup_free_ char *parent = NULL;
	const char *base = getenv("XDG_CONFIG_HOME");
	struct stat st;

	if (run->opt.config_dir) {
		parent = strdup(run->config_dir);
		if (!parent || !strrchr(parent, '/'))
			return false;
		*strrchr(parent, '/') = '\0';
		base = parent[0] ? parent : "/";
	} else if (!base || base[0] != '/') {
		base = getenv("HOME");
	}
	return base && stat(base, &st) == 0 && S_ISDIR(st.st_mode);
}

static void setup_approver(struct run *run)
{
	struct tty_approver_config tc = {
	        .tty_path = run->opt.ask_tty_path,
	        .userdata = run,
	        .epoll_fd = -1,
	};
	int r;

	if (run->opt.ask == ASK_NONE || run->opt.ask == ASK_WEB)
		return;
	/* The terminal when there is one: ours, which the agent's output goes through. */
	if (run->opt.ask == ASK_AUTO && !(run->relay && pty_relay_has_input(run->relay)))
		return;
	if (!tc.tty_path && run->relay) {
		tc.relay = run->relay;
		/* Paused where the launcher can (not needed for safety: the agent cannot reach the
		 * prompt; it keeps the agent from running on while a person reads). */
		tc.pause = pause_sandbox;
	} else if (!tc.tty_path) {
		/* No terminal for the agent: our controlling terminal is the prompt's alone. */
		tc.tty_path = "/dev/tty";
	}
	r = tty_approver_new(&tc, &run->tty);
	if (r < 0) {
		run->tty = NULL;
		say("no terminal to ask on (%s): exec.ask_fallback (%s) decides asks", strerror(-r),
		    exec_security_to_string(run->config->exec.ask_fallback));
		return;
	}
	update_approvers(run);
}

/* say() lines for the user's terminal, while the relay owns it. */
static void say_through_relay(void *userdata, const char *line)
{
	pty_relay_notice(userdata, line);
}

static void teardown(struct run *run)
{
	if (run->approvals && run->sandbox_name)
		approvals_cancel_sandbox(run->approvals, run->sandbox_name, NULL);
	if (run->backstop && run->cgroup_id)
		backstop_remove_sandbox(run->backstop, run->cgroup_id);
	exec_guard_free(run->guard);
	run->guard = NULL;
	/* Before the init dies: the last reference to the sandbox's mount namespace pays for
	 * tearing it down (an RCU grace period), and that should be the init's exit, not us. */
	exec_view_free(run->view);
	run->view = NULL;
	trace_timing_mark("teardown: queue, exec guard");
	egress_free(run->egress);
	run->egress = NULL;
	trace_timing_mark("teardown: egress");
	if (run->approvals)
		approvals_unobserve(run->approvals, &tty_observer_ops, run);
	hub_free(run->hub);
	run->hub = NULL;
	run->approvals = NULL;
	tty_approver_free(run->tty);
	if (run->tty_timer)
		loop_cancel_timer(run->loop, run->tty_timer);
	trace_timing_mark("teardown: hub");
	sandbox_free(run->sandbox);
	trace_timing_mark("teardown: sandbox (kill, cgroup)");
	/* After the sandbox: its pty is closed, what it wrote last is read to the end. */
	say_set_sink(NULL, NULL);
	pty_relay_free(run->relay);
	run->relay = NULL;
	trace_timing_mark("teardown: terminal");
	backstop_free(run->backstop);
	ptrace_backstop_free(run->ptrace);
	trace_timing_mark("teardown: backstop detach");
	deny_ids_free(run->deny_ids);
	loop_free(run->loop);
	config_free(run->config);
	free(run->sandbox_name);
	free(run->config_dir);
	free(run->audit_dir);
}

/* Before the agent runs (every approval must reach the backstop): the eBPF backstop where it
 * loads (root), else the ptrace one; without either, no start unless --no-backstop says the
 * user accepts the race. The ptrace tracer is forked here, while we have a single thread. */
static int open_backstop(struct run *run)
{
	struct cl_error err = {""}, perr = {""};
	int r;

	if (run->opt.no_backstop) {
		say("warning: --no-backstop: no exec backstop; a racing multi-threaded agent could "
		    "run a file other than the one approved");
		return 0;
	}
	/* Only root: the eBPF backstop checks the sandbox's cgroup, which a non-root run may not
	 * get (no delegated subtree), and that is known only once the sandbox runs. */
	if (geteuid() == 0) {
		r = backstop_open(&run->backstop, &err);
		/* Loading parsed the kernel's BTF (megabytes, freed by now): give that back. */
		malloc_trim(0);
		trace_timing_mark("backstop open, load, attach");
	} else {
		r = cl_error_set(&err, -EPERM, "the eBPF backstop needs root");
	}
	if (r >= 0)
		return 0;
	run->backstop = NULL;
	if (run->opt.require_backstop) {
		fprintf(stderr, PROG ": run: no exec backstop: %s\n", err.msg);
		return -EPERM;
	}
	r = ptrace_backstop_start(&run->ptrace, &perr);
	trace_timing_mark("ptrace backstop (tracer forked)");
	if (r >= 0) {
		if (run->opt.verbose)
			say("no eBPF exec backstop (%s): the ptrace one instead", err.msg);
		return 0;
	}
	run->ptrace = NULL;
	fprintf(stderr,
	        PROG ": run: no exec backstop (%s; %s): refusing to start; --no-backstop runs "
	             "without one, accepting that a racing agent may run a file other than the "
	             "one approved\n",
	        err.msg, perr.msg);
	return -EPERM;
}

static int start(struct run *run)
{
	_cleanup_(env_scrub_freep) char **envp = NULL;
	_cleanup_(sandbox_confine_freep) struct sandbox_confine *confine = NULL;
	_cleanup_free_ char *api_dir = NULL;
	const char *run_dir = NULL;
	struct cl_error err = {""};
	sigset_t sigs;
	int r;

	r = loop_new(&run->loop);
	if (r < 0)
		return r;
	run->started_wall_ms = audit_log_now_ms();
	{
		struct hub_options ho = {
		        .config = run->config,
		        .name = run->sandbox_name,
		        .config_dir = run->config_dir,
		        .project = run->opt.project,
		        .exec_timeout_ms = run->opt.ask_timeout_ms,
		        .exec_fallback = fallback_of(run->config->exec.ask_fallback),
		        .no_web = run->opt.no_web,
		        .listen = {run->opt.listen[0], run->opt.listen[1], run->opt.listen[2]},
		        .executor = run->opt.executor,
		        .always_attended = run->opt.ask == ASK_WEB,
		        .audit_rate = run->opt.audit_rate,
		        .audit_burst = run->opt.audit_burst,
		        .verbose = run->opt.verbose,
		};

		r = hub_new(run->loop, &ho, &run_owner_ops, run, &run->hub);
		if (r < 0)
			return -EPERM; /* already said why */
		trace_timing_mark("hub (queue, audit, web)");
	}
	run->approvals = hub_approvals(run->hub);
	{
		/* /pending names the agent and the branch it works on (the worktree is our cwd). */
		char branch[LABELS_VALUE_MAX] = "";
		const char *agent = strrchr(run->opt.agent_argv[0], '/');

		(void)worktree_git_branch(".", branch, sizeof(branch));
		(void)web_set_labels(hub_web(run->hub), run->sandbox_name, branch,
		                     agent ? agent + 1 : run->opt.agent_argv[0]);
	}
	if (!run->opt.net_none) {
		const struct web *web = hub_web(run->hub);
		struct egress_config ec = {
		        .config = run->config,
		        .who = who_connected,
		        .who_userdata = run,
		        .tokens = hub_tokens(run->hub),
		        .api_ports = {web ? web_approval_port(web) : 0,
		                      web ? web_tokens_port(web) : 0},
		        .decisions_dir = run->config_dir,
		        .project = run->opt.project,
		        .connect_listen = run->opt.listen_proxy,
		        .hosts_file = run->opt.hosts_file,
		        .real_ip = run->opt.real_ip,
		        .verbose = run->opt.verbose,
		};

		r = egress_new(run->loop, run->approvals, &ec, &err, &run->egress);
		if (r < 0) {
			if (run->opt.listen_proxy || run->opt.hosts_file) {
				fprintf(stderr, PROG ": run: %s\n", err.msg);
				return -EPERM;
			}
			say("warning: no egress proxy (%s): the agent gets no network", err.msg);
			run->egress = NULL;
		} else if (egress_connect_port(run->egress) &&
		           (run->opt.verbose || isatty(STDERR_FILENO))) {
			say("CONNECT proxy at 127.0.0.1:%u", egress_connect_port(run->egress));
		}
	}
	if (run->egress)
		trace_timing_mark("egress (proxy, resolver)");
	r = approvals_observe(run->approvals, &tty_observer_ops, run);
	if (r < 0)
		return r;
	run->audit_dir = hub_audit_dir(run->hub) ? strdup(hub_audit_dir(run->hub)) : NULL;

	r = open_backstop(run);
	if (r < 0)
		return r;
	{
		struct cl_error derr = {""};

		r = deny_ids_new(run->config, &run->deny_ids, &derr);
		if (r < 0) {
			fprintf(stderr, PROG ": run: %s\n", derr.msg);
			return -EPERM;
		}
		if (deny_ids_truncated(run->deny_ids))
			say("warning: exec.deny's path rules name more than %d files: the others "
			    "are denied by name only, not as hard links",
			    DENY_IDS_MAX);
		trace_timing_mark("deny rules' files");
	}

	if (api_info_dir(&api_dir) >= 0 && strrchr(api_dir, '/'))
		*strrchr(api_dir, '/') = '\0'; /* …/cloister: the api files and the secret */
	run_dir = api_dir;
	/* The agent may not rewrite the policy it runs under (nor the next run's): the config
	 * directory must exist to be mounted read-only over, so an absent one is created. */
	if (run->config_dir && !config_base_exists(run))
		say("warning: %s cannot be created (its base directory is missing): the agent "
		    "could create a config there",
		    run->config_dir);
	else if (run->config_dir && (r = dirs_make(run->config_dir, 0700)) < 0)
		say("warning: cannot create %s (%s): the agent could create a config there",
		    run->config_dir, strerror(-r));
	/* A terminal among our fds: the agent gets a pty of its own, which we relay. */
	r = pty_relay_open(&run->relay);
	if (r < 0 && r != -ENOTTY) {
		fprintf(stderr, PROG ": run: the terminal: %s\n", strerror(-r));
		return -EPERM;
	}
	{
		struct run_confine_options co = {
		        .keep_env = run->opt.keep_env,
		        .n_keep_env = run->opt.n_keep_env,
		        .host_network = run->opt.net_host,
		        .allow_abstract_sockets = run->opt.allow_abstract_sockets,
		        .verbose = run->opt.verbose,
		        .config_dir = run->config_dir,
		        .audit_dir = run->audit_dir,
		        .run_dir = run_dir,
		        .agent_argv = run->opt.agent_argv,
		};

		r = run_confine_environ(&co, &envp);
		if (r >= 0)
			r = run_confine_plan(&co, &confine);
		if (r < 0)
			return -EPERM; /* already said why */
		trace_timing_mark("confinement plan (sockets, environment)");
	}
	{
		const char *readonly[3] = {NULL};
		/* The CLI's API files and the dashboard secret: the agent must not approve its own
		 * asks. */
		const char *hidden[2] = {run_dir, NULL};
		size_t n_readonly = 0;
		struct termios modes;
		struct winsize size;
		struct sandbox_opts so = {
		        .argv = run->opt.agent_argv,
		        .envp = envp,
		        .cwd = NULL,
		        .name = run->sandbox_name,
		        .pty = run->relay != NULL,
		        .pty_termios = &modes,
		        .pty_winsize = &size,
		        .userns = SANDBOX_USERNS_AUTO,
		        .install_filter = install_filter,
		        .install_filter_userdata = run,
		        .cgroup_optional = geteuid() != 0,
		        .readonly_paths = readonly,
		        .hidden_paths = hidden,
		        .confine = confine,
		        .share_network = run->opt.net_host,
		        .setup_network = setup_network,
		        .setup_network_userdata = run,
		        .agent_forked = run->ptrace ? agent_forked : NULL,
		        .agent_forked_userdata = run,
		};

		if (run->relay)
			pty_relay_agent_terminal(run->relay, &modes, &size);
		if (run->config_dir && contains_cwd(run->config_dir))
			say("warning: the config directory %s holds the working directory, so it "
			    "stays writable for the agent",
			    run->config_dir);
		else if (run->config_dir)
			readonly[n_readonly++] = run->config_dir;
		if (run->audit_dir)
			readonly[n_readonly++] = run->audit_dir;
		r = sandbox_start(&so, &run->sandbox, &err);
		if (r < 0) {
			fprintf(stderr, PROG ": run: %s\n", err.msg);
			return r;
		}
		trace_timing_mark("sandbox started (agent forked)");
	}
	if (run->relay) {
		struct pty_relay_ops ops = {
		        .keys = on_relay_keys, .gone = on_relay_gone, .userdata = run};

		r = pty_relay_start(run->relay, run->loop, sandbox_take_pty_master(run->sandbox),
		                    &ops);
		if (r < 0) {
			fprintf(stderr, PROG ": run: relaying the terminal: %s\n", strerror(-r));
			return -EPERM;
		}
		if (pty_relay_has_stderr(run->relay))
			say_set_sink(say_through_relay, run->relay);
		trace_timing_mark("terminal relay");
	}
	run->cgroup_id = sandbox_cgroup_id(run->sandbox);
	if (run->backstop) {
		if (!run->cgroup_id) {
			/* Only a root run loads it, and a root run always has a cgroup. */
			fprintf(stderr,
			        PROG ": run: no cgroup for the sandbox, so no exec backstop\n");
			return -EPERM;
		}
		if ((r = backstop_add_sandbox(run->backstop, run->cgroup_id)) < 0) {
			fprintf(stderr, PROG ": run: backstop: %s\n", strerror(-r));
			return r;
		}
	}
	{
		int root_fd, mountinfo_fd;

		r = sandbox_take_view(run->sandbox, &root_fd, &mountinfo_fd);
		if (r >= 0)
			r = exec_view_new(root_fd, mountinfo_fd, &run->view);
		if (r < 0) {
			fprintf(stderr, PROG ": run: the sandbox's view: %s\n", strerror(-r));
			return r;
		}
	}

	{
		struct exec_guard_config gc = {
		        .name = run->sandbox_name,
		        .project = run->opt.project,
		        .config = run->config,
		        .backstop = run->backstop,
		        .cgroup_id = run->cgroup_id,
		        .ptrace_backstop = run->ptrace,
		        .view = run->view,
		        .deny_ids = run->deny_ids,
		        .verbose = run->opt.verbose,
		};

		r = exec_guard_new(run->loop, run->approvals,
		                   sandbox_take_listener_fd(run->sandbox), &gc, &run->guard);
		if (r < 0)
			return r;
	}
	r = loop_add_fd(run->loop, sandbox_status_fd(run->sandbox), EPOLLIN, on_sandbox_status,
	                run);
	if (r < 0)
		return r;
	if (run->backstop) {
		r = loop_add_fd(run->loop, backstop_events_fd(run->backstop), EPOLLIN, on_backstop,
		                run);
		if (r < 0)
			return r;
	}
	if (run->ptrace) {
		r = loop_add_fd(run->loop, ptrace_backstop_events_fd(run->ptrace), EPOLLIN,
		                on_ptrace_backstop, run);
		if (r < 0)
			return r;
	}
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGQUIT);
	sigaddset(&sigs, SIGTSTP);
	sigaddset(&sigs, SIGWINCH);
	sigaddset(&sigs, SIGCONT);
	r = loop_add_signals(run->loop, &sigs, on_signal, run);
	if (r < 0)
		return r;
	setup_approver(run);
	update_approvers(run);
	trace_timing_mark("exec guard, loop set up");

	if (run->opt.verbose) {
		say("sandbox \"%s\": cgroup %s", run->sandbox_name,
		    sandbox_cgroup_path(run->sandbox) ? sandbox_cgroup_path(run->sandbox)
		                                      : "(none)");
		say("seccomp: SYNC_WAKE_UP %s, WAIT_KILLABLE_RECV %s",
		    notifier_sync_wake_up(exec_guard_notifier(run->guard)) ? "on" : "unavailable",
		    notifier_filter_flags_supported(SECCOMP_FILTER_FLAG_NEW_LISTENER |
		                                    SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV) == 1
		            ? "on"
		            : "unavailable");
	}
	if (run->opt.verbose || isatty(STDERR_FILENO))
		say("sandbox \"%s\": execs decided by policy; backstop: %s; network: %s; "
		    "asks: %s",
		    run->sandbox_name,
		    run->backstop ? backstop_mode_name(run->backstop)
		    : run->ptrace ? ptrace_backstop_mode_name()
		                  : "off",
		    !run->net_ready     ? "none"
		    : run->opt.net_host ? "the host's, TCP and DNS through the proxy (eBPF)"
		                        : "through the proxy, by domain policy",
		    run->tty ? (run->opt.ask_tty_path ? run->opt.ask_tty_path : "this terminal")
		    : hub_web(run->hub) && run->opt.ask == ASK_WEB
		            ? "the dashboard and the CLI client"
		    : hub_web(run->hub) ? "an open dashboard, else exec.ask_fallback"
		                        : "nobody (exec.ask_fallback decides)");
	return 0;
}

int run_main(int argc, char **argv)
{
	struct run run = {0};
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

		sigemptyset(&ending);
		sigaddset(&ending, SIGINT);
		sigaddset(&ending, SIGTERM);
		sigaddset(&ending, SIGHUP);
		sigaddset(&ending, SIGQUIT);
		/* The terminal's too: a resize or a continue during start-up must reach the relay
		 * (ignored by default, they would be lost), a Ctrl-Z the agent. */
		sigaddset(&ending, SIGTSTP);
		sigaddset(&ending, SIGWINCH);
		sigaddset(&ending, SIGCONT);
		sigprocmask(SIG_BLOCK, &ending, NULL);
	}
	if (run.opt.project) {
		struct cl_error err = {""};

		if (config_project_name_check(run.opt.project, &err) < 0) {
			fprintf(stderr, PROG ": run: --project: %s\n", err.msg);
			return CLI_EXIT_USAGE;
		}
	}
	if (run.opt.ask_tty_path) {
		/* A prompt nobody can see would only wait for the fallback: refuse it up front. */
		int fd = open(run.opt.ask_tty_path, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
		bool ok = fd >= 0 && isatty(fd);

		if (fd >= 0)
			close(fd);
		if (!ok) {
			fprintf(stderr, PROG ": run: --ask-tty %s: not a terminal we can open\n",
			        run.opt.ask_tty_path);
			return CLI_EXIT_USAGE;
		}
	}
	r = load_config(&run);
	if (r != 0)
		return r;
	trace_timing_mark("options, config");
	run.sandbox_name = run.opt.name ? strdup(run.opt.name) : default_name();
	if (!run.sandbox_name) {
		teardown(&run);
		return RUN_EXIT_FAILED;
	}

	r = start(&run);
	if (r < 0) {
		if (r != -EPERM)
			fprintf(stderr, PROG ": run: cannot start the sandbox: %s\n", strerror(-r));
		teardown(&run);
		return RUN_EXIT_FAILED;
	}
	r = loop_run(run.loop);
	trace_timing_mark("the agent ran (event loop)");
	trace_exec_report();
	if (r < 0)
		say("run: event loop failed: %s", strerror(-r));
	if (run.opt.verbose)
		say("%llu exec notifications handled",
		    (unsigned long long)(run.guard ? exec_guard_notifications(run.guard) : 0));
	teardown(&run);
	trace_timing_mark("teardown");
	if (!run.exited)
		return RUN_EXIT_FAILED;
	return run.exit_code;
}
