/* Cloister's wire formats, shared by the shim and the supervisor. Pure code: no I/O, no globals.
 *
 *   quote.h        canonical shell-quoted command string from argv
 *   frame.h        shim framing: length-prefixed requests, ack byte, typed stream frames
 *   json_strict.h  JSON parsing that rejects NUL bytes, duplicate keys, deep nesting
 *   message.h      exec request, host executor request and response ⇄ JSON
 *   error.h        the error message every fallible function fills
 *
 * Link with libcloister-protocol.a and libcjson. */
#ifndef CLOISTER_PROTOCOL_H
#define CLOISTER_PROTOCOL_H

#include "base/error.h"
#include "protocol/frame.h"
#include "protocol/json_strict.h"
#include "protocol/message.h"
#include "protocol/quote.h"

#endif
