/*
 * libFuzzer target for the ELF symbol resolver: the input is the file
 * behind a module, mapped twice (at file offset 0 and 0x1000, as a PIE's
 * first two mappings would be), and a few addresses are resolved in it,
 * each twice so the second lookup goes through the resolver's cache.
 */
#include "common/elfsym.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FUZZ_BASE UINT64_C(0x555555554000)
#define FUZZ_SPAN UINT64_C(0x100000)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
fuzz_write_all(int fd, const uint8_t *data, size_t size)
{
	while (size > 0) {
		ssize_t n = write(fd, data, size);

		if (n <= 0)
			return -1;
		data += n;
		size -= (size_t)n;
	}
	return 0;
}

static void
fuzz_resolve(const char *path)
{
	static const uint64_t probes[] = {0,      0x10,    0x40,         0x400,
	                                  0x1000, 0x1004,  0x1130,       0x2000,
	                                  0x3300, 0x10000, FUZZ_SPAN - 1};
	struct elf_module_map m = ELF_MODULE_MAP_INIT;
	struct elf_resolver *r = elf_resolver_new();
	uint64_t start;
	char name[32];
	size_t i;
	int pass;

	if (!r)
		return;
	elf_maps_add(&m, FUZZ_BASE, FUZZ_BASE + FUZZ_SPAN, 0, path);
	elf_maps_add(&m, FUZZ_BASE + FUZZ_SPAN, FUZZ_BASE + 2 * FUZZ_SPAN,
	             0x1000, path);
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < sizeof probes / sizeof probes[0]; i++) {
			elf_resolve(r, &m, FUZZ_BASE + probes[i], name,
			            sizeof name, &start);
			elf_resolve(r, &m, FUZZ_BASE + FUZZ_SPAN + probes[i],
			            name, sizeof name, NULL);
			if (memchr(name, '\0', sizeof name) == NULL)
				__builtin_trap();
		}
	elf_resolver_free(r);
	elf_maps_free(&m);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = memfd_create("elfsym_fuzz", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (fuzz_write_all(fd, data, size) == 0) {
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		fuzz_resolve(path);
	}
	close(fd);
	return 0;
}
