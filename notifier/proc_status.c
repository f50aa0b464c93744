#include "notifier/proc_status.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Parse up to max unsigned decimal numbers separated by tabs/spaces from [p, end). Returns how
 * many were parsed, -EBADMSG on garbage. *more is set when numbers were left over. */
static int parse_numbers(const char *p, const char *end, unsigned long *out, size_t max, bool *more)
{
	size_t n = 0;

	*more = false;
	for (;;) {
		unsigned long v = 0;
		const char *start;

		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p >= end)
			break;
		start = p;
		while (p < end && *p >= '0' && *p <= '9') {
			if (v > (0xffffffffUL - (unsigned long)(*p - '0')) / 10)
				return -EBADMSG; /* ids are 32 bits */
			v = v * 10 + (unsigned long)(*p - '0');
			p++;
		}
		if (p == start || (p < end && *p != ' ' && *p != '\t'))
			return -EBADMSG;
		if (n == max) {
			*more = true;
			break;
		}
		out[n++] = v;
	}
	return (int)n;
}

int proc_status_parse(const char *buf, size_t len, struct proc_status *ret)
{
	struct proc_status st;
	const char *p = buf, *end = buf + len;
	bool have_uid = false, have_gid = false;
	size_t ns_pid_levels = 0, ns_tgid_levels = 0;

	memset(&st, 0, sizeof(st));
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *colon, *val;
		unsigned long nums[PROC_STATUS_MAX_GROUPS];
		size_t klen;
		bool more;
		int n;

		if (!eol)
			eol = end;
		colon = memchr(p, ':', (size_t)(eol - p));
		if (!colon) {
			p = eol + 1;
			continue;
		}
		klen = (size_t)(colon - p);
		val = colon + 1;
#define KEY(k) (klen == sizeof(k) - 1 && memcmp(p, k, klen) == 0)
		if (KEY("Name")) {
			size_t vlen;

			while (val < eol && (*val == ' ' || *val == '\t'))
				val++;
			vlen = (size_t)(eol - val);
			if (vlen >= sizeof(st.name))
				vlen = sizeof(st.name) - 1;
			memcpy(st.name, val, vlen);
			st.name[vlen] = '\0';
		} else if (KEY("Uid") || KEY("Gid")) {
			n = parse_numbers(val, eol, nums, 4, &more);
			if (n != 4 || more)
				return -EBADMSG;
			if (KEY("Uid")) {
				st.ruid = nums[0], st.euid = nums[1], st.suid = nums[2],
				st.fsuid = nums[3];
				have_uid = true;
			} else {
				st.rgid = nums[0], st.egid = nums[1], st.sgid = nums[2],
				st.fsgid = nums[3];
				have_gid = true;
			}
		} else if (KEY("Groups")) {
			n = parse_numbers(val, eol, nums, PROC_STATUS_MAX_GROUPS, &more);
			if (n < 0)
				return n;
			for (int i = 0; i < n; i++)
				st.groups[i] = nums[i];
			st.ngroups = (size_t)n;
			st.groups_truncated = more;
		} else if (KEY("NSpid") || KEY("NStgid")) {
			/* One id per nested namespace, outermost first; 33 levels at most. Both
			 * lines have as many: a mismatch is caught below. */
			pid_t *ids = KEY("NSpid") ? st.ns_pid : st.ns_tgid;

			n = parse_numbers(val, eol, nums, PROC_STATUS_MAX_NS_LEVELS, &more);
			if (n <= 0 || more)
				return -EBADMSG;
			for (int i = 0; i < n; i++) {
				if (nums[i] > 0x7fffffffUL)
					return -EBADMSG;
				ids[i] = (pid_t)nums[i];
			}
			if (KEY("NSpid")) {
				st.nspid = (pid_t)nums[n - 1];
				ns_pid_levels = (size_t)n;
			} else {
				ns_tgid_levels = (size_t)n;
			}
		} else if (KEY("Tgid") || KEY("PPid")) {
			n = parse_numbers(val, eol, nums, 1, &more);
			if (n != 1 || more || nums[0] > 0x7fffffffUL)
				return -EBADMSG;
			if (KEY("Tgid"))
				st.tgid = (pid_t)nums[0];
			else
				st.ppid = (pid_t)nums[0];
		}
#undef KEY
		p = eol + 1;
	}
	if (!have_uid || !have_gid)
		return -EBADMSG;
	/* Both lists or neither, of one length: a process is in as many namespaces as its
	 * thread group. */
	if (ns_pid_levels != ns_tgid_levels)
		return -EBADMSG;
	st.ns_levels = ns_pid_levels;
	*ret = st;
	return 0;
}

bool proc_status_may_exec(const struct proc_status *st, mode_t mode, uid_t file_uid, gid_t file_gid)
{
	bool in_group = st->fsgid == file_gid;

	if (st->fsuid == 0)
		return (mode & (S_IXUSR | S_IXGRP | S_IXOTH)) != 0;
	if (st->fsuid == file_uid)
		return (mode & S_IXUSR) != 0;
	for (size_t i = 0; !in_group && i < st->ngroups; i++)
		in_group = st->groups[i] == file_gid;
	if (in_group)
		return (mode & S_IXGRP) != 0;
	return (mode & S_IXOTH) != 0;
}
