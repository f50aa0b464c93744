/* The sandbox launcher: runs the agent in new pid, mount and network namespaces (plus a user
 * namespace when the caller is not root), in its own cgroup v2 leaf and its own session,
 * keeping the caller's uid/gid, cwd and environment. The agent never holds the caller's
 * terminal: it gets a pseudo-terminal of its own (opts.pty), or none.
 *
 * Process layout (bubblewrap's --as-pid-1 alternative):
 *
 *   supervisor ── init (pid 1 in the new pid ns; never execs) ── agent (pid 2) ── …
 *
 * The init installs the seccomp filter through the caller's hook before it forks the agent, so
 * the agent and everything it starts inherit it, and hands the listener fd back over a
 * socketpair. It leads the sandbox's session (setsid): with a pty, that terminal is the
 * session's controlling terminal and the agent's process group its foreground; without, the
 * session has no controlling terminal (open("/dev/tty") fails). It reaps orphans, forwards
 * signals, reports the agent's stops, continues and exit to the supervisor (which only sees
 * its own child, the init) and exits after the agent. When
 * the init dies the kernel kills every process of the pid namespace; the init dies with the
 * supervisor (PR_SET_PDEATHSIG), so an agent never outlives its supervisor unnoticed.
 *
 * Call sandbox_start() from the main thread before creating other threads: the init is a raw
 * clone3() child, which — unlike fork() — does not reset libc's locks, and the filter hook runs
 * in it (sandbox_start() fails with -EBUSY when the process has more than one thread).
 * PR_SET_PDEATHSIG fires on the death of the calling thread. */
#ifndef CLOISTER_SUPERVISOR_SANDBOX_H
#define CLOISTER_SUPERVISOR_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <termios.h>

#include "base/error.h"
#include "supervisor/sandbox/sandbox_confine.h"
#include "supervisor/sandbox/sandbox_proto.h" /* enum sandbox_userns, sandbox_exit_code_from_wait_status */

/* Runs in the init, in the new namespaces, after the mounts and the chdir and before the agent
 * is forked. Installs the seccomp filter and returns its listener fd (>= 0) in
 * *ret_listener_fd, or a negative errno. Only fds 0-2 (and the init's own 3 and 4) are open
 * when it runs: it cannot rely on the supervisor's fds. The listener is sent to the supervisor
 * (sendmsg: the filter must not trap it) and closed in the init; any other fd the hook leaves
 * open is closed before the agent starts. */
typedef int (*sandbox_install_filter_fn)(void *userdata, int *ret_listener_fd);

struct sandbox_opts {
	char *const *argv; /* argv[0] is looked up in envp's PATH, like execvp */
	char *const *envp; /* already scrubbed of the supervisor's secrets */
	const char *cwd;   /* NULL: the supervisor's cwd. Must exist in the sandbox. */
	const char *name;  /* names the cgroup leaf; NULL: "sandbox" */
	/* NULL: the agent inherits the supervisor's stdin/stdout/stderr. Else three fds. Those
	 * that are terminals never reach the agent: they become its pty, or /dev/null. */
	const int *stdio_fds;
	/* A pseudo-terminal of the agent's own, as sudo's use_pty and ssh give: the init mounts
	 * a devpts instance private to the sandbox on /dev/pts (the host's ptys are not there;
	 * /dev/ptmx opens into it), allocates the pty from it and makes it the session's
	 * controlling terminal, with PTY_TERMIOS and PTY_WINSIZE (NULL: the kernel's defaults).
	 * The agent's fds 0-2 that are terminals become its slave; the master is the caller's
	 * (sandbox_take_pty_master), to relay. */
	bool pty;
	const struct termios *pty_termios;
	const struct winsize *pty_winsize;
	enum sandbox_userns userns;
	sandbox_install_filter_fn install_filter; /* NULL: no filter, sandbox_listener_fd() is -1 */
	void *install_filter_userdata;
	/* Directory for the cgroup leaf; NULL: cgroup_default_parent(). */
	const char *cgroup_parent;
	/* NULL-terminated list of paths (or NULL) made read-only inside the sandbox: the
	 * supervisor's config and audit log, which the agent must not rewrite. */
	const char *const *readonly_paths;
	/* NULL-terminated list of directories (or NULL) hidden inside the sandbox under an empty
	 * tmpfs: the supervisor's private runtime directory, which holds the API secret. */
	const char *const *hidden_paths;
	/* What else the agent loses (sandbox_confine.h): private /tmp, hidden sockets, a
	 * minimal /dev, pinned parents, its own IPC and cgroup namespaces, capabilities,
	 * NO_NEW_PRIVS, Landlock. NULL: none of it. Owned by the caller. */
	const struct sandbox_confine *confine;
	/* Run without a cgroup if none can be created (e.g. a non-root caller without a delegated
	 * subtree): pause/cgroup id are then unavailable, kill still works through the pid ns. */
	bool cgroup_optional;
	/* At most this many tasks (processes and threads, the init included) in the sandbox; 0:
	 * no limit. Held by the kernel, whatever the agent does: pids.max of the cgroup leaf (or
	 * of its v1 companion on a hybrid hierarchy, as root), and RLIMIT_NPROC (soft and hard)
	 * in the sandbox's user namespace, where the kernel counts only the sandbox's own tasks
	 * against it and the agent lacks the capability to raise it (CAP_SYS_RESOURCE in the
	 * initial namespace). Without either, the sandbox runs without a limit (see
	 * sandbox_pids_limit()) unless PIDS_MAX_REQUIRED, which fails sandbox_start instead. */
	uint64_t pids_max;
	bool pids_max_required;
	/* The init's oom_score_adj, inherited by every process of the sandbox: > 0 makes the
	 * kernel's OOM killer pick the agent before the person's other programs. A default, not
	 * a wall: the agent may lower it again, to 0 at most (below needs CAP_SYS_RESOURCE; on
	 * this kernel a privileged writer does not raise the floor). 0: unchanged. */
	int oom_score_adj;
	/* Share the caller's network namespace instead of a new one (`run --net host`). */
	bool share_network;
	/* Called before the agent starts, to give its network routes, rules and listeners: with
	 * the sandbox's new network namespace (NETNS_FD, -1 when the network is shared) and its
	 * cgroup (CGROUP_FD, -1 without one), fds the hook may keep dups of. A negative return
	 * fails sandbox_start with it. NULL: a new netns keeps only its loopback. */
	int (*setup_network)(void *userdata, int netns_fd, int cgroup_fd, struct cl_error *err);
	void *setup_network_userdata;
	/* Called once the init has forked the agent, which waits until this returns: with its
	 * pid (in the supervisor's pid namespace), before it has run anything of its own (the
	 * ptrace backstop seizes it here). A negative return fails sandbox_start with it. NULL:
	 * the agent starts at once. */
	int (*agent_forked)(void *userdata, pid_t agent, struct cl_error *err);
	void *agent_forked_userdata;
};

enum sandbox_status_kind {
	SANDBOX_STOPPED = 1, /* the agent was stopped (Ctrl-Z, SIGSTOP, SIGTTIN…) */
	SANDBOX_CONTINUED,   /* the agent was continued */
	SANDBOX_EXITED,      /* the agent is gone: exit_code is what `run` exits with */
	SANDBOX_SIGNALLED,   /* a sandbox_signal() reached the agent: it is pending there now */
};

struct sandbox_status {
	enum sandbox_status_kind kind;
	int stop_signal; /* SANDBOX_STOPPED */
	int signal;      /* SANDBOX_SIGNALLED */
	int exit_code;   /* SANDBOX_EXITED: the exit code, or 128+signal */
};

struct sandbox;

/* Create the cgroup leaf, the namespaces and the init, run the hook, start the agent. On
 * success the agent is running and *ret owns everything; on failure nothing is left behind and
 * err says what failed ("chdir /gone: No such file or directory", "hook: …"). */
int sandbox_start(const struct sandbox_opts *opts, struct sandbox **ret, struct cl_error *err);

/* The seccomp listener fd the hook returned (owned by sb), or -1 without a hook. */
int sandbox_listener_fd(const struct sandbox *sb);
/* Take ownership of the listener fd (sb forgets it). */
int sandbox_take_listener_fd(struct sandbox *sb);

/* Take ownership of the agent's pty master (O_CLOEXEC, blocking), or -1 without opts.pty. */
int sandbox_take_pty_master(struct sandbox *sb);

/* The sandbox's own view as the init saw it once the mounts were done (notifier/view.h): an
 * O_PATH fd of its root and an fd of its mountinfo, both bound to the sandbox's mount
 * namespace whatever the agent does later. The caller owns them (sb forgets them); -ENOENT
 * when they were taken already. */
int sandbox_take_view(struct sandbox *sb, int *ret_root_fd, int *ret_mountinfo_fd);

/* An fd (owned by sb) that becomes readable when sandbox_handle_status() has something to say;
 * for the caller's epoll loop. */
int sandbox_status_fd(const struct sandbox *sb);

/* Non-blocking. 0 and *ret filled when there is news, -EAGAIN when there is none yet.
 * SANDBOX_EXITED is reported exactly once (then -ECHILD). */
int sandbox_handle_status(struct sandbox *sb, struct sandbox_status *ret);

/* Continue the agent's process group (SIGCONT). With FOREGROUND and a pty, the agent's
 * process group is made the pty's foreground first (it stopped reading its terminal from the
 * background, or the caller is back in the foreground after a Ctrl-Z). */
int sandbox_continue(struct sandbox *sb, bool foreground);

/* Pass signal SIG on to the agent (SIGTERM/SIGHUP received by the supervisor). The init does
 * it when it runs (not while the sandbox is frozen), then SANDBOX_SIGNALLED reports it. */
int sandbox_signal(struct sandbox *sb, int sig);
/* The same, to the agent's whole process group, as a terminal sends SIGINT, SIGQUIT and
 * SIGTSTP. */
int sandbox_signal_group(struct sandbox *sb, int sig);

/* Freeze (true) or thaw the whole sandbox through its cgroup (for the terminal approver).
 * Returns within ~100 ms: a task blocked in a notified syscall freezes only once answered.
 * -EOPNOTSUPP without a cgroup. */
int sandbox_pause(struct sandbox *sb, bool paused);

/* SIGKILL everything in the sandbox. */
int sandbox_kill(struct sandbox *sb);

/* The cgroup id of the sandbox (for the BPF backstop), 0 without a cgroup. */
uint64_t sandbox_cgroup_id(const struct sandbox *sb);
/* The cgroup leaf's path, NULL without a cgroup. */
const char *sandbox_cgroup_path(const struct sandbox *sb);
/* What holds the task limit (opts.pids_max): a static description ("cgroup pids.max",
 * "cgroup v1 pids.max", "RLIMIT_NPROC in the sandbox's user namespace"), or NULL when nothing
 * does, with *ret_why (owned by sb, may be NULL) saying why not. */
const char *sandbox_pids_limit(const struct sandbox *sb, const char **ret_why);
/* An fd of the cgroup's pids.events (sandbox_pids_refused() reads it), owned by sb; -ENOENT
 * without one (RLIMIT_NPROC's refusals are counted nowhere). *RET_POLLS (may be NULL): whether
 * it polls POLLPRI when a fork is refused (cgroup2), or must be read now and then (v1). */
int sandbox_pids_events_fd(const struct sandbox *sb, bool *ret_polls);
/* How many forks and clones the cgroup's limit refused so far. -ENOENT without one. */
int sandbox_pids_refused(const struct sandbox *sb, uint64_t *ret);

/* The init's pid as the supervisor sees it. */
pid_t sandbox_init_pid(const struct sandbox *sb);

/* Kill everything, reap the init, remove the cgroup, close the fds. NULL is accepted. */
void sandbox_free(struct sandbox *sb);

#endif
