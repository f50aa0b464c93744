/* The other dashboards of this user; see peers.h. */
#include "supervisor/web/peers.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"

#define PROC_NET_TCP_MAX (4 * 1024 * 1024)
#define TCP_LISTEN_STATE 0x0A

int peers_listener_uid(const char *text, uint16_t port, uid_t *ret_uid)
{
	const char *line = strchr(text, '\n'); /* the header */

	if (!line || !strstr(text, "local_address"))
		return -EINVAL;
	for (line++; *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : line + strlen(line)) {
		unsigned addr, lport, state, uid;

		/* "  0: 0100007F:270F 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000
		 * …": the address in the kernel's byte order as hex (127.0.0.1 is 0100007F here).
		 */
		if (sscanf(line, " %*u: %8X:%4X %*X:%*X %X %*X:%*X %*X:%*X %*X %u", &addr, &lport,
		           &state, &uid) != 4)
			continue;
		if (lport != port || state != TCP_LISTEN_STATE)
			continue;
		if (addr != 0x0100007Fu && addr != 0x7F000001u)
			continue;
		*ret_uid = (uid_t)uid;
		return 0;
	}
	return -ENOENT;
}

bool peers_port_listened(const char *text, uint16_t port)
{
	const char *line = strchr(text, '\n');

	for (; line && *line; line = strchr(line + 1, '\n')) {
		char local[64];
		unsigned state;
		const char *colon;

		if (sscanf(line + 1, " %*u: %63s %*s %X", local, &state) != 2)
			continue;
		colon = strrchr(local, ':');
		if (colon && state == TCP_LISTEN_STATE && strtoul(colon + 1, NULL, 16) == port)
			return true;
	}
	return false;
}

uint16_t peers_origin_port(const char *origin)
{
	static const char prefix[] = "http://127.0.0.1:";
	const char *p;
	unsigned long port = 0;

	if (strncmp(origin, prefix, sizeof(prefix) - 1))
		return 0;
	p = origin + sizeof(prefix) - 1;
	if (*p < '1' || *p > '9' || strlen(p) > 5)
		return 0;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return 0;
		port = port * 10 + (unsigned long)(*p - '0');
	}
	return port <= UINT16_MAX ? (uint16_t)port : 0;
}

static char *read_proc_net(const char *path)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0, cap = 64 * 1024;
	char *buf;

	if (fd < 0)
		return NULL;
	buf = malloc(cap);
	while (buf) {
		ssize_t n;

		if (len + 1 >= cap) {
			char *more = cap < PROC_NET_TCP_MAX ? realloc(buf, cap * 2) : NULL;

			if (!more) {
				free(buf);
				return NULL;
			}
			buf = more;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (buf)
		buf[len] = '\0';
	return buf;
}

struct collect {
	uint16_t self_port;
	const char *tcp;
	void (*fn)(const struct api_info *info, void *userdata);
	void *userdata;
	const char *want; /* an origin: only that one */
	int n;
};

static void consider(const struct api_info *info, void *userdata)
{
	struct collect *c = userdata;
	uint16_t port = peers_origin_port(info->url);
	uid_t uid;

	if (!port || port == c->self_port || (c->want && strcmp(c->want, info->url)))
		return;
	if (peers_listener_uid(c->tcp, port, &uid) < 0 || uid != geteuid())
		return;
	c->n++;
	if (c->fn)
		c->fn(info, c->userdata);
}

static int list(struct collect *c)
{
	_cleanup_free_ char *dir = NULL, *tcp = NULL;
	int r;

	r = api_info_dir(&dir);
	if (r < 0)
		return r;
	tcp = read_proc_net("/proc/net/tcp");
	if (!tcp)
		return -EIO;
	c->tcp = tcp;
	r = api_info_list(dir, consider, c);
	return r < 0 ? r : c->n;
}

bool peers_port_held(uint16_t port)
{
	static const char *const tables[] = {"/proc/net/tcp", "/proc/net/tcp6"};

	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		_cleanup_free_ char *text = read_proc_net(tables[i]);

		if (!text)
			return errno != ENOENT; /* no IPv6: nothing listens there */
		if (peers_port_listened(text, port))
			return true;
	}
	return false;
}

bool peers_origin_ok(const char *origin, uint16_t self_port)
{
	struct collect c = {.self_port = self_port, .want = origin};

	if (!peers_origin_port(origin))
		return false;
	return list(&c) > 0;
}

int peers_list(uint16_t self_port, void (*fn)(const struct api_info *info, void *userdata),
               void *userdata)
{
	struct collect c = {.self_port = self_port, .fn = fn, .userdata = userdata};

	return list(&c);
}
