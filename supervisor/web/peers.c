/* The other dashboards of this user; see peers.h. */
#include "supervisor/web/peers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "supervisor/web/listeners.h"

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

struct collect {
	uint16_t self_port;
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
	if (listeners_find(port, LISTENERS_LOOPBACK4, &uid) < 0 || uid != geteuid())
		return;
	c->n++;
	if (c->fn)
		c->fn(info, c->userdata);
}

static int list(struct collect *c)
{
	_cleanup_free_ char *dir = NULL;
	int r;

	r = api_info_dir(&dir);
	if (r < 0)
		return r;
	r = api_info_list(dir, consider, c);
	return r < 0 ? r : c->n;
}

bool peers_port_held(uint16_t port)
{
	return listeners_find(port, LISTENERS_ANY, NULL) != -ENOENT;
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
