#include "base/utf8.h"

size_t cl_utf8_decode(const char *str, uint32_t *ret_cp)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	uint32_t cp;
	size_t n;

	if (c < 0x80) {
		cp = c;
		n = 1;
		goto done;
	}
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	/* The second byte's range excludes overlongs (E0, F0), surrogates (ED) and > U+10FFFF (F4).
	 */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
done:
	if (ret_cp)
		*ret_cp = cp;
	return n;
}
