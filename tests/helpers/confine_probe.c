/* confine_probe WHAT…: one thing a contained agent tries, and what came of it, on stdout.
 *
 *   clone3          the raw clone3 syscall: "clone3: ok" or "clone3: <errno text>"
 *   threads N       N pthreads (glibc creates them with clone3, then clone): "threads: ok"
 *   spawn PROG      posix_spawn PROG and wait: "spawn: status N"
 *   packet          socket(AF_PACKET, SOCK_RAW) and, if that works, one frame sent on
 *                   loopback: "packet: <errno text>" or "packet: sent"
 *   setns           setns into its own network namespace: "setns: ok" or "…: <errno text>"
 *   bind FROM TO    mount(FROM, TO, MS_BIND): "bind: ok" or "bind: <errno text>"
 *   open_by_handle  name_to_handle_at + open_by_handle_at of "/": "open_by_handle: …"
 *   keyctl          read the user keyring's id: "keyctl: ok" or "keyctl: <errno text>"
 *
 * Exit status 0 when the thing worked, 1 when it was refused, 2 on a usage error. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/sched.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int report(const char *what, int ok)
{
	if (ok)
		printf("%s: ok\n", what);
	else
		printf("%s: %s\n", what, strerror(errno));
	return ok ? 0 : 1;
}

static int probe_clone3(void)
{
	struct clone_args ca = {.exit_signal = SIGCHLD};
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));

	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid((pid_t)pid, NULL, 0);
	return report("clone3", pid > 0);
}

static void *work(void *arg)
{
	volatile unsigned long n = 0;

	for (int i = 0; i < 100000; i++)
		n += (unsigned long)i;
	return arg;
}

static int probe_threads(int n)
{
	pthread_t t[64];

	if (n < 1 || n > 64)
		return 2;
	for (int i = 0; i < n; i++) {
		errno = pthread_create(&t[i], NULL, work, NULL);
		if (errno)
			return report("threads", 0);
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return report("threads", 1);
}

static int probe_spawn(char *prog)
{
	char *argv[] = {prog, NULL};
	pid_t pid;
	int st;

	errno = posix_spawn(&pid, prog, NULL, NULL, argv, environ);
	if (errno)
		return report("spawn", 0);
	if (waitpid(pid, &st, 0) < 0)
		return report("spawn", 0);
	printf("spawn: status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	return 0;
}

static int probe_packet(void)
{
	unsigned char frame[60] = {
	        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0,
	        0,    0,    0,    1,    0x88, 0xb5}; /* broadcast, local experimental ethertype */
	struct sockaddr_ll sll = {.sll_family = AF_PACKET,
	                          .sll_protocol = htons(0x88b5),
	                          .sll_ifindex = (int)if_nametoindex("lo"),
	                          .sll_halen = ETH_ALEN};
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));

	if (fd < 0)
		return report("packet", 0);
	/* On loopback only: the socket working at all is the hole; no frame for the LAN. */
	memset(sll.sll_addr, 0xff, ETH_ALEN);
	if (sendto(fd, frame, sizeof(frame), 0, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		return report("packet sendto", 0);
	printf("packet: sent\n");
	return 0;
}

static int probe_setns(void)
{
	int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return report("setns", 0);
	return report("setns", setns(fd, CLONE_NEWNET) == 0);
}

static int probe_bind(const char *from, const char *to)
{
	return report("bind", mount(from, to, NULL, MS_BIND, NULL) == 0);
}

static int probe_open_by_handle(void)
{
	struct {
		struct file_handle fh;
		unsigned char bytes[128];
	} h = {.fh.handle_bytes = 128};
	int mount_id, fd;

	if (name_to_handle_at(AT_FDCWD, "/", &h.fh, &mount_id, 0) < 0)
		return report("open_by_handle", 0);
	fd = open_by_handle_at(AT_FDCWD, &h.fh, O_RDONLY | O_CLOEXEC);
	return report("open_by_handle", fd >= 0);
}

static int probe_keyctl(void)
{
	/* KEYCTL_GET_KEYRING_ID (0) of KEY_SPEC_USER_KEYRING (-4), not created. */
	long id = syscall(SYS_keyctl, 0, -4, 0);

	return report("keyctl", id >= 0);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "clone3"))
		return probe_clone3();
	if (argc == 3 && !strcmp(argv[1], "threads"))
		return probe_threads(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "spawn"))
		return probe_spawn(argv[2]);
	if (argc == 2 && !strcmp(argv[1], "packet"))
		return probe_packet();
	if (argc == 2 && !strcmp(argv[1], "setns"))
		return probe_setns();
	if (argc == 4 && !strcmp(argv[1], "bind"))
		return probe_bind(argv[2], argv[3]);
	if (argc == 2 && !strcmp(argv[1], "open_by_handle"))
		return probe_open_by_handle();
	if (argc == 2 && !strcmp(argv[1], "keyctl"))
		return probe_keyctl();
	fprintf(stderr, "usage: confine_probe clone3|threads N|spawn PROG|packet|setns|"
	                "bind FROM TO|open_by_handle|keyctl\n");
	return 2;
}
