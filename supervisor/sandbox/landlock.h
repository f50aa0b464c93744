/* Landlock for the sandbox: probe the kernel's ABI, build a ruleset, restrict the calling
 * process (and everything it starts) with it.
 *
 * Today the ruleset holds scopes only (ABI >= 6): LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (the
 * agent cannot connect or send to an abstract unix socket created outside its domain, which
 * matters on the host's network, where those sockets are the host's) and LANDLOCK_SCOPE_SIGNAL
 * (it cannot signal a process outside its domain). The filesystem issue adds path rules to the
 * same ruleset later: struct landlock_plan is where they go.
 *
 * Landlock is unprivileged and stackable; restricting needs NO_NEW_PRIVS (or CAP_SYS_ADMIN),
 * and nothing can lift a restriction once applied. */
#ifndef CLOISTER_SUPERVISOR_LANDLOCK_H
#define CLOISTER_SUPERVISOR_LANDLOCK_H

#include <stdint.h>

/* Debian 12's <linux/landlock.h> predates scopes (ABI 6). */
#define CL_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define CL_LANDLOCK_SCOPE_SIGNAL               (1ULL << 1)

/* What the sandbox asks Landlock for. */
struct landlock_plan {
	uint64_t scoped; /* CL_LANDLOCK_SCOPE_* */
};

/* The kernel's Landlock ABI version (>= 1), 0 when Landlock is absent or disabled (ENOSYS,
 * EOPNOTSUPP), or -errno when the probe failed otherwise. No effect on the caller. */
int landlock_abi(void);

/* The scopes an ABI supports (pure): 0 below ABI 6. */
uint64_t landlock_scopes_supported(int abi);

/* Restrict the calling thread with PLAN (the caller sets NO_NEW_PRIVS first, and applies it in
 * a single-threaded process so every later thread and child inherits it). A plan with nothing
 * in it is a no-op. -EOPNOTSUPP when the kernel cannot do what the plan asks (no Landlock, or
 * a scope the ABI lacks): the caller decided from landlock_abi() what to ask for, so this only
 * happens if the kernel changed its mind. */
int landlock_restrict(const struct landlock_plan *plan);

#endif
