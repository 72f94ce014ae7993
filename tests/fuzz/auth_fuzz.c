/*
 * libFuzzer target for the handshake: the input is what the other side
 * of a fresh connection sends.  It goes to both sides of the exchange
 * (the prover, as a master or an accepting worker, and the answering
 * side, as a worker or a dialling worker) on one end of a socket pair,
 * and through the three message decoders directly.  Nothing the input
 * holds may crash either side or make it accept: without the cookie no
 * input can pass, since every proof depends on a nonce drawn after the
 * input was written.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dwork/error.h>

#include "runtime/handshake.h"
#include "runtime/rt.h"
#include "runtime/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
fuzz_check_id(uint32_t id, char *why, size_t wl)
{
	(void)why;
	(void)wl;
	return id > 2 ? 0 : -1;
}

/* Runs one side against the input; it must refuse. */
static void
fuzz_side(const uint8_t *data, size_t size, int prove, uint8_t role)
{
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) < 0)
		return;
	if (write(sp[0], data, size) != (ssize_t)size) {
		close(sp[0]), close(sp[1]);
		return;
	}
	shutdown(sp[0], SHUT_WR); /* the input ends: the side sees EOF */
	struct hs_side s = {.cookie = "fuzz-cookie",
	                    .role = role,
	                    .id = 2,
	                    .give_id = 3,
	                    .want_id = 2,
	                    .check_id =
	                        role == AUTH_ACCEPTOR ? fuzz_check_id : NULL,
	                    .addr = "127.0.0.1:1"};
	struct hs_result r;
	char why[300];
	int err =
	    prove
	        ? hs_prove(sp[1], &s, rt_now_ms() + 1000, &r, why, sizeof why)
	        : hs_answer(sp[1], &s, rt_now_ms() + 1000, &r, why, sizeof why);
	if (err == DW_OK)
		abort(); /* accepted without the cookie */
	close(sp[0]), close(sp[1]);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct auth_challenge c;
	struct auth_hello h;
	struct auth_ack a;
	char why[160];
	if (size > 4096)
		return 0;
	auth_parse_challenge(data, size, &c, why, sizeof why);
	auth_parse_hello(data, size, &h, why, sizeof why);
	auth_parse_ack(data, size, &a, why, sizeof why);
	fuzz_side(data, size, 1, AUTH_MASTER);
	fuzz_side(data, size, 1, AUTH_ACCEPTOR);
	fuzz_side(data, size, 0, AUTH_WORKER);
	fuzz_side(data, size, 0, AUTH_DIALLER);
	return 0;
}
