/*
 * libFuzzer target for the STATS payload decoder (live.h, acct_decode,
 * then live_tail_get for the host and counters after it): the input is
 * what a worker sends the master with each heartbeat.  The decoder must
 * refuse what does not fit, never read past the input, and what it
 * accepts must be within its limits.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/live.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char *p = malloc(size ? size : 1); /* exact: overreads show */
	if (!p)
		return 0;
	memcpy(p, data, size);
	struct acct_snap *s = malloc(sizeof *s);
	char why[160];
	if (s && acct_decode(p, size, s, why, sizeof why) == 0) {
		if (s->nthr > ACCT_THREADS || s->nfn > ACCT_FUNCS)
			abort();
		for (uint32_t i = 0; i < s->nthr; i++)
			if (s->thr[i].cls > ACCT_NCLASS)
				abort();
		for (uint32_t i = 0; i < s->nfn; i++)
			if (strlen(s->fn[i].name) > 255)
				abort();
		if (s->used > size)
			abort();
		live_tail_get(p + s->used, size - s->used, s);
		if (strlen(s->host) >= sizeof s->host || s->hwc > 255)
			abort();
		acct_snap_free(s);
	}
	free(s);
	free(p);
	return 0;
}
