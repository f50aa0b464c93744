/* libFuzzer target: the terminal stream parsers (vt_parse.h) on agent output and typed input.
 *
 * The input is fed in pieces cut at the bytes of the first byte's value, as reads would cut
 * it. Checks: ground_after agrees with feeding byte by byte; the prompt sequences fit the size
 * they report and never contain the agent's bytes; keys never outnumber what was typed. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/tty/vt_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vt_output vt;
	struct vt_input in;
	char keys[4096], enter[512], leave[512];
	size_t cut, at = 1;

	if (size < 1 || size > sizeof(keys))
		return 0;
	cut = data[0] % 16 + 1;
	vt_output_init(&vt);
	vt_input_init(&in);
	while (at < size) {
		size_t n = size - at < cut ? size - at : cut;
		size_t ground = vt_output_ground_after(&vt, data + at, n), want = SIZE_MAX;
		struct vt_output one = vt;

		for (size_t i = 0; i <= n; i++) {
			if (want == SIZE_MAX && vt_output_at_ground(&one))
				want = i;
			if (i < n)
				vt_output_feed(&one, data + at + i, 1);
		}
		if (ground != want)
			abort(); /* the first boundary, as feeding byte by byte finds it */
		vt_output_feed(&vt, data + at, n);
		if (memcmp(&one, &vt, sizeof(vt)) != 0)
			abort(); /* byte by byte and at once must agree */
		if (vt_input_keys(&in, data + at, n, keys) > n)
			abort();
		at += n;
	}
	for (int style = VT_PROMPT_SCREEN; style <= VT_PROMPT_INLINE; style++) {
		size_t a = vt_output_prompt_enter(&vt, style, enter, sizeof(enter));
		size_t b = vt_output_prompt_leave(&vt, style, leave, sizeof(leave));

		if (a >= sizeof(enter) || b >= sizeof(leave) || strlen(enter) != a ||
		    strlen(leave) != b)
			abort();
	}
	return 0;
}
