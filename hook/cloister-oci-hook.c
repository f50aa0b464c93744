/* cloister-oci-hook: an OCI createRuntime hook that hands the container's network namespace to
 * the Cloister supervisor, which installs the egress rules and listeners in it, and waits for
 * its answer. Any failure exits non-zero, and the runtime then fails the container's start:
 * a container never runs without its egress rules (fail closed).
 *
 *   cloister-oci-hook [--socket PATH] [--timeout SECONDS]
 *
 * The OCI state arrives on stdin. PATH defaults to $CLOISTER_HOOK_SOCKET, then
 * /run/cloister/hook.sock. SECONDS (default 10) bounds the whole run. The wire format is in
 * protocol/oci_hook.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
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

#include "notifier/fdpass.h"
#include "oci/oci_state.h"
#include "base/cleanup.h"
#include "protocol/oci_hook.h"

static const char *prog = "cloister-oci-hook";

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until fd polls for events or the deadline passes. 1 ready, 0 timed out, -errno. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = events};
		int64_t left = deadline - now_ms();
		int r;

		if (left <= 0)
			return 0;
		r = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		return r > 0;
	}
}

/* Read stdin to its end (bounded in bytes and time). */
static int read_state(char *buf, size_t size, size_t *ret_len, int64_t deadline)
{
	size_t len = 0;

	for (;;) {
		ssize_t n;
		int r = wait_fd(STDIN_FILENO, POLLIN, deadline);

		if (r <= 0)
			return r < 0 ? r : -ETIMEDOUT;
		n = read(STDIN_FILENO, buf + len, size - len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == size)
			return -E2BIG;
	}
	*ret_len = len;
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: %s [--socket PATH] [--timeout SECONDS]  (OCI state on stdin)\n",
	        prog);
}

int main(int argc, char **argv)
{
	const char *path = getenv(OCI_HOOK_SOCKET_ENV);
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	_cleanup_(oci_state_freep) struct oci_state *state = NULL;
	_cleanup_close_ int netns = -EBADF, sock = -EBADF;
	_cleanup_free_ char *buf = NULL;
	char reply[OCI_HOOK_REPLY_MAX], msg[OCI_HOOK_MAX_REPLY_MSG + 1], nspath[64];
	struct cl_error err = {{0}};
	long timeout_s = 10;
	int64_t deadline;
	size_t len = 0;
	ssize_t n;
	int r;

	if (!path || !*path)
		path = OCI_HOOK_SOCKET;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
			path = argv[++i];
		} else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
			char *end;

			errno = 0;
			timeout_s = strtol(argv[++i], &end, 10);
			if (errno || *end || timeout_s < 1 || timeout_s > 3600) {
				usage();
				return 2;
			}
		} else {
			usage();
			return 2;
		}
	}
	deadline = now_ms() + timeout_s * 1000;
	if (strlen(path) >= sizeof(addr.sun_path))
		return fail("socket path %s is too long", path);
	memcpy(addr.sun_path, path, strlen(path) + 1);

	buf = malloc(OCI_HOOK_MAX_STATE);
	if (!buf)
		return fail("out of memory");
	r = read_state(buf, OCI_HOOK_MAX_STATE, &len, deadline);
	if (r < 0)
		return fail("reading the OCI state on stdin: %s",
		            r == -E2BIG ? "longer than 64 KiB" : strerror(-r));
	r = oci_state_parse(buf, len, &err, &state);
	if (r < 0)
		return fail("the OCI state on stdin: %s", err.msg);
	if (state->container_pid <= 0)
		return fail("container %s: the state has no pid", state->id);

	snprintf(nspath, sizeof(nspath), "/proc/%d/ns/net", (int)state->container_pid);
	netns = open(nspath, O_RDONLY | O_CLOEXEC);
	if (netns < 0)
		return fail("container %s: %s: %s", state->id, nspath, strerror(errno));

	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return fail("socket: %s", strerror(errno));
	if (connect(sock, (const struct sockaddr *)&addr, sizeof(addr)) < 0)
		return fail("container %s: cannot reach the cloister supervisor at %s: %s "
		            "(is `cloister-supervisor serve` running?)",
		            state->id, path, strerror(errno));
	r = fdpass_send(sock, netns, buf, len);
	if (r < 0)
		return fail("container %s: sending to %s: %s", state->id, path, strerror(-r));

	r = wait_fd(sock, POLLIN, deadline);
	if (r < 0)
		return fail("container %s: poll: %s", state->id, strerror(-r));
	if (r == 0)
		return fail("container %s: no answer from the supervisor within %ld s", state->id,
		            timeout_s);
	do
		n = recv(sock, reply, sizeof(reply), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return fail("container %s: %s", state->id, strerror(errno));
	r = oci_hook_reply_parse(reply, (size_t)n, msg);
	if (r < 0)
		return fail("container %s: the supervisor closed the connection without an answer",
		            state->id);
	if (r == 0)
		return fail("container %s: egress setup failed: %s", state->id, msg);
	return 0;
}
