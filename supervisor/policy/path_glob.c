#include "supervisor/policy/path_glob.h"

#include <errno.h>
#include <fnmatch.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A path of PATH_MAX bytes has at most this many components. */
#define PATH_MAX_COMPS 2049

/* A component of a glob or a path: [p, p + len). */
struct comp {
	const char *p;
	size_t len;
};

static bool is_starstar(struct comp c)
{
	return c.len == 2 && c.p[0] == '*' && c.p[1] == '*';
}

/* The next component of *S (which points at a '/' or the end); false at the end. */
static bool next_comp(const char **s, struct comp *ret)
{
	const char *p = *s, *end;

	if (*p != '/')
		return false;
	p++;
	end = strchrnul(p, '/');
	*ret = (struct comp){p, (size_t)(end - p)};
	*s = end;
	return true;
}

int path_glob_check(const char *glob, const char **why)
{
	unsigned n = 0;

	for (const char *s = glob; (s = strstr(s, "**")); s += 2) {
		bool starts = s == glob || s[-1] == '/';
		bool ends = s[2] == '\0' || s[2] == '/';

		/* "\**" is a literal star and a star: not this case, but rare enough to refuse
		 * too, and "***" is surely a mistake. */
		if (!starts || !ends) {
			*why = "\"**\" must be a whole path component (\"/a/**/b\", \"/a/**\"); "
			       "'*' alone never crosses '/'";
			return -EINVAL;
		}
		if (++n > PATH_GLOB_MAX_STARSTAR) {
			*why = "more than 8 \"**\" in one glob";
			return -EINVAL;
		}
	}
	return 0;
}

/* One component: fnmatch on copies bounded by the component (a '/' never inside). */
static bool comp_match(struct comp g, struct comp p)
{
	char gb[4097], pb[4097];

	if (g.len >= sizeof(gb) || p.len >= sizeof(pb))
		return false;
	memcpy(gb, g.p, g.len);
	gb[g.len] = '\0';
	memcpy(pb, p.p, p.len);
	pb[p.len] = '\0';
	return fnmatch(gb, pb, FNM_PATHNAME) == 0;
}

bool path_glob_match(const char *glob, const char *path)
{
	/* The components of both, then the two-pointer wildcard match of string matching with
	 * components for characters: `**` is the star (zero or more), anything else matches one
	 * component. Only the last `**` seen is backtracked to, which is enough (and linear in
	 * the product of the lengths at worst). A trailing `**` needs at least one component:
	 * it is read as `*` followed by `**`. */
	struct comp g[PATH_MAX_COMPS], p[PATH_MAX_COMPS];
	size_t ng = 0, np = 0, gi = 0, pi = 0, star_g = SIZE_MAX, star_p = 0;
	const char *s;

	if (!strstr(glob, "**"))
		return fnmatch(glob, path, FNM_PATHNAME) == 0;
	if (glob[0] != '/' || path[0] != '/')
		return false;
	for (s = glob; ng < PATH_MAX_COMPS && next_comp(&s, &g[ng]); ng++)
		;
	if (*s)
		return false;
	if (ng > 0 && is_starstar(g[ng - 1])) {
		if (ng == PATH_MAX_COMPS)
			return false;
		g[ng - 1] = (struct comp){"*", 1};
		g[ng++] = (struct comp){"**", 2};
	}
	for (s = path; np < PATH_MAX_COMPS && next_comp(&s, &p[np]); np++)
		;
	if (*s)
		return false;

	while (pi < np) {
		if (gi < ng && is_starstar(g[gi])) {
			star_g = gi++;
			star_p = pi;
		} else if (gi < ng && comp_match(g[gi], p[pi])) {
			gi++;
			pi++;
		} else if (star_g != SIZE_MAX) {
			gi = star_g + 1;
			pi = ++star_p;
		} else {
			return false;
		}
	}
	while (gi < ng && is_starstar(g[gi]))
		gi++;
	return gi == ng;
}
