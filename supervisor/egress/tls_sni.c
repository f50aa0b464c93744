#include "supervisor/egress/tls_sni.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define RECORD_HANDSHAKE     22
#define HANDSHAKE_HELLO      1
#define RECORD_PLAINTEXT_MAX 16384 /* RFC 8446 5.1: 2^14 */
#define EXT_SERVER_NAME      0
#define NAME_TYPE_HOST       0

/* A bounded view of bytes; every read checks what is left. */
struct cursor {
	const uint8_t *p;
	size_t n;
};

static bool take_u8(struct cursor *c, unsigned *ret)
{
	if (c->n < 1)
		return false;
	*ret = c->p[0];
	c->p++;
	c->n--;
	return true;
}

static bool take_u16(struct cursor *c, unsigned *ret)
{
	if (c->n < 2)
		return false;
	*ret = (unsigned)c->p[0] << 8 | c->p[1];
	c->p += 2;
	c->n -= 2;
	return true;
}

static bool take_bytes(struct cursor *c, size_t len, struct cursor *ret)
{
	if (c->n < len)
		return false;
	ret->p = c->p;
	ret->n = len;
	c->p += len;
	c->n -= len;
	return true;
}

/* A length-prefixed vector: the prefix (1 or 2 bytes) and the bytes it counts. */
static bool take_vector(struct cursor *c, int prefix, struct cursor *ret)
{
	unsigned len;

	if (!(prefix == 1 ? take_u8(c, &len) : take_u16(c, &len)))
		return false;
	return take_bytes(c, len, ret);
}

static enum tls_sni_status malformed(struct cl_error *err, const char *what)
{
	cl_error_set(err, -EINVAL, "malformed ClientHello: %s", what);
	return TLS_SNI_MALFORMED;
}

/* The server_name extension (RFC 6066 3): a list of (type, name); one host name at most. */
static enum tls_sni_status parse_server_name(struct cursor ext, char *host, bool *found,
                                             struct cl_error *err)
{
	struct cursor list;

	if (!take_vector(&ext, 2, &list) || ext.n != 0)
		return malformed(err, "server_name list length does not match its extension");
	if (list.n == 0)
		return malformed(err, "empty server_name list");
	while (list.n > 0) {
		struct cursor name;
		unsigned type;

		if (!take_u8(&list, &type) || !take_vector(&list, 2, &name))
			return malformed(err, "server_name entry overruns its list");
		if (type != NAME_TYPE_HOST)
			continue;
		if (*found)
			return malformed(err, "more than one host name");
		if (domain_name_normalise((const char *)name.p, name.n, 0, host) < 0)
			return malformed(err, "server name is not a host name");
		*found = true;
	}
	return TLS_SNI_FOUND;
}

/* The ClientHello body (RFC 8446 4.1.2, same layout back to TLS 1.0). */
static enum tls_sni_status parse_hello(struct cursor c, char *ret_host, struct cl_error *err)
{
	uint8_t seen[65536 / 8] = {0};
	char host[DOMAIN_HOST_MAX + 1];
	struct cursor skip, exts;
	unsigned version;
	bool found = false;

	if (!take_u16(&c, &version) || !take_bytes(&c, 32, &skip))
		return malformed(err, "shorter than its version and random");
	if (version >> 8 != 3)
		return malformed(err, "client version is not 3.x");
	if (!take_vector(&c, 1, &skip) || skip.n > 32)
		return malformed(err, "bad session id");
	if (!take_vector(&c, 2, &skip) || skip.n < 2 || skip.n % 2 != 0)
		return malformed(err, "bad cipher suite list");
	if (!take_vector(&c, 1, &skip) || skip.n < 1)
		return malformed(err, "bad compression method list");
	if (c.n == 0)
		return TLS_SNI_ABSENT; /* no extensions at all (SSL 3.0 style) */
	if (!take_vector(&c, 2, &exts) || c.n != 0)
		return malformed(err, "extensions length does not match the message");
	while (exts.n > 0) {
		struct cursor ext;
		unsigned type;

		if (!take_u16(&exts, &type) || !take_vector(&exts, 2, &ext))
			return malformed(err, "extension overruns the extension list");
		if (seen[type / 8] & (1u << (type % 8)))
			return malformed(err, "duplicate extension");
		seen[type / 8] |= (uint8_t)(1u << (type % 8));
		if (type == EXT_SERVER_NAME) {
			enum tls_sni_status s = parse_server_name(ext, host, &found, err);
			if (s != TLS_SNI_FOUND)
				return s;
		}
	}
	if (!found)
		return TLS_SNI_ABSENT;
	memcpy(ret_host, host, strlen(host) + 1);
	return TLS_SNI_FOUND;
}

enum tls_sni_status tls_sni_parse(const void *data, size_t len, char *ret_host,
                                  struct cl_error *err)
{
	static uint8_t const version_ok_max = 4; /* record versions 3.0 … 3.4 */
	const uint8_t *d = data;
	uint8_t hs[4 + TLS_SNI_MAX_HELLO];
	size_t hs_len = 0, hello_len = 0, pos = 0;

	/* The first three bytes tell TLS from anything else (HTTP, SSH, SSLv2 hellos). */
	if (len >= 1 && d[0] != RECORD_HANDSHAKE) {
		cl_error_set(err, -EPROTO, "first byte is not a TLS handshake record");
		return TLS_SNI_NOT_TLS;
	}
	if ((len >= 2 && d[1] != 3) || (len >= 3 && d[2] > version_ok_max)) {
		cl_error_set(err, -EPROTO, "record version is not TLS");
		return TLS_SNI_NOT_TLS;
	}

	for (unsigned records = 0;; records++) {
		size_t rlen, avail, used = 0;

		if (pos + 5 > len) {
			/* What has arrived of the next header must still look right. */
			if (pos < len && d[pos] != RECORD_HANDSHAKE)
				return malformed(err, "another record type before the hello ended");
			return TLS_SNI_NEED_MORE;
		}
		if (records == TLS_SNI_MAX_RECORDS)
			return malformed(err, "spread over too many records");
		if (d[pos] != RECORD_HANDSHAKE)
			return malformed(err, "another record type before the hello ended");
		if (d[pos + 1] != 3 || d[pos + 2] > version_ok_max)
			return malformed(err, "record version is not TLS");
		rlen = (size_t)d[pos + 3] << 8 | d[pos + 4];
		if (rlen == 0 || rlen > RECORD_PLAINTEXT_MAX)
			return malformed(err, "record length is 0 or above 16384");
		avail = len - pos - 5 < rlen ? len - pos - 5 : rlen;

		/* Append this fragment to the handshake message, up to the message's end. */
		while (used < avail) {
			size_t want = hs_len < 4 ? 4 : 4 + hello_len;
			size_t n = avail - used < want - hs_len ? avail - used : want - hs_len;

			if (n == 0)
				break;
			memcpy(hs + hs_len, d + pos + 5 + used, n);
			hs_len += n;
			used += n;
			if (hs_len == 4) {
				if (hs[0] != HANDSHAKE_HELLO)
					return malformed(err, "first handshake message is not "
					                      "a ClientHello");
				hello_len = (size_t)hs[1] << 16 | (size_t)hs[2] << 8 | hs[3];
				if (hello_len > TLS_SNI_MAX_HELLO)
					return malformed(err, "longer than 16 KiB");
			}
		}
		if (hs_len >= 4 && hs_len == 4 + hello_len) {
			struct cursor body = {hs + 4, hello_len};
			return parse_hello(body, ret_host, err);
		}
		if (avail < rlen)
			return TLS_SNI_NEED_MORE;
		pos += 5 + rlen;
	}
}

const char *tls_sni_status_to_string(enum tls_sni_status status)
{
	switch (status) {
	case TLS_SNI_NEED_MORE:
		return "need more bytes";
	case TLS_SNI_FOUND:
		return "server name found";
	case TLS_SNI_ABSENT:
		return "no server name";
	case TLS_SNI_NOT_TLS:
		return "not TLS";
	case TLS_SNI_MALFORMED:
		return "malformed ClientHello";
	}
	return "?";
}
