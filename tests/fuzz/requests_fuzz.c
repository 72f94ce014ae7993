/*
 * libFuzzer target for what other processes send an object's owner: the
 * input is one REQ payload (op, reserved bytes, body) served as a local
 * request whose answers go nowhere, then the same bytes as a travelling
 * reference (both kinds) and as a pmap batch (the batch runs a
 * registered echo for items that name it).  Owned objects are dropped
 * after each input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt.h"
#include "runtime/work.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
fz_echo(const void *arg, size_t len, dw_reply *r)
{
	return dw_reply_set(r, arg, len);
}

static void
fuzz_request(const uint8_t *data, size_t size)
{
	if (size < REQ_PREFIX || data[0] == 0 || data[0] > REQ_OP_MAX ||
	    data[1] || data[2] || data[3])
		return; /* req_on_frame closes the link for these */
	unsigned char *p = malloc(size);
	if (!p)
		return;
	memcpy(p, data, size);
	struct req_src s = {.pid = 7}; /* no answer wanted */
	req_on_local(&s, p, size);
	if (data[0] == REQ_CACHE_PUT && size >= REQ_PREFIX + 8) {
		unsigned char drop[REQ_PREFIX + 8] = {REQ_CACHE_DROP};
		memcpy(drop + REQ_PREFIX, data + REQ_PREFIX, 8);
		if ((p = malloc(sizeof drop))) {
			memcpy(p, drop, sizeof drop);
			req_on_local(&s, p, sizeof drop);
		}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int once;
	if (!once++)
		dw_register("e", fz_echo);
	if (size > (1u << 20))
		return 0;
	fuzz_request(data, size);
	struct ref r;
	ref_decode(data, size, REF_CHANNEL, &r);
	ref_decode(data, size, REF_FUTURE, &r);
	void *res = NULL;
	size_t n = 0;
	char err[512];
	call_invoke("dwork:pmap", 10, data, size, &res, &n, err, sizeof err);
	free(res);
	chan_shutdown();
	call_refs_gone(7);
	return 0;
}
