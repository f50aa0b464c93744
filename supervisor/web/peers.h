/* The other dashboards of this user on this machine, so that one tab shows every run's asks
 * (docs/ARCHITECTURE.md, "One dashboard for every run"). A peer is a supervisor whose API file
 * (api_info.h: our private directory, our uid, its process alive) names an approval server on
 * 127.0.0.1:PORT, and whose port a socket of our own uid listens on now (the kernel's socket
 * table, listeners.h: one port asked for, however many connections the machine has): a
 * program of another local user that took the port of a supervisor that died is no peer. A
 * peer's page may call this server from its origin (CORS with the dashboard's cookie, which
 * every supervisor of the user shares); no other origin may. */
#ifndef CLOISTER_PEERS_H
#define CLOISTER_PEERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "supervisor/web/api_info.h"

/* Does any socket listen on PORT now, IPv4 or IPv6, any address? (true when it cannot be
 * told: a port of a dead peer counts as one only when nothing holds it, listeners.h) */
bool peers_port_held(uint16_t port);

/* Pure: PORT of "http://127.0.0.1:PORT" (no path, no trailing slash), else 0. */
uint16_t peers_origin_port(const char *origin);

/* Is ORIGIN the dashboard of a peer of the approval server on SELF_PORT? */
bool peers_origin_ok(const char *origin, uint16_t self_port);

/* Call FN for every peer of the approval server on SELF_PORT, in pid order. Returns how many. */
int peers_list(uint16_t self_port, void (*fn)(const struct api_info *info, void *userdata),
               void *userdata);

#endif
