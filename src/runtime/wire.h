/*
 * Wire protocol: frames and the handshake (docs/wire-protocol.md).  Pure
 * encoding and decoding, no I/O, so that the decoder can be fuzzed.
 */
#ifndef DW_RUNTIME_WIRE_H
#define DW_RUNTIME_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "common/format.h"

#define WIRE_VERSION_MAJOR 3 /* 3.0: flow control windows granted */
#define WIRE_VERSION_MINOR 0
#define WIRE_MAGIC         "DWRK"
#define WIRE_HDR           16u        /* bytes of a frame header */
#define WIRE_MAX_PAYLOAD   (1u << 30) /* default payload limit: 1 GiB */
/* The configurable payload limit's range: the largest payload the 32-bit
 * frame length can describe (length = 12 + payload), and a floor that
 * keeps every fixed-size control frame and trace-file chunk legal. */
#define WIRE_PAYLOAD_CEIL  (UINT32_MAX - 12u)
#define WIRE_PAYLOAD_FLOOR (64u << 10)
#define WIRE_HELLO_MAX     1024u /* handshake frames are small */
#define WIRE_COOKIE_MAX    64u
#define WIRE_NAME_MAX      255u /* function names */

enum wire_type {
	WIRE_HELLO = 1,     /* prover: version, ids, nonce, proof (auth.h) */
	WIRE_HELLO_ACK = 2, /* answer: version, pid, addr, proof */
	WIRE_CALL = 3,      /* run a function (ref = call id) */
	WIRE_RESULT = 4,    /* a call's result or error (ref = call id) */
	WIRE_DONE = 5,      /* a kept call has run (ref = call id) */
	WIRE_FETCH = 6,     /* send a kept result, then drop it */
	WIRE_FREE = 7,      /* drop a kept result */
	WIRE_PING = 8,      /* heartbeat; answered by PONG */
	WIRE_PONG = 9,
	WIRE_EXIT = 10,   /* the worker is removed: exit */
	WIRE_CONFIG = 11, /* master → worker after the handshake: settings */
	WIRE_CLOCK_PING = 12, /* master → worker: u64 master ns */
	WIRE_CLOCK_PONG = 13, /* worker → master: u64 echo, u64 worker ns */
	WIRE_SYNC = 14,       /* master → worker: a measured clock offset */
	WIRE_FILE = 15,   /* worker → master: a trace file being gathered */
	WIRE_REQ = 16,    /* a request to an owner (channels, references,
	                     peers; ref = request id, 0: no answer) */
	WIRE_ANSWER = 17, /* a request's answer: u32 status, then bytes */
	WIRE_CANCEL = 18, /* withdraw a parked request (ref = its id) */
	WIRE_CHALLENGE = 19, /* the handshake's first message: a nonce */
	WIRE_CREDIT = 20,    /* flow control: ref = CALL payload bytes run
	                        and given back to the caller's window */
	WIRE_INTERRUPT = 21, /* master → worker: interrupt the running call
	                        (ref = its call id, 0: every running call) */
	WIRE_STATS = 22,     /* worker → master, before its PONG: its
	                        accounting (live.h); on the control socket
	                        the request (ref = format) and its answer */
	WIRE_GRANT = 23,     /* flow control, callee → caller: ref = window
	                        bytes more, answering an ASK */
	WIRE_ASK = 24,       /* caller → callee: ref = window bytes wanted */
	WIRE_RETURN = 25, /* caller → callee: ref = window bytes given back */
	WIRE_TYPE_MAX = 25,
};

enum wire_call_mode {
	WIRE_MODE_FETCH = 1, /* reply RESULT with the data */
	WIRE_MODE_KEEP = 2,  /* keep the result, reply DONE (or RESULT error) */
	WIRE_MODE_DO = 3,    /* no reply */
};

/* Header flags.  Only RESULT may carry one: its payload is then the
 * error message instead of the result. */
#define WIRE_FLAG_ERROR 1u
/* With WIRE_FLAG_ERROR: the message is preceded by a u32 dw_err code
 * (DW_ETOOBIG for a result over the link's limit); without it a failed
 * call is DW_EREMOTE. */
#define WIRE_FLAG_CODE 2u

struct wire_hdr {
	uint32_t payload; /* bytes after the 16-byte header */
	uint8_t type;
	uint8_t flags;
	uint64_t ref;
};

/* Writes a 16-byte header for a payload of `payload` bytes; the caller
 * has checked payload <= WIRE_PAYLOAD_CEIL (conn_send refuses longer
 * frames, so the length never wraps). */
void wire_put_hdr(unsigned char *p, uint8_t type, uint64_t ref,
                  uint32_t payload);

/* Decodes and checks a header against max_payload (64-bit arithmetic,
 * before the caller reads or allocates anything): returns 0, or -1 with
 * the reason in why (length too small, too large, reserved bits, unknown
 * type). */
int wire_parse_hdr(const unsigned char *p, uint32_t max_payload,
                   struct wire_hdr *h, char *why, size_t whylen);

/* The message for a payload over a link's limit, naming both sizes:
 * "WHAT of N bytes exceeds the link's limit of M bytes (...)". */
void wire_too_big(char *buf, size_t len, const char *what, uint64_t size,
                  uint64_t limit);

/* A CALL payload's fixed part: mode, name; args follow. */
struct wire_call {
	uint8_t mode;
	uint16_t name_len;
	const char *name; /* not NUL-terminated, points into the payload */
	const unsigned char *arg;
	size_t arg_len;
};
/* Bytes of a CALL payload before the args. */
size_t wire_call_prefix(size_t name_len);
void wire_put_call(unsigned char *p, uint8_t mode, const char *name,
                   size_t name_len);
int wire_parse_call(const unsigned char *p, size_t len, struct wire_call *c,
                    char *why, size_t whylen);

/* Little-endian helpers: common/format.h's, under the codec's names. */
#define wire_put_u16 fmt_put_u16
#define wire_put_u32 fmt_put_u32
#define wire_put_u64 fmt_put_u64
#define wire_get_u16 fmt_get_u16
#define wire_get_u32 fmt_get_u32
#define wire_get_u64 fmt_get_u64

#endif
