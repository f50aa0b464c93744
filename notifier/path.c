#include "notifier/path.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

/* Append the components of s to out (which holds an absolute path of length *len). */
static int append_components(char *out, size_t *len, const char *s)
{
	while (*s) {
		const char *end;
		size_t n;

		while (*s == '/')
			s++;
		if (!*s)
			break;
		end = strchrnul(s, '/');
		n = (size_t)(end - s);
		if (n == 1 && s[0] == '.') {
			/* nothing */
		} else if (n == 2 && s[0] == '.' && s[1] == '.') {
			while (*len > 1 && out[*len - 1] != '/')
				(*len)--;
			if (*len > 1)
				(*len)--; /* the separator, unless it is the root itself */
		} else {
			bool need_sep = *len > 1;

			if (*len + need_sep + n >= PATH_MAX)
				return -ENAMETOOLONG;
			if (need_sep)
				out[(*len)++] = '/';
			memcpy(out + *len, s, n);
			*len += n;
		}
		out[*len] = '\0';
		s = end;
	}
	return 0;
}

int path_join(const char *base, const char *rel, char **ret_path)
{
	_cleanup_free_ char *out = NULL;
	size_t len = 1, rl;
	int r;

	if (!rel || !*rel)
		return -EINVAL;
	if (rel[0] != '/' && (!base || base[0] != '/'))
		return -EINVAL;
	out = malloc(PATH_MAX);
	if (!out)
		return -ENOMEM;
	out[0] = '/';
	out[1] = '\0';
	if (rel[0] != '/') {
		r = append_components(out, &len, base);
		if (r < 0)
			return r;
	}
	r = append_components(out, &len, rel);
	if (r < 0)
		return r;
	rl = strlen(rel);
	if (rel[rl - 1] == '/' && len > 1) {
		if (len + 1 >= PATH_MAX)
			return -ENAMETOOLONG;
		out[len++] = '/';
		out[len] = '\0';
	}
	*ret_path = TAKE_PTR(out);
	return 0;
}
