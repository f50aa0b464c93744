/* The ask for writes outside fs.write, its pure half (no fds, no clock): which opens write,
 * which paths are the kernel's alone to judge, and what people answered for the session.
 *
 * An open writes when its flags ask for it: O_WRONLY, O_RDWR, O_CREAT, O_TRUNC or O_TMPFILE
 * (the same bits the seccomp filter tests, notifier/filter.h); O_PATH opens nothing.
 * Paths under /dev, /proc and /sys are devices and kernel files, not files the host runs later:
 * the kernel's layers (mounts, Landlock) decide them, never a person.
 *
 * Session answers ("allow for this session"): an exact path, or a directory prefix (every path
 * below it) — the agreed `match` of file asks. Bounded: past WRITE_ANSWERS_MAX an answer counts
 * once only. */
#ifndef CLOISTER_FILES_WRITE_RULES_H
#define CLOISTER_FILES_WRITE_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define WRITE_ANSWERS_MAX 4096

bool write_rules_flags_write(int flags);
bool write_rules_kernel_only(const char *path);

struct write_answers;

int write_answers_new(struct write_answers **ret);
void write_answers_free(struct write_answers *a);
/* PATH (absolute, normalised) is allowed for the session: itself, or with PREFIX everything
 * below it too. 0, -E2BIG past the bound, -ENOMEM. */
int write_answers_allow(struct write_answers *a, const char *path, bool prefix);
bool write_answers_covers(const struct write_answers *a, const char *path);

/* How many reason lines a refused write gets, so that an agent cannot flood the user's terminal
 * through us: one per process and path among the last WRITE_NOTES_RECENT lines written, and
 * at most WRITE_NOTES_PER_SECOND in each second of the clock given. */
#define WRITE_NOTES_RECENT     32
#define WRITE_NOTES_PER_SECOND 10

struct write_notes {
	uint64_t second;
	unsigned in_second;
	struct {
		pid_t pid;
		uint64_t hash;
	} recent[WRITE_NOTES_RECENT];
	unsigned next, n;
};

/* May a line about PATH go to PID now (NOW_MS, a monotonic clock)? Counts it if so. */
bool write_notes_admit(struct write_notes *wn, uint64_t now_ms, pid_t pid, const char *path);

#endif
