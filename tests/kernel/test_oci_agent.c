/* The OCI servers against the real kernel: the seccomp agent socket (oci/oci_agent.h) fed
 * a real listener fd the way runc sends it, and bad messages; the hook server
 * (oci/oci_hook_server.h) fed network namespaces, by hand and by the real
 * cloister-oci-hook binary. The loop runs in this thread; clients write before it runs (unix
 * sockets buffer), or are child processes. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "netfilter/netns.h"
#include "notifier/fdpass.h"
#include "notifier/filter.h"
#include "notifier/notify.h"
#include "oci/oci_agent.h"
#include "oci/oci_hook_server.h"
#include "protocol/oci_hook.h"
#include "base/loop.h"

static const char runc_msg_fmt[] =
        "{\"ociVersion\":\"1.0.2-dev\",\"fds\":[\"seccompFd\"],\"pid\":%d,\"metadata\":"
        "\"name=web;project=shop\",\"state\":{\"ociVersion\":\"1.0.2-dev\",\"id\":\"c1\","
        "\"status\":\"%s\",\"pid\":%d,\"bundle\":\"/b\",\"annotations\":{}}}";

struct fixture {
	char dir[64];
	char path[128];
	struct loop *loop;
	struct oci_agent *agent;
	struct oci_hook_server *hooks;
	/* what the callbacks saw */
	int containers, errors;
	int listener_fd;
	char name[160], project[160], status[16], last_error[CL_ERROR_MAX];
	pid_t pid;
	struct oci_hook_request *req;
	int netns_fd; /* a dup of what the hook server handed over */
	bool reply_at_once;
};

static void on_container(void *userdata, const struct oci_state *s, const struct oci_identity *id,
                         int listener_fd, pid_t peer_pid)
{
	struct fixture *f = userdata;

	f->containers++;
	if (f->listener_fd >= 0)
		close(f->listener_fd);
	f->listener_fd = listener_fd;
	snprintf(f->name, sizeof(f->name), "%s", id->name);
	snprintf(f->project, sizeof(f->project), "%s", id->project);
	snprintf(f->status, sizeof(f->status), "%s", oci_status_name(s->status));
	f->pid = s->pid;
	loop_exit(f->loop, 0);
}

static void on_error(void *userdata, int error, const char *msg)
{
	struct fixture *f = userdata;

	f->errors++;
	snprintf(f->last_error, sizeof(f->last_error), "%s", msg);
	loop_exit(f->loop, 0);
}

static void on_netns(void *userdata, struct oci_hook_request *req, const struct oci_state *s,
                     const struct oci_identity *id, int netns_fd)
{
	struct fixture *f = userdata;

	f->containers++;
	snprintf(f->name, sizeof(f->name), "%s", id->name);
	f->pid = s->container_pid;
	f->netns_fd = fcntl(netns_fd, F_DUPFD_CLOEXEC, 3);
	if (f->reply_at_once)
		oci_hook_request_reply(req, 0, NULL);
	else
		f->req = req;
	loop_exit(f->loop, 0);
}

static int on_guard(struct loop *loop, void *userdata)
{
	loop_exit(loop, -ETIMEDOUT);
	return 0;
}

/* Run the loop until a callback stops it (or 5 s pass: a failure). */
static void run_loop(struct fixture *f)
{
	struct loop_timer *t = NULL;
	int r;

	assert_int_equal(loop_add_timer(f->loop, loop_now_ms() + 5000, on_guard, NULL, &t), 0);
	r = loop_run(f->loop);
	if (r == -ETIMEDOUT)
		fail_msg("nothing happened within 5 s");
	loop_cancel_timer(f->loop, t);
	assert_int_equal(r, 0);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct cl_error err = {{0}};

	if (geteuid() != 0) {
		free(f);
		print_message("skipped: needs root (seccomp listeners from runc run as root)\n");
		*state = NULL;
		return 0;
	}
	f->listener_fd = -1;
	f->netns_fd = -1;
	strcpy(f->dir, "/tmp/cloister-oci.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/run/agent.sock", f->dir);
	assert_int_equal(loop_new(&f->loop), 0);
	struct oci_agent_options o = {.path = f->path,
	                              .on_container = on_container,
	                              .on_error = on_error,
	                              .userdata = f,
	                              .timeout_ms = 300};
	if (oci_agent_new(f->loop, &o, &f->agent, &err) < 0)
		fail_msg("oci_agent_new: %s", err.msg);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	if (!f)
		return 0;
	oci_agent_free(f->agent);
	oci_hook_server_free(f->hooks);
	loop_free(f->loop);
	if (f->listener_fd >= 0)
		close(f->listener_fd);
	if (f->netns_fd >= 0)
		close(f->netns_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	(void)!system(cmd);
	free(f);
	return 0;
}

#define FIXTURE_OR_SKIP(f)          \
	struct fixture *f = *state; \
	do {                        \
		if (!f)             \
			skip();     \
	} while (0)

static int connect_to(const char *path, int type)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	strcpy(a.sun_path, path);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static int count_fds(void)
{
	char buf[64];
	int n = 0;

	for (int fd = 0; fd < 1024; fd++) {
		snprintf(buf, sizeof(buf), "/proc/self/fd/%d", fd);
		n += access(buf, F_OK) == 0;
	}
	return n;
}

static void test_socket_is_private(void **state)
{
	FIXTURE_OR_SKIP(f);
	struct stat st;
	char dir[160];

	assert_int_equal(lstat(f->path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	snprintf(dir, sizeof(dir), "%s/run", f->dir);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_string_equal(oci_agent_path(f->agent), f->path);
}

static void test_live_socket_is_not_taken_over_stale_one_is(void **state)
{
	FIXTURE_OR_SKIP(f);
	struct cl_error err = {{0}};
	struct oci_agent *b = NULL;
	struct oci_agent_options o = {.path = f->path, .on_container = on_container, .userdata = f};
	char other[160];
	int fd;

	assert_int_equal(oci_agent_new(f->loop, &o, &b, &err), -EADDRINUSE);
	/* A regular file is not ours to remove. */
	snprintf(other, sizeof(other), "%s/file", f->dir);
	fd = open(other, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	close(fd);
	o.path = other;
	assert_int_equal(oci_agent_new(f->loop, &o, &b, &err), -EEXIST);
	/* A socket nobody listens on (a crashed serve) is replaced. */
	oci_agent_free(f->agent);
	f->agent = NULL;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	strcpy(a.sun_path, f->path);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	close(fd);
	o.path = f->path;
	assert_int_equal(oci_agent_new(f->loop, &o, &f->agent, &err), 0);
}

/* The child installs a real filter, sends its listener as runc does, then execs /bin/true. */
static void test_listener_from_a_filtered_process_is_handed_over(void **state)
{
	FIXTURE_OR_SKIP(f);
	struct seccomp_notif req;
	struct notifier *n = NULL;
	struct pollfd p;
	pid_t child;
	int status;

	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		char msg[1024];
		int lfd, sock, len;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (notifier_filter_install(NULL, NULL, &lfd) < 0)
			_exit(100);
		sock = connect_to(f->path, SOCK_STREAM);
		len = snprintf(msg, sizeof(msg), runc_msg_fmt, getpid(), "creating", getpid());
		/* In two pieces, as a stream socket may deliver it. */
		if (fdpass_send(sock, lfd, msg, 40) < 0)
			_exit(101);
		usleep(50000);
		if (write(sock, msg + 40, (size_t)len - 40) != len - 40)
			_exit(102);
		close(lfd);
		/* runc keeps its end open: so do we, until exec. */
		execl("/bin/true", "true", (char *)NULL);
		_exit(103);
	}
	run_loop(f);
	assert_int_equal(f->containers, 1);
	assert_int_equal(f->errors, 0);
	assert_string_equal(f->name, "web");
	assert_string_equal(f->project, "shop");
	assert_string_equal(f->status, "creating");
	assert_int_equal(f->pid, child);
	assert_true(fcntl(f->listener_fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(oci_check_seccomp_fd(f->listener_fd), 0);

	/* It works: the child's exec arrives and is let through. */
	assert_int_equal(notifier_new(f->listener_fd, &n), 0);
	f->listener_fd = -1;
	p = (struct pollfd){.fd = notifier_fd(n), .events = POLLIN};
	assert_int_equal(poll(&p, 1, 5000), 1);
	assert_int_equal(notifier_receive(n, &req), 0);
	assert_int_equal(req.pid, child);
	assert_int_equal(notifier_continue(n, req.id), 0);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	notifier_free(n);
}

/* Send msg with the given fds over a new connection; run the loop until something happens. */
static void send_and_run(struct fixture *f, const char *msg, const int *fds, size_t nfds)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * 16)];
	} control;
	struct iovec iov = {.iov_base = (void *)msg, .iov_len = strlen(msg)};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	int sock = connect_to(f->path, SOCK_STREAM);

	memset(&control, 0, sizeof(control));
	if (nfds) {
		struct cmsghdr *c;

		m.msg_control = control.buf;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	if (iov.iov_len)
		assert_int_equal(sendmsg(sock, &m, MSG_NOSIGNAL), (ssize_t)iov.iov_len);
	run_loop(f);
	close(sock);
}

static void test_bad_messages_are_refused_and_their_fds_closed(void **state)
{
	FIXTURE_OR_SKIP(f);
	char msg[1024];
	int pipe_fds[2], baseline;
	static const struct {
		const char *json;
		int nfds;
		const char *error_part;
	} cases[] = {
	        {runc_msg_fmt, 1, "is not a seccomp listener"}, /* a pipe, not a listener */
	        {runc_msg_fmt, 2, "fds names 1 fds, 2 arrived"},
	        {runc_msg_fmt, 0, "fds names 1 fds, 0 arrived"},
	        {"[1,2,3]", 1, "not a JSON object"},
	        {"{\"ociVersion\":\"1\",\"fds\":[],\"pid\":1,\"state\":{}}", 1, "seccompFd"},
	        {"{\"ociVersion\":\"1\",\"fds\":[\"seccompFd\"],\"pid\":1,\"metadata\":\"project=.."
	         "/x\","
	         "\"state\":{\"id\":\"c\",\"status\":\"running\",\"pid\":1}}",
	         1, "project"},
	};

	assert_int_equal(pipe2(pipe_fds, O_CLOEXEC), 0);
	baseline = count_fds();
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		int fds[2] = {pipe_fds[0], pipe_fds[1]};

		f->errors = 0;
		if (cases[i].json == runc_msg_fmt)
			snprintf(msg, sizeof(msg), runc_msg_fmt, 1, "running", 1);
		else
			snprintf(msg, sizeof(msg), "%s", cases[i].json);
		send_and_run(f, msg, fds, (size_t)cases[i].nfds);
		assert_int_equal(f->containers, 0);
		assert_int_equal(f->errors, 1);
		if (!strstr(f->last_error, cases[i].error_part))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, f->last_error,
			         cases[i].error_part);
		/* Every fd that arrived was closed again. */
		assert_int_equal(count_fds(), baseline);
	}
	close(pipe_fds[0]);
	close(pipe_fds[1]);
}

static void test_silent_connection_times_out(void **state)
{
	FIXTURE_OR_SKIP(f);
	int sock = connect_to(f->path, SOCK_STREAM);
	uint64_t t0 = loop_now_ms();

	assert_int_equal(write(sock, "{\"oci", 5), 5);
	run_loop(f);
	assert_int_equal(f->errors, 1);
	assert_non_null(strstr(f->last_error, "no whole message within 300 ms"));
	assert_true(loop_now_ms() - t0 >= 290);
	close(sock);
}

static void test_check_seccomp_fd_refuses_other_files(void **state)
{
	int fds[2];
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	assert_int_equal(oci_check_seccomp_fd(fd), -ENOTTY);
	close(fd);
	assert_int_equal(oci_check_seccomp_fd(fd), -EBADF);
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	assert_int_equal(oci_check_seccomp_fd(fds[0]), -ENOTTY);
	close(fds[0]);
	close(fds[1]);
}

/* ---- hook server ------------------------------------------------------------------------ */

static void start_hooks(struct fixture *f)
{
	struct cl_error err = {{0}};
	struct oci_hook_server_options o = {
	        .on_netns = on_netns, .on_error = on_error, .userdata = f, .timeout_ms = 300};

	snprintf(f->path, sizeof(f->path), "%s/run/hook.sock", f->dir);
	o.path = f->path;
	if (oci_hook_server_new(f->loop, &o, &f->hooks, &err) < 0)
		fail_msg("oci_hook_server_new: %s", err.msg);
}

static int read_reply(int sock, char *msg)
{
	char buf[OCI_HOOK_REPLY_MAX];
	struct pollfd p = {.fd = sock, .events = POLLIN};
	ssize_t n;

	assert_int_equal(poll(&p, 1, 2000), 1);
	n = recv(sock, buf, sizeof(buf), 0);
	assert_true(n >= 0);
	return oci_hook_reply_parse(buf, (size_t)n, msg);
}

static void test_hook_server_hands_over_a_netns_and_answers(void **state)
{
	FIXTURE_OR_SKIP(f);
	const char *st = "{\"ociVersion\":\"1.0.2\",\"id\":\"box\",\"status\":\"creating\","
	                 "\"pid\":4242,\"annotations\":{\"org.cloister.name\":\"agent1\"}}";
	char msg[OCI_HOOK_MAX_REPLY_MSG + 1];
	struct stat a, b;
	int ns = -1, sock;

	start_hooks(f);
	assert_int_equal(netfilter_netns_create(&ns), 0);
	sock = connect_to(f->path, SOCK_SEQPACKET);
	assert_int_equal(fdpass_send(sock, ns, st, strlen(st)), 0);
	run_loop(f);
	assert_int_equal(f->errors, 0);
	assert_int_equal(f->containers, 1);
	assert_string_equal(f->name, "agent1");
	assert_int_equal(f->pid, 4242);
	assert_int_equal(fstat(ns, &a), 0);
	assert_int_equal(fstat(f->netns_fd, &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	/* No answer yet: the hook waits. Then a failure reaches it with the reason. */
	struct pollfd p = {.fd = sock, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 100), 0);
	oci_hook_request_reply(f->req, -EIO, "nft: table cloister: boom");
	assert_int_equal(read_reply(sock, msg), 0);
	assert_string_equal(msg, "nft: table cloister: boom");
	close(sock);

	/* And an ok. */
	f->reply_at_once = true;
	sock = connect_to(f->path, SOCK_SEQPACKET);
	assert_int_equal(fdpass_send(sock, ns, st, strlen(st)), 0);
	run_loop(f);
	assert_int_equal(read_reply(sock, msg), 1);
	close(sock);
	close(ns);
}

static void test_hook_server_refuses_the_host_netns_and_other_fds(void **state)
{
	FIXTURE_OR_SKIP(f);
	const char *st = "{\"ociVersion\":\"1.0.2\",\"id\":\"box\",\"status\":\"creating\","
	                 "\"pid\":4242}";
	char msg[OCI_HOOK_MAX_REPLY_MSG + 1];
	const char *files[] = {"/proc/self/ns/net", "/proc/self/ns/uts", "/dev/null"};
	const char *want[] = {"host network", "not a network namespace", "not a network namespace"};

	start_hooks(f);
	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		int fd = open(files[i], O_RDONLY | O_CLOEXEC), sock;

		assert_true(fd >= 0);
		f->errors = 0;
		sock = connect_to(f->path, SOCK_SEQPACKET);
		assert_int_equal(fdpass_send(sock, fd, st, strlen(st)), 0);
		run_loop(f);
		assert_int_equal(f->containers, 0);
		assert_int_equal(f->errors, 1);
		assert_int_equal(read_reply(sock, msg), 0);
		if (!strstr(msg, want[i]))
			fail_msg("%s: \"%s\" lacks \"%s\"", files[i], msg, want[i]);
		close(sock);
		close(fd);
	}
	/* A state that does not parse. */
	int ns = -1, sock;
	assert_int_equal(netfilter_netns_create(&ns), 0);
	sock = connect_to(f->path, SOCK_SEQPACKET);
	assert_int_equal(fdpass_send(sock, ns, "{\"id\":1}", 8), 0);
	run_loop(f);
	assert_int_equal(read_reply(sock, msg), 0);
	assert_non_null(strstr(msg, "hook state"));
	close(sock);
	close(ns);
}

/* The real cloister-oci-hook, for a process in a netns of its own. */
static void test_hook_binary_end_to_end(void **state)
{
	FIXTURE_OR_SKIP(f);
	const char *sv = getenv("SUPERVISOR");
	char hook[PATH_MAX], st[512];
	int in[2], status;
	pid_t target, hook_pid;
	struct stat a, b;
	char nspath[64];

	if (!sv) {
		print_message("skipped: SUPERVISOR is not set (run through make)\n");
		skip();
	}
	snprintf(hook, sizeof(hook), "%s", sv);
	*strrchr(hook, '/') = '\0';
	strcat(hook, "/cloister-oci-hook");
	start_hooks(f);
	f->reply_at_once = true;

	target = fork();
	assert_true(target >= 0);
	if (target == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (unshare(CLONE_NEWNET) < 0)
			_exit(1);
		pause();
		_exit(0);
	}
	snprintf(nspath, sizeof(nspath), "/proc/%d/ns/net", target);
	for (int i = 0; i < 100; i++) { /* until the child is in its netns */
		struct stat self;
		if (stat(nspath, &a) == 0 && stat("/proc/self/ns/net", &self) == 0 &&
		    a.st_ino != self.st_ino)
			break;
		usleep(10000);
	}
	snprintf(st, sizeof(st),
	         "{\"ociVersion\":\"1.0.2-dev\",\"id\":\"t9\",\"status\":\"creating\",\"pid\":%d,"
	         "\"bundle\":\"/b\"}",
	         target);
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	hook_pid = fork();
	assert_true(hook_pid >= 0);
	if (hook_pid == 0) {
		dup2(in[0], 0);
		execl(hook, "cloister-oci-hook", "--socket", f->path, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	assert_int_equal(write(in[1], st, strlen(st)), (ssize_t)strlen(st));
	close(in[1]);
	run_loop(f);
	assert_int_equal(f->containers, 1);
	assert_string_equal(f->name, "t9");
	assert_int_equal(fstat(f->netns_fd, &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	assert_int_equal(waitpid(hook_pid, &status, 0), hook_pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	/* Without a supervisor the hook fails (and so would the container's start). */
	oci_hook_server_free(f->hooks);
	f->hooks = NULL;
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	hook_pid = fork();
	if (hook_pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);
		dup2(in[0], 0);
		dup2(devnull, 2);
		execl(hook, "cloister-oci-hook", "--socket", f->path, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	assert_int_equal(write(in[1], st, strlen(st)), (ssize_t)strlen(st));
	close(in[1]);
	assert_int_equal(waitpid(hook_pid, &status, 0), hook_pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_socket_is_private, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_live_socket_is_not_taken_over_stale_one_is,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_listener_from_a_filtered_process_is_handed_over, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_bad_messages_are_refused_and_their_fds_closed,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_silent_connection_times_out, setup, teardown),
	        cmocka_unit_test(test_check_seccomp_fd_refuses_other_files),
	        cmocka_unit_test_setup_teardown(test_hook_server_hands_over_a_netns_and_answers,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_hook_server_refuses_the_host_netns_and_other_fds, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_hook_binary_end_to_end, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
