/* The file system's mount layer (the `fs:` section, fs_policy.h, enforced): in the sandbox's
 * mount namespace the whole tree is made read-only, recursively; each fs.write path comes back
 * writable as it was (a clone of it, taken before, with what is mounted below it); the
 * ancestors of a protected path inside a writable one become mount points (a mount point
 * cannot be renamed or removed: no `mv .git x; mkdir .git` around a protected .git/hooks);
 * each fs.protect path gets a read-only clone of itself; each fs.hide path an empty read-only
 * tmpfs (a directory) or an empty character device (a file, /dev/null read-only) over it.
 * /proc stays writable as a mount (its own protections are sandbox_confine's); /dev's device
 * nodes stay usable (a device is written through, not as a file). The mounts that
 * sandbox_confine makes afterwards (private /tmp, /dev/shm, /run/user) are new, hence
 * writable.
 *
 * Landlock (landlock.h) is the second layer: fs_confine_write_paths() are the paths its rules
 * grant write rights beneath.
 *
 * A protected or hidden path that is a symlink (stow's ~/.bashrc -> dotfiles/bashrc), or has one
 * on its way, also gets a read-only clone of the link itself over it: the link cannot be removed
 * or replaced (EBUSY), as its target cannot be written; so is each hop of its chain of links.
 *
 * What a protected path leads to, when it lies in a writable path, is protected the same way:
 * the target of every symlink inside a protected directory (a .git/hooks/pre-commit linked to
 * scripts/pre-commit), and the files named by the git configs a git run in the worktree reads
 * (git_config.h: include.path, the hooks in core.hooksPath, the files a command git runs
 * names). A writable path itself, or a directory holding one, is never made read-only so.
 *
 * What the mount layer cannot hold, and why: a protected or hidden path that does not exist when
 * the run starts (a new .envrc, a .git/config in a project without .git, a ~/.kube/config whose
 * exec plugin kubectl runs) cannot be mounted over, and Landlock cannot name it. Its nearest
 * existing ancestor is opened when the run starts, and when the run ends — the agent and all its
 * processes gone, so nothing races the check — what was created at that name is renamed aside
 * (fs_sweep), to a name the agent cannot have taken. Likewise git reads the .git of whatever
 * directory it runs in: at the end, every .git in a writable worktree that the run made is renamed
 * aside, and in the ones that were there (and bare repositories), what git would run (config,
 * hooks, those in the directory core.hooksPath names, submodules' and worktrees' git directories;
 * a link counting as changed when its target is; the files in the worktree the config includes
 * or its commands name) that the run made or changed. "Made or changed during the run" is the
 * inode's birth time (directories) or change time (the rest), neither of which a process can set
 * back, against the start read on the worktree's own file system's clock. Until the end it is
 * there, for a program on the host that reads it during the run. Patterns are expanded (globs
 * included) once, when the run starts: a later file matching a hide or protect glob is not covered.
 *
 * fs_confine_prepare() runs in the supervisor (it resolves paths in the host's view and
 * creates the missing fs.write directories written with a trailing "/"); fs_confine_mounts()
 * in the sandbox's init, in its new mount namespace, before sandbox_confine_mounts(). */
#ifndef CLOISTER_SUPERVISOR_FS_CONFINE_H
#define CLOISTER_SUPERVISOR_FS_CONFINE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "supervisor/policy/config.h"
#include "supervisor/sandbox/confine_plan.h"

/* More paths than this after expanding the globs: the run refuses to start. */
#define FS_CONFINE_MAX_PATHS 4096

struct fs_confine_request {
	const struct config *config;
	const char *home;     /* $HOME, or NULL */
	const char *worktree; /* run's directory */
	/* Paths the hide entries must leave visible (the config and audit directories): a hide
	 * entry holding one of them, or the worktree, is skipped. NULL-terminated, or NULL. */
	const char *const *keep_visible;
	/* Cloister's own directories (config): the targets of the symlinks in them
	 * (config_files_links()) are protected as fs.protect paths. NULL-terminated, or NULL. */
	const char *const *own_dirs;
	/* Test only (run --test-no-fs-mounts): no mounts, so that a test shows Landlock alone
	 * refusing the same writes. The plan is still made: Landlock's rules come from it. */
	bool no_mounts;
};

struct fs_confine;

struct fs_confine_summary {
	bool mounts;           /* the mount layer is on */
	size_t write;          /* writable paths (after globs, existing) */
	size_t hide;           /* hidden paths that exist */
	size_t protect;        /* protected paths that exist */
	size_t absent_protect; /* protected paths that do not exist (not held by a mount) */
	size_t absent_hide;    /* hidden paths that do not exist (swept at the end) */
	size_t created;        /* fs.write directories created for this run */
	size_t skipped_hide;   /* hide entries skipped: they hold the worktree or a kept path */
	size_t pinned;         /* ancestors of protected paths made mount points */
	size_t links;          /* symlinks on the way to protected paths, held by a mount */
	size_t followed;       /* writable paths protected: a protected path leads to them */
	size_t unwalked;       /* protected directories or git configs not followed whole */
	bool git_check;        /* every .git in the worktree is checked at the end */
	bool private_tmp;      /* fs.tmp: private */
};

int fs_confine_prepare(const struct fs_confine_request *req, struct fs_confine **ret,
                       struct cl_error *err);
void fs_confine_summarize(const struct fs_confine *fc, struct fs_confine_summary *ret);
/* The writable paths that a protected path leads to, protected too: "PATH (from SOURCE)". */
const struct confine_paths *fs_confine_followed(const struct fs_confine *fc);
/* The writable paths, resolved (directories and files), outermost first. */
const struct confine_paths *fs_confine_write_paths(const struct fs_confine *fc);
bool fs_confine_private_tmp(const struct fs_confine *fc);
void fs_confine_free(struct fs_confine *fc);
CL_DEFINE_TRIVIAL_CLEANUP(struct fs_confine *, fs_confine_free)

/* The sweep of the protected paths that were absent at the start, taken out of FC (to outlive
 * the plan); NULL when there are none. */
struct fs_sweep;
struct fs_sweep *fs_confine_take_sweep(struct fs_confine *fc);

enum fs_sweep_what {
	FS_SWEEP_PROTECTED, /* a protected path that was absent at the start */
	FS_SWEEP_HIDDEN,    /* a hidden path that was absent at the start */
	FS_SWEEP_GIT,       /* a .git, or what git runs in one, made or changed during the run */
	FS_SWEEP_UNCHECKED, /* a directory not looked into (R: why; -ELOOP: too deep) */
};

/* Called for each path moved aside: MOVED_TO is where (NULL with R < 0 when it could not
 * be). */
typedef void (*fs_sweep_report_fn)(void *userdata, enum fs_sweep_what what, const char *path,
                                   const char *moved_to, int r);

/* After the sandbox is gone: rename aside what the run made at each absent protected or hidden
 * path
 * (the path itself when no symlink is on its way from the ancestor opened at the start, else
 * the first directory on its way that was absent), and the .git check above. The new name is
 * "NAME.cloister-blocked", or "NAME.cloister-blocked.RANDOM" when that exists; nothing is
 * replaced and no symlink followed. */
void fs_sweep_run(const struct fs_sweep *s, fs_sweep_report_fn report, void *userdata);
void fs_sweep_free(struct fs_sweep *s);
CL_DEFINE_TRIVIAL_CLEANUP(struct fs_sweep *, fs_sweep_free)

/* In the init: the mounts described above. /proc must be mounted already. */
int fs_confine_mounts(const struct fs_confine *fc, struct cl_error *err);

#endif
