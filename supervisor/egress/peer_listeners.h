/* The TCP ports that Cloister's own processes listen on in this network namespace: every
 * supervisor's dashboard, token API, request server, CONNECT proxy and transparent listeners,
 * and the host executors. `run --net host` refuses them to its agent (bpf/redirect.h), which
 * shares this network and would otherwise reach them on loopback.
 *
 * A process is Cloister's when its executable is named cloister-supervisor; a listening socket
 * is found in /proc/net/tcp and /proc/net/tcp6 (state LISTEN) and matched to the process by
 * the inode of one of its /proc/PID/fd links. A snapshot: a process that starts later is not
 * in it (redirect_watch_peers, started before the scan, refuses those). Processes of every
 * user are seen when we are root.
 *
 * Anybody can run a program of that name: the ports of processes owned by root or by the
 * trusted uid (ours) come first and must all fit; another owner's take the room that is left
 * and only 1024 of its fds are looked at, so a stranger can neither crowd ours out nor make
 * the scan long. */
#ifndef CLOISTER_PEER_LISTENERS_H
#define CLOISTER_PEER_LISTENERS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PEER_LISTENERS_EXE "cloister-supervisor"

/* One line of /proc/net/tcp or tcp6 (the header line included). Returns 1 and fills
 * *ret_port (host byte order) and *ret_inode for a socket in state LISTEN, 0 for any other
 * line (another state, the header, a line that does not parse). */
int peer_listeners_parse_line(const char *line, uint16_t *ret_port, uint64_t *ret_inode);

/* Whether the target of /proc/PID/exe (LINK, as readlink gave it) is NAME's executable: its
 * last component is NAME, with or without the kernel's " (deleted)" suffix. */
int peer_listeners_exe_is(const char *link, const char *name);

/* The distinct ports, ascending, that processes whose executable is EXE_NAME listen on (TCP,
 * IPv4 and IPv6), at most MAX of them in PORTS; *ret_n is how many, and *ret_dropped how many
 * of other owners' ports (or processes with too many fds) did not fit. Reads PROC (normally
 * "/proc"). -E2BIG when the ports of root's or TRUSTED_UID's processes alone are more than
 * MAX (or their sockets more than the scan takes); -errno when PROC/net/tcp cannot be read.
 * Processes that vanish or cannot be inspected are skipped. */
int peer_listeners_scan(const char *proc, const char *exe_name, uid_t trusted_uid, uint16_t *ports,
                        size_t max, size_t *ret_n, size_t *ret_dropped);

#endif
