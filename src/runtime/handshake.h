/*
 * The handshake on a connected socket, both sides, blocking on a
 * deadline (docs/wire-protocol.md, "Handshake"): the answering side sends
 * CHALLENGE (its nonce), the prover answers HELLO (its nonce and proof),
 * the answering side checks it and sends HELLO_ACK (its proof).  The
 * cookie never crosses the wire.
 */
#ifndef DW_RUNTIME_HANDSHAKE_H
#define DW_RUNTIME_HANDSHAKE_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/auth.h"

/* One side's part. */
struct hs_side {
	const char *cookie;
	uint8_t role;     /* enum auth_role: this side */
	uint32_t id;      /* prover: its id; dialler: its id; worker: 0 */
	uint32_t give_id; /* master: the id it gives the worker */
	uint32_t want_id; /* dialler: the id of the peer it dialled */
	/* acceptor: may the dialler with this id link?  0, or -1 with why */
	int (*check_id)(uint32_t id, char *why, size_t wl);
	uint8_t flags;    /* prover: AUTH_FLAG_TLS to announce TLS;
	                     dialler: the flags its peer must announce */
	const char *addr; /* answering side: its listen address */
};

/* What the other side said, once proved. */
struct hs_result {
	uint32_t id;  /* worker: the id its master gave; prover: the other
	                 side's id (the given one, or the dialler's) */
	uint32_t pid; /* prover: the other side's pid */
	char addr[AUTH_ADDR_MAX + 1]; /* prover: its listen address */
	uint8_t flags;                /* the prover's HELLO flags */
	unsigned char key[32];        /* the link's TLS key (flag TLS) */
};

/* The prover's side (master, accepting worker).  Returns DW_OK, or
 * DW_EAUTH (a wrong proof: "wrong cookie"), DW_EVERSION, DW_EPROTO,
 * DW_ETIMEDOUT, DW_ECLOSED with the reason in why. */
int hs_prove(int fd, const struct hs_side *s, uint64_t deadline,
             struct hs_result *r, char *why, size_t wl);
/* The answering side's (worker, dialling worker); the same errors. */
int hs_answer(int fd, const struct hs_side *s, uint64_t deadline,
              struct hs_result *r, char *why, size_t wl);

#endif
