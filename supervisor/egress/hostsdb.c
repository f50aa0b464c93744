/* The host's name sources: see hostsdb.h. */
#include "supervisor/egress/hostsdb.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "supervisor/egress/resolver.h"
#include "base/fd_read.h"

/* ---- nsswitch.conf (pure) ---------------------------------------------------------------- */

/* "files dns", as without an nsswitch.conf. */
static void hostsdb_order_default(struct hostsdb_order *ret)
{
	*ret = (struct hostsdb_order){
	        .n = 2,
	        .source = {HOSTSDB_FILES, HOSTSDB_DNS},
	};
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* Apply one action item ("NOTFOUND=return", "!UNAVAIL=return") of WORD[0..LEN) to *STOP_ON. */
static void apply_action(const char *word, size_t len, unsigned *stop_on)
{
	static const struct {
		const char *name;
		unsigned bit;
	} statuses[] = {
	        {"success", 0},
	        {"notfound", HOSTSDB_NOTFOUND},
	        {"unavail", HOSTSDB_UNAVAIL},
	        {"tryagain", HOSTSDB_TRYAGAIN},
	};
	const unsigned all = HOSTSDB_NOTFOUND | HOSTSDB_UNAVAIL | HOSTSDB_TRYAGAIN;
	const char *eq = memchr(word, '=', len);
	bool negate = len > 0 && word[0] == '!';
	size_t name_len, action_len;
	unsigned bits = 0;
	bool known = false, ret;

	if (!eq)
		return;
	if (negate) {
		word++;
		len--;
	}
	name_len = (size_t)(eq - word);
	action_len = len - name_len - 1;
	for (size_t i = 0; i < ELEMENTSOF(statuses); i++)
		if (strlen(statuses[i].name) == name_len &&
		    strncasecmp(word, statuses[i].name, name_len) == 0) {
			bits = statuses[i].bit;
			known = true;
		}
	if (!known)
		return;
	if (action_len == 6 && strncasecmp(eq + 1, "return", 6) == 0)
		ret = true;
	else if ((action_len == 8 && strncasecmp(eq + 1, "continue", 8) == 0) ||
	         (action_len == 5 && strncasecmp(eq + 1, "merge", 5) == 0))
		ret = false;
	else
		return;
	if (negate)
		bits = all & ~bits;
	if (ret)
		*stop_on |= bits;
	else
		*stop_on &= ~bits;
}

static void note_skipped(struct hostsdb_order *o, const char *name, size_t len)
{
	size_t used = strlen(o->skipped);

	if (used + len + 2 > sizeof(o->skipped))
		return;
	if (used)
		o->skipped[used++] = ' ';
	memcpy(o->skipped + used, name, len);
	o->skipped[used + len] = '\0';
}

/* Parse the services of one `hosts:` line, LINE[0..LEN) after the colon. */
static void parse_services(const char *line, size_t len, struct hostsdb_order *o)
{
	unsigned *current = NULL; /* stop_on of the last service we use; NULL: skipped */
	size_t p = 0;

	*o = (struct hostsdb_order){0};
	while (p < len) {
		size_t s;

		while (p < len && is_blank(line[p]))
			p++;
		if (p >= len)
			break;
		if (line[p] == '[') {
			size_t end = p + 1;

			while (end < len && line[end] != ']')
				end++;
			for (size_t q = p + 1; q < end;) {
				while (q < end && is_blank(line[q]))
					q++;
				s = q;
				while (q < end && !is_blank(line[q]))
					q++;
				if (q > s && current)
					apply_action(line + s, q - s, current);
			}
			p = end < len ? end + 1 : end;
			continue;
		}
		s = p;
		while (p < len && !is_blank(line[p]) && line[p] != '[')
			p++;
		{
			const char *name = line + s;
			size_t n = p - s;
			int source = -1;

			if (n == 5 && strncmp(name, "files", 5) == 0)
				source = HOSTSDB_FILES;
			else if ((n == 3 && strncmp(name, "dns", 3) == 0) ||
			         (n == 7 && strncmp(name, "resolve", 7) == 0))
				source = HOSTSDB_DNS;
			current = NULL;
			if (source < 0) {
				note_skipped(o, name, n);
				continue;
			}
			for (size_t i = 0; i < o->n; i++)
				if (o->source[i] == (enum hostsdb_source)source)
					source = -1; /* once: "resolve … dns" asks the same servers
					              */
			if (source < 0 || o->n == ELEMENTSOF(o->source))
				continue;
			o->source[o->n] = (enum hostsdb_source)source;
			current = &o->stop_on[o->n];
			o->n++;
		}
	}
}

int hostsdb_order_parse(const char *text, size_t len, struct hostsdb_order *ret)
{
	size_t line = 0;

	while (line < len) {
		const char *nl = memchr(text + line, '\n', len - line);
		const char *hash;
		size_t end = nl ? (size_t)(nl - text) : len, p = line;

		hash = memchr(text + line, '#', end - line);
		if (hash)
			end = (size_t)(hash - text);
		while (p < end && is_blank(text[p]))
			p++;
		if (end - p >= 5 && strncmp(text + p, "hosts", 5) == 0) {
			p += 5;
			while (p < end && is_blank(text[p]))
				p++;
			if (p < end && text[p] == ':') {
				parse_services(text + p + 1, end - p - 1, ret);
				return 0;
			}
		}
		line = end < len && nl ? (size_t)(nl - text) + 1 : len;
	}
	hostsdb_order_default(ret);
	return -ENOENT;
}

enum hostsdb_status hostsdb_status_of(int error)
{
	if (error == -ENOENT || error == -ENODATA)
		return HOSTSDB_NOTFOUND;
	if (error == -ENXIO)
		return HOSTSDB_UNAVAIL;
	return HOSTSDB_TRYAGAIN;
}

/* ---- watched files ----------------------------------------------------------------------- */

struct watched {
	char *path; /* NULL: none */
	char *text; /* NULL: missing, unreadable or too large */
	size_t len;
	bool seen; /* stat succeeded last time */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	uint64_t checked_ms;
	int error; /* of the last read: 0 or a negative errno */
};

struct hostsdb {
	struct watched extra, hosts, nsswitch;
	struct hostsdb_order order;
};

/* Look at W's file again: re-read it when it is not the one read last time. With KEEP, a
 * file that cannot be read keeps its last good text (the file the user named, being
 * rewritten, does not make its names vanish); otherwise its names go. */
static void watched_check(struct watched *w, bool keep)
{
	_cleanup_close_ int fd = -EBADF;
	struct stat st;
	char *text = NULL;
	size_t len = 0;
	int r;

	if (!w->path)
		return;
	fd = open(w->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0) {
		w->error = -errno;
		w->seen = false;
		if (!keep) {
			free(w->text);
			w->text = NULL;
		}
		return;
	}
	if (w->seen && st.st_dev == w->dev && st.st_ino == w->ino && st.st_size == w->size &&
	    st.st_mtim.tv_sec == w->mtime.tv_sec && st.st_mtim.tv_nsec == w->mtime.tv_nsec)
		return;
	/* A FIFO would block, a device never end. */
	r = !S_ISREG(st.st_mode)             ? -EINVAL
	    : st.st_size > HOSTSDB_MAX_BYTES ? -EFBIG
	                                     : fd_read_all(fd, HOSTSDB_MAX_BYTES, &text, &len);
	w->error = r < 0 ? r : 0;
	if (r < 0 && keep && w->text)
		return; /* not marked seen: tried again at the next check */
	w->seen = true;
	w->dev = st.st_dev;
	w->ino = st.st_ino;
	w->size = st.st_size;
	w->mtime = st.st_mtim;
	free(w->text);
	w->text = r < 0 ? NULL : text;
	w->len = r < 0 ? 0 : len;
}

static void reorder(struct hostsdb *db)
{
	if (db->nsswitch.text)
		(void)hostsdb_order_parse(db->nsswitch.text, db->nsswitch.len, &db->order);
	else
		hostsdb_order_default(&db->order);
}

int hostsdb_new(const struct hostsdb_config *cfg, struct hostsdb **ret, struct cl_error *err)
{
	_cleanup_(hostsdb_freep) struct hostsdb *db = calloc(1, sizeof(*db));
	struct watched *files[] = {&db->extra, &db->hosts, &db->nsswitch};
	const char *paths[] = {cfg->extra, cfg->hosts, cfg->nsswitch};

	if (!db)
		return cl_error_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		if (!paths[i])
			continue;
		files[i]->path = strdup(paths[i]);
		if (!files[i]->path)
			return cl_error_set(err, -ENOMEM, "out of memory");
		watched_check(files[i], false);
	}
	if (cfg->extra && !db->extra.text)
		return cl_error_set(err, -EINVAL, "hosts file %s: %s", cfg->extra,
		                    db->extra.error == -EFBIG ? "larger than 256 KiB"
		                                              : strerror(-db->extra.error));
	reorder(db);
	*ret = TAKE_PTR(db);
	return 0;
}

void hostsdb_free(struct hostsdb *db)
{
	if (!db)
		return;
	free(db->extra.path);
	free(db->extra.text);
	free(db->hosts.path);
	free(db->hosts.text);
	free(db->nsswitch.path);
	free(db->nsswitch.text);
	free(db);
}

void hostsdb_refresh(struct hostsdb *db, uint64_t now_ms)
{
	struct watched *files[] = {&db->extra, &db->hosts, &db->nsswitch};

	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		struct watched *w = files[i];

		if (!w->path || (w->checked_ms && now_ms < w->checked_ms + HOSTSDB_CHECK_MS))
			continue;
		w->checked_ms = now_ms ? now_ms : 1;
		watched_check(w, w == &db->extra);
		if (w == &db->nsswitch)
			reorder(db);
	}
}

int hostsdb_find_extra(const struct hostsdb *db, const char *name, struct dns_addrs *ret)
{
	if (!db->extra.text)
		return -ENOENT;
	return resolver_hosts_find(db->extra.text, db->extra.len, name, ret);
}

int hostsdb_find_files(const struct hostsdb *db, const char *name, struct dns_addrs *ret)
{
	if (!db->hosts.text)
		return -ENXIO;
	return resolver_hosts_find(db->hosts.text, db->hosts.len, name, ret);
}

const struct hostsdb_order *hostsdb_order(const struct hostsdb *db)
{
	return &db->order;
}

void hostsdb_describe(const struct hostsdb *db, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	if (db->extra.path)
		len += (size_t)snprintf(buf + len, size - len, "%s, then ", db->extra.path);
	for (size_t i = 0; i < db->order.n && len < size; i++) {
		if (db->order.source[i] == HOSTSDB_FILES)
			len += (size_t)snprintf(buf + len, size - len, "%sfiles (%s%s)",
			                        i ? ", " : "",
			                        db->hosts.path ? db->hosts.path : "none",
			                        db->hosts.text ? "" : ", unreadable");
		else
			len += (size_t)snprintf(buf + len, size - len, "%sdns", i ? ", " : "");
	}
	if (len < size && db->order.n == 0)
		len += (size_t)snprintf(buf + len, size - len, "nothing");
	if (len < size && db->order.skipped[0])
		snprintf(buf + len, size - len, "; skipped: %s", db->order.skipped);
}
