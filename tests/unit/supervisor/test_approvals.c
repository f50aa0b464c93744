/* The approvals service (approvals.h) on a real loop, with sources and observers of the test's
 * own: each source hears only its own waiters, a person's decision reaches the sources that
 * wait before the queue applies it, a deferred source never hears a resolution inside its own
 * call, an unregistered one hears nothing, automatic verdicts are one audit line and one
 * count, every transition is one line and one event (a decision's on disk before its source
 * hears it), ticks and deadlines run. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/loop.h"
#include "supervisor/approval/approvals.h"
#include "supervisor/approval/audit.h"
#include "supervisor/approval/audit_log.h"
#include "supervisor/approval/metrics.h"

#define MAX_HEARD 16

/* One source of the test: what it heard. */
struct src {
	struct approval_source *s;
	struct approval_source_ops ops;
	unsigned resolutions;
	uint64_t cookies[MAX_HEARD];
	size_t n_cookies;
	enum queue_state last_state;
	enum queue_scope last_scope;
	unsigned decided;
	bool decided_saw_pending;
	int decided_result; /* what its decided hook returns */
	const char *decided_value;
	bool in_call; /* inside approvals_ask / approvals_withdraw */
	bool heard_in_call;
	unsigned ticks;
	uint64_t want_tick; /* what its tick hook returns */
	struct approvals *ap;
	const char *audit_file; /* set: look at it when a resolution is heard */
	bool decision_on_disk;  /* …and the decision's line was there already */
};

struct fixture {
	struct loop *loop;
	struct audit_log *audit;
	struct approvals *ap;
	char dir[64];
	unsigned events_added, events_removed, drained;
};

static void on_resolved(void *userdata, const struct queue_item *item, const uint64_t *cookies,
                        size_t n)
{
	struct src *s = userdata;

	s->resolutions++;
	if (s->audit_file) {
		_cleanup_free_ char *text = NULL;
		_cleanup_fclose_ FILE *f = fopen(s->audit_file, "re");
		size_t cap = 0;

		while (f && getline(&text, &cap, f) > 0)
			if (strstr(text, "\"verdict\":\"approved\"") &&
			    strstr(text, "\"decided_by\":\"tty\""))
				s->decision_on_disk = true;
	}
	s->last_state = item->state;
	s->last_scope = item->scope;
	for (size_t i = 0; i < n && s->n_cookies < MAX_HEARD; i++)
		s->cookies[s->n_cookies++] = cookies[i];
	if (s->in_call)
		s->heard_in_call = true;
}

static int on_decided(void *userdata, const struct queue_item *item,
                      const struct approval_decision *d, struct cl_error *err)
{
	struct src *s = userdata;

	s->decided++;
	s->decided_value = d->value;
	s->decided_saw_pending = item->state == QUEUE_STATE_PENDING &&
	                         queue_find(approvals_queue(s->ap), item->id) == item;
	if (s->decided_result < 0)
		return cl_error_set(err, s->decided_result, "cannot keep %s", d->value);
	return 0;
}

static uint64_t on_tick(void *userdata, uint64_t now_ms)
{
	struct src *s = userdata;

	if (now_ms != UINT64_MAX) {
		s->ticks++;
		s->want_tick = UINT64_MAX;
	}
	return s->want_tick;
}

static void src_init(struct fixture *fx, struct src *s, bool deferred, bool decided)
{
	memset(s, 0, sizeof(*s));
	s->ap = fx->ap;
	s->want_tick = UINT64_MAX;
	s->ops = (struct approval_source_ops){
	        .resolved = on_resolved,
	        .decided = decided ? on_decided : NULL,
	        .tick = on_tick,
	        .deferred = deferred,
	};
	assert_int_equal(approvals_register(fx->ap, &s->ops, s, &s->s), 0);
}

static void on_event(void *userdata, const struct queue_event *ev)
{
	struct fixture *fx = userdata;

	if (ev->type == QUEUE_EVENT_ADDED)
		fx->events_added++;
	else
		fx->events_removed++;
}

static void on_drained(void *userdata)
{
	struct fixture *fx = userdata;

	fx->drained++;
}

static const struct approvals_observer_ops observer_ops = {
        .event = on_event,
        .drained = on_drained,
};

static struct fixture *fixture_new(unsigned approvers, uint64_t exec_timeout_ms)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct approvals_config ac = {0};
	struct audit_log_options ao = {.rate = -1};

	assert_non_null(fx);
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/test_approvals.XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	setenv("XDG_STATE_HOME", fx->dir, 1);
	assert_int_equal(loop_new(&fx->loop), 0);
	assert_int_equal(audit_log_new(fx->loop, &ao, &fx->audit), 0);
	assert_non_null(audit_log_file(fx->audit));
	queue_config_init(&ac.queue);
	if (exec_timeout_ms)
		ac.queue.timeout_ms[QUEUE_KIND_EXEC] = exec_timeout_ms;
	ac.audit = fx->audit;
	assert_int_equal(approvals_new(fx->loop, &ac, &fx->ap), 0);
	assert_int_equal(approvals_observe(fx->ap, &observer_ops, fx), 0);
	approvals_set_approvers(fx->ap, APPROVER_TTY, approvers);
	return fx;
}

/* The audit log's lines, counted, and whether one has NEEDLE. */
static unsigned audit_lines(struct fixture *fx, const char *needle, bool *ret_found)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_fclose_ FILE *f = fopen(audit_log_file(fx->audit), "re");
	size_t cap = 0;
	unsigned n = 0;

	*ret_found = false;
	assert_non_null(f);
	while (getline(&text, &cap, f) > 0) {
		n++;
		if (needle && strstr(text, needle))
			*ret_found = true;
	}
	return n;
}

static void fixture_free(struct fixture *fx)
{
	char cmd[128];

	approvals_unobserve(fx->ap, &observer_ops, fx);
	approvals_free(fx->ap);
	audit_log_free(fx->audit);
	loop_free(fx->loop);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
	assert_int_equal(system(cmd), 0);
	free(fx);
}

static int on_exit_timer(struct loop *loop, void *userdata)
{
	loop_exit(loop, 0);
	return 0;
}

/* Run the loop until its timers due within MS have fired. */
static void run_loop_for(struct fixture *fx, uint64_t ms)
{
	struct loop_timer *t;

	assert_int_equal(loop_add_timer(fx->loop, loop_now_ms() + ms, on_exit_timer, NULL, &t), 0);
	assert_int_equal(loop_run(fx->loop), 0);
}

static struct queue_request ask(const char *summary, uint64_t cookie)
{
	static const char *const argv[] = {"curl", "example.com"};

	return (struct queue_request){
	        .kind = QUEUE_KIND_EXEC,
	        .sandbox = "sb",
	        .summary = summary,
	        .exe = "/usr/bin/curl",
	        .argv = argv,
	        .argc = 2,
	        .pid = 10,
	        .uid = 1000,
	        .cookie = cookie,
	};
}

static void test_each_source_hears_only_its_own_waiters(void **state)
{
	struct fixture *fx = fixture_new(1, 0);
	struct src a, b, c;
	struct queue_request r = ask("curl example.com", 7);
	char id[QUEUE_ID_LEN + 1], id2[QUEUE_ID_LEN + 1];
	struct approval_decision d = {.allow = true, .scope = QUEUE_SCOPE_ONCE, .by = "web"};

	src_init(fx, &a, false, false);
	src_init(fx, &b, false, false);
	src_init(fx, &c, false, false);
	/* The same cookie from two sources: two waiters of one merged item. */
	assert_int_equal(approvals_ask(a.s, &r, id), QUEUE_ADD_NEW);
	assert_int_equal(approvals_ask(b.s, &r, id2), QUEUE_ADD_MERGED);
	assert_string_equal(id, id2);
	r.cookie = 8;
	assert_int_equal(approvals_ask(a.s, &r, NULL), QUEUE_ADD_MERGED);
	/* The same waiter twice is refused. */
	assert_int_equal(approvals_ask(a.s, &r, NULL), QUEUE_E_COOKIE);
	assert_int_equal(fx->events_added, 1);
	assert_int_equal(approvals_decide(fx->ap, id, &d, NULL), 0);
	assert_int_equal(a.resolutions, 1);
	assert_int_equal(a.n_cookies, 2);
	assert_int_equal(a.cookies[0], 7);
	assert_int_equal(a.cookies[1], 8);
	assert_int_equal(a.last_state, QUEUE_STATE_APPROVED);
	assert_int_equal(b.resolutions, 1);
	assert_int_equal(b.n_cookies, 1);
	assert_int_equal(b.cookies[0], 7);
	assert_int_equal(c.resolutions, 0);
	assert_int_equal(fx->events_removed, 1);
	/* Decided: a second decision is told apart from an unknown id. */
	assert_int_equal(approvals_decide(fx->ap, id, &d, NULL), -EALREADY);
	assert_int_equal(approvals_decide(fx->ap, "000000000000", &d, NULL), -ENOENT);
	approvals_unregister(a.s);
	approvals_unregister(b.s);
	approvals_unregister(c.s);
	fixture_free(fx);
}

static void test_a_decision_reaches_the_waiting_sources_first(void **state)
{
	struct fixture *fx = fixture_new(1, 0);
	struct src a, b, other;
	struct queue_request r = ask("curl example.com", 1);
	char id[QUEUE_ID_LEN + 1];
	struct cl_error err = {""};
	struct approval_decision d = {
	        .allow = true,
	        .scope = QUEUE_SCOPE_PROJECT,
	        .by = "web",
	        .value = "*.example.com",
	        .is_pattern = true,
	};

	src_init(fx, &a, false, true);
	src_init(fx, &b, false, true);
	src_init(fx, &other, false, true);
	assert_int_equal(approvals_ask(a.s, &r, id), QUEUE_ADD_NEW);
	assert_int_equal(approvals_ask(b.s, &r, NULL), QUEUE_ADD_MERGED);
	b.decided_result = -EROFS;
	assert_int_equal(approvals_decide(fx->ap, id, &d, &err), 1);
	assert_string_equal(err.msg, "cannot keep *.example.com");
	/* Heard once each, while the item was still pending, before the resolution. */
	assert_int_equal(a.decided, 1);
	assert_true(a.decided_saw_pending);
	assert_string_equal(a.decided_value, "*.example.com");
	assert_int_equal(b.decided, 1);
	assert_int_equal(other.decided, 0);
	/* The decision stands although b could not keep it. */
	assert_int_equal(a.last_state, QUEUE_STATE_APPROVED);
	assert_int_equal(a.last_scope, QUEUE_SCOPE_PROJECT);
	assert_int_equal(b.last_state, QUEUE_STATE_APPROVED);
	approvals_unregister(a.s);
	approvals_unregister(b.s);
	approvals_unregister(other.s);
	fixture_free(fx);
}

static void test_a_deferred_source_hears_from_the_loop_only(void **state)
{
	/* Nobody can answer: the fallback (deny) decides inside approvals_ask. */
	struct fixture *fx = fixture_new(0, 0);
	struct src now, later;
	struct queue_request r = ask("curl example.com", 1);

	src_init(fx, &now, false, false);
	src_init(fx, &later, true, false);
	now.in_call = true;
	assert_int_equal(approvals_ask(now.s, &r, NULL), QUEUE_ADD_DECIDED);
	now.in_call = false;
	assert_int_equal(now.resolutions, 1);
	assert_true(now.heard_in_call);
	assert_int_equal(now.last_state, QUEUE_STATE_DENIED);

	later.in_call = true;
	assert_int_equal(approvals_ask(later.s, &r, NULL), QUEUE_ADD_DECIDED);
	later.in_call = false;
	assert_int_equal(later.resolutions, 0);
	run_loop_for(fx, 50);
	assert_int_equal(later.resolutions, 1);
	assert_false(later.heard_in_call);
	assert_int_equal(later.last_state, QUEUE_STATE_DENIED);
	approvals_unregister(now.s);
	approvals_unregister(later.s);
	fixture_free(fx);
}

static void test_an_unregistered_source_hears_nothing_and_its_asks_go(void **state)
{
	struct fixture *fx = fixture_new(1, 0);
	struct src gone, stays;
	struct queue_request r = ask("curl example.com", 1), alone = ask("wget x", 2);
	char id[QUEUE_ID_LEN + 1], alone_id[QUEUE_ID_LEN + 1];
	struct approval_decision d = {.allow = false, .scope = QUEUE_SCOPE_ONCE, .by = "cli"};

	src_init(fx, &gone, false, false);
	src_init(fx, &stays, false, false);
	assert_int_equal(approvals_ask(gone.s, &r, id), QUEUE_ADD_NEW);
	assert_int_equal(approvals_ask(stays.s, &r, NULL), QUEUE_ADD_MERGED);
	assert_int_equal(approvals_ask(gone.s, &alone, alone_id), QUEUE_ADD_NEW);
	approvals_unregister(gone.s);
	/* Its own ask is cancelled (an audit line, an event); the shared one waits on. */
	assert_null(queue_find(approvals_queue(fx->ap), alone_id));
	assert_non_null(queue_find(approvals_queue(fx->ap), id));
	assert_int_equal(fx->events_removed, 1);
	assert_int_equal(approvals_decide(fx->ap, id, &d, NULL), 0);
	assert_int_equal(gone.resolutions, 0);
	assert_int_equal(stays.resolutions, 1);
	assert_int_equal(stays.last_state, QUEUE_STATE_DENIED);
	/* Withdrawing: the last waiter gone cancels the item. */
	r.summary = "curl other.example";
	assert_int_equal(approvals_ask(stays.s, &r, id), QUEUE_ADD_NEW);
	assert_int_equal(approvals_withdraw(stays.s, 1), 0);
	assert_int_equal(approvals_withdraw(stays.s, 1), -ENOENT);
	assert_null(queue_find(approvals_queue(fx->ap), id));
	/* Cancelled with no waiter left: nobody is answered. */
	assert_int_equal(stays.resolutions, 1);
	approvals_unregister(stays.s);
	fixture_free(fx);
}

static void test_verdicts_and_transitions_are_one_line_and_one_count_each(void **state)
{
	struct fixture *fx = fixture_new(1, 0);
	struct src s;
	struct queue_request r = ask("curl example.com", 1);
	char id[QUEUE_ID_LEN + 1];
	struct approval_decision d = {.allow = true, .scope = QUEUE_SCOPE_ONCE, .by = "tty"};
	struct audit_record allow = {
	        .time_ms = audit_log_now_ms(),
	        .sandbox = "sb",
	        .kind = "exec",
	        .pid = 3,
	        .uid = -1,
	        .summary = "git status",
	        .verdict = AUDIT_ALLOW,
	        .decided_by = "policy",
	        .latency_ms = -1,
	        .automatic = true,
	};
	_cleanup_free_ char *text = NULL;
	bool found;
	unsigned before;

	src_init(fx, &s, false, false);
	s.audit_file = audit_log_file(fx->audit);
	before = fx->drained;
	approvals_verdict(s.s, &allow);
	allow.verdict = AUDIT_DENY;
	allow.summary = "rm -rf /";
	approvals_verdict(s.s, &allow);
	assert_int_equal(audit_lines(fx, "\"summary\":\"rm -rf /\"", &found), 2);
	assert_true(found);
	/* A verdict is no queue change: no event, no drain. */
	assert_int_equal(fx->events_added + fx->events_removed, 0);
	assert_int_equal(fx->drained, before);

	assert_int_equal(approvals_ask(s.s, &r, id), QUEUE_ADD_NEW);
	assert_int_equal(approvals_decide(fx->ap, id, &d, NULL), 0);
	/* ADDED and REMOVED: two more lines, the decision's naming who decided. */
	assert_int_equal(audit_lines(fx, "\"decided_by\":\"tty\"", &found), 4);
	assert_true(found);
	assert_int_equal(fx->events_added, 1);
	assert_int_equal(fx->events_removed, 1);
	assert_true(fx->drained > before);
	/* The person's decision was in the file before the source heard it (and answered the
	 * process it lets go): a crash in between cannot lose it. */
	assert_int_equal(s.resolutions, 1);
	assert_true(s.decision_on_disk);

	assert_true(metrics_render(approvals_metrics(fx->ap), &(struct metrics_gauges){0}, &text) >
	            0);
	assert_non_null(strstr(text, "kind=\"exec\",verdict=\"allow\",source=\"policy\"} 1"));
	assert_non_null(strstr(text, "kind=\"exec\",verdict=\"deny\",source=\"policy\"} 1"));
	assert_non_null(strstr(text, "kind=\"exec\",verdict=\"approved\",source=\"tty\"} 1"));
	approvals_unregister(s.s);
	fixture_free(fx);
}

static void test_ticks_and_deadlines_run_on_the_loop(void **state)
{
	struct fixture *fx = fixture_new(1, 40);
	struct src s;
	struct queue_request r = ask("curl example.com", 1);

	src_init(fx, &s, false, false);
	/* The source wants a tick now; the ask times out 40 ms later. */
	s.want_tick = loop_now_ms();
	approvals_schedule(s.s);
	assert_int_equal(approvals_ask(s.s, &r, NULL), QUEUE_ADD_NEW);
	run_loop_for(fx, 20);
	assert_int_equal(s.ticks, 1);
	assert_int_equal(s.resolutions, 0);
	run_loop_for(fx, 60);
	assert_int_equal(s.resolutions, 1);
	assert_int_equal(s.last_state, QUEUE_STATE_TIMED_OUT);
	approvals_unregister(s.s);
	fixture_free(fx);
}

static void test_approvers_of_every_kind_count_and_their_absence_decides(void **state)
{
	struct fixture *fx = fixture_new(0, 0);
	struct src s;
	struct queue_request r = ask("curl example.com", 1);

	src_init(fx, &s, false, false);
	approvals_set_approvers(fx->ap, APPROVER_DASHBOARD, 2);
	approvals_set_approvers(fx->ap, APPROVER_CLI, 1);
	assert_int_equal(queue_approvers(approvals_queue(fx->ap)), 3);
	assert_int_equal(approvals_ask(s.s, &r, NULL), QUEUE_ADD_NEW);
	approvals_set_approvers(fx->ap, APPROVER_DASHBOARD, 0);
	assert_int_equal(s.resolutions, 0);
	/* The last one leaves: ask_fallback (deny) decides what waits. */
	approvals_set_approvers(fx->ap, APPROVER_CLI, 0);
	assert_int_equal(s.resolutions, 1);
	assert_int_equal(s.last_state, QUEUE_STATE_DENIED);
	assert_int_equal(approvals_cancel_sandbox(fx->ap, "sb", NULL), 0);
	approvals_unregister(s.s);
	fixture_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_each_source_hears_only_its_own_waiters),
	        cmocka_unit_test(test_a_decision_reaches_the_waiting_sources_first),
	        cmocka_unit_test(test_a_deferred_source_hears_from_the_loop_only),
	        cmocka_unit_test(test_an_unregistered_source_hears_nothing_and_its_asks_go),
	        cmocka_unit_test(test_verdicts_and_transitions_are_one_line_and_one_count_each),
	        cmocka_unit_test(test_ticks_and_deadlines_run_on_the_loop),
	        cmocka_unit_test(test_approvers_of_every_kind_count_and_their_absence_decides),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
