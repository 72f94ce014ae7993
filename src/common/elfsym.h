/*
 * ELF symbol resolver: turns an address of a running (or recorded) process
 * into a function name.  Shared by the tracer (names of the functions seen,
 * at process end) and the merger (from the MODULE records of a process
 * file).  Position-independent executables and shared libraries are
 * handled, and static functions too: .symtab is read from the file on disk,
 * with .dynsym as the fallback for stripped files.
 *
 * The files named by a module map are outside input: they may have changed
 * since they were mapped, or be garbage.  Every offset and size is checked
 * against the file before it is read, and the files are read with pread()
 * rather than mapped, so a file truncated while we read it is an error, not
 * a SIGBUS.  Only native-endian ELF64 is accepted (32-bit ELF is
 * DW_EFORMAT).
 *
 * Not thread-safe: use one resolver per thread, or lock around it.
 */
#ifndef DW_COMMON_ELFSYM_H
#define DW_COMMON_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

#include <dwork/error.h>

/* One executable file-backed mapping: [start, end) maps path at offset. */
struct elf_mapping {
	uint64_t start;
	uint64_t end;
	uint64_t offset;
	char *path; /* owned by the map */
};

/* Mappings sorted by start, never overlapping.  Zero-initialise it (or use
 * ELF_MODULE_MAP_INIT) before the first call. */
struct elf_module_map {
	struct elf_mapping *v;
	size_t n;
	size_t cap;
};

#define ELF_MODULE_MAP_INIT                                                    \
	{                                                                      \
		NULL, 0, 0                                                     \
	}

/*
 * Appends the executable, file-backed mappings of /proc/self/maps (those
 * with 'x' permission whose path starts with '/') to m.  Lines that do not
 * parse are skipped.  On error m keeps the mappings added so far.
 * Returns DW_OK, DW_ENOMEM, or the error of opening /proc/self/maps.
 */
int elf_maps_read_self(struct elf_module_map *m);

/*
 * Adds the mapping [start, end) of path at file offset (the path is
 * copied).  Adding a mapping equal to one already present does nothing; a
 * mapping that overlaps others replaces them (a later MODULE record wins,
 * as a later label definition does).
 * Returns DW_OK, DW_EINVAL (start >= end, empty path, or offset + length
 * overflows) or DW_ENOMEM.
 */
int elf_maps_add(struct elf_module_map *m, uint64_t start, uint64_t end,
                 uint64_t offset, const char *path);

/* Returns the mapping containing addr, or NULL.  The pointer is valid until
 * the next elf_maps_add or elf_maps_free on m. */
const struct elf_mapping *elf_maps_find(const struct elf_module_map *m,
                                        uint64_t addr);

/* Frees the mappings; m is left empty and may be reused. */
void elf_maps_free(struct elf_module_map *m);

struct elf_resolver;

/* Returns a resolver with an empty cache of ELF files, or NULL when out of
 * memory.  Free it with elf_resolver_free. */
struct elf_resolver *elf_resolver_new(void);

/*
 * Writes to name (len bytes, always NUL-terminated, truncated if needed)
 * the name of the function containing addr, looked up in the file of the
 * mapping of m that contains addr.  If sym_start is not NULL it receives
 * the run-time address where that function starts.  Each file is read
 * once per resolver and kept (its failure too), keyed by path, so one
 * resolver serves many maps as long as the files do not change under it.
 * May block on file I/O.  On any error name is "" and *sym_start is left
 * unchanged.
 *
 * Returns DW_OK; DW_ENOTFOUND if addr is in no mapping or in no function
 * symbol of the file (the caller then names it by its hex address and the
 * module's base name, see elf_maps_find); DW_EFORMAT if the file is not a
 * valid native-endian ELF64 file; DW_ETOOBIG if a table is unreasonably
 * large; DW_EINVAL for bad arguments (len 0); DW_ENOMEM; or the error of
 * opening or reading the file (DW_ENOENT, DW_EACCES, DW_EIO, ...).
 */
int elf_resolve(struct elf_resolver *r, const struct elf_module_map *m,
                uint64_t addr, char *name, size_t len, uint64_t *sym_start);

/* Frees the resolver and its cache.  NULL is allowed. */
void elf_resolver_free(struct elf_resolver *r);

#endif
