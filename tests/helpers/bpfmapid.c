/* bpfmapid ID...: try to open each eBPF map by its id (BPF_MAP_GET_FD_BY_ID), as a process in
 * a sandbox would to reach the supervisor's maps. Prints one line per id: "ID opened" or
 * "ID ERRNO-NAME". Exit 0 when no id could be opened, 2 when one could, 1 on bad usage. */
#include <errno.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int rc = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: bpfmapid ID...\n");
		return 1;
	}
	for (int i = 1; i < argc; i++) {
		union bpf_attr attr;
		long fd;

		memset(&attr, 0, sizeof(attr));
		attr.map_id = (__u32)strtoul(argv[i], NULL, 10);
		fd = syscall(SYS_bpf, BPF_MAP_GET_FD_BY_ID, &attr, sizeof(attr));
		if (fd >= 0) {
			printf("%s opened\n", argv[i]);
			close((int)fd);
			rc = 2;
		} else {
			printf("%s %s\n", argv[i],
			       strerrorname_np(errno) ? strerrorname_np(errno) : "?");
		}
	}
	return rc;
}
