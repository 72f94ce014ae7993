/*
 * libFuzzer target for machine files (`--machine-file`): the input is a
 * whole file.  It goes through mf_parse, and each line alone through
 * mf_parse_line; what the parser accepts must hold together (counts in
 * range, ports in range, host names non-empty and never an option).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/managers/mgr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_host(const struct mf_host *h)
{
	if (!((h->count >= 1 && h->count <= MF_COUNT_MAX) ||
	      h->count == DW_AUTO))
		abort();
	if (h->port < 0 || h->port > 65535 || h->bind_port < 0 ||
	    h->bind_port > 65535)
		abort();
	if (!h->host[0] || h->host[0] == '-' || h->user[0] == '-')
		abort();
	if (strlen(h->host) >= sizeof h->host ||
	    strlen(h->user) >= sizeof h->user ||
	    strlen(h->bind) >= sizeof h->bind)
		abort();
	if (h->bind_port && !h->bind[0])
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct mf_host *hosts = NULL, h;
	int n = 0;
	char why[256];
	if (mf_parse(text, size, "fuzz", &hosts, &n, why, sizeof why) == 0) {
		if (n <= 0 || !hosts)
			abort();
		for (int i = 0; i < n; i++)
			check_host(&hosts[i]);
	} else if (strncmp(why, "fuzz", 4) != 0) {
		abort(); /* every error names the file */
	}
	free(hosts);
	for (size_t pos = 0; pos < size;) {
		const char *nl = memchr(text + pos, '\n', size - pos);
		size_t len = nl ? (size_t)(nl - text - pos) : size - pos;
		if (mf_parse_line(text + pos, len, &h, why, sizeof why) == 1)
			check_host(&h);
		pos += len + 1;
	}
	return 0;
}
