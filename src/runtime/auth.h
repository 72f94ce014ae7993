/*
 * The handshake's messages and proofs (docs/wire-protocol.md,
 * "Handshake"): encoding, decoding and the HMAC-SHA256 proofs keyed by
 * the cookie.  No I/O, so that the decoders can be fuzzed; the exchange
 * itself is in handshake.c.
 */
#ifndef DW_RUNTIME_AUTH_H
#define DW_RUNTIME_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define AUTH_NONCE     32u /* bytes of a nonce */
#define AUTH_MAC       32u /* bytes of a proof (HMAC-SHA256) */
#define AUTH_CHALLENGE 48u /* bytes of a CHALLENGE payload */
#define AUTH_HELLO     84u /* bytes of a HELLO payload */
#define AUTH_ADDR_MAX  255u
#define AUTH_FLAG_TLS  1u /* HELLO flag: TLS follows the handshake */

/* Who is who on a link.  The prover speaks first with a proof: the
 * master on master-worker links, the accepting side between workers. */
enum auth_role {
	AUTH_MASTER = 'M',   /* proves first */
	AUTH_WORKER = 'W',   /* answers the master */
	AUTH_ACCEPTOR = 'A', /* a worker accepting a peer: proves first */
	AUTH_DIALLER = 'D',  /* a worker dialling a peer */
};

/* CHALLENGE: the answering side's version, role, id (a dialling peer's
 * own id; 0 for a worker, which learns its id from the master) and its
 * fresh nonce. */
struct auth_challenge {
	uint16_t vmajor, vminor;
	uint8_t role;
	uint32_t id;
	unsigned char nonce[AUTH_NONCE];
};

/* HELLO: the prover's version, role, flags, its id and the id it gives
 * (or grants) the other side, its nonce and its proof. */
struct auth_hello {
	uint16_t vmajor, vminor;
	uint8_t role, flags;
	uint32_t p_id, q_id;
	unsigned char nonce[AUTH_NONCE];
	unsigned char mac[AUTH_MAC];
};

/* HELLO_ACK: the answering side's proof, with its pid and the address it
 * listens on (for worker-to-worker links). */
struct auth_ack {
	uint16_t vmajor, vminor;
	uint8_t role;
	uint32_t pid;
	char addr[AUTH_ADDR_MAX + 1];
	unsigned char mac[AUTH_MAC];
};

/* Encoders write into p (at least AUTH_HELLO + AUTH_ADDR_MAX + 64
 * bytes) and return the payload length. */
size_t auth_put_challenge(unsigned char *p, const struct auth_challenge *c);
size_t auth_put_hello(unsigned char *p, const struct auth_hello *h);
size_t auth_put_ack(unsigned char *p, const struct auth_ack *a);

/* Decoders: 0, or -1 with the reason in why (wrong magic, size, reserved
 * bits, unknown role).  They check the form only; versions and proofs
 * are the caller's. */
int auth_parse_challenge(const unsigned char *p, size_t len,
                         struct auth_challenge *c, char *why, size_t whylen);
int auth_parse_hello(const unsigned char *p, size_t len, struct auth_hello *h,
                     char *why, size_t whylen);
int auth_parse_ack(const unsigned char *p, size_t len, struct auth_ack *a,
                   char *why, size_t whylen);

/* The proofs: HMAC-SHA256 keyed by the cookie over the whole exchange so
 * far (docs/wire-protocol.md gives the bytes).  h->mac and a->mac are not
 * part of the input.  Return 0, or -1 when libcrypto fails. */
int auth_hello_mac(const char *cookie, const struct auth_challenge *c,
                   const struct auth_hello *h, unsigned char out[AUTH_MAC]);
int auth_ack_mac(const char *cookie, const struct auth_challenge *c,
                 const struct auth_hello *h, const struct auth_ack *a,
                 unsigned char out[AUTH_MAC]);

/* A fresh nonce from the system's generator (RAND_bytes); 0 or -1. */
int auth_nonce(unsigned char n[AUTH_NONCE]);
/* Constant-time comparison of two proofs: 1 when equal. */
int auth_mac_equal(const unsigned char *a, const unsigned char *b);

/* The key both ends of a TLS link use (HKDF-SHA256 of the cookie, salted
 * with both nonces): 0 or -1. */
int auth_tls_key(const char *cookie, const struct auth_challenge *c,
                 const struct auth_hello *h, unsigned char out[32]);

#endif
