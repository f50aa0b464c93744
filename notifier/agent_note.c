/* One line on a refused process's stderr; see agent_note.h. */
#include "notifier/agent_note.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <termios.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/term_escape.h"
#include "notifier/notify.h"

#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

/* The length of BUF[0..N) without a UTF-8 sequence that a cut left incomplete at its end. */
static size_t whole_characters(const char *buf, size_t n)
{
	size_t lead = n, need;
	unsigned char c;

	while (lead > 0 && n - lead < 4 && ((unsigned char)buf[lead - 1] & 0xc0) == 0x80)
		lead--;
	if (lead == 0)
		return n;
	c = (unsigned char)buf[lead - 1];
	if (c < 0xc0)
		return n; /* ASCII (or stray continuation bytes, escaped already) */
	need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
	return lead - 1 + need > n ? lead - 1 : n;
}

size_t agent_note_format(char *buf, size_t size, const char *what, const char *subject,
                         const char *why)
{
	static const char tail[] = " \xe2\x80\x94 ask the user to allow it\n";
	FILE *f;
	size_t n;

	if (size < 64) {
		if (size)
			buf[0] = '\0';
		return 0;
	}
	/* Room for the tail is kept; what the agent controls is escaped and cut. */
	f = fmemopen(buf, size - sizeof(tail), "w");
	if (!f) {
		buf[0] = '\0';
		return 0;
	}
	setvbuf(f, NULL, _IONBF, 0);
	fprintf(f, "cloister: %s ", what);
	term_escape_put(f, subject, 200);
	fputs(" refused: ", f);
	term_escape_put(f, why, 200);
	fflush(f);
	n = (size_t)ftell(f);
	fclose(f);
	/* fmemopen keeps the last byte for its NUL. */
	if (n > size - sizeof(tail) - 1)
		n = size - sizeof(tail) - 1;
	n = whole_characters(buf, n);
	memcpy(buf + n, tail, sizeof(tail));
	return n + sizeof(tail) - 1;
}

/* File systems where a write of a few bytes does not wait on anyone: not FUSE (its server may
 * be the agent), not a network one. */
static bool local_fs(long type)
{
	switch ((unsigned long)type) {
	case 0xEF53:     /* ext2/3/4 */
	case 0x58465342: /* xfs */
	case 0x9123683E: /* btrfs */
	case 0x01021994: /* tmpfs, memfd */
	case 0x794c7630: /* overlayfs */
	case 0xF2F52010: /* f2fs */
	case 0xca451a4e: /* bcachefs */
		return true;
	}
	return false;
}

static int reopen_nonblocking(int fd)
{
	char name[64];
	int r;

	/* A new open file description of the same pipe or terminal: O_NONBLOCK on it does not
	 * change the agent's own. O_NOCTTY: never our controlling terminal. */
	snprintf(name, sizeof(name), "/proc/self/fd/%d", fd);
	r = open(name, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	return r < 0 ? -errno : r;
}

int agent_note_add_pty(int master, struct agent_note_ttys *ttys)
{
	_cleanup_close_ int peer = -EBADF;
	struct stat st;

	if (ttys->n >= ELEMENTSOF(ttys->rdev))
		return -ENOSPC;
	peer = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (peer < 0)
		return -errno;
	if (fstat(peer, &st) < 0)
		return -errno;
	ttys->dev[ttys->n] = st.st_dev;
	ttys->rdev[ttys->n++] = st.st_rdev;
	return 0;
}

static bool own_tty(const struct agent_note_ttys *ttys, const struct stat *st)
{
	for (unsigned i = 0; ttys && i < ttys->n && i < ELEMENTSOF(ttys->rdev); i++)
		if (ttys->rdev[i] == st->st_rdev && ttys->dev[i] == st->st_dev)
			return true;
	return false;
}

/* Write with SIGPIPE (a pipe whose reader left between our open and the write) and SIGXFSZ
 * (a file over our size limit) held, and dropped if they were raised by this write. */
static int write_held(int fd, const char *text, size_t len, bool sock)
{
	sigset_t held, old, pending;
	struct timespec zero = {0, 0};
	ssize_t n;
	int saved;

	sigemptyset(&held);
	sigaddset(&held, SIGPIPE);
	sigaddset(&held, SIGXFSZ);
	if (sigprocmask(SIG_BLOCK, &held, &old) < 0)
		return -errno;
	if (sock)
		n = send(fd, text, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	else
		n = write(fd, text, len);
	saved = errno;
	/* Drop what this write raised (it was not pending before: blocked signals of ours are
	 * the loop's, and these two are never among them). */
	if (sigpending(&pending) == 0)
		while ((sigismember(&pending, SIGPIPE) && !sigismember(&old, SIGPIPE)) ||
		       (sigismember(&pending, SIGXFSZ) && !sigismember(&old, SIGXFSZ))) {
			if (sigtimedwait(&held, NULL, &zero) < 0)
				break;
			if (sigpending(&pending) < 0)
				break;
		}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return n < 0 ? -saved : 0;
}

int agent_note_send(const struct notifier *n, uint64_t id, pid_t pid, const char *text, size_t len,
                    const struct agent_note_ttys *ttys)
{
	_cleanup_close_ int pidfd = -EBADF, fd = -EBADF, wfd = -EBADF;
	struct statfs sfs;
	struct stat st;
	int r;

	if (len > AGENT_NOTE_MAX)
		len = AGENT_NOTE_MAX;
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return -errno;
	/* The process is still held in the syscall: PID was not reused before pidfd_open. */
	r = notifier_id_valid(n, id);
	if (r <= 0)
		return r < 0 ? r : -ESRCH;
	fd = (int)syscall(SYS_pidfd_getfd, pidfd, STDERR_FILENO, 0);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	switch (st.st_mode & S_IFMT) {
	case S_IFIFO:
		wfd = reopen_nonblocking(fd);
		if (wfd < 0)
			return wfd == -ENXIO ? -EPIPE : wfd; /* nobody reads it */
		return write_held(wfd, text, len, false);
	case S_IFSOCK:
		return write_held(fd, text, len, true);
	case S_IFCHR:
		if (!isatty(fd) || !own_tty(ttys, &st))
			return -ENOTSUP;
		wfd = reopen_nonblocking(fd);
		if (wfd < 0)
			return wfd;
		return write_held(wfd, text, len, false);
	case S_IFREG:
		if (fstatfs(fd, &sfs) < 0)
			return -errno;
		if (!local_fs(sfs.f_type))
			return -ENOTSUP;
		return write_held(fd, text, len, false);
	}
	return -ENOTSUP;
}
