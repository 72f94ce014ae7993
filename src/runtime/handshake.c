/* The handshake's exchange on a blocking deadline (handshake.h). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <dwork/error.h>

#include "runtime/handshake.h"
#include "runtime/rt.h"
#include "runtime/wire.h"

#define HS_BUF (WIRE_HDR + WIRE_HELLO_MAX)

static int
hs_send(int fd, uint8_t type, unsigned char *buf, size_t pl, uint64_t deadline,
        char *why, size_t wl)
{
	wire_put_hdr(buf, type, 0, (uint32_t)pl);
	int r = cl_io_full(fd, buf, WIRE_HDR + pl, 1, deadline);
	if (r == 0)
		return DW_OK;
	snprintf(why, wl, "%s",
	         r == -2 ? "the handshake timed out"
	                 : "the connection closed during "
	                   "the handshake");
	return r == -2 ? DW_ETIMEDOUT : DW_ECLOSED;
}

/* Reads one handshake frame of type want into buf; *len its payload. */
static int
hs_recv(int fd, uint8_t want, unsigned char *buf, size_t *len,
        uint64_t deadline, char *why, size_t wl)
{
	struct wire_hdr h;
	int r = cl_io_full(fd, buf, WIRE_HDR, 0, deadline);
	if (r < 0) {
		snprintf(why, wl, "%s",
		         r == -2 ? "no handshake message in time"
		                 : "the connection closed during the "
		                   "handshake");
		return r == -2 ? DW_ETIMEDOUT : DW_ECLOSED;
	}
	if (wire_parse_hdr(buf, WIRE_HELLO_MAX, &h, why, wl) < 0)
		return DW_EPROTO;
	if (h.type != want) {
		snprintf(why, wl, "expected handshake frame type %u, got %u",
		         want, h.type);
		return DW_EPROTO;
	}
	if (cl_io_full(fd, buf, h.payload, 0, deadline) < 0) {
		snprintf(why, wl, "handshake message cut short");
		return DW_ECLOSED;
	}
	*len = h.payload;
	return DW_OK;
}

static const char *
hs_role_name(uint8_t r)
{
	switch (r) {
	case AUTH_MASTER:
		return "master";
	case AUTH_WORKER:
		return "worker";
	case AUTH_ACCEPTOR:
		return "accepting worker";
	default:
		return "dialling worker";
	}
}

/* The role that answers a prover of role p. */
static uint8_t
hs_partner(uint8_t p)
{
	switch (p) {
	case AUTH_MASTER:
		return AUTH_WORKER;
	case AUTH_WORKER:
		return AUTH_MASTER;
	case AUTH_ACCEPTOR:
		return AUTH_DIALLER;
	default:
		return AUTH_ACCEPTOR;
	}
}

static int
hs_version(uint16_t ma, uint16_t mi, uint8_t role, char *why, size_t wl)
{
	if (ma == WIRE_VERSION_MAJOR)
		return DW_OK;
	snprintf(why, wl,
	         "protocol version mismatch: the %s speaks %u.%u, this "
	         "process %u.%u",
	         hs_role_name(role), ma, mi, WIRE_VERSION_MAJOR,
	         WIRE_VERSION_MINOR);
	return DW_EVERSION;
}

/* The prover's HELLO to a challenge c. */
static int
hs_make_hello(const struct hs_side *s, const struct auth_challenge *c,
              uint32_t q_id, struct auth_hello *h)
{
	memset(h, 0, sizeof *h);
	h->vmajor = WIRE_VERSION_MAJOR;
	h->vminor = WIRE_VERSION_MINOR;
	h->role = s->role;
	h->flags = s->flags;
	h->p_id = s->id;
	h->q_id = q_id;
	if (auth_nonce(h->nonce) < 0 ||
	    auth_hello_mac(s->cookie, c, h, h->mac) < 0)
		return -1;
	return 0;
}

/* Reads and checks a challenge; on a version mismatch it still answers
 * a HELLO with this side's version (no proof), so the other side can say
 * which one it met. */
static int
hs_take_challenge(int fd, const struct hs_side *s, uint64_t deadline,
                  struct auth_challenge *c, char *why, size_t wl)
{
	unsigned char buf[HS_BUF];
	size_t n;
	int err = hs_recv(fd, WIRE_CHALLENGE, buf, &n, deadline, why, wl);
	if (err)
		return err;
	if (auth_parse_challenge(buf, n, c, why, wl) < 0)
		return DW_EPROTO;
	if ((err = hs_version(c->vmajor, c->vminor, hs_partner(s->role), why,
	                      wl))) {
		struct auth_hello h = {.vmajor = WIRE_VERSION_MAJOR,
		                       .vminor = WIRE_VERSION_MINOR,
		                       .role = s->role};
		char ignore[8];
		hs_send(fd, WIRE_HELLO, buf, auth_put_hello(buf + WIRE_HDR, &h),
		        deadline, ignore, sizeof ignore);
		return err;
	}
	if (c->role != hs_partner(s->role)) {
		snprintf(why, wl, "a %s cannot answer a %s",
		         hs_role_name(c->role), hs_role_name(s->role));
		return DW_EPROTO;
	}
	return DW_OK;
}

int
hs_prove(int fd, const struct hs_side *s, uint64_t deadline,
         struct hs_result *r, char *why, size_t wl)
{
	struct auth_challenge c;
	struct auth_hello h;
	struct auth_ack a;
	unsigned char buf[HS_BUF], mac[AUTH_MAC];
	size_t n;
	memset(r, 0, sizeof *r);
	int err = hs_take_challenge(fd, s, deadline, &c, why, wl);
	if (err)
		return err;
	uint32_t q_id = s->give_id;
	if (s->check_id) {
		if (s->check_id(c.id, why, wl) < 0)
			return DW_EPROTO;
		q_id = c.id;
	}
	if (hs_make_hello(s, &c, q_id, &h) < 0) {
		snprintf(why, wl, "libcrypto failed to make a proof");
		return DW_ENOMEM;
	}
	err = hs_send(fd, WIRE_HELLO, buf, auth_put_hello(buf + WIRE_HDR, &h),
	              deadline, why, wl);
	if (!err && (err = hs_recv(fd, WIRE_HELLO_ACK, buf, &n, deadline, why,
	                           wl)) == DW_ECLOSED)
		snprintf(why, wl,
		         "the %s refused this side's proof and closed the "
		         "connection (has it another cookie?)",
		         hs_role_name(c.role));
	if (err)
		return err;
	if (auth_parse_ack(buf, n, &a, why, wl) < 0)
		return DW_EPROTO;
	if ((err = hs_version(a.vmajor, a.vminor, c.role, why, wl)))
		return err;
	if (a.role != c.role || auth_ack_mac(s->cookie, &c, &h, &a, mac) < 0 ||
	    !auth_mac_equal(mac, a.mac)) {
		snprintf(why, wl,
		         "the %s presented a wrong cookie (its proof does not "
		         "match)",
		         hs_role_name(c.role));
		return DW_EAUTH;
	}
	r->id = q_id;
	r->pid = a.pid;
	snprintf(r->addr, sizeof r->addr, "%s", a.addr);
	r->flags = h.flags;
	if ((h.flags & AUTH_FLAG_TLS) &&
	    auth_tls_key(s->cookie, &c, &h, r->key))
		return DW_ENOMEM;
	return DW_OK;
}

/* Checks the prover's HELLO against our challenge. */
static int
hs_check_hello(const struct hs_side *s, const struct auth_challenge *c,
               const struct auth_hello *h, char *why, size_t wl)
{
	unsigned char mac[AUTH_MAC];
	uint8_t want = hs_partner(s->role);
	int err = hs_version(h->vmajor, h->vminor, want, why, wl);
	if (err)
		return err;
	if (h->role != want || auth_hello_mac(s->cookie, c, h, mac) < 0 ||
	    !auth_mac_equal(mac, h->mac)) {
		snprintf(why, wl,
		         "wrong cookie (the %s's proof does not match)",
		         hs_role_name(want));
		return DW_EAUTH;
	}
	if (s->role == AUTH_DIALLER &&
	    (h->p_id != s->want_id || h->q_id != s->id)) {
		snprintf(why, wl, "worker %u answered for worker %u", h->p_id,
		         s->want_id);
		return DW_EPROTO;
	}
	if (s->role == AUTH_WORKER && (h->q_id < 2 || h->q_id > INT32_MAX)) {
		snprintf(why, wl, "the master gave the invalid id %u", h->q_id);
		return DW_EPROTO;
	}
	if (s->role == AUTH_DIALLER && h->flags != s->flags) {
		snprintf(why, wl, "worker %u %s TLS, this worker %s", h->p_id,
		         h->flags & AUTH_FLAG_TLS ? "wants" : "does not use",
		         s->flags & AUTH_FLAG_TLS ? "requires it" : "does not");
		return DW_EPROTO;
	}
	return DW_OK;
}

int
hs_answer(int fd, const struct hs_side *s, uint64_t deadline,
          struct hs_result *r, char *why, size_t wl)
{
	struct auth_challenge c = {.vmajor = WIRE_VERSION_MAJOR,
	                           .vminor = WIRE_VERSION_MINOR,
	                           .role = s->role,
	                           .id = s->id};
	struct auth_hello h;
	struct auth_ack a = {.vmajor = WIRE_VERSION_MAJOR,
	                     .vminor = WIRE_VERSION_MINOR,
	                     .role = s->role,
	                     .pid = (uint32_t)getpid()};
	unsigned char buf[HS_BUF];
	size_t n;
	memset(r, 0, sizeof *r);
	if (auth_nonce(c.nonce) < 0) {
		snprintf(why, wl, "libcrypto could not make a nonce");
		return DW_ENOMEM;
	}
	int err =
	    hs_send(fd, WIRE_CHALLENGE, buf,
	            auth_put_challenge(buf + WIRE_HDR, &c), deadline, why, wl);
	if (!err)
		err = hs_recv(fd, WIRE_HELLO, buf, &n, deadline, why, wl);
	if (err)
		return err;
	if (auth_parse_hello(buf, n, &h, why, wl) < 0)
		return DW_EPROTO;
	if ((err = hs_check_hello(s, &c, &h, why, wl)))
		return err;
	snprintf(a.addr, sizeof a.addr, "%s", s->addr ? s->addr : "");
	if (auth_ack_mac(s->cookie, &c, &h, &a, a.mac) < 0) {
		snprintf(why, wl, "libcrypto failed to make a proof");
		return DW_ENOMEM;
	}
	err = hs_send(fd, WIRE_HELLO_ACK, buf, auth_put_ack(buf + WIRE_HDR, &a),
	              deadline, why, wl);
	if (err)
		return err;
	r->id = h.q_id;
	r->flags = h.flags;
	if ((h.flags & AUTH_FLAG_TLS) &&
	    auth_tls_key(s->cookie, &c, &h, r->key))
		return DW_ENOMEM;
	return DW_OK;
}
