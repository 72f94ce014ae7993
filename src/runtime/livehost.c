/*
 * The host tail of a STATS payload (live.h): every process names its
 * host after its figures, so the master can tell processes on other
 * hosts apart (dwork top's "host", TALP's numNodes).  The tail follows
 * acct_encode's bytes because the decoder reads only what its counts
 * cover: an older master ignores it, and an older worker's payload has
 * none.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "runtime/live.h"
#include "runtime/wire.h"

#define TAIL_TAG 'H'
#define HWC_TAG  'C'

static char my_host[64];
static pthread_once_t host_once = PTHREAD_ONCE_INIT;

static void
host_read(void)
{
	if (gethostname(my_host, sizeof my_host - 1) != 0 || !my_host[0])
		strcpy(my_host, "unknown");
	my_host[sizeof my_host - 1] = 0;
}

const char *
live_my_host(void)
{
	pthread_once(&host_once, host_read);
	return my_host;
}

size_t
live_tail_put(unsigned char *p)
{
	const char *h = live_my_host();
	size_t n = strlen(h);
	p[0] = TAIL_TAG;
	p[1] = (unsigned char)n;
	memcpy(p + 2, h, n);
	unsigned char *q = p + 2 + n;
	uint64_t c, i;
	int err = hwc_totals(&c, &i);
	q[0] = HWC_TAG;
	q[1] = (unsigned char)(err > 0 && err < 256 ? err : err ? 255 : 0);
	wire_put_u64(q + 2, c);
	wire_put_u64(q + 10, i);
	return 2 + n + 18;
}

void
live_tail_get(const unsigned char *p, size_t len, struct acct_snap *s)
{
	s->host[0] = 0;
	s->hwc = -1;
	if (len < 2 || p[0] != TAIL_TAG || p[1] == 0 ||
	    p[1] >= sizeof s->host || (size_t)p[1] > len - 2)
		return;
	memcpy(s->host, p + 2, p[1]);
	s->host[p[1]] = 0;
	const unsigned char *q = p + 2 + p[1];
	if (len - 2 - p[1] < 18 || q[0] != HWC_TAG)
		return;
	s->hwc = q[1];
	s->cycles = wire_get_u64(q + 2);
	s->instr = wire_get_u64(q + 10);
}
