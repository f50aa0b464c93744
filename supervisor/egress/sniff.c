#include "supervisor/egress/sniff.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "supervisor/egress/http_head.h"
#include "supervisor/egress/tls_sni.h"

/* An HTTP request head naming a host: 1 named (RET set), 0 incomplete, <0 not one. */
static int http_name(const uint8_t *data, size_t len, char *ret_host)
{
	struct http_request_head *head = malloc(sizeof(*head)); /* too big for the stack */
	struct http_authority auth;
	int h;

	if (!head)
		return -ENOMEM;
	h = http_head_parse((const char *)data, len, head, NULL);
	if (h > 0) {
		if (http_head_host(head, &auth, NULL) >= 0 && !auth.ip) {
			snprintf(ret_host, DOMAIN_HOST_MAX + 1, "%s", auth.host);
			h = 1;
		} else {
			h = -ENOENT;
		}
	}
	free(head);
	return h;
}

enum sniff_verdict sniff_name(const uint8_t *data, size_t len, bool final, struct sniff_name *ret)
{
	char host[DOMAIN_HOST_MAX + 1];
	enum tls_sni_status tls;
	int h;

	if (len == 0)
		return final ? SNIFF_FALLBACK : SNIFF_WAIT;
	tls = tls_sni_parse(data, len, host, NULL);
	if (tls == TLS_SNI_FOUND) {
		snprintf(ret->host, sizeof(ret->host), "%s", host);
		ret->source = "sni";
		return SNIFF_NAMED;
	}
	if (tls == TLS_SNI_NEED_MORE)
		return final ? SNIFF_FALLBACK : SNIFF_WAIT;
	h = http_name(data, len, host);
	if (h > 0) {
		snprintf(ret->host, sizeof(ret->host), "%s", host);
		ret->source = "http-host";
		return SNIFF_NAMED;
	}
	if (h == 0 && !final)
		return SNIFF_WAIT;
	return SNIFF_FALLBACK;
}

const char *sniff_verdict_to_string(enum sniff_verdict v)
{
	switch (v) {
	case SNIFF_WAIT:
		return "wait";
	case SNIFF_NAMED:
		return "named";
	case SNIFF_FALLBACK:
		return "fallback";
	}
	return "unknown";
}
