#include "notifier/shebang.h"

#include <errno.h>
#include <string.h>

/* Mirrors fs/binfmt_script.c; the helper names are the kernel's. */
static bool spacetab(char c)
{
	return c == ' ' || c == '\t';
}

static char *next_non_spacetab(char *first, const char *last)
{
	for (; first <= last; first++)
		if (!spacetab(*first))
			return first;
	return NULL;
}

static char *next_terminator(char *first, const char *last)
{
	for (; first <= last; first++)
		if (spacetab(*first) || !*first)
			return first;
	return NULL;
}

int shebang_parse(const void *data, size_t len, struct shebang *ret)
{
	char buf[SHEBANG_BUF_SIZE] = {0};
	char *buf_end, *i_end, *i_name, *i_sep, *i_arg = NULL;

	memcpy(buf, data, len < sizeof(buf) ? len : sizeof(buf));
	if (buf[0] != '#' || buf[1] != '!')
		return -ENOMSG;
	buf_end = buf + sizeof(buf) - 1;
	i_end = memchr(buf, '\n', sizeof(buf));
	if (!i_end) {
		i_end = next_non_spacetab(buf + 2, buf_end);
		if (!i_end)
			return -ENOEXEC; /* the whole buffer is spaces and tabs */
		/* No later space, tab or NUL: the interpreter name may be cut off. */
		if (!next_terminator(i_end, buf_end))
			return -ENOEXEC;
		i_end = buf_end;
	}
	while (i_end > buf + 2 && spacetab(i_end[-1]))
		i_end--;
	i_name = next_non_spacetab(buf + 2, i_end);
	if (!i_name || i_name == i_end)
		return -ENOEXEC;
	i_sep = next_terminator(i_name, i_end);
	if (i_sep && *i_sep != '\0')
		i_arg = next_non_spacetab(i_sep, i_end);
	*i_end = '\0';
	if (i_sep)
		*i_sep = '\0';
	if (!i_name[0])
		return -ENOEXEC;

	memset(ret, 0, sizeof(*ret));
	strncpy(ret->interp, i_name, sizeof(ret->interp) - 1);
	if (i_arg) { /* may be "" in one corner case; the kernel passes it on as is */
		strncpy(ret->arg, i_arg, sizeof(ret->arg) - 1);
		ret->has_arg = true;
	}
	return 0;
}
