/* Locating and reading Cloister's config files (the thin I/O shell around config.h).
 *
 * Layout under the config directory DIR (default $XDG_CONFIG_HOME/cloister, else
 * ~/.config/cloister; --config-dir replaces DIR itself):
 *   DIR/config.yaml                          global
 *   DIR/projects/<project>.yaml              project
 *   DIR/decisions/global.yaml                global decisions
 *   DIR/decisions/projects/<project>.yaml    project decisions
 * When DIR/decisions does not exist but DIR/approvals (Cloister's older name for it) does,
 * the decisions files are read from there instead, in either of their forms; nothing is
 * renamed (decisions.h copies approvals/ to decisions/ before the first decision is saved).
 * A missing file is not an error (config.h treats it as empty, or as the built-in default for
 * config.yaml). Files are read whole, at most YDOC_MAX_BYTES, and must be regular files that
 * not every user may write. */
#ifndef CLOISTER_CONFIG_FILES_H
#define CLOISTER_CONFIG_FILES_H

#include "base/cleanup.h"
#include "base/error.h"
#include "supervisor/policy/config.h"

/* Pick the config directory (pure: the environment comes in as arguments, any may be NULL).
 * CONFIG_DIR wins; else XDG_CONFIG_HOME/cloister when XDG_CONFIG_HOME is absolute (the XDG
 * spec says to ignore a relative one); else HOME/.config/cloister. -ENOENT with a message
 * when none is usable. *ret_dir is malloc'd. */
int config_files_dir(const char *config_dir, const char *xdg_config_home, const char *home,
                     char **ret_dir, struct cl_error *err);

/* $HOME without symlinks, as exec paths are seen (config_load_options.home); NULL when HOME
 * is unset, relative or missing. malloc'd. */
char *config_files_home(void);

/* The files read from one directory; sources point into this struct. */
struct config_files {
	char *paths[4]; /* global, project, global decisions, project decisions (NULL: none) */
	char *data[4];
	struct config_sources sources;
	bool from_approvals; /* the decisions came from DIR/approvals */
};

/* Which directory under DIR holds the decisions: *ret_name is "decisions", or "approvals"
 * (returns 1) when only that one exists. -ENOMEM. */
int config_files_decisions_dir(const char *dir, const char **ret_name, struct cl_error *err);

/* Read the file set of DIR for PROJECT (NULL: no project; the name is validated with
 * config_project_name_check()). Fails with -EINVAL for a bad project name or a file that is
 * not a regular one, -EPERM for a world-writable file, -EFBIG for an oversized file, or the
 * errno of a failing open/read (other than ENOENT), naming the file. */
int config_files_read(const char *dir, const char *project, struct config_files **ret_files,
                      struct cl_error *err);

void config_files_free(struct config_files *files);
CL_DEFINE_TRIVIAL_CLEANUP(struct config_files *, config_files_free)

/* FN(PATH, USERDATA) for each symlink of the layout above in the config directory DIR (its
 * directories, *.yaml files and their *.lock), as deep as they lie
 * (decisions/projects/<project>.yaml), through linked directories too: a config kept in a
 * dotfiles repository (stow) is read through such links, and what they lead to is Cloister's
 * own as much as DIR is. A directory that cannot be read holds nothing. 0, or the first
 * negative FN returned, or -ENOMEM. */
int config_files_links(const char *dir, int (*fn)(const char *path, void *userdata),
                       void *userdata);

/* Read one config file PATH whole, with the checks above, into *ret_data (malloc'd,
 * NUL-terminated) and *ret_len. Returns 1 when read, 0 when it does not exist. */
int config_file_read(const char *path, char **ret_data, size_t *ret_len, struct cl_error *err);

/* config_files_read() then config_load(); when the decisions came from approvals/, the
 * first such load of the process says so in the config's warnings. */
int config_load_dir(const char *dir, const char *project, const struct config_load_options *options,
                    struct config **ret_config, struct cl_error *err);

#endif
