/* The sandbox's own view of the file system: its mount namespace as `run` built it, the view
 * the policy's paths are written for.
 *
 * An agent that gets a mount namespace of its own (nested sandboxes, --allow-nested-sandbox)
 * can bind another program over an allowed path, or reach such a mount through an fd, a cwd or
 * a root it carried back into the sandbox's namespace. The name the kernel gives the file
 * (/proc/self/fd/N's link, what the policy matches) is then its name in that other namespace.
 * So an exec's file is checked against this view:
 *
 *   - the file's mount (statx STATX_MNT_ID) is one of the view's mounts: its name is a name in
 *     the view, nothing more to do (the common case: a hash-free binary search, and one poll(2)
 *     that says whether the mount table changed since it was read);
 *   - otherwise the file must be the very file (device and inode) found at that name in the
 *     view, else the caller refuses the exec.
 *   - memfds live on a mount of the kernel's own, in no namespace (nothing can be mounted over
 *     a name there): they count as the view's, and their name ("/memfd:NAME (deleted)")
 *     decides as before.
 *
 * The view is held by two fds a process of that namespace opened (the sandbox's init, which
 * never leaves it): its root directory, and its /proc/self/mountinfo, which stays bound to the
 * namespace and polls POLLPRI when a mount comes or goes. */
#ifndef CLOISTER_NOTIFIER_VIEW_H
#define CLOISTER_NOTIFIER_VIEW_H

#include <stddef.h>
#include <stdint.h>

struct exec_view;

/* Take over ROOT_FD and MOUNTINFO_FD (closed on failure too) and read the mount table. */
int exec_view_new(int root_fd, int mountinfo_fd, struct exec_view **ret);
void exec_view_free(struct exec_view *v);

/* The view's root directory (O_PATH; owned by the view). */
int exec_view_root(const struct exec_view *v);

/* Is MNT_ID one of the view's mounts? 1 with the kernel's dev of its superblock (what the exec
 * backstop sees, see target.h) in *ret_kdev; 0 not; -errno when the table cannot be read. */
int exec_view_find_mount(struct exec_view *v, uint64_t mnt_id, uint32_t *ret_kdev);

/* Open absolute PATH in the view, as a name (no symlinks, no magic links): an O_PATH fd, or
 * -errno (ENOENT, ELOOP when a symlink is on the way…). */
int exec_view_open(const struct exec_view *v, const char *path);

/* Pure: the mount ids and superblock devices of mountinfo text, sorted by id. *ret is malloc'd
 * (NULL with *ret_n 0 for an empty table). -EBADMSG for a malformed line, -E2BIG beyond
 * EXEC_VIEW_MAX_MOUNTS. */
#define EXEC_VIEW_MAX_MOUNTS 100000
struct exec_view_mount {
	uint64_t id;
	uint32_t kdev; /* MAJOR << 20 | MINOR */
};
int exec_view_parse_mountinfo(const char *buf, size_t len, struct exec_view_mount **ret,
                              size_t *ret_n);

#endif
