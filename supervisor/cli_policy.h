/* `cloister-supervisor policy check|show`: evaluate the effective config offline.
 *
 *   policy check [--config-dir D] [--project P] [--lenient] -- CMD [ARGS…]
 *   policy check [--config-dir D] [--project P] [--lenient] --domain HOST[:PORT]
 *   policy show  [--config-dir D] [--project P] [--lenient]
 *
 * Exit status (CLI_EXIT_*): 0 allow, 1 deny, 2 ask, 64 usage error, 78 config error. */
#ifndef CLOISTER_CLI_POLICY_H
#define CLOISTER_CLI_POLICY_H

#include <stdio.h>

#define CLI_EXIT_ALLOW  0
#define CLI_EXIT_DENY   1
#define CLI_EXIT_ASK    2
#define CLI_EXIT_USAGE  64 /* EX_USAGE */
#define CLI_EXIT_CONFIG 78 /* EX_CONFIG */

/* ARGV[0] is "policy". Prints results on stdout, warnings and errors on stderr. */
int cli_policy(int argc, char **argv);

#endif
