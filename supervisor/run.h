/* `cloister-supervisor run [OPTIONS] -- AGENT [ARGS…]`: start AGENT in a sandbox and decide
 * every execve/execveat of its process tree by the policy, until it exits.
 *
 * Returns the process exit status: the agent's (128+signal when it was killed), 64 for a usage
 * error, 78 for a config error, 125 when the supervisor itself could not run the sandbox. */
#ifndef CLOISTER_RUN_H
#define CLOISTER_RUN_H

#define RUN_EXIT_FAILED 125

int run_main(int argc, char **argv);

#endif
