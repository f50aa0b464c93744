/* The audit log: exact lines, escaping of hostile argv, path rules, file mode and appends. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/cleanup.h"
#include "base/loop.h"
#include "base/say.h"
#include "supervisor/approval/audit.h"
#include "supervisor/approval/audit_log.h"

/* 2026-11-22T01:56:07.123Z */
#define T0 1795312567123ULL

static void test_a_full_record_is_one_exact_line(void **state)
{
	static const char *const argv[] = {"curl", "-d", "a=\"b\"\\c"};
	struct audit_record rec = {
	        .time_ms = T0,
	        .id = "3f9a0c2e7b14",
	        .sandbox = "main",
	        .project = "my-api",
	        .kind = "exec",
	        .pid = 4242,
	        .uid = 1000,
	        .exe = "/usr/bin/curl",
	        .argv = argv,
	        .argc = 3,
	        .cwd = "/work",
	        .interpreter = NULL,
	        .summary = "curl -d 'a=\"b\"\\c'",
	        .verdict = AUDIT_DENIED,
	        .rule = "exec.ask=on-miss (config.yaml:14)",
	        .decided_by = "tty",
	        .scope = "once",
	        .latency_ms = 1520,
	        .reason = "Command denied by user",
	};
	char *line = NULL;

	assert_int_equal(audit_format_line(&rec, &line), 0);
	assert_string_equal(
	        line,
	        "{\"time\":\"2026-11-22T01:56:07.123Z\",\"id\":\"3f9a0c2e7b14\",\"sandbox\":"
	        "\"main\","
	        "\"project\":\"my-api\",\"kind\":\"exec\",\"pid\":4242,\"uid\":1000,"
	        "\"exe\":\"/usr/bin/curl\",\"argv\":[\"curl\",\"-d\",\"a=\\\"b\\\"\\\\c\"],"
	        "\"cwd\":\"/work\",\"interpreter\":null,"
	        "\"summary\":\"curl -d 'a=\\\"b\\\"\\\\c'\",\"verdict\":\"denied\","
	        "\"rule\":\"exec.ask=on-miss (config.yaml:14)\",\"decided_by\":\"tty\","
	        "\"scope\":\"once\",\"latency_ms\":1520,\"reason\":\"Command denied by user\"}\n");
	free(line);
}

static void test_a_connection_record_carries_bytes_and_duration(void **state)
{
	struct audit_record rec = {
	        .time_ms = T0,
	        .sandbox = "main",
	        .kind = "domain",
	        .pid = -1,
	        .uid = -1,
	        .summary = "example.com:443",
	        .verdict = AUDIT_ALLOW,
	        .decided_by = "policy",
	        .latency_ms = -1,
	        .reason = "relayed",
	        .connection = true,
	        .bytes_up = 517,
	        .bytes_down = 1048576,
	        .duration_ms = 2150,
	};
	char *line = NULL;

	assert_int_equal(audit_format_line(&rec, &line), 0);
	assert_non_null(strstr(line, ",\"reason\":\"relayed\",\"bytes_up\":517,"
	                             "\"bytes_down\":1048576,\"duration_ms\":2150}\n"));
	free(line);
	/* Other records do not grow the keys. */
	rec.connection = false;
	assert_int_equal(audit_format_line(&rec, &line), 0);
	assert_null(strstr(line, "bytes_up"));
	free(line);
}

static void test_unknown_values_are_null(void **state)
{
	struct audit_record rec = {
	        .time_ms = 0, .pid = -1, .uid = -1, .latency_ms = -1, .verdict = AUDIT_ALLOW};
	char *line = NULL;

	assert_int_equal(audit_format_line(&rec, &line), 0);
	assert_string_equal(line, "{\"time\":\"1970-01-01T00:00:00.000Z\",\"id\":null,"
	                          "\"sandbox\":null,\"project\":null,\"kind\":null,\"pid\":null,"
	                          "\"uid\":null,\"exe\":null,\"argv\":null,\"cwd\":null,"
	                          "\"interpreter\":null,\"summary\":null,\"verdict\":\"allow\","
	                          "\"rule\":null,\"decided_by\":null,\"scope\":null,"
	                          "\"latency_ms\":null,\"reason\":null}\n");
	free(line);
	rec.verdict = (enum audit_verdict)99;
	assert_int_equal(audit_format_line(&rec, &line), -EINVAL);
}

/* The argv part of a line, for the escaping table. */
static char *argv_json(const char *arg)
{
	const char *argv[] = {arg};
	struct audit_record rec = {.argv = argv,
	                           .argc = 1,
	                           .pid = -1,
	                           .uid = -1,
	                           .latency_ms = -1,
	                           .verdict = AUDIT_ASK};
	char *line = NULL, *start, *end, *out;

	assert_int_equal(audit_format_line(&rec, &line), 0);
	/* One line: a newline only at the end. */
	assert_ptr_equal(strchr(line, '\n'), line + strlen(line) - 1);
	start = strstr(line, "\"argv\":[") + strlen("\"argv\":[");
	end = strstr(start, "],\"cwd\"");
	assert_non_null(end);
	out = strndup(start, end - start);
	free(line);
	return out;
}

/* Numbers as cJSON printed them (the log's format predates the direct formatter): integers as
 * digits below 1e15, above that as a double in %1.15g, or %1.17g when 15 digits lose it. */
static void test_numbers_keep_their_format(void **state)
{
	struct audit_record rec = {.pid = 4242,
	                           .uid = 4294967295LL,
	                           .latency_ms = 1234567890123456789LL,
	                           .verdict = AUDIT_ALLOW};
	char *line = NULL;

	assert_int_equal(audit_format_line(&rec, &line), 0);
	assert_non_null(strstr(line, "\"pid\":4242,\"uid\":4294967295,"));
	assert_non_null(strstr(line, "\"latency_ms\":1.2345678901234568e+18,"));
	free(line);
	rec.latency_ms = 1000000000000000LL;
	assert_int_equal(audit_format_line(&rec, &line), 0);
	assert_non_null(strstr(line, "\"latency_ms\":1e+15,"));
	free(line);
}

static void test_hostile_argv_is_escaped_and_made_valid_utf8(void **state)
{
	static const struct {
		const char *arg, *json;
	} cases[] = {
	        {"plain", "\"plain\""},
	        {"say \"hi\"", "\"say \\\"hi\\\"\""},
	        {"back\\slash", "\"back\\\\slash\""},
	        {"two\nlines", "\"two\\nlines\""},
	        {"cr\rtab\t", "\"cr\\rtab\\t\""},
	        {"\x01\x1b[31mred", "\"\\u0001\\u001b[31mred\""},
	        {"caf\xc3\xa9 \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xf0\x9f\x98\x80\""},
	        /* invalid: a lone byte, a truncated sequence, an overlong '/', a surrogate,
	         * above U+10FFFF: one U+FFFD per byte */
	        {"a\xff"
	         "b",
	         "\"a\xef\xbf\xbd"
	         "b\""},
	        {"\xc3", "\"\xef\xbf\xbd\""},
	        {"\xc0\xaf", "\"\xef\xbf\xbd\xef\xbf\xbd\""},
	        {"\xed\xa0\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""},
	        {"\xf4\x90\x80\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""},
	        {"\xe2\x82", "\"\xef\xbf\xbd\xef\xbf\xbd\""},
	        {"", "\"\""},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = argv_json(cases[i].arg);
		if (strcmp(got, cases[i].json) != 0)
			fail_msg("case %zu: got %s, want %s", i, got, cases[i].json);
		free(got);
	}
}

/* A line parsed back: it must be one valid JSON object. */
static cJSON *parse_line(const char *line)
{
	cJSON *o = cJSON_Parse(line);

	if (!cJSON_IsObject(o))
		fail_msg("not a JSON object: %.300s", line);
	return o;
}

static const char *json_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double json_num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v))
		fail_msg("%s is not a number", key);
	return v->valuedouble;
}

/* The attack of the issue: one exec with a 1 MB argument gave a 1 MB line. */
static void test_a_huge_argv_is_summarised_with_its_length_and_digest(void **state)
{
	char *big = malloc(1000001);
	const char *argv[] = {"curl", "-d", big};
	struct audit_record rec = {.time_ms = T0,
	                           .sandbox = "sb",
	                           .kind = "exec",
	                           .pid = 1,
	                           .uid = 0,
	                           .argv = argv,
	                           .argc = 3,
	                           .verdict = AUDIT_ALLOW,
	                           .latency_ms = -1};
	char *line = NULL;
	cJSON *o, *sum, *args;

	assert_non_null(big);
	memset(big, 'A', 1000000);
	big[1000000] = '\0';
	assert_int_equal(audit_format_line(&rec, &line), 0);
	assert_true(strlen(line) < 8192);
	o = parse_line(line);
	args = cJSON_GetObjectItemCaseSensitive(o, "argv");
	assert_int_equal(cJSON_GetArraySize(args), 3);
	assert_string_equal(cJSON_GetArrayItem(args, 0)->valuestring, "curl");
	/* The start of the big one, cut with "…", within the array's bound. */
	const char *third = cJSON_GetArrayItem(args, 2)->valuestring;
	assert_true(strlen(third) > 3000 && strlen(third) < AUDIT_ARGV_MAX);
	assert_memory_equal(third, "AAAA", 4);
	assert_string_equal(third + strlen(third) - 3, "\xe2\x80\xa6");
	sum = cJSON_GetObjectItemCaseSensitive(o, "argv_summary");
	assert_true(cJSON_IsObject(sum));
	assert_int_equal((int)json_num(sum, "argc"), 3);
	assert_int_equal((int)json_num(sum, "bytes"), 1000009);
	/* sha256 of "curl\0-d\0AAAA…\0", computed elsewhere (Python's hashlib). */
	assert_string_equal(json_str(sum, "sha256"),
	                    "f20ce9649af42e4b121ed072798dee1080266a21e4fca2167edf3711a86de6ec");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sum, "last_cut")));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sum, "complete")));
	cJSON_Delete(o);
	free(line);

	/* Read only in part (the notifier's limit): the summary says so. */
	rec.argv_incomplete = true;
	assert_int_equal(audit_format_line(&rec, &line), 0);
	o = parse_line(line);
	sum = cJSON_GetObjectItemCaseSensitive(o, "argv_summary");
	assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(sum, "complete")));
	cJSON_Delete(o);
	free(line);
	free(big);
}

static void test_many_small_arguments_are_summarised_by_count(void **state)
{
	static char text[5000][16];
	static const char *argv[5000];
	struct audit_record rec = {.time_ms = T0,
	                           .kind = "exec",
	                           .pid = -1,
	                           .uid = -1,
	                           .argv = argv,
	                           .argc = 5000,
	                           .verdict = AUDIT_DENY,
	                           .latency_ms = -1};
	char *line = NULL;
	cJSON *o, *sum, *args;

	for (int i = 0; i < 5000; i++) {
		snprintf(text[i], sizeof(text[i]), "x%d", i);
		argv[i] = text[i];
	}
	assert_int_equal(audit_format_line(&rec, &line), 0);
	o = parse_line(line);
	args = cJSON_GetObjectItemCaseSensitive(o, "argv");
	assert_int_equal(cJSON_GetArraySize(args), AUDIT_ARGV_MAX_ARGS);
	assert_string_equal(cJSON_GetArrayItem(args, AUDIT_ARGV_MAX_ARGS - 1)->valuestring, "x255");
	sum = cJSON_GetObjectItemCaseSensitive(o, "argv_summary");
	assert_int_equal((int)json_num(sum, "argc"), 5000);
	assert_int_equal((int)json_num(sum, "bytes"), 28890);
	assert_string_equal(json_str(sum, "sha256"),
	                    "52446deefb37bdc5557e14cc644064154ed49893628e30c5d3ea4cefa3883b8b");
	assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(sum, "last_cut")));
	cJSON_Delete(o);
	free(line);
}

/* Every string field is bounded as written: escapes count, a cut never splits an escape or a
 * UTF-8 sequence, and what fits exactly is not cut. */
static void test_every_field_is_bounded_as_written(void **state)
{
	static char ctl[3000], utf8[9000], exact[AUDIT_FIELD_MAX - 1], over[AUDIT_FIELD_MAX];
	const char *argv[] = {"sh"};
	struct audit_record rec = {.time_ms = T0,
	                           .kind = "exec",
	                           .pid = -1,
	                           .uid = -1,
	                           .argv = argv,
	                           .argc = 1,
	                           .verdict = AUDIT_DENY,
	                           .latency_ms = -1};
	char *line = NULL;
	cJSON *o;
	const char *v;

	memset(ctl, '\x1b', sizeof(ctl) - 1); /* each one 6 bytes as written: \u001b */
	for (size_t i = 0; i + 3 < sizeof(utf8); i += 3)
		memcpy(utf8 + i, "\xe2\x82\xac", 3); /* € */
	memset(exact, 'e', sizeof(exact) - 1);       /* 4094 bytes and two quotes: just fits */
	memset(over, 'o', sizeof(over) - 1);         /* one more: cut */
	rec.exe = ctl;
	rec.cwd = utf8;
	rec.summary = exact;
	rec.reason = over;
	assert_int_equal(audit_format_line(&rec, &line), 0);
	assert_true(strlen(line) < 5 * AUDIT_FIELD_MAX);
	o = parse_line(line);
	v = json_str(o, "exe");
	assert_true(strlen(v) > 600);
	for (size_t i = 0; i + 3 < strlen(v); i++)
		assert_int_equal(v[i], '\x1b');
	assert_string_equal(v + strlen(v) - 3, "\xe2\x80\xa6");
	v = json_str(o, "cwd");
	assert_int_equal(strlen(v) % 3, 0); /* whole characters only */
	assert_string_equal(v + strlen(v) - 3, "\xe2\x80\xa6");
	assert_string_equal(json_str(o, "summary"), exact);
	v = json_str(o, "reason");
	assert_int_equal(strlen(v), AUDIT_FIELD_MAX - 2); /* all but the quotes, "…" included */
	assert_string_equal(v + strlen(v) - 3, "\xe2\x80\xa6");
	cJSON_Delete(o);
	free(line);
	/* Each written value stays within its bound. */
	assert_int_equal(audit_format_line(&rec, &line), 0);
	assert_non_null(strstr(line, "\"summary\":\""));
	assert_int_equal(strstr(line, "\",\"verdict\"") + 1 - strstr(line, "\"summary\":\"") -
	                         (long)strlen("\"summary\":"),
	                 AUDIT_FIELD_MAX);
	free(line);
}

static void test_a_suppressed_record_carries_the_count(void **state)
{
	struct audit_record rec = {
	        .time_ms = T0,
	        .sandbox = "sb",
	        .kind = "audit",
	        .pid = -1,
	        .uid = -1,
	        .verdict = AUDIT_SUPPRESSED,
	        .latency_ms = -1,
	        .reason = "r",
	        .suppressed = 42,
	};
	char *line = NULL;

	assert_int_equal(audit_format_line(&rec, &line), 0);
	assert_string_equal(line,
	                    "{\"time\":\"2026-11-22T01:56:07.123Z\",\"id\":null,\"sandbox\":\"sb\","
	                    "\"project\":null,\"kind\":\"audit\",\"pid\":null,\"uid\":null,"
	                    "\"exe\":null,\"argv\":null,\"cwd\":null,\"interpreter\":null,"
	                    "\"summary\":null,\"verdict\":\"suppressed\",\"rule\":null,"
	                    "\"decided_by\":null,\"scope\":null,\"latency_ms\":null,"
	                    "\"reason\":\"r\",\"suppressed\":42}\n");
	free(line);
}

static void test_time_is_rfc3339_utc_with_milliseconds(void **state)
{
	char buf[32];

	audit_format_time(0, buf);
	assert_string_equal(buf, "1970-01-01T00:00:00.000Z");
	audit_format_time(T0, buf);
	assert_string_equal(buf, "2026-11-22T01:56:07.123Z");
	audit_format_time(951782400007ULL, buf); /* a leap day */
	assert_string_equal(buf, "2000-02-29T00:00:00.007Z");
	audit_format_time(UINT64_MAX, buf);
	assert_string_equal(buf, "1970-01-01T00:00:00.000Z");
}

static void test_queue_events_become_records(void **state)
{
	struct queue_config cfg;
	struct queue *q = NULL;
	static const char *const argv[] = {"rm", "-rf", "build"};
	struct queue_request req = {.kind = QUEUE_KIND_EXEC,
	                            .sandbox = "sb",
	                            .summary = "rm -rf build",
	                            .exe = "/usr/bin/rm",
	                            .argv = argv,
	                            .argc = 3,
	                            .cwd = "/src",
	                            .pid = 7,
	                            .uid = 1000,
	                            .cookie = 1};
	char id[QUEUE_ID_LEN + 1];
	struct queue_event ev;
	struct audit_record rec;

	queue_config_init(&cfg);
	assert_int_equal(queue_new(&cfg, &q), 0);
	queue_set_approvers(q, 1, 0);
	assert_int_equal(queue_add(q, &req, 1000, id), QUEUE_ADD_NEW);
	assert_int_equal(queue_decide(q, id, true, QUEUE_SCOPE_SESSION, "tty", NULL, 3500), 0);

	assert_int_equal(queue_pop_event(q, &ev), 1);
	audit_record_from_queue_event(&ev, T0, &rec);
	assert_int_equal(rec.verdict, AUDIT_ASK);
	assert_string_equal(rec.id, id);
	assert_string_equal(rec.kind, "exec");
	assert_string_equal(rec.exe, "/usr/bin/rm");
	assert_int_equal(rec.argc, 3);
	assert_int_equal(rec.pid, 7);
	assert_null(rec.decided_by);
	assert_int_equal(rec.latency_ms, -1);
	queue_event_release(&ev);

	assert_int_equal(queue_pop_event(q, &ev), 1);
	audit_record_from_queue_event(&ev, T0, &rec);
	assert_int_equal(rec.verdict, AUDIT_APPROVED);
	assert_string_equal(rec.decided_by, "tty");
	assert_string_equal(rec.scope, "session");
	assert_int_equal(rec.latency_ms, 2500);
	assert_string_equal(rec.reason, "Command approved by user");
	char *line = NULL;
	assert_int_equal(audit_format_line(&rec, &line), 0);
	assert_non_null(strstr(line, "\"argv\":[\"rm\",\"-rf\",\"build\"]"));
	assert_non_null(strstr(line, "\"verdict\":\"approved\""));
	free(line);
	assert_false(rec.automatic); /* a person decided */
	assert_false(rec.unanswered_ask);
	queue_event_release(&ev);

	/* Nobody to answer: the fallback decides at once. Both records are automatic. */
	queue_set_approvers(q, 0, 4000);
	req.cookie = 2;
	req.argc = 2;
	assert_int_equal(queue_add(q, &req, 4000, id), QUEUE_ADD_DECIDED);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(queue_pop_event(q, &ev), 1);
		audit_record_from_queue_event(&ev, T0, &rec);
		assert_int_equal(rec.verdict, i == 0 ? AUDIT_ASK : AUDIT_DENIED);
		assert_true(rec.automatic);
		assert_false(rec.unanswered_ask); /* one rate is enough */
		queue_event_release(&ev);
	}
	/* Timed out while a person could have answered: not automatic. */
	queue_set_approvers(q, 1, 5000);
	req.cookie = 3;
	req.argc = 1;
	assert_int_equal(queue_add(q, &req, 5000, id), QUEUE_ADD_NEW);
	assert_int_equal(queue_pop_event(q, &ev), 1);
	audit_record_from_queue_event(&ev, T0, &rec);
	assert_false(rec.automatic);
	assert_true(rec.unanswered_ask); /* the agent can make asks come and go at will */
	queue_event_release(&ev);
	queue_tick(q, 5000 + 10 * 60 * 1000);
	assert_int_equal(queue_pop_event(q, &ev), 1);
	audit_record_from_queue_event(&ev, T0, &rec);
	assert_int_equal(rec.verdict, AUDIT_TIMED_OUT);
	assert_false(rec.automatic);
	assert_true(rec.unanswered_ask);
	queue_event_release(&ev);
	queue_free(q);
}

static void test_path_follows_xdg_state_home_then_home(void **state)
{
	static const struct {
		const char *xdg, *home, *want;
		int ret;
	} cases[] = {
	        {"/s", "/home/u", "/s/cloister/audit.log", 0},
	        {NULL, "/home/u", "/home/u/.local/share/cloister/audit.log", 0},
	        {"", "/home/u", "/home/u/.local/share/cloister/audit.log", 0},
	        {"relative/state", "/home/u", "/home/u/.local/share/cloister/audit.log", 0},
	        {"/s", NULL, "/s/cloister/audit.log", 0},
	        {NULL, NULL, NULL, -ENOENT},
	        {NULL, "relative", NULL, -ENOENT},
	        {"", "", NULL, -ENOENT},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *path = (char *)"untouched";
		assert_int_equal(audit_log_path(cases[i].xdg, cases[i].home, &path), cases[i].ret);
		if (cases[i].ret == 0) {
			assert_string_equal(path, cases[i].want);
			free(path);
		} else {
			assert_string_equal(path, "untouched");
		}
	}
}

static char tmpdir[64];

static int make_tmpdir(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_audit.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_open_creates_private_dirs_and_file(void **state)
{
	char path[256], dir[256];
	struct stat st;
	int fd = -1;
	mode_t old = umask(0);

	snprintf(path, sizeof(path), "%s/state/cloister/audit.log", tmpdir);
	assert_int_equal(audit_log_open(path, &fd), 0);
	umask(old);
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_true(fcntl(fd, F_GETFL) & O_APPEND);
	assert_false(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	snprintf(dir, sizeof(dir), "%s/state/cloister", tmpdir);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	snprintf(dir, sizeof(dir), "%s/state", tmpdir);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	close(fd);
}

static void test_an_existing_file_is_narrowed_to_0600(void **state)
{
	char path[256];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/wide.log", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fchmod(fd, 0644), 0);
	close(fd);
	assert_int_equal(audit_log_open(path, &fd), 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	close(fd);
}

static void test_symlinks_fifos_and_relative_paths_are_refused(void **state)
{
	char path[256], target[256];
	int fd = -7;

	snprintf(target, sizeof(target), "%s/target", tmpdir);
	snprintf(path, sizeof(path), "%s/link.log", tmpdir);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(audit_log_open(path, &fd), -ELOOP);
	assert_int_equal(access(target, F_OK), -1); /* nothing created through the link */
	snprintf(path, sizeof(path), "%s/fifo.log", tmpdir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(audit_log_open(path, &fd), -EINVAL); /* and does not block */
	assert_int_equal(audit_log_open("relative.log", &fd), -EINVAL);
	assert_int_equal(fd, -7);
}

static void test_writes_append_from_every_writer(void **state)
{
	char path[256], buf[256];
	int a, b, fd;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/append.log", tmpdir);
	assert_int_equal(audit_log_open(path, &a), 0);
	assert_int_equal(audit_log_open(path, &b), 0);
	assert_int_equal(audit_log_write(a, "{\"n\":1}\n"), 0);
	assert_int_equal(audit_log_write(b, "{\"n\":2}\n"), 0);
	assert_int_equal(audit_log_write(a, "{\"n\":3}\n"), 0);
	close(a);
	close(b);
	/* Reopening appends too. */
	assert_int_equal(audit_log_open(path, &a), 0);
	assert_int_equal(audit_log_write(a, "{\"n\":4}\n"), 0);
	close(a);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n{\"n\":4}\n");
	assert_int_equal(audit_log_write(-1, "x\n"), -EBADF);
}

static void test_concurrent_writers_never_interleave_lines(void **state)
{
	enum { WRITERS = 4, LINES = 500, WIDTH = 3000 };
	char path[256];
	pid_t pids[WRITERS];

	snprintf(path, sizeof(path), "%s/concurrent.log", tmpdir);
	for (int w = 0; w < WRITERS; w++) {
		pids[w] = fork();
		assert_true(pids[w] >= 0);
		if (pids[w] == 0) {
			static char line[WIDTH + 2];
			int fd;
			if (audit_log_open(path, &fd) < 0)
				_exit(1);
			memset(line, 'a' + w, WIDTH);
			line[WIDTH] = '\n';
			line[WIDTH + 1] = '\0';
			for (int i = 0; i < LINES; i++)
				if (audit_log_write(fd, line) < 0)
					_exit(2);
			_exit(0);
		}
	}
	for (int w = 0; w < WRITERS; w++) {
		int status;
		assert_int_equal(waitpid(pids[w], &status, 0), pids[w]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}

	FILE *f = fopen(path, "re");
	static char line[WIDTH + 16];
	int count[WRITERS] = {0};
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);
		assert_int_equal(len, WIDTH + 1);
		char c = line[0];
		assert_true(c >= 'a' && c < 'a' + WRITERS);
		for (size_t i = 1; i < WIDTH; i++)
			if (line[i] != c)
				fail_msg("line mixes writers at byte %zu", i);
		count[c - 'a']++;
	}
	fclose(f);
	for (int w = 0; w < WRITERS; w++)
		assert_int_equal(count[w], LINES);
}

static char said[4096];

static void catch_say(void *userdata, const char *line)
{
	(void)userdata;
	strncat(said, line, sizeof(said) - strlen(said) - 2);
	strcat(said, "\n");
}

static void record_line(struct audit_log *log, enum audit_verdict verdict, const char *summary)
{
	struct audit_record rec = {
	        .time_ms = T0,
	        .sandbox = "main",
	        .kind = "exec",
	        .pid = 1,
	        .uid = 0,
	        .summary = summary,
	        .verdict = verdict,
	        .decided_by = verdict == AUDIT_APPROVED ? "tty" : "policy",
	        .latency_ms = -1,
	};

	audit_log_record(log, &rec);
}

/* A file that refuses lines (its size limit here, a full disk in life) does not close the
 * log: the lines are counted, the person told (a decision whole), and the count written
 * before the next line once there is room, on a line of its own after the cut one. */
static void test_a_full_file_counts_what_it_lost_and_goes_on(void **state)
{
	struct loop *loop = NULL;
	struct audit_log *log = NULL;
	struct audit_log_options opts = {.rate = -1};
	struct rlimit old, small;
	char path[256], text[8192] = "";
	struct stat st;
	FILE *f;
	size_t n;

	setenv("XDG_STATE_HOME", tmpdir, 1);
	snprintf(path, sizeof(path), "%s/cloister/audit.log", tmpdir);
	assert_int_equal(loop_new(&loop), 0);
	assert_int_equal(audit_log_new(loop, &opts, &log), 0);
	said[0] = '\0';
	say_set_sink(catch_say, NULL);
	say_set_quiet(true); /* -q: a decision lost is still said */
	record_line(log, AUDIT_ALLOW, "first");
	assert_int_equal(stat(path, &st), 0);
	/* Room for the start of the next line only. */
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	small = old;
	small.rlim_cur = (rlim_t)st.st_size + 10;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
	record_line(log, AUDIT_APPROVED, "curl example.org");
	record_line(log, AUDIT_ALLOW, "lost too");
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	record_line(log, AUDIT_ALLOW, "after");
	say_set_sink(NULL, NULL);
	say_set_quiet(false);
	audit_log_free(log);
	loop_free(loop);
	unsetenv("XDG_STATE_HOME");

	assert_non_null(strstr(said, "cannot write"));
	assert_non_null(strstr(said, "not written: exec curl example.org approved by tty"));
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	/* first, the cut start of the decision, the count, after. */
	char *cut = strchr(text, '\n') + 1;
	char *count = strchr(cut, '\n') + 1;
	char *after = strchr(count, '\n') + 1;
	assert_int_equal(count - cut, 11);
	assert_non_null(strstr(count, "\"verdict\":\"lost\""));
	assert_non_null(strstr(count, "\"lost\":2}\n"));
	assert_non_null(strstr(count, "the line before this one is the start of one of them"));
	assert_non_null(strstr(after, "\"summary\":\"after\""));
	assert_null(strstr(text, "lost too"));
	assert_int_equal(strchr(after, '\n')[1], '\0');
}

static void record_auto(struct audit_log *log, const char *summary)
{
	struct audit_record rec = {
	        .time_ms = T0,
	        .sandbox = "main",
	        .kind = "exec",
	        .pid = 1,
	        .uid = 0,
	        .summary = summary,
	        .verdict = AUDIT_ALLOW,
	        .decided_by = "policy",
	        .latency_ms = -1,
	        .automatic = true,
	};

	audit_log_record(log, &rec);
}

static int stop_loop(struct loop *loop, void *userdata)
{
	(void)userdata;
	loop_exit(loop, 0);
	return 0;
}

/* The summaries of the file's lines, in order, each followed by a space. */
static void file_summaries(const char *path, char *buf, size_t size)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	size_t cap = 0, len = 0;

	assert_non_null(f);
	buf[0] = '\0';
	while (getline(&text, &cap, f) > 0) {
		cJSON *o = cJSON_Parse(text);
		const cJSON *summary = cJSON_GetObjectItemCaseSensitive(o, "summary");

		assert_true(cJSON_IsString(summary));
		len += (size_t)snprintf(buf + len, size - len, "%s ", summary->valuestring);
		assert_true(len < size);
		cJSON_Delete(o);
	}
}

/* As file_summaries, skipping a line that is not JSON (the start a full file cut), and a line
 * without a summary (the count of the lost) as "(lost)". */
static void file_summaries_after_cut(const char *path, char *buf, size_t size)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	size_t cap = 0, len = 0;

	assert_non_null(f);
	buf[0] = '\0';
	while (getline(&text, &cap, f) > 0) {
		cJSON *o = cJSON_Parse(text);
		const cJSON *summary = cJSON_GetObjectItemCaseSensitive(o, "summary");

		if (o)
			len += (size_t)snprintf(buf + len, size - len, "%s ",
			                        cJSON_IsString(summary) ? summary->valuestring
			                                                : "(lost)");
		assert_true(len < size);
		cJSON_Delete(o);
	}
}

/* Gathered: automatic lines stay in memory past the loop's rounds, until their delay; every
 * other trigger writes them sooner, all before the line that triggered, so the file keeps the
 * order they came in: a person's decision (in the file when audit_log_record returns), a
 * reader's audit_log_sync, 64 KiB gathered, the end. */
static void test_automatic_lines_wait_and_every_trigger_keeps_their_order(void **state)
{
	struct loop *loop = NULL;
	struct audit_log *log = NULL;
	/* A minute: nothing here waits for it, so nothing can be written by it. */
	struct audit_log_options opts = {.rate = -1, .batch = true, .delay_ms = 60000};
	struct loop_timer *timer;
	char path[256], text[16384], want[16384], summary[64];
	size_t want_len = 0;

	(void)state;
	setenv("XDG_STATE_HOME", tmpdir, 1);
	snprintf(path, sizeof(path), "%s/cloister/audit.log", tmpdir);
	assert_int_equal(loop_new(&loop), 0);
	assert_int_equal(audit_log_new(loop, &opts, &log), 0);
	record_auto(log, "auto-a");
	record_auto(log, "auto-b");
	/* A round of the loop goes by: still in memory. */
	assert_int_equal(loop_add_timer(loop, 0, stop_loop, NULL, &timer), 0);
	assert_int_equal(loop_run(loop), 0);
	file_summaries(path, text, sizeof(text));
	assert_string_equal(text, "");

	/* A person's decision: the lines before it first, all in the file at once. */
	record_line(log, AUDIT_APPROVED, "decided-c");
	file_summaries(path, text, sizeof(text));
	assert_string_equal(text, "auto-a auto-b decided-c ");

	/* A reader. */
	record_auto(log, "auto-d");
	file_summaries(path, text, sizeof(text));
	assert_string_equal(text, "auto-a auto-b decided-c ");
	audit_log_sync(log);
	file_summaries(path, text, sizeof(text));
	assert_string_equal(text, "auto-a auto-b decided-c auto-d ");

	/* 64 KiB: written when the next line would not fit, the loop never running. */
	want_len = (size_t)snprintf(want, sizeof(want), "%s", text);
	for (int i = 0; i < 400; i++) {
		snprintf(summary, sizeof(summary), "fill-%d", i);
		record_auto(log, summary);
		want_len +=
		        (size_t)snprintf(want + want_len, sizeof(want) - want_len, "%s ", summary);
	}
	file_summaries(path, text, sizeof(text));
	assert_true(strlen(text) > strlen("auto-a auto-b decided-c auto-d "));
	assert_int_equal(strncmp(text, want, strlen(text)), 0);
	assert_true(strlen(text) < want_len); /* the last ones still in memory */

	/* The end writes the rest, in order. */
	record_auto(log, "auto-z");
	want_len += (size_t)snprintf(want + want_len, sizeof(want) - want_len, "auto-z ");
	audit_log_free(log);
	file_summaries(path, text, sizeof(text));
	assert_string_equal(text, want);
	loop_free(loop);
	unsetenv("XDG_STATE_HOME");
}

/* A crash (a fault, an abort) writes what is in memory before the process ends: only a SIGKILL
 * can lose automatic lines. In a child that dies of SIG, both as raised (abort) and as the
 * kernel would send it; once, though a process it forked (with a copy) crashed before it. */
static void crash_with(int sig)
{
	struct audit_log_options opts = {.rate = -1, .batch = true, .delay_ms = 60000};
	char path[256], text[256];
	int status;
	pid_t pid;

	setenv("XDG_STATE_HOME", tmpdir, 1);
	snprintf(path, sizeof(path), "%s/cloister/audit.log", tmpdir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit none = {0, 0};
		struct loop *loop = NULL;
		struct audit_log *log = NULL;

		(void)setrlimit(RLIMIT_CORE, &none);
		/* The child's own end, not the test runner's catching of it. */
		signal(sig, SIG_DFL);
		if (loop_new(&loop) < 0 || audit_log_new(loop, &opts, &log) < 0)
			_exit(1);
		record_auto(log, "auto-a");
		record_auto(log, "auto-b");
		/* A process it forked crashes first: its copy of the lines is not written. */
		pid = fork();
		if (pid == 0) {
			if (sig == SIGABRT)
				abort();
			raise(sig);
			_exit(2);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFSIGNALED(status))
			_exit(3);
		if (sig == SIGABRT)
			abort();
		raise(sig);
		_exit(2);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), sig);
	file_summaries(path, text, sizeof(text));
	assert_string_equal(text, "auto-a auto-b ");
	unsetenv("XDG_STATE_HOME");
}

/* The exec guard's thread blocks every signal but the faults (a fault of a thread that blocks
 * its signal resets the handler to the default: the lines would be lost). */
static void *fault_on_a_thread(void *userdata)
{
	static const int faults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};
	int *volatile nowhere = userdata; /* a page with no access: a real fault, not UB */
	sigset_t mask;

	sigfillset(&mask);
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
		sigdelset(&mask, faults[i]);
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	*nowhere = 1;
	return NULL;
}

/* A real fault (not a raised signal) on a second thread, with that thread's mask, while the
 * first waits: the handler runs there and writes the lines. */
static void test_a_fault_on_another_thread_writes_the_lines_in_memory(void **state)
{
	struct audit_log_options opts = {.rate = -1, .batch = true, .delay_ms = 60000};
	char path[256], text[256];
	int status;
	pid_t pid;

	(void)state;
	setenv("XDG_STATE_HOME", tmpdir, 1);
	snprintf(path, sizeof(path), "%s/cloister/audit.log", tmpdir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit none = {0, 0};
		struct loop *loop = NULL;
		struct audit_log *log = NULL;
		pthread_t th;
		void *page;

		(void)setrlimit(RLIMIT_CORE, &none);
		signal(SIGSEGV, SIG_DFL);
		if (loop_new(&loop) < 0 || audit_log_new(loop, &opts, &log) < 0)
			_exit(1);
		record_auto(log, "auto-a");
		record_auto(log, "auto-b");
		page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (page == MAP_FAILED || pthread_create(&th, NULL, fault_on_a_thread, page) != 0)
			_exit(1);
		pthread_join(th, NULL);
		_exit(2);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGSEGV);
	file_summaries(path, text, sizeof(text));
	assert_string_equal(text, "auto-a auto-b ");
	unsetenv("XDG_STATE_HOME");
}

static void test_a_crash_writes_the_lines_in_memory(void **state)
{
	(void)state;
	crash_with(SIGSEGV);
}

static void test_an_abort_writes_the_lines_in_memory(void **state)
{
	(void)state;
	crash_with(SIGABRT);
}

/* Gathered lines the file refuses (a full disk: the agent can fill it) wait in memory and are
 * written, whole and in order, once there is room: filling the disk for a moment erases
 * nothing. Only what does not fit in memory is counted as lost. */
static void test_a_full_file_keeps_the_gathered_lines_until_there_is_room(void **state)
{
	struct loop *loop = NULL;
	struct audit_log *log = NULL;
	struct audit_log_options opts = {.rate = -1, .batch = true, .delay_ms = 60000};
	struct rlimit old, small;
	char path[256], text[16384], want[16384], summary[64];
	size_t want_len;
	struct stat st;

	(void)state;
	setenv("XDG_STATE_HOME", tmpdir, 1);
	snprintf(path, sizeof(path), "%s/cloister/audit.log", tmpdir);
	assert_int_equal(loop_new(&loop), 0);
	assert_int_equal(audit_log_new(loop, &opts, &log), 0);
	said[0] = '\0';
	say_set_sink(catch_say, NULL);
	record_auto(log, "auto-a");
	audit_log_sync(log);
	assert_int_equal(stat(path, &st), 0);
	/* Room for the start of the next line only. */
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	small = old;
	small.rlim_cur = (rlim_t)st.st_size + 10;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
	record_auto(log, "auto-b");
	record_auto(log, "auto-c");
	audit_log_sync(log);
	audit_log_sync(log);
	assert_non_null(strstr(said, "cannot write"));
	assert_non_null(strstr(said, "wait in memory"));
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	record_auto(log, "auto-d");
	audit_log_sync(log);
	/* The cut start of auto-b ends; then every line whole, none lost. */
	file_summaries_after_cut(path, text, sizeof(text));
	assert_string_equal(text, "auto-a auto-b auto-c auto-d ");

	/* Full for longer than memory holds: the oldest lines wait, the rest are counted. */
	assert_int_equal(stat(path, &st), 0);
	small.rlim_cur = (rlim_t)st.st_size;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
	signal(SIGXFSZ, SIG_IGN);
	for (int i = 0; i < 400; i++) {
		snprintf(summary, sizeof(summary), "fill-%d", i);
		record_auto(log, summary);
	}
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	audit_log_free(log);
	loop_free(loop);
	say_set_sink(NULL, NULL);
	unsetenv("XDG_STATE_HOME");
	file_summaries_after_cut(path, text, sizeof(text));
	want_len = (size_t)snprintf(want, sizeof(want), "auto-a auto-b auto-c auto-d ");
	/* The count of the lost comes first (no summary), then the oldest, in order. */
	want_len += (size_t)snprintf(want + want_len, sizeof(want) - want_len, "(lost) fill-0 ");
	assert_int_equal(strncmp(text, want, want_len), 0);
	assert_null(strstr(text, "fill-399 "));
}

struct watch {
	const char *path;
	uint64_t deadline_ms;
	bool seen;
};

/* Every millisecond, until the file has a line or the bound passes. */
static int watch_file(struct loop *loop, void *userdata)
{
	struct watch *w = userdata;
	struct stat st;
	struct loop_timer *timer;

	if (stat(w->path, &st) == 0 && st.st_size > 0) {
		w->seen = true;
		loop_exit(loop, 0);
	} else if (loop_now_ms() >= w->deadline_ms)
		loop_exit(loop, 0);
	else
		assert_int_equal(loop_add_timer(loop, loop_now_ms() + 1, watch_file, w, &timer), 0);
	return 0;
}

/* Nothing else happening, an automatic line still reaches the file: its delay's timer writes
 * it. (Waited for up to 10 s, a loaded machine's bound; it comes after about 20 ms.) */
static void test_an_automatic_line_reaches_the_file_without_more_activity(void **state)
{
	struct loop *loop = NULL;
	struct audit_log *log = NULL;
	struct audit_log_options opts = {.rate = -1, .batch = true, .delay_ms = 20};
	struct loop_timer *timer;
	char path[256], text[256];
	struct watch w = {.path = path};

	(void)state;
	setenv("XDG_STATE_HOME", tmpdir, 1);
	snprintf(path, sizeof(path), "%s/cloister/audit.log", tmpdir);
	assert_int_equal(loop_new(&loop), 0);
	assert_int_equal(audit_log_new(loop, &opts, &log), 0);
	record_auto(log, "auto-a");
	w.deadline_ms = loop_now_ms() + 10000;
	assert_int_equal(loop_add_timer(loop, 0, watch_file, &w, &timer), 0);
	assert_int_equal(loop_run(loop), 0);
	assert_true(w.seen);
	file_summaries(path, text, sizeof(text));
	assert_string_equal(text, "auto-a ");
	audit_log_free(log);
	loop_free(loop);
	unsetenv("XDG_STATE_HOME");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_a_full_record_is_one_exact_line),
	        cmocka_unit_test(test_unknown_values_are_null),
	        cmocka_unit_test(test_a_connection_record_carries_bytes_and_duration),
	        cmocka_unit_test(test_numbers_keep_their_format),
	        cmocka_unit_test(test_hostile_argv_is_escaped_and_made_valid_utf8),
	        cmocka_unit_test(test_a_huge_argv_is_summarised_with_its_length_and_digest),
	        cmocka_unit_test(test_many_small_arguments_are_summarised_by_count),
	        cmocka_unit_test(test_every_field_is_bounded_as_written),
	        cmocka_unit_test(test_a_suppressed_record_carries_the_count),
	        cmocka_unit_test(test_time_is_rfc3339_utc_with_milliseconds),
	        cmocka_unit_test(test_queue_events_become_records),
	        cmocka_unit_test(test_path_follows_xdg_state_home_then_home),
	        cmocka_unit_test_setup_teardown(test_open_creates_private_dirs_and_file,
	                                        make_tmpdir, remove_tmpdir),
	        cmocka_unit_test_setup_teardown(test_an_existing_file_is_narrowed_to_0600,
	                                        make_tmpdir, remove_tmpdir),
	        cmocka_unit_test_setup_teardown(test_symlinks_fifos_and_relative_paths_are_refused,
	                                        make_tmpdir, remove_tmpdir),
	        cmocka_unit_test_setup_teardown(test_writes_append_from_every_writer, make_tmpdir,
	                                        remove_tmpdir),
	        cmocka_unit_test_setup_teardown(test_concurrent_writers_never_interleave_lines,
	                                        make_tmpdir, remove_tmpdir),
	        cmocka_unit_test_setup_teardown(test_a_full_file_counts_what_it_lost_and_goes_on,
	                                        make_tmpdir, remove_tmpdir),
	        cmocka_unit_test_setup_teardown(
	                test_automatic_lines_wait_and_every_trigger_keeps_their_order, make_tmpdir,
	                remove_tmpdir),
	        cmocka_unit_test_setup_teardown(
	                test_an_automatic_line_reaches_the_file_without_more_activity, make_tmpdir,
	                remove_tmpdir),
	        cmocka_unit_test_setup_teardown(
	                test_a_full_file_keeps_the_gathered_lines_until_there_is_room, make_tmpdir,
	                remove_tmpdir),
	        cmocka_unit_test_setup_teardown(test_a_crash_writes_the_lines_in_memory,
	                                        make_tmpdir, remove_tmpdir),
	        cmocka_unit_test_setup_teardown(
	                test_a_fault_on_another_thread_writes_the_lines_in_memory, make_tmpdir,
	                remove_tmpdir),
	        cmocka_unit_test_setup_teardown(test_an_abort_writes_the_lines_in_memory,
	                                        make_tmpdir, remove_tmpdir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
