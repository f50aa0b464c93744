/* libFuzzer target: the notifier's parsers of bytes the agent controls.
 *
 * Byte 0 selects: 0 the "#!" line, 1 /proc/PID/status text, 2 path joining (the rest split at
 * the first NUL into base and path), 3 argv reading from a fuzzed address space (the rest is
 * the memory at 0x1000; pointers into it, out of it and across its end all occur). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "notifier/path.h"
#include "notifier/proc_status.h"
#include "notifier/remote_mem.h"
#include "notifier/shebang.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct image {
	const uint8_t *mem;
	size_t len;
};

#define IMAGE_BASE 0x1000

static ssize_t image_read(void *ctx, void *buf, size_t len, uint64_t addr)
{
	const struct image *im = ctx;

	if (addr < IMAGE_BASE || addr - IMAGE_BASE >= im->len)
		return -5;
	if (len > im->len - (addr - IMAGE_BASE))
		len = im->len - (addr - IMAGE_BASE);
	memcpy(buf, im->mem + (addr - IMAGE_BASE), len);
	return (ssize_t)len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 4) {
	case 0: {
		struct shebang sb;

		if (shebang_parse(data + 1, size - 1, &sb) == 0 &&
		    (strlen(sb.interp) >= SHEBANG_BUF_SIZE || strlen(sb.arg) >= SHEBANG_BUF_SIZE))
			abort();
		break;
	}
	case 1: {
		struct proc_status st;

		if (proc_status_parse((const char *)data + 1, size - 1, &st) == 0) {
			if (st.ngroups > PROC_STATUS_MAX_GROUPS)
				abort();
			(void)proc_status_may_exec(&st, 0755, 1, 1);
		}
		break;
	}
	case 2: {
		const char *nul = memchr(data + 1, 0, size - 1);
		char *base, *rel, *out = NULL;

		if (!nul)
			return 0;
		base = strndup((const char *)data + 1, (size_t)(nul - (const char *)data - 1));
		rel = strndup(nul + 1, (size_t)((const char *)data + size - nul - 1));
		if (base && rel && path_join(base, rel, &out) == 0) {
			/* Absolute, tidy, never above the root. */
			if (out[0] != '/' || strstr(out, "//") || strstr(out, "/./") ||
			    strstr(out, "/../") || strlen(out) >= 4096)
				abort();
			free(out);
		}
		free(base);
		free(rel);
		break;
	}
	case 3: {
		struct image im = {data + 1, size - 1};
		struct remote_mem *m = malloc(sizeof(*m));
		struct remote_argv a;
		uint64_t start = IMAGE_BASE;

		if (!m)
			return 0;
		remote_mem_init(m, image_read, &im);
		/* The first 8 bytes of the image say where argv starts. */
		if (im.len >= 8)
			memcpy(&start, im.mem, 8);
		if (remote_mem_read_argv(m, start, 64, 4096, &a) == 0) {
			if (a.argc > 64 || a.bytes > 4096 || a.argv[a.argc] != NULL)
				abort();
			remote_argv_done(&a);
		}
		free(m);
		break;
	}
	}
	return 0;
}
