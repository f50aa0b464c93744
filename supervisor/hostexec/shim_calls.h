/* Shim calls decided by the hostexec front end (hostexec.h): the owner's side of a shim server
 * (shim_server.h). Each checked call is decided like a hostexec request — the canonical
 * command against hostexec.auto_approve / manual_approve, no match denies — as a `shim` ask
 * when a person must answer, and listed as running while its command runs (the dashboard can
 * cancel it). A withdrawn call (cancel frame, hang-up) withdraws its ask. */
#ifndef CLOISTER_SHIM_CALLS_H
#define CLOISTER_SHIM_CALLS_H

#include "supervisor/hostexec/shim_server.h"

struct hostexec;
struct shim_calls;

/* Calls of SANDBOX (PROJECT may be NULL), decided by HX. -ENOMEM. */
int shim_calls_new(struct hostexec *hx, const char *sandbox, const char *project,
                   struct shim_calls **ret_calls);
/* After the calls' server is freed. NULL is fine. */
void shim_calls_free(struct shim_calls *sc);

/* The ops to start the shim server with (userdata: SC), and the server, once started, for the
 * dashboard's Cancel. */
extern const struct shim_server_ops shim_calls_ops;
void shim_calls_set_server(struct shim_calls *sc, struct shim_server *server);

#endif
