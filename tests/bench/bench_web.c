/* bench_web: the dashboard's side of an ask, in one run.
 *   - POST /approve → the agent's held execve resumes (a real `run --ask web`; the agent execs
 *     `stamp`, which writes the monotonic time first thing), median of ROUNDS, next to a plain
 *     fork+exec of the same helper as the floor;
 *   - GET /pending with 1000 pending items (an in-process server in a child process);
 *   - SSE fan-out: one new ask reaches 100 /events clients (time until the last got it). */
#include "tests/bench/bench.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "supervisor/policy/config.h"
#include "supervisor/web/http_client.h"
#include "base/loop.h"
#include "supervisor/approval/approvals.h"
#include "supervisor/hostexec/hostexec.h"
#include "supervisor/approval/queue.h"
#include "supervisor/approval/tokens.h"
#include "supervisor/web/web.h"

#define ROUNDS      20
#define PENDING     1000
#define SSE_CLIENTS 100
#define BENCH_TOKEN "bench-token-0123456789abcdef"
#define API_TOKEN   "bench-api-token-0123456789abcdef"

static double now_ms_d(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* ---- an in-process server in a child ----------------------------------------------------- */

/* The child's asks: they wait until the end, nobody hears them. */
static void on_resolved(void *userdata, const struct queue_item *item, const uint64_t *cookies,
                        size_t n)
{
}

static const struct approval_source_ops child_source = {.resolved = on_resolved};
static const struct web_ops child_ops = {0};

/* Fork a server with N_ITEMS pending exec asks; its approval and request ports are written to
 * *ret_ports. Returns the child's pid or -1. */
static pid_t start_server(int n_items, uint16_t ret_ports[2])
{
	int pipefd[2];
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		static const char yaml[] =
		        "hostexec:\n  manual_approve:\n    - pattern: \"^ask .*\"\n";
		struct config_sources src = {
		        .global = {"bench.yaml", yaml, sizeof(yaml) - 1, true}};
		struct config_load_options lo = {0};
		struct approvals_config ac = {0};
		struct approvals *approvals = NULL;
		struct approval_source *asks = NULL;
		struct web *web = NULL;
		struct hostexec *hostexec = NULL;
		struct config *config = NULL;
		struct tokens *tokens = NULL;
		struct loop *loop = NULL;
		struct cl_error err = {""};
		struct web_config wc = {.api_token = API_TOKEN};
		uint16_t ports[2];

		queue_config_init(&ac.queue);
		ac.queue.max_pending_per_sandbox = ac.queue.max_pending_total = 4096;
		if (loop_new(&loop) < 0 || approvals_new(loop, &ac, &approvals) < 0 ||
		    approvals_register(approvals, &child_source, NULL, &asks) < 0 ||
		    tokens_new(&tokens) < 0 || config_load(&src, &lo, &config, &err) < 0)
			_exit(1);
		approvals_set_approvers(approvals, APPROVER_CLI, 1);
		tokens_register(tokens, BENCH_TOKEN, "bench", NULL, NULL);
		wc.tokens.disabled = true;
		for (int i = 0; i < n_items; i++) {
			char summary[64], arg[32];
			const char *argv[3] = {"/usr/bin/tool", "--item", arg};
			struct queue_request qr = {.kind = QUEUE_KIND_EXEC,
			                           .sandbox = "bench",
			                           .summary = summary,
			                           .exe = "/usr/bin/tool",
			                           .argv = argv,
			                           .argc = 3,
			                           .cwd = "/home/user/project",
			                           .pid = 1000 + i,
			                           .uid = 1000,
			                           .cookie = (uint64_t)i + 1};

			snprintf(arg, sizeof(arg), "%d", i);
			snprintf(summary, sizeof(summary), "tool --item %d", i);
			approvals_ask(asks, &qr, NULL);
		}
		if (hostexec_new(loop, approvals, &(struct hostexec_config){.config = config},
		                 &hostexec) < 0 ||
		    web_new(loop, approvals, hostexec, tokens, &wc, &child_ops, NULL, &err, &web) <
		            0)
			_exit(1);
		ports[0] = web_approval_port(web);
		ports[1] = web_request_port(web);
		if (write(pipefd[1], ports, sizeof(ports)) != sizeof(ports))
			_exit(1);
		close(pipefd[1]);
		loop_run(loop);
		_exit(0);
	}
	close(pipefd[1]);
	if (read(pipefd[0], ret_ports, 2 * sizeof(uint16_t)) != 2 * sizeof(uint16_t)) {
		close(pipefd[0]);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	close(pipefd[0]);
	return pid;
}

static void stop_server(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void bench_pending(void)
{
	uint16_t ports[2];
	char url[64];
	double t[ROUNDS];
	size_t bytes = 0;
	pid_t pid = start_server(PENDING, ports);

	if (pid < 0) {
		printf("GET /pending: skipped (server did not start)\n");
		return;
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", ports[0]);
	for (int i = 0; i < ROUNDS; i++) {
		struct http_response resp = {0};
		double t0 = now_ms_d();

		if (http_client_request(url, "GET", "/pending",
		                        "Authorization: Bearer " API_TOKEN "\r\n", NULL, 0, 5000,
		                        &resp) < 0 ||
		    resp.status != 200) {
			printf("GET /pending: failed\n");
			http_response_free(&resp);
			stop_server(pid);
			return;
		}
		t[i] = now_ms_d() - t0;
		bytes = resp.body_len;
		http_response_free(&resp);
	}
	printf("GET /pending with %d pending asks: median %.2f ms (%zu bytes of JSON)\n", PENDING,
	       median(t, ROUNDS), bytes);
	stop_server(pid);
}

static int connect_events(uint16_t port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
	char req[128];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int n;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		goto fail;
	n = snprintf(req, sizeof(req),
	             "GET /events HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n"
	             "Authorization: Bearer " API_TOKEN "\r\n\r\n",
	             port);
	if (write(fd, req, (size_t)n) != n)
		goto fail;
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

static void bench_fanout(void)
{
	uint16_t ports[2];
	char url[64];
	int fds[SSE_CLIENTS], ep, got = 0;
	bool seen[SSE_CLIENTS] = {false};
	double t0, last = 0;
	pid_t pid = start_server(0, ports), req_pid;

	if (pid < 0) {
		printf("SSE fan-out: skipped (server did not start)\n");
		return;
	}
	ep = epoll_create1(EPOLL_CLOEXEC);
	for (int i = 0; i < SSE_CLIENTS; i++) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};

		fds[i] = connect_events(ports[0]);
		if (fds[i] < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev) < 0) {
			printf("SSE fan-out: cannot connect client %d\n", i);
			goto out;
		}
	}
	/* Let every client get its headers and "retry:" first. */
	{
		struct epoll_event evs[64];
		double until = now_ms_d() + 500;
		char buf[4096];

		while (now_ms_d() < until) {
			int n = epoll_wait(ep, evs, 64, 50);

			for (int i = 0; i < n; i++)
				(void)!read(fds[evs[i].data.u32], buf, sizeof(buf));
		}
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", ports[1]);
	t0 = now_ms_d();
	/* One hostexec ask (it blocks until the server stops): in a child. */
	req_pid = fork();
	if (req_pid == 0) {
		struct http_response resp = {0};
		static const char body[] = "{\"args\":[\"ask\",\"fan-out\"]}";

		http_client_request(url, "POST", "/request",
		                    "X-Cloister-Token: " BENCH_TOKEN "\r\n", body, sizeof(body) - 1,
		                    10000, &resp);
		_exit(0);
	}
	while (got < SSE_CLIENTS && now_ms_d() - t0 < 10000) {
		struct epoll_event evs[64];
		char buf[4096];
		int n = epoll_wait(ep, evs, 64, 100);

		for (int i = 0; i < n; i++) {
			unsigned c = evs[i].data.u32;
			ssize_t len = read(fds[c], buf, sizeof(buf) - 1);

			if (len <= 0)
				continue;
			buf[len] = '\0';
			if (!seen[c] && strstr(buf, "request-added")) {
				seen[c] = true;
				got++;
				last = now_ms_d() - t0;
			}
		}
	}
	if (got == SSE_CLIENTS)
		printf("SSE fan-out: a new ask reached all %d /events clients in %.2f ms (request "
		       "sent to last client notified)\n",
		       SSE_CLIENTS, last);
	else
		printf("SSE fan-out: only %d of %d clients got the event\n", got, SSE_CLIENTS);
	kill(req_pid, SIGKILL);
	waitpid(req_pid, NULL, 0);
out:
	for (int i = 0; i < SSE_CLIENTS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	close(ep);
	stop_server(pid);
}

/* ---- approve → resume, through a real `run --ask web` ------------------------------------- */

static long long last_stamp(const char *path, int *lines)
{
	char buf[8192];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;
	long long v = -1;
	char *p;

	*lines = 0;
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	for (p = buf; *p; p++) {
		long long x = strtoll(p, &p, 10);

		if (*p != '\n')
			break;
		v = x;
		(*lines)++;
	}
	return v;
}

static void bench_approve(void)
{
	const char *supervisor = getenv("SUPERVISOR"), *helpers = getenv("HELPERS");
	char tmp[] = "/tmp/cloister-bench-web.XXXXXX";
	char cfg[128], stampf[128], text[1024], script[1024], stamp[600], state[128];
	double lat[ROUNDS], floor_ms[ROUNDS];
	int log_pipe[2], done = 0;
	char url[64] = "", token[80] = "";
	pid_t pid;
	FILE *f;

	if (!supervisor || !helpers || geteuid() != 0) {
		printf("POST /approve → exec resumes: skipped (needs root, $SUPERVISOR, "
		       "$HELPERS)\n");
		return;
	}
	if (!mkdtemp(tmp))
		return;
	snprintf(cfg, sizeof(cfg), "%s/config", tmp);
	snprintf(state, sizeof(state), "%s/state", tmp);
	snprintf(stampf, sizeof(stampf), "%s/stamps", tmp);
	snprintf(stamp, sizeof(stamp), "%s/stamp", helpers);
	mkdir(cfg, 0700);
	mkdir(state, 0700);
	snprintf(text, sizeof(text), "%s/config.yaml", cfg);
	f = fopen(text, "we");
	if (!f)
		return;
	fprintf(f, "exec:\n  security: allowlist\n  ask: on-miss\n  allow:\n"
	           "    - path: \"/usr/bin/*\"\n    - path: \"/bin/*\"\n");
	fclose(f);
	/* The agent asks ROUNDS times, one after the other. */
	snprintf(script, sizeof(script), "i=0; while [ $i -lt %d ]; do %s %s; i=$((i+1)); done",
	         ROUNDS, stamp, stampf);
	if (pipe2(log_pipe, O_CLOEXEC) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		char xdg[700];
		char *envp[] = {xdg, "PATH=/usr/bin:/bin", "LC_ALL=C", "HOME=/root", NULL};
		char *argv[] = {(char *)supervisor,
		                "run",
		                "-v",
		                "--ask",
		                "web",
		                "--config-dir",
		                cfg,
		                "--listen-approval",
		                "127.0.0.1:0",
		                "--listen-tokens",
		                "off",
		                "--listen-request",
		                "off",
		                "--",
		                "/bin/sh",
		                "-c",
		                script,
		                NULL};

		snprintf(xdg, sizeof(xdg), "XDG_STATE_HOME=%s", state);
		dup2(log_pipe[1], STDERR_FILENO);
		/* The agent's /tmp is a tmpfs of its own but for its working directory: there the
		 * stamps it writes are ours to read. */
		if (chdir(tmp) < 0)
			_exit(127);
		execve(supervisor, argv, envp);
		_exit(127);
	}
	close(log_pipe[1]);
	/* The -v line "dashboard at http://127.0.0.1:PORT/" tells the port. */
	{
		char buf[4096];
		size_t len = 0;
		double until = now_ms_d() + 5000;

		while (now_ms_d() < until && len < sizeof(buf) - 1) {
			ssize_t n = read(log_pipe[0], buf + len, sizeof(buf) - 1 - len);
			char *p;

			if (n <= 0)
				break;
			len += (size_t)n;
			buf[len] = '\0';
			p = strstr(buf, "dashboard at ");
			if (p && strchr(p, '\n')) {
				/* "dashboard at http://127.0.0.1:PORT/?token=SECRET" */
				const char *t = strstr(p, "?token=");
				int ulen = (int)strcspn(p + 13, "/\n?");

				if (!strncmp(p + 13, "http://", 7))
					ulen = 7 + (int)strcspn(p + 20, "/\n?");
				snprintf(url, sizeof(url), "%.*s", ulen, p + 13);
				if (t)
					snprintf(token, sizeof(token), "%.*s",
					         (int)strcspn(t + 7, "\n"), t + 7);
				break;
			}
		}
	}
	for (int round = 0; url[0] && round < ROUNDS; round++) {
		char id[32] = "", path[64], origin[256], bearer[256];
		struct http_response resp = {0};
		double until = now_ms_d() + 5000, t0;
		int lines;

		snprintf(bearer, sizeof(bearer), "Authorization: Bearer %s\r\n", token);
		while (!id[0] && now_ms_d() < until) {
			if (http_client_request(url, "GET", "/pending", bearer, NULL, 0, 2000,
			                        &resp) == 0) {
				char *p = strstr(resp.body, "\"id\":\"");

				if (p)
					snprintf(id, sizeof(id), "%.12s", p + 6);
				http_response_free(&resp);
			}
			if (!id[0])
				usleep(500);
		}
		if (!id[0])
			break;
		snprintf(path, sizeof(path), "/approve/%s", id);
		snprintf(origin, sizeof(origin), "Origin: %s\r\nCookie: cloister_token=%s\r\n", url,
		         token);
		t0 = now_ms_d();
		/* As the dashboard sends it: same origin, with its session cookie. */
		if (http_client_request(url, "POST", path, origin, NULL, 0, 2000, &resp) == 0)
			http_response_free(&resp);
		until = now_ms_d() + 5000;
		while (now_ms_d() < until) {
			long long ns = last_stamp(stampf, &lines);

			if (lines > round) {
				lat[done] = (double)ns / 1e6 - t0;
				done++;
				break;
			}
			usleep(100);
		}
	}
	for (int i = 0; i < ROUNDS; i++) {
		pid_t p = fork();
		double t0 = now_ms_d();
		int lines;

		if (p == 0) {
			char *argv[] = {stamp, stampf, NULL};

			execv(stamp, argv);
			_exit(127);
		}
		waitpid(p, NULL, 0);
		floor_ms[i] = (double)last_stamp(stampf, &lines) / 1e6 - t0;
	}
	if (done == ROUNDS)
		printf("POST /approve → held exec resumes and the program starts: median %.3f ms "
		       "(plain fork+exec to the same point: %.3f ms)\n",
		       median(lat, done), median(floor_ms, ROUNDS));
	else
		printf("POST /approve → exec resumes: only %d of %d rounds completed%s\n", done,
		       ROUNDS, url[0] ? "" : " (no dashboard URL)");
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	close(log_pipe[0]);
	snprintf(text, sizeof(text), "rm -rf '%s'", tmp);
	if (system(text) != 0)
		fprintf(stderr, "bench_web: could not remove %s\n", tmp);
}

void bench_web(void)
{
	bench_approve();
	bench_pending();
	bench_fanout();
}
