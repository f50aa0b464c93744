/* The audit log: one JSON line per event (a policy verdict) and per decision (a queue item
 * leaving the queue), appended to $XDG_STATE_HOME/cloister/audit.log or
 * ~/.local/share/cloister/audit.log.
 *
 *   {"time":"2026-11-22T01:56:07.123Z","id":"3f9a0c2e7b14","sandbox":"main","project":"p",
 *    "kind":"exec","pid":4242,"uid":1000,"exe":"/usr/bin/curl","argv":["curl","x"],
 *    "cwd":"/work","interpreter":null,"summary":"curl x","verdict":"denied",
 *    "rule":"exec.deny[1] path \"/usr/bin/curl\" (config.yaml:14)","decided_by":"tty",
 *    "scope":"once","latency_ms":1520,"reason":"Command denied by user"}
 *
 * Keys always appear, in this order; an unknown value is null. Strings are made valid UTF-8
 * (each byte of an invalid sequence becomes U+FFFD) and JSON-escaped, so a hostile argv cannot
 * break a line or the file. The environment is never logged, nor anything else secret.
 *
 * Lines are bounded, whatever the agent passes: a string value is cut at AUDIT_FIELD_MAX bytes
 * as written (escapes counted) and then ends in "…"; an argument list is written whole up to
 * AUDIT_ARGV_MAX bytes and AUDIT_ARGV_MAX_ARGS elements, and beyond that summarised: "argv"
 * holds the arguments that fit (the last one maybe only its start), followed by
 *   "argv_summary":{"argc":3,"bytes":1048600,"sha256":"9f2c…","last_cut":true,"complete":true}
 * argc and bytes count the whole list (each argument's bytes and its NUL, as the kernel lays
 * them out), sha256 is the digest of exactly those bytes (`printf '%s\0' ARGS… | sha256sum`),
 * last_cut says the last element is only the start of that argument, and complete is false
 * when the list read was itself only the start of the process's (argv_incomplete). A line is
 * then at most about 64 KiB; a 1 MB argv gives about 5 KiB.
 *
 * A record of SUPPRESSED lines (audit_limit.h) has verdict "suppressed", kind "audit" and
 * ends in "suppressed":N; a record of lines LOST (the file refused them: a full disk) has
 * verdict "lost", kind "audit" and ends in "lost":N.
 *
 * Pure: the file and the writer on the loop are audit_log.h's. */
#ifndef CLOISTER_AUDIT_H
#define CLOISTER_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "supervisor/approval/queue.h"

enum audit_verdict {
	AUDIT_ALLOW,    /* the policy allowed */
	AUDIT_DENY,     /* the policy denied */
	AUDIT_ASK,      /* the policy asked: an item entered the queue */
	AUDIT_APPROVED, /* the queue's outcomes, as enum queue_state */
	AUDIT_DENIED,
	AUDIT_TIMED_OUT,
	AUDIT_CANCELLED,
	AUDIT_SUPPRESSED, /* automatic lines left out over the rate (audit_limit.h) */
	AUDIT_LOST,       /* lines the file did not take (full disk, I/O error) */
};

#define AUDIT_FIELD_MAX     4096 /* bytes of one string value as written, escapes included */
#define AUDIT_ARGV_MAX      4096 /* bytes of the "argv" array's strings as written */
#define AUDIT_ARGV_MAX_ARGS 256  /* elements of the "argv" array */

/* One line. Every pointer may be NULL (written as null); numbers < 0 are written as null. */
struct audit_record {
	uint64_t time_ms; /* wall clock, milliseconds since the Unix epoch */
	const char *id;   /* queue item id */
	const char *sandbox;
	const char *project;
	const char *kind; /* "exec", "domain", "hostexec", "shim", "file" */
	int64_t pid;
	int64_t uid;
	const char *exe;
	const char *const *argv;
	size_t argc;
	bool argv_incomplete; /* ARGV is only the start of the process's (its reader's limit) */
	const char *cwd;
	const char *interpreter;
	const char *summary; /* canonical command, or the domain */
	enum audit_verdict verdict;
	const char *rule; /* the rule with its file:line */
	const char *decided_by;
	const char *scope;
	int64_t latency_ms;
	const char *reason;
	/* A relayed or refused connection's end: these three keys are written only when set. */
	bool connection;
	int64_t bytes_up;   /* client → upstream */
	int64_t bytes_down; /* upstream → client */
	int64_t duration_ms;
	/* An automatic verdict (the policy or the fallback decided, a connection ended): subject
	 * to the per-sandbox rate (audit_limit.h). Never set for what a person decided or was
	 * asked, nor for a security event such as the backstop's. Not written. */
	bool automatic;
	/* An ask no person decided (its ADDED record, or its end by timeout or by the asking
	 * process going away): the agent can make those come and go as fast as it likes, so
	 * they have a rate of their own, apart from the automatic verdicts so that a flood of
	 * those never hides an ask. A person's decision repeats what its ask showed and is
	 * never limited. Not written. */
	bool unanswered_ask;
	int64_t suppressed; /* AUDIT_SUPPRESSED: how many lines; written when > 0 */
	int64_t lost;       /* AUDIT_LOST: how many lines; written when > 0 */
};

/* A record for a queue event: ADDED → "ask", REMOVED → the final state, with decided_by,
 * scope, reason and latency (decided - created). Pointers borrow from EV's item. Automatic
 * when the fallback decided the item (nobody could answer, so nobody was shown it); every
 * other queue record concerns a person. */
void audit_record_from_queue_event(const struct queue_event *ev, uint64_t wall_ms,
                                   struct audit_record *ret);

const char *audit_verdict_to_string(enum audit_verdict verdict);

/* "2026-11-22T01:56:07.123Z" into buf (at least 25 bytes). */
void audit_format_time(uint64_t time_ms, char buf[static 32]);

/* The record as one JSON line ending in "\n", malloc'd to *ret_line. -ENOMEM, or -EINVAL for
 * an unknown verdict. */
int audit_format_line(const struct audit_record *rec, char **ret_line);

#endif
