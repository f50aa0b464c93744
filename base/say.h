/* What the supervisor tells a person: one line on stderr, "cloister: …", which the agent
 * shares, so every front end keeps it to what a person must know and stays silent with -q. */
#ifndef CLOISTER_SAY_H
#define CLOISTER_SAY_H

#include <stdarg.h>
#include <stdbool.h>

/* Where lines go instead of stderr (the terminal relay, while it owns the terminal stderr
 * is on): LINE is the whole line, escaped, without its line end. NULL: stderr again. */
typedef void (*say_sink_fn)(void *userdata, const char *line);
void say_set_sink(say_sink_fn fn, void *userdata);

/* Print "cloister: " FMT "\n" on stderr (or to the sink) unless QUIET. The formatted text is
 * escaped (term_escape.h): control characters in the arguments show as "\x1b", "\n"… */
void say_line(bool quiet, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void say_vline(bool quiet, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

#endif
