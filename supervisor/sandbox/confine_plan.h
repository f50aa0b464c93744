/* The pure half of the sandbox's confinement (sandbox_confine.h): from facts the supervisor
 * gathered, which paths to keep, hide, pin and cover, and which capabilities a root agent
 * keeps. No I/O: the unit tests drive it with tables. */
#ifndef CLOISTER_SUPERVISOR_CONFINE_PLAN_H
#define CLOISTER_SUPERVISOR_CONFINE_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A growable list of malloc'd strings, without duplicates when filled by confine_paths_add. */
struct confine_paths {
	char **v;
	size_t n;
};

/* Append a copy of PATH unless it is there already. 0, or -ENOMEM. */
int confine_paths_add(struct confine_paths *p, const char *path);
bool confine_paths_contains(const struct confine_paths *p, const char *path);
void confine_paths_free(struct confine_paths *p);

/* Is PATH equal to DIR or below it ("/tmp/a" is below "/tmp", "/tmpx" is not)? Both absolute
 * and normalised (no "//", "/./", "/../", trailing "/"); DIR "/" contains everything. */
bool confine_path_within(const char *path, const char *dir);

/* Reduce KEEP to the paths no other entry contains, in place (order kept): re-binding "/tmp/a"
 * brings "/tmp/a/b" along. */
void confine_paths_outermost(struct confine_paths *keep);

/* Add every ancestor of absolute PATH below "/" ("/a", "/a/b" for "/a/b/c"), outermost first,
 * to OUT. 0, -EINVAL for a relative path, -ENOMEM. */
int confine_paths_add_ancestors(struct confine_paths *out, const char *path);

/* The pathname sockets in the text of /proc/net/unix ("Num RefCount Protocol Flags Type St
 * Inode Path" lines), each absolute path once, added to OUT. Abstract ('@') and relative paths
 * (bound relative to their binder's cwd: unknowable here) are skipped. At most MAX paths in
 * OUT: -E2BIG past it (the caller must not start with some sockets left uncovered). -EINVAL
 * when the header is not the kernel's. */
int confine_parse_proc_net_unix(const char *text, size_t max, struct confine_paths *out);

/* The capabilities a sandbox keeps (a bit per CAP_*): what a container runtime's default set
 * keeps, less what lets a root agent out or at the host (see the .c for each choice);
 * NET_BIND_SERVICE only in its own network namespace (on the host's network it would let a
 * root agent take the host's privileged ports). */
uint64_t confine_kept_capabilities(bool host_network);

#endif
