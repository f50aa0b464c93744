/* cloister-supervisor: command-line entry and dispatch. */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "base/say.h"
#include "supervisor/web/cli_client.h"
#include "supervisor/cli_decisions.h"
#include "supervisor/cli_policy.h"
#include "supervisor/hostexec/executor.h"
#include "supervisor/run.h"
#include "supervisor/serve.h"

#ifndef CLOISTER_VERSION
#define CLOISTER_VERSION "0.1.0-dev"
#endif

static void usage(FILE *out)
{
	fputs("usage: " PROG " COMMAND [ARGS...]\n"
	      "\n"
	      "Run an AI coding agent so that every program it executes and every connection it\n"
	      "opens goes through one allow / ask / deny policy.\n"
	      "\n"
	      "commands:\n"
	      "  run [OPTIONS] -- AGENT [ARGS...]    start AGENT in a sandbox; every program it\n"
	      "                                      runs is decided by the policy\n"
	      "  serve [OPTIONS]                     the daemon for containers and shims: "
	      "dashboard,\n"
	      "                                      APIs, shim listener\n"
	      "  policy check -- CMD [ARGS...]       decide an exec offline; print the verdict "
	      "and\n"
	      "                                      the deciding rule with its file:line\n"
	      "  policy check --domain HOST[:PORT]   decide a connection offline\n"
	      "  policy show                         print the effective merged configuration\n"
	      "  pending [--json]                    asks waiting in running supervisors\n"
	      "  approve ID / deny ID [--reason R]   answer an ask\n"
	      "    [--scope S [--program | --pattern P]]  for once, the session, the project or\n"
	      "                                      every project; a command, program or pattern\n"
	      "  decisions list | rm ID|ENTRY        the decisions kept for projects (files)\n"
	      "  status [--json]                     running supervisors and their sandboxes\n"
	      "  kill|pause|resume NAME              the kill switch for a sandbox\n"
	      "  executor [--port N] [--secret-file PATH]\n"
	      "                                      run host commands for the guardian over TCP\n"
	      "                                      (secret in CLOISTER_EXECUTOR_SECRET)\n"
	      "\n"
	      "options:\n"
	      "  -h, --help      show this help (`" PROG " policy --help` for policy's options)\n"
	      "  --version       print the version\n",
	      out);
}

int main(int argc, char **argv)
{
	const char *cmd;

	/* One malloc arena: our only threads are short-lived ones that enter a netns, and the
	 * arena glibc would give them keeps what they freed (0.8 MB of pages after a netns
	 * set-up: its top, which malloc_trim(3) leaves alone outside the main arena). */
	(void)mallopt(M_ARENA_MAX, 1);
	/* Blocks from 128 KiB up always mmap'd (glibc's default, without its dynamic threshold,
	 * which libbpf's freed BTF buffers raise to megabytes): a table sized for the worst case
	 * (the exec guard's, the verdict cache) is zero pages the kernel maps only where used,
	 * instead of heap memory calloc clears whole; and it goes back to the kernel when freed. */
	(void)mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	cmd = argv[1];
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(cmd, "--version") == 0) {
		printf(PROG " " CLOISTER_VERSION "\n");
		return 0;
	}
	if (strcmp(cmd, "policy") == 0)
		return cli_policy(argc - 1, argv + 1);
	if (strcmp(cmd, "decisions") == 0)
		return cli_decisions(argc - 1, argv + 1);
	if (strcmp(cmd, "run") == 0)
		return run_main(argc - 1, argv + 1);
	if (strcmp(cmd, "serve") == 0)
		return serve_main(argc - 1, argv + 1);
	if (cli_client_is_command(cmd))
		return cli_client_main(argc - 1, argv + 1);
	if (strcmp(cmd, "executor") == 0)
		return executor_main(argc - 1, argv + 1);
	fprintf(stderr, PROG ": unknown command \"%s\"\nTry '" PROG " --help'.\n", cmd);
	return CLI_EXIT_USAGE;
}
