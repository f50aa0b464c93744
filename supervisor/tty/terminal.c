/* run's terminal: the relay and the prompts; see terminal.h. */
#include "supervisor/tty/terminal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "base/loop.h"
#include "base/say.h"
#include "supervisor/approval/approvals.h"
#include "supervisor/tty/pty_relay.h"
#include "supervisor/tty/tty_approver.h"

struct terminal {
	struct loop *loop;
	struct approvals *approvals;
	struct pty_relay *relay; /* the user's terminal and the agent's pty, when we have one */
	struct tty_approver *tty;
	bool observing;
	bool watched;        /* the approver's own terminal is on the loop */
	char *status_url;    /* --ask web: asks waiting are shown in the terminal's title */
	size_t status_shown; /* asks waiting, as the title says */
	struct loop_timer *timer;
};

static void update_watch(struct terminal *t);

/* Who can answer on this side: the terminal while it is there (dashboards count themselves). */
static void update_approvers(struct terminal *t)
{
	approvals_set_approvers(t->approvals, APPROVER_TTY,
	                        t->tty && !tty_approver_gone(t->tty) ? 1 : 0);
}

/* --ask web: how many asks wait, in the title of the user's terminal (the agent's screen is
 * its own). */
static void update_status(struct terminal *t)
{
	size_t n = queue_count(approvals_queue(t->approvals));
	char text[256];

	if (!t->status_url || !t->relay || n == t->status_shown)
		return;
	t->status_shown = n;
	if (n == 0) {
		/* Said before the old title comes back, for a terminal that cannot give it back. */
		pty_relay_status(t->relay, "Cloister: no ask waiting");
		pty_relay_status(t->relay, NULL);
		return;
	}
	snprintf(text, sizeof(text), "Cloister: %zu ask%s waiting \xe2\x80\x94 %s", n,
	         n == 1 ? "" : "s", t->status_url);
	pty_relay_status(t->relay, text);
}

/* After every drain: the prompt follows the queue. */
static void on_drained(void *userdata)
{
	struct terminal *t = userdata;

	update_status(t);
	if (t->tty) {
		tty_approver_sync(t->tty, approvals_queue(t->approvals), loop_now_ms());
		update_watch(t);
	}
}

static const struct approvals_observer_ops observer_ops = {.drained = on_drained};

static void apply(struct terminal *t, int r, const struct tty_decision *d)
{
	if (r == TTY_APPROVER_DECIDED) {
		struct approval_decision ad = {
		        .allow = d->allow,
		        .scope = d->scope,
		        .by = "tty",
		        .reason = d->allow ? NULL : "Command denied by user",
		        .match = exec_match_to_string(d->match),
		        .pattern = d->pattern,
		};
		struct cl_error err = {""};

		/* An answer to a prompt of an item decided meanwhile is harmless. */
		int k = approvals_decide(t->approvals, d->id, &ad, &err);

		if (k == 1)
			say("decided, but not kept: %s", err.msg);
		/* Refused by its source (a file that became one no ask may reach): the prompt
		 * comes back, and the person reads why. */
		else if (k == -EINVAL && err.msg[0])
			say("[%s] not decided: %s", d->id, err.msg);
	} else if (r == TTY_APPROVER_GONE) {
		say("the terminal is gone; only the dashboard can answer from now on");
		update_approvers(t);
	}
	/* The prompt follows even when nothing changed (a key that showed the details). */
	on_drained(t);
}

static int on_readable(struct loop *loop, int fd, uint32_t events, void *userdata)
{
	struct terminal *t = userdata;
	struct tty_decision d;

	apply(t, tty_approver_on_readable(t->tty, approvals_queue(t->approvals), loop_now_ms(), &d),
	      &d);
	return 0;
}

/* Keys the relay read while a prompt was up. */
static void on_relay_keys(void *userdata, const char *keys, size_t n)
{
	struct terminal *t = userdata;
	struct tty_decision d;

	if (t->tty)
		apply(t,
		      tty_approver_on_keys(t->tty, approvals_queue(t->approvals), loop_now_ms(),
		                           keys, n, &d),
		      &d);
}

static void on_relay_gone(void *userdata)
{
	struct terminal *t = userdata;

	if (t->tty && !tty_approver_gone(t->tty)) {
		tty_approver_set_gone(t->tty);
		apply(t, TTY_APPROVER_GONE, NULL);
	}
}

static int on_timer(struct loop *loop, void *userdata)
{
	struct terminal *t = userdata;

	t->timer = NULL;
	if (t->tty)
		tty_approver_tick(t->tty, loop_now_ms());
	update_watch(t);
	return 0;
}

/* Watch the approver's own terminal only while a prompt waits: otherwise its input belongs to
 * the agent. */
static void update_watch(struct terminal *t)
{
	bool want = t->tty && tty_approver_fd(t->tty) >= 0 && tty_approver_active(t->tty) &&
	            !tty_approver_gone(t->tty);
	uint64_t next = t->tty ? tty_approver_next_deadline(t->tty) : UINT64_MAX;

	/* The prompt's key guard. */
	if (t->timer) {
		loop_cancel_timer(t->loop, t->timer);
		t->timer = NULL;
	}
	/* Without a timer the guard ends with the next key or change. */
	if (next != UINT64_MAX && loop_add_timer(t->loop, next, on_timer, t, &t->timer) < 0)
		t->timer = NULL;
	if (want == t->watched)
		return;
	if (want)
		t->watched =
		        loop_add_fd(t->loop, tty_approver_fd(t->tty), EPOLLIN, on_readable, t) == 0;
	else
		t->watched = loop_del_fd(t->loop, tty_approver_fd(t->tty)) < 0;
}

/* run's lines, for the user's terminal, while the relay owns it. */
static void say_through_relay(void *userdata, const char *line)
{
	pty_relay_notice(userdata, line);
}

int terminal_open(struct terminal **ret_terminal)
{
	struct terminal *t = calloc(1, sizeof(*t));
	int r;

	if (!t)
		return -ENOMEM;
	/* A terminal among our fds: the agent gets a pty of its own, which we relay. */
	r = pty_relay_open(&t->relay);
	if (r < 0 && r != -ENOTTY) {
		free(t);
		return r;
	}
	if (r < 0)
		t->relay = NULL;
	*ret_terminal = t;
	return 0;
}

bool terminal_relays(const struct terminal *t)
{
	return t->relay != NULL;
}

void terminal_agent_modes(const struct terminal *t, struct termios *ret_modes,
                          struct winsize *ret_size)
{
	pty_relay_agent_terminal(t->relay, ret_modes, ret_size);
}

/* The terminal approver, where O says there is one to ask on. */
static void start_asking(struct terminal *t, const struct terminal_options *o)
{
	struct tty_approver_config tc = {
	        .tty_path = o->ask_tty_path,
	        .userdata = o->userdata,
	        .epoll_fd = -1,
	};
	int r;

	if (!o->ask)
		return;
	/* The default: the terminal when there is one, ours, which the agent's output goes
	 * through. */
	if (o->ask_if_relayed && !(t->relay && pty_relay_has_input(t->relay)))
		return;
	if (!tc.tty_path && t->relay) {
		tc.relay = t->relay;
		/* Paused where the launcher can (not needed for safety: the agent cannot reach the
		 * prompt; it keeps the agent from running on while a person reads). */
		tc.pause = o->pause;
	} else if (!tc.tty_path) {
		/* No terminal for the agent: our controlling terminal is the prompt's alone. */
		tc.tty_path = "/dev/tty";
	}
	r = tty_approver_new(&tc, &t->tty);
	if (r < 0) {
		t->tty = NULL;
		say("no terminal to ask on (%s): exec.ask_fallback (%s) decides asks", strerror(-r),
		    o->fallback);
		return;
	}
	update_approvers(t);
}

int terminal_start(struct terminal *t, struct loop *loop, struct approvals *approvals, int master,
                   const struct terminal_options *o, struct cl_error *err)
{
	int r;

	t->loop = loop;
	t->approvals = approvals;
	if (o->status_url && !(t->status_url = strdup(o->status_url)))
		return cl_error_set(err, -ENOMEM, "the terminal: out of memory");
	if (t->relay) {
		struct pty_relay_ops ops = {
		        .keys = on_relay_keys, .gone = on_relay_gone, .userdata = t};

		r = pty_relay_start(t->relay, loop, master, &ops);
		if (r < 0)
			return cl_error_set(err, r, "relaying the terminal: %s", strerror(-r));
		if (pty_relay_has_stderr(t->relay))
			say_set_sink(say_through_relay, t->relay);
	}
	r = approvals_observe(approvals, &observer_ops, t);
	if (r < 0)
		return cl_error_set(err, r, "the terminal: %s", strerror(-r));
	t->observing = true;
	start_asking(t, o);
	return 0;
}

bool terminal_asks(const struct terminal *t)
{
	return t && t->tty;
}

bool terminal_prompting(const struct terminal *t)
{
	return t && t->tty && tty_approver_active(t->tty);
}

void terminal_suspend(struct terminal *t, int sig)
{
	if (t && t->relay)
		(void)pty_relay_suspend(t->relay, sig); /* returns once `fg` (or `bg`) came */
}

void terminal_signal(struct terminal *t, int sig)
{
	if (t && t->relay)
		pty_relay_signal(t->relay, sig);
}

void terminal_unfreeze(struct terminal *t)
{
	if (t && t->tty)
		tty_approver_unfreeze(t->tty);
}

void terminal_stop_asking(struct terminal *t)
{
	if (!t)
		return;
	if (t->observing)
		approvals_unobserve(t->approvals, &observer_ops, t);
	t->observing = false;
	if (t->watched)
		(void)loop_del_fd(t->loop, tty_approver_fd(t->tty));
	t->watched = false;
	tty_approver_free(t->tty);
	t->tty = NULL;
	if (t->timer)
		loop_cancel_timer(t->loop, t->timer);
	t->timer = NULL;
}

void terminal_free(struct terminal *t)
{
	if (!t)
		return;
	terminal_stop_asking(t);
	say_set_sink(NULL, NULL);
	pty_relay_free(t->relay);
	free(t->status_url);
	free(t);
}
