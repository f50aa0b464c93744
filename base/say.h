/* What the supervisor tells a person: one line on stderr, "cloister: …", which the agent
 * shares, so every front end keeps it to what a person must know and stays silent with -q.
 *
 * The process has one such voice: -q (say_set_quiet) and the terminal relay (say_set_sink)
 * apply to every module at once. Errors before the supervisor runs (usage, config) are
 * printed by the command's front end as PROG ": …" instead. */
#ifndef CLOISTER_SAY_H
#define CLOISTER_SAY_H

#include <stdarg.h>
#include <stdbool.h>

/* The supervisor's name in usage and error messages. */
#define PROG "cloister-supervisor"

/* Where lines go instead of stderr (the terminal relay, while it owns the terminal stderr
 * is on): LINE is the whole line, escaped, without its line end. NULL: stderr again. */
typedef void (*say_sink_fn)(void *userdata, const char *line);
void say_set_sink(say_sink_fn fn, void *userdata);

/* -q: say() prints nothing from now on (false: it prints again). */
void say_set_quiet(bool quiet);
/* Whether -q is in effect (to say what a person must know even then). */
bool say_quiet(void);

/* Print "cloister: " FMT "\n" on stderr (or to the sink) unless quiet. The formatted text is
 * escaped (term_escape.h): control characters in the arguments show as "\x1b", "\n"… */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
