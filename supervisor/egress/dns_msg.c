#include "supervisor/egress/dns_msg.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

#define FLAG_QR     0x8000
#define FLAG_OPCODE 0x7800
#define FLAG_TC     0x0200
#define FLAG_RD     0x0100
#define FLAG_RA     0x0080
#define FLAG_CD     0x0010
#define RCODE_MASK  0x000f
#define BADVERS     16 /* RFC 6891: extended rcode 1 in the OPT, 0 in the header */

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

/* Read the name at OFF into WIRE (uncompressed, with its final zero), following compression
 * pointers, which must point before themselves (at most DNS_MAX_POINTERS). *RET_NEXT is the
 * offset after the name where it started. */
static int read_name(const uint8_t *msg, size_t len, size_t off, uint8_t *wire,
                     size_t *ret_wire_len, size_t *ret_next, struct cl_error *err)
{
	size_t pos = off, wlen = 0, next = 0;
	unsigned pointers = 0;
	bool jumped = false;

	for (;;) {
		uint8_t c;

		if (pos >= len)
			return cl_error_set(err, -EINVAL, "name runs past the message");
		c = msg[pos];
		if ((c & 0xc0) == 0xc0) {
			size_t target;

			if (pos + 1 >= len)
				return cl_error_set(err, -EINVAL, "name runs past the message");
			target = (size_t)(c & 0x3f) << 8 | msg[pos + 1];
			if (target >= pos)
				return cl_error_set(err, -EINVAL,
				                    "compression pointer does not point back");
			if (++pointers > DNS_MAX_POINTERS)
				return cl_error_set(err, -EINVAL, "too many compression pointers");
			if (!jumped)
				next = pos + 2;
			jumped = true;
			pos = target;
			continue;
		}
		if (c & 0xc0)
			return cl_error_set(err, -EINVAL, "unknown label type");
		if (wlen + 1 + c + (c ? 1 : 0) > DNS_NAME_WIRE)
			return cl_error_set(err, -EINVAL, "name longer than 255 bytes");
		if (pos + 1 + c > len)
			return cl_error_set(err, -EINVAL, "label runs past the message");
		memcpy(wire + wlen, msg + pos, 1 + (size_t)c);
		wlen += 1 + (size_t)c;
		pos += 1 + (size_t)c;
		if (c == 0)
			break;
	}
	*ret_wire_len = wlen;
	*ret_next = jumped ? next : pos;
	return 0;
}

/* The wire name as a normalised host name; false for the root or a label no host name has. */
static bool wire_to_name(const uint8_t *wire, size_t wlen, char *ret)
{
	char text[DNS_NAME_WIRE];
	size_t t = 0;

	for (size_t i = 0; i < wlen && wire[i] != 0; i += 1 + wire[i]) {
		if (memchr(wire + i + 1, '.', wire[i]))
			return false;
		if (t > 0)
			text[t++] = '.';
		memcpy(text + t, wire + i + 1, wire[i]);
		t += wire[i];
	}
	return domain_name_normalise(text, t, DOMAIN_NAME_UNDERSCORE, ret) == 0;
}

static bool wire_equal(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	if (alen != blen)
		return false;
	for (size_t i = 0; i < alen; i++) {
		uint8_t x = a[i], y = b[i];
		if (x >= 'A' && x <= 'Z')
			x = (uint8_t)(x - 'A' + 'a');
		if (y >= 'A' && y <= 'Z')
			y = (uint8_t)(y - 'A' + 'a');
		if (x != y)
			return false;
	}
	return true;
}

int dns_query_id(const uint8_t *msg, size_t len, uint16_t *ret_id)
{
	if (len < DNS_HEADER_LEN)
		return -EINVAL;
	*ret_id = get16(msg);
	return 0;
}

int dns_query_parse(const uint8_t *msg, size_t len, struct dns_query *ret, struct cl_error *err)
{
	struct dns_query q = {0};
	uint16_t flags, arcount;
	size_t pos;
	int r;

	if (len < DNS_HEADER_LEN)
		return cl_error_set(err, -EINVAL, "shorter than a DNS header");
	if (len > DNS_MAX_MSG)
		return cl_error_set(err, -EINVAL, "longer than a DNS message");
	q.id = get16(msg);
	flags = get16(msg + 2);
	if (flags & FLAG_QR)
		return cl_error_set(err, -EINVAL, "a response, not a query");
	if (flags & FLAG_OPCODE)
		return cl_error_set(err, -EINVAL, "opcode is not QUERY");
	q.rd = flags & FLAG_RD;
	q.cd = flags & FLAG_CD;
	if (get16(msg + 4) != 1)
		return cl_error_set(err, -EINVAL, "not exactly one question");
	if (get16(msg + 6) != 0 || get16(msg + 8) != 0)
		return cl_error_set(err, -EINVAL, "answer or authority records in a query");
	arcount = get16(msg + 10);
	if (arcount > 1)
		return cl_error_set(err, -EINVAL, "more than one additional record");

	r = read_name(msg, len, DNS_HEADER_LEN, q.qname_wire, &q.qname_wire_len, &pos, err);
	if (r < 0)
		return r;
	if (pos + 4 > len)
		return cl_error_set(err, -EINVAL, "question runs past the message");
	q.qtype = get16(msg + pos);
	q.qclass = get16(msg + pos + 2);
	pos += 4;
	q.name_valid = wire_to_name(q.qname_wire, q.qname_wire_len, q.name);
	if (!q.name_valid)
		q.name[0] = '\0';

	if (arcount == 1) {
		/* The OPT pseudo-record: root name, type 41, class = payload size. */
		uint16_t rdlen;

		if (pos + 11 > len || msg[pos] != 0 || get16(msg + pos + 1) != DNS_TYPE_OPT)
			return cl_error_set(err, -EINVAL, "additional record is not an EDNS OPT");
		q.edns = true;
		q.edns_udp_size = get16(msg + pos + 3);
		if (q.edns_udp_size < DNS_UDP_PLAIN)
			q.edns_udp_size = DNS_UDP_PLAIN;
		q.edns_version = msg[pos + 6];
		rdlen = get16(msg + pos + 9);
		pos += 11;
		if (pos + rdlen > len)
			return cl_error_set(err, -EINVAL, "OPT data runs past the message");
		pos += rdlen;
	}
	if (pos != len)
		return cl_error_set(err, -EINVAL, "bytes after the last record");
	*ret = q;
	return 0;
}

size_t dns_query_udp_limit(const struct dns_query *q)
{
	if (!q->edns)
		return DNS_UDP_PLAIN;
	return q->edns_udp_size < DNS_UDP_OURS ? q->edns_udp_size : DNS_UDP_OURS;
}

static bool addr_fits(const struct dns_query *q, const struct dns_addr *a)
{
	if (q->qclass != DNS_CLASS_IN)
		return false;
	return (q->qtype == DNS_TYPE_A && a->family == AF_INET) ||
	       (q->qtype == DNS_TYPE_AAAA && a->family == AF_INET6);
}

/* Header and question; returns the length. */
static size_t put_question(const struct dns_query *q, uint16_t id, uint16_t flags, uint8_t *buf)
{
	put16(buf, id);
	put16(buf + 2, flags);
	put16(buf + 4, 1);
	memset(buf + 6, 0, 6);
	memcpy(buf + DNS_HEADER_LEN, q->qname_wire, q->qname_wire_len);
	put16(buf + DNS_HEADER_LEN + q->qname_wire_len, q->qtype);
	put16(buf + DNS_HEADER_LEN + q->qname_wire_len + 2, q->qclass);
	return DNS_HEADER_LEN + q->qname_wire_len + 4;
}

int dns_answer_build(const struct dns_query *q, enum dns_rcode rcode, const struct dns_addr *addrs,
                     size_t n_addrs, uint32_t ttl, uint8_t *buf, size_t size, size_t max_len)
{
	const size_t opt_len = 11;
	size_t base = DNS_HEADER_LEN + q->qname_wire_len + 4 + (q->edns ? opt_len : 0);
	size_t records = 0, records_len = 0, pos;
	unsigned header_rcode = rcode, ext_rcode = 0;
	uint16_t flags;

	if (rcode > DNS_RCODE_REFUSED)
		return -EINVAL;
	if (q->qname_wire_len == 0 || q->qname_wire_len > DNS_NAME_WIRE)
		return -EINVAL;
	if (max_len > size)
		max_len = size;
	if (base > max_len)
		return -ENOSPC;
	if (q->edns && q->edns_version > 0) {
		/* We speak EDNS version 0 only: BADVERS, no records. */
		header_rcode = BADVERS & RCODE_MASK;
		ext_rcode = BADVERS >> 4;
		rcode = DNS_RCODE_NOERROR;
		n_addrs = 0;
	}
	if (rcode == DNS_RCODE_NOERROR) {
		for (size_t i = 0; i < n_addrs; i++) {
			if (!addr_fits(q, &addrs[i]))
				continue;
			records++;
			records_len += 12 + (addrs[i].family == AF_INET ? 4 : 16);
		}
	}
	flags = FLAG_QR | FLAG_RA | (q->rd ? FLAG_RD : 0) | (q->cd ? FLAG_CD : 0) | header_rcode;
	if (base + records_len > max_len) {
		flags |= FLAG_TC;
		records = 0;
	}
	pos = put_question(q, q->id, flags, buf);
	put16(buf + 6, (unsigned)records);
	put16(buf + 10, q->edns ? 1 : 0);
	for (size_t i = 0; records > 0 && i < n_addrs; i++) {
		size_t alen = addrs[i].family == AF_INET ? 4 : 16;

		if (!addr_fits(q, &addrs[i]))
			continue;
		put16(buf + pos, 0xc000 | DNS_HEADER_LEN); /* the question's name */
		put16(buf + pos + 2, q->qtype);
		put16(buf + pos + 4, DNS_CLASS_IN);
		put32(buf + pos + 6, ttl);
		put16(buf + pos + 10, (unsigned)alen);
		memcpy(buf + pos + 12, alen == 4 ? (const void *)&addrs[i].v4 : &addrs[i].v6, alen);
		pos += 12 + alen;
	}
	if (q->edns) {
		buf[pos] = 0;
		put16(buf + pos + 1, DNS_TYPE_OPT);
		put16(buf + pos + 3, DNS_UDP_OURS);
		buf[pos + 5] = (uint8_t)ext_rcode;
		buf[pos + 6] = 0; /* version */
		put16(buf + pos + 7, 0);
		put16(buf + pos + 9, 0);
		pos += opt_len;
	}
	return (int)pos;
}

int dns_query_build(const struct dns_query *q, uint16_t id, uint8_t *buf, size_t size)
{
	if (q->qname_wire_len == 0 || q->qname_wire_len > DNS_NAME_WIRE)
		return -EINVAL;
	if (DNS_HEADER_LEN + q->qname_wire_len + 4 > size)
		return -ENOSPC;
	return (int)put_question(q, id, FLAG_RD, buf);
}

struct record {
	uint8_t owner[DNS_NAME_WIRE];
	size_t owner_len;
	uint16_t type, class;
	uint32_t ttl;
	size_t rdata, rdlen; /* offset and length in the message */
};

static int read_record(const uint8_t *msg, size_t len, size_t *pos, struct record *rec,
                       struct cl_error *err)
{
	size_t next;
	int r = read_name(msg, len, *pos, rec->owner, &rec->owner_len, &next, err);

	if (r < 0)
		return r;
	if (next + 10 > len)
		return cl_error_set(err, -EINVAL, "record runs past the message");
	rec->type = get16(msg + next);
	rec->class = get16(msg + next + 2);
	rec->ttl = get32(msg + next + 4);
	rec->rdlen = get16(msg + next + 8);
	rec->rdata = next + 10;
	if (rec->rdata + rec->rdlen > len)
		return cl_error_set(err, -EINVAL, "record data runs past the message");
	*pos = rec->rdata + rec->rdlen;
	return 0;
}

struct chain {
	uint8_t names[DNS_MAX_CNAMES + 1][DNS_NAME_WIRE];
	size_t lens[DNS_MAX_CNAMES + 1];
	size_t n;
};

static bool in_chain(const struct chain *c, const uint8_t *name, size_t len)
{
	for (size_t i = 0; i < c->n; i++)
		if (wire_equal(c->names[i], c->lens[i], name, len))
			return true;
	return false;
}

int dns_response_addrs(const uint8_t *msg, size_t len, const struct dns_query *q, uint16_t id,
                       struct dns_addrs *ret, struct cl_error *err)
{
	static const size_t max_records = 1024;
	struct dns_addrs out = {0};
	struct chain chain;
	struct record rec;
	uint8_t qname[DNS_NAME_WIRE];
	size_t qlen, pos, answers_at;
	uint16_t flags, ancount;
	int r;

	if (len < DNS_HEADER_LEN || len > DNS_MAX_MSG)
		return cl_error_set(err, -EINVAL, "not a DNS message");
	flags = get16(msg + 2);
	if (get16(msg) != id)
		return cl_error_set(err, -EINVAL, "answer id does not match the query");
	if (!(flags & FLAG_QR) || (flags & FLAG_OPCODE))
		return cl_error_set(err, -EINVAL, "not a response to a standard query");
	if (get16(msg + 4) != 1)
		return cl_error_set(err, -EINVAL, "answer does not echo one question");
	ancount = get16(msg + 6);
	if (ancount > max_records)
		return cl_error_set(err, -EINVAL, "more than %zu answer records", max_records);
	out.rcode = (enum dns_rcode)(flags & RCODE_MASK);
	out.truncated = flags & FLAG_TC;

	r = read_name(msg, len, DNS_HEADER_LEN, qname, &qlen, &pos, err);
	if (r < 0)
		return r;
	if (pos + 4 > len)
		return cl_error_set(err, -EINVAL, "question runs past the message");
	if (!wire_equal(qname, qlen, q->qname_wire, q->qname_wire_len) ||
	    get16(msg + pos) != q->qtype || get16(msg + pos + 2) != q->qclass)
		return cl_error_set(err, -EINVAL, "answer is for another question");
	answers_at = pos + 4;

	/* Pass 1: the CNAME chain from the question's name, in whatever order the records come. */
	memcpy(chain.names[0], qname, qlen);
	chain.lens[0] = qlen;
	chain.n = 1;
	for (bool grew = true; grew && chain.n <= DNS_MAX_CNAMES;) {
		grew = false;
		pos = answers_at;
		for (unsigned i = 0; i < ancount; i++) {
			uint8_t target[DNS_NAME_WIRE];
			size_t tlen, tnext;

			r = read_record(msg, len, &pos, &rec, err);
			if (r < 0)
				return r;
			if (rec.type != DNS_TYPE_CNAME ||
			    !in_chain(&chain, rec.owner, rec.owner_len))
				continue;
			r = read_name(msg, len, rec.rdata, target, &tlen, &tnext, err);
			if (r < 0)
				return r;
			if (tnext != rec.rdata + rec.rdlen)
				return cl_error_set(err, -EINVAL, "CNAME data is not one name");
			if (in_chain(&chain, target, tlen) || chain.n > DNS_MAX_CNAMES)
				continue;
			memcpy(chain.names[chain.n], target, tlen);
			chain.lens[chain.n++] = tlen;
			grew = true;
		}
	}

	/* Pass 2: the addresses of the names on the chain. */
	pos = answers_at;
	for (unsigned i = 0; i < ancount; i++) {
		struct dns_addr *a;

		r = read_record(msg, len, &pos, &rec, err);
		if (r < 0)
			return r;
		if ((rec.type != DNS_TYPE_A && rec.type != DNS_TYPE_AAAA) ||
		    rec.class != DNS_CLASS_IN || !in_chain(&chain, rec.owner, rec.owner_len))
			continue;
		if (rec.rdlen != (rec.type == DNS_TYPE_A ? 4u : 16u))
			return cl_error_set(err, -EINVAL, "address record of the wrong length");
		if (out.n == DNS_MAX_ADDRS)
			continue;
		a = &out.addrs[out.n++];
		a->family = rec.type == DNS_TYPE_A ? AF_INET : AF_INET6;
		memcpy(rec.type == DNS_TYPE_A ? (void *)&a->v4 : &a->v6, msg + rec.rdata,
		       rec.rdlen);
		a->ttl = rec.ttl > 0x7fffffff ? 0 : rec.ttl; /* RFC 2181 8 */
	}
	*ret = out;
	return 0;
}
