/* libFuzzer target: the YAML config parser from a buffer, for each file kind.
 *
 * Byte 0 selects the file kind (bits 0-1: global, project, decisions) and lenient mode
 * (bit 2) and a home for "~/" paths (bit 3); the rest is the file. A parsed config is also
 * merged over the built-in default and run through the policy, so regex matching and the merge
 * see fuzzed rules too, and the fs section's patterns through fs_policy_check(). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/policy/config.h"
#include "supervisor/policy/fs_policy.h"
#include "supervisor/policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum config_file_kind kinds[] = {CONFIG_FILE_GLOBAL, CONFIG_FILE_PROJECT,
	                                              CONFIG_FILE_DECISIONS, CONFIG_FILE_GLOBAL};
	static const char *const argv[] = {"git", "status", "\xff", NULL};
	static const char *const multicall[] = {"git-clean", "a\nb", NULL};
	struct config_load_options options = {0};
	struct config_source source;
	struct config_sources sources;
	struct config *cfg = NULL;
	struct cl_error err;
	struct policy_result res;
	struct fs_result fs_res;
	const struct fs_vars vars = {.home = "/home/u", .worktree = "/home/u/proj"};

	if (size < 1)
		return 0;
	options.lenient = (data[0] & 4) != 0;
	/* "~/" in exec paths: with a home (one with glob characters to escape) or without. */
	options.home = (data[0] & 8) ? "/home/f*z[z]" : NULL;
	source = (struct config_source){
	        .name = "fuzz.yaml",
	        .data = (const char *)data + 1,
	        .len = size - 1,
	        .present = true,
	};
	if (config_parse_file(kinds[data[0] & 3], CONFIG_LAYER_GLOBAL, &source, &options, &cfg,
	                      &err) < 0) {
		/* Messages must always be terminated. */
		if (strlen(err.msg) >= sizeof(err.msg))
			abort();
		return 0;
	}
	config_free(cfg);
	cfg = NULL;

	memset(&sources, 0, sizeof(sources));
	switch (kinds[data[0] & 3]) {
	case CONFIG_FILE_GLOBAL:
		sources.global = source;
		break;
	case CONFIG_FILE_PROJECT:
		sources.project = source;
		break;
	case CONFIG_FILE_DECISIONS:
		sources.project_decisions = source;
		break;
	}
	if (config_load(&sources, &options, &cfg, &err) < 0)
		return 0;
	(void)policy_check_exec(cfg, "/usr/bin/git", argv, 3, &res, &err);
	(void)policy_check_exec(cfg, "/usr/bin/git", multicall, 2, &res, &err);
	(void)policy_check_exec_prefix(cfg, "/usr/bin/git", argv, 2, &res, &err);
	(void)policy_check_exec(cfg, "/usr/bin/true", NULL, 0, &res, &err);
	(void)policy_check_hostexec(cfg, "docker compose up -d", &res, &err);
	(void)policy_check_domain(cfg, NULL, "api.example.com:443", &res, &err);
	(void)fs_policy_check(cfg, &vars, "/home/u/proj/.git/hooks/x", true, &fs_res, &err);
	(void)fs_policy_check(cfg, &vars, "/home/u/.ssh/id_ed25519", false, &fs_res, &err);
	config_free(cfg);
	return 0;
}
