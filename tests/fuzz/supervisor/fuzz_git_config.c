/* libFuzzer target: git's config syntax (git_config.h) from a buffer, each variable classified
 * and each command's words split — what fs_confine reads from included files of the project,
 * which an earlier agent may have written. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "supervisor/sandbox/git_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_word(const char *word, void *userdata)
{
	size_t *n = userdata;

	*n += strlen(word);
	return 0;
}

static int on_var(const char *section, const char *sub, const char *key, const char *value,
                  void *userdata)
{
	if (git_config_named(section, sub, key, value) == GIT_NAMED_PROGRAM)
		return git_command_words(value, on_word, userdata);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n = 0;

	(void)git_config_parse((const char *)data, size, on_var, &n);
	return 0;
}
