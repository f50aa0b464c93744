/* The effective configuration: Cloister's file set parsed, validated and merged (pure, no I/O).
 *
 * Files (located and read by config_files.h; here they arrive as buffers):
 *   global            config.yaml                      proxy, request, hostexec (alias: approval),
 *                                                      exec, fs, devcontainer, agents, defaults,
 *                                                      log
 *   project           projects/<name>.yaml             remote, root, refs, proxy.{allow,deny},
 *                                                      hostexec.{auto,manual}_approve (alias:
 *                                                      commands), exec, fs
 *   global decisions  decisions/global.yaml            proxy.{allow,deny}, exec.{allow,deny},
 *                                                      fs.allow,
 *                                                      or the older flat
 *   project decisions decisions/projects/<name>.yaml   domains, patterns, denied_domains,
 *                                                      denied_patterns
 *
 * Merge semantics (config_load):
 *   - The built-in default (supervisor/policy/default-config.yaml, compiled in) is always parsed.
 *   - No global config.yaml: the built-in serves in its place, lists and all (origin
 *     "<built-in>").
 *   - A global config.yaml: its exec and proxy lists (allow, deny) extend the built-in's,
 *     unless that section says `defaults: false`: then they replace them (an absent list is
 *     empty). Its hostexec lists replace the built-in's, as in Cloister. Every scalar setting
 *     it leaves unset (exec.security, proxy.approval_timeout, proxy.unlisted_domain_behavior,
 *     listen addresses, …) keeps the built-in's value.
 *   - The project file extends: its lists are appended to the global ones; its exec scalars
 *     (security, ask, ask_fallback), when set, override the global ones.
 *   - fs (this project's own section, like exec): every file extends — the global and the
 *     project file append to the built-in's fs.write, fs.hide and fs.protect (so no file can
 *     drop a built-in hide or protect: they win over write, like deny rules); fs.tmp and
 *     fs.ask, when set, override. Unknown keys in fs are errors even with --lenient.
 *   - Decisions files append to proxy.allow / proxy.deny and exec.allow / exec.deny (the
 *     `exec:` entries of remembered exec decisions, exec_pattern.h), and to fs.allow (the
 *     `fs: allow:` paths of remembered write decisions: literal absolute paths, a trailing
 *     "/" for a whole directory; answers of the write ask, never writable paths of fs.write).
 *   - An entry written twice (in the global and the project file, say) is kept once, with
 *     the origin of its first appearance, in proxy.allow, proxy.deny and the hostexec lists.
 *   - Beneath them all, the domains Cloister's guardian allows on top of every config
 *     (config_base_domains) end proxy.allow, origin CONFIG_BASE_NAME, unless already listed.
 *   - A global config.yaml that leaves proxy.unlisted_domain_behavior out means reject, as
 *     Cloister reads it (origin: that file, line 0); without the file the built-in's
 *     request_approval holds.
 *   - Precedence between allow and deny is the policy's job (policy.h): a deny from any layer
 *     beats an allow from any layer, the base list included.
 *
 * Validation: a wrong type, a bad enum value, a bad domain, glob or regex, a duplicate key, an
 * alias or anchor, an unknown key, or a limit exceeded fails the load with
 * "FILE:LINE:COLUMN: KEY: expected …, got …", in every file kind and form. Cloister's own
 * checks apply too: log.level is empty or debug/info/warn/error; an agent's auth_method is
 * empty, token or api_key, and the credential it names is set. Entries Cloister skips are
 * skipped with a warning (kept in config->warnings with its position): an empty `domain:`
 * or `pattern:`, and in an allow list a `pattern:` that does not start with "*." (in a deny
 * list that one is kept as the exact name it spells). An exec.allow rule with a command but
 * no path warns (it matches a file of that name anywhere).
 * With options.lenient, an unknown key is a warning instead, and an invalid regex or domain
 * entry of an allow list is a warning and the entry is skipped; but an invalid deny entry, an
 * unknown key that may be a misspelt deny list (or holds one), and any unknown key in the
 * `exec:` section (this project's own, where `dney:` or `comand:` would drop or widen a rule)
 * still fail the load. */
#ifndef CLOISTER_CONFIG_H
#define CLOISTER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "supervisor/policy/config_regex.h"
#include "supervisor/policy/domain.h"

/* The compiled-in default config (build/gen/default_config.c), NUL-terminated. */
extern const unsigned char cloister_default_config[];
extern const size_t cloister_default_config_len;

#define CONFIG_BUILTIN_NAME "<built-in>"
#define CONFIG_BASE_NAME    "<always-allowed>"
#define CONFIG_MAX_WARNINGS 100
#define CONFIG_MAX_RULES    10000 /* per list, after merging */
#define CONFIG_MAX_PATTERN  4096  /* bytes in one regex, glob or domain entry */

/* Where a setting or rule came from, in precedence-free order of loading. */
enum config_layer {
	CONFIG_LAYER_BUILTIN,
	CONFIG_LAYER_GLOBAL,
	CONFIG_LAYER_PROJECT,
	CONFIG_LAYER_GLOBAL_DECISIONS,
	CONFIG_LAYER_PROJECT_DECISIONS,
	CONFIG_LAYER_SESSION, /* in-memory decisions the caller keeps (policy.h) */
	CONFIG_LAYER_BASE,    /* the domains Cloister's guardian always allows, beneath all */
	CONFIG_LAYER_AGENT,   /* the agent's own files and the worktree, allowed by run at start */
};

enum config_file_kind {
	CONFIG_FILE_GLOBAL,
	CONFIG_FILE_PROJECT,
	CONFIG_FILE_DECISIONS,
};

struct config_origin {
	const char *file; /* owned by the struct config (or static); NULL: not set anywhere */
	unsigned line;
	unsigned column;
	enum config_layer layer;
};

enum exec_security {
	EXEC_SECURITY_DENY,
	EXEC_SECURITY_ALLOWLIST,
	EXEC_SECURITY_FULL,
};

enum exec_ask {
	EXEC_ASK_OFF,
	EXEC_ASK_ON_MISS,
	EXEC_ASK_ALWAYS,
};

enum unlisted_behavior {
	UNLISTED_REJECT,
	UNLISTED_REQUEST_APPROVAL,
};

/* exec.allow / exec.deny entry: `path:` (fnmatch glob, FNM_PATHNAME, absolute) and/or
 * `command:` (regex on the canonical command); with both, both must match. */
/* The length of a `sha256:` pin, in hex digits. */
#define CONFIG_SHA256_HEX 64

struct config_exec_rule {
	char *path_glob; /* NULL: any path */
	/* path_glob is a path, no glob: the rule matches that file and every file below it (run's
	 * rules for the agent's own files, never written in a file). */
	bool tree;
	struct config_regex command; /* source NULL: any command */
	/* A person's decision (exec_decisions.h) pins what it saw: ARGV0, the file name argv[0]
	 * must have (a multi-call program acts on it: a decision on busybox run as `ls` is not
	 * one on busybox run as `rm`), and SHA256, the file's content (lowercase hex; allow
	 * rules only): a file copied over the one allowed is not allowed by it. NULL: any. */
	char *argv0;
	char *sha256;
	const char *list; /* "exec.allow" / "exec.deny" */
	unsigned index;   /* position in its file's list */
	struct config_origin origin;
};

enum fs_tmp {
	FS_TMP_PRIVATE, /* an empty tmpfs of the sandbox's own on /tmp */
	FS_TMP_HOST,    /* the host's /tmp, writable only where fs.write says */
};

enum fs_ask {
	FS_ASK_OFF,
	FS_ASK_ON_WRITE, /* a write outside fs.write becomes an ask (fsask's mechanism) */
};

/* fs.write / fs.hide / fs.protect entry: a path pattern as written ("~/.cache/pip/",
 * "{worktree}/.git/hooks"), checked by fs_pattern_check() (fs_policy.h). */
struct config_fs_rule {
	char *pattern;
	const char *list; /* "fs.write", "fs.hide", "fs.protect" */
	unsigned index;
	struct config_origin origin;
};

struct config_fs_list {
	struct config_fs_rule *items;
	size_t n;
};

/* proxy.allow / proxy.deny entry (and the decisions files' forms of them). */
struct config_domain_rule {
	struct domain_spec spec;
	const char *list; /* "proxy.allow", "domains", "denied_patterns", … as written */
	unsigned index;
	struct config_origin origin;
};

/* hostexec.auto_approve / manual_approve entry. */
struct config_pattern_rule {
	struct config_regex regex;
	const char *list;
	unsigned index;
	struct config_origin origin;
};

struct config_exec_list {
	struct config_exec_rule *items;
	size_t n;
};

struct config_domain_list {
	struct config_domain_rule *items;
	size_t n;
};

struct config_pattern_list {
	struct config_pattern_rule *items;
	size_t n;
};

/* A scalar setting: its text as written (for `policy show`) and origin; text NULL: unset. */
struct config_scalar {
	char *text;
	struct config_origin origin;
};

struct config {
	struct {
		enum exec_security security;
		enum exec_ask ask;
		enum exec_security ask_fallback;
		struct config_scalar security_at, ask_at, ask_fallback_at;
		struct config_exec_list allow, deny;
		bool section_present; /* the file had an `exec:` key */
		bool allow_present;   /* ... with an `allow:` key */
		bool deny_present;    /* ... with a `deny:` key */
		/* config.yaml's `defaults:` (true unless it says false): its lists extend the
		 * built-in's, or replace them. */
		bool defaults;
		struct config_scalar defaults_at;
	} exec;
	struct {
		struct config_scalar listen;
		struct config_domain_list allow, deny;
		enum unlisted_behavior unlisted;
		struct config_scalar unlisted_at;
		uint64_t approval_timeout_ms;
		struct config_scalar approval_timeout_at;
		int64_t rate_limit;
		struct config_scalar rate_limit_at;
		int64_t max_request_bytes;
		struct config_scalar max_request_bytes_at;
		bool defaults; /* as exec.defaults, for proxy.allow and proxy.deny */
		struct config_scalar defaults_at;
	} proxy;
	struct {
		struct config_scalar listen;
		uint64_t timeout_ms;
		struct config_scalar timeout_at;
	} request;
	struct {
		struct config_scalar listen;
		struct config_pattern_list auto_approve, manual_approve;
	} hostexec;
	struct {
		struct config_fs_list write, hide, protect;
		/* Decisions files only: files and directories (a trailing "/") a person allowed
		 * writing to through the write ask (fs.ask: on-write), literal absolute paths. */
		struct config_fs_list allow;
		enum fs_tmp tmp;
		struct config_scalar tmp_at;
		enum fs_ask ask;
		struct config_scalar ask_at;
	} fs;

	struct {
		/* Tasks (processes and threads) the sandbox may have at once; 0: no limit ("off").
		 * pids_max_at.text NULL: not written anywhere (run's default applies). */
		uint64_t pids_max;
		struct config_scalar pids_max_at;
	} limits;

	char **warnings; /* "FILE:LINE:COLUMN: …" */
	size_t n_warnings;
	char **files; /* names the origins point to */
	size_t n_files;
};

struct config_load_options {
	bool lenient; /* unknown keys and invalid allow entries warn (see above) */
	/* The home directory, real (no symlinks), that "~/" in an exec path glob stands for;
	 * NULL: none (the built-in's "~/" rules are left out, a file's are an error). */
	const char *home;
};

/* The domains Cloister's guardian allows beneath every config (NULL-terminated). */
extern const char *const config_base_domains[];

/* One file's contents; present=false: the file does not exist (treated as empty). */
struct config_source {
	const char *name; /* shown in origins and messages, e.g. a path */
	const char *data;
	size_t len;
	bool present;
};

struct config_sources {
	struct config_source global;
	struct config_source project; /* only with a project */
	struct config_source global_decisions;
	struct config_source project_decisions; /* only with a project */
};

/* Parse the built-in default and SOURCES and merge them as described above. On success
 * *ret_config is a new config (free with config_free()). Fails with -EINVAL (the message
 * names file:line:column), -EFBIG or -ENOMEM. */
int config_load(const struct config_sources *sources, const struct config_load_options *options,
                struct config **ret_config, struct cl_error *err);

/* Parse one file of KIND into a fresh config holding only what the file says (no defaults,
 * scalars unset unless written). For tests, the fuzzer and tools that edit one file. */
int config_parse_file(enum config_file_kind kind, enum config_layer layer,
                      const struct config_source *source, const struct config_load_options *options,
                      struct config **ret_config, struct cl_error *err);

/* Append a copy of TEXT to CONFIG's warnings (up to CONFIG_MAX_WARNINGS). -ENOMEM. */
int config_add_warning(struct config *config, const char *text);

void config_free(struct config *config);
CL_DEFINE_TRIVIAL_CLEANUP(struct config *, config_free)

/* Validate a project name before it becomes part of a path: 1..128 characters of
 * [A-Za-z0-9._+@-], not starting with '.', no "..". -EINVAL with a message otherwise. */
int config_project_name_check(const char *name, struct cl_error *err);

/* Parse a Go duration ("60s", "5m", "1h30m", "1.5h", "250ms") into milliseconds, rounding
 * down; at most 100 days. -EINVAL if malformed, negative or too large. */
int config_parse_duration(const char *text, uint64_t *ret_ms);

/* The most tasks a sandbox may be limited to: the kernel's PID_MAX_LIMIT. */
#define CONFIG_PIDS_MAX_LIMIT 4194304
/* A task limit as `limits.pids_max` and `run --pids-max` take it: a decimal integer from 1 to
 * CONFIG_PIDS_MAX_LIMIT, or "off" (0: no limit). -EINVAL otherwise. */
int config_parse_pids_max(const char *text, uint64_t *ret);

/* Allow every exec of the file PATH or of a file below it (an absolute, normalised path),
 * ahead of the allow rules; deny rules still win. WHAT says whose files they are ("the
 * agent", "the worktree": a static string); origin.layer is CONFIG_LAYER_AGENT. -EINVAL for
 * a path that is not absolute and normalised, -ENOMEM. */
int config_allow_exec_tree(struct config *config, const char *path, const char *what);

/* Append a copy of RULE to LIST (for the policy's in-memory session layer). */
int config_domain_list_add(struct config_domain_list *list, const struct config_domain_rule *rule);
void config_domain_list_clear(struct config_domain_list *list);

const char *exec_security_to_string(enum exec_security v);
const char *exec_ask_to_string(enum exec_ask v);
const char *unlisted_behavior_to_string(enum unlisted_behavior v);
const char *config_layer_to_string(enum config_layer layer);
const char *fs_tmp_to_string(enum fs_tmp v);
const char *fs_ask_to_string(enum fs_ask v);

#endif
