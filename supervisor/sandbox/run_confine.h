/* `run`'s side of the containment: the agent's scrubbed environment, the Landlock decision
 * and the sandbox_confine plan, from run's options. Part of the `run` front end: it says what
 * -v asks for; why it refuses to start comes back in the error. */
#ifndef CLOISTER_SUPERVISOR_RUN_CONFINE_H
#define CLOISTER_SUPERVISOR_RUN_CONFINE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "supervisor/policy/config.h"
#include "supervisor/sandbox/sandbox_confine.h"

/* At most this many --keep-env names. */
#define RUN_KEEP_ENV_MAX 64

struct run_confine_options {
	const char *const *keep_env; /* --keep-env NAMEs */
	size_t n_keep_env;
	bool host_network;           /* --net host */
	bool allow_abstract_sockets; /* --allow-abstract-sockets */
	bool verbose;
	const char *config_dir; /* read-only in the sandbox; its parents pinned (NULL: none) */
	const char *audit_dir;  /* the same */
	const char *run_dir;    /* hidden in the sandbox; its parents pinned (NULL: none) */
	char *const *agent_argv;
	/* The `fs:` section to enforce (NULL: the file system stays the host's). */
	const struct config *config;
	bool require_fs_confinement; /* --require-fs-confinement: both layers or no start */
	bool test_no_fs_mounts;      /* --test-no-fs-mounts: Landlock alone (tests only) */
	bool nested_sandbox;         /* --allow-nested-sandbox: the agent mounts (no Landlock fs) */
};

/* The caller's environment less env_scrub_agent_rules (the --keep-env names kept), malloc'd,
 * in *ret_envp (free with env_scrub_free()). With -v, the names removed (never the values).
 * -errno with ERR. */
int run_confine_environ(const struct run_confine_options *o, struct cl_error *err,
                        char ***ret_envp);

/* Probe Landlock and build the plan, the file system's layers included. Refuses (-EPERM)
 * --net host without Landlock's abstract socket scope unless --allow-abstract-sockets, and
 * --require-fs-confinement without both file system layers; -errno with ERR. */
int run_confine_plan(const struct run_confine_options *o, struct cl_error *err,
                     struct sandbox_confine **ret);

#endif
