/* The dashboard's files (supervisor/web/dashboard/), compiled in by scripts/embed-assets. */
#ifndef CLOISTER_WEB_ASSETS_H
#define CLOISTER_WEB_ASSETS_H

#include <stddef.h>

struct web_asset {
	const char *path;         /* "/", "/static/app.js", … */
	const char *content_type; /* "text/html; charset=utf-8", … */
	const unsigned char *data;
	size_t len;
};

extern const struct web_asset web_assets[];
extern const size_t web_assets_count;

#endif
