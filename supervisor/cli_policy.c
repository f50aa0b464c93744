#include "supervisor/cli_policy.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/say.h"
#include "protocol/protocol.h"
#include "supervisor/exec/file_digest.h"
#include "supervisor/policy/config.h"
#include "supervisor/policy/config_files.h"
#include "supervisor/policy/exec_decision.h"
#include "supervisor/policy/fs_policy.h"
#include "supervisor/policy/path_boundary.h"
#include "supervisor/policy/policy.h"

static void cli_policy_usage(FILE *out)
{
	fputs("usage: " PROG " policy check [OPTIONS] -- CMD [ARGS...]\n"
	      "       " PROG " policy check [OPTIONS] --domain HOST[:PORT]\n"
	      "       " PROG " policy check [OPTIONS] --path PATH [--write]\n"
	      "       " PROG " policy show  [OPTIONS]\n"
	      "\n"
	      "Evaluate the effective configuration offline. `check -- CMD` decides an exec of\n"
	      "CMD (resolved through PATH as execvp would) and, separately, the same command\n"
	      "sent to the host through hostexec; `check --domain` decides a connection;\n"
	      "`check --path` decides reading (or with --write, writing) PATH in the sandbox.\n"
	      "`show` prints the merged configuration with the origin of every entry.\n"
	      "\n"
	      "options:\n"
	      "  --config-dir DIR   config directory (default $XDG_CONFIG_HOME/cloister or\n"
	      "                     ~/.config/cloister)\n"
	      "  --project NAME     also load projects/NAME.yaml and decisions/projects/NAME.yaml\n"
	      "  --lenient          skip invalid regexes and domains with a warning\n"
	      "  --domain HOST      check a connection to HOST[:PORT] instead of a command\n"
	      "  --path PATH        check reading PATH (symlinks resolved as far as it exists)\n"
	      "  --write            with --path: check writing it\n"
	      "  --worktree DIR     what {worktree} stands for (default: the current directory,\n"
	      "                     as for `run`)\n"
	      "  -h, --help         show this help\n"
	      "\n"
	      "exit status: 0 allow, 1 deny, 2 ask, 64 usage error, 78 config error\n",
	      out);
}

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": policy: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '" PROG " policy --help'.\n");
	return CLI_EXIT_USAGE;
}

struct options {
	const char *config_dir;
	const char *project;
	const char *domain;
	const char *path;
	const char *worktree;
	bool write;
	bool lenient;
	char **command;
	int n_command;
};

/* Parse options after the subcommand; returns -1 to continue or an exit status. */
static int parse_options(int argc, char **argv, bool allow_command, struct options *o)
{
	static const struct option longopts[] = {
	        {"config-dir", required_argument, NULL, 'c'},
	        {"project", required_argument, NULL, 'p'},
	        {"lenient", no_argument, NULL, 'l'},
	        {"domain", required_argument, NULL, 'd'},
	        {"path", required_argument, NULL, 'P'},
	        {"write", no_argument, NULL, 'w'},
	        {"worktree", required_argument, NULL, 'W'},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	int c;

	optind = 0; /* GNU: reinitialise */
	opterr = 0;
	/* '+': stop at the first non-option, so the command's own options stay its own;
	 * ':': report a missing option argument apart from an unknown option. */
	while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->config_dir = optarg;
			break;
		case 'p':
			o->project = optarg;
			break;
		case 'l':
			o->lenient = true;
			break;
		case 'd':
			if (!allow_command)
				return usage_error("%s: --domain is an option of `policy check`",
				                   "show");
			o->domain = optarg;
			break;
		case 'P':
		case 'w':
		case 'W':
			if (!allow_command)
				return usage_error("show: %s is an option of `policy check`",
				                   argv[optind - 1]);
			if (c == 'P')
				o->path = optarg;
			else if (c == 'W')
				o->worktree = optarg;
			else
				o->write = true;
			break;
		case 'h':
			cli_policy_usage(stdout);
			return 0;
		case ':':
			return usage_error("option %s needs an argument", argv[optind - 1]);
		default:
			return usage_error("unknown option %s", argv[optind - 1]);
		}
	}
	o->command = argv + optind;
	o->n_command = argc - optind;
	if (!allow_command && o->n_command > 0)
		return usage_error("unexpected argument \"%s\"", o->command[0]);
	if (allow_command && (!!o->domain + !!o->path + (o->n_command > 0)) > 1)
		return usage_error("give one of --domain, --path or a command, not both");
	if (allow_command && !o->domain && !o->path && o->n_command == 0)
		return usage_error("%s: nothing to check: give -- CMD [ARGS...], --domain HOST or "
		                   "--path PATH",
		                   "check");
	if (o->write && !o->path)
		return usage_error("--write goes with --path");
	if (o->project) {
		struct cl_error err = {""};
		if (config_project_name_check(o->project, &err) < 0)
			return usage_error("--project: %s", err.msg);
	}
	return -1;
}

static int load(const struct options *o, struct config **ret)
{
	_cleanup_free_ char *dir = NULL, *home = config_files_home();
	struct config_load_options lo = {.lenient = o->lenient, .home = home};
	struct cl_error err = {""};
	int r;

	/* A missing default directory just means no files; a mistyped --config-dir must not
	 * silently fall back to the built-in policy. */
	if (o->config_dir) {
		struct stat st;
		if (stat(o->config_dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
			fprintf(stderr, PROG ": --config-dir %s: not a directory\n", o->config_dir);
			return CLI_EXIT_CONFIG;
		}
	}
	r = config_files_dir(o->config_dir, getenv("XDG_CONFIG_HOME"), getenv("HOME"), &dir, &err);
	if (r >= 0)
		r = config_load_dir(dir, o->project, &lo, ret, &err);
	if (r < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return CLI_EXIT_CONFIG;
	}
	for (size_t i = 0; i < (*ret)->n_warnings; i++)
		fprintf(stderr, PROG ": warning: %s\n", (*ret)->warnings[i]);
	return -1;
}

/* ---- check ------------------------------------------------------------------------------- */

static int exit_status(enum policy_verdict v)
{
	return v == POLICY_ALLOW ? CLI_EXIT_ALLOW : v == POLICY_DENY ? CLI_EXIT_DENY : CLI_EXIT_ASK;
}

static void print_origin(const struct config_origin *o)
{
	if (o->file && o->line)
		printf(" (%s:%u:%u)", o->file, o->line, o->column);
	else if (o->file) /* the base list, or a setting implied by a file that omits it */
		printf(" (%s)", o->file);
}

static void print_result(const char *what, const struct policy_result *res, const char *label,
                         const char *extra_label, const char *extra)
{
	printf("%s: %s\n", what, policy_verdict_to_string(res->verdict));
	printf("  %-9s %s\n", label, res->subject);
	if (extra)
		printf("  %-9s %s\n", extra_label, extra);
	printf("  %-9s %s", "rule:", res->rule);
	print_origin(&res->origin);
	printf("\n  %-9s %s\n", "reason:", res->reason);
	if (res->verdict == POLICY_ASK)
		printf("  %-9s %s\n", "no answer:", policy_verdict_to_string(res->fallback));
}

/* Find CMD as execvp would: as given when it has a '/', else in each PATH entry (an empty
 * entry is the current directory). The result is absolute; a path with "." or ".." parts is
 * resolved with realpath() so that it reads as the kernel would see the file. */
/* The SHA-256 of the file at PATH, as `run` digests an asked file (file_digest.h). */
static int content_digest(const char *path, char ret[FILE_DIGEST_HEX])
{
	_cleanup_close_ int fd = open(path, O_PATH | O_CLOEXEC);
	_cleanup_(file_digests_freep) struct file_digests *c = NULL;
	struct statx x;
	int r;

	if (fd < 0)
		return -errno;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_INO | STATX_CTIME | STATX_SIZE, &x) < 0)
		return -errno;
	r = file_digests_new(&c);
	if (r < 0)
		return r;
	return file_digest_get(c, fd, makedev(x.stx_dev_major, x.stx_dev_minor), x.stx_ino,
	                       (uint64_t)x.stx_ctime.tv_sec * 1000000000u + x.stx_ctime.tv_nsec,
	                       x.stx_size, ret);
}

static int resolve_command(const char *cmd, char **ret_path)
{
	_cleanup_free_ char *found = NULL;
	_cleanup_free_ char *abs = NULL;
	char resolved[PATH_MAX];

	if (strchr(cmd, '/')) {
		found = strdup(cmd);
		if (!found)
			return -ENOMEM;
	} else {
		const char *path = getenv("PATH");
		_cleanup_free_ char *copy = strdup(path ? path : "/bin:/usr/bin");

		if (!copy)
			return -ENOMEM;
		/* strsep keeps empty entries, which mean the current directory. */
		for (char *rest = copy, *dir; (dir = strsep(&rest, ":"));) {
			_cleanup_free_ char *candidate = NULL;
			struct stat st;

			if (asprintf(&candidate, "%s/%s", *dir ? dir : ".", cmd) < 0)
				return -ENOMEM;
			if (stat(candidate, &st) == 0 && S_ISREG(st.st_mode) &&
			    access(candidate, X_OK) == 0) {
				found = TAKE_PTR(candidate);
				break;
			}
		}
		if (!found)
			return -ENOENT;
	}
	if (found[0] != '/') {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd)))
			return -errno;
		if (asprintf(&abs, "%s/%s", cwd, found) < 0)
			return -ENOMEM;
	} else {
		abs = TAKE_PTR(found);
	}
	if ((strstr(abs, "/./") || strstr(abs, "/../") || strstr(abs, "//")) &&
	    realpath(abs, resolved)) {
		*ret_path = strdup(resolved);
		return *ret_path ? 0 : -ENOMEM;
	}
	*ret_path = TAKE_PTR(abs);
	return 0;
}

static int check_command(const struct config *cfg, char **argv, int argc)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_free_ char *hostexec_command = NULL;
	struct policy_result exec_res, host_res;
	struct cl_error err = {""};
	_cleanup_free_ char *real = NULL;
	struct stat st;
	int r;

	r = resolve_command(argv[0], &path);
	if (r == -ENOENT) {
		fprintf(stderr,
		        PROG ": policy check: %s: not found in PATH (an exec of it would fail)\n",
		        argv[0]);
		return CLI_EXIT_DENY;
	}
	if (r < 0) {
		fprintf(stderr, PROG ": policy check: %s: %s\n", argv[0], strerror(-r));
		return CLI_EXIT_DENY;
	}
	/* As `run` decides: by the file the path resolves to, deny rules by either name. */
	real = realpath(path, NULL);
	r = exec_decide(cfg, path, real, (const char *const *)argv, (size_t)argc, false, &exec_res,
	                &err);
	/* A person's decision holds for the content it was made on: read the file's. */
	if (r >= 0 && exec_res.verdict != POLICY_ALLOW && exec_res.pin_wanted) {
		char sha256[FILE_DIGEST_HEX];

		if (content_digest(real ? real : path, sha256) == 0)
			r = exec_decide_content(cfg, path, real, (const char *const *)argv,
			                        (size_t)argc, false, sha256, &exec_res, &err);
	}
	if (r >= 0)
		r = cl_quote_strv((const char *const *)argv, (size_t)argc, &err, &hostexec_command);
	if (r >= 0)
		r = policy_check_hostexec(cfg, hostexec_command, &host_res, &err);
	if (r < 0) {
		fprintf(stderr, PROG ": policy check: %s\n", err.msg);
		return CLI_EXIT_USAGE;
	}
	if (stat(path, &st) == 0 && real && strcmp(real, path) != 0) {
		_cleanup_free_ char *shown = NULL;
		if (asprintf(&shown, "%s -> %s", path, real) < 0)
			return CLI_EXIT_CONFIG;
		print_result("exec", &exec_res, "command:", "path:", shown);
	} else if (stat(path, &st) == 0) {
		print_result("exec", &exec_res, "command:", "path:", path);
	} else {
		_cleanup_free_ char *shown = NULL;
		if (asprintf(&shown, "%s (does not exist)", path) < 0)
			return CLI_EXIT_CONFIG;
		print_result("exec", &exec_res, "command:", "path:", shown);
	}
	printf("\n");
	print_result("hostexec (the same command run on the host through hostexec)", &host_res,
	             "command:", NULL, NULL);
	return exit_status(exec_res.verdict);
}

static int check_domain(const struct config *cfg, const char *host)
{
	struct policy_result res;
	struct cl_error err = {""};

	if (policy_check_domain(cfg, NULL, host, &res, &err) < 0) {
		fprintf(stderr, PROG ": policy check: --domain: %s\n", err.msg);
		return CLI_EXIT_USAGE;
	}
	print_result("domain", &res, "host:", NULL, NULL);
	return exit_status(res.verdict);
}

/* PATH made absolute against the current directory, then resolved as the kernel would open it:
 * the whole of it when it exists, else its parent (a file about to be created). */
static int resolve_fs_path(const char *path, char **ret)
{
	_cleanup_free_ char *abs = NULL, *norm = NULL, *parent = NULL;
	char *real, *slash;

	if (path[0] == '/') {
		abs = strdup(path);
	} else {
		_cleanup_free_ char *cwd = getcwd(NULL, 0);
		if (!cwd)
			return -errno;
		if (asprintf(&abs, "%s/%s", cwd, path) < 0)
			abs = NULL;
	}
	if (!abs)
		return -ENOMEM;
	if (path_normalize(abs, NULL, &norm) < 0)
		return -EINVAL;
	real = realpath(norm, NULL);
	if (real) {
		*ret = real;
		return 0;
	}
	parent = strdup(norm);
	if (!parent)
		return -ENOMEM;
	slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = '\0';
		real = realpath(parent, NULL);
		if (real) {
			int n = asprintf(ret, "%s%s%s", real, strcmp(real, "/") ? "/" : "",
			                 slash + 1);
			free(real);
			return n < 0 ? -ENOMEM : 0;
		}
	}
	*ret = TAKE_PTR(norm);
	return 0;
}

static int check_path(const struct config *cfg, const struct options *o)
{
	_cleanup_free_ char *path = NULL, *worktree = NULL, *home = NULL;
	struct fs_vars vars = {0};
	struct fs_result res;
	struct cl_error err = {""};
	int r;

	r = resolve_fs_path(o->path, &path);
	if (r >= 0)
		r = resolve_fs_path(o->worktree ? o->worktree : ".", &worktree);
	if (r >= 0 && getenv("HOME") && getenv("HOME")[0] == '/')
		r = resolve_fs_path(getenv("HOME"), &home);
	if (r < 0) {
		fprintf(stderr, PROG ": policy check: --path %s: %s\n", o->path, strerror(-r));
		return CLI_EXIT_USAGE;
	}
	vars.home = home;
	vars.worktree = worktree;
	if (fs_policy_check(cfg, &vars, path, o->write, &res, &err) < 0) {
		fprintf(stderr, PROG ": policy check: --path: %s\n", err.msg);
		return CLI_EXIT_CONFIG;
	}
	printf("%s: %s\n", o->write ? "write" : "read", fs_verdict_to_string(res.verdict));
	printf("  %-9s %s", "path:", path);
	if (strcmp(path, o->path) != 0)
		printf(" (given: %s)", o->path);
	printf("\n  %-9s ", "rule:");
	if (res.rule) {
		printf("%s[%u] \"%s\"", res.rule->list, res.rule->index, res.rule->pattern);
		print_origin(&res.rule->origin);
	} else if (res.setting && res.setting->text) {
		printf("%s: %s", res.verdict == FS_ALLOW ? "fs.tmp" : "fs.ask",
		       res.verdict == FS_ALLOW ? fs_tmp_to_string(cfg->fs.tmp)
		                               : fs_ask_to_string(cfg->fs.ask));
		print_origin(&res.setting->origin);
	} else {
		printf("%s",
		       o->write ? "(no fs.write entry covers it)" : "(no fs.hide entry covers it)");
	}
	printf("\n  %-9s %s\n", "reason:", res.reason);
	printf("  %-9s {worktree} = %s, ~ = %s\n", "with:", worktree, home ? home : "(no $HOME)");
	switch (res.verdict) {
	case FS_ALLOW:
		return CLI_EXIT_ALLOW;
	case FS_ASK:
		return CLI_EXIT_ASK;
	default:
		return CLI_EXIT_DENY;
	}
}

/* ---- show -------------------------------------------------------------------------------- */

/* A YAML double-quoted scalar: safe for any bytes a config can hold. */
static void put_quoted(const char *s)
{
	putchar('"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			printf("\\x%02x", *p);
		else
			putchar(*p);
	}
	putchar('"');
}

static void put_comment(const struct config_origin *o)
{
	if (o->file && o->line)
		printf("  # %s:%u:%u (%s)", o->file, o->line, o->column,
		       config_layer_to_string(o->layer));
	else if (o->layer == CONFIG_LAYER_BASE)
		printf("  # %s: Cloister's guardian allows it beneath every config (a deny "
		       "entry overrides it)",
		       o->file);
	else if (o->file)
		printf("  # %s: not set there, which means this in Cloister", o->file);
	else
		printf("  # (not set)");
	putchar('\n');
}

static void show_scalar(const char *indent, const char *key, const struct config_scalar *s,
                        const char *value)
{
	printf("%s%s: ", indent, key);
	if (value)
		fputs(value, stdout);
	else if (s->text)
		put_quoted(s->text);
	else
		fputs("null", stdout);
	put_comment(&s->origin);
}

static void show_exec_list(const char *key, const struct config_exec_list *l)
{
	printf("  %s:%s\n", key, l->n ? "" : " []");
	for (size_t i = 0; i < l->n; i++) {
		const struct config_exec_rule *r = &l->items[i];
		bool first = true;

		if (r->path_glob) {
			fputs("    - path: ", stdout);
			put_quoted(r->path_glob);
			put_comment(&r->origin);
			first = false;
		}
		if (r->command.source) {
			fputs(first ? "    - command: " : "      command: ", stdout);
			put_quoted(r->command.source);
			if (first)
				put_comment(&r->origin);
			else
				putchar('\n');
		}
		if (r->argv0) {
			fputs("      argv0: ", stdout);
			put_quoted(r->argv0);
			putchar('\n');
		}
		if (r->sha256) {
			fputs("      sha256: ", stdout);
			put_quoted(r->sha256);
			putchar('\n');
		}
	}
}

static void show_domain_list(const char *key, const struct config_domain_list *l)
{
	printf("  %s:%s\n", key, l->n ? "" : " []");
	for (size_t i = 0; i < l->n; i++) {
		char spec[DOMAIN_HOST_MAX + 16];

		if (domain_spec_format(&l->items[i].spec, spec, sizeof(spec)) < 0)
			continue;
		printf("    - %s: ", l->items[i].spec.wildcard ? "pattern" : "domain");
		put_quoted(spec);
		put_comment(&l->items[i].origin);
	}
}

static void show_pattern_list(const char *key, const struct config_pattern_list *l)
{
	printf("  %s:%s\n", key, l->n ? "" : " []");
	for (size_t i = 0; i < l->n; i++) {
		fputs("    - pattern: ", stdout);
		put_quoted(l->items[i].regex.source);
		put_comment(&l->items[i].origin);
	}
}

static void show_fs_list(const char *key, const struct config_fs_list *l)
{
	printf("  %s:%s\n", key, l->n ? "" : " []");
	for (size_t i = 0; i < l->n; i++) {
		fputs("    - ", stdout);
		put_quoted(l->items[i].pattern);
		put_comment(&l->items[i].origin);
	}
}

/* fs.allow comes from the decisions files only: shown as comments, so that the output
 * still loads as a config.yaml. */
static void show_fs_decisions(const struct config_fs_list *l)
{
	if (!l->n)
		return;
	printf("  # allowed writes kept by people's decisions (fs.ask: on-write asks no more):\n");
	for (size_t i = 0; i < l->n; i++) {
		fputs("  #   - ", stdout);
		put_quoted(l->items[i].pattern);
		put_comment(&l->items[i].origin);
	}
}

static void show(const struct config *c, const struct options *o)
{
	printf("# Effective Cloister configuration%s%s%s\n", o->project ? " for project \"" : "",
	       o->project ? o->project : "", o->project ? "\"" : " (no project)");
	printf("# Loaded from:");
	for (size_t i = 0; i < c->n_files; i++)
		printf(" %s", c->files[i]);
	printf("\n\nexec:\n");
	show_scalar("  ", "security", &c->exec.security_at,
	            exec_security_to_string(c->exec.security));
	show_scalar("  ", "ask", &c->exec.ask_at, exec_ask_to_string(c->exec.ask));
	show_scalar("  ", "ask_fallback", &c->exec.ask_fallback_at,
	            exec_security_to_string(c->exec.ask_fallback));
	show_scalar("  ", "defaults", &c->exec.defaults_at, c->exec.defaults ? "true" : "false");
	show_exec_list("allow", &c->exec.allow);
	show_exec_list("deny", &c->exec.deny);
	printf("\nfs:\n");
	show_fs_list("write", &c->fs.write);
	show_fs_list("hide", &c->fs.hide);
	show_fs_list("protect", &c->fs.protect);
	show_scalar("  ", "tmp", &c->fs.tmp_at, fs_tmp_to_string(c->fs.tmp));
	show_scalar("  ", "ask", &c->fs.ask_at, fs_ask_to_string(c->fs.ask));
	show_fs_decisions(&c->fs.allow);
	printf("\nproxy:\n");
	show_scalar("  ", "listen", &c->proxy.listen, NULL);
	show_scalar("  ", "defaults", &c->proxy.defaults_at, c->proxy.defaults ? "true" : "false");
	show_domain_list("allow", &c->proxy.allow);
	show_domain_list("deny", &c->proxy.deny);
	show_scalar("  ", "unlisted_domain_behavior", &c->proxy.unlisted_at,
	            unlisted_behavior_to_string(c->proxy.unlisted));
	show_scalar("  ", "approval_timeout", &c->proxy.approval_timeout_at, NULL);
	/* Integers stay plain: quoted, they would not load back as integers. */
	show_scalar("  ", "rate_limit", &c->proxy.rate_limit_at, c->proxy.rate_limit_at.text);
	show_scalar("  ", "max_request_bytes", &c->proxy.max_request_bytes_at,
	            c->proxy.max_request_bytes_at.text);
	printf("\nlimits:\n");
	show_scalar("  ", "pids_max", &c->limits.pids_max_at, c->limits.pids_max_at.text);
	printf("\nrequest:\n");
	show_scalar("  ", "listen", &c->request.listen, NULL);
	show_scalar("  ", "timeout", &c->request.timeout_at, NULL);
	printf("\nhostexec:\n");
	show_scalar("  ", "listen", &c->hostexec.listen, NULL);
	show_pattern_list("auto_approve", &c->hostexec.auto_approve);
	show_pattern_list("manual_approve", &c->hostexec.manual_approve);
}

/* ---- entry ------------------------------------------------------------------------------- */

int cli_policy(int argc, char **argv)
{
	_cleanup_(config_freep) struct config *cfg = NULL;
	struct options o = {0};
	const char *sub;
	int r;

	if (argc < 2)
		return usage_error("missing subcommand (check or show)");
	sub = argv[1];
	if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0) {
		cli_policy_usage(stdout);
		return 0;
	}
	if (strcmp(sub, "check") != 0 && strcmp(sub, "show") != 0)
		return usage_error("unknown subcommand \"%s\" (check or show)", sub);

	r = parse_options(argc - 1, argv + 1, strcmp(sub, "check") == 0, &o);
	if (r >= 0)
		return r;
	r = load(&o, &cfg);
	if (r >= 0)
		return r;
	if (strcmp(sub, "show") == 0) {
		show(cfg, &o);
		return fflush(stdout) == 0 ? 0 : CLI_EXIT_CONFIG;
	}
	if (o.domain)
		return check_domain(cfg, o.domain);
	if (o.path)
		return check_path(cfg, &o);
	return check_command(cfg, o.command, o.n_command);
}
