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

/* env's options (GNU coreutils) before the program: how many words each takes after itself
 * (an "=VALUE" form takes none); -1 for one we do not know, which makes the line unjudgeable. */
static int env_option_args(const char *word, size_t len)
{
	static const struct {
		const char *name;
		int args;
	} longs[] = {{"--ignore-environment", 0},
	             {"--null", 0},
	             {"--debug", 0},
	             {"--unset", 1},
	             {"--chdir", 1},
	             {"--argv0", 1},
	             {"--split-string", 1},
	             {"--block-signal", 0},
	             {"--default-signal", 0},
	             {"--ignore-signal", 0},
	             {"--list-signal-handling", 0}};

	if (len >= 2 && word[1] == '-') {
		for (size_t i = 0; i < sizeof(longs) / sizeof(longs[0]); i++) {
			size_t n = strlen(longs[i].name);

			if (len == n && strncmp(word, longs[i].name, n) == 0)
				return longs[i].args;
			if (len > n && strncmp(word, longs[i].name, n) == 0 && word[n] == '=')
				return 0;
		}
		return -1;
	}
	/* Short options, possibly joined ("-iv"); one taking an argument ends the group and
	 * takes the rest of the word, or the next word when nothing is left. */
	for (size_t i = 1; i < len; i++) {
		if (strchr("i0v", word[i]))
			continue;
		if (strchr("uCaS", word[i]))
			return i + 1 == len ? 1 : 0;
		return -1;
	}
	return 0;
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
	/* `env`: the program is its first word that is neither an option (with its arguments:
	 * -C DIR and -u NAME take one, and -S's split string is read as more words, as env
	 * does) nor an assignment NAME=VALUE. An option we do not know judges nothing. */
	if (len >= 4 && strncmp(p + len - 4, "/env", 4) == 0) {
		word = p + len;
		for (;;) {
			int args;

			word += strspn(word, " \t");
			len = strcspn(word, " \t");
			if (len == 0)
				return NULL;
			if (word[0] == '-') {
				args = env_option_args(word, len);
				if (args < 0)
					return NULL;
				/* -S's string is the rest of the line, split into words again. */
				if (args == 1 && (word[len - 1] == 'S' ||
				                  strncmp(word, "--split-string", len) == 0))
					args = 0;
				word += len;
				while (args-- > 0) {
					word += strspn(word, " \t");
					if (!*word)
						return NULL;
					word += strcspn(word, " \t");
				}
				continue;
			}
			if (memchr(word, '=', len)) {
				word += len;
				continue;
			}
			break;
		}
		*ret_search = memchr(word, '/', len) == NULL;
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
	/* Neither the home directory nor any directory above it: it would hold the home's
	 * programs (~/.local/bin) and other users'. */
	if (home) {
		size_t len = strlen(real);

		if (strcmp(real, home) == 0 || (strncmp(home, real, len) == 0 && home[len] == '/'))
			return 0;
	}
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
		char *found = search ? search_path(interp, path_env) : realpath(interp, NULL);
		struct stat st;

		/* Only ever a program: a directory named there would allow all it holds. */
		if (found && (stat(found, &st) < 0 || !S_ISREG(st.st_mode))) {
			free(found);
			found = NULL;
		}
		add(&f, found);
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
