/* Where a running supervisor tells the CLI client how to reach it: one small JSON file per
 * supervisor process in a private runtime directory,
 *   $XDG_RUNTIME_DIR/cloister/api/   when XDG_RUNTIME_DIR is an absolute path,
 *   /run/cloister/api/               for root,
 *   /tmp/cloister-UID/api/           otherwise, or, when another user took that name (anyone
 *                                    can create it in /tmp), /tmp/cloister-UID.XXXXXX/api/:
 *                                    the first such private directory of ours, made with
 *                                    mkdtemp by the first supervisor that needed it,
 * named PID.json, mode 0600 in a 0700 directory that must belong to us (a directory another
 * user prepared is refused). It holds the approval server's URL, the API token every request
 * without the dashboard's cookie needs, and a nonce only this supervisor and its user know: the
 * server at the URL proves it is the supervisor the file names (GET /api-proof, an HMAC of the
 * client's challenge under the nonce) before the client sends it the token. A file whose
 * process is gone (its pid dead, or reused: the start time differs) is removed when listed. */
#ifndef CLOISTER_API_INFO_H
#define CLOISTER_API_INFO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

struct api_info {
	char url[128];         /* "http://127.0.0.1:9999" */
	char tokens_url[128];  /* "" when the token API is off */
	char request_url[128]; /* "" when the request server is off */
	char token[256];       /* the API token */
	char name[256];        /* the sandbox's name */
	char nonce[65];        /* 64 hex characters; "" in a file of an older supervisor */
	pid_t pid;
	uint64_t start; /* the process's start time (/proc/PID/stat), 0: unknown */
};

#define API_PROOF_CHALLENGE_MAX 128 /* hex characters */

/* The start time of process PID in clock ticks since boot (field 22 of /proc/PID/stat). */
int api_info_start_time(pid_t pid, uint64_t *ret_start);

/* The proof for CHALLENGE (hex, at most API_PROOF_CHALLENGE_MAX characters): the HMAC-SHA-256
 * of CHALLENGE under NONCE, in hex. -EINVAL for a malformed challenge. */
int api_info_proof(const char *nonce, const char *challenge, char ret_proof[static 65]);

/* The directory for the current user (see above), malloc'd; nothing is created. */
int api_info_dir(char **ret_dir);
/* The same for a supervisor about to write there: the fallback directory is made if needed,
 * and *ret_fallback says it is used (the fixed name is another user's). */
int api_info_dir_claim(char **ret_dir, bool *ret_fallback);

/* Write INFO to DIR/PID.json atomically (creating DIR 0700 if needed). *ret_path is the file,
 * malloc'd, for api_info_remove. */
int api_info_write(const char *dir, const struct api_info *info, char **ret_path,
                   struct cl_error *err);
void api_info_remove(const char *path);

/* The user's dashboard secret: 64 hex characters in DIR/../secret (mode 0600), made on first
 * use and shared by every supervisor of this user, so a dashboard that logged in once keeps
 * working when a supervisor restarts. The directory must be private (see above); the sandbox
 * hides it from the agent. */
int api_info_secret(const char *dir, char ret[static 65], struct cl_error *err);

/* Parse one file's contents. -EINVAL for anything but the expected object. */
int api_info_parse(const char *json, size_t len, struct api_info *ret);

/* Call FN for every file in DIR whose process is alive, in pid order; the files of dead
 * processes are removed. Returns how many were found, or -errno when DIR cannot be read
 * (-ENOENT: no supervisor has run). */
int api_info_list(const char *dir, void (*fn)(const struct api_info *info, void *userdata),
                  void *userdata);

#endif
