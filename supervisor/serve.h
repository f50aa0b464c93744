/* `cloister-supervisor serve`: the long-running daemon for agents that `run` does not start
 * itself — containers and the shim fallback. It serves the dashboard and the local APIs (token
 * API, hostexec request server) and the shim listener, all deciding through one queue (hub.h).
 * Shim calls are decided like hostexec requests: the canonical command against
 * hostexec.auto_approve / manual_approve, no match denies. Asks wait for the dashboard or the
 * CLI client until their timeout. */
#ifndef CLOISTER_SERVE_H
#define CLOISTER_SERVE_H

int serve_main(int argc, char **argv);

#endif
