/* The decisions files of one project (decisions.h: global and project) as other runs change
 * them, for a running supervisor: exec and domain decisions made or removed elsewhere hold
 * here within a second, and at once for an ask; while asks may be waiting, within 100 ms.
 *
 * No inotify: closing an inotify instance waits for an SRCU grace period (6-17 ms of every
 * run's exit on this kernel). Instead, a stat of each file — its stamp: device, inode, mtime
 * and ctime in ns, size — on a loop timer (DECISIONS_WATCH_INTERVAL_MS) and whenever a caller
 * is about to ask a person (decisions_watch_check()). A file replaced by rename (what
 * decisions.c does) has another inode; one edited in place another mtime or size. Two
 * in-place edits of one size within one tick of the filesystem's coarse clock keep the
 * stamp: a file read while its mtime is that recent is read again at the next check, until
 * its stamp is old enough to be trusted (decisions_stamp_settled()). */
#ifndef CLOISTER_DECISIONS_WATCH_H
#define CLOISTER_DECISIONS_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"

#define DECISIONS_WATCH_INTERVAL_MS 1000
/* After a caller's check (it is about to ask a person, who may answer in another run), every
 * DECISIONS_WATCH_HURRY_INTERVAL_MS for DECISIONS_WATCH_HURRY_MS. */
#define DECISIONS_WATCH_HURRY_INTERVAL_MS 100
#define DECISIONS_WATCH_HURRY_MS          60000
/* A file whose mtime is less than this before the stat that read it is read again. */
#define DECISIONS_STAMP_RACY_NS (2 * 1000000000LL)

struct decisions_stamp {
	bool present;
	uint64_t dev, ino;
	int64_t mtime_ns, ctime_ns;
	int64_t size;
};

/* Pure: the file may hold other content than what was read with stamp A. */
bool decisions_stamp_changed(const struct decisions_stamp *a, const struct decisions_stamp *b);
/* Pure: stamp S, taken at NOW_NS (CLOCK_REALTIME, ns), says for sure that the file stays as
 * read until its stamp changes (its mtime is not within DECISIONS_STAMP_RACY_NS of NOW_NS,
 * before or after). An absent file is settled. */
bool decisions_stamp_settled(const struct decisions_stamp *s, int64_t now_ns);

struct decisions_watch;
struct config;
struct loop;

/* Watch DIR's global decisions file and PROJECT's (NULL: none); both copied. DIR NULL: there
 * is nothing to watch (*RET NULL), and every call below does nothing. Reads the files once
 * now (one that cannot be read or parsed is tried again at each check: see
 * decisions_watch_known()). 0, or -errno with ERR (memory, a bad project name). */
int decisions_watch_new(const char *dir, const char *project, struct decisions_watch **ret,
                        struct cl_error *err);
void decisions_watch_free(struct decisions_watch *w);

/* Stat the files; read again (each under its lock, decisions.h) those whose stamp changed or
 * was not settled. 1 when what a file holds changed, 0 when nothing did, -errno with ERR when
 * one could not be read or parsed (what was read before holds). After a change the CHANGED
 * of decisions_watch_start() is called from the loop, never from inside this call. */
int decisions_watch_check(struct decisions_watch *w, struct cl_error *err);
/* The same, called just before a person is asked: from then on the timer looks every
 * DECISIONS_WATCH_HURRY_INTERVAL_MS for DECISIONS_WATCH_HURRY_MS (the person may answer in
 * another run of the project, and the ask here waits for it). */
int decisions_watch_before_ask(struct decisions_watch *w, struct cl_error *err);

/* Check every DECISIONS_WATCH_INTERVAL_MS on LOOP, and call CHANGED(USERDATA) after a check
 * (this one's or a caller's) found a change. 0 or -errno. */
int decisions_watch_start(struct decisions_watch *w, struct loop *loop,
                          void (*changed)(void *userdata), void *userdata);

/* The rules as last read (a config holding only the file's sections, with the settings of a
 * rule set: exec allowlist, never asking; NULL when there is no such file or it was never
 * read): the global file's and the project's. */
const struct config *decisions_watch_global(const struct decisions_watch *w);
const struct config *decisions_watch_project(const struct decisions_watch *w);
/* The global file (PROJECT false) or the project's has been read: what the getters above
 * give is what the file holds (absent: NULL). False before a first good read. */
bool decisions_watch_known(const struct decisions_watch *w, bool project);
/* The project watched (NULL: none). */
const char *decisions_watch_project_name(const struct decisions_watch *w);

#endif
