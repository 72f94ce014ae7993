/*
 * libFuzzer target for the typed-argument decoder: the input is what a
 * peer sends as a call's argument.  It goes through the MessagePack
 * reader (mp_skip over every value, depth-bounded) and through the typed
 * unpacking under several formats; a value that decodes must re-encode
 * within the input's size bounds, and nothing may read past the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <dwork/dwork.h>

#include "runtime/mpack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mp_r r = {data, size, 0};
	while (r.pos < r.len && mp_skip(&r, 32) == 0)
		if (r.pos > r.len)
			abort();
	int i;
	int64_t l, *L;
	double d, *D;
	char *s;
	const void *b;
	size_t bn, nd, nl;
	if (dw_unpack(data, size, "ildsbDL", &i, &l, &d, &s, &b, &bn, &D, &nd,
	              &L, &nl) == DW_OK) {
		if ((const uint8_t *)b < data ||
		    (const uint8_t *)b + bn > data + size || nd > size ||
		    nl > size)
			abort();
		free(s), free(D), free(L);
	}
	if (dw_unpack(data, size, "s", &s) == DW_OK) {
		if (strlen(s) > size)
			abort();
		free(s);
	}
	if (dw_unpack(data, size, "D", &D, &nd) == DW_OK)
		free(D);
	dw_unpack(data, size, "ld", &l, &d);
	return 0;
}
