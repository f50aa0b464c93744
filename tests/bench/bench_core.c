/* bench_core: what the pure core costs per decision. */
#include "tests/bench/bench.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "protocol/protocol.h"
#include "supervisor/approval/audit.h"
#include "supervisor/approval/audit_limit.h"
#include "supervisor/exec/file_digest.h"
#include "supervisor/policy/config.h"
#include "supervisor/policy/decisions_watch.h"
#include "supervisor/policy/domain.h"
#include "supervisor/policy/policy.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void bench_quote(void)
{
	const char *argv[] = {"git",      "commit",
	                      "-m",       "fix: don't crash on empty input",
	                      "--author", "A U Thor <a@example.com>"};
	enum { N = 200000 };
	uint64_t t0 = now_ns();

	for (int i = 0; i < N; i++) {
		char *s = NULL;

		if (cl_quote_strv(argv, 6, NULL, &s) < 0)
			abort();
		free(s);
	}
	printf("canonical command of a 6-argument argv: %.0f ns\n", (double)(now_ns() - t0) / N);
}

static void bench_policy(void)
{
	struct config_sources none = {0};
	struct config *cfg = NULL;
	struct policy_result res;
	const char *hit[] = {"git", "status"};
	const char *miss[] = {"curl", "https://example.com/install.sh"};
	enum { N = 100000 };
	uint64_t t0, t1, t2;

	if (config_load(&none, NULL, &cfg, NULL) < 0) {
		printf("policy: the built-in config failed to load\n");
		return;
	}
	t0 = now_ns();
	for (int i = 0; i < N; i++)
		policy_check_exec(cfg, "/usr/bin/git", hit, 2, &res, NULL);
	t1 = now_ns();
	for (int i = 0; i < N; i++)
		policy_check_exec(cfg, "/usr/bin/curl", miss, 2, &res, NULL);
	t2 = now_ns();
	printf("exec policy on the built-in config: %.2f µs allowed (git status), %.2f µs asked "
	       "(curl: every rule tried)\n",
	       (double)(t1 - t0) / N / 1e3, (double)(t2 - t1) / N / 1e3);
	t0 = now_ns();
	for (int i = 0; i < N; i++)
		policy_check_domain(cfg, NULL, "api.anthropic.com:443", &res, NULL);
	t1 = now_ns();
	printf("domain policy on the built-in config: %.2f µs\n", (double)(t1 - t0) / N / 1e3);
	config_free(cfg);
}

/* A decision pinned to a file's content (file_digest.h): what an exec it covers costs the
 * first time (the whole file read and digested) and afterwards (a lookup by identity). */
static void bench_digest(void)
{
	static const char *const files[] = {"/usr/bin/busybox", "/usr/bin/bash", "/bin/sh"};
	struct file_digests *c = NULL;
	char hex[FILE_DIGEST_HEX];
	struct statx x;
	const char *path = NULL;
	int fd = -1;
	enum { COLD = 20, WARM = 200000 };
	uint64_t t0, t1, t2, ctime_ns;
	dev_t dev;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]) && fd < 0; i++) {
		path = files[i];
		fd = open(path, O_PATH | O_CLOEXEC);
	}
	if (fd < 0 || statx(fd, "", AT_EMPTY_PATH, STATX_INO | STATX_CTIME | STATX_SIZE, &x) < 0) {
		printf("file digest: no program to digest\n");
		if (fd >= 0)
			close(fd);
		return;
	}
	dev = makedev(x.stx_dev_major, x.stx_dev_minor);
	ctime_ns = (uint64_t)x.stx_ctime.tv_sec * 1000000000u + x.stx_ctime.tv_nsec;

	t0 = now_ns();
	for (int i = 0; i < COLD; i++) {
		if (file_digests_new(&c) < 0 ||
		    file_digest_get(c, fd, dev, x.stx_ino, ctime_ns, x.stx_size, hex) < 0) {
			printf("file digest: %s could not be digested\n", path);
			file_digests_free(c);
			close(fd);
			return;
		}
		if (i < COLD - 1) {
			file_digests_free(c);
			c = NULL;
		}
	}
	t1 = now_ns();
	for (int i = 0; i < WARM; i++)
		(void)file_digest_get(c, fd, dev, x.stx_ino, ctime_ns, x.stx_size, hex);
	t2 = now_ns();
	printf("content pin of %s (%llu KiB): %.2f ms the first time (read and SHA-256), "
	       "%.3f µs cached (by dev, ino, ctime, size): %.0fx\n",
	       path, (unsigned long long)x.stx_size / 1024, (double)(t1 - t0) / COLD / 1e6,
	       (double)(t2 - t1) / WARM / 1e3,
	       ((double)(t1 - t0) / COLD) / ((double)(t2 - t1) / WARM));
	file_digests_free(c);
	close(fd);
}

/* Decoding stdout frames of 16 KiB against copying the same bytes: the framing overhead. */
static void bench_frames(void)
{
	enum { PAYLOAD = 16384, FRAMES = 4096 };
	size_t frame_len = CL_FRAME_STREAM_HEADER_SIZE + PAYLOAD;
	uint8_t *stream = malloc(frame_len * FRAMES), *copy = malloc(frame_len * FRAMES);
	uint8_t payload[PAYLOAD];
	struct cl_frame_decoder d;
	uint64_t t0, t_dec, t_copy;
	size_t total = frame_len * FRAMES;

	if (!stream || !copy)
		abort();
	memset(payload, 'x', sizeof(payload));
	for (int i = 0; i < FRAMES; i++)
		if (cl_frame_encode_stream(CL_FRAME_STDOUT, payload, PAYLOAD,
		                           stream + i * frame_len, frame_len) < 0)
			abort();
	cl_frame_decoder_init(&d, CL_FRAME_MODE_STREAM, 0);
	t0 = now_ns();
	for (size_t off = 0; off < total;) {
		struct cl_frame f;
		size_t used;
		/* Feed in 64 KiB reads, as a socket would deliver them. */
		size_t chunk = total - off < 65536 ? total - off : 65536;

		if (cl_frame_decoder_feed(&d, stream + off, chunk, NULL, &used, &f) < 0)
			abort();
		off += used;
	}
	t_dec = now_ns() - t0;
	cl_frame_decoder_done(&d);
	t0 = now_ns();
	memcpy(copy, stream, total);
	t_copy = now_ns() - t0;
	printf("stream frame decoding: %.0f MB/s, memcpy %.0f MB/s (decoder at %.2fx the cost of "
	       "a copy)\n",
	       total / (t_dec / 1e3), total / (t_copy / 1e3), (double)t_dec / (double)t_copy);
	free(stream);
	free(copy);
}

/* The audit line of an auto-allowed exec (what every exec pays), of one with 1 MB of argv
 * (summarised and hashed), and the rate check in front of it. */
static void bench_audit(void)
{
	static const char *argv[] = {"cc", "-O2", "-c", "-o", "build/obj/x.o", "src/x.c"};
	const char *big_argv[11];
	char *big = malloc(100001);
	struct audit_record rec = {
	        .time_ms = 1795312567123ULL,
	        .sandbox = "main",
	        .kind = "exec",
	        .pid = 4242,
	        .uid = 1000,
	        .exe = "/usr/bin/cc",
	        .argv = argv,
	        .argc = 6,
	        .cwd = "/home/agent/src/project",
	        .summary = "cc -O2 -c -o build/obj/x.o src/x.c",
	        .verdict = AUDIT_ALLOW,
	        .rule = "exec.allow[12] path \"/usr/bin/cc\" (<built-in>:56:7)",
	        .decided_by = "policy",
	        .latency_ms = -1,
	        .reason = "/usr/bin/cc matches an allow rule",
	        .automatic = true,
	};
	struct audit_limit_config lc = {.rate = AUDIT_LIMIT_RATE, .burst = AUDIT_LIMIT_BURST};
	struct audit_limit *l = NULL;
	enum { N = 100000, M = 200 };
	uint64_t t0;
	double typical, huge, rate;

	if (!big || audit_limit_new(&lc, &l) < 0)
		abort();
	t0 = now_ns();
	for (int i = 0; i < N; i++) {
		char *line = NULL;

		if (audit_format_line(&rec, &line) < 0)
			abort();
		free(line);
	}
	typical = (double)(now_ns() - t0) / N;
	memset(big, 'A', 100000);
	big[100000] = '\0';
	big_argv[0] = "/bin/true";
	for (int i = 1; i < 11; i++)
		big_argv[i] = big;
	rec.argv = big_argv;
	rec.argc = 11;
	t0 = now_ns();
	for (int i = 0; i < M; i++) {
		char *line = NULL;

		if (audit_format_line(&rec, &line) < 0)
			abort();
		free(line);
	}
	huge = (double)(now_ns() - t0) / M;
	t0 = now_ns();
	for (int i = 0; i < N; i++)
		(void)audit_limit_take(l, "main", (uint64_t)i * 1000);
	rate = (double)(now_ns() - t0) / N;
	printf("audit line of an exec: %.0f ns (1 MB of argv, summarised with its SHA-256: %.0f "
	       "µs); "
	       "the rate check: %.0f ns\n",
	       typical, huge / 1000.0, rate);
	audit_limit_free(l);
	free(big);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Writes a project decisions file of N domains to PATH (through TMP, renamed over it: what
 * decisions.c does), its mtime set in the past so that its stamp is trusted. */
static int put_decisions(const char *path, const char *tmp, int n, int salt)
{
	struct timespec old[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
	FILE *f = fopen(tmp, "we");

	if (!f)
		return -1;
	fputs("proxy:\n  allow:\n", f);
	for (int i = 0; i < n; i++)
		fprintf(f, "    - domain: host%d-%d.example\n", i, salt);
	if (fclose(f) != 0 || chmod(tmp, 0600) < 0 || utimensat(AT_FDCWD, tmp, old, 0) < 0)
		return -1;
	return rename(tmp, path);
}

/* What the decisions watch costs a run (issue 16): the look before an ask when nothing changed
 * (a stat of each file), reading a changed file again, and what it replaced: closing an
 * inotify instance at the run's exit. */
static void bench_decisions_watch(void)
{
	char dir[] = "/var/tmp/cloister-bench-dw.XXXXXX", sub[128], path[160], tmp[160];
	struct decisions_watch *w = NULL;
	struct cl_error err = {""};
	enum { N = 20000, READS = 200, CLOSES = 21, DOMAINS = 50 };
	uint64_t t0, unchanged, reread, closes[CLOSES];
	int changes = 0;

	if (!mkdtemp(dir)) {
		printf("decisions watch: no temporary directory\n");
		return;
	}
	snprintf(sub, sizeof(sub), "%s/decisions", dir);
	mkdir(sub, 0700);
	snprintf(sub, sizeof(sub), "%s/decisions/projects", dir);
	mkdir(sub, 0700);
	snprintf(path, sizeof(path), "%s/p.yaml", sub);
	snprintf(tmp, sizeof(tmp), "%s/.p.tmp", sub);
	if (put_decisions(path, tmp, DOMAINS, 0) < 0 ||
	    decisions_watch_new(dir, "p", &w, &err) < 0 || !w) {
		printf("decisions watch: could not set up %s\n", dir);
		goto out;
	}
	t0 = now_ns();
	for (int i = 0; i < N; i++)
		(void)decisions_watch_check(w, &err);
	unchanged = now_ns() - t0;
	reread = 0;
	for (int i = 0; i < READS; i++) {
		if (put_decisions(path, tmp, DOMAINS, i + 1) < 0)
			break;
		t0 = now_ns();
		changes += decisions_watch_check(w, &err) == 1;
		reread += now_ns() - t0;
	}
	for (int i = 0; i < CLOSES; i++) {
		int fd = inotify_init1(IN_CLOEXEC);

		closes[i] = 0;
		if (fd < 0)
			continue;
		(void)inotify_add_watch(fd, sub, IN_CLOSE_WRITE | IN_MOVED_TO);
		t0 = now_ns();
		close(fd);
		closes[i] = now_ns() - t0;
	}
	qsort(closes, CLOSES, sizeof(closes[0]), cmp_u64);
	printf("decisions files looked at before an ask: %.2f µs unchanged (a stat each), %.0f µs "
	       "read again after a change (%d domains; %d of %d changes seen); what it replaced, "
	       "closing an inotify instance at exit: %.2f ms (median of %d, %.2f to %.2f)\n",
	       (double)unchanged / N / 1000.0, (double)reread / READS / 1000.0, DOMAINS, changes,
	       READS, closes[CLOSES / 2] / 1e6, CLOSES, closes[0] / 1e6, closes[CLOSES - 1] / 1e6);
out:
	decisions_watch_free(w);
	unlink(path);
	unlink(tmp);
	rmdir(sub);
	snprintf(sub, sizeof(sub), "%s/decisions", dir);
	rmdir(sub);
	rmdir(dir);
}

/* Per line, K lines appended to a file (O_APPEND, as the audit log) in writes of BATCH lines
 * each. µs. */
static double audit_write_cost(int fd, const char *line, size_t len, int batch)
{
	enum { K = 3000 };
	static char buf[128 * 1024];
	uint64_t t0 = now_ns();

	for (int i = 0; i < K; i += batch) {
		size_t n = 0;

		for (int j = 0; j < batch; j++, n += len)
			memcpy(buf + n, line, len);
		if (write(fd, buf, n) != (ssize_t)n)
			abort();
	}
	return (double)(now_ns() - t0) / K / 1000.0;
}

/* What the audit log's write(2) costs a line, alone and gathered: how many lines a write must
 * hold (how long --audit-delay must be, at the rate an exec-heavy loop makes them) for the
 * write to stop mattering. The modes take turns; medians of 5 rounds. */
static void bench_audit_write(void)
{
	static const char *argv[] = {"cc", "-O2", "-c", "-o", "build/obj/x.o", "src/x.c"};
	static const int batches[] = {1, 10, 30, 100};
	enum { ROUNDS = 5, MODES = sizeof(batches) / sizeof(batches[0]) };
	struct audit_record rec = {
	        .time_ms = 1795312567123ULL,
	        .sandbox = "main",
	        .kind = "exec",
	        .pid = 4242,
	        .uid = 1000,
	        .exe = "/usr/bin/cc",
	        .argv = argv,
	        .argc = 6,
	        .cwd = "/home/agent/src/project",
	        .summary = "cc -O2 -c -o build/obj/x.o src/x.c",
	        .verdict = AUDIT_ALLOW,
	        .rule = "exec.allow[12] path \"/usr/bin/cc\" (<built-in>:56:7)",
	        .decided_by = "policy",
	        .latency_ms = -1,
	        .reason = "/usr/bin/cc matches an allow rule",
	        .automatic = true,
	};
	char path[] = "/var/tmp/bench_audit.XXXXXX", *line = NULL;
	double cost[MODES][ROUNDS], median[MODES];
	int fd = mkstemp(path);

	if (fd < 0 || audit_format_line(&rec, &line) < 0) {
		printf("audit write: no file in /var/tmp\n");
		return;
	}
	close(fd);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	unlink(path);
	for (int r = 0; r < ROUNDS; r++)
		for (int m = 0; m < MODES; m++) {
			if (ftruncate(fd, 0) < 0)
				abort();
			cost[m][r] = audit_write_cost(fd, line, strlen(line), batches[m]);
		}
	for (int m = 0; m < MODES; m++) {
		for (int i = 1; i < ROUNDS; i++) /* insertion sort of 5 */
			for (int j = i; j > 0 && cost[m][j] < cost[m][j - 1]; j--) {
				double t = cost[m][j];

				cost[m][j] = cost[m][j - 1];
				cost[m][j - 1] = t;
			}
		median[m] = cost[m][ROUNDS / 2];
	}
	printf("audit write of an exec's line (%zu bytes, O_APPEND): alone %.2f µs; gathered 10 a "
	       "write %.2f µs a line, 30 %.2f, 100 %.2f (medians of %d rounds taking turns)\n",
	       strlen(line), median[0], median[1], median[2], median[3], ROUNDS);
	close(fd);
	free(line);
}

void bench_core(void)
{
	bench_quote();
	bench_policy();
	bench_digest();
	bench_frames();
	bench_audit();
	bench_decisions_watch();
	bench_audit_write();
}
