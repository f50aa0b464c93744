#include "supervisor/cli_decisions.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/cleanup.h"
#include "base/say.h"
#include "base/term_escape.h"
#include "protocol/protocol.h"
#include "supervisor/policy/config.h"
#include "supervisor/policy/config_files.h"
#include "supervisor/policy/decisions.h"

#define EXIT_NONE   1
#define EXIT_USAGE  64
#define EXIT_CONFIG 78
#define MAX_FILES   4096

static void usage(FILE *out)
{
	fputs("usage: " PROG " decisions list [--config-dir D] [--project P]\n"
	      "       " PROG " decisions rm ID|ENTRY [--config-dir D] [--project P]\n"
	      "\n"
	      "The decisions kept for a project or for every project: domains and programs\n"
	      "allowed or denied, and files allowed written, with the scope project or global.\n"
	      "`list` shows each with its ID; `rm` removes one, by its ID or the entry itself (a\n"
	      "domain, a pattern, an exec rule's path, a file's path). Running supervisors of\n"
	      "the project see a change within a second: a decision added holds there, a domain\n"
	      "removed too; an exec rule removed counts from their next start.\n",
	      out);
}

/* One entry found in a file. */
struct found {
	char *file;  /* the decisions file */
	char *where; /* "global" or "project NAME" */
	struct decisions_entry e;
	char *text;    /* the domain as written, or the exec rule's path */
	char *command; /* an exec rule's command (copy) */
	char *argv0;   /* an exec rule's argv[0] pin (copy) */
	char id[13];
};

struct found_list {
	struct found *v;
	size_t n;
};

static void found_list_done(struct found_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].file);
		free(l->v[i].where);
		free(l->v[i].text);
		free(l->v[i].command);
		free(l->v[i].argv0);
		free((char *)l->v[i].e.path_glob);
		free((char *)l->v[i].e.fs_path);
	}
	free(l->v);
}

/* FNV-1a over the parts, as 12 hex characters. */
static const char *section_name(enum decisions_section s)
{
	return s == DECISIONS_EXEC ? "exec" : s == DECISIONS_FS ? "file" : "domain";
}

static void make_id(struct found *f)
{
	uint64_t h = 0xcbf29ce484222325ull;
	const char *parts[6] = {f->where,
	                        f->e.section == DECISIONS_PROXY ? "proxy"
	                                                        : section_name(f->e.section),
	                        f->e.list == DECISIONS_ALLOW ? "allow" : "deny",
	                        f->text,
	                        f->command ? f->command : "",
	                        f->argv0 ? f->argv0 : ""};

	for (size_t i = 0; i < 6; i++) {
		for (const char *p = parts[i]; *p; p++) {
			h ^= (unsigned char)*p;
			h *= 0x100000001b3ull;
		}
		h ^= 0xff;
		h *= 0x100000001b3ull;
	}
	snprintf(f->id, sizeof(f->id), "%012llx", (unsigned long long)(h & 0xffffffffffffull));
}

static int push(struct found_list *l, const char *file, const char *where,
                enum decisions_section section, enum decisions_list list,
                const struct domain_spec *spec, const char *path_glob, const char *command,
                const char *argv0)
{
	struct found *v = reallocarray(l->v, l->n + 1, sizeof(*v)), *f;
	char text[DOMAIN_HOST_MAX + 16];

	if (!v)
		return -ENOMEM;
	l->v = v;
	f = &v[l->n];
	*f = (struct found){.e = {.section = section, .list = list}};
	f->file = strdup(file);
	f->where = strdup(where);
	if (section == DECISIONS_PROXY) {
		f->e.domain = *spec;
		if (domain_spec_format(spec, text, sizeof(text)) < 0)
			snprintf(text, sizeof(text), "%s", spec->host);
		f->text = strdup(text);
	} else if (section == DECISIONS_FS) {
		f->text = strdup(path_glob);
		f->e.fs_path = f->text ? strdup(path_glob) : NULL;
		if (!f->e.fs_path)
			return -ENOMEM;
	} else {
		f->text = strdup(path_glob ? path_glob : "");
		f->e.path_glob = path_glob ? strdup(path_glob) : NULL;
		f->command = command ? strdup(command) : NULL;
		f->e.command = f->command;
		f->argv0 = argv0 ? strdup(argv0) : NULL;
		f->e.argv0 = f->argv0;
	}
	if (!f->file || !f->where || !f->text ||
	    (section == DECISIONS_EXEC && path_glob && !f->e.path_glob) ||
	    (command && !f->command) || (argv0 && !f->argv0))
		return -ENOMEM;
	make_id(f);
	l->n++;
	return 0;
}

/* The entries of one decisions file FILE (absent: none). */
static int read_file(struct found_list *l, const char *file, const char *where,
                     struct cl_error *err)
{
	_cleanup_free_ char *data = NULL;
	_cleanup_(config_freep) struct config *cfg = NULL;
	size_t len = 0;
	int r = config_file_read(file, &data, &len, err);
	struct config_source src = {.name = file, .data = data, .len = len, .present = r > 0};

	if (r <= 0)
		return r;
	r = config_parse_file(CONFIG_FILE_DECISIONS, CONFIG_LAYER_GLOBAL_DECISIONS, &src, NULL,
	                      &cfg, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < cfg->proxy.allow.n && r >= 0; i++)
		r = push(l, file, where, DECISIONS_PROXY, DECISIONS_ALLOW,
		         &cfg->proxy.allow.items[i].spec, NULL, NULL, NULL);
	for (size_t i = 0; i < cfg->proxy.deny.n && r >= 0; i++)
		r = push(l, file, where, DECISIONS_PROXY, DECISIONS_DENY,
		         &cfg->proxy.deny.items[i].spec, NULL, NULL, NULL);
	for (size_t i = 0; i < cfg->exec.allow.n && r >= 0; i++)
		r = push(l, file, where, DECISIONS_EXEC, DECISIONS_ALLOW, NULL,
		         cfg->exec.allow.items[i].path_glob,
		         cfg->exec.allow.items[i].command.source, cfg->exec.allow.items[i].argv0);
	for (size_t i = 0; i < cfg->exec.deny.n && r >= 0; i++)
		r = push(l, file, where, DECISIONS_EXEC, DECISIONS_DENY, NULL,
		         cfg->exec.deny.items[i].path_glob, cfg->exec.deny.items[i].command.source,
		         cfg->exec.deny.items[i].argv0);
	for (size_t i = 0; i < cfg->fs.allow.n && r >= 0; i++)
		r = push(l, file, where, DECISIONS_FS, DECISIONS_ALLOW, NULL,
		         cfg->fs.allow.items[i].pattern, NULL, NULL);
	return r < 0 ? cl_error_set(err, r, "out of memory") : 0;
}

/* Every decisions file of DIR: global, then PROJECT's or every project's. */
static int read_all(struct found_list *l, const char *dir, const char *project,
                    struct cl_error *err)
{
	_cleanup_free_ char *global = NULL, *projects = NULL;
	const char *name = "decisions";
	DIR *d;
	int r, n = 0;

	r = config_files_decisions_dir(dir, &name, err);
	if (r < 0)
		return r;
	if (asprintf(&global, "%s/%s/global.yaml", dir, name) < 0 ||
	    asprintf(&projects, "%s/%s/projects", dir, name) < 0)
		return cl_error_set(err, -ENOMEM, "out of memory");
	r = read_file(l, global, "global", err);
	if (r < 0)
		return r;
	d = opendir(projects);
	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d));) {
		size_t len = strlen(e->d_name);
		_cleanup_free_ char *p = NULL, *file = NULL, *where = NULL;

		if (len <= 5 || strcmp(e->d_name + len - 5, ".yaml") != 0 || ++n > MAX_FILES)
			continue;
		p = strndup(e->d_name, len - 5);
		if (!p || config_project_name_check(p, NULL) < 0 || (project && strcmp(p, project)))
			continue;
		if (asprintf(&file, "%s/%s", projects, e->d_name) < 0 ||
		    asprintf(&where, "project %s", p) < 0) {
			file = where = NULL;
			r = cl_error_set(err, -ENOMEM, "out of memory");
			break;
		}
		r = read_file(l, file, where, err);
		if (r < 0)
			break;
	}
	closedir(d);
	return r < 0 ? r : 0;
}

static void print_found(const struct found *f)
{
	printf("%s  %-*s  %-5s  %-6s  ", f->id, 20, f->where,
	       f->e.list == DECISIONS_ALLOW ? "allow" : "deny", section_name(f->e.section));
	term_escape_put(stdout, f->text, 300);
	if (f->command) {
		fputs("  command ", stdout);
		term_escape_put(stdout, f->command, 300);
	}
	if (f->argv0) {
		fputs("  as ", stdout);
		term_escape_put(stdout, f->argv0, 100);
	}
	putchar('\n');
}

int cli_decisions(int argc, char **argv)
{
	static const struct option longopts[] = {
	        {"config-dir", required_argument, NULL, 'c'},
	        {"project", required_argument, NULL, 'p'},
	        {"help", no_argument, NULL, 'h'},
	        {0},
	};
	const char *config_dir = NULL, *project = NULL, *cmd;
	_cleanup_free_ char *dir = NULL;
	struct found_list l = {0};
	struct cl_error err = {""};
	int c, r, ret = 0;

	if (argc < 2 || (strcmp(argv[1], "list") && strcmp(argv[1], "rm"))) {
		if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
			usage(stdout);
			return 0;
		}
		usage(stderr);
		return EXIT_USAGE;
	}
	cmd = argv[1];
	argc--;
	argv++;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config_dir = optarg;
			break;
		case 'p':
			project = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind + (strcmp(cmd, "rm") == 0) != argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (project && config_project_name_check(project, &err) < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return EXIT_USAGE;
	}
	r = config_files_dir(config_dir, getenv("XDG_CONFIG_HOME"), getenv("HOME"), &dir, &err);
	if (r >= 0)
		r = read_all(&l, dir, project, &err);
	if (r < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		found_list_done(&l);
		return EXIT_CONFIG;
	}
	if (!strcmp(cmd, "list")) {
		if (l.n == 0)
			printf("no decisions kept\n");
		for (size_t i = 0; i < l.n; i++)
			print_found(&l.v[i]);
	} else {
		const char *what = argv[optind];
		size_t n = 0, which = 0;

		for (size_t i = 0; i < l.n; i++)
			if (!strcmp(l.v[i].id, what) || !strcmp(l.v[i].text, what)) {
				n++;
				which = i;
			}
		if (n != 1) {
			fprintf(stderr, PROG ": %s\n",
			        n ? "that names several decisions; remove one by its ID:"
			          : "no such decision (see `decisions list`)");
			for (size_t i = 0; n && i < l.n; i++)
				if (!strcmp(l.v[i].id, what) || !strcmp(l.v[i].text, what))
					print_found(&l.v[i]);
			ret = EXIT_NONE;
		} else {
			r = decisions_remove(l.v[which].file, &l.v[which].e, &err);
			if (r < 0) {
				fprintf(stderr, PROG ": %s\n", err.msg);
				ret = EXIT_CONFIG;
			} else if (r == 0) {
				fprintf(stderr, PROG ": already gone\n");
				ret = EXIT_NONE;
			} else {
				printf("removed ");
				print_found(&l.v[which]);
			}
		}
	}
	found_list_done(&l);
	return ret;
}
