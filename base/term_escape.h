/* Text made safe to print on a terminal: what the agent controls (argv, paths, domain names,
 * error strings that quote them) reaches a person's terminal only through here.
 *
 * Control characters (C0 and DEL), C1 controls (U+0080-U+009F, which terminals may obey as
 * CSI, OSC…), the characters that reorder or hide the rest of a line (bidirectional overrides
 * and isolates, line and paragraph separators, the byte-order mark) and invalid UTF-8 become
 * visible escapes: "\x1b", "\n", "\t", "\u{202e}", "\xff". A hostile string can then neither
 * command the terminal (clear the screen, move the cursor, retitle the window, fake a prompt)
 * nor hide or reorder part of a line. Everything else, valid UTF-8 included, is shown as is.
 *
 * One function for every edge that prints for a person: say() lines, the terminal prompt, the
 * CLI client. Pure: no fds, it writes into a FILE the caller owns (open_memstream). */
#ifndef CLOISTER_TERM_ESCAPE_H
#define CLOISTER_TERM_ESCAPE_H

#include <stdio.h>
#include <stddef.h>

/* Write S (NUL-terminated; NULL is "") to F escaped. At most MAX bytes of S are shown; when
 * S is longer, "…" follows what was shown. */
void term_escape_put(FILE *f, const char *s, size_t max);

/* A malloc'd escaped copy of S (NULL is ""), or NULL when out of memory. */
char *term_escape_dup(const char *s);

/* JSON text (a serializer's output, valid UTF-8 or not) with the same meaning but printable
 * as is: DEL, C1 controls and the line-reordering characters become \uXXXX escapes and
 * invalid UTF-8 becomes \ufffd. Control characters below 0x20 are already escaped in strings by
 * any JSON serializer; others than the whitespace between tokens (tab, newline, return) are
 * escaped here too should one slip through. malloc'd; NULL when out of memory. */
char *term_escape_json(const char *json);

#endif
