#include "notifier/filter.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cleanup.h"

#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef AF_PACKET
#define AF_PACKET 17
#endif
#ifndef AF_MAX
#define AF_MAX 46
#endif

/* Every namespace flag. CLONE_NEWTIME exists for unshare (and clone3) only: in clone's flags
 * its bit is part of the exit signal. */
static const unsigned long clone_new_flags[] = {CLONE_NEWNS,  CLONE_NEWCGROUP, CLONE_NEWUTS,
                                                CLONE_NEWIPC, CLONE_NEWUSER,   CLONE_NEWPID,
                                                CLONE_NEWNET};

CL_DEFINE_TRIVIAL_CLEANUP(scmp_filter_ctx, seccomp_release)

static long sys_seccomp(unsigned int op, unsigned int flags, void *args)
{
	return syscall(SYS_seccomp, op, flags, args);
}

int notifier_filter_flags_supported(unsigned long flags)
{
	/* The kernel validates the flags before it copies the program: with a NULL program a
	 * valid set fails with EFAULT, an unknown one with EINVAL, and nothing is installed. */
	if (sys_seccomp(SECCOMP_SET_MODE_FILTER, (unsigned int)flags, NULL) == 0)
		return -EIO; /* cannot happen */
	if (errno == EFAULT)
		return 1;
	if (errno == EINVAL)
		return 0;
	return -errno;
}

static int has_cap_sys_admin(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[2] = {{0}};

	if (syscall(SYS_capget, &hdr, data) < 0)
		return -errno;
	return (data[CAP_SYS_ADMIN / 32].effective & (1U << (CAP_SYS_ADMIN % 32))) != 0;
}

static int add_rule(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned int n_args,
                    const struct scmp_arg_cmp *args)
{
	int nr = seccomp_syscall_resolve_name(name);

	if (nr == __NR_SCMP_ERROR)
		return -ENOSYS; /* libseccomp does not know it: refuse to build a leaky filter */
	return seccomp_rule_add_array(ctx, action, nr, n_args, args);
}

/* Whether FAMILY may be opened in the sandbox: only the families the egress path confines
 * (inet, inet6: the network namespace, netfilter and the cgroup hooks see them), unix (its
 * paths covered, its abstract names scoped) and netlink (iproute2, glibc's getaddrinfo). */
static bool family_allowed(unsigned int family)
{
	return family == AF_UNIX || family == AF_INET || family == AF_INET6 || family == AF_NETLINK;
}

/* socket and socketpair in any other family fail as if the kernel lacked it: AF_VSOCK, not
 * network-namespaced, reaches a VM's host past the proxy; the others (bluetooth, CAN, TIPC,
 * RDS, AF_ALG, XDP…) are attack surface no agent needs. The kernel reads the family as an
 * int: comparing the low 32 bits, a negative or unknown number is >= AF_MAX and refused too.
 * socket(AF_PACKET) keeps its own EPERM rule. */
static int add_family_rules(scmp_filter_ctx ctx)
{
	static const char *const calls[] = {"socket", "socketpair"};
	int r = 0;

	for (size_t c = 0; r >= 0 && c < ELEMENTSOF(calls); c++) {
		struct scmp_arg_cmp beyond = SCMP_A0_32(SCMP_CMP_GE, AF_MAX);

		for (unsigned int f = 0; r >= 0 && f < AF_MAX; f++) {
			struct scmp_arg_cmp is = SCMP_A0_32(SCMP_CMP_EQ, f);

			if (family_allowed(f) || (f == AF_PACKET && c == 0))
				continue;
			r = add_rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), calls[c], 1, &is);
		}
		if (r >= 0)
			r = add_rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), calls[c], 1, &beyond);
	}
	return r;
}

/* What keeps the agent from re-mapping paths and from reaching around the sandbox. */
static int add_confinement_rules(scmp_filter_ctx ctx, const struct notifier_filter_opts *opts)
{
	static const char *const remap[] = {
	        "mount",   "umount2", "move_mount",    "open_tree",  "fsopen", "fsconfig",
	        "fsmount", "fspick",  "mount_setattr", "pivot_root", "chroot", "setns"};
	static const char *const always[] = {"open_by_handle_at", "keyctl", "add_key",
	                                     "request_key"};
	struct scmp_arg_cmp packet = SCMP_A0_32(SCMP_CMP_EQ, AF_PACKET);
	int r;

	r = add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(always); i++)
		r = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), always[i], 0, NULL);
	if (r >= 0)
		r = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), "socket", 1, &packet);
	if (r >= 0)
		r = add_family_rules(ctx);
	if (r < 0 || opts->allow_nested_sandbox)
		return r;
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(remap); i++)
		r = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), remap[i], 0, NULL);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(clone_new_flags); i++) {
		struct scmp_arg_cmp has =
		        SCMP_A0_64(SCMP_CMP_MASKED_EQ, clone_new_flags[i], clone_new_flags[i]);

		r = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), "clone", 1, &has);
		if (r >= 0)
			r = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), "unshare", 1, &has);
	}
	if (r >= 0) {
		struct scmp_arg_cmp has =
		        SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_NEWTIME, CLONE_NEWTIME);

		r = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), "unshare", 1, &has);
	}
	return r;
}

#ifndef __O_TMPFILE
#define __O_TMPFILE 020000000
#endif

/* Opens that may write: each flag bit is a rule of its own (a filter compares one argument per
 * rule, and libseccomp ORs the rules of one syscall). The flags are an int: low 32 bits. */
static int add_open_write_rules(scmp_filter_ctx ctx, bool tell_only)
{
	static const unsigned int write_bits[] = {O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, __O_TMPFILE};
	int r = add_rule(ctx, SCMP_ACT_NOTIFY, "creat", 0, NULL);

	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(write_bits); i++) {
		struct scmp_arg_cmp open_flags =
		        SCMP_A1_32(SCMP_CMP_MASKED_EQ, write_bits[i], write_bits[i]);
		struct scmp_arg_cmp openat_flags =
		        SCMP_A2_32(SCMP_CMP_MASKED_EQ, write_bits[i], write_bits[i]);

		r = add_rule(ctx, SCMP_ACT_NOTIFY, "open", 1, &open_flags);
		if (r >= 0)
			r = add_rule(ctx, SCMP_ACT_NOTIFY, "openat", 1, &openat_flags);
	}
	if (r >= 0 && !tell_only)
		r = add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "openat2", 0, NULL);
	return r;
}

/* Compile the filter into a malloc'd array of BPF instructions. */
static int build_program(const struct notifier_filter_opts *opts, struct sock_filter **ret_insns,
                         unsigned short *ret_len)
{
	_cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
	_cleanup_close_ int memfd = -EBADF;
	_cleanup_free_ struct sock_filter *insns = NULL;
	static const char *const enosys[] = {"io_uring_setup", "io_uring_enter",
	                                     "io_uring_register", "userfaultfd"};
	/* The kernel takes ioctl's request as an unsigned int: compare its low 32 bits only, or
	 * the same request with high bits set would pass the rule and still reach the handler. */
	struct scmp_arg_cmp uffd_ioc =
	        SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xffffffffULL, USERFAULTFD_IOC_NEW);
	struct scmp_arg_cmp tiocsti = SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xffffffffULL, TIOCSTI);
	struct scmp_arg_cmp tioclinux = SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xffffffffULL, TIOCLINUX);
	struct scmp_arg_cmp listener =
	        SCMP_A1_32(SCMP_CMP_MASKED_EQ, SECCOMP_FILTER_FLAG_NEW_LISTENER,
	                   SECCOMP_FILTER_FLAG_NEW_LISTENER);
	struct scmp_arg_cmp set_filter = SCMP_A0_32(SCMP_CMP_EQ, SECCOMP_SET_MODE_FILTER);
	struct scmp_arg_cmp nested[2] = {set_filter, listener};
	struct stat st;
	ssize_t n;
	int r;

	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return -ENOMEM;
	/* Only the native ABI: a syscall through int 0x80 (i386) or with the x32 bit set would
	 * be numbered differently and slip past every rule below. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (r < 0)
		return r;
	r = add_rule(ctx, SCMP_ACT_NOTIFY, "execve", 0, NULL);
	if (r >= 0)
		r = add_rule(ctx, SCMP_ACT_NOTIFY, "execveat", 0, NULL);
	if (r >= 0 && opts->notify_connect)
		r = add_rule(ctx, SCMP_ACT_NOTIFY, "connect", 0, NULL);
	if (r >= 0 && opts->notify_open_write)
		r = add_open_write_rules(ctx, opts->open_write_tell_only);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(enosys); i++)
		r = add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), enosys[i], 0, NULL);
	if (r >= 0)
		r = add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "ioctl", 1, &uffd_ioc);
	/* Pushing bytes into a terminal's input (TIOCSTI, and TIOCLINUX's selection paste on a
	 * console) would type commands for whoever reads it next: refused on any terminal, as a
	 * second layer under the agent's own pseudo-terminal. */
	if (r >= 0)
		r = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), "ioctl", 1, &tiocsti);
	if (r >= 0)
		r = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), "ioctl", 1, &tioclinux);
	if (r >= 0 && !opts->allow_nested_listener)
		r = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), "seccomp", 2, nested);
	if (r >= 0)
		r = add_confinement_rules(ctx, opts);
	if (r >= 0 && opts->refuse_untraced) {
		/* clone's flags are its first argument on x86-64; clone3 (whose flags are in
		 * memory seccomp cannot read) is refused by the confinement rules, and libc falls
		 * back to clone. */
		struct scmp_arg_cmp untraced =
		        SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_UNTRACED, CLONE_UNTRACED);

		r = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), "clone", 1, &untraced);
	}
	if (r < 0)
		return r;

	/* libseccomp 2.5.4 exports only to an fd. */
	memfd = memfd_create("cloister-seccomp-bpf", MFD_CLOEXEC);
	if (memfd < 0)
		return -errno;
	r = seccomp_export_bpf(ctx, memfd);
	if (r < 0)
		return r;
	if (fstat(memfd, &st) < 0)
		return -errno;
	if (st.st_size <= 0 || st.st_size % sizeof(struct sock_filter) != 0 ||
	    st.st_size / sizeof(struct sock_filter) > BPF_MAXINSNS)
		return -EINVAL;
	insns = malloc((size_t)st.st_size);
	if (!insns)
		return -ENOMEM;
	n = pread(memfd, insns, (size_t)st.st_size, 0);
	if (n < 0)
		return -errno;
	if (n != st.st_size)
		return -EIO;
	*ret_len = (unsigned short)(st.st_size / sizeof(struct sock_filter));
	*ret_insns = TAKE_PTR(insns);
	return 0;
}

int notifier_filter_install(const struct notifier_filter_opts *opts,
                            struct notifier_filter_info *ret_info, int *ret_listener_fd)
{
	static const struct notifier_filter_opts defaults = {0};
	_cleanup_free_ struct sock_filter *insns = NULL;
	struct notifier_filter_info info = {0};
	struct sock_fprog prog;
	unsigned short len = 0;
	long fd;
	int r;

	if (!opts)
		opts = &defaults;
	r = build_program(opts, &insns, &len);
	if (r < 0)
		return r;
	prog.len = len;
	prog.filter = insns;

	info.flags = SECCOMP_FILTER_FLAG_NEW_LISTENER;
	if (opts->tsync)
		info.flags |= SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_TSYNC_ESRCH;
	if (!opts->no_wait_killable &&
	    notifier_filter_flags_supported(info.flags | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV) ==
	            1)
		info.flags |= SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;

	r = has_cap_sys_admin();
	if (r < 0)
		return r;
	if (r == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			return -errno;
		info.no_new_privs = true;
	}

	fd = sys_seccomp(SECCOMP_SET_MODE_FILTER, (unsigned int)info.flags, &prog);
	if (fd < 0 && errno == EINVAL && (info.flags & SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)) {
		/* The probe said yes, the kernel says no: fall back rather than fail. */
		info.flags &= ~SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
		fd = sys_seccomp(SECCOMP_SET_MODE_FILTER, (unsigned int)info.flags, &prog);
	}
	if (fd < 0)
		return -errno;
	if (fd > INT32_MAX)
		return -EIO; /* not an fd (TSYNC without TSYNC_ESRCH would report a thread id) */
	info.wait_killable_recv = (info.flags & SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV) != 0;
	if (ret_info)
		*ret_info = info;
	*ret_listener_fd = (int)fd;
	return 0;
}
