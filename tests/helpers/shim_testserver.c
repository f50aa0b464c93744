/* The shim server on a loop with a tiny policy, for tests/integration/shim.sh and the bench:
 * the real listener, decoder, strategies and streaming, before the supervisor's wiring.
 *
 *   shim_testserver --worktree DIR (--unix PATH | --tcp ADDR --token T) [--strategy
 *       mirror|host] [--target-pid PID] [--shim-dir DIR] [--timeout-ms N]
 *       [--kill-grace-ms N] [--ignore-signal N]... [--ready FILE]
 *       [--allow TOOL]... [--deny TOOL]... [--ask TOOL]... [--ask-deny TOOL]...
 *
 * A tool that is not listed is denied. --ask answers "pending", then allows after 1.5 s
 * (--ask-deny denies). Events go to stdout, one line each: "decide ID COMMAND uid=U",
 * "cancelled ID", "finished ID STATUS". --ready FILE gets "PORT" (TCP) or "ready" once the
 * listeners are up. SIGTERM or SIGINT stops it. --ignore-signal sets signal N to SIG_IGN with
 * the raw system call (glibc refuses 32 and 33), as a careless parent of the supervisor might:
 * commands must not inherit it. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/loop.h"
#include "supervisor/hostexec/shim_server.h"

#define MAX_RULES  32
#define ASK_MS     1500
#define MAX_ASKING 16

enum rule_kind { RULE_ALLOW, RULE_DENY, RULE_ASK, RULE_ASK_DENY };

struct rule {
	const char *tool;
	enum rule_kind kind;
};

struct asking {
	struct shim_call *call;
	struct loop_timer *timer;
	enum shim_verdict verdict;
	struct state *st;
};

struct state {
	struct loop *loop;
	struct rule rules[MAX_RULES];
	size_t nrules;
	struct asking asking[MAX_ASKING];
};

static int answer_later(struct loop *loop, void *userdata)
{
	struct asking *a = userdata;

	a->timer = NULL;
	if (a->call) {
		struct shim_call *c = a->call;

		a->call = NULL;
		shim_call_answer(c, a->verdict, "denied by the test's person");
	}
	return 0;
}

static void decide(void *userdata, struct shim_call *call, const struct shim_call_info *info)
{
	struct state *st = userdata;
	enum rule_kind kind = RULE_DENY;
	bool listed = false;

	printf("decide %llu %s uid=%u env_dropped=%zu\n", (unsigned long long)info->id,
	       info->command, (unsigned)info->uid, info->env_dropped);
	for (size_t i = 0; i < st->nrules; i++)
		if (strcmp(st->rules[i].tool, info->request->tool) == 0) {
			kind = st->rules[i].kind;
			listed = true;
			break;
		}
	switch (kind) {
	case RULE_ALLOW:
		shim_call_answer(call, SHIM_ALLOW, NULL);
		return;
	case RULE_DENY:
		shim_call_answer(call, SHIM_DENY,
		                 listed ? "denied by the test policy" : "not in the test policy");
		return;
	case RULE_ASK:
	case RULE_ASK_DENY:
		for (size_t i = 0; i < MAX_ASKING; i++) {
			struct asking *a = &st->asking[i];

			if (a->call)
				continue;
			a->call = call;
			a->st = st;
			a->verdict = kind == RULE_ASK ? SHIM_ALLOW : SHIM_DENY;
			shim_call_answer(call, SHIM_PENDING, NULL);
			if (loop_add_timer(st->loop, loop_now_ms() + ASK_MS, answer_later, a,
			                   &a->timer) < 0) {
				a->call = NULL;
				shim_call_answer(call, SHIM_DENY, "no timer for the answer");
			}
			return;
		}
		shim_call_answer(call, SHIM_DENY, "too many questions");
		return;
	}
}

static void cancelled(void *userdata, struct shim_call *call, uint64_t id)
{
	struct state *st = userdata;

	printf("cancelled %llu\n", (unsigned long long)id);
	for (size_t i = 0; i < MAX_ASKING; i++) {
		struct asking *a = &st->asking[i];

		if (a->call == call) {
			a->call = NULL;
			if (a->timer)
				loop_cancel_timer(st->loop, a->timer);
			a->timer = NULL;
		}
	}
}

static void finished(void *userdata, uint64_t id, int32_t status)
{
	printf("finished %llu %d\n", (unsigned long long)id, (int)status);
}

static int ignore_signal(int sig)
{
	struct {
		void *handler;
		unsigned long flags;
		void *restorer;
		unsigned long long mask;
	} ign = {.handler = SIG_IGN};

	return (int)syscall(SYS_rt_sigaction, sig, &ign, NULL, sizeof(ign.mask));
}

static int on_signal(struct loop *loop, int sig, void *userdata)
{
	loop_exit(loop, 0);
	return 0;
}

int main(int argc, char **argv)
{
	static struct state st;
	struct shim_server_config cfg = {.unix_owner = (uid_t)-1, .unix_group = (gid_t)-1};
	struct shim_server_ops ops = {
	        .decide = decide, .cancelled = cancelled, .finished = finished};
	struct shim_server *server = NULL;
	struct cl_error err = {""};
	const char *ready = NULL;
	sigset_t sigs;
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	cfg.strategy = SHIM_STRATEGY_MIRROR;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v) {
			fprintf(stderr, "shim_testserver: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (strcmp(a, "--unix") == 0) {
			cfg.unix_path = v;
		} else if (strcmp(a, "--tcp") == 0) {
			cfg.tcp_listen = v;
		} else if (strcmp(a, "--token") == 0) {
			cfg.token = v;
		} else if (strcmp(a, "--worktree") == 0) {
			cfg.worktree = v;
		} else if (strcmp(a, "--strategy") == 0) {
			cfg.strategy =
			        strcmp(v, "host") == 0 ? SHIM_STRATEGY_HOST : SHIM_STRATEGY_MIRROR;
		} else if (strcmp(a, "--target-pid") == 0) {
			cfg.target_pid = atoi(v);
		} else if (strcmp(a, "--shim-dir") == 0) {
			cfg.shim_dir = v;
		} else if (strcmp(a, "--timeout-ms") == 0) {
			cfg.timeout_ms = (uint32_t)atoi(v);
		} else if (strcmp(a, "--kill-grace-ms") == 0) {
			cfg.kill_grace_ms = (uint32_t)atoi(v);
		} else if (strcmp(a, "--ignore-signal") == 0) {
			if (ignore_signal(atoi(v)) < 0) {
				fprintf(stderr, "shim_testserver: cannot ignore signal %s\n", v);
				return 2;
			}
		} else if (strcmp(a, "--ready") == 0) {
			ready = v;
		} else if (st.nrules < MAX_RULES &&
		           (strcmp(a, "--allow") == 0 || strcmp(a, "--deny") == 0 ||
		            strcmp(a, "--ask") == 0 || strcmp(a, "--ask-deny") == 0)) {
			st.rules[st.nrules].tool = v;
			st.rules[st.nrules++].kind = strcmp(a, "--allow") == 0  ? RULE_ALLOW
			                             : strcmp(a, "--deny") == 0 ? RULE_DENY
			                             : strcmp(a, "--ask") == 0  ? RULE_ASK
			                                                        : RULE_ASK_DENY;
		} else {
			fprintf(stderr, "shim_testserver: unknown option %s\n", a);
			return 2;
		}
	}

	r = loop_new(&st.loop);
	if (r < 0)
		return 1;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	if (loop_add_signals(st.loop, &sigs, on_signal, NULL) < 0)
		return 1;
	r = shim_server_new(st.loop, &cfg, &ops, &st, &err, &server);
	if (r < 0) {
		fprintf(stderr, "shim_testserver: %s\n", err.msg);
		return 1;
	}
	if (ready) {
		FILE *f = fopen(ready, "we");

		if (!f)
			return 1;
		if (cfg.tcp_listen)
			fprintf(f, "%u\n", shim_server_tcp_port(server));
		else
			fprintf(f, "ready\n");
		fclose(f);
	}
	r = loop_run(st.loop);
	shim_server_free(server);
	loop_free(st.loop);
	return r < 0 ? 1 : 0;
}
