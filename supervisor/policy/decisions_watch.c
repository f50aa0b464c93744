/* The decisions files as other runs change them; see decisions_watch.h. */
#include "supervisor/policy/decisions_watch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/loop.h"
#include "supervisor/policy/config.h"
#include "supervisor/policy/config_files.h"
#include "supervisor/policy/decisions.h"

struct watched {
	char *path; /* NULL: not watched (no project) */
	enum config_layer layer;
	struct decisions_stamp stamp; /* as read; present false: absent, or never read */
	bool settled;                 /* the stamp can be trusted (else: read at the next check) */
	bool read;                    /* read once at least */
	char *data;                   /* what was read (NULL: absent) */
	size_t len;
	struct config *cfg;
};

struct decisions_watch {
	struct watched files[2]; /* global, project */
	char *dir;
	char *project;
	struct loop *loop;
	struct loop_timer *timer;
	bool in_timer;
	bool notify;          /* a change not yet told to CHANGED */
	uint64_t hurry_until; /* loop ms: asks may be waiting, look more often until then */
	void (*changed)(void *userdata);
	void *userdata;
};

bool decisions_stamp_changed(const struct decisions_stamp *a, const struct decisions_stamp *b)
{
	if (a->present != b->present)
		return true;
	if (!a->present)
		return false;
	return a->dev != b->dev || a->ino != b->ino || a->mtime_ns != b->mtime_ns ||
	       a->ctime_ns != b->ctime_ns || a->size != b->size;
}

bool decisions_stamp_settled(const struct decisions_stamp *s, int64_t now_ns)
{
	int64_t age;

	if (!s->present)
		return true;
	age = now_ns - s->mtime_ns;
	/* A future mtime (a clock set back, a touch) is as little to be trusted as a recent one. */
	return age >= DECISIONS_STAMP_RACY_NS || age <= -DECISIONS_STAMP_RACY_NS;
}

static int64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* PATH's stamp now; an absent file (or directory) is a stamp of its own. */
static int stamp_of(const char *path, struct decisions_stamp *ret)
{
	struct stat st;

	*ret = (struct decisions_stamp){0};
	if (stat(path, &st) < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	*ret = (struct decisions_stamp){
	        .present = true,
	        .dev = st.st_dev,
	        .ino = st.st_ino,
	        .mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec,
	        .ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec,
	        .size = st.st_size,
	};
	return 0;
}

/* Read F's file (absent: nothing), under a shared lock of its "<path>.lock" when that is free
 * now (the writers take it exclusively, decisions.h). Never waited for: whoever can read the
 * config directory (the agent, read-only) can hold it for good, which would stop this loop and
 * every supervisor's of the user; and a writer only renames a whole file in place, so a read
 * without it sees the old file or the new one. 1 when its content differs from what was read
 * before. */
static int read_one(struct watched *f, const struct decisions_stamp *stamp, int64_t now_ns,
                    struct cl_error *err)
{
	_cleanup_free_ char *lock_path = NULL, *data = NULL;
	_cleanup_close_ int lock = -EBADF;
	_cleanup_(config_freep) struct config *cfg = NULL;
	struct config_source src = {.name = f->path};
	size_t len = 0;
	bool same, present;
	int r;

	if (asprintf(&lock_path, "%s.lock", f->path) < 0) {
		lock_path = NULL;
		return cl_error_set(err, -ENOMEM, "out of memory");
	}
	lock = open(lock_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (lock >= 0)
		while (flock(lock, LOCK_SH | LOCK_NB) < 0 && errno == EINTR)
			;
	r = config_file_read(f->path, &data, &len, err);
	if (r < 0)
		return r;
	present = r > 0;
	same = f->read && present == (f->data != NULL) &&
	       (!present || (len == f->len && !memcmp(data, f->data, len)));
	/* The stamp was taken before the read: a write since then changes it again, and the
	 * next check reads that. */
	f->stamp = *stamp;
	f->settled = decisions_stamp_settled(stamp, now_ns);
	if (same)
		return 0;
	if (present) {
		src.data = data;
		src.len = len;
		src.present = true;
		r = config_parse_file(CONFIG_FILE_DECISIONS, f->layer, &src, NULL, &cfg, err);
		if (r < 0) {
			/* Being edited by hand: keep what held, read it again next time. */
			f->settled = false;
			return r;
		}
		cfg->exec.security = EXEC_SECURITY_ALLOWLIST;
		cfg->exec.ask = EXEC_ASK_OFF;
		cfg->exec.ask_fallback = EXEC_SECURITY_DENY;
	}
	config_free(f->cfg);
	f->cfg = TAKE_PTR(cfg);
	free(f->data);
	f->data = present ? TAKE_PTR(data) : NULL;
	f->len = len;
	f->read = true;
	return 1;
}

static int on_timer(struct loop *loop, void *userdata);

static void arm(struct decisions_watch *w, uint64_t deadline_ms)
{
	if (!w->loop)
		return;
	if (w->timer)
		loop_cancel_timer(w->loop, w->timer);
	w->timer = NULL;
	/* Without its timer the watch still checks before each ask: not worth failing for. */
	if (loop_add_timer(w->loop, deadline_ms, on_timer, w, &w->timer) < 0)
		w->timer = NULL;
}

int decisions_watch_check(struct decisions_watch *w, struct cl_error *err)
{
	int64_t now_ns = realtime_ns();
	const char *sub = "decisions";
	bool changed = false;
	int r;

	if (!w)
		return 0;
	/* The config read approvals/ (the older name) while decisions/ does not exist; the
	 * first decision saved copies it there (decisions.h): follow it. */
	r = config_files_decisions_dir(w->dir, &sub, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < 2; i++) {
		struct watched *f = &w->files[i];
		struct decisions_stamp st;
		char path[PATH_MAX];
		int k;

		if (i == 1 && !w->project)
			continue;
		if (i == 0)
			k = snprintf(path, sizeof(path), "%s/%s/global.yaml", w->dir, sub);
		else
			k = snprintf(path, sizeof(path), "%s/%s/projects/%s.yaml", w->dir, sub,
			             w->project);
		if (k < 0 || (size_t)k >= sizeof(path)) {
			if (r >= 0)
				r = cl_error_set(err, -ENAMETOOLONG, "%s: name too long", w->dir);
			continue;
		}
		if (!f->path || strcmp(f->path, path)) {
			char *p = strdup(path);

			if (!p) {
				if (r >= 0)
					r = cl_error_set(err, -ENOMEM, "out of memory");
				continue;
			}
			free(f->path);
			f->path = p;
			f->settled = false;
		}
		k = stamp_of(f->path, &st);
		if (k < 0) {
			if (r >= 0)
				r = cl_error_set(err, k, "%s: %s", f->path, strerror(-k));
			continue;
		}
		if (f->read && f->settled && !decisions_stamp_changed(&f->stamp, &st))
			continue;
		k = read_one(f, &st, now_ns, err);
		if (k > 0)
			changed = true;
		else if (k < 0 && r >= 0)
			r = k;
	}
	if (changed) {
		w->notify = true;
		/* Told from the loop: the caller may be in the middle of a decision. */
		if (!w->in_timer)
			arm(w, 0);
	}
	return r < 0 ? r : changed ? 1 : 0;
}

int decisions_watch_before_ask(struct decisions_watch *w, struct cl_error *err)
{
	int r = decisions_watch_check(w, err);
	uint64_t now;

	if (!w || !w->loop || r > 0)
		return r;
	/* A person may answer this ask in another run: look more often for a while. */
	now = loop_now_ms();
	if (w->hurry_until < now + DECISIONS_WATCH_HURRY_MS / 2 || !w->timer) {
		w->hurry_until = now + DECISIONS_WATCH_HURRY_MS;
		arm(w, now + DECISIONS_WATCH_HURRY_INTERVAL_MS);
	}
	return r;
}

static int on_timer(struct loop *loop, void *userdata)
{
	struct decisions_watch *w = userdata;
	struct cl_error err = {""};

	(void)loop;
	w->timer = NULL;
	w->in_timer = true;
	(void)decisions_watch_check(w, &err); /* a file that does not parse: what held, holds */
	w->in_timer = false;
	if (w->notify) {
		w->notify = false;
		if (w->changed)
			w->changed(w->userdata);
	}
	{
		uint64_t now = loop_now_ms();

		arm(w, now + (now < w->hurry_until ? DECISIONS_WATCH_HURRY_INTERVAL_MS
		                                   : DECISIONS_WATCH_INTERVAL_MS));
	}
	return 0;
}

int decisions_watch_start(struct decisions_watch *w, struct loop *loop,
                          void (*changed)(void *userdata), void *userdata)
{
	if (!w)
		return 0;
	w->loop = loop;
	w->changed = changed;
	w->userdata = userdata;
	arm(w, w->notify ? 0 : loop_now_ms() + DECISIONS_WATCH_INTERVAL_MS);
	return w->timer ? 0 : -ENOMEM;
}

int decisions_watch_new(const char *dir, const char *project, struct decisions_watch **ret,
                        struct cl_error *err)
{
	struct decisions_watch *w;
	struct cl_error why = {""};
	int r = 0;

	*ret = NULL;
	if (!dir)
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return cl_error_set(err, -ENOMEM, "out of memory");
	w->files[0].layer = CONFIG_LAYER_GLOBAL_DECISIONS;
	w->files[1].layer = CONFIG_LAYER_PROJECT_DECISIONS;
	w->dir = strdup(dir);
	r = w->dir ? 0 : cl_error_set(err, -ENOMEM, "out of memory");
	if (r >= 0 && project) {
		_cleanup_free_ char *checked = NULL; /* the name checked as decisions.c does */

		w->project = strdup(project);
		r = w->project ? decisions_path(dir, project, &checked, err)
		               : cl_error_set(err, -ENOMEM, "out of memory");
	}
	if (r < 0) {
		decisions_watch_free(w);
		return r;
	}
	*ret = w;
	/* A file that cannot be read now is read at the next check: not an error of the
	 * watch. */
	(void)decisions_watch_check(w, &why);
	/* Nothing to tell yet: the caller reads what is there now. */
	w->notify = false;
	return 0;
}

void decisions_watch_free(struct decisions_watch *w)
{
	if (!w)
		return;
	if (w->loop && w->timer)
		loop_cancel_timer(w->loop, w->timer);
	for (size_t i = 0; i < 2; i++) {
		config_free(w->files[i].cfg);
		free(w->files[i].data);
		free(w->files[i].path);
	}
	free(w->project);
	free(w->dir);
	free(w);
}

const struct config *decisions_watch_global(const struct decisions_watch *w)
{
	return w ? w->files[0].cfg : NULL;
}

const struct config *decisions_watch_project(const struct decisions_watch *w)
{
	return w ? w->files[1].cfg : NULL;
}

bool decisions_watch_known(const struct decisions_watch *w, bool project)
{
	return w && w->files[project ? 1 : 0].read;
}

const char *decisions_watch_project_name(const struct decisions_watch *w)
{
	return w ? w->project : NULL;
}
