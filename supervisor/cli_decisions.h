/* `cloister-supervisor decisions list|rm`: the decisions people kept for a project or for
 * every project (decisions/global.yaml, decisions/projects/NAME.yaml), domains and execs.
 *
 *   decisions list [--config-dir D] [--project P]
 *   decisions rm ID|ENTRY [--config-dir D] [--project P]
 *
 * Every entry has an ID, a hash of where it is and what it says (stable while the entry
 * stays); `rm` takes an ID, or the entry itself (a domain, a pattern, an exec rule's path),
 * and refuses one that names several entries. The file is rewritten under its lock,
 * atomically. A supervisor that is running keeps what it read at its start: removal counts
 * from the next run on.
 *
 * Exit status: 0 done, 1 nothing (or more than one entry) matched, 64 usage, 78 a file that
 * cannot be read or written. */
#ifndef CLOISTER_CLI_DECISIONS_H
#define CLOISTER_CLI_DECISIONS_H

int cli_decisions(int argc, char **argv);

#endif
