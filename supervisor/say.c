/* One line for a person on stderr; see say.h. */
#include "supervisor/say.h"

#include <stdio.h>

void say_vline(bool quiet, const char *fmt, va_list ap)
{
	if (quiet)
		return;
	/* One write per line, so lines of the agent and ours do not interleave mid-line. */
	flockfile(stderr);
	fputs("cloister: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}

void say_line(bool quiet, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say_vline(quiet, fmt, ap);
	va_end(ap);
}
