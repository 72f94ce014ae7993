/*
 * TLS 1.3 links (DWORK_TLS=1, docs/wire-protocol.md "Encrypted links"):
 * after the handshake both ends run a TLS 1.3 handshake with an external
 * pre-shared key, the link's key from the handshake (auth_tls_key), and
 * TLS_AES_128_GCM_SHA256; no certificates.  The prover is the TLS
 * server.  An SSL object is single-threaded: conn.c calls these with the
 * connection's write lock held.
 */
#ifndef DW_RUNTIME_TLS_H
#define DW_RUNTIME_TLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ssl_st;

/* Runs the TLS handshake on fd (made non-blocking) until deadline (ms,
 * rt_now_ms).  Returns the SSL object, or NULL with the reason in why. */
struct ssl_st *tls_start(int fd, int server, const unsigned char key[32],
                         uint64_t deadline, char *why, size_t wl);
/* Non-blocking transfers: bytes moved (> 0), 0 when the socket would
 * block, -1 when the link is dead (EOF, error, a forged record). */
ssize_t tls_read(struct ssl_st *s, void *buf, size_t n);
/* tls_write sends one record of at most TLS_RECORD bytes; more says that
 * more bytes follow straight away (the record may wait in the kernel for
 * them). */
#define TLS_RECORD 16384
ssize_t tls_write(struct ssl_st *s, const void *buf, size_t n, int more);
/* From now on a read takes all the socket has, up to the read buffer,
 * instead of one record at a time (the link's frames begin: whoever
 * reads drains tls_pending before it stops). */
void tls_read_ahead(struct ssl_st *s);
/* Decrypted bytes held inside the SSL object, not yet read. */
int tls_pending(struct ssl_st *s);
/* Moves all n bytes on a deadline (for the settings after the
 * handshake): 0, -1 closed or failed, -2 timeout. */
int tls_io_full(struct ssl_st *s, int fd, void *buf, size_t n, int wr,
                uint64_t deadline);
void tls_free(struct ssl_st *s);

/* Initialises OpenSSL without its exit handler: the runtime's threads
 * may still run while the process exits, and OpenSSL's cleanup would
 * free (or orphan) their per-thread state under them.  Called first
 * thing in dw_init; later calls do nothing. */
void tls_library_init(void);

#endif
