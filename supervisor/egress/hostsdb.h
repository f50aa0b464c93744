/* The host's own sources of names for the proxy's host-side lookups, used as the host's C
 * library would use them: the hosts files, in the order /etc/nsswitch.conf's `hosts:` line
 * gives `files` and `dns`.
 *
 *   - files: /etc/hosts (hostsdb_config.hosts). An extra file (`--hosts FILE`) is consulted
 *     first, before every source and whatever the order says: the user named it.
 *   - dns: the resolver's upstream (resolver.h); this module only says where it stands.
 *   - `resolve` (systemd-resolved) counts as dns: resolv.conf then names resolved's stub.
 *   - every other service (mdns4_minimal, myhostname, mymachines, wins, nis, …) is skipped
 *     and named in hostsdb_describe(): each needs an NSS module or a daemon of its own, and
 *     myhostname's answers are local addresses, which the proxy refuses anyway.
 *   - actions: `[STATUS=return]` and `[!STATUS=return]` (STATUS: NOTFOUND, UNAVAIL, TRYAGAIN;
 *     several per bracket) after files or dns end the lookup on that status; SUCCESS always
 *     ends it, `continue` is the default. Actions after a skipped service go with it.
 *   - no nsswitch.conf, or no `hosts:` line in it: "files dns".
 *
 * Whatever a file maps a name to goes through the proxy's checks like a DNS answer does
 * (loopback, link-local, metadata and host addresses refused unless the policy names the
 * host): this module only finds addresses.
 *
 * The files are re-read when they change (inode, size or mtime), checked at most once a
 * second each, and read only up to HOSTSDB_MAX_BYTES: a bounded read of a small local file,
 * never a wait on the network. */
#ifndef CLOISTER_HOSTSDB_H
#define CLOISTER_HOSTSDB_H

#include <stddef.h>
#include <stdint.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "supervisor/egress/dns_msg.h"

#define HOSTSDB_MAX_BYTES (256 * 1024)
#define HOSTSDB_CHECK_MS  1000

enum hostsdb_source {
	HOSTSDB_FILES,
	HOSTSDB_DNS,
};

/* Lookup outcomes an action can name (bits); SUCCESS always ends a lookup. */
enum hostsdb_status {
	HOSTSDB_NOTFOUND = 1,
	HOSTSDB_UNAVAIL = 2,
	HOSTSDB_TRYAGAIN = 4,
};

struct hostsdb_order {
	size_t n;
	enum hostsdb_source source[2]; /* each at most once, in the file's order */
	unsigned stop_on[2];           /* hostsdb_status bits that end the lookup there */
	char skipped[128];             /* services not used, space-separated ("" none) */
};

/* The order of TEXT's (an nsswitch.conf of LEN bytes) `hosts:` line (pure). -ENOENT, with
 * *ret the default, when there is none. */
int hostsdb_order_parse(const char *text, size_t len, struct hostsdb_order *ret);

/* The lookup status of a resolver error: -ENOENT and -ENODATA NOTFOUND, -ENXIO UNAVAIL,
 * anything else TRYAGAIN. */
enum hostsdb_status hostsdb_status_of(int error);

struct hostsdb_config {
	const char *extra;    /* --hosts FILE; NULL: none. Must be readable at hostsdb_new(). */
	const char *hosts;    /* the `files` source, normally /etc/hosts; NULL: none */
	const char *nsswitch; /* normally /etc/nsswitch.conf; NULL: "files dns" */
};

struct hostsdb;

/* Read the files of CFG (paths copied). -EINVAL (ERR says why) when EXTRA cannot be read or
 * is over HOSTSDB_MAX_BYTES; HOSTS and NSSWITCH may be missing (then files answers UNAVAIL /
 * the default order holds) and are looked at again later. */
int hostsdb_new(const struct hostsdb_config *cfg, struct hostsdb **ret, struct cl_error *err);
void hostsdb_free(struct hostsdb *db);
CL_DEFINE_TRIVIAL_CLEANUP(struct hostsdb *, hostsdb_free)

/* Re-read the files that changed, each looked at no more than once per HOSTSDB_CHECK_MS
 * (NOW_MS: a monotonic clock). */
void hostsdb_refresh(struct hostsdb *db, uint64_t now_ms);

/* The addresses the extra file gives NAME (normalised): 0 and *ret, or -ENOENT. */
int hostsdb_find_extra(const struct hostsdb *db, const char *name, struct dns_addrs *ret);

/* The `files` source: 0 and *ret, -ENOENT (not there) or -ENXIO (no hosts file). */
int hostsdb_find_files(const struct hostsdb *db, const char *name, struct dns_addrs *ret);

const struct hostsdb_order *hostsdb_order(const struct hostsdb *db);

/* One line for `run -v`: "--hosts FILE, then files (/etc/hosts), dns; skipped: mdns4". */
void hostsdb_describe(const struct hostsdb *db, char *buf, size_t size);

#endif
