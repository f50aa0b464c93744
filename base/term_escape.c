/* Text made safe to print on a terminal; see term_escape.h. */
#include "base/term_escape.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/utf8.h"

/* Characters that change how the rest of a line is displayed, or are commands to terminals
 * that obey C1 controls in UTF-8. */
static bool is_display_control(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 ||
	       cp == 0x2029 || cp == 0xfeff;
}

void term_escape_put(FILE *f, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t used = 0;

	while (*p) {
		uint32_t cp;
		size_t n = cl_utf8_decode((const char *)p, &cp);

		if (used >= max) {
			fputs("\xe2\x80\xa6", f);
			return;
		}
		if (n == 0) {
			fprintf(f, "\\x%02x", *p);
			n = 1;
		} else if (cp == '\n') {
			fputs("\\n", f);
		} else if (cp == '\t') {
			fputs("\\t", f);
		} else if (cp < 0x20 || cp == 0x7f) {
			fprintf(f, "\\x%02x", (unsigned)cp);
		} else if (is_display_control(cp)) {
			fprintf(f, "\\u{%04" PRIx32 "}", cp);
		} else {
			fwrite(p, 1, n, f);
		}
		p += n;
		used += n;
	}
}

char *term_escape_dup(const char *s)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	if (!f)
		return NULL;
	term_escape_put(f, s, SIZE_MAX);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

char *term_escape_json(const char *json)
{
	const unsigned char *p = (const unsigned char *)json;
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	if (!f)
		return NULL;
	while (*p) {
		uint32_t cp;
		size_t n = cl_utf8_decode((const char *)p, &cp);

		if (n == 0) {
			fputs("\\ufffd", f);
			n = 1;
		} else if ((cp < 0x20 && cp != '\n' && cp != '\t' && cp != '\r') || cp == 0x7f ||
		           is_display_control(cp)) {
			/* Tab, newline and return only occur between tokens: strings have them
			 * escaped already, and there they are whitespace JSON allows. */
			fprintf(f, "\\u%04" PRIx32, cp);
		} else {
			fwrite(p, 1, n, f);
		}
		p += n;
	}
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}
