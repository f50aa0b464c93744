/* The approval queue: decisions, merging, waiters, timeouts, bounds, ask_fallback, events. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "supervisor/approval/queue.h"

#define MIN (60 * 1000)

static const char *const ARGV_LS[] = {"ls", "-l"};

static struct queue_request exec_req(const char *sandbox, uint64_t cookie)
{
	return (struct queue_request){
	        .kind = QUEUE_KIND_EXEC,
	        .sandbox = sandbox,
	        .project = "proj",
	        .summary = "ls -l",
	        .exe = "/usr/bin/ls",
	        .argv = ARGV_LS,
	        .argc = 2,
	        .cwd = "/work",
	        .pid = 100,
	        .uid = 1000,
	        .cookie = cookie,
	};
}

static struct queue *new_queue_with(const struct queue_config *cfg, unsigned approvers)
{
	struct queue *q = NULL;

	assert_int_equal(queue_new(cfg, &q), 0);
	assert_non_null(q);
	queue_set_approvers(q, approvers, 0);
	return q;
}

static struct queue *new_queue(unsigned approvers)
{
	struct queue_config cfg;

	queue_config_init(&cfg);
	memcpy(cfg.id_key, "0123456789abcdef", 16);
	return new_queue_with(&cfg, approvers);
}

static void drain_events(struct queue *q)
{
	struct queue_event ev;

	while (queue_pop_event(q, &ev))
		queue_event_release(&ev);
}

static void drain_resolutions(struct queue *q)
{
	struct queue_resolution res;

	while (queue_pop_resolution(q, &res))
		queue_resolution_release(&res);
}

static void drain(struct queue *q)
{
	drain_events(q);
	drain_resolutions(q);
}

/* Pop one resolution and check it; cookies must match in order. */
static void expect_resolution(struct queue *q, const char *id, enum queue_state state,
                              const char *by, const uint64_t *cookies, size_t n)
{
	struct queue_resolution res;

	assert_int_equal(queue_pop_resolution(q, &res), 1);
	if (id)
		assert_string_equal(res.item->id, id);
	assert_int_equal(res.item->state, state);
	assert_string_equal(res.item->decided_by, by);
	assert_non_null(res.item->reason);
	assert_int_equal(res.n_waiters, n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(res.waiters[i].cookie, cookies[i]);
	queue_resolution_release(&res);
}

static void test_a_decision_answers_the_waiter(void **state)
{
	static const struct {
		bool allow;
		enum queue_scope scope;
		const char *reason;
		enum queue_state want;
		const char *want_reason;
	} cases[] = {
	        {true, QUEUE_SCOPE_ONCE, NULL, QUEUE_STATE_APPROVED, "Command approved by user"},
	        {false, QUEUE_SCOPE_ONCE, NULL, QUEUE_STATE_DENIED, "Command denied by user"},
	        {false, QUEUE_SCOPE_PROJECT, "Package not needed", QUEUE_STATE_DENIED,
	         "Package not needed"},
	        {true, QUEUE_SCOPE_SESSION, "ok", QUEUE_STATE_APPROVED, "ok"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct queue *q = new_queue(1);
		struct queue_request req = exec_req("sb", 42);
		struct queue_resolution res;
		char id[QUEUE_ID_LEN + 1];
		uint64_t cookie = 42;

		assert_int_equal(queue_add(q, &req, 1000, id), QUEUE_ADD_NEW);
		assert_int_equal(queue_count(q), 1);
		assert_int_equal(queue_pop_resolution(q, &res), 0);
		assert_int_equal(queue_decide(q, id, cases[i].allow, cases[i].scope, "web",
		                              cases[i].reason, 2500),
		                 0);
		assert_int_equal(queue_count(q), 0);
		assert_int_equal(queue_pop_resolution(q, &res), 1);
		assert_string_equal(res.item->id, id);
		assert_int_equal(res.item->state, cases[i].want);
		assert_int_equal(res.item->scope, cases[i].scope);
		assert_string_equal(res.item->decided_by, "web");
		assert_string_equal(res.item->reason, cases[i].want_reason);
		assert_int_equal(res.item->created_ms, 1000);
		assert_int_equal(res.item->decided_ms, 2500);
		assert_int_equal(res.n_waiters, 1);
		assert_int_equal(res.waiters[0].cookie, cookie);
		queue_resolution_release(&res);
		assert_int_equal(queue_pop_resolution(q, &res), 0);
		drain(q);
		queue_free(q);
	}
}

static void test_request_fields_are_copied(void **state)
{
	struct queue *q = new_queue(1);
	char exe[] = "/usr/bin/ls", arg0[] = "ls", arg1[] = "-l";
	const char *argv[] = {arg0, arg1};
	struct queue_request req = exec_req("sb", 1);
	char id[QUEUE_ID_LEN + 1];
	const struct queue_item *it;

	req.exe = exe;
	req.argv = argv;
	req.interpreter = "/bin/sh";
	assert_int_equal(queue_add(q, &req, 5, id), QUEUE_ADD_NEW);
	memset(exe, 'x', sizeof(exe) - 1);
	arg1[1] = 'X';
	it = queue_find(q, id);
	assert_non_null(it);
	assert_string_equal(it->exe, "/usr/bin/ls");
	assert_int_equal(it->argc, 2);
	assert_string_equal(it->argv[1], "-l");
	assert_null(it->argv[2]);
	assert_string_equal(it->sandbox, "sb");
	assert_string_equal(it->project, "proj");
	assert_string_equal(it->cwd, "/work");
	assert_string_equal(it->interpreter, "/bin/sh");
	assert_int_equal(it->pid, 100);
	assert_int_equal(it->uid, 1000);
	assert_int_equal(it->state, QUEUE_STATE_PENDING);
	assert_int_equal(it->deadline_ms, 5 + 5 * MIN);
	drain(q);
	queue_free(q);
}

static void test_identical_asks_merge_and_one_decision_answers_both(void **state)
{
	struct queue *q = new_queue(1);
	struct queue_request a = exec_req("sb", 7), b = exec_req("sb", 8);
	char id1[QUEUE_ID_LEN + 1], id2[QUEUE_ID_LEN + 1];
	const uint64_t both[] = {7, 8};

	b.pid = 200; /* another process asking the same thing */
	assert_int_equal(queue_add(q, &a, 0, id1), QUEUE_ADD_NEW);
	assert_int_equal(queue_add(q, &b, 10, id2), QUEUE_ADD_MERGED);
	assert_string_equal(id1, id2);
	assert_int_equal(queue_count(q), 1);
	assert_int_equal(queue_find(q, id1)->n_waiters, 2);
	assert_int_equal(queue_find(q, id1)->pid, 100);
	assert_int_equal(queue_decide(q, id1, true, QUEUE_SCOPE_ONCE, "tty", NULL, 20), 0);
	expect_resolution(q, id1, QUEUE_STATE_APPROVED, "tty", both, 2);
	drain(q);
	queue_free(q);
}

static void test_asks_that_differ_in_what_is_shown_do_not_merge(void **state)
{
	static const char *const other_argv[] = {"ls", "-la"};
	static const char *const longer_argv[] = {"ls", "-l", "x"};
	struct queue_request base = exec_req("sb", 1);
	struct queue_request vars[10];
	const char *names[10] = {"sandbox", "kind", "summary", "exe",         "cwd",
	                         "argv",    "argc", "uid",     "interpreter", "identity"};

	for (size_t i = 0; i < 10; i++) {
		vars[i] = base;
		vars[i].cookie = 100 + i;
	}
	vars[0].sandbox = "other";
	vars[1].kind = QUEUE_KIND_SHIM;
	vars[2].summary = "ls -la";
	vars[3].exe = "/bin/ls";
	vars[4].cwd = "/";
	vars[5].argv = other_argv;
	vars[6].argv = longer_argv;
	vars[6].argc = 3;
	vars[7].uid = 0;
	vars[8].interpreter = "/bin/sh";
	/* The same command line naming another file (renamed over, rewritten): not one card. */
	vars[9].identity = "8:1 42 1700000000.5 123";

	for (size_t i = 0; i < 10; i++) {
		struct queue *q = new_queue(1);
		char id1[QUEUE_ID_LEN + 1], id2[QUEUE_ID_LEN + 1];

		assert_int_equal(queue_add(q, &base, 0, id1), QUEUE_ADD_NEW);
		if (queue_add(q, &vars[i], 0, id2) != QUEUE_ADD_NEW)
			fail_msg("differing %s merged", names[i]);
		assert_string_not_equal(id1, id2);
		assert_int_equal(queue_count(q), 2);
		drain(q);
		queue_free(q);
	}
}

static void test_cancelling_the_last_waiter_cancels_the_item(void **state)
{
	struct queue *q = new_queue(1);
	struct queue_request a = exec_req("sb", 7), b = exec_req("sb", 8);
	char id[QUEUE_ID_LEN + 1];
	struct queue_resolution res;

	assert_int_equal(queue_add(q, &a, 0, id), QUEUE_ADD_NEW);
	assert_int_equal(queue_add(q, &b, 0, NULL), QUEUE_ADD_MERGED);
	assert_int_equal(queue_cancel_waiter(q, 0, 7, 5), 0);
	assert_int_equal(queue_find(q, id)->n_waiters, 1);
	assert_int_equal(queue_pop_resolution(q, &res), 0);
	assert_int_equal(queue_cancel_waiter(q, 0, 7, 6), -ENOENT);
	assert_int_equal(queue_cancel_waiter(q, 0, 8, 7), 1);
	assert_null(queue_find(q, id));
	assert_int_equal(queue_count(q), 0);
	expect_resolution(q, id, QUEUE_STATE_CANCELLED, "cancel", NULL, 0);
	assert_int_equal(queue_cancel_waiter(q, 0, 8, 8), -ENOENT);
	/* Decided elsewhere after the cancel: harmless. */
	assert_int_equal(queue_decide(q, id, true, QUEUE_SCOPE_ONCE, "web", NULL, 9), -EALREADY);
	drain(q);
	queue_free(q);
}

/* Waiters are (owner, cookie): two owners may use the same cookie, each is answered as its
 * own, and an owner that stops asking takes only its own waiters away. */
static void test_waiters_are_keyed_by_owner_and_cookie(void **state)
{
	struct queue *q = new_queue(1);
	struct queue_request a = exec_req("sb", 5), b = exec_req("sb", 5), c = exec_req("sb", 6),
	                     d = exec_req("sb", 7);
	char id[QUEUE_ID_LEN + 1], id_d[QUEUE_ID_LEN + 1];
	struct queue_resolution res;

	a.owner = 1;
	b.owner = 2;
	c.owner = 1;
	d.owner = 1;
	d.summary = "another";
	assert_int_equal(queue_add(q, &a, 0, id), QUEUE_ADD_NEW);
	assert_int_equal(queue_add(q, &b, 0, NULL), QUEUE_ADD_MERGED);
	assert_int_equal(queue_add(q, &c, 0, NULL), QUEUE_ADD_MERGED);
	assert_int_equal(queue_add(q, &d, 0, id_d), QUEUE_ADD_NEW);
	/* The same waiter twice is refused, whatever the item. */
	b.summary = "other";
	assert_int_equal(queue_add(q, &b, 0, NULL), QUEUE_E_COOKIE);
	assert_int_equal(queue_find(q, id)->n_waiters, 3);
	/* Owner 1 goes: its two waiters on the first item and the second item with them. */
	assert_int_equal(queue_cancel_owner(q, 1, 1), 1);
	assert_null(queue_find(q, id_d));
	expect_resolution(q, id_d, QUEUE_STATE_CANCELLED, "cancel", NULL, 0);
	assert_int_equal(queue_find(q, id)->n_waiters, 1);
	assert_int_equal(queue_cancel_waiter(q, 1, 5, 2), -ENOENT);
	assert_int_equal(queue_decide(q, id, true, QUEUE_SCOPE_ONCE, "web", NULL, 3), 0);
	assert_int_equal(queue_pop_resolution(q, &res), 1);
	assert_int_equal(res.n_waiters, 1);
	assert_int_equal(res.waiters[0].owner, 2);
	assert_int_equal(res.waiters[0].cookie, 5);
	queue_resolution_release(&res);
	assert_int_equal(queue_cancel_owner(q, 2, 4), 0);
	drain(q);
	queue_free(q);
}

static void test_a_decision_answers_the_remaining_waiters_only(void **state)
{
	struct queue *q = new_queue(1);
	struct queue_request r[3] = {exec_req("sb", 1), exec_req("sb", 2), exec_req("sb", 3)};
	char id[QUEUE_ID_LEN + 1];
	const uint64_t left[] = {1, 3};

	for (int i = 0; i < 3; i++)
		assert_true(queue_add(q, &r[i], 0, id) >= 0);
	assert_int_equal(queue_cancel_waiter(q, 0, 2, 1), 0);
	assert_int_equal(queue_decide(q, id, false, QUEUE_SCOPE_ONCE, "cli", NULL, 2), 0);
	expect_resolution(q, id, QUEUE_STATE_DENIED, "cli", left, 2);
	drain(q);
	queue_free(q);
}

static void test_timeout_happens_at_the_deadline_not_before(void **state)
{
	static const struct {
		enum queue_kind kind;
		uint64_t timeout;
		const char *reason;
	} cases[] = {
	        {QUEUE_KIND_EXEC, 5 * MIN, "No approval within 5m0s"},
	        {QUEUE_KIND_DOMAIN, 1 * MIN, "No approval within 1m0s"},
	        {QUEUE_KIND_HOSTEXEC, 5 * MIN, "No approval within 5m0s"},
	        {QUEUE_KIND_SHIM, 5 * MIN, "No approval within 5m0s"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct queue *q = new_queue(1);
		struct queue_request req = exec_req("sb", 9);
		char id[QUEUE_ID_LEN + 1];
		const uint64_t cookie = 9;
		const uint64_t t0 = 123456;

		req.kind = cases[i].kind;
		assert_int_equal(queue_add(q, &req, t0, id), QUEUE_ADD_NEW);
		assert_int_equal(queue_find(q, id)->deadline_ms, t0 + cases[i].timeout);
		assert_int_equal(queue_next_deadline(q), t0 + cases[i].timeout);
		assert_int_equal(queue_tick(q, t0 + cases[i].timeout - 1), 0);
		assert_non_null(queue_find(q, id));
		assert_int_equal(queue_tick(q, t0 + cases[i].timeout), 1);
		assert_null(queue_find(q, id));
		assert_int_equal(queue_next_deadline(q), UINT64_MAX);
		struct queue_resolution res;
		assert_int_equal(queue_pop_resolution(q, &res), 1);
		assert_int_equal(res.item->state, QUEUE_STATE_TIMED_OUT);
		assert_string_equal(res.item->decided_by, "timeout");
		assert_string_equal(res.item->reason, cases[i].reason);
		assert_int_equal(res.n_waiters, 1);
		assert_int_equal(res.waiters[0].cookie, cookie);
		queue_resolution_release(&res);
		drain(q);
		queue_free(q);
	}
}

static void test_a_decision_at_the_deadline_is_too_late(void **state)
{
	struct queue *q = new_queue(1);
	struct queue_request req = exec_req("sb", 9);
	char id[QUEUE_ID_LEN + 1];

	assert_int_equal(queue_add(q, &req, 0, id), QUEUE_ADD_NEW);
	/* No tick in between: the decision itself notices the deadline has passed. */
	assert_int_equal(queue_decide(q, id, true, QUEUE_SCOPE_ONCE, "web", NULL, 5 * MIN),
	                 -EALREADY);
	expect_resolution(q, id, QUEUE_STATE_TIMED_OUT, "timeout", (const uint64_t[]){9}, 1);
	drain(q);
	queue_free(q);
}

static void test_configured_timeouts_and_no_timeout(void **state)
{
	struct queue_config cfg;
	struct queue *q;
	struct queue_request a = exec_req("sb", 1), b = exec_req("sb", 2);
	char id[QUEUE_ID_LEN + 1];

	queue_config_init(&cfg);
	cfg.timeout_ms[QUEUE_KIND_EXEC] = 1500;
	cfg.timeout_ms[QUEUE_KIND_DOMAIN] = 0;
	q = new_queue_with(&cfg, 1);
	b.kind = QUEUE_KIND_DOMAIN;
	b.summary = "example.com";
	assert_int_equal(queue_add(q, &b, 0, id), QUEUE_ADD_NEW);
	assert_int_equal(queue_find(q, id)->deadline_ms, UINT64_MAX);
	assert_int_equal(queue_next_deadline(q), UINT64_MAX);
	assert_int_equal(queue_add(q, &a, 100, NULL), QUEUE_ADD_NEW);
	assert_int_equal(queue_next_deadline(q), 1600);
	assert_int_equal(queue_tick(q, 1600), 1);
	struct queue_resolution res;
	assert_int_equal(queue_pop_resolution(q, &res), 1);
	assert_string_equal(res.item->reason, "No approval within 1500ms");
	queue_resolution_release(&res);
	assert_int_equal(queue_tick(q, UINT64_MAX - 1), 0);
	assert_int_equal(queue_count(q), 1);
	drain(q);
	queue_free(q);
}

static void test_next_deadline_is_the_earliest(void **state)
{
	struct queue *q = new_queue(1);
	struct queue_request e = exec_req("sb", 1), d = exec_req("sb", 2), e2 = exec_req("sb", 3);
	char id_d[QUEUE_ID_LEN + 1];

	assert_int_equal(queue_next_deadline(q), UINT64_MAX);
	d.kind = QUEUE_KIND_DOMAIN;
	d.summary = "example.com";
	e2.summary = "ls -l /";
	assert_int_equal(queue_add(q, &e, 0, NULL), QUEUE_ADD_NEW);
	assert_int_equal(queue_next_deadline(q), 5 * MIN);
	assert_int_equal(queue_add(q, &d, 1000, id_d), QUEUE_ADD_NEW);
	assert_int_equal(queue_next_deadline(q), 1000 + MIN);
	assert_int_equal(queue_add(q, &e2, 2000, NULL), QUEUE_ADD_NEW);
	assert_int_equal(queue_next_deadline(q), 1000 + MIN);
	assert_int_equal(queue_decide(q, id_d, true, QUEUE_SCOPE_ONCE, "web", NULL, 3000), 0);
	assert_int_equal(queue_next_deadline(q), 5 * MIN);
	/* Events of one tick come out in the order the deadlines fell. */
	drain(q);
	assert_int_equal(queue_tick(q, 10 * MIN), 2);
	struct queue_event ev;
	assert_int_equal(queue_pop_event(q, &ev), 1);
	assert_string_equal(ev.item->summary, "ls -l");
	queue_event_release(&ev);
	assert_int_equal(queue_pop_event(q, &ev), 1);
	assert_string_equal(ev.item->summary, "ls -l /");
	queue_event_release(&ev);
	drain(q);
	queue_free(q);
}

static void test_bounds_fail_with_distinct_codes_and_change_nothing(void **state)
{
	struct queue_config cfg;
	struct queue *q;
	struct queue_request r;
	struct queue_event ev;
	char cmd[32];

	queue_config_init(&cfg);
	cfg.max_pending_per_sandbox = 2;
	cfg.max_pending_total = 3;
	cfg.max_waiters_per_item = 2;
	cfg.max_item_bytes = 200;
	q = new_queue_with(&cfg, 1);

	for (int i = 0; i < 2; i++) {
		r = exec_req("a", 10 + i);
		snprintf(cmd, sizeof(cmd), "cmd %d", i);
		r.summary = cmd;
		assert_int_equal(queue_add(q, &r, 0, NULL), QUEUE_ADD_NEW);
	}
	drain(q);
	r = exec_req("a", 20);
	r.summary = "cmd 2";
	assert_int_equal(queue_add(q, &r, 0, NULL), QUEUE_E_SANDBOX_FULL);
	/* Merging is not a new item: allowed while the sandbox is full. */
	r.summary = "cmd 0";
	assert_int_equal(queue_add(q, &r, 0, NULL), QUEUE_ADD_MERGED);
	r = exec_req("a", 21);
	r.summary = "cmd 0";
	assert_int_equal(queue_add(q, &r, 0, NULL), QUEUE_E_WAITERS);
	r = exec_req("b", 30);
	assert_int_equal(queue_add(q, &r, 0, NULL), QUEUE_ADD_NEW);
	r = exec_req("c", 40);
	assert_int_equal(queue_add(q, &r, 0, NULL), QUEUE_E_FULL);
	/* The same cookie cannot wait twice. */
	r = exec_req("b", 10);
	r.summary = "other";
	assert_int_equal(queue_add(q, &r, 0, NULL), QUEUE_E_COOKIE);
	char big[300];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	r = exec_req("b", 50);
	r.summary = big;
	assert_int_equal(queue_add(q, &r, 0, NULL), QUEUE_E_TOO_BIG);

	assert_int_equal(queue_count(q), 3);
	assert_int_equal(queue_count_sandbox(q, "a"), 2);
	assert_int_equal(queue_count_sandbox(q, "b"), 1);
	assert_int_equal(queue_count_sandbox(q, "c"), 0);
	assert_int_equal(queue_pop_event(q, &ev), 1); /* b's ADDED, nothing else */
	assert_string_equal(ev.item->sandbox, "b");
	queue_event_release(&ev);
	assert_int_equal(queue_pop_event(q, &ev), 0);

	/* Distinct texts a caller can show. */
	const int codes[] = {QUEUE_E_SANDBOX_FULL, QUEUE_E_FULL, QUEUE_E_WAITERS, QUEUE_E_TOO_BIG,
	                     QUEUE_E_COOKIE};
	for (size_t i = 0; i < 5; i++)
		for (size_t j = i + 1; j < 5; j++) {
			assert_int_not_equal(codes[i], codes[j]);
			assert_string_not_equal(queue_strerror(codes[i]), queue_strerror(codes[j]));
		}
	assert_non_null(strstr(queue_strerror(QUEUE_E_SANDBOX_FULL), "too many pending approvals"));
	drain(q);
	queue_free(q);
}

static void test_invalid_requests_are_rejected(void **state)
{
	struct queue *q = new_queue(1);
	struct queue_request r = exec_req("sb", 1);

	r.sandbox = NULL;
	assert_int_equal(queue_add(q, &r, 0, NULL), -EINVAL);
	r = exec_req("sb", 1);
	r.summary = NULL;
	assert_int_equal(queue_add(q, &r, 0, NULL), -EINVAL);
	r = exec_req("sb", 1);
	r.kind = QUEUE_KIND_COUNT;
	assert_int_equal(queue_add(q, &r, 0, NULL), -EINVAL);
	r = exec_req("sb", 1);
	r.argv = NULL;
	assert_int_equal(queue_add(q, &r, 0, NULL), -EINVAL);
	assert_int_equal(queue_count(q), 0);
	assert_int_equal(queue_decide(q, "abc", true, (enum queue_scope)9, "x", NULL, 0), -EINVAL);

	struct queue_config cfg;
	struct queue *bad = NULL;
	queue_config_init(&cfg);
	cfg.max_pending_total = 0;
	assert_int_equal(queue_new(&cfg, &bad), -EINVAL);
	assert_null(bad);
	queue_free(q);
}

static void test_fallback_applies_only_when_nobody_can_answer(void **state)
{
	static const struct {
		enum queue_fallback fallback;
		unsigned approvers;
		bool matched;
		int want_ret;
		enum queue_state want;
	} cases[] = {
	        {QUEUE_FALLBACK_DENY, 0, false, QUEUE_ADD_DECIDED, QUEUE_STATE_DENIED},
	        {QUEUE_FALLBACK_DENY, 0, true, QUEUE_ADD_DECIDED, QUEUE_STATE_DENIED},
	        {QUEUE_FALLBACK_ALLOWLIST, 0, false, QUEUE_ADD_DECIDED, QUEUE_STATE_DENIED},
	        {QUEUE_FALLBACK_ALLOWLIST, 0, true, QUEUE_ADD_DECIDED, QUEUE_STATE_APPROVED},
	        {QUEUE_FALLBACK_FULL, 0, false, QUEUE_ADD_DECIDED, QUEUE_STATE_APPROVED},
	        {QUEUE_FALLBACK_DENY, 1, false, QUEUE_ADD_NEW, QUEUE_STATE_PENDING},
	        {QUEUE_FALLBACK_ALLOWLIST, 2, true, QUEUE_ADD_NEW, QUEUE_STATE_PENDING},
	        {QUEUE_FALLBACK_FULL, 1, false, QUEUE_ADD_NEW, QUEUE_STATE_PENDING},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct queue_config cfg;
		struct queue *q;
		struct queue_request r = exec_req("sb", 77);
		char id[QUEUE_ID_LEN + 1];
		struct queue_resolution res;
		struct queue_event ev;

		queue_config_init(&cfg);
		cfg.fallback[QUEUE_KIND_EXEC] = cases[i].fallback;
		q = new_queue_with(&cfg, cases[i].approvers);
		r.allowlist_matched = cases[i].matched;
		assert_int_equal(queue_add(q, &r, 50, id), cases[i].want_ret);
		if (cases[i].want == QUEUE_STATE_PENDING) {
			assert_non_null(queue_find(q, id));
			assert_int_equal(queue_pop_resolution(q, &res), 0);
		} else {
			assert_int_equal(queue_count(q), 0);
			assert_int_equal(queue_pop_resolution(q, &res), 1);
			assert_string_equal(res.item->id, id);
			assert_int_equal(res.item->state, cases[i].want);
			assert_string_equal(res.item->decided_by, "fallback");
			assert_non_null(strstr(res.item->reason,
			                       queue_fallback_to_string(cases[i].fallback)));
			assert_int_equal(res.n_waiters, 1);
			assert_int_equal(res.waiters[0].cookie, 77);
			queue_resolution_release(&res);
			/* The audit log sees the ask and its outcome. */
			assert_int_equal(queue_pop_event(q, &ev), 1);
			assert_int_equal(ev.type, QUEUE_EVENT_ADDED);
			assert_int_equal(ev.state, QUEUE_STATE_PENDING);
			queue_event_release(&ev);
			assert_int_equal(queue_pop_event(q, &ev), 1);
			assert_int_equal(ev.type, QUEUE_EVENT_REMOVED);
			assert_int_equal(ev.state, cases[i].want);
			queue_event_release(&ev);
			assert_int_equal(
			        queue_decide(q, id, true, QUEUE_SCOPE_ONCE, "web", NULL, 60),
			        -EALREADY);
		}
		drain(q);
		queue_free(q);
	}
}

static void test_fallback_is_per_kind(void **state)
{
	struct queue_config cfg;
	struct queue *q;
	struct queue_request e = exec_req("sb", 1), d = exec_req("sb", 2);

	queue_config_init(&cfg);
	cfg.fallback[QUEUE_KIND_EXEC] = QUEUE_FALLBACK_FULL;
	q = new_queue_with(&cfg, 0);
	d.kind = QUEUE_KIND_DOMAIN;
	d.summary = "example.com";
	assert_int_equal(queue_add(q, &e, 0, NULL), QUEUE_ADD_DECIDED);
	assert_int_equal(queue_add(q, &d, 0, NULL), QUEUE_ADD_DECIDED);
	expect_resolution(q, NULL, QUEUE_STATE_APPROVED, "fallback", (const uint64_t[]){1}, 1);
	expect_resolution(q, NULL, QUEUE_STATE_DENIED, "fallback", (const uint64_t[]){2}, 1);
	drain(q);
	queue_free(q);
}

static void test_last_approver_leaving_applies_fallback_to_pending(void **state)
{
	struct queue *q = new_queue(1);
	struct queue_request a = exec_req("sb", 1), b = exec_req("sb", 2);
	const uint64_t c1[] = {1}, c2[] = {2};

	b.summary = "ls -l /tmp";
	assert_int_equal(queue_add(q, &a, 0, NULL), QUEUE_ADD_NEW);
	assert_int_equal(queue_add(q, &b, 0, NULL), QUEUE_ADD_NEW);
	assert_int_equal(queue_set_approvers(q, 2, 10), 0);
	assert_int_equal(queue_set_approvers(q, 1, 20), 0);
	assert_int_equal(queue_count(q), 2);
	/* Grace 0 (the default): the last one leaving decides at once. */
	assert_int_equal(queue_set_approvers(q, 0, 30), 2);
	assert_int_equal(queue_count(q), 0);
	expect_resolution(q, NULL, QUEUE_STATE_DENIED, "fallback", c1, 1);
	expect_resolution(q, NULL, QUEUE_STATE_DENIED, "fallback", c2, 1);
	/* And new asks are decided at add. */
	assert_int_equal(queue_add(q, &a, 40, NULL), QUEUE_ADD_DECIDED);
	/* An approver coming back makes asks wait again. */
	assert_int_equal(queue_set_approvers(q, 1, 50), 0);
	struct queue_request c = exec_req("sb", 3);
	assert_int_equal(queue_add(q, &c, 60, NULL), QUEUE_ADD_NEW);
	drain(q);
	queue_free(q);
}

static void test_orphan_grace_keeps_asks_pending_until_it_ends(void **state)
{
	struct queue_config cfg;
	struct queue *q;
	struct queue_request a = exec_req("sb", 1), b = exec_req("sb", 2), c = exec_req("sb", 3);
	char id_a[QUEUE_ID_LEN + 1];

	queue_config_init(&cfg);
	cfg.orphan_grace_ms = 5000;
	cfg.fallback[QUEUE_KIND_EXEC] = QUEUE_FALLBACK_FULL;
	q = new_queue_with(&cfg, 0);
	/* Never attached: no grace. */
	assert_int_equal(queue_add(q, &a, 0, NULL), QUEUE_ADD_DECIDED);
	drain(q);

	assert_int_equal(queue_set_approvers(q, 1, 1000), 0);
	assert_int_equal(queue_add(q, &a, 1000, id_a), QUEUE_ADD_NEW);
	assert_int_equal(queue_set_approvers(q, 0, 2000), 0);
	assert_int_equal(queue_next_deadline(q), 7000);
	/* Within the grace a new ask still waits. */
	b.summary = "ls -l /b";
	assert_int_equal(queue_add(q, &b, 3000, NULL), QUEUE_ADD_NEW);
	assert_int_equal(queue_tick(q, 6999), 0);
	assert_int_equal(queue_count(q), 2);
	assert_int_equal(queue_tick(q, 7000), 2);
	expect_resolution(q, id_a, QUEUE_STATE_APPROVED, "fallback", (const uint64_t[]){1}, 1);
	expect_resolution(q, NULL, QUEUE_STATE_APPROVED, "fallback", (const uint64_t[]){2}, 1);
	/* Past the grace: decided at add. */
	assert_int_equal(queue_add(q, &c, 7001, NULL), QUEUE_ADD_DECIDED);
	drain(q);

	/* Re-attaching within the grace keeps the ask pending, for its own timeout. */
	assert_int_equal(queue_set_approvers(q, 1, 8000), 0);
	assert_int_equal(queue_add(q, &a, 8000, id_a), QUEUE_ADD_NEW);
	assert_int_equal(queue_set_approvers(q, 0, 9000), 0);
	assert_int_equal(queue_set_approvers(q, 1, 10000), 0);
	assert_int_equal(queue_tick(q, 20000), 0);
	assert_non_null(queue_find(q, id_a));
	assert_int_equal(queue_next_deadline(q), 8000 + 5 * MIN);
	drain(q);
	queue_free(q);
}

static void test_second_decision_is_harmless_and_unknown_ids_are_reported(void **state)
{
	struct queue *q = new_queue(1);
	struct queue_request r = exec_req("sb", 5);
	char id[QUEUE_ID_LEN + 1];
	struct queue_resolution res;

	assert_int_equal(queue_decide(q, "000000000000", true, QUEUE_SCOPE_ONCE, "web", NULL, 0),
	                 -ENOENT);
	assert_int_equal(queue_decide(q, NULL, true, QUEUE_SCOPE_ONCE, "web", NULL, 0), -ENOENT);
	assert_int_equal(queue_add(q, &r, 0, id), QUEUE_ADD_NEW);
	assert_int_equal(queue_decide(q, id, false, QUEUE_SCOPE_ONCE, "tty", NULL, 1), 0);
	assert_int_equal(queue_decide(q, id, true, QUEUE_SCOPE_GLOBAL, "web", NULL, 2), -EALREADY);
	assert_int_equal(queue_decide(q, id, false, QUEUE_SCOPE_ONCE, "web", NULL, 3), -EALREADY);
	/* Only one resolution, with the first decision. */
	assert_int_equal(queue_pop_resolution(q, &res), 1);
	assert_int_equal(res.item->state, QUEUE_STATE_DENIED);
	assert_string_equal(res.item->decided_by, "tty");
	queue_resolution_release(&res);
	assert_int_equal(queue_pop_resolution(q, &res), 0);
	assert_int_equal(queue_lookup(q, id)->state, QUEUE_STATE_DENIED);
	assert_null(queue_find(q, id));
	drain(q);
	queue_free(q);
}

static void test_old_decisions_are_forgotten_past_recent_max(void **state)
{
	struct queue_config cfg;
	struct queue *q;
	char first[QUEUE_ID_LEN + 1], id[QUEUE_ID_LEN + 1], cmd[32];

	queue_config_init(&cfg);
	cfg.recent_max = 3;
	q = new_queue_with(&cfg, 1);
	for (int i = 0; i < 4; i++) {
		struct queue_request r = exec_req("sb", i);
		snprintf(cmd, sizeof(cmd), "cmd %d", i);
		r.summary = cmd;
		assert_int_equal(queue_add(q, &r, 0, id), QUEUE_ADD_NEW);
		if (i == 0)
			memcpy(first, id, sizeof(id));
		assert_int_equal(queue_decide(q, id, true, QUEUE_SCOPE_ONCE, "web", NULL, 1), 0);
		drain(q);
	}
	assert_string_equal(queue_recent(q, 0)->summary, "cmd 3");
	assert_string_equal(queue_recent(q, 2)->summary, "cmd 1");
	assert_null(queue_recent(q, 3));
	assert_int_equal(queue_decide(q, first, true, QUEUE_SCOPE_ONCE, "web", NULL, 2), -ENOENT);
	assert_int_equal(queue_decide(q, id, true, QUEUE_SCOPE_ONCE, "web", NULL, 2), -EALREADY);
	queue_free(q);
}

struct want_event {
	enum queue_event_type type;
	enum queue_state state;
	int item; /* index into ids */
};

static void test_events_come_out_in_order(void **state)
{
	struct queue *q = new_queue(1);
	struct queue_request r[3] = {exec_req("sb", 1), exec_req("sb", 2), exec_req("sb", 3)};
	char ids[3][QUEUE_ID_LEN + 1];
	const struct want_event want[] = {
	        {QUEUE_EVENT_ADDED, QUEUE_STATE_PENDING, 0},
	        {QUEUE_EVENT_ADDED, QUEUE_STATE_PENDING, 1},
	        {QUEUE_EVENT_REMOVED, QUEUE_STATE_APPROVED, 1},
	        {QUEUE_EVENT_ADDED, QUEUE_STATE_PENDING, 2},
	        {QUEUE_EVENT_REMOVED, QUEUE_STATE_CANCELLED, 2},
	        {QUEUE_EVENT_REMOVED, QUEUE_STATE_TIMED_OUT, 0},
	};
	struct queue_event ev;

	r[1].summary = "b";
	r[2].summary = "c";
	assert_int_equal(queue_add(q, &r[0], 0, ids[0]), QUEUE_ADD_NEW);
	assert_int_equal(queue_add(q, &r[1], 1, ids[1]), QUEUE_ADD_NEW);
	assert_int_equal(queue_decide(q, ids[1], true, QUEUE_SCOPE_ONCE, "web", NULL, 2), 0);
	assert_int_equal(queue_add(q, &r[2], 3, ids[2]), QUEUE_ADD_NEW);
	assert_int_equal(queue_cancel_waiter(q, 0, 3, 4), 1);
	assert_int_equal(queue_tick(q, 5 * MIN), 1);

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(queue_pop_event(q, &ev), 1);
		assert_int_equal(ev.type, want[i].type);
		assert_int_equal(ev.state, want[i].state);
		assert_string_equal(ev.item->id, ids[want[i].item]);
		queue_event_release(&ev);
	}
	assert_int_equal(queue_pop_event(q, &ev), 0);
	drain(q);
	queue_free(q);
}

static bool well_formed_id(const char *id)
{
	if (strlen(id) != QUEUE_ID_LEN)
		return false;
	for (const char *p = id; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

static void test_ids_are_unique_well_formed_and_keyed(void **state)
{
	enum { N = 1000 };
	struct queue_config cfg;
	struct queue *q1, *q2, *q3;
	static char ids[N][QUEUE_ID_LEN + 1];
	char cmd[32], other[QUEUE_ID_LEN + 1], other_key[QUEUE_ID_LEN + 1];

	queue_config_init(&cfg);
	cfg.max_pending_per_sandbox = N;
	cfg.max_pending_total = N;
	memcpy(cfg.id_key, "k1k1k1k1k1k1k1k1", 16);
	q1 = new_queue_with(&cfg, 1);
	q2 = new_queue_with(&cfg, 1);
	memcpy(cfg.id_key, "k2k2k2k2k2k2k2k2", 16);
	q3 = new_queue_with(&cfg, 1);
	for (int i = 0; i < N; i++) {
		struct queue_request r = exec_req("sb", i);
		snprintf(cmd, sizeof(cmd), "cmd %d", i);
		r.summary = cmd;
		assert_int_equal(queue_add(q1, &r, i, ids[i]), QUEUE_ADD_NEW);
		if (!well_formed_id(ids[i]))
			fail_msg("bad id '%s'", ids[i]);
		assert_int_equal(queue_add(q2, &r, i, other), QUEUE_ADD_NEW);
		assert_string_equal(ids[i], other); /* deterministic for one key */
		assert_int_equal(queue_add(q3, &r, i, other_key), QUEUE_ADD_NEW);
		assert_string_not_equal(ids[i], other_key);
		drain(q1);
		drain(q2);
		drain(q3);
	}
	for (int i = 0; i < N; i++)
		for (int j = i + 1; j < N; j++)
			if (strcmp(ids[i], ids[j]) == 0)
				fail_msg("duplicate id %s", ids[i]);
	queue_free(q1);
	queue_free(q2);
	queue_free(q3);
}

static void test_listing_in_creation_order_both_ways(void **state)
{
	struct queue *q = new_queue(1);
	const char *cmds[] = {"one", "two", "three"};
	char ids[3][QUEUE_ID_LEN + 1];
	const struct queue_item *it;
	int i;

	for (i = 0; i < 3; i++) {
		struct queue_request r = exec_req(i == 1 ? "other" : "sb", i);
		r.summary = cmds[i];
		assert_int_equal(queue_add(q, &r, 10 * i, ids[i]), QUEUE_ADD_NEW);
	}
	for (i = 0, it = queue_first(q); it; it = queue_next(q, it), i++)
		assert_string_equal(it->summary, cmds[i]);
	assert_int_equal(i, 3);
	for (i = 2, it = queue_last(q); it; it = queue_prev(q, it), i--)
		assert_string_equal(it->summary, cmds[i]);
	assert_int_equal(i, -1);
	assert_string_equal(queue_find(q, ids[1])->summary, "two");
	assert_null(queue_find(q, "zzz"));
	assert_null(queue_find(q, NULL));
	assert_int_equal(queue_decide(q, ids[1], true, QUEUE_SCOPE_ONCE, "web", NULL, 40), 0);
	assert_string_equal(queue_next(q, queue_first(q))->summary, "three");
	assert_string_equal(queue_prev(q, queue_last(q))->summary, "one");
	assert_string_equal(queue_lookup(q, ids[1])->summary, "two");
	assert_string_equal(queue_lookup(q, ids[2])->summary, "three");
	drain(q);
	queue_free(q);
}

static void test_cancel_sandbox_answers_its_waiters_only(void **state)
{
	struct queue *q = new_queue(1);
	struct queue_request a = exec_req("a", 1), a2 = exec_req("a", 2), b = exec_req("b", 3);

	a2.summary = "other";
	assert_int_equal(queue_add(q, &a, 0, NULL), QUEUE_ADD_NEW);
	assert_int_equal(queue_add(q, &b, 0, NULL), QUEUE_ADD_NEW);
	assert_int_equal(queue_add(q, &a2, 0, NULL), QUEUE_ADD_NEW);
	assert_int_equal(queue_cancel_sandbox(q, "a", "sandbox a stopped", 5), 2);
	assert_int_equal(queue_count(q), 1);
	assert_string_equal(queue_first(q)->sandbox, "b");
	struct queue_resolution res;
	assert_int_equal(queue_pop_resolution(q, &res), 1);
	assert_int_equal(res.item->state, QUEUE_STATE_CANCELLED);
	assert_string_equal(res.item->reason, "sandbox a stopped");
	assert_int_equal(res.n_waiters, 1);
	assert_int_equal(res.waiters[0].cookie, 1);
	queue_resolution_release(&res);
	expect_resolution(q, NULL, QUEUE_STATE_CANCELLED, "cancel", (const uint64_t[]){2}, 1);
	drain(q);
	queue_free(q);
}

static void test_popped_items_outlive_the_queue(void **state)
{
	struct queue *q = new_queue(1);
	struct queue_request r = exec_req("sb", 1);
	char id[QUEUE_ID_LEN + 1];
	struct queue_event ev;
	struct queue_resolution res;

	assert_int_equal(queue_add(q, &r, 0, id), QUEUE_ADD_NEW);
	assert_int_equal(queue_add(q,
	                           &(struct queue_request){.kind = QUEUE_KIND_DOMAIN,
	                                                   .sandbox = "sb",
	                                                   .summary = "example.com",
	                                                   .pid = -1,
	                                                   .uid = -1,
	                                                   .cookie = 2},
	                           0, NULL),
	                 QUEUE_ADD_NEW);
	assert_int_equal(queue_decide(q, id, true, QUEUE_SCOPE_ONCE, "web", NULL, 1), 0);
	assert_int_equal(queue_pop_event(q, &ev), 1);
	assert_int_equal(queue_pop_resolution(q, &res), 1);
	queue_free(q); /* frees the still pending domain item and the undrained events */
	assert_string_equal(ev.item->summary, "ls -l");
	assert_string_equal(res.item->id, id);
	assert_int_equal(res.item->state, QUEUE_STATE_APPROVED);
	queue_event_release(&ev);
	queue_resolution_release(&res);
	queue_event_release(&ev); /* released structs are zeroed: harmless */
	queue_free(NULL);
}

static void test_names_round_trip(void **state)
{
	enum queue_scope s;

	assert_string_equal(queue_kind_to_string(QUEUE_KIND_HOSTEXEC), "hostexec");
	assert_string_equal(queue_state_to_string(QUEUE_STATE_TIMED_OUT), "timed_out");
	assert_string_equal(queue_fallback_to_string(QUEUE_FALLBACK_ALLOWLIST), "allowlist");
	for (int i = QUEUE_SCOPE_ONCE; i <= QUEUE_SCOPE_GLOBAL; i++) {
		assert_int_equal(queue_scope_from_string(queue_scope_to_string(i), &s), 0);
		assert_int_equal(s, i);
	}
	assert_int_equal(queue_scope_from_string("forever", &s), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_a_decision_answers_the_waiter),
	        cmocka_unit_test(test_request_fields_are_copied),
	        cmocka_unit_test(test_identical_asks_merge_and_one_decision_answers_both),
	        cmocka_unit_test(test_asks_that_differ_in_what_is_shown_do_not_merge),
	        cmocka_unit_test(test_cancelling_the_last_waiter_cancels_the_item),
	        cmocka_unit_test(test_a_decision_answers_the_remaining_waiters_only),
	        cmocka_unit_test(test_waiters_are_keyed_by_owner_and_cookie),
	        cmocka_unit_test(test_timeout_happens_at_the_deadline_not_before),
	        cmocka_unit_test(test_a_decision_at_the_deadline_is_too_late),
	        cmocka_unit_test(test_configured_timeouts_and_no_timeout),
	        cmocka_unit_test(test_next_deadline_is_the_earliest),
	        cmocka_unit_test(test_bounds_fail_with_distinct_codes_and_change_nothing),
	        cmocka_unit_test(test_invalid_requests_are_rejected),
	        cmocka_unit_test(test_fallback_applies_only_when_nobody_can_answer),
	        cmocka_unit_test(test_fallback_is_per_kind),
	        cmocka_unit_test(test_last_approver_leaving_applies_fallback_to_pending),
	        cmocka_unit_test(test_orphan_grace_keeps_asks_pending_until_it_ends),
	        cmocka_unit_test(test_second_decision_is_harmless_and_unknown_ids_are_reported),
	        cmocka_unit_test(test_old_decisions_are_forgotten_past_recent_max),
	        cmocka_unit_test(test_events_come_out_in_order),
	        cmocka_unit_test(test_ids_are_unique_well_formed_and_keyed),
	        cmocka_unit_test(test_listing_in_creation_order_both_ways),
	        cmocka_unit_test(test_cancel_sandbox_answers_its_waiters_only),
	        cmocka_unit_test(test_popped_items_outlive_the_queue),
	        cmocka_unit_test(test_names_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
