#include "supervisor/policy/path_boundary.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "protocol/json_strict.h"

int path_normalize(const char *path, struct cl_error *err, char **ret_path)
{
	_cleanup_free_ char *out = NULL;
	size_t len, o = 0;
	const char *p;

	if (!path || path[0] != '/')
		return cl_error_set(err, -EINVAL, "expected an absolute path");
	len = strnlen(path, PATH_MAX);
	if (len >= PATH_MAX)
		return cl_error_set(err, -ENAMETOOLONG, "path longer than %d bytes", PATH_MAX - 1);
	out = malloc(len + 2);
	if (!out)
		return cl_error_set(err, -ENOMEM, "out of memory");

	/* out always starts with "/" and holds no trailing "/" except as the root. */
	out[o++] = '/';
	for (p = path; *p;) {
		const char *start;
		size_t n;

		while (*p == '/')
			p++;
		start = p;
		while (*p && *p != '/')
			p++;
		n = (size_t)(p - start);
		if (n == 0 || (n == 1 && start[0] == '.'))
			continue;
		if (n == 2 && start[0] == '.' && start[1] == '.') {
			/* Drop the last component; at the root, stay there. */
			while (o > 1 && out[o - 1] != '/')
				o--;
			if (o > 1)
				o--;
			continue;
		}
		if (o > 1)
			out[o++] = '/';
		memcpy(out + o, start, n);
		o += n;
	}
	out[o] = '\0';
	*ret_path = TAKE_PTR(out);
	return 0;
}

int path_boundary_check(const char *root, const char *path, struct cl_error *err,
                        char **ret_relative)
{
	_cleanup_free_ char *nroot = NULL, *npath = NULL;
	char shown[2][128];
	size_t rlen;
	char *rel;
	int r;

	r = path_normalize(root, err, &nroot);
	if (r < 0) {
		cl_error_prefix(err, "worktree");
		return r;
	}
	r = path_normalize(path, err, &npath);
	if (r < 0) {
		cl_error_prefix(err, "cwd");
		return r;
	}
	rlen = strlen(nroot);
	if (strcmp(nroot, "/") == 0) {
		rel = strdup(npath[1] ? npath + 1 : ".");
	} else if (strncmp(npath, nroot, rlen) == 0 &&
	           (npath[rlen] == '\0' || npath[rlen] == '/')) {
		rel = strdup(npath[rlen] ? npath + rlen + 1 : ".");
	} else {
		return cl_error_set(
		        err, -EPERM, "cwd %s is outside the worktree %s",
		        cl_json_printable(npath, strlen(npath), shown[0], sizeof(shown[0])),
		        cl_json_printable(nroot, strlen(nroot), shown[1], sizeof(shown[1])));
	}
	if (!rel)
		return cl_error_set(err, -ENOMEM, "out of memory");
	*ret_relative = rel;
	return 0;
}
