/* A TCP endpoint written as "host:port", as CLOISTER_SUPERVISOR and the supervisor's shim
 * listener take it: a numeric IPv4 address ("127.0.0.1:7788"), a bracketed numeric IPv6
 * address ("[::1]:7788") or "localhost" (127.0.0.1). Names are not resolved, on purpose: the
 * static shim must not depend on NSS, and a listener must not bind where DNS says.
 * Pure: no I/O. */
#ifndef CLOISTER_ADDRESS_H
#define CLOISTER_ADDRESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/error.h"

/* Longest text accepted ("[" + IPv6 text + "]:" + port, with room to spare). */
#define CL_ADDRESS_MAX 64

/* Parse s into *ret_addr / *ret_len (an AF_INET or AF_INET6 sockaddr with the port set).
 * -EINVAL with "expected host:port with a numeric address …" for anything else: a name other
 * than localhost, a missing or zero port, a port above 65535, trailing garbage. */
int cl_address_parse(const char *s, struct cl_error *err, struct sockaddr_storage *ret_addr,
                     socklen_t *ret_len);

/* The same for an address to listen on, where port 0 (any free port) is allowed. */
int cl_address_parse_listen(const char *s, struct cl_error *err, struct sockaddr_storage *ret_addr,
                            socklen_t *ret_len);

/* A local listener as the supervisor's options write it (--listen-approval, proxy.listen …):
 * "ADDR:PORT", "[V6]:PORT", or without the address (":PORT", "PORT"), which stays on
 * 127.0.0.1 (Cloister's ":9998" means every interface in Go: here an address beyond loopback
 * must be written out). Port 0 is any free port. */
int cl_address_parse_local(const char *s, struct cl_error *err, struct sockaddr_storage *ret_addr,
                           socklen_t *ret_len);

/* "HOST:PORT" or "[V6]:PORT" split, HOST a name or a numeric address (not resolved here), not
 * empty, PORT 1..65535; HOST into RET_HOST (SIZE bytes, brackets gone). -EINVAL with why. */
int cl_address_split(const char *s, struct cl_error *err, char *ret_host, size_t size,
                     uint16_t *ret_port);

/* ADDR's port, and ADDR's port set (AF_INET or AF_INET6). */
uint16_t cl_address_port(const struct sockaddr_storage *addr);
void cl_address_set_port(struct sockaddr_storage *addr, uint16_t port);

/* ADDR as "127.0.0.1:9999" or "[::1]:9999" into BUF (CL_ADDRESS_MAX bytes suffice). */
void cl_address_format(const struct sockaddr_storage *addr, char *buf, size_t size);

#endif
