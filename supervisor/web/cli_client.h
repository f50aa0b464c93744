/* The command-line client of the approval API:
 *   pending [--json]            asks waiting in every running supervisor, each with its
 *                               executable, directory and argv
 *   show ID [--json]            everything known of one ask
 *   approve ID                  approve an ask
 *   deny ID [--reason TEXT]     deny an ask
 *   status [--json]             running supervisors and their sandboxes
 *   kill NAME / pause NAME / resume NAME [--supervisor PID]   the kill switch; a name that
 *                               several supervisors run is refused, with the list
 * It finds supervisors through their api_info files (api_info.h), or talks to --url URL with
 * the token in $CLOISTER_API_TOKEN. Exit status: 0 done, 1 refused or not found, 64 usage,
 * 69 no supervisor reachable. */
#ifndef CLOISTER_CLI_CLIENT_H
#define CLOISTER_CLI_CLIENT_H

/* ARGV[0] is the command name ("pending", …). */
int cli_client_main(int argc, char **argv);
/* Is NAME one of the commands above? */
int cli_client_is_command(const char *name);

#endif
