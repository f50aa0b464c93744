#include "supervisor/policy/domain.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define LABEL_MAX 63

static int parse_port(const char *text, const char *whole, uint16_t *ret_port, struct cl_error *err)
{
	unsigned long v = 0;

	if (!*text)
		return cl_error_set(err, -EINVAL, "\"%s\": empty port after ':'", whole);
	for (const char *p = text; *p; p++) {
		if (*p < '0' || *p > '9')
			return cl_error_set(err, -EINVAL, "\"%s\": port must be a number", whole);
		v = v * 10 + (unsigned long)(*p - '0');
		if (v > 65535)
			return cl_error_set(err, -EINVAL, "\"%s\": port above 65535", whole);
	}
	if (v == 0)
		return cl_error_set(err, -EINVAL, "\"%s\": port 0 is not a port", whole);
	*ret_port = (uint16_t)v;
	return 0;
}

/* Lower-case NAME in place, drop one trailing dot and check every label. */
static int normalise_name(char *name, const char *whole, struct cl_error *err)
{
	size_t len = strlen(name);
	size_t label = 0;

	if (len > 0 && name[len - 1] == '.')
		name[--len] = '\0';
	if (len == 0)
		return cl_error_set(err, -EINVAL, "\"%s\": empty domain name", whole);
	if (len > DOMAIN_HOST_MAX)
		return cl_error_set(err, -EINVAL, "\"%s\": longer than %d characters", whole,
		                    DOMAIN_HOST_MAX);
	for (size_t i = 0; i <= len; i++) {
		char c = name[i];

		if (c == '.' || c == '\0') {
			if (label == 0)
				return cl_error_set(err, -EINVAL, "\"%s\": empty label", whole);
			label = 0;
			continue;
		}
		if (c >= 'A' && c <= 'Z')
			name[i] = (char)(c - 'A' + 'a');
		else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
		           c == '_'))
			return cl_error_set(err, -EINVAL,
			                    "\"%s\": character '%c' is not allowed in a name",
			                    whole, (c > 0x20 && c < 0x7f) ? c : '?');
		if (++label > LABEL_MAX)
			return cl_error_set(err, -EINVAL,
			                    "\"%s\": a label is longer than %d characters", whole,
			                    LABEL_MAX);
	}
	return 0;
}

/* Does the (normalised) name end in a number, i.e. is it an IPv4 address to a resolver?
 * getaddrinfo() takes every inet_aton() form: "2130706433", "127.1", "0x7f.0.0.1",
 * "0177.0.0.1" all reach 127.0.0.1, so they must not slip past an entry for "127.0.0.1".
 * As URL parsers do (WHATWG "ends in a number"), such a name is an address or nothing. */
static bool ends_in_number(const char *name)
{
	const char *last = strrchr(name, '.');

	last = last ? last + 1 : name;
	if (last[0] == '0' && last[1] == 'x')
		return last[2 + strspn(last + 2, "0123456789abcdef")] == '\0';
	return last[strspn(last, "0123456789")] == '\0';
}

/* Rewrite an IPv4 address given in any form inet_aton() accepts as a dotted quad in NAME
 * (DOMAIN_HOST_MAX + 1 bytes, cleared behind the text so that equal specs compare equal).
 * 1 rewritten, 0 not an address, -EINVAL. */
static int normalise_ipv4(char *name, const char *whole, struct cl_error *err)
{
	char quad[INET_ADDRSTRLEN];
	struct in_addr a;

	if (!ends_in_number(name))
		return 0;
	if (inet_aton(name, &a) == 0 || !inet_ntop(AF_INET, &a, quad, sizeof(quad)))
		return cl_error_set(err, -EINVAL,
		                    "\"%s\": ends in a number but is not an IPv4 address", whole);
	memset(name, 0, DOMAIN_HOST_MAX + 1);
	strcpy(name, quad);
	return 1;
}

/* The canonical text of an IPv6 address; an IPv4-mapped one (::ffff:a.b.c.d), which a
 * dual-stack socket connects to over IPv4, is written as the IPv4 address it is. */
static int format_ipv6(const struct in6_addr *a6, char *buf, size_t size)
{
	if (IN6_IS_ADDR_V4MAPPED(a6))
		return inet_ntop(AF_INET, &a6->s6_addr[12], buf, (socklen_t)size) ? 0 : -EINVAL;
	return inet_ntop(AF_INET6, a6, buf, (socklen_t)size) ? 0 : -EINVAL;
}

int domain_spec_parse(const char *text, bool allow_wildcard, struct domain_spec *ret,
                      struct cl_error *err)
{
	struct domain_spec spec = {0};
	char buf[DOMAIN_HOST_MAX + 1 + 64];
	const char *host = text;
	char *colon;
	int r;

	if (!text || !*text)
		return cl_error_set(err, -EINVAL, "empty domain name");
	if (strlen(text) >= sizeof(buf))
		return cl_error_set(err, -EINVAL, "\"%.40s…\": longer than %d characters", text,
		                    DOMAIN_HOST_MAX);
	strcpy(buf, text);

	if (buf[0] == '[') {
		/* "[v6]" or "[v6]:port" */
		char *close = strchr(buf, ']');
		struct in6_addr a6;

		if (!close)
			return cl_error_set(err, -EINVAL, "\"%s\": missing ']'", text);
		*close = '\0';
		if (close[1] == ':') {
			r = parse_port(close + 2, text, &spec.port, err);
			if (r < 0)
				return r;
		} else if (close[1] != '\0') {
			return cl_error_set(err, -EINVAL, "\"%s\": unexpected text after ']'",
			                    text);
		}
		if (inet_pton(AF_INET6, buf + 1, &a6) != 1)
			return cl_error_set(err, -EINVAL, "\"%s\": not an IPv6 address", text);
		/* Canonical text form, so that "0:0::1" and "::1" are one address. */
		if (format_ipv6(&a6, spec.host, sizeof(spec.host)) < 0)
			return cl_error_set(err, -EINVAL, "\"%s\": not an IPv6 address", text);
		*ret = spec;
		return 0;
	}

	colon = strchr(buf, ':');
	if (colon && strchr(colon + 1, ':')) {
		/* A bare IPv6 literal: several colons and no brackets, so no port. */
		struct in6_addr a6;

		if (inet_pton(AF_INET6, buf, &a6) != 1)
			return cl_error_set(err, -EINVAL, "\"%s\": not an IPv6 address", text);
		if (format_ipv6(&a6, spec.host, sizeof(spec.host)) < 0)
			return cl_error_set(err, -EINVAL, "\"%s\": not an IPv6 address", text);
		*ret = spec;
		return 0;
	}
	if (colon) {
		*colon = '\0';
		r = parse_port(colon + 1, text, &spec.port, err);
		if (r < 0)
			return r;
	}

	host = buf;
	if (host[0] == '*') {
		if (!allow_wildcard)
			return cl_error_set(
			        err, -EINVAL,
			        "\"%s\": a wildcard belongs in a pattern entry, not here", text);
		if (host[1] != '.')
			return cl_error_set(
			        err, -EINVAL,
			        "\"%s\": a wildcard must be a whole leading \"*.\" label", text);
		spec.wildcard = true;
		host += 2;
	}
	if (strchr(host, '*'))
		return cl_error_set(
		        err, -EINVAL,
		        "\"%s\": '*' is only allowed as the whole first label (\"*.example.com\")",
		        text);
	if (strlen(host) > DOMAIN_HOST_MAX)
		return cl_error_set(err, -EINVAL, "\"%s\": longer than %d characters", text,
		                    DOMAIN_HOST_MAX);
	strcpy(spec.host, host);
	r = normalise_name(spec.host, text, err);
	if (r < 0)
		return r;
	r = normalise_ipv4(spec.host, text, err);
	if (r < 0)
		return r;
	if (spec.wildcard && r > 0)
		return cl_error_set(err, -EINVAL,
		                    "\"%s\": a wildcard cannot apply to an IP address", text);
	*ret = spec;
	return 0;
}

/* How many labels QUERY has in front of RULE's host ("*.example.com": 0 for the apex, 1 for
 * api.example.com, 2 for a.b.example.com), or -1 when QUERY is not under it at all. */
static int labels_below(const struct domain_spec *rule, const struct domain_spec *query)
{
	size_t qlen = strlen(query->host), rlen = strlen(rule->host);
	int n = 1;

	if (strcmp(rule->host, query->host) == 0)
		return 0;
	if (qlen < rlen + 2 || strcmp(query->host + qlen - rlen, rule->host) != 0 ||
	    query->host[qlen - rlen - 1] != '.')
		return -1;
	for (size_t i = 0; i < qlen - rlen - 1; i++)
		n += query->host[i] == '.';
	return n;
}

static bool spec_matches(const struct domain_spec *rule, const struct domain_spec *query,
                         int max_depth)
{
	int depth;

	if (query->wildcard)
		return false;
	if (rule->port != 0 && rule->port != query->port)
		return false;
	if (!rule->wildcard)
		return strcmp(rule->host, query->host) == 0;
	depth = labels_below(rule, query);
	return depth >= 0 && (max_depth < 0 || depth <= max_depth);
}

bool domain_spec_matches(const struct domain_spec *rule, const struct domain_spec *query)
{
	return spec_matches(rule, query, 1);
}

bool domain_spec_matches_deny(const struct domain_spec *rule, const struct domain_spec *query)
{
	return spec_matches(rule, query, -1);
}

int domain_spec_depth_below(const struct domain_spec *rule, const struct domain_spec *query)
{
	if (!rule->wildcard || query->wildcard)
		return -1;
	return labels_below(rule, query);
}

int domain_spec_format(const struct domain_spec *rule, char *buf, unsigned long size)
{
	bool v6 = strchr(rule->host, ':') != NULL;
	int n;

	if (v6 && rule->port)
		n = snprintf(buf, size, "[%s]:%u", rule->host, rule->port);
	else if (v6)
		n = snprintf(buf, size, "[%s]", rule->host);
	else if (rule->port)
		n = snprintf(buf, size, "%s%s:%u", rule->wildcard ? "*." : "", rule->host,
		             rule->port);
	else
		n = snprintf(buf, size, "%s%s", rule->wildcard ? "*." : "", rule->host);
	if (n < 0 || (unsigned long)n >= size)
		return -ENOSPC;
	return n;
}

int domain_name_normalise(const char *name, size_t len, unsigned flags, char *ret)
{
	char out[DOMAIN_HOST_MAX + 1];
	size_t label = 0;
	bool digits_only = true;

	if (len > 0 && name[len - 1] == '.')
		len--;
	if (len == 0 || len > DOMAIN_HOST_MAX)
		return -EINVAL;
	for (size_t i = 0; i <= len; i++) {
		char c = i < len ? name[i] : '.';

		if (c == '.') {
			/* End of a label: not empty, no '-' at either end. */
			if (label == 0 || out[i - 1] == '-')
				return -EINVAL;
			if (i < len)
				digits_only = true;
			label = 0;
			if (i < len)
				out[i] = '.';
			continue;
		}
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c >= '0' && c <= '9') {
			/* a digit keeps digits_only as it is */
		} else if ((c >= 'a' && c <= 'z') ||
		           (c == '_' && (flags & DOMAIN_NAME_UNDERSCORE))) {
			digits_only = false;
		} else if (c == '-' && label > 0) {
			digits_only = false;
		} else {
			return -EINVAL;
		}
		if (++label > LABEL_MAX)
			return -EINVAL;
		out[i] = c;
	}
	if (digits_only)
		return -EINVAL;
	out[len] = '\0';
	memcpy(ret, out, len + 1);
	return 0;
}
