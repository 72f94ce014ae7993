/* TLS 1.3 links with an external pre-shared key (tls.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "runtime/rt.h"
#include "runtime/tls.h"

#define TLS_IDENTITY "dwork-link"
#ifndef TLS_READ_BUF
#define TLS_READ_BUF (256u << 10)
#endif

static SSL_CTX *tls_ctx[2]; /* client, server */
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

/* A session that carries the link's key, as TLS 1.3 external PSKs are
 * given to OpenSSL. */
static SSL_SESSION *
tls_session(SSL *ssl)
{
	static const unsigned char aes128gcm[2] = {0x13, 0x01};
	const unsigned char *key = SSL_get_app_data(ssl);
	const SSL_CIPHER *ci = SSL_CIPHER_find(ssl, aes128gcm);
	SSL_SESSION *s = ci && key ? SSL_SESSION_new() : NULL;
	if (s && SSL_SESSION_set1_master_key(s, key, 32) &&
	    SSL_SESSION_set_cipher(s, ci) &&
	    SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION))
		return s;
	SSL_SESSION_free(s);
	return NULL;
}

static int
tls_use_psk(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *idlen,
            SSL_SESSION **sess)
{
	(void)md; /* only one cipher suite, so the digest always fits */
	*sess = tls_session(ssl);
	*id = (const unsigned char *)TLS_IDENTITY;
	*idlen = strlen(TLS_IDENTITY);
	return *sess != NULL;
}

static int
tls_find_psk(SSL *ssl, const unsigned char *id, size_t idlen,
             SSL_SESSION **sess)
{
	*sess = NULL;
	if (idlen == strlen(TLS_IDENTITY) && !memcmp(id, TLS_IDENTITY, idlen))
		*sess = tls_session(ssl);
	return 1; /* an unknown identity: no PSK, and the handshake fails */
}

/* A socket BIO that sends with MSG_NOSIGNAL: OpenSSL's own writes with
 * write(), and a peer that went away would raise SIGPIPE in the user's
 * program. */
static BIO_METHOD *tls_bio_method;

/* Set by tls_write around its SSL_write when more bytes follow at once:
 * the record is sent with MSG_MORE, so the kernel gathers records into
 * full segments as it does a plaintext frame (one 16 KiB send a segment
 * costs the sender a whole loopback delivery and the reader a wake-up).
 * The last record of a write goes out without it and pushes them all. */
static __thread int tls_more;

static int
tls_bio_write(BIO *b, const char *buf, int n)
{
	ssize_t w =
	    send((int)BIO_get_fd(b, NULL), buf, (size_t)n,
	         MSG_NOSIGNAL | MSG_DONTWAIT | (tls_more ? MSG_MORE : 0));
	BIO_clear_retry_flags(b);
	if (w < 0 && (errno == EAGAIN || errno == EINTR))
		BIO_set_retry_write(b);
	return (int)w;
}

static int
tls_bio_read(BIO *b, char *buf, int n)
{
	ssize_t r =
	    recv((int)BIO_get_fd(b, NULL), buf, (size_t)n, MSG_DONTWAIT);
	BIO_clear_retry_flags(b);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		BIO_set_retry_read(b);
	return (int)r;
}

static void
tls_bio_init(void)
{
	const BIO_METHOD *sock = BIO_s_socket();
	BIO_METHOD *m = BIO_meth_new(BIO_TYPE_SOCKET, "dwork socket");
	if (!m)
		return;
	BIO_meth_set_write(m, tls_bio_write);
	BIO_meth_set_read(m, tls_bio_read);
	BIO_meth_set_ctrl(m, BIO_meth_get_ctrl(sock));
	BIO_meth_set_create(m, BIO_meth_get_create(sock));
	BIO_meth_set_destroy(m, BIO_meth_get_destroy(sock));
	tls_bio_method = m;
}

static void
tls_init(void)
{
	tls_bio_init();
	for (int server = 0; server < 2; server++) {
		SSL_CTX *x = SSL_CTX_new(server ? TLS_server_method()
		                                : TLS_client_method());
		if (!x)
			continue;
		SSL_CTX_set_min_proto_version(x, TLS1_3_VERSION);
		SSL_CTX_set_ciphersuites(x, "TLS_AES_128_GCM_SHA256");
		SSL_CTX_set_options(x, SSL_OP_NO_TICKET);
		SSL_CTX_set_num_tickets(x, 0);
		SSL_CTX_set_mode(x, SSL_MODE_ENABLE_PARTIAL_WRITE |
		                        SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
		SSL_CTX_set_default_read_buffer_len(x, TLS_READ_BUF);
		if (server)
			SSL_CTX_set_psk_find_session_callback(x, tls_find_psk);
		else
			SSL_CTX_set_psk_use_session_callback(x, tls_use_psk);
		tls_ctx[server] = x;
	}
}

static void
tls_reason(char *why, size_t wl, const char *what)
{
	unsigned long e = ERR_get_error();
	char buf[200] = "";
	if (e)
		ERR_error_string_n(e, buf, sizeof buf);
	snprintf(why, wl, "TLS %s failed%s%s", what, e ? ": " : "", buf);
	ERR_clear_error();
}

struct ssl_st *
tls_start(int fd, int server, const unsigned char key[32], uint64_t deadline,
          char *why, size_t wl)
{
	pthread_once(&tls_once, tls_init);
	SSL *s = tls_ctx[server != 0] ? SSL_new(tls_ctx[server != 0]) : NULL;
	BIO *bio = s && tls_bio_method ? BIO_new(tls_bio_method) : NULL;
	if (!bio) {
		tls_reason(why, wl, "setup");
		SSL_free(s);
		return NULL;
	}
	BIO_set_fd(bio, fd, BIO_NOCLOSE);
	SSL_set_bio(s, bio, bio);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	/* the key lives on the caller's stack: the session is made during
	 * the handshake below, then the pointer is dropped */
	SSL_set_app_data(s, (void *)key);
	if (server)
		SSL_set_accept_state(s);
	else
		SSL_set_connect_state(s);
	for (;;) {
		ERR_clear_error();
		int r = SSL_do_handshake(s);
		if (r == 1)
			break;
		int e = SSL_get_error(s, r);
		short ev = e == SSL_ERROR_WANT_READ    ? POLLIN
		           : e == SSL_ERROR_WANT_WRITE ? POLLOUT
		                                       : 0;
		if (!ev || cl_wait_fd(fd, ev, deadline) < 0) {
			if (ev)
				snprintf(why, wl, "TLS handshake timed out");
			else
				tls_reason(why, wl, "handshake");
			SSL_free(s);
			return NULL;
		}
	}
	SSL_set_app_data(s, NULL);
	return s;
}

static ssize_t
tls_result(SSL *s, int ok, size_t n)
{
	if (ok)
		return (ssize_t)n;
	int e = SSL_get_error(s, 0);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
		return 0;
	if (e == SSL_ERROR_SYSCALL && (errno == EAGAIN || errno == EINTR))
		return 0;
	ERR_clear_error();
	return -1;
}

ssize_t
tls_read(struct ssl_st *s, void *buf, size_t n)
{
	size_t got = 0;
	ERR_clear_error();
	int ok = SSL_read_ex(s, buf, n, &got);
	return tls_result(s, ok, got);
}

ssize_t
tls_write(struct ssl_st *s, const void *buf, size_t n, int more)
{
	size_t put = 0;
	ERR_clear_error();
	/* one record per call (SSL_MODE_ENABLE_PARTIAL_WRITE) */
	tls_more = more || n > TLS_RECORD;
	int ok = SSL_write_ex(s, buf, n, &put);
	tls_more = 0;
	return tls_result(s, ok, put);
}

void
tls_read_ahead(struct ssl_st *s)
{
	SSL_set_read_ahead(s, 1);
}

int
tls_pending(struct ssl_st *s)
{
	return SSL_has_pending(s);
}

int
tls_io_full(struct ssl_st *s, int fd, void *buf, size_t n, int wr,
            uint64_t deadline)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = wr ? tls_write(s, (char *)buf + done, n - done, 0)
		               : tls_read(s, (char *)buf + done, n - done);
		if (r < 0)
			return -1;
		done += (size_t)r;
		if (r == 0 &&
		    cl_wait_fd(fd, wr ? POLLOUT : POLLIN, deadline) < 0)
			return -2;
	}
	return 0;
}

void
tls_free(struct ssl_st *s)
{
	SSL_free(s); /* NULL is fine */
}

void
tls_library_init(void)
{
	OPENSSL_init_ssl(OPENSSL_INIT_NO_ATEXIT, NULL);
}
