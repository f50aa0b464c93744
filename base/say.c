/* One line for a person on stderr; see say.h. */
#include "base/say.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/cleanup.h"
#include "base/term_escape.h"

static say_sink_fn sink;
static void *sink_userdata;
static bool quiet;

void say_set_quiet(bool q)
{
	quiet = q;
}

bool say_quiet(void)
{
	return quiet;
}

void say_set_sink(say_sink_fn fn, void *userdata)
{
	sink = fn;
	sink_userdata = userdata;
}

static void say_vline(const char *fmt, va_list ap)
{
	_cleanup_free_ char *raw = NULL, *line = NULL, *whole = NULL;

	if (quiet)
		return;
	/* The arguments are often the agent's (a file name, an argv): escaped as a whole, so
	 * nothing in them commands the terminal. Our own text has no control characters. */
	if (vasprintf(&raw, fmt, ap) < 0)
		return;
	line = term_escape_dup(raw);
	if (!line)
		return;
	if (sink) {
		if (asprintf(&whole, "cloister: %s", line) >= 0)
			sink(sink_userdata, whole);
		return;
	}
	/* One write per line, so lines of the agent and ours do not interleave mid-line. */
	flockfile(stderr);
	fputs("cloister: ", stderr);
	fputs(line, stderr);
	fputc('\n', stderr);
	funlockfile(stderr);
}

void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say_vline(fmt, ap);
	va_end(ap);
}
