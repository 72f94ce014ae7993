/*
 * libFuzzer target for the wire protocol: the input is a byte stream as a
 * peer would send it.  It goes through the real frame reader (conn_read
 * on one end of a socket pair, with a 1 MiB payload limit so the length
 * check is what stops large frames), each frame's payload through its
 * decoder (handshake, call), and the whole input through the call
 * decoder directly (auth_fuzz.c covers the handshake itself).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/auth.h"
#include "runtime/conn.h"
#include "runtime/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
on_frame(void *arg, struct conn *c, const struct wire_hdr *h, unsigned char *p)
{
	struct auth_hello hello;
	struct auth_ack ack;
	struct auth_challenge ch;
	struct wire_call call;
	char why[160];
	(*(int *)arg)++;
	if (h->type == WIRE_HELLO)
		auth_parse_hello(p, h->payload, &hello, why, sizeof why);
	else if (h->type == WIRE_HELLO_ACK)
		auth_parse_ack(p, h->payload, &ack, why, sizeof why);
	else if (h->type == WIRE_CHALLENGE)
		auth_parse_challenge(p, h->payload, &ch, why, sizeof why);
	else if (h->type == WIRE_CALL &&
	         wire_parse_call(p, h->payload, &call, why, sizeof why) == 0 &&
	         call.name_len + call.arg_len + 4 != h->payload)
		abort(); /* the decoder's lengths must add up */
	if (h->type == WIRE_EXIT)
		conn_fail(c, "exit");
	free(p);
}

static void
fuzz_stream(const uint8_t *data, size_t size)
{
	int sp[2];
	if (size > 150000 || socketpair(AF_UNIX, SOCK_STREAM, 0, sp) < 0)
		return;
	if (write(sp[0], data, size) != (ssize_t)size) {
		close(sp[0]), close(sp[1]);
		return;
	}
	close(sp[0]); /* the peer is done: the reader ends at EOF */
	struct conn *c = conn_new(sp[1], 2);
	if (!c) {
		close(sp[1]);
		return;
	}
	c->max_payload = 1u << 20;
	char why[256];
	int frames = 0;
	while (conn_read(c, on_frame, &frames, why, sizeof why) == 0)
		;
	conn_free(c);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_call call;
	struct wire_hdr hdr;
	char why[160];
	wire_parse_call(data, size, &call, why, sizeof why);
	if (size >= WIRE_HDR)
		wire_parse_hdr(data, WIRE_MAX_PAYLOAD, &hdr, why, sizeof why);
	fuzz_stream(data, size);
	return 0;
}
