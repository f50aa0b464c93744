/* cloister-shim: impersonates a tool by argv[0] and forwards the call to the supervisor.
 *
 * Installed as /cloister/bin/<tool> (a symlink to this binary), it captures argv, cwd, the
 * environment, uid and gid, sends them as one request frame (protocol/frame.h) over the unix
 * socket $CLOISTER_SOCKET (default /var/run/cloister/shim.sock) or, when
 * $CLOISTER_SUPERVISOR=host:port is set, over TCP with $CLOISTER_TOKEN in the request, then
 * relays the command's stdout and stderr as they arrive and exits with its exit status.
 * SIGINT, SIGTERM and SIGHUP become a cancel frame. Exit 127 when the supervisor cannot be
 * reached (or is lost), 126 on a denial.
 *
 * Run as `cloister-shim TOOL [ARGS…]` it impersonates TOOL (for tests and benchmarks).
 *
 * Statically linked, no NSS, no allocation beyond the request and one frame buffer. It dies
 * early and clearly, bubblewrap-style: every failure is one line on stderr naming the tool. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "protocol/address.h"
#include "base/cleanup.h"
#include "protocol/frame.h"
#include "protocol/message.h"

#define SHIM_NAME          "cloister-shim"
#define DEFAULT_SOCKET     "/var/run/cloister/shim.sock"
#define EXIT_DENIED        126
#define EXIT_UNREACHABLE   127
#define CONNECT_TIMEOUT_MS 5000
#define PENDING_NOTICE_MS  1000
#define CANCEL_GRACE_MS    10000
#define DENIAL_READ_MS     2000
#define MAX_DENIAL_REASON  2048
#define READ_CHUNK         (64 * 1024)
/* The token is for the supervisor, never for the tool. */
#define TOKEN_VARIABLE "CLOISTER_TOKEN"

static const char *tool = SHIM_NAME;
static volatile sig_atomic_t pending_signal;

static void on_signal(int sig)
{
	pending_signal = sig;
}

__attribute__((format(printf, 2, 3), noreturn)) static void die(int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, SHIM_NAME ": %s: %s\n", tool, msg);
	exit(code);
}

static void note(const char *msg)
{
	fprintf(stderr, SHIM_NAME ": %s: %s\n", tool, msg);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Write everything, waiting when fd is non-blocking. Returns 0 or -errno. */
static int write_all(int fd, const void *data, size_t len)
{
	const uint8_t *p = data;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				struct pollfd pfd = {.fd = fd, .events = POLLOUT};

				if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
					return -errno;
				continue;
			}
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ---- the request ------------------------------------------------------------------------- */

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* The environment as environ(7) has it, less malformed entries (no '=' or an empty name, which
 * a request cannot carry) and the token. The vector points into environ. */
static char **capture_env(size_t *ret_n)
{
	extern char **environ;
	size_t n = 0, k = 0;
	char **v;

	for (char **e = environ; e && *e; e++)
		n++;
	v = calloc(n + 1, sizeof(*v));
	if (!v)
		die(EXIT_DENIED, "out of memory");
	for (char **e = environ; e && *e; e++) {
		if ((*e)[0] == '=' || !strchr(*e, '='))
			continue;
		if (strncmp(*e, TOKEN_VARIABLE "=", sizeof(TOKEN_VARIABLE)) == 0)
			continue;
		v[k++] = *e;
	}
	*ret_n = k;
	return v;
}

static char *capture_cwd(void)
{
	char *cwd = getcwd(NULL, 0);

	if (!cwd)
		die(EXIT_DENIED, "cannot read the current directory: %s", strerror(errno));
	return cwd;
}

/* The request frame, malloc'd. */
static uint8_t *build_request(char **argv, size_t argc, const char *token, size_t *ret_len)
{
	_cleanup_free_ char *cwd = capture_cwd(), *json = NULL;
	_cleanup_free_ char **env = NULL;
	struct cl_exec_request req = {0};
	struct cl_error err = {""};
	uint8_t *frame = NULL;
	size_t len = 0;
	int r;

	env = capture_env(&req.envc);
	req.tool = (char *)tool;
	req.argv = argv;
	req.argc = argc;
	req.cwd = cwd;
	req.env = env;
	req.uid = (uint32_t)getuid();
	req.gid = (uint32_t)getgid();
	req.token = (char *)token;
	r = cl_exec_request_to_json(&req, &err, &json);
	if (r < 0)
		die(EXIT_DENIED, "cannot build the request: %s", err.msg);
	r = cl_frame_encode_request_alloc(json, strlen(json), &frame, &len);
	explicit_bzero(json, strlen(json));
	if (r < 0)
		die(EXIT_DENIED, "cannot build the request: %s", strerror(-r));
	*ret_len = len;
	return frame;
}

/* ---- connecting ---------------------------------------------------------------------------- */

static int connect_unix(const char *path, char *where, size_t where_size)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	_cleanup_close_ int fd = -EBADF;

	snprintf(where, where_size, "%s", path);
	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	while (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
		if (errno != EINTR)
			return -errno;
	return TAKE_FD(fd);
}

static int connect_tcp(const char *spec, char *where, size_t where_size)
{
	struct sockaddr_storage ss;
	struct cl_error err = {""};
	_cleanup_close_ int fd = -EBADF;
	socklen_t len;
	int r, one = 1;

	snprintf(where, where_size, "%s", spec);
	r = cl_address_parse(spec, &err, &ss, &len);
	if (r < 0)
		die(EXIT_UNREACHABLE, "CLOISTER_SUPERVISOR=%s: %s", spec, err.msg);
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&ss, len) < 0) {
		struct pollfd pfd = {.fd = fd, .events = POLLOUT};
		socklen_t elen = sizeof(r);

		if (errno != EINPROGRESS)
			return -errno;
		r = poll(&pfd, 1, CONNECT_TIMEOUT_MS);
		if (r == 0)
			return -ETIMEDOUT;
		if (r < 0)
			return -errno;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &r, &elen) < 0)
			return -errno;
		if (r != 0)
			return -r;
	}
	/* Small frames (a cancel) should leave at once. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (fcntl(fd, F_SETFL, 0) < 0)
		return -errno;
	return TAKE_FD(fd);
}

/* ---- talking ----------------------------------------------------------------------------- */

struct session {
	int fd;
	struct cl_frame_decoder dec;
	bool cancel_sent;
	int cancel_signal;
	uint64_t cancel_deadline;
};

static void send_cancel(struct session *s, int sig)
{
	uint8_t frame[CL_FRAME_STREAM_HEADER_SIZE];
	int n;

	if (s->cancel_sent)
		return;
	n = cl_frame_encode_stream(CL_FRAME_CANCEL, NULL, 0, frame, sizeof(frame));
	/* A failed send means the supervisor is gone; the read side will say so. */
	if (n > 0)
		(void)write_all(s->fd, frame, (size_t)n);
	s->cancel_sent = true;
	s->cancel_signal = sig;
	s->cancel_deadline = now_ms() + CANCEL_GRACE_MS;
}

/* Wait until the socket is readable, a signal arrives or deadline_ms (0: none) passes.
 * Signals are blocked except inside ppoll, so none is lost between the check and the wait.
 * Returns 1 readable, 0 timed out; a signal turns into a cancel and waiting goes on. */
static int wait_readable(struct session *s, const sigset_t *waitmask, uint64_t deadline_ms)
{
	for (;;) {
		struct pollfd pfd = {.fd = s->fd, .events = POLLIN};
		struct timespec ts, *tsp = NULL;
		uint64_t deadline = deadline_ms;
		int r;

		if (pending_signal) {
			int sig = pending_signal;

			pending_signal = 0;
			if (s->cancel_sent) /* a second signal: stop waiting */
				exit(128 + sig);
			send_cancel(s, sig);
		}
		if (s->cancel_sent && (!deadline || s->cancel_deadline < deadline))
			deadline = s->cancel_deadline;
		if (deadline) {
			uint64_t now = now_ms(), left = deadline > now ? deadline - now : 0;

			ts.tv_sec = (time_t)(left / 1000);
			ts.tv_nsec = (long)(left % 1000) * 1000000;
			tsp = &ts;
		}
		r = ppoll(&pfd, 1, tsp, waitmask);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die(EXIT_UNREACHABLE, "lost the supervisor: %s", strerror(errno));
		if (r > 0)
			return 1;
		if (s->cancel_sent && now_ms() >= s->cancel_deadline)
			exit(128 + s->cancel_signal);
		return 0;
	}
}

/* Read one ack byte; the wait may be long (a person answering). */
static enum cl_ack read_ack(struct session *s, const sigset_t *waitmask, uint64_t notice_at)
{
	struct cl_error err = {""};
	enum cl_ack ack;
	uint8_t byte;
	ssize_t n;

	for (;;) {
		if (wait_readable(s, waitmask, notice_at) == 0) {
			note("waiting for approval; a person is being asked (Ctrl-C cancels)");
			notice_at = 0;
			continue;
		}
		n = read(s->fd, &byte, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die(EXIT_UNREACHABLE, "lost the supervisor: %s", strerror(errno));
		if (n == 0) {
			if (s->cancel_sent)
				exit(128 + s->cancel_signal);
			die(EXIT_UNREACHABLE,
			    "the supervisor closed the connection without an answer");
		}
		if (cl_ack_parse(byte, &err, &ack) < 0)
			die(EXIT_UNREACHABLE, "protocol error: %s", err.msg);
		return ack;
	}
}

/* Relay one output frame. A closed stdout or stderr acts as it would on the real tool:
 * SIGPIPE, here a cancel and exit 141. */
static void relay(struct session *s, int fd, const uint8_t *p, size_t len)
{
	int r = write_all(fd, p, len);

	if (r == -EPIPE) {
		send_cancel(s, SIGPIPE);
		exit(128 + SIGPIPE);
	}
}

/* After ack 1: print what the supervisor says about the denial, then exit 126. */
__attribute__((noreturn)) static void denied(struct session *s, const sigset_t *waitmask)
{
	char reason[MAX_DENIAL_REASON + 1];
	size_t have = 0;
	uint8_t buf[4096];
	uint64_t deadline = now_ms() + DENIAL_READ_MS;

	if (s->cancel_sent)
		exit(128 + s->cancel_signal);
	while (have < MAX_DENIAL_REASON && wait_readable(s, waitmask, deadline) == 1) {
		size_t off = 0;
		ssize_t n = read(s->fd, buf, sizeof(buf));

		if (n <= 0)
			break;
		while (off < (size_t)n) {
			struct cl_frame f;
			size_t used = 0;
			int r = cl_frame_decoder_feed(&s->dec, buf + off, (size_t)n - off, NULL,
			                              &used, &f);

			off += used;
			if (r <= 0)
				break;
			if (f.type != CL_FRAME_STDERR)
				continue;
			for (size_t i = 0; i < f.len && have < MAX_DENIAL_REASON; i++) {
				uint8_t c = f.payload[i];

				reason[have++] =
				        (c == '\n' || c == '\t' || (c >= 0x20 && c != 0x7f))
				                ? (char)c
				                : '?';
			}
		}
	}
	while (have > 0 && (reason[have - 1] == '\n' || reason[have - 1] == ' '))
		have--;
	reason[have] = '\0';
	if (have)
		die(EXIT_DENIED, "denied by the supervisor: %s", reason);
	die(EXIT_DENIED, "denied by the supervisor");
}

/* After ack 0: relay frames until the exit frame. */
__attribute__((noreturn)) static void run_stream(struct session *s, const sigset_t *waitmask)
{
	static uint8_t buf[READ_CHUNK];
	struct cl_error err = {""};

	for (;;) {
		size_t off = 0;
		ssize_t n;

		if (wait_readable(s, waitmask, 0) == 0)
			continue;
		n = read(s->fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die(EXIT_UNREACHABLE, "lost the supervisor: %s", strerror(errno));
		if (n == 0) {
			if (s->cancel_sent)
				exit(128 + s->cancel_signal);
			die(EXIT_UNREACHABLE,
			    "the supervisor closed the connection before the command finished");
		}
		while (off < (size_t)n) {
			struct cl_frame f;
			size_t used = 0;
			int r = cl_frame_decoder_feed(&s->dec, buf + off, (size_t)n - off, &err,
			                              &used, &f);

			if (r < 0)
				die(EXIT_UNREACHABLE, "protocol error: %s", err.msg);
			off += used;
			if (r == 0)
				break;
			switch (f.type) {
			case CL_FRAME_STDOUT:
				relay(s, STDOUT_FILENO, f.payload, f.len);
				break;
			case CL_FRAME_STDERR:
				relay(s, STDERR_FILENO, f.payload, f.len);
				break;
			case CL_FRAME_EXIT:
				if (f.exit_status < 0 || f.exit_status > 255)
					die(EXIT_DENIED,
					    "the command did not finish (timed out or could not "
					    "start)");
				exit(f.exit_status);
			default:
				die(EXIT_UNREACHABLE, "protocol error: unexpected frame type %d",
				    (int)f.type);
			}
		}
	}
}

int main(int argc, char **argv)
{
	char where[256];
	const char *spec, *token = NULL;
	_cleanup_free_ uint8_t *request = NULL;
	struct session s = {.fd = -EBADF};
	struct sigaction sa = {.sa_handler = on_signal};
	sigset_t block, waitmask;
	size_t request_len = 0;
	enum cl_ack ack;
	int r;

	if (argc < 1 || !argv[0])
		die(EXIT_DENIED, "started without argv[0]");
	tool = base_name(argv[0]);
	if (strcmp(tool, SHIM_NAME) == 0) {
		if (argc < 2 || argv[1][0] == '-') {
			fprintf(stderr,
			        "usage: TOOL [ARGS...]   (with TOOL a symlink to " SHIM_NAME ")\n"
			        "       " SHIM_NAME " TOOL [ARGS...]\n"
			        "Forwards the call to the Cloister supervisor: unix socket "
			        "$CLOISTER_SOCKET (default " DEFAULT_SOCKET "),\n"
			        "or TCP $CLOISTER_SUPERVISOR=host:port with $CLOISTER_TOKEN.\n");
			return 2;
		}
		argv++;
		argc--;
		tool = base_name(argv[0]);
	}

	/* Signals: blocked except while waiting, so each one becomes exactly one cancel. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &waitmask);
	sigdelset(&waitmask, SIGINT);
	sigdelset(&waitmask, SIGTERM);
	sigdelset(&waitmask, SIGHUP);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	spec = getenv("CLOISTER_SUPERVISOR");
	if (spec && *spec) {
		token = getenv(TOKEN_VARIABLE);
		if (!token || !*token)
			die(EXIT_UNREACHABLE,
			    "CLOISTER_SUPERVISOR is set but CLOISTER_TOKEN is not: a TCP "
			    "supervisor needs its token");
		request = build_request(argv, (size_t)argc, token, &request_len);
		r = connect_tcp(spec, where, sizeof(where));
	} else {
		const char *path = getenv("CLOISTER_SOCKET");

		request = build_request(argv, (size_t)argc, NULL, &request_len);
		r = connect_unix(path && *path ? path : DEFAULT_SOCKET, where, sizeof(where));
	}
	if (r < 0)
		die(EXIT_UNREACHABLE, "cannot reach the Cloister supervisor at %s: %s", where,
		    strerror(-r));
	s.fd = r;

	r = write_all(s.fd, request, request_len);
	explicit_bzero(request, request_len);
	if (r < 0)
		die(EXIT_UNREACHABLE, "cannot send the request to %s: %s", where, strerror(-r));
	r = cl_frame_decoder_init(&s.dec, CL_FRAME_MODE_STREAM, 0);
	if (r < 0)
		die(EXIT_DENIED, "internal error: %s", strerror(-r));

	ack = read_ack(&s, &waitmask, 0);
	if (ack == CL_ACK_PENDING) {
		ack = read_ack(&s, &waitmask, now_ms() + PENDING_NOTICE_MS);
		if (ack == CL_ACK_PENDING)
			die(EXIT_UNREACHABLE, "protocol error: a second pending ack");
	}
	if (ack == CL_ACK_DENIED)
		denied(&s, &waitmask);
	run_stream(&s, &waitmask);
}
