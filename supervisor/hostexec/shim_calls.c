/* Shim calls decided by the hostexec front end; see shim_calls.h. */
#include "supervisor/hostexec/shim_calls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/hostexec/hostexec.h"

/* A call waiting for a person. */
struct pending {
	struct shim_calls *sc;
	struct shim_call *call;
	uint64_t call_id;
	char *command; /* what the running list shows once it runs */
	struct hostexec_ask *ask;
	struct pending *next;
};

static void pending_free(struct pending *p)
{
	free(p->command);
	free(p);
}

struct shim_calls {
	struct hostexec *hx;
	struct shim_server *server;
	char *sandbox;
	char *project;
	struct pending *pending;
};

static struct pending *pending_take(struct shim_calls *sc, const struct pending *which,
                                    uint64_t call_id)
{
	for (struct pending **p = &sc->pending; *p; p = &(*p)->next)
		if (which ? *p == which : (*p)->call_id == call_id) {
			struct pending *found = *p;

			*p = found->next;
			return found;
		}
	return NULL;
}

/* The dashboard's Cancel for a running shim call. */
static void cancel_running(void *userdata, uint64_t call_id)
{
	struct shim_calls *sc = userdata;

	if (sc->server)
		(void)shim_server_cancel(sc->server, call_id);
}

/* An allowed call starts running: list it so the dashboard can cancel it. */
static void allow(struct shim_calls *sc, struct shim_call *call, uint64_t call_id,
                  const char *command)
{
	/* Best effort: not listing it only takes the button away. */
	(void)hostexec_running_add(sc->hx, "shim", sc->sandbox, command, cancel_running, sc,
	                           call_id, NULL);
	shim_call_answer(call, SHIM_ALLOW, NULL);
}

static void answer(struct shim_calls *sc, struct shim_call *call, uint64_t call_id,
                   const char *command, const struct hostexec_answer *a)
{
	switch (a->verdict) {
	case HOSTEXEC_ALLOWED:
	case HOSTEXEC_APPROVED:
		allow(sc, call, call_id, command);
		return;
	case HOSTEXEC_TIMED_OUT:
		shim_call_answer(call, SHIM_DENY, "no approval in time");
		return;
	case HOSTEXEC_DENIED:
	case HOSTEXEC_PENDING:
		break;
	}
	shim_call_answer(call, SHIM_DENY, a->reason ? a->reason : "Command denied by user");
}

static void on_answer(void *userdata, const struct hostexec_answer *a)
{
	struct pending *p = userdata;
	struct shim_calls *sc = p->sc;

	pending_take(sc, p, 0);
	answer(sc, p->call, p->call_id, p->command, a);
	pending_free(p);
}

static void on_decide(void *userdata, struct shim_call *call, const struct shim_call_info *info)
{
	struct shim_calls *sc = userdata;
	const struct cl_exec_request *rq = info->request;
	struct hostexec_call hc = {
	        .kind = QUEUE_KIND_SHIM,
	        .sandbox = sc->sandbox,
	        .project = sc->project,
	        .command = info->command,
	        .argv = (const char *const *)rq->argv,
	        .argc = rq->argc,
	        .exe = rq->tool,
	        .cwd = rq->cwd,
	        .pid = info->peer_pid > 0 ? info->peer_pid : -1,
	        .uid = info->uid,
	};
	struct hostexec_answer a;
	struct cl_error err = {""};
	struct pending *p = calloc(1, sizeof(*p));
	int r;

	if (p && !(p->command = strdup(info->command))) {
		free(p);
		p = NULL;
	}
	if (!p) {
		shim_call_answer(call, SHIM_DENY, "out of memory");
		return;
	}
	p->sc = sc;
	p->call = call;
	p->call_id = info->id;
	r = hostexec_decide(sc->hx, &hc, on_answer, p, &err, &a, &p->ask);
	if (r < 0 || a.verdict != HOSTEXEC_PENDING) {
		pending_free(p);
		if (r < 0)
			shim_call_answer(call, SHIM_DENY, err.msg[0] ? err.msg : "policy error");
		else
			answer(sc, call, info->id, info->command, &a);
		return;
	}
	p->next = sc->pending;
	sc->pending = p;
	shim_call_answer(call, SHIM_PENDING, NULL);
}

static void on_cancelled(void *userdata, struct shim_call *call, uint64_t id)
{
	struct shim_calls *sc = userdata;
	struct pending *p = pending_take(sc, NULL, id);

	if (!p)
		return;
	hostexec_withdraw(p->ask);
	pending_free(p);
}

static void on_finished(void *userdata, uint64_t id, int32_t status)
{
	struct shim_calls *sc = userdata;
	char text[32];

	snprintf(text, sizeof(text), "exit %d", (int)status);
	hostexec_running_remove(sc->hx, cancel_running, id, text);
}

const struct shim_server_ops shim_calls_ops = {
        .decide = on_decide,
        .cancelled = on_cancelled,
        .finished = on_finished,
};

int shim_calls_new(struct hostexec *hx, const char *sandbox, const char *project,
                   struct shim_calls **ret_calls)
{
	struct shim_calls *sc = calloc(1, sizeof(*sc));

	if (!sc)
		return -ENOMEM;
	sc->hx = hx;
	sc->sandbox = strdup(sandbox);
	sc->project = project ? strdup(project) : NULL;
	if (!sc->sandbox || (project && !sc->project)) {
		shim_calls_free(sc);
		return -ENOMEM;
	}
	*ret_calls = sc;
	return 0;
}

void shim_calls_set_server(struct shim_calls *sc, struct shim_server *server)
{
	sc->server = server;
}

void shim_calls_free(struct shim_calls *sc)
{
	if (!sc)
		return;
	while (sc->pending) {
		struct pending *p = sc->pending;

		sc->pending = p->next;
		hostexec_withdraw(p->ask);
		pending_free(p);
	}
	free(sc->sandbox);
	free(sc->project);
	free(sc);
}
