#include "supervisor/policy/config_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "supervisor/policy/yaml_doc.h"
#include "base/fd_read.h"

int config_files_dir(const char *config_dir, const char *xdg_config_home, const char *home,
                     char **ret_dir, struct cl_error *err)
{
	char *dir = NULL;
	int r;

	if (config_dir && *config_dir)
		r = asprintf(&dir, "%s", config_dir);
	else if (xdg_config_home && xdg_config_home[0] == '/')
		r = asprintf(&dir, "%s/cloister", xdg_config_home);
	else if (home && home[0] == '/')
		r = asprintf(&dir, "%s/.config/cloister", home);
	else
		return cl_error_set(err, -ENOENT,
		                    "cannot find the config directory: neither XDG_CONFIG_HOME nor "
		                    "HOME is set to an absolute path (use --config-dir)");
	if (r < 0)
		return cl_error_set(err, -ENOMEM, "out of memory");
	*ret_dir = dir;
	return 0;
}

void config_files_free(struct config_files *files)
{
	if (!files)
		return;
	for (size_t i = 0; i < ELEMENTSOF(files->paths); i++) {
		free(files->paths[i]);
		free(files->data[i]);
	}
	free(files);
}

int config_file_read(const char *path, char **ret_data, size_t *ret_len, struct cl_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	struct stat st;
	int r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		return cl_error_set(err, -errno, "%s: cannot open: %m", path);
	}
	if (fstat(fd, &st) < 0)
		return cl_error_set(err, -errno, "%s: cannot stat: %m", path);
	/* A FIFO or device would block or never end. */
	if (!S_ISREG(st.st_mode))
		return cl_error_set(err, -EINVAL, "%s: not a regular file", path);
	/* Whoever can write the policy decides what the agent may do. */
	if (st.st_mode & S_IWOTH)
		return cl_error_set(err, -EPERM,
		                    "%s: writable by every user, so anyone could change the "
		                    "policy (chmod o-w it)",
		                    path);
	if (st.st_size > YDOC_MAX_BYTES)
		return cl_error_set(err, -EFBIG, "%s: file is larger than %d bytes", path,
		                    YDOC_MAX_BYTES);
	/* Bounded again: the file may have grown since fstat. */
	r = fd_read_all(fd, YDOC_MAX_BYTES, &buf, &len);
	if (r == -EFBIG)
		return cl_error_set(err, r, "%s: file is larger than %d bytes", path,
		                    YDOC_MAX_BYTES);
	if (r == -ENOMEM)
		return cl_error_set(err, r, "out of memory");
	if (r < 0)
		return cl_error_set(err, r, "%s: cannot read: %s", path, strerror(-r));
	*ret_data = TAKE_PTR(buf);
	*ret_len = len;
	return 1;
}

int config_files_read(const char *dir, const char *project, struct config_files **ret_files,
                      struct cl_error *err)
{
	_cleanup_(config_files_freep) struct config_files *files = calloc(1, sizeof(*files));
	struct config_source *sources[4];
	const char *decisions;
	int r;

	if (!files)
		return cl_error_set(err, -ENOMEM, "out of memory");
	if (project) {
		r = config_project_name_check(project, err);
		if (r < 0)
			return r;
	}
	sources[0] = &files->sources.global;
	sources[1] = &files->sources.project;
	sources[2] = &files->sources.global_decisions;
	sources[3] = &files->sources.project_decisions;
	r = config_files_decisions_dir(dir, &decisions, err);
	if (r < 0)
		return r;
	files->from_approvals = r > 0;
	if (asprintf(&files->paths[0], "%s/config.yaml", dir) < 0 ||
	    asprintf(&files->paths[2], "%s/%s/global.yaml", dir, decisions) < 0 ||
	    (project &&
	     (asprintf(&files->paths[1], "%s/projects/%s.yaml", dir, project) < 0 ||
	      asprintf(&files->paths[3], "%s/%s/projects/%s.yaml", dir, decisions, project) < 0))) {
		return cl_error_set(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < ELEMENTSOF(sources); i++) {
		size_t len = 0;

		if (!files->paths[i])
			continue;
		sources[i]->name = files->paths[i];
		r = config_file_read(files->paths[i], &files->data[i], &len, err);
		if (r < 0)
			return r;
		sources[i]->present = r > 0;
		sources[i]->data = files->data[i];
		sources[i]->len = len;
	}
	*ret_files = TAKE_PTR(files);
	return 0;
}

int config_files_decisions_dir(const char *dir, const char **ret_name, struct cl_error *err)
{
	_cleanup_free_ char *decisions = NULL, *approvals = NULL;
	struct stat st;

	if (asprintf(&decisions, "%s/decisions", dir) < 0 ||
	    asprintf(&approvals, "%s/approvals", dir) < 0)
		return cl_error_set(err, -ENOMEM, "out of memory");
	*ret_name = "decisions";
	if (lstat(decisions, &st) == 0 || errno != ENOENT)
		return 0;
	if (stat(approvals, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0;
	*ret_name = "approvals";
	return 1;
}

int config_load_dir(const char *dir, const char *project, const struct config_load_options *options,
                    struct config **ret_config, struct cl_error *err)
{
	/* Once per process: serve loads a config for every project it meets. */
	static bool said_approvals;
	_cleanup_(config_files_freep) struct config_files *files = NULL;
	_cleanup_(config_freep) struct config *cfg = NULL;
	int r = config_files_read(dir, project, &files, err);

	if (r < 0)
		return r;
	r = config_load(&files->sources, options, &cfg, err);
	if (r < 0)
		return r;
	if (files->from_approvals && !said_approvals) {
		_cleanup_free_ char *note = NULL;

		if (asprintf(&note,
		             "%s/approvals: read in place of decisions/, which does not exist "
		             "(approvals/ is Cloister's older name for it); it is left as it is, "
		             "and "
		             "the first decision saved copies it to decisions/",
		             dir) < 0 ||
		    config_add_warning(cfg, note) < 0)
			return cl_error_set(err, -ENOMEM, "out of memory");
		said_approvals = true;
	}
	*ret_config = TAKE_PTR(cfg);
	return 0;
}

char *config_files_home(void)
{
	const char *home = getenv("HOME");

	if (!home || home[0] != '/')
		return NULL;
	return realpath(home, NULL);
}

/* The directories of the layout above: the only ones walked. */
static bool layout_dir(const char *name)
{
	return !strcmp(name, "projects") || !strcmp(name, "decisions") ||
	       !strcmp(name, "approvals");
}

/* A name the supervisor reads or locks: a directory of the layout, a YAML file, a lock. */
static bool layout_name(const char *name)
{
	size_t n = strlen(name);

	return layout_dir(name) || (n > 5 && !strcmp(name + n - 5, ".yaml")) ||
	       (n > 5 && !strcmp(name + n - 5, ".lock"));
}

static int links_below(const char *dir, unsigned depth, int (*fn)(const char *path, void *userdata),
                       void *userdata)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int r = 0;

	if (!d)
		return 0;
	while (r >= 0 && (de = readdir(d))) {
		_cleanup_free_ char *path = NULL;
		struct stat st;

		/* Only what the layout holds: a link to somewhere big (~, /) next to config.yaml
		 * is not walked, nor protected. */
		if (!layout_name(de->d_name))
			continue;
		if (asprintf(&path, "%s/%s", dir, de->d_name) < 0) {
			path = NULL;
			r = -ENOMEM;
			break;
		}
		if (lstat(path, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode))
			r = fn(path, userdata);
		if (r >= 0 && depth > 1 && layout_dir(de->d_name) && stat(path, &st) == 0 &&
		    S_ISDIR(st.st_mode))
			r = links_below(path, depth - 1, fn, userdata);
	}
	closedir(d);
	return r;
}

int config_files_links(const char *dir, int (*fn)(const char *path, void *userdata), void *userdata)
{
	/* DIR/decisions/projects/<project>.yaml: three levels. */
	return links_below(dir, 3, fn, userdata);
}
