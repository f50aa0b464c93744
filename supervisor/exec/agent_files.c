#include "supervisor/exec/agent_files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"

/* execvp's search path when PATH is unset (glibc's). */
#define DEFAULT_PATH "/bin:/usr/bin"

char *agent_files_package_of(const char *real)
{
	const char *nm = strstr(real, "/node_modules/");
	const char *name, *end;

	if (!nm)
		return NULL;
	name = nm + strlen("/node_modules/");
	end = strchr(name, '/');
	if (!end || end == name || name[0] == '.')
		return NULL;
	if (name[0] == '@') { /* @scope/name */
		const char *n2 = end + 1;

		end = strchr(n2, '/');
		if (!end || end == n2 || n2[0] == '.')
			return NULL;
	}
	return strndup(real, (size_t)(end - real));
}

char *agent_files_interpreter_of(const char *line, int *ret_search)
{
	const char *p = line, *word;
	size_t len;

	*ret_search = 0;
	if (strncmp(p, "#!", 2) != 0)
		return NULL;
	p += 2;
	p += strspn(p, " \t");
	len = strcspn(p, " \t");
	if (len == 0 || p[0] != '/')
		return NULL;
	/* `env`: the program is its first word that is not an option (-S, -i, -u NAME are what
	 * scripts use; a NAME=VALUE is an assignment). */
	if (len >= 4 && strncmp(p + len - 4, "/env", 4) == 0) {
		word = p + len;
		for (;;) {
			word += strspn(word, " \t");
			len = strcspn(word, " \t");
			if (len == 0)
				return NULL;
			if (word[0] == '-' && len == 2 && word[1] == 'u') {
				word += len;
				word += strspn(word, " \t");
				word += strcspn(word, " \t");
				continue;
			}
			if (word[0] == '-' || memchr(word, '=', len)) {
				word += len;
				continue;
			}
			break;
		}
		*ret_search =
		        strchr(word, '/') == NULL || (size_t)(strchr(word, '/') - word) >= len;
		return strndup(word, len);
	}
	return strndup(p, len);
}

int agent_files_worktree_ok(const char *real, const char *home)
{
	static const char *const system[] = {"/usr",   "/etc",   "/bin",    "/sbin",    "/lib",
	                                     "/lib32", "/lib64", "/libx32", "/boot",    "/proc",
	                                     "/sys",   "/dev",   "/run",    "/var/lib", "/root/.."};

	if (real[0] != '/' || strcmp(real, "/") == 0)
		return 0;
	if (home && strcmp(real, home) == 0)
		return 0;
	for (size_t i = 0; i < sizeof(system) / sizeof(system[0]); i++) {
		size_t len = strlen(system[i]);

		if (strncmp(real, system[i], len) == 0 && (real[len] == '\0' || real[len] == '/'))
			return 0;
	}
	return 1;
}

/* NAME through SEARCH as execvp looks it up: the first executable regular file. */
static char *search_path(const char *name, const char *search)
{
	const char *p = search ? search : DEFAULT_PATH;

	if (strchr(name, '/'))
		return realpath(name, NULL);
	while (*p) {
		size_t len = strcspn(p, ":");
		_cleanup_free_ char *candidate = NULL;
		struct stat st;

		/* An empty entry is the current directory. */
		if (asprintf(&candidate, "%.*s%s%s", (int)len, len ? p : ".", "/", name) < 0)
			return NULL;
		if (stat(candidate, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(candidate, X_OK) == 0)
			return realpath(candidate, NULL);
		p += len;
		if (*p == ':')
			p++;
	}
	return NULL;
}

static int add(struct agent_files *f, char *path)
{
	if (!path)
		return 0;
	for (size_t i = 0; i < f->n; i++)
		if (strcmp(f->paths[i], path) == 0) {
			free(path);
			return 0;
		}
	if (f->n == AGENT_FILES_MAX) {
		free(path);
		return 0;
	}
	f->paths[f->n++] = path;
	return 0;
}

/* The #! line of the file REAL, or "" when it has none. */
static void first_line(const char *real, char *buf, size_t size)
{
	_cleanup_close_ int fd = open(real, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	ssize_t n;

	buf[0] = '\0';
	if (fd < 0)
		return;
	n = read(fd, buf, size - 1);
	if (n <= 0) {
		buf[0] = '\0';
		return;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

int agent_files_find(const char *argv0, const char *path_env, struct agent_files *ret)
{
	struct agent_files f = {0};
	_cleanup_free_ char *real = search_path(argv0, path_env);
	char line[256];
	char *interp, *package;
	int search = 0;

	*ret = f;
	if (!real)
		return errno == ENOMEM ? -ENOMEM : 0;
	package = agent_files_package_of(real);
	add(&f, package ? package : strdup(real));
	first_line(real, line, sizeof(line));
	interp = agent_files_interpreter_of(line, &search);
	if (interp) {
		add(&f, search ? search_path(interp, path_env) : realpath(interp, NULL));
		free(interp);
	}
	*ret = f;
	return 0;
}

void agent_files_done(struct agent_files *files)
{
	for (size_t i = 0; i < files->n; i++)
		free(files->paths[i]);
	files->n = 0;
}
