/* The sandbox launcher: see sandbox.h.
 *
 * Over 900 lines on purpose: its two halves, the init in the child of clone3 and the
 * supervisor's side, are the two ends of one protocol (sandbox_proto.h) and one order of
 * steps (namespaces, id maps, mounts, the filter, the agent) that each must take in step with
 * the other; read together they show that order. What is pure is apart already
 * (sandbox_proto.c, confine_plan.c), and so is the confinement (sandbox_confine.c). */
#include "supervisor/sandbox/sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include <linux/sched.h> /* struct clone_args */

#include "notifier/fdpass.h"
#include "base/cleanup.h"
#include "supervisor/sandbox/cgroup.h"
#include "base/trace_timing.h"

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

/* fd numbers in the init once its fds are tidied up (0-2 are the agent's stdio; 4 is the
 * agent's pty slave, the init's controlling terminal, when it has one). */
#define INIT_SOCK_FD    3
#define INIT_TTY_FD     4
#define INIT_FIRST_FREE 5

/* Mounts below /sys re-attached over the fresh sysfs; bounded, the host decides how many. */
#define SYS_SUBMOUNTS_MAX 64
#define CGROUP_TIMEOUT_MS 5000
#define PAUSE_SETTLE_MS   100

extern char **environ;

struct sandbox {
	pid_t init_pid;
	int pidfd;
	int sock;
	int epfd;
	int listener_fd;
	int pty_master; /* until the caller takes it; -1 without a pty */
	bool pty;
	int view_fds[2]; /* the sandbox's root and mountinfo (SANDBOX_MSG_VIEW), or -1 */
	bool sock_eof;
	bool init_reaped;
	bool exit_reported;
	struct cgroup *cg;
	const char *pids_limit; /* sandbox_pids_limit() */
	bool pids_polls;        /* sandbox_pids_events_fd() */
	char pids_why[CL_ERROR_MAX];
};

/* ---- the init (runs in the child of clone3) ---------------------------------------------- */

struct init_args {
	const struct sandbox_opts *opts;
	const char *cwd;
	int sock;
	bool nproc_limit;  /* set RLIMIT_NPROC to opts->pids_max (in a user namespace) */
	struct cgroup *cg; /* the leaf, whose v1 companions the init joins; or NULL */
};

static int sys_pidfd_send_signal(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

static void send_msg(int sock, enum sandbox_msg_type type, int value, const char *text, int flags)
{
	struct sandbox_msg m = {.type = type, .value = value};

	if (text)
		snprintf(m.text, sizeof(m.text), "%s", text);
	while (send(sock, &m, sizeof(m), MSG_NOSIGNAL | flags) < 0 && errno == EINTR)
		;
}

/* Report a setup failure to the supervisor and die: the supervisor turns it into its error. */
__attribute__((noreturn, format(printf, 3, 4))) static void init_fail(int sock, int code,
                                                                      const char *fmt, ...)
{
	char text[SANDBOX_MSG_TEXT_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	send_msg(sock, SANDBOX_MSG_ERROR, code, text, 0);
	_exit(127);
}

/* One step of sandbox_confine.h in the init, or its failure reported. */
static void confine_step(const struct sandbox_confine *c,
                         int (*step)(const struct sandbox_confine *, struct cl_error *))
{
	struct cl_error err = {""};
	int r;

	if (!c)
		return;
	r = step(c, &err);
	if (r < 0)
		init_fail(INIT_SOCK_FD, r, "%s", err.msg[0] ? err.msg : strerror(-r));
}

/* Bind PATH onto itself read-only, so the agent cannot change what is there (the supervisor's
 * own config, its executable). A path that does not exist is skipped: the caller creates what
 * must be protected before starting. A file bound alone is a program (ours): it stays
 * executable, so the agent can still run it; a directory's files are not. */
static void bind_readonly(int sock, const char *path)
{
	unsigned long noexec = MS_NOEXEC;
	struct stat st;

	if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
		noexec = 0;
	if (mount(path, path, NULL, MS_BIND | MS_REC, NULL) < 0) {
		if (errno == ENOENT)
			return;
		init_fail(sock, -errno, "bind %s: %m", path);
	}
	if (mount(NULL, path, NULL,
	          MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | noexec, NULL) < 0)
		init_fail(sock, -errno, "make %s read-only: %m", path);
}

/* An empty, read-only tmpfs over PATH; a missing PATH needs no hiding. */
static void hide(int sock, const char *path)
{
	if (mount("cloister-hidden", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY,
	          "size=4k,mode=0500") < 0 &&
	    errno != ENOENT)
		init_fail(sock, -errno, "hide %s: %m", path);
}

/* A fresh sysfs on /sys, so that /sys/class/net shows this network namespace. The mounts that
 * were below the old /sys (cgroupfs, bpffs, securityfs…) are cloned first and put back on top,
 * so the agent's view of them does not change. */
static int remount_sys(int sock)
{
	_cleanup_free_ char *text = NULL;
	char *save = NULL;
	int sys_id = -1, r;
	struct {
		int fd;
		char *path;
	} sub[SYS_SUBMOUNTS_MAX];
	size_t nsub = 0;

	r = mountinfo_read_self(&text);
	if (r < 0)
		init_fail(sock, r, "read /proc/self/mountinfo: %s", strerror(-r));
	/* The topmost mount on /sys is the last one listed for that path. */
	_cleanup_free_ char *copy = strdup(text);
	if (!copy)
		init_fail(sock, -ENOMEM, "out of memory");
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct mountinfo_entry e;

		if (mountinfo_parse_line(line, &e) == 0 && strcmp(e.mount_point, "/sys") == 0)
			sys_id = e.mount_id;
	}
	if (sys_id < 0)
		init_fail(sock, -ENOENT, "no /sys mount to replace");
	save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct mountinfo_entry e;

		if (mountinfo_parse_line(line, &e) < 0 || e.parent_id != sys_id)
			continue;
		if (nsub == SYS_SUBMOUNTS_MAX)
			init_fail(sock, -E2BIG, "more than %d mounts below /sys",
			          SYS_SUBMOUNTS_MAX);
		sub[nsub].fd = (int)syscall(SYS_open_tree, AT_FDCWD, e.mount_point,
		                            OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
		if (sub[nsub].fd < 0)
			init_fail(sock, -errno, "open_tree %s: %m", e.mount_point);
		sub[nsub].path = (char *)e.mount_point;
		nsub++;
	}
	if (mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		init_fail(sock, -errno, "mount sysfs on /sys: %m");
	for (size_t i = 0; i < nsub; i++) {
		if (syscall(SYS_move_mount, sub[i].fd, "", AT_FDCWD, sub[i].path,
		            MOVE_MOUNT_F_EMPTY_PATH) < 0)
			init_fail(sock, -errno, "move_mount %s: %m", sub[i].path);
		close(sub[i].fd);
	}
	return 0;
}

static void loopback_up(int sock)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = {.ifr_name = "lo"};

	if (fd < 0)
		init_fail(sock, -errno, "socket: %m");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		init_fail(sock, -errno, "SIOCGIFFLAGS lo: %m");
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		init_fail(sock, -errno, "bring lo up: %m");
}

/* Put the stdio on 0-2 and the socket on 3, and close everything else. Sources are first
 * copied above 4, so no dup2 can clobber a source that is still needed. */
static void init_tidy_fds(const struct init_args *a)
{
	int tmp_stdio[3] = {-1, -1, -1}, tmp_sock;

	if (a->opts->stdio_fds)
		for (int i = 0; i < 3; i++) {
			tmp_stdio[i] =
			        fcntl(a->opts->stdio_fds[i], F_DUPFD_CLOEXEC, INIT_FIRST_FREE);
			if (tmp_stdio[i] < 0)
				init_fail(a->sock, -errno, "stdio fd %d: %m",
				          a->opts->stdio_fds[i]);
		}
	tmp_sock = fcntl(a->sock, F_DUPFD_CLOEXEC, INIT_FIRST_FREE);
	if (tmp_sock < 0)
		init_fail(a->sock, -errno, "dup socket: %m");
	for (int i = 0; i < 3; i++)
		if (tmp_stdio[i] >= 0 && dup2(tmp_stdio[i], i) < 0)
			init_fail(a->sock, -errno, "dup2 stdio: %m");
	if (dup3(tmp_sock, INIT_SOCK_FD, O_CLOEXEC) < 0)
		_exit(127);
	close(INIT_TTY_FD);
	close_range(INIT_FIRST_FREE, ~0U, 0);
}

/* A devpts instance of the sandbox's own on /dev/pts, with a terminal or without one: the
 * host's ptys (the user's shells in other windows among them) are not there to be opened —
 * a read-only mount of the host's would not stop an open of a device, and the agent would
 * write to the user's screen past the relay's filter and read the keys they type there.
 * /dev/ptmx opens into it (bound over it, and the kernel looks for "pts" beside a /dev/ptmx
 * device anyway). Mounted before the filter hook runs: the agent's filter may refuse
 * mount(2). Without /dev/pts and a pty to make, there is nothing to hide. */
static void init_devpts(bool pty)
{
	struct stat st;

	if (mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
	          "newinstance,ptmxmode=0666,mode=0620") < 0) {
		if (errno == ENOENT && !pty)
			return;
		init_fail(INIT_SOCK_FD, -errno, "a devpts of the sandbox's own on /dev/pts: %m");
	}
	if (lstat("/dev/ptmx", &st) == 0 && S_ISCHR(st.st_mode) &&
	    mount("/dev/pts/ptmx", "/dev/ptmx", NULL, MS_BIND, NULL) < 0)
		init_fail(INIT_SOCK_FD, -errno, "bind /dev/pts/ptmx over /dev/ptmx: %m");
}

/* The agent's terminal, from the sandbox's devpts (init_devpts). The master goes to the
 * supervisor; the slave, on INIT_TTY_FD, becomes the controlling terminal of the init's new
 * session. */
static void init_pty(const struct init_args *a)
{
	const struct sandbox_opts *o = a->opts;
	struct sandbox_msg m = {.type = SANDBOX_MSG_PTY};
	int master, slave, unlock = 0, r;

	/* Above INIT_TTY_FD, which the slave goes to. */
	master = open("/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master >= 0 && master < INIT_FIRST_FREE) {
		int high = fcntl(master, F_DUPFD_CLOEXEC, INIT_FIRST_FREE);

		close(master);
		master = high;
	}
	if (master < 0)
		init_fail(INIT_SOCK_FD, -errno, "a terminal for the agent: /dev/pts/ptmx: %m");
	if (ioctl(master, TIOCSPTLCK, &unlock) < 0)
		init_fail(INIT_SOCK_FD, -errno, "a terminal for the agent: unlock: %m");
	/* The peer by the master, not by a path the agent could race. */
	slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0)
		init_fail(INIT_SOCK_FD, -errno, "a terminal for the agent: open its slave: %m");
	if (o->pty_termios && tcsetattr(slave, TCSANOW, o->pty_termios) < 0)
		init_fail(INIT_SOCK_FD, -errno, "a terminal for the agent: its modes: %m");
	if (o->pty_winsize && ioctl(slave, TIOCSWINSZ, o->pty_winsize) < 0)
		init_fail(INIT_SOCK_FD, -errno, "a terminal for the agent: its size: %m");
	if (ioctl(slave, TIOCSCTTY, 0) < 0)
		init_fail(INIT_SOCK_FD, -errno, "a terminal for the agent: TIOCSCTTY: %m");
	if (slave != INIT_TTY_FD) {
		if (dup3(slave, INIT_TTY_FD, O_CLOEXEC) < 0)
			init_fail(INIT_SOCK_FD, -errno, "a terminal for the agent: %m");
		close(slave);
	}
	r = fdpass_send(INIT_SOCK_FD, master, &m, sizeof(m));
	if (r < 0)
		init_fail(INIT_SOCK_FD, r, "sending the terminal: %s", strerror(-r));
	close(master);
}

/* The caller's terminal never reaches the agent: each of fds 0-2 that is a terminal becomes
 * the agent's own pty, or /dev/null without one. */
static void init_replace_terminals(bool pty)
{
	for (int fd = 0; fd < 3; fd++) {
		int repl;

		if (!isatty(fd))
			continue;
		repl = pty ? INIT_TTY_FD : open("/dev/null", O_RDWR | O_CLOEXEC);
		if (repl < 0)
			init_fail(INIT_SOCK_FD, -errno, "/dev/null: %m");
		if (dup2(repl, fd) < 0)
			init_fail(INIT_SOCK_FD, -errno, "dup2 terminal: %m");
		if (!pty)
			close(repl);
	}
}

/* The tty fd given to the agent's group while SIGTTOU is blocked (it is, in the whole init). */
static void give_terminal(pid_t pgrp)
{
	(void)tcsetpgrp(INIT_TTY_FD, pgrp);
}

__attribute__((noreturn)) static void exec_agent(const struct init_args *a)
{
	sigset_t empty;
	const char *what = a->opts->argv[0];
	int err;

	/* The agent leads a process group of its own (the job a terminal's Ctrl-C and Ctrl-Z
	 * stop), the foreground of its pty. Also done by the init: whichever runs first wins the
	 * race harmlessly. */
	setpgid(0, 0);
	if (a->opts->pty)
		give_terminal(getpid());
	close(INIT_SOCK_FD);
	close(INIT_TTY_FD);
	sigemptyset(&empty);
	sigprocmask(SIG_SETMASK, &empty, NULL);
	environ = (char **)a->opts->envp;
	/* The supervisor reads this exec's arguments through /proc/PID/mem, which a non-root
	 * supervisor may do only while we are dumpable. The init is not, and until the exec we are
	 * its copy; no other process of the agent exists yet to take advantage. */
	if (prctl(PR_SET_DUMPABLE, 1) < 0)
		_exit(127);
	execvp(what, a->opts->argv);
	err = errno;
	dprintf(STDERR_FILENO, "cloister: cannot run %s: %s\n", what, strerror(err));
	_exit(err == ENOENT ? 127 : 126);
}

/* The init's life after the agent started: reap, forward, report, exit with the agent. */
__attribute__((noreturn)) static void init_loop(pid_t agent, bool pty, int sfd)
{
	struct pollfd p[2] = {{.fd = sfd, .events = POLLIN},
	                      {.fd = INIT_SOCK_FD, .events = POLLIN}};

	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(127);
		}
		if (p[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			/* Pass on what was sent to us. Not what the kernel generated for a whole
			 * process group (terminal keys, hang-up): the agent got its own copy. */
			if (read(sfd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo != SIGCHLD &&
			    si.ssi_code != SI_KERNEL)
				kill(agent, (int)si.ssi_signo);
			for (;;) {
				int st;
				pid_t pid = waitpid(-1, &st, WNOHANG | WUNTRACED | WCONTINUED);

				if (pid <= 0)
					break;
				if (pid != agent)
					continue; /* an orphan reparented to us: just reaped */
				if (WIFSTOPPED(st)) {
					send_msg(INIT_SOCK_FD, SANDBOX_MSG_STOPPED, WSTOPSIG(st),
					         NULL, MSG_DONTWAIT);
				} else if (WIFCONTINUED(st)) {
					send_msg(INIT_SOCK_FD, SANDBOX_MSG_CONTINUED, 0, NULL,
					         MSG_DONTWAIT);
				} else {
					send_msg(INIT_SOCK_FD, SANDBOX_MSG_EXITED, st, NULL, 0);
					/* Our exit kills whatever is left in the pid namespace. */
					_exit(sandbox_exit_code_from_wait_status(st));
				}
			}
		}
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			char buf[sizeof(struct sandbox_msg)];
			struct sandbox_msg m;
			ssize_t n = recv(INIT_SOCK_FD, buf, sizeof(buf), MSG_DONTWAIT);

			if (n == 0)
				_exit(127); /* the supervisor is gone (PDEATHSIG should have come
				               first) */
			if (n < 0 || sandbox_msg_validate(buf, (size_t)n, &m) < 0)
				continue;
			if ((m.type == SANDBOX_MSG_SIGNAL || m.type == SANDBOX_MSG_SIGNAL_GROUP) &&
			    m.value > 0 && m.value < NSIG) {
				kill(m.type == SANDBOX_MSG_SIGNAL ? agent : -agent, m.value);
				/* Now it is pending in the agent: the supervisor may go on.
				 * Blocking: the agent's stops and continues must not crowd it
				 * out of a full socket queue. */
				send_msg(INIT_SOCK_FD, SANDBOX_MSG_SIGNALLED, m.value, NULL, 0);
			} else if (m.type == SANDBOX_MSG_CONTINUE) {
				if (pty && m.value)
					give_terminal(agent);
				/* The agent leads its own process group, which a terminal stops
				 * as a whole. */
				kill(-agent, SIGCONT);
			}
		}
	}
}

/* Hand the supervisor the sandbox's view: our root and our mountinfo, now that the mounts are
 * done. We never leave this mount namespace, and both fds stay bound to it. */
static void send_view(int sock)
{
	static const struct {
		const char *path;
		int flags;
	} view[] = {{"/", O_PATH | O_DIRECTORY}, {"/proc/self/mountinfo", O_RDONLY}};

	for (int i = 0; i < (int)ELEMENTSOF(view); i++) {
		struct sandbox_msg m = {.type = SANDBOX_MSG_VIEW, .value = i};
		int fd = open(view[i].path, view[i].flags | O_CLOEXEC);
		int r;

		if (fd < 0)
			init_fail(sock, -errno, "open %s: %m", view[i].path);
		r = fdpass_send(sock, fd, &m, sizeof(m));
		if (r < 0)
			init_fail(sock, r, "sending the sandbox's view: %s", strerror(-r));
		close(fd);
	}
}

/* In the agent, before anything of its own: wait until the init says go (EOF: the init died,
 * and so do we). */
static void agent_wait_go(int go_pipe[2])
{
	char c;
	ssize_t n;

	close(go_pipe[1]);
	do
		n = read(go_pipe[0], &c, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		_exit(127);
	close(go_pipe[0]);
}

/* The supervisor gets a pidfd of the waiting agent, does what must come first (seize it) and
 * says go; then the agent may run. */
static void release_agent(pid_t agent, int go_pipe[2])
{
	struct sandbox_msg m = {.type = SANDBOX_MSG_AGENT};
	char buf[sizeof(struct sandbox_msg)];
	int pidfd, r;
	ssize_t n;

	close(go_pipe[0]);
	pidfd = (int)syscall(SYS_pidfd_open, agent, 0);
	if (pidfd < 0)
		init_fail(INIT_SOCK_FD, -errno, "pidfd_open: %m");
	r = fdpass_send(INIT_SOCK_FD, pidfd, &m, sizeof(m));
	if (r < 0)
		init_fail(INIT_SOCK_FD, r, "sending the agent: %s", strerror(-r));
	close(pidfd);
	do
		n = recv(INIT_SOCK_FD, buf, sizeof(buf), 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0 || sandbox_msg_validate(buf, (size_t)n, &m) < 0 ||
	    m.type != SANDBOX_MSG_AGENT_GO)
		_exit(127); /* the supervisor refused or is gone: the agent goes with us */
	if (write(go_pipe[1], "g", 1) != 1)
		_exit(127);
	close(go_pipe[1]);
}

__attribute__((noreturn)) static void init_main(struct init_args *a)
{
	const struct sandbox_opts *o = a->opts;
	struct sandbox_msg go;
	sigset_t all, fwd;
	int listener = -1, sfd, r, go_pipe[2] = {-1, -1};
	pid_t agent;
	ssize_t n;

	/* Everything blocked for the whole life of the init; the forwarded ones and SIGCHLD are
	 * read from a signalfd. SIGTTOU blocked also lets the init set the terminal's foreground
	 * group from the background. Dispositions back to default: the agent must not inherit an
	 * ignored SIGPIPE or SIGINT from the supervisor. */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);

	/* Die with the supervisor. getppid() is 0 in a new pid namespace, so the race with a
	 * supervisor that died before this prctl is closed by the socket instead: its end is then
	 * closed and the GO message below never comes (EOF). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		_exit(127);
	/* Into the v1 companion leaf (the task limit on a hybrid hierarchy) before anything can
	 * fork. The write waits for an RCU grace period (cgroup.procs takes the threadgroup
	 * lock), ~20 ms on a loaded machine: done here, it overlaps the supervisor's network
	 * set-up instead of adding to it. */
	if (a->cg) {
		r = cgroup_attach_companions(a->cg, 0);
		if (r < 0)
			init_fail(a->sock, r, "joining the sandbox's v1 cgroup: %s", strerror(-r));
	}
	do
		n = recv(a->sock, &go, sizeof(go), 0);
	while (n < 0 && errno == EINTR);
	if (n != sizeof(go) || go.type != SANDBOX_MSG_GO)
		_exit(127);
	/* The agent runs as our uid: keep it from ptracing us or reading our /proc files. */
	if (prctl(PR_SET_DUMPABLE, 0) < 0)
		init_fail(a->sock, -errno, "PR_SET_DUMPABLE: %m");

	/* Before anything can fork: counted per user namespace and uid, this bounds the sandbox's
	 * tasks alone; raising a hard limit needs CAP_SYS_RESOURCE in the initial namespace. */
	if (a->nproc_limit) {
		struct rlimit rl;

		if (getrlimit(RLIMIT_NPROC, &rl) < 0)
			init_fail(a->sock, -errno, "getrlimit RLIMIT_NPROC: %m");
		if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > o->pids_max)
			rl.rlim_max = (rlim_t)o->pids_max;
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NPROC, &rl) < 0)
			init_fail(a->sock, -errno, "setrlimit RLIMIT_NPROC: %m");
	}
	init_tidy_fds(a);
	/* A session of the sandbox's own: the caller's terminal is not its controlling terminal
	 * (a new pty is, or none). */
	if (setsid() < 0)
		init_fail(INIT_SOCK_FD, -errno, "setsid: %m");

	/* Mounts: nothing propagates back to the host; /proc for the new pid namespace; /sys for
	 * the new network namespace. */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		init_fail(INIT_SOCK_FD, -errno, "make / a slave mount: %m");
	confine_step(o->confine, sandbox_confine_namespaces);
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		init_fail(INIT_SOCK_FD, -errno, "mount proc on /proc: %m");
	/* On the host's network, /sys and lo are the host's already. */
	if (!o->share_network)
		remount_sys(INIT_SOCK_FD);
	confine_step(o->confine, sandbox_confine_mounts);
	for (const char *const *p = o->readonly_paths; p && *p; p++)
		bind_readonly(INIT_SOCK_FD, *p);
	for (const char *const *p = o->hidden_paths; p && *p; p++)
		hide(INIT_SOCK_FD, *p);
	confine_step(o->confine, sandbox_confine_cover_sockets);
	if (!o->share_network)
		loopback_up(INIT_SOCK_FD);
	init_devpts(o->pty);
	if (o->pty)
		init_pty(a);
	init_replace_terminals(o->pty);
	if (chdir(a->cwd) < 0)
		init_fail(INIT_SOCK_FD, -errno, "chdir %s: %m", a->cwd);
	confine_step(o->confine, sandbox_confine_privileges);

	if (o->install_filter) {
		r = o->install_filter(o->install_filter_userdata, &listener);
		if (r < 0)
			init_fail(INIT_SOCK_FD, r, "installing the seccomp filter: %s",
			          strerror(-r));
		if (listener < 0)
			init_fail(INIT_SOCK_FD, -EBADF, "the filter hook returned no listener fd");
		struct sandbox_msg m = {.type = SANDBOX_MSG_LISTENER};
		r = fdpass_send(INIT_SOCK_FD, listener, &m, sizeof(m));
		if (r < 0)
			init_fail(INIT_SOCK_FD, r, "sending the listener fd: %s", strerror(-r));
		close(listener);
		/* Nothing the hook opened reaches the agent. */
		close_range(INIT_FIRST_FREE, ~0U, 0);
	}
	send_view(INIT_SOCK_FD);

	sigemptyset(&fwd);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig == SIGCHLD || sig == SIGINT || sig == SIGTERM || sig == SIGHUP ||
		    sig == SIGQUIT || sig == SIGUSR1 || sig == SIGUSR2)
			sigaddset(&fwd, sig);
	sfd = signalfd(-1, &fwd, SFD_CLOEXEC);
	if (sfd < 0)
		init_fail(INIT_SOCK_FD, -errno, "signalfd: %m");

	/* The agent to be seized is born dumpable: the supervisor's tracer has our uid but no
	 * capability over the copy of the init it still is (see exec_agent). No process of the
	 * agent's runs before the init is undumpable again. */
	if (o->agent_forked && (pipe2(go_pipe, O_CLOEXEC) < 0 || prctl(PR_SET_DUMPABLE, 1) < 0))
		init_fail(INIT_SOCK_FD, -errno, "pipe: %m");
	agent = fork();
	if (agent != 0 && o->agent_forked && prctl(PR_SET_DUMPABLE, 0) < 0)
		init_fail(INIT_SOCK_FD, -errno, "PR_SET_DUMPABLE: %m");
	if (agent < 0)
		init_fail(
		        INIT_SOCK_FD, -errno, "fork: %m%s",
		        errno == EAGAIN && o->pids_max
		                ? " (the task limit counts the sandbox's init too: give at least 2)"
		                : "");
	if (agent == 0) {
		close(sfd);
		if (go_pipe[0] >= 0)
			agent_wait_go(go_pipe);
		exec_agent(a);
	}
	setpgid(agent, agent);
	if (o->pty)
		give_terminal(agent);
	if (o->agent_forked)
		release_agent(agent, go_pipe);
	send_msg(INIT_SOCK_FD, SANDBOX_MSG_READY, 0, NULL, 0);
	init_loop(agent, o->pty, sfd);
}

/* ---- the supervisor's side --------------------------------------------------------------- */

static int count_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;

	if (!d)
		return -errno;
	for (struct dirent *de; (de = readdir(d));)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static int write_proc_file(pid_t pid, const char *name, const char *text)
{
	char path[64];
	_cleanup_close_ int fd = -EBADF;
	size_t len = strlen(text);

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		return -errno;
	return 0;
}

/* Raise PID's oom_score_adj to ADJ, never lower it (a supervisor started with a higher one,
 * in a container, say, may not go below it without CAP_SYS_RESOURCE). A default, not a wall
 * (sandbox.h): a failure leaves the score as it was. */
static void raise_oom_score_adj(pid_t pid, int adj)
{
	char path[64], text[16];
	_cleanup_close_ int fd = -EBADF;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", (int)pid);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, text, sizeof(text) - 1);
	if (n <= 0)
		return;
	text[n] = '\0';
	if (atoi(text) >= adj)
		return;
	n = snprintf(text, sizeof(text), "%d", adj);
	(void)!pwrite(fd, text, (size_t)n, 0);
}

/* Map our uid/gid to themselves: the agent keeps them. setgroups must be denied before an
 * unprivileged gid_map write. */
static int write_id_maps(pid_t pid, struct cl_error *err)
{
	char map[64];
	int r;

	r = sandbox_format_id_map(geteuid(), geteuid(), map, sizeof(map));
	if (r >= 0)
		r = write_proc_file(pid, "uid_map", map);
	if (r < 0)
		return cl_error_set(err, r, "writing uid_map: %s", strerror(-r));
	r = write_proc_file(pid, "setgroups", "deny");
	if (r < 0 && r != -ENOENT)
		return cl_error_set(err, r, "writing setgroups: %s", strerror(-r));
	r = sandbox_format_id_map(getegid(), getegid(), map, sizeof(map));
	if (r >= 0)
		r = write_proc_file(pid, "gid_map", map);
	if (r < 0)
		return cl_error_set(err, r, "writing gid_map: %s", strerror(-r));
	return 0;
}

static void reap_init(struct sandbox *sb, bool block)
{
	siginfo_t si = {0};

	if (sb->init_reaped || sb->pidfd < 0)
		return;
	while (waitid((idtype_t)P_PIDFD, (id_t)sb->pidfd, &si, WEXITED | (block ? 0 : WNOHANG)) <
	       0) {
		if (errno != EINTR) {
			sb->init_reaped = errno == ECHILD;
			return;
		}
	}
	if (si.si_pid != 0)
		sb->init_reaped = true;
}

void sandbox_free(struct sandbox *sb)
{
	if (!sb)
		return;
	if (!sb->init_reaped && sb->pidfd >= 0) {
		if (sb->cg)
			(void)cgroup_kill(sb->cg);
		(void)sys_pidfd_send_signal(sb->pidfd, SIGKILL);
		reap_init(sb, true);
		trace_timing_mark("sandbox: init reaped");
	}
	if (sb->cg)
		(void)cgroup_destroy(sb->cg, CGROUP_TIMEOUT_MS);
	if (sb->listener_fd >= 0)
		close(sb->listener_fd);
	for (int i = 0; i < 2; i++)
		if (sb->view_fds[i] >= 0)
			close(sb->view_fds[i]);
	if (sb->epfd >= 0)
		close(sb->epfd);
	if (sb->sock >= 0)
		close(sb->sock);
	if (sb->pidfd >= 0)
		close(sb->pidfd);
	if (sb->pty_master >= 0)
		close(sb->pty_master);
	free(sb);
}
CL_DEFINE_TRIVIAL_CLEANUP(struct sandbox *, sandbox_free)

/* Receive one message during start-up (blocking, but also watching the init's death). */
static int recv_setup_msg(struct sandbox *sb, struct sandbox_msg *ret, int *ret_fd)
{
	char buf[sizeof(struct sandbox_msg)];
	struct pollfd p[2] = {{.fd = sb->sock, .events = POLLIN},
	                      {.fd = sb->pidfd, .events = POLLIN}};
	struct sandbox_msg m;
	size_t len = 0;
	ssize_t n;
	int r;

	*ret_fd = -1;
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[0].revents)
			break;
		if (p[1].revents)
			return -ECHILD; /* died without a word */
	}
	n = recv(sb->sock, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	if (n == 0)
		return -ECHILD;
	if (n < 0)
		return -errno;
	r = sandbox_msg_validate(buf, (size_t)n, &m);
	if (r < 0)
		return r;
	if (sandbox_msg_has_fd(m.type)) {
		r = fdpass_recv(sb->sock, buf, sizeof(buf), &len, ret_fd);
		if (r < 0)
			return r;
	} else if (recv(sb->sock, buf, sizeof(buf), 0) < 0) {
		return -errno;
	}
	*ret = m;
	return 0;
}

/* The pid a pidfd refers to, in our pid namespace (its fdinfo's "Pid:" line). */
static pid_t pidfd_pid(int pidfd)
{
	char path[64], buf[1024];
	_cleanup_close_ int fd = -EBADF;
	const char *line;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	line = strstr(buf, "\nPid:\t");
	if (!line)
		return -ENOENT;
	n = strtol(line + 6, NULL, 10);
	return n > 0 ? (pid_t)n : -ESRCH;
}

/* The init forked the agent, which waits: the caller's hook first (it takes PIDFD), then go. */
static int agent_forked(struct sandbox *sb, const struct sandbox_opts *opts, int pidfd,
                        struct cl_error *err)
{
	struct sandbox_msg go = {.type = SANDBOX_MSG_AGENT_GO};
	pid_t agent = pidfd_pid(pidfd);
	int r;

	close(pidfd);
	if (agent < 0)
		return cl_error_set(err, agent, "sandbox: the agent's pid: %s", strerror(-agent));
	if (opts->agent_forked) {
		r = opts->agent_forked(opts->agent_forked_userdata, agent, err);
		if (r < 0)
			return r;
	}
	if (send(sb->sock, &go, sizeof(go), MSG_NOSIGNAL) < 0)
		return cl_error_set(err, -errno, "starting the agent: %m");
	return 0;
}

/* The task limit: the cgroup's pids.max where it can be had, RLIMIT_NPROC in a user
 * namespace (the init sets it), both when both can. */
static int limit_pids(struct sandbox *sb, const struct sandbox_opts *opts, bool userns,
                      struct cl_error *err)
{
	struct cl_error why = {""};
	bool legacy = false;
	int r = -EOPNOTSUPP;

	if (opts->pids_max == 0)
		return 0;
	if (sb->cg) {
		r = cgroup_limit_pids(sb->cg, opts->pids_max, &legacy, &why);
		if (r >= 0) {
			sb->pids_limit = legacy ? "cgroup v1 pids.max" : "cgroup pids.max";
			sb->pids_polls = !legacy;
		}
	} else {
		snprintf(why.msg, sizeof(why.msg), "the sandbox has no cgroup");
	}
	if (r < 0 && userns) {
		sb->pids_limit = "RLIMIT_NPROC in the sandbox's user namespace";
		return 0;
	}
	if (r < 0) {
		snprintf(sb->pids_why, sizeof(sb->pids_why), "%s",
		         why.msg[0] ? why.msg : strerror(-r));
		if (opts->pids_max_required)
			return cl_error_set(err, r, "cannot limit the sandbox's tasks: %s",
			                    sb->pids_why);
	}
	return 0;
}

int sandbox_start(const struct sandbox_opts *opts, struct sandbox **ret, struct cl_error *err)
{
	_cleanup_(sandbox_freep) struct sandbox *sb = NULL;
	_cleanup_free_ char *cwd = NULL, *parent = NULL;
	_cleanup_close_ int child_sock = -EBADF;
	struct clone_args ca = {0};
	struct cgroup_owner owner;
	struct init_args a;
	bool userns;
	int sv[2], pidfd = -1, dumpable, r;
	pid_t pid;

	if (!opts->argv || !opts->argv[0] || !opts->envp)
		return cl_error_set(err, -EINVAL, "no command to run");
	r = count_threads();
	if (r != 1)
		return cl_error_set(err, r < 0 ? r : -EBUSY,
		                    "the sandbox must be started before any thread is (%d threads)",
		                    r);

	sb = calloc(1, sizeof(*sb));
	if (!sb)
		return -ENOMEM;
	sb->pidfd = sb->sock = sb->epfd = sb->listener_fd = sb->pty_master = -1;
	sb->pty = opts->pty;
	sb->view_fds[0] = sb->view_fds[1] = -1;

	if (opts->cwd) {
		cwd = strdup(opts->cwd);
	} else {
		cwd = getcwd(NULL, 0);
		if (!cwd)
			return cl_error_set(err, -errno, "the current directory is gone: %m");
	}
	if (!cwd)
		return -ENOMEM;

	/* Our cgroup leaf; stale leaves of dead supervisors go first. */
	if (opts->cgroup_parent) {
		parent = strdup(opts->cgroup_parent);
		r = parent ? 0 : -ENOMEM;
	} else {
		r = cgroup_default_parent(&parent);
	}
	if (r >= 0)
		r = cgroup_owner_self(&owner);
	if (r >= 0) {
		(void)cgroup_cleanup_stale(parent, CGROUP_TIMEOUT_MS);
		r = cgroup_create(parent, opts->name ? opts->name : "sandbox", &owner, &sb->cg,
		                  err);
	} else {
		cl_error_set(err, r, "cannot find the cgroup2 hierarchy: %s", strerror(-r));
	}
	if (r < 0 && !opts->cgroup_optional)
		return r;
	(void)cgroup_cleanup_stale_companions(CGROUP_TIMEOUT_MS);
	userns = sandbox_want_userns(opts->userns, geteuid());
	r = limit_pids(sb, opts, userns, err);
	if (r < 0)
		return r;
	trace_timing_mark("sandbox: cgroup leaf");

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return cl_error_set(err, -errno, "socketpair: %m");
	sb->sock = sv[0];
	child_sock = sv[1];

	ca.flags = CLONE_NEWPID | CLONE_NEWNS | (opts->share_network ? 0 : CLONE_NEWNET) |
	           CLONE_PIDFD | (userns ? CLONE_NEWUSER : 0);
	ca.pidfd = (uint64_t)(uintptr_t)&pidfd;
	ca.exit_signal = SIGCHLD;
	if (sb->cg) {
		/* Born in the leaf: no moment where it runs (or forks) outside. */
		ca.flags |= CLONE_INTO_CGROUP;
		ca.cgroup = (uint64_t)cgroup_dir_fd(sb->cg);
	}
	a = (struct init_args){.opts = opts,
	                       .cwd = cwd,
	                       .sock = child_sock,
	                       .nproc_limit = userns && opts->pids_max > 0,
	                       .cg = sb->cg};

	/* Writing the child's uid_map needs its /proc files to be ours, i.e. the child dumpable.
	 * A process that changed its uid without exec is not; the child inherits the flag at the
	 * clone (so ours is flipped only around it) and clears it again once the maps are written.
	 */
	dumpable = prctl(PR_GET_DUMPABLE);
	if (userns && dumpable == 0)
		(void)prctl(PR_SET_DUMPABLE, 1);
	pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	if (userns && dumpable == 0 && pid != 0)
		(void)prctl(PR_SET_DUMPABLE, 0);
	if (pid < 0) {
		r = -errno;
		return cl_error_set(err, r, "clone3 (new pid/mount/net%s namespaces): %s",
		                    userns ? "/user" : "", strerror(-r));
	}
	if (pid == 0)
		init_main(&a);

	sb->init_pid = pid;
	sb->pidfd = pidfd;
	close(TAKE_FD(child_sock));
	trace_timing_mark("sandbox: clone3 init");

	if (userns) {
		r = write_id_maps(pid, err);
		if (r < 0)
			return r;
	}
	if (opts->oom_score_adj)
		raise_oom_score_adj(pid, opts->oom_score_adj);
	if (opts->setup_network) {
		char path[64];
		_cleanup_close_ int netns_fd = -EBADF;

		if (!opts->share_network) {
			snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
			netns_fd = open(path, O_RDONLY | O_CLOEXEC);
			if (netns_fd < 0)
				return cl_error_set(err, -errno, "%s: %m", path);
		}
		r = opts->setup_network(opts->setup_network_userdata, netns_fd,
		                        sb->cg ? cgroup_dir_fd(sb->cg) : -1, err);
		if (r < 0)
			return r;
		trace_timing_mark("sandbox: network hook");
	}
	{
		struct sandbox_msg go = {.type = SANDBOX_MSG_GO};

		if (send(sb->sock, &go, sizeof(go), MSG_NOSIGNAL) < 0)
			return cl_error_set(err, -errno, "starting the sandbox init: %m");
	}
	for (;;) {
		struct sandbox_msg m;
		int fd = -1;

		r = recv_setup_msg(sb, &m, &fd);
		if (r < 0)
			return cl_error_set(err, r, "the sandbox init died during set-up: %s",
			                    strerror(-r));
		if (m.type == SANDBOX_MSG_LISTENER) {
			if (sb->listener_fd >= 0)
				close(sb->listener_fd);
			sb->listener_fd = fd;
			trace_timing_mark("sandbox: init mounts, seccomp listener");
		} else if (m.type == SANDBOX_MSG_PTY) {
			if (sb->pty_master >= 0)
				close(sb->pty_master);
			sb->pty_master = fd;
		} else if (m.type == SANDBOX_MSG_VIEW && (m.value == 0 || m.value == 1)) {
			if (sb->view_fds[m.value] >= 0)
				close(sb->view_fds[m.value]);
			sb->view_fds[m.value] = fd;
		} else if (m.type == SANDBOX_MSG_AGENT) {
			r = agent_forked(sb, opts, fd, err);
			if (r < 0)
				return r;
		} else if (m.type == SANDBOX_MSG_ERROR) {
			return cl_error_set(err, m.value < 0 ? m.value : -EIO, "sandbox: %s",
			                    m.text);
		} else if (m.type == SANDBOX_MSG_READY) {
			break;
		}
	}
	if (opts->install_filter && sb->listener_fd < 0)
		return cl_error_set(err, -EPROTO, "sandbox: no listener fd from the init");
	if (opts->pty && sb->pty_master < 0)
		return cl_error_set(err, -EPROTO, "sandbox: no terminal from the init");

	sb->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (sb->epfd < 0)
		return cl_error_set(err, -errno, "epoll_create1: %m");
	{
		struct epoll_event e1 = {.events = EPOLLIN, .data.fd = sb->sock};
		struct epoll_event e2 = {.events = EPOLLIN, .data.fd = sb->pidfd};

		if (epoll_ctl(sb->epfd, EPOLL_CTL_ADD, sb->sock, &e1) < 0 ||
		    epoll_ctl(sb->epfd, EPOLL_CTL_ADD, sb->pidfd, &e2) < 0)
			return cl_error_set(err, -errno, "epoll_ctl: %m");
	}
	*ret = TAKE_PTR(sb);
	return 0;
}

int sandbox_listener_fd(const struct sandbox *sb)
{
	return sb->listener_fd;
}

int sandbox_take_listener_fd(struct sandbox *sb)
{
	int fd = sb->listener_fd;

	sb->listener_fd = -1;
	return fd;
}

int sandbox_take_pty_master(struct sandbox *sb)
{
	int fd = sb->pty_master;

	sb->pty_master = -1;
	return fd;
}

int sandbox_take_view(struct sandbox *sb, int *ret_root_fd, int *ret_mountinfo_fd)
{
	if (sb->view_fds[0] < 0 || sb->view_fds[1] < 0)
		return -ENOENT;
	*ret_root_fd = TAKE_FD(sb->view_fds[0]);
	*ret_mountinfo_fd = TAKE_FD(sb->view_fds[1]);
	return 0;
}

int sandbox_status_fd(const struct sandbox *sb)
{
	return sb->epfd;
}

static void report_exit(struct sandbox *sb, int exit_code, struct sandbox_status *ret)
{
	sb->exit_reported = true;
	*ret = (struct sandbox_status){.kind = SANDBOX_EXITED, .exit_code = exit_code};
}

int sandbox_handle_status(struct sandbox *sb, struct sandbox_status *ret)
{
	if (sb->exit_reported)
		return -ECHILD;
	while (!sb->sock_eof) {
		char buf[sizeof(struct sandbox_msg)];
		struct sandbox_msg m;
		ssize_t n = recv(sb->sock, buf, sizeof(buf), MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			n = 0; /* ECONNRESET and the like: the init is gone */
		}
		if (n == 0) {
			sb->sock_eof = true;
			(void)epoll_ctl(sb->epfd, EPOLL_CTL_DEL, sb->sock, NULL);
			break;
		}
		if (sandbox_msg_validate(buf, (size_t)n, &m) < 0)
			continue;
		switch (m.type) {
		case SANDBOX_MSG_STOPPED:
			*ret = (struct sandbox_status){.kind = SANDBOX_STOPPED,
			                               .stop_signal = m.value};
			return 0;
		case SANDBOX_MSG_CONTINUED:
			*ret = (struct sandbox_status){.kind = SANDBOX_CONTINUED};
			return 0;
		case SANDBOX_MSG_SIGNALLED:
			*ret = (struct sandbox_status){.kind = SANDBOX_SIGNALLED,
			                               .signal = m.value};
			return 0;
		case SANDBOX_MSG_EXITED: {
			int code = sandbox_exit_code_from_wait_status(m.value);

			report_exit(sb, code < 0 ? 127 : code, ret);
			return 0;
		}
		default:
			continue;
		}
	}
	/* No report, but the init may have died (killed from outside, or with the cgroup). */
	{
		siginfo_t si = {0};

		if (waitid((idtype_t)P_PIDFD, (id_t)sb->pidfd, &si, WEXITED | WNOHANG) < 0)
			return errno == EINTR ? -EAGAIN : -errno;
		if (si.si_pid == 0)
			return -EAGAIN;
		sb->init_reaped = true;
		report_exit(sb, si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status, ret);
		return 0;
	}
}

static int send_to_init(struct sandbox *sb, enum sandbox_msg_type type, int value)
{
	struct sandbox_msg m = {.type = type, .value = value};

	if (sb->sock_eof || sb->init_reaped)
		return -ESRCH;
	if (send(sb->sock, &m, sizeof(m), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		return errno == EPIPE || errno == ECONNRESET ? -ESRCH : -errno;
	return 0;
}

int sandbox_signal(struct sandbox *sb, int sig)
{
	if (sig <= 0 || sig >= NSIG)
		return -EINVAL;
	return send_to_init(sb, SANDBOX_MSG_SIGNAL, sig);
}

int sandbox_signal_group(struct sandbox *sb, int sig)
{
	if (sig <= 0 || sig >= NSIG)
		return -EINVAL;
	return send_to_init(sb, SANDBOX_MSG_SIGNAL_GROUP, sig);
}

int sandbox_continue(struct sandbox *sb, bool foreground)
{
	return send_to_init(sb, SANDBOX_MSG_CONTINUE, foreground && sb->pty);
}

int sandbox_pause(struct sandbox *sb, bool paused)
{
	int r;

	if (!sb->cg)
		return -EOPNOTSUPP;
	/* A task blocked in a notified exec (the very one being asked about) freezes only once
	 * it is answered, so the cgroup may not report frozen yet: wait briefly for the others,
	 * never long, since the caller is the event loop. */
	r = cgroup_freeze(sb->cg, paused, paused ? PAUSE_SETTLE_MS : 0);
	return r == -ETIMEDOUT ? 0 : r;
}

int sandbox_kill(struct sandbox *sb)
{
	int r = 0;

	if (sb->cg)
		r = cgroup_kill(sb->cg);
	if (!sb->init_reaped && sys_pidfd_send_signal(sb->pidfd, SIGKILL) < 0 && errno != ESRCH &&
	    r == 0)
		r = -errno;
	return r;
}

uint64_t sandbox_cgroup_id(const struct sandbox *sb)
{
	return sb->cg ? cgroup_id(sb->cg) : 0;
}

const char *sandbox_cgroup_path(const struct sandbox *sb)
{
	return sb->cg ? cgroup_path(sb->cg) : NULL;
}

const char *sandbox_pids_limit(const struct sandbox *sb, const char **ret_why)
{
	if (ret_why)
		*ret_why = sb->pids_why[0] ? sb->pids_why : NULL;
	return sb->pids_limit;
}

int sandbox_pids_events_fd(const struct sandbox *sb, bool *ret_polls)
{
	if (ret_polls)
		*ret_polls = sb->pids_polls;
	return sb->cg ? cgroup_pids_events_fd(sb->cg) : -ENOENT;
}

int sandbox_pids_refused(const struct sandbox *sb, uint64_t *ret)
{
	return sb->cg ? cgroup_pids_refused(sb->cg, ret) : -ENOENT;
}

pid_t sandbox_init_pid(const struct sandbox *sb)
{
	return sb->init_pid;
}
