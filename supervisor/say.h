/* What the supervisor tells a person: one line on stderr, "cloister: …", which the agent
 * shares, so every front end keeps it to what a person must know and stays silent with -q. */
#ifndef CLOISTER_SAY_H
#define CLOISTER_SAY_H

#include <stdarg.h>
#include <stdbool.h>

/* Print "cloister: " FMT "\n" on stderr unless QUIET. The formatted text is escaped
 * (term_escape.h): control characters in the arguments show as "\x1b", "\n"… */
void say_line(bool quiet, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void say_vline(bool quiet, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

#endif
