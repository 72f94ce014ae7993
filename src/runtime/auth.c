/* The handshake's messages and proofs (docs/wire-protocol.md). */
#include <stdio.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>

#include "runtime/auth.h"
#include "runtime/wire.h"

#define AUTH_LABEL "dwork-auth-2" /* 12 bytes: domain of the proofs */

static int
auth_fail(char *why, size_t len, const char *msg, unsigned long long v)
{
	if (why && len)
		snprintf(why, len, msg, v);
	return -1;
}

/* magic, u16 major, u16 minor, u8 role, u8 flags, u16 0 */
static void
auth_put_head(unsigned char *p, uint16_t ma, uint16_t mi, uint8_t role,
              uint8_t flags)
{
	memcpy(p, WIRE_MAGIC, 4);
	wire_put_u16(p + 4, ma);
	wire_put_u16(p + 6, mi);
	p[8] = role;
	p[9] = flags;
	wire_put_u16(p + 10, 0);
}

static int
auth_role_ok(uint8_t r)
{
	return r == AUTH_MASTER || r == AUTH_WORKER || r == AUTH_ACCEPTOR ||
	       r == AUTH_DIALLER;
}

/* Checks the common head; flags may be set only where allowed. */
static int
auth_parse_head(const unsigned char *p, size_t len, size_t min, int flags_ok,
                uint16_t *ma, uint16_t *mi, uint8_t *role, char *why,
                size_t whylen)
{
	if (len < 12 || memcmp(p, WIRE_MAGIC, 4) != 0)
		return auth_fail(why, whylen,
		                 "not a dwork handshake (bad magic or %llu "
		                 "bytes)",
		                 len);
	*ma = wire_get_u16(p + 4);
	*mi = wire_get_u16(p + 6);
	*role = p[8];
	if (*ma != WIRE_VERSION_MAJOR)
		return 0; /* the caller reports the version; nothing else */
	if (len < min)
		return auth_fail(why, whylen,
		                 "handshake message of %llu bytes is too short",
		                 len);
	if (!auth_role_ok(p[8]))
		return auth_fail(why, whylen, "unknown handshake role %llu",
		                 p[8]);
	if ((!flags_ok && p[9]) || (p[9] & ~AUTH_FLAG_TLS) ||
	    wire_get_u16(p + 10))
		return auth_fail(why, whylen,
		                 "reserved handshake bits set (flags %llu)",
		                 p[9]);
	return 0;
}

size_t
auth_put_challenge(unsigned char *p, const struct auth_challenge *c)
{
	auth_put_head(p, c->vmajor, c->vminor, c->role, 0);
	wire_put_u32(p + 12, c->id);
	memcpy(p + 16, c->nonce, AUTH_NONCE);
	return AUTH_CHALLENGE;
}

int
auth_parse_challenge(const unsigned char *p, size_t len,
                     struct auth_challenge *c, char *why, size_t whylen)
{
	memset(c, 0, sizeof *c);
	if (auth_parse_head(p, len, AUTH_CHALLENGE, 0, &c->vmajor, &c->vminor,
	                    &c->role, why, whylen) < 0)
		return -1;
	if (c->vmajor != WIRE_VERSION_MAJOR)
		return 0;
	if (len != AUTH_CHALLENGE)
		return auth_fail(why, whylen, "challenge of %llu bytes, not 48",
		                 len);
	c->id = wire_get_u32(p + 12);
	memcpy(c->nonce, p + 16, AUTH_NONCE);
	return 0;
}

size_t
auth_put_hello(unsigned char *p, const struct auth_hello *h)
{
	auth_put_head(p, h->vmajor, h->vminor, h->role, h->flags);
	wire_put_u32(p + 12, h->p_id);
	wire_put_u32(p + 16, h->q_id);
	memcpy(p + 20, h->nonce, AUTH_NONCE);
	memcpy(p + 20 + AUTH_NONCE, h->mac, AUTH_MAC);
	return AUTH_HELLO;
}

int
auth_parse_hello(const unsigned char *p, size_t len, struct auth_hello *h,
                 char *why, size_t whylen)
{
	memset(h, 0, sizeof *h);
	if (auth_parse_head(p, len, AUTH_HELLO, 1, &h->vmajor, &h->vminor,
	                    &h->role, why, whylen) < 0)
		return -1;
	if (h->vmajor != WIRE_VERSION_MAJOR)
		return 0;
	if (len != AUTH_HELLO)
		return auth_fail(why, whylen, "hello of %llu bytes, not 84",
		                 len);
	h->flags = p[9];
	h->p_id = wire_get_u32(p + 12);
	h->q_id = wire_get_u32(p + 16);
	memcpy(h->nonce, p + 20, AUTH_NONCE);
	memcpy(h->mac, p + 20 + AUTH_NONCE, AUTH_MAC);
	return 0;
}

size_t
auth_put_ack(unsigned char *p, const struct auth_ack *a)
{
	size_t n = strnlen(a->addr, AUTH_ADDR_MAX);
	auth_put_head(p, a->vmajor, a->vminor, a->role, 0);
	wire_put_u32(p + 12, a->pid);
	wire_put_u16(p + 16, (uint16_t)n);
	memcpy(p + 18, a->addr, n);
	memcpy(p + 18 + n, a->mac, AUTH_MAC);
	return 18 + n + AUTH_MAC;
}

int
auth_parse_ack(const unsigned char *p, size_t len, struct auth_ack *a,
               char *why, size_t whylen)
{
	memset(a, 0, sizeof *a);
	if (auth_parse_head(p, len, 18 + AUTH_MAC, 0, &a->vmajor, &a->vminor,
	                    &a->role, why, whylen) < 0)
		return -1;
	if (a->vmajor != WIRE_VERSION_MAJOR)
		return 0;
	a->pid = wire_get_u32(p + 12);
	size_t n = wire_get_u16(p + 16);
	if (n > AUTH_ADDR_MAX || 18 + n + AUTH_MAC != len)
		return auth_fail(why, whylen,
		                 "handshake address length %llu does not fit",
		                 n);
	memcpy(a->addr, p + 18, n);
	a->addr[n] = 0;
	if (memchr(a->addr, 0, n))
		return auth_fail(why, whylen,
		                 "handshake address has a NUL byte", 0);
	memcpy(a->mac, p + 18 + n, AUTH_MAC);
	return 0;
}

/* The bytes a proof covers: label, tag, the challenge and the hello
 * (without its proof), and for the answer the ack (without its proof). */
static size_t
auth_transcript(unsigned char *t, char tag, const struct auth_challenge *c,
                const struct auth_hello *h, const struct auth_ack *a)
{
	size_t o = 0;
	memcpy(t, AUTH_LABEL, 12);
	t[12] = (unsigned char)tag;
	o = 13;
	o += auth_put_challenge(t + o, c);
	o += auth_put_hello(t + o, h) - AUTH_MAC;
	if (a)
		o += auth_put_ack(t + o, a) - AUTH_MAC;
	return o;
}

static int
auth_hmac(const char *cookie, const unsigned char *t, size_t n,
          unsigned char out[AUTH_MAC])
{
	unsigned int ol = 0;
	if (!HMAC(EVP_sha256(), cookie, (int)strlen(cookie), t, n, out, &ol))
		return -1;
	return ol == AUTH_MAC ? 0 : -1;
}

int
auth_hello_mac(const char *cookie, const struct auth_challenge *c,
               const struct auth_hello *h, unsigned char out[AUTH_MAC])
{
	unsigned char t[13 + AUTH_CHALLENGE + AUTH_HELLO];
	size_t n = auth_transcript(t, 'P', c, h, NULL);
	return auth_hmac(cookie, t, n, out);
}

int
auth_ack_mac(const char *cookie, const struct auth_challenge *c,
             const struct auth_hello *h, const struct auth_ack *a,
             unsigned char out[AUTH_MAC])
{
	unsigned char
	    t[13 + AUTH_CHALLENGE + AUTH_HELLO + 18 + AUTH_ADDR_MAX + AUTH_MAC];
	size_t n = auth_transcript(t, 'Q', c, h, a);
	return auth_hmac(cookie, t, n, out);
}

int
auth_nonce(unsigned char n[AUTH_NONCE])
{
	return RAND_bytes(n, (int)AUTH_NONCE) == 1 ? 0 : -1;
}

int
auth_mac_equal(const unsigned char *a, const unsigned char *b)
{
	return CRYPTO_memcmp(a, b, AUTH_MAC) == 0;
}

int
auth_tls_key(const char *cookie, const struct auth_challenge *c,
             const struct auth_hello *h, unsigned char out[32])
{
	unsigned char salt[2 * AUTH_NONCE];
	memcpy(salt, c->nonce, AUTH_NONCE);
	memcpy(salt + AUTH_NONCE, h->nonce, AUTH_NONCE);
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	EVP_KDF_CTX *kc = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	EVP_KDF_free(kdf);
	if (!kc)
		return -1;
	OSSL_PARAM ps[] = {
	    OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
	                                     (char *)"SHA256", 0),
	    OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
	                                      (void *)cookie, strlen(cookie)),
	    OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, salt,
	                                      sizeof salt),
	    OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO,
	                                      (void *)"dwork tls psk 1", 15),
	    OSSL_PARAM_construct_end()};
	int ok = EVP_KDF_derive(kc, out, 32, ps) == 1;
	EVP_KDF_CTX_free(kc);
	return ok ? 0 : -1;
}
