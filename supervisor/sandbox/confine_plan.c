#include "supervisor/sandbox/confine_plan.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

int confine_paths_add(struct confine_paths *p, const char *path)
{
	char **v, *copy;

	if (confine_paths_contains(p, path))
		return 0;
	copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	v = realloc(p->v, (p->n + 2) * sizeof(*v));
	if (!v) {
		free(copy);
		return -ENOMEM;
	}
	v[p->n++] = copy;
	v[p->n] = NULL;
	p->v = v;
	return 0;
}

bool confine_paths_contains(const struct confine_paths *p, const char *path)
{
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->v[i], path) == 0)
			return true;
	return false;
}

void confine_paths_free(struct confine_paths *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i]);
	free(p->v);
	p->v = NULL;
	p->n = 0;
}

bool confine_path_within(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

void confine_paths_outermost(struct confine_paths *keep)
{
	size_t k = 0;

	for (size_t i = 0; i < keep->n; i++) {
		bool inner = false;

		for (size_t j = 0; j < keep->n && !inner; j++)
			inner = j != i && keep->v[j] && strcmp(keep->v[i], keep->v[j]) != 0 &&
			        confine_path_within(keep->v[i], keep->v[j]);
		if (inner) {
			free(keep->v[i]);
			keep->v[i] = NULL; /* still compared against by later entries: skip */
			continue;
		}
	}
	for (size_t i = 0; i < keep->n; i++)
		if (keep->v[i])
			keep->v[k++] = keep->v[i];
	keep->n = k;
	if (keep->v)
		keep->v[k] = NULL;
}

int confine_paths_add_ancestors(struct confine_paths *out, const char *path)
{
	_cleanup_free_ char *copy = NULL;
	int r;

	if (path[0] != '/')
		return -EINVAL;
	copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	for (char *slash = strchr(copy + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		r = confine_paths_add(out, copy);
		*slash = '/';
		if (r < 0)
			return r;
	}
	return 0;
}

/* "Num       RefCount Protocol Flags    Type St Inode Path": the kernel's header line. */
#define PROC_NET_UNIX_HEADER "Num       RefCount Protocol Flags    Type St Inode"

int confine_parse_proc_net_unix(const char *text, size_t max, struct confine_paths *out)
{
	const char *line = strchr(text, '\n'), *next;
	int r;

	if (strncmp(text, PROC_NET_UNIX_HEADER, strlen(PROC_NET_UNIX_HEADER)) != 0 || !line)
		return -EINVAL;
	for (line++; *line; line = next) {
		const char *end = strchrnul(line, '\n'), *p = line;
		_cleanup_free_ char *path = NULL;

		next = *end ? end + 1 : end;
		/* Seven fields, then the path (absent for an unbound socket). The path is printed
		 * raw: it may hold spaces, so it is the rest of the line after one space. */
		for (int field = 0; field < 7 && p < end; field++) {
			while (p < end && *p == ' ')
				p++;
			while (p < end && *p != ' ')
				p++;
		}
		if (p >= end || *p != ' ' || p[1] != '/')
			continue;
		path = strndup(p + 1, (size_t)(end - p - 1));
		if (!path)
			return -ENOMEM;
		if (confine_paths_contains(out, path))
			continue;
		if (out->n >= max)
			return -E2BIG;
		r = confine_paths_add(out, path);
		if (r < 0)
			return r;
	}
	return 0;
}

#define CAP(c) (1ULL << (c))

uint64_t confine_kept_capabilities(bool host_network)
{
	/* Kept from a container runtime's default: what root needs to act as root on files and
	 * users inside the sandbox (package managers, chown, su to a build user, kill its own
	 * children), and SETFCAP, without which it cannot map root in a user namespace of its own
	 * (--allow-nested-sandbox); no_new_privs keeps file capabilities from raising anything
	 * here. Not kept from that default: MKNOD (a device node on a real filesystem would reach
	 * the host's disk past the sandbox's covered /dev), NET_RAW (AF_PACKET and raw sockets:
	 * frames that bypass the proxy on the host's network), SYS_CHROOT (chroot is refused
	 * anyway; it re-maps paths). Never kept, as in every runtime: SYS_ADMIN (mount,
	 * namespaces, most of the kernel), NET_ADMIN, SYS_PTRACE, SYS_MODULE, BPF, PERFMON,
	 * DAC_READ_SEARCH (open_by_handle_at walks out of any mount namespace), SYS_RAWIO, SYSLOG,
	 * SYS_TIME, SYS_BOOT, LINUX_IMMUTABLE (chattr +i on the user's files), MAC_*,
	 * AUDIT_CONTROL, AUDIT_READ, SYS_RESOURCE (past the limits that bound the agent),
	 * SYS_NICE, SYS_PACCT, SYS_TTY_CONFIG (the host's consoles), LEASE, IPC_LOCK, IPC_OWNER,
	 * WAKE_ALARM, BLOCK_SUSPEND, CHECKPOINT_RESTORE. */
	uint64_t keep = CAP(CAP_CHOWN) | CAP(CAP_DAC_OVERRIDE) | CAP(CAP_FOWNER) | CAP(CAP_FSETID) |
	                CAP(CAP_KILL) | CAP(CAP_SETGID) | CAP(CAP_SETUID) | CAP(CAP_SETPCAP) |
	                CAP(CAP_SETFCAP) | CAP(CAP_AUDIT_WRITE);

	if (!host_network)
		keep |= CAP(CAP_NET_BIND_SERVICE);
	return keep;
}
