/* Parsing /proc/PID/status (the fields an exec decision needs) and the exec permission check
 * the kernel makes with those credentials. Pure: the caller reads the file. */
#ifndef CLOISTER_NOTIFIER_PROC_STATUS_H
#define CLOISTER_NOTIFIER_PROC_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define PROC_STATUS_MAX_GROUPS 64
/* Nested pid namespaces: 32 levels below the initial one at most. */
#define PROC_STATUS_MAX_NS_LEVELS 33

struct proc_status {
	char name[64]; /* "Name:" as the kernel escapes it; may be "" */
	pid_t tgid, ppid;
	pid_t nspid; /* the pid in the process's own (innermost) pid namespace; 0 if not shown */
	/* NStgid and NSpid: the thread group id and the thread id in each pid namespace, from the
	 * procfs's own namespace (first) to the process's (last); ns_levels 0 when not shown. */
	pid_t ns_tgid[PROC_STATUS_MAX_NS_LEVELS];
	pid_t ns_pid[PROC_STATUS_MAX_NS_LEVELS];
	size_t ns_levels;
	uid_t ruid, euid, suid, fsuid;
	gid_t rgid, egid, sgid, fsgid;
	gid_t groups[PROC_STATUS_MAX_GROUPS];
	size_t ngroups;
	bool groups_truncated; /* more supplementary groups than PROC_STATUS_MAX_GROUPS */
};

/* Parse the text of /proc/PID/status (need not be NUL-terminated). Uid: and Gid: are
 * required (-EBADMSG without them or when malformed); the other fields default to 0/empty. */
int proc_status_parse(const char *buf, size_t len, struct proc_status *ret);

/* Would a process with these credentials pass the kernel's exec permission check for a regular
 * file with mode/uid/gid? Owner, group (fsgid or a supplementary group), other bits, as the
 * kernel does; fsuid 0 may exec when any x bit is set. An approximation only in that it does not
 * see capabilities, ACLs or LSMs: it answers "may exec" for the common cases. */
bool proc_status_may_exec(const struct proc_status *st, mode_t mode, uid_t file_uid,
                          gid_t file_gid);

#endif
