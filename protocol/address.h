/* A TCP endpoint written as "host:port", as CLOISTER_SUPERVISOR and the supervisor's shim
 * listener take it: a numeric IPv4 address ("127.0.0.1:7788"), a bracketed numeric IPv6
 * address ("[::1]:7788") or "localhost" (127.0.0.1). Names are not resolved, on purpose: the
 * static shim must not depend on NSS, and a listener must not bind where DNS says.
 * Pure: no I/O. */
#ifndef CLOISTER_ADDRESS_H
#define CLOISTER_ADDRESS_H

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

#endif
