#include "supervisor/policy/decisions.h"

#include "base/dirs.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "supervisor/policy/config.h"
#include "supervisor/policy/config_files.h"
#include "supervisor/policy/fs_policy.h"

/* ---- the text (pure) --------------------------------------------------------------------- */

static bool same_entry(const struct domain_spec *a, const struct domain_spec *b)
{
	return a->wildcard == b->wildcard && a->port == b->port && strcmp(a->host, b->host) == 0;
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool same_exec(const struct config_exec_rule *r, const struct decisions_entry *e)
{
	return same_str(r->path_glob, e->path_glob) && same_str(r->command.source, e->command) &&
	       same_str(r->argv0, e->argv0);
}

struct text_buf {
	char *p;
	size_t len, size;
};

static int append(struct text_buf *b, const char *s)
{
	size_t n = strlen(s);

	if (b->len + n + 1 > b->size) {
		size_t size = (b->len + n + 1) * 2;
		char *p = realloc(b->p, size);

		if (!p)
			return -ENOMEM;
		b->p = p;
		b->size = size;
	}
	memcpy(b->p + b->len, s, n + 1);
	b->len += n;
	return 0;
}

static int append_entry(struct text_buf *b, const struct domain_spec *spec)
{
	char line[DOMAIN_HOST_MAX + 64], text[DOMAIN_HOST_MAX + 16];

	if (domain_spec_format(spec, text, sizeof(text)) < 0)
		return -EINVAL;
	/* Always quoted: "*.x" would be an alias, "null" a null, "[::1]" a list. */
	snprintf(line, sizeof(line), "    - %s: \"%s\"\n", spec->wildcard ? "pattern" : "domain",
	         text);
	return append(b, line);
}

/* S as a YAML double-quoted scalar: \ and " escaped, control characters as \xHH (the rest is
 * UTF-8 text, which the exec rules' makers check). */
static int append_yaml_quoted(struct text_buf *b, const char *s)
{
	char esc[8];
	int r = append(b, "\"");

	for (const char *p = s; *p && r >= 0; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '\\' || c == '"')
			snprintf(esc, sizeof(esc), "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			snprintf(esc, sizeof(esc), "\\x%02x", c);
		else {
			esc[0] = (char)c;
			esc[1] = '\0';
		}
		r = append(b, esc);
	}
	return r < 0 ? r : append(b, "\"");
}

static int append_exec_entry(struct text_buf *b, const char *path_glob, const char *command,
                             const char *argv0, const char *sha256)
{
	int r = 0;

	if (path_glob) {
		r = append(b, "    - path: ");
		if (r >= 0)
			r = append_yaml_quoted(b, path_glob);
		if (r >= 0)
			r = append(b, "\n");
	}
	if (r >= 0 && command) {
		r = append(b, path_glob ? "      command: " : "    - command: ");
		if (r >= 0)
			r = append_yaml_quoted(b, command);
		if (r >= 0)
			r = append(b, "\n");
	}
	if (r >= 0 && argv0) {
		r = append(b, "      argv0: ");
		if (r >= 0)
			r = append_yaml_quoted(b, argv0);
		if (r >= 0)
			r = append(b, "\n");
	}
	if (r >= 0 && sha256) {
		r = append(b, "      sha256: ");
		if (r >= 0)
			r = append_yaml_quoted(b, sha256);
		if (r >= 0)
			r = append(b, "\n");
	}
	return r;
}

/* Write LIST's entries under KEY (in order, without duplicates, without DROP), then EXTRA
 * unless it is among them; *ret_added / *ret_dropped say what changed. */
static int append_list(struct text_buf *b, const char *key, const struct config_domain_list *list,
                       const struct domain_spec *extra, const struct domain_spec *drop,
                       bool *ret_added, bool *ret_dropped)
{
	bool extra_present = false;
	int r;

	*ret_added = false;
	if (list->n == 0 && !extra)
		return 0;
	if ((r = append(b, "  ")) < 0 || (r = append(b, key)) < 0 || (r = append(b, ":\n")) < 0)
		return r;
	for (size_t i = 0; i < list->n; i++) {
		const struct domain_spec *spec = &list->items[i].spec;
		bool dup = false;

		for (size_t k = 0; k < i && !dup; k++)
			dup = same_entry(&list->items[k].spec, spec);
		if (dup)
			continue;
		if (drop && same_entry(spec, drop)) {
			*ret_dropped = true;
			continue;
		}
		if (extra && same_entry(spec, extra))
			extra_present = true;
		if ((r = append_entry(b, spec)) < 0)
			return r;
	}
	if (extra && !extra_present) {
		if ((r = append_entry(b, extra)) < 0)
			return r;
		*ret_added = true;
	}
	return 0;
}

static int append_exec_list(struct text_buf *b, const char *key,
                            const struct config_exec_list *list,
                            const struct decisions_entry *extra, const struct decisions_entry *drop,
                            bool *ret_added, bool *ret_dropped)
{
	bool extra_present = false;
	int r;

	*ret_added = false;
	if (list->n == 0 && !extra)
		return 0;
	if ((r = append(b, "  ")) < 0 || (r = append(b, key)) < 0 || (r = append(b, ":\n")) < 0)
		return r;
	for (size_t i = 0; i < list->n; i++) {
		const struct config_exec_rule *rule = &list->items[i];
		bool dup = false;

		for (size_t k = 0; k < i && !dup; k++)
			dup = same_str(list->items[k].path_glob, rule->path_glob) &&
			      same_str(list->items[k].command.source, rule->command.source) &&
			      same_str(list->items[k].argv0, rule->argv0);
		if (dup)
			continue;
		if (drop && same_exec(rule, drop)) {
			*ret_dropped = true;
			continue;
		}
		/* The same rule decided again: its new pin (the file's content now) replaces
		 * the old one in place. */
		if (extra && same_exec(rule, extra)) {
			if (extra_present)
				continue;
			extra_present = true;
			if (!same_str(rule->sha256, extra->sha256)) {
				*ret_added = true;
				rule = NULL;
			}
		}
		r = rule ? append_exec_entry(b, rule->path_glob, rule->command.source, rule->argv0,
		                             rule->sha256)
		         : append_exec_entry(b, extra->path_glob, extra->command, extra->argv0,
		                             extra->sha256);
		if (r < 0)
			return r;
	}
	if (extra && !extra_present) {
		if ((r = append_exec_entry(b, extra->path_glob, extra->command, extra->argv0,
		                           extra->sha256)) < 0)
			return r;
		*ret_added = true;
	}
	return 0;
}

/* fs.allow's entries, then EXTRA unless among them, without DROP. */
static int append_fs_list(struct text_buf *b, const struct config_fs_list *list,
                          const struct decisions_entry *extra, const struct decisions_entry *drop,
                          bool *ret_added, bool *ret_dropped)
{
	bool extra_present = false;
	int r;

	*ret_added = false;
	if (list->n == 0 && !extra)
		return 0;
	if ((r = append(b, "fs:\n  allow:\n")) < 0)
		return r;
	for (size_t i = 0; i < list->n; i++) {
		const char *p = list->items[i].pattern;
		bool dup = false;

		for (size_t k = 0; k < i && !dup; k++)
			dup = strcmp(list->items[k].pattern, p) == 0;
		if (dup)
			continue;
		if (drop && strcmp(p, drop->fs_path) == 0) {
			*ret_dropped = true;
			continue;
		}
		if (extra && strcmp(p, extra->fs_path) == 0)
			extra_present = true;
		if ((r = append(b, "    - ")) < 0 || (r = append_yaml_quoted(b, p)) < 0 ||
		    (r = append(b, "\n")) < 0)
			return r;
	}
	if (extra && !extra_present) {
		if ((r = append(b, "    - ")) < 0 ||
		    (r = append_yaml_quoted(b, extra->fs_path)) < 0 || (r = append(b, "\n")) < 0)
			return r;
		*ret_added = true;
	}
	return 0;
}

static const struct decisions_entry *only(const struct decisions_entry *e,
                                          enum decisions_section section, enum decisions_list list)
{
	return e && e->section == section && e->list == list ? e : NULL;
}

int decisions_edit(const char *name, const char *text, size_t len, bool present,
                   const struct decisions_entry *add, const struct decisions_entry *drop,
                   char **ret_text, struct cl_error *err)
{
	const struct config_source source = {
	        .name = name, .data = text, .len = len, .present = present};
	_cleanup_(config_freep) struct config *cfg = NULL;
	struct text_buf b = {0};
	bool added[5] = {false}, dropped = false;
	const struct decisions_entry *e;
	int r;

	if (add && add->section == DECISIONS_EXEC && !add->path_glob && !add->command)
		return cl_error_set(err, -EINVAL, "an exec entry needs a path or a command");
	if (add && add->section == DECISIONS_FS) {
		char msg[256];

		if (!add->fs_path || add->fs_path[0] != '/' || fs_pattern_is_glob(add->fs_path) ||
		    fs_pattern_check(add->fs_path, msg, sizeof(msg)) < 0)
			return cl_error_set(err, -EINVAL,
			                    "a file decision needs an absolute path without glob "
			                    "characters, \".\" or \"..\"");
	}
	r = config_parse_file(CONFIG_FILE_DECISIONS, CONFIG_LAYER_GLOBAL_DECISIONS, &source, NULL,
	                      &cfg, err);
	if (r < 0)
		return r;
	if (cfg->n_warnings > 0)
		return cl_error_set(err, -EINVAL,
		                    "%s: not rewriting a file with entries that would not be "
		                    "kept (%s)",
		                    name, cfg->warnings[0]);
	if (add) {
		size_t n = add->section == DECISIONS_PROXY
		                   ? (add->list == DECISIONS_ALLOW ? cfg->proxy.allow.n
		                                                   : cfg->proxy.deny.n)
		           : add->section == DECISIONS_FS
		                   ? cfg->fs.allow.n
		                   : (add->list == DECISIONS_ALLOW ? cfg->exec.allow.n
		                                                   : cfg->exec.deny.n);
		if (n >= CONFIG_MAX_RULES)
			return cl_error_set(err, -E2BIG, "%s: already %d entries", name,
			                    CONFIG_MAX_RULES);
	}

	r = append(&b, "# Cloister decisions: domains, programs and file writes a person allowed "
	               "or denied.\n"
	               "# Written by cloister-supervisor; comments here are not kept.\n"
	               "proxy:\n");
	e = only(add, DECISIONS_PROXY, DECISIONS_ALLOW);
	if (r >= 0)
		r = append_list(&b, "allow", &cfg->proxy.allow, e ? &e->domain : NULL,
		                only(drop, DECISIONS_PROXY, DECISIONS_ALLOW) ? &drop->domain : NULL,
		                &added[0], &dropped);
	e = only(add, DECISIONS_PROXY, DECISIONS_DENY);
	if (r >= 0)
		r = append_list(&b, "deny", &cfg->proxy.deny, e ? &e->domain : NULL,
		                only(drop, DECISIONS_PROXY, DECISIONS_DENY) ? &drop->domain : NULL,
		                &added[1], &dropped);
	/* exec: only once there is an entry, so that a file of domains stays as it was. */
	if (r >= 0 && (cfg->exec.allow.n || cfg->exec.deny.n || only(add, DECISIONS_EXEC, 0) ||
	               only(add, DECISIONS_EXEC, 1))) {
		r = append(&b, "exec:\n");
		if (r >= 0)
			r = append_exec_list(&b, "allow", &cfg->exec.allow,
			                     only(add, DECISIONS_EXEC, DECISIONS_ALLOW),
			                     only(drop, DECISIONS_EXEC, DECISIONS_ALLOW), &added[2],
			                     &dropped);
		if (r >= 0)
			r = append_exec_list(&b, "deny", &cfg->exec.deny,
			                     only(add, DECISIONS_EXEC, DECISIONS_DENY),
			                     only(drop, DECISIONS_EXEC, DECISIONS_DENY), &added[3],
			                     &dropped);
	}
	if (r >= 0)
		r = append_fs_list(&b, &cfg->fs.allow, only(add, DECISIONS_FS, DECISIONS_ALLOW),
		                   only(drop, DECISIONS_FS, DECISIONS_ALLOW), &added[4], &dropped);
	if (r < 0) {
		free(b.p);
		return cl_error_set(err, r, "%s: cannot write the new text: %s", name,
		                    strerror(-r));
	}
	*ret_text = b.p;
	return added[0] || added[1] || added[2] || added[3] || added[4] || dropped ? 1 : 0;
}

int decisions_add(const char *name, const char *text, size_t len, bool present,
                  enum decisions_list list, const struct domain_spec *entry, char **ret_text,
                  struct cl_error *err)
{
	struct decisions_entry e = {.section = DECISIONS_PROXY, .list = list, .domain = *entry};

	return decisions_edit(name, text, len, present, &e, NULL, ret_text, err);
}

int decisions_wildcard(const struct domain_spec *domain, struct domain_spec *ret,
                       struct cl_error *err)
{
	struct domain_spec w = *domain;
	const char *dot = strchr(domain->host, '.');
	struct in_addr a4;
	size_t labels = 1;

	if (domain->wildcard)
		return cl_error_set(err, -EINVAL, "\"%s\" is already a wildcard", domain->host);
	if (strchr(domain->host, ':') || inet_pton(AF_INET, domain->host, &a4) == 1)
		return cl_error_set(err, -EINVAL, "an IP address (%s) has no wildcard",
		                    domain->host);
	for (const char *p = domain->host; *p; p++)
		labels += *p == '.';
	if (labels < 3 || !dot)
		return cl_error_set(
		        err, -EINVAL,
		        "\"%s\" has fewer than three labels: its wildcard would cover a "
		        "whole top-level domain",
		        domain->host);
	memset(w.host, 0, sizeof(w.host));
	strcpy(w.host, dot + 1);
	w.wildcard = true;
	*ret = w;
	return 0;
}

int decisions_path(const char *dir, const char *project, char **ret_path, struct cl_error *err)
{
	char *path;
	int r;

	if (project) {
		r = config_project_name_check(project, err);
		if (r < 0)
			return r;
		r = asprintf(&path, "%s/decisions/projects/%s.yaml", dir, project);
	} else {
		r = asprintf(&path, "%s/decisions/global.yaml", dir);
	}
	if (r < 0)
		return cl_error_set(err, -ENOMEM, "out of memory");
	*ret_path = path;
	return 0;
}

/* ---- the file (I/O) ---------------------------------------------------------------------- */

/* The directory part of PATH ("." when none), malloc'd. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* -EIO when the test asks STEP to fail, else R. */
static int step(enum decisions_step fail_at, enum decisions_step here, int r)
{
	return fail_at == here ? -EIO : r;
}

int decisions_write_atomic_failing_at(const char *path, const char *text,
                                      enum decisions_step fail_at, struct cl_error *err)
{
	_cleanup_free_ char *dir = dir_of(path), *tmp = NULL;
	_cleanup_close_ int fd = -EBADF, dfd = -EBADF;
	const char *base = strrchr(path, '/');
	int r;

	if (!dir)
		return cl_error_set(err, -ENOMEM, "out of memory");
	base = base ? base + 1 : path;
	r = step(fail_at, DECISIONS_STEP_MKDIR, dirs_make(dir, 0700));
	if (r < 0)
		return cl_error_set(err, r, "%s: cannot create the directory: %s", dir,
		                    strerror(-r));
	if (asprintf(&tmp, "%s/.%s.tmp-XXXXXX", dir, base) < 0) {
		tmp = NULL;
		return cl_error_set(err, -ENOMEM, "out of memory");
	}
	/* mkostemp: O_CREAT|O_EXCL with mode 0600, plus O_CLOEXEC. */
	fd = mkostemp(tmp, O_CLOEXEC);
	r = step(fail_at, DECISIONS_STEP_CREATE, fd < 0 ? -errno : 0);
	if (r < 0) {
		if (fd >= 0)
			unlink(tmp);
		return cl_error_set(err, r, "%s: cannot create a temporary file: %s", dir,
		                    strerror(-r));
	}
	r = step(fail_at, DECISIONS_STEP_WRITE, write_all(fd, text, strlen(text)));
	if (r >= 0)
		r = step(fail_at, DECISIONS_STEP_FSYNC, fsync(fd) < 0 ? -errno : 0);
	if (r >= 0)
		r = step(fail_at, DECISIONS_STEP_RENAME,
		         fail_at == DECISIONS_STEP_RENAME ? 0
		         : rename(tmp, path) < 0          ? -errno
		                                          : 0);
	if (r < 0) {
		unlink(tmp);
		return cl_error_set(err, r, "%s: cannot write: %s", path, strerror(-r));
	}
	/* The rename is durable once the directory is. */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = step(fail_at, DECISIONS_STEP_FSYNC_DIR, dfd < 0 || fsync(dfd) < 0 ? -errno : 0);
	if (r < 0)
		return cl_error_set(err, r, "%s: written, but syncing its directory failed: %s",
		                    path, strerror(-r));
	return 0;
}

int decisions_write_atomic(const char *path, const char *text, struct cl_error *err)
{
	return decisions_write_atomic_failing_at(path, text, DECISIONS_STEP_NONE, err);
}

/* An exclusive flock of LOCK, waited for DECISIONS_LOCK_WAIT_MS at most. Anybody who can read
 * the config directory can hold the lock — the agent included, which sees it read-only, and a
 * read-only fd takes a flock — and would hold this supervisor's loop for good; another writer
 * holds it for one write. */
static int lock_bounded(int lock, const char *lock_path, struct cl_error *err)
{
	for (unsigned waited = 0;; waited += 10) {
		if (flock(lock, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK)
			return cl_error_set(err, -errno, "%s: cannot lock: %m", lock_path);
		if (waited >= DECISIONS_LOCK_WAIT_MS)
			return cl_error_set(err, -EWOULDBLOCK,
			                    "%s: held by another process for more than %d ms; "
			                    "nothing was saved",
			                    lock_path, DECISIONS_LOCK_WAIT_MS);
		(void)usleep(10 * 1000);
	}
}

/* Lock PATH's sibling lock file, read PATH, edit it (ADD and/or DROP), write it atomically when
 * something changed, unlock. */
static int update_locked(const char *path, const struct decisions_entry *add,
                         const struct decisions_entry *drop, struct cl_error *err)
{
	_cleanup_free_ char *dir = dir_of(path), *lock_path = NULL, *data = NULL, *text = NULL;
	_cleanup_close_ int lock = -EBADF;
	size_t len = 0;
	int r, changed;

	if (!dir || asprintf(&lock_path, "%s.lock", path) < 0) {
		lock_path = NULL;
		return cl_error_set(err, -ENOMEM, "out of memory");
	}
	r = dirs_make(dir, 0700);
	if (r < 0)
		return cl_error_set(err, r, "%s: cannot create the directory: %s", dir,
		                    strerror(-r));
	lock = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	if (lock < 0)
		return cl_error_set(err, -errno, "%s: cannot open: %m", lock_path);
	r = lock_bounded(lock, lock_path, err);
	if (r < 0)
		return r;

	r = config_file_read(path, &data, &len, err);
	if (r < 0)
		return r;
	if (r == 0 && !add)
		return 0; /* nothing to remove from a file that is not there */
	changed = decisions_edit(path, data, len, r > 0, add, drop, &text, err);
	if (changed <= 0)
		return changed;
	r = decisions_write_atomic(path, text, err);
	if (r < 0)
		return r;
	return 1; /* the lock goes with its fd */
}

int decisions_update(const char *path, enum decisions_list list, const struct domain_spec *entry,
                     struct cl_error *err)
{
	struct decisions_entry e = {.section = DECISIONS_PROXY, .list = list, .domain = *entry};

	return update_locked(path, &e, NULL, err);
}

int decisions_update_entry(const char *path, const struct decisions_entry *entry,
                           struct cl_error *err)
{
	return update_locked(path, entry, NULL, err);
}

int decisions_remove(const char *path, const struct decisions_entry *entry, struct cl_error *err)
{
	return update_locked(path, NULL, entry, err);
}

/* ---- approvals/ -------------------------------------------------------------------------- */

#define APPROVALS_MAX_FILES 4096

/* Copy the file SRC_DIR/NAME to DST_DIR/NAME (0600, synced), through config_file_read's
 * checks (a regular file, bounded, not world-writable). A file that vanished is skipped. */
static int copy_one(const char *src_dir, const char *dst_dir, const char *name,
                    struct cl_error *err)
{
	_cleanup_free_ char *src = NULL, *dst = NULL, *data = NULL;
	_cleanup_close_ int fd = -EBADF;
	size_t len = 0;
	int r;

	if (asprintf(&src, "%s/%s", src_dir, name) < 0 ||
	    asprintf(&dst, "%s/%s", dst_dir, name) < 0)
		return cl_error_set(err, -ENOMEM, "out of memory");
	r = config_file_read(src, &data, &len, err);
	if (r <= 0)
		return r;
	fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return cl_error_set(err, -errno, "%s: cannot create: %m", dst);
	r = write_all(fd, data, len);
	if (r >= 0 && fsync(fd) < 0)
		r = -errno;
	if (r < 0)
		return cl_error_set(err, r, "%s: cannot write: %s", dst, strerror(-r));
	return 0;
}

/* Remove the copy under construction at TMP (global.yaml, the project files, the dirs). */
static void remove_copy(const char *tmp)
{
	_cleanup_free_ char *projects = NULL;
	DIR *d;

	if (asprintf(&projects, "%s/projects", tmp) < 0)
		return;
	d = opendir(projects);
	if (d) {
		struct dirent *e;

		while ((e = readdir(d)))
			if (e->d_name[0] != '.')
				(void)unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
	}
	(void)rmdir(projects);
	{
		_cleanup_free_ char *global = NULL;

		if (asprintf(&global, "%s/global.yaml", tmp) >= 0)
			(void)unlink(global);
	}
	(void)rmdir(tmp);
}

/* Fill the empty directory TMP with APPROVALS' decisions files. */
static int copy_approvals(const char *approvals, const char *tmp, struct cl_error *err)
{
	_cleanup_free_ char *src_projects = NULL, *dst_projects = NULL;
	size_t n = 0;
	DIR *d;
	int r;

	r = copy_one(approvals, tmp, "global.yaml", err);
	if (r < 0)
		return r;
	if (asprintf(&src_projects, "%s/projects", approvals) < 0 ||
	    asprintf(&dst_projects, "%s/projects", tmp) < 0)
		return cl_error_set(err, -ENOMEM, "out of memory");
	d = opendir(src_projects);
	if (!d)
		return errno == ENOENT || errno == ENOTDIR
		               ? 0
		               : cl_error_set(err, -errno, "%s: cannot open: %m", src_projects);
	if (mkdir(dst_projects, 0700) < 0) {
		r = cl_error_set(err, -errno, "%s: cannot create: %m", dst_projects);
		closedir(d);
		return r;
	}
	for (struct dirent *e; (e = readdir(d));) {
		size_t len = strlen(e->d_name);
		_cleanup_free_ char *project = NULL;

		/* Only what the config loader would read: <valid project name>.yaml. */
		if (len <= 5 || strcmp(e->d_name + len - 5, ".yaml") != 0)
			continue;
		project = strndup(e->d_name, len - 5);
		if (!project) {
			closedir(d);
			return cl_error_set(err, -ENOMEM, "out of memory");
		}
		if (config_project_name_check(project, NULL) < 0)
			continue;
		if (++n > APPROVALS_MAX_FILES) {
			closedir(d);
			return cl_error_set(err, -E2BIG, "%s: more than %d project files",
			                    src_projects, APPROVALS_MAX_FILES);
		}
		r = copy_one(src_projects, dst_projects, e->d_name, err);
		if (r < 0) {
			closedir(d);
			return r;
		}
	}
	closedir(d);
	return 0;
}

int decisions_prepare_dir(const char *dir, struct cl_error *err)
{
	_cleanup_free_ char *approvals = NULL, *decisions = NULL, *tmp = NULL;
	_cleanup_close_ int dfd = -EBADF;
	const char *name;
	int r;

	r = config_files_decisions_dir(dir, &name, err);
	if (r <= 0)
		return r;
	if (asprintf(&approvals, "%s/approvals", dir) < 0 ||
	    asprintf(&decisions, "%s/decisions", dir) < 0 ||
	    asprintf(&tmp, "%s/.decisions.tmp-XXXXXX", dir) < 0)
		return cl_error_set(err, -ENOMEM, "out of memory");
	if (!mkdtemp(tmp))
		return cl_error_set(err, -errno, "%s: cannot create a temporary directory: %m",
		                    dir);
	r = copy_approvals(approvals, tmp, err);
	if (r >= 0) {
		dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0 || fsync(dfd) < 0)
			r = cl_error_set(err, -errno, "%s: cannot sync: %m", tmp);
	}
	/* Whole or not at all: another supervisor may be doing the same, and the first
	 * rename wins (a directory is never renamed over a non-empty one). */
	if (r >= 0 && rename(tmp, decisions) < 0) {
		if (errno != EEXIST && errno != ENOTEMPTY)
			r = cl_error_set(err, -errno, "%s: cannot rename %s to it: %m", decisions,
			                 tmp);
		remove_copy(tmp);
		return r < 0 ? r : 0;
	}
	if (r < 0) {
		remove_copy(tmp);
		return r;
	}
	/* The rename is durable once DIR is; a failure here loses nothing but durability. */
	{
		_cleanup_close_ int pfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (pfd >= 0)
			(void)fsync(pfd);
	}
	return 1;
}
