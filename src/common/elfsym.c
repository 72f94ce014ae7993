/*
 * ELF symbol resolver.  See elfsym.h for the contract.
 *
 * Files are read with pread() into heap buffers instead of being mapped:
 * the merger reads files that may be rewritten or truncated while we look
 * at them, and a truncated mapping would kill us with SIGBUS.  Only the
 * headers, the PT_LOAD segments' geometry and one symbol table with its
 * string table are kept per file.
 */
#include "common/elfsym.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ELF_TABLE_MAX (UINT64_C(1) << 30) /* largest table we agree to read */

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ELF_NATIVE_DATA ELFDATA2LSB
#else
#define ELF_NATIVE_DATA ELFDATA2MSB
#endif

struct elf_sym {
	uint64_t value;
	uint64_t size;
	uint32_t name; /* offset in strtab, < strtab size */
	uint32_t rank; /* among aliases, lower is the better name */
};

struct elf_seg {
	uint64_t offset;
	uint64_t filesz;
	uint64_t vaddr;
};

struct elf_file {
	char *path;
	int err; /* why the file could not be loaded, or DW_OK */
	struct elf_seg *segs;
	size_t nsegs;
	struct elf_sym *syms; /* sorted by value, one per value */
	size_t nsyms;
	char *strtab; /* NUL-terminated one byte past its section's end */
};

struct elf_resolver {
	struct elf_file *files;
	size_t n;
	size_t cap;
	size_t last; /* index of the last file used: addresses come in runs */
};

/* A file being parsed. */
struct elf_input {
	int fd;
	uint64_t size;
	Elf64_Ehdr eh;
	Elf64_Shdr *sh;
	size_t shnum;
};

/* --- module map ------------------------------------------------------ */

static int
maps_reserve(struct elf_module_map *m)
{
	struct elf_mapping *v;
	size_t cap;

	if (m->n < m->cap)
		return DW_OK;
	cap = m->cap ? m->cap * 2 : 16;
	if (cap > SIZE_MAX / sizeof *v)
		return DW_ENOMEM;
	v = realloc(m->v, cap * sizeof *v);
	if (!v)
		return DW_ENOMEM;
	m->v = v;
	m->cap = cap;
	return DW_OK;
}

/* Index of the first mapping that ends above addr (ends are sorted too,
 * since mappings never overlap). */
static size_t
maps_lower(const struct elf_module_map *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->v[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int
maps_same(const struct elf_mapping *e, uint64_t start, uint64_t end,
          uint64_t offset, const char *path)
{
	return e->start == start && e->end == end && e->offset == offset &&
	       strcmp(e->path, path) == 0;
}

int
elf_maps_add(struct elf_module_map *m, uint64_t start, uint64_t end,
             uint64_t offset, const char *path)
{
	size_t i, j, k;
	char *p;

	if (!m || !path || !*path || start >= end ||
	    offset > UINT64_MAX - (end - start))
		return DW_EINVAL;
	i = maps_lower(m, start);
	for (j = i; j < m->n && m->v[j].start < end; j++)
		;
	if (j == i + 1 && maps_same(&m->v[i], start, end, offset, path))
		return DW_OK;
	if (i == j && maps_reserve(m) != DW_OK)
		return DW_ENOMEM;
	p = strdup(path);
	if (!p)
		return DW_ENOMEM;
	if (i == j) {
		memmove(&m->v[i + 1], &m->v[i], (m->n - i) * sizeof *m->v);
		m->n++;
	} else {
		for (k = i; k < j; k++)
			free(m->v[k].path);
		memmove(&m->v[i + 1], &m->v[j], (m->n - j) * sizeof *m->v);
		m->n -= j - i - 1;
	}
	m->v[i] = (struct elf_mapping){start, end, offset, p};
	return DW_OK;
}

/* Adds one /proc/self/maps line if it is an executable file mapping:
 * "start-end perms offset dev inode   path". */
static int
maps_add_line(struct elf_module_map *m, char *line)
{
	uint64_t start, end, offset;
	char perms[8];
	int at = -1;
	char *path;
	size_t len;
	int rc;

	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n",
	           &start, &end, perms, &offset, &at) < 4 ||
	    at < 0)
		return DW_OK;
	path = line + at;
	len = strlen(path);
	if (len > 0 && path[len - 1] == '\n')
		path[len - 1] = '\0';
	if (strlen(perms) < 3 || perms[2] != 'x' || path[0] != '/')
		return DW_OK;
	rc = elf_maps_add(m, start, end, offset, path);
	return rc == DW_ENOMEM ? rc : DW_OK;
}

int
elf_maps_read_self(struct elf_module_map *m)
{
	char *line = NULL;
	size_t cap = 0;
	int rc = DW_OK;
	FILE *f;

	if (!m)
		return DW_EINVAL;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return dw_err_from_errno(errno);
	while (rc == DW_OK && getline(&line, &cap, f) > 0)
		rc = maps_add_line(m, line);
	if (rc == DW_OK && ferror(f))
		rc = DW_EIO;
	free(line);
	fclose(f);
	return rc;
}

const struct elf_mapping *
elf_maps_find(const struct elf_module_map *m, uint64_t addr)
{
	size_t i;

	if (!m)
		return NULL;
	i = maps_lower(m, addr);
	if (i < m->n && m->v[i].start <= addr)
		return &m->v[i];
	return NULL;
}

void
elf_maps_free(struct elf_module_map *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	*m = (struct elf_module_map)ELF_MODULE_MAP_INIT;
}

/* --- reading an ELF file ---------------------------------------------- */

/* Reads exactly len bytes at off; a range outside the file is a format
 * error, and so is a file that shrank under us. */
static int
input_read(const struct elf_input *in, uint64_t off, void *buf, uint64_t len)
{
	char *p = buf;

	if (len > in->size || off > in->size - len)
		return DW_EFORMAT;
	while (len > 0) {
		ssize_t got = pread(in->fd, p, len, (off_t)off);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return dw_err_from_errno(errno);
		if (got == 0)
			return DW_EFORMAT;
		p += got;
		off += (uint64_t)got;
		len -= (uint64_t)got;
	}
	return DW_OK;
}

/* Reads a table of len bytes into a new buffer with `extra` zero bytes
 * after it. */
static int
input_read_alloc(const struct elf_input *in, uint64_t off, uint64_t len,
                 size_t extra, void **out)
{
	void *buf;
	int rc;

	*out = NULL;
	if (len > in->size || off > in->size - len)
		return DW_EFORMAT;
	if (len > ELF_TABLE_MAX)
		return DW_ETOOBIG;
	buf = calloc(1, (size_t)len + extra);
	if (!buf)
		return DW_ENOMEM;
	rc = input_read(in, off, buf, len);
	if (rc != DW_OK) {
		free(buf);
		return rc;
	}
	*out = buf;
	return DW_OK;
}

static int
ehdr_check(const Elf64_Ehdr *eh)
{
	const unsigned char *id = eh->e_ident;

	if (memcmp(id, ELFMAG, SELFMAG) != 0 || id[EI_CLASS] != ELFCLASS64 ||
	    id[EI_DATA] != ELF_NATIVE_DATA || id[EI_VERSION] != EV_CURRENT)
		return DW_EFORMAT;
	if (eh->e_type != ET_EXEC && eh->e_type != ET_DYN)
		return DW_EFORMAT;
	if (eh->e_phentsize != sizeof(Elf64_Phdr))
		return DW_EFORMAT;
	if (eh->e_shoff != 0 && eh->e_shentsize != sizeof(Elf64_Shdr))
		return DW_EFORMAT;
	return DW_OK;
}

static int
input_open(struct elf_input *in, const char *path)
{
	struct stat st;
	int rc;

	in->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (in->fd < 0)
		return dw_err_from_errno(errno);
	if (fstat(in->fd, &st) != 0)
		return dw_err_from_errno(errno);
	if (!S_ISREG(st.st_mode))
		return DW_EFORMAT;
	in->size = (uint64_t)st.st_size;
	rc = input_read(in, 0, &in->eh, sizeof in->eh);
	return rc == DW_OK ? ehdr_check(&in->eh) : rc;
}

static void
input_close(struct elf_input *in)
{
	if (in->fd >= 0)
		close(in->fd);
	free(in->sh);
}

/* Reads the section headers; e_shnum 0 with a table means the count is in
 * the first header's sh_size (extended numbering). */
static int
input_sections(struct elf_input *in)
{
	Elf64_Shdr first;
	uint64_t n;
	void *sh;
	int rc;

	if (in->eh.e_shoff == 0)
		return DW_OK;
	rc = input_read(in, in->eh.e_shoff, &first, sizeof first);
	if (rc != DW_OK)
		return rc;
	n = in->eh.e_shnum ? in->eh.e_shnum : first.sh_size;
	if (n == 0)
		return DW_OK;
	if (n > in->size / sizeof(Elf64_Shdr))
		return DW_EFORMAT;
	rc = input_read_alloc(in, in->eh.e_shoff, n * sizeof(Elf64_Shdr), 0,
	                      &sh);
	if (rc != DW_OK)
		return rc;
	in->sh = sh;
	in->shnum = (size_t)n;
	return DW_OK;
}

static int
seg_add(struct elf_file *f, const Elf64_Phdr *ph, uint64_t file_size)
{
	if (ph->p_offset > file_size || ph->p_filesz > file_size - ph->p_offset)
		return DW_EFORMAT;
	if (ph->p_vaddr > UINT64_MAX - ph->p_filesz)
		return DW_EFORMAT;
	f->segs[f->nsegs++] =
	    (struct elf_seg){ph->p_offset, ph->p_filesz, ph->p_vaddr};
	return DW_OK;
}

/* Keeps the PT_LOAD segments: they turn a file offset into a vaddr. */
static int
file_segments(struct elf_file *f, const struct elf_input *in)
{
	uint64_t i, n = in->eh.e_phnum;
	Elf64_Phdr *ph;
	void *buf;
	int rc;

	if (n == PN_XNUM && in->shnum > 0)
		n = in->sh[0].sh_info;
	if (n == 0 || n > in->size / sizeof(Elf64_Phdr))
		return DW_EFORMAT;
	rc = input_read_alloc(in, in->eh.e_phoff, n * sizeof *ph, 0, &buf);
	if (rc != DW_OK)
		return rc;
	ph = buf;
	f->segs = calloc((size_t)n, sizeof *f->segs);
	rc = f->segs ? DW_OK : DW_ENOMEM;
	for (i = 0; i < n && rc == DW_OK; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_filesz > 0)
			rc = seg_add(f, &ph[i], in->size);
	free(ph);
	if (rc == DW_OK && f->nsegs == 0)
		rc = DW_EFORMAT;
	return rc;
}

/* Global names beat weak ones, which beat local ones; then the name with
 * fewer leading underscores ("malloc" over "__libc_malloc"). */
static uint32_t
sym_rank(const Elf64_Sym *s, const char *name)
{
	uint32_t bind, us = 0;

	switch (ELF64_ST_BIND(s->st_info)) {
	case STB_GLOBAL:
		bind = 0;
		break;
	case STB_WEAK:
		bind = 1;
		break;
	default:
		bind = 2;
		break;
	}
	while (name[us] == '_' && us < 255)
		us++;
	return bind << 8 | us;
}

static int
sym_wanted(const Elf64_Sym *s, const char *strtab, uint64_t strsz)
{
	unsigned type = ELF64_ST_TYPE(s->st_info);

	if (type != STT_FUNC && type != STT_GNU_IFUNC)
		return 0;
	if (s->st_shndx == SHN_UNDEF || s->st_value == 0)
		return 0;
	if (s->st_size > UINT64_MAX - s->st_value)
		return 0;
	return s->st_name != 0 && s->st_name < strsz &&
	       strtab[s->st_name] != '\0';
}

static int
sym_cmp(const void *a, const void *b)
{
	const struct elf_sym *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return (x->name > y->name) - (x->name < y->name);
}

/* Sorts and keeps one symbol per address, the best-ranked alias, with the
 * largest size among the aliases.  Returns the new count. */
static size_t
syms_sort(struct elf_sym *syms, size_t n)
{
	size_t k, w = 0;

	qsort(syms, n, sizeof *syms, sym_cmp);
	for (k = 0; k < n; k++) {
		if (w > 0 && syms[w - 1].value == syms[k].value) {
			if (syms[k].size > syms[w - 1].size)
				syms[w - 1].size = syms[k].size;
			continue;
		}
		syms[w++] = syms[k];
	}
	return w;
}

/* Finds the first section of the given type with its string table. */
static int
symtab_find(const struct elf_input *in, uint32_t type, const Elf64_Shdr **sym,
            const Elf64_Shdr **str)
{
	size_t i;

	*sym = NULL;
	for (i = 0; i < in->shnum && !*sym; i++)
		if (in->sh[i].sh_type == type)
			*sym = &in->sh[i];
	if (!*sym)
		return DW_ENOTFOUND;
	if ((*sym)->sh_entsize != sizeof(Elf64_Sym) ||
	    (*sym)->sh_size % sizeof(Elf64_Sym) != 0 ||
	    (*sym)->sh_link >= in->shnum)
		return DW_EFORMAT;
	*str = &in->sh[(*sym)->sh_link];
	if ((*str)->sh_type != SHT_STRTAB)
		return DW_EFORMAT;
	return DW_OK;
}

/* Loads the function symbols of the symbol table of the given type.  A
 * file without that table, or without functions in it, is left with no
 * symbols and DW_OK. */
static int
file_symbols(struct elf_file *f, const struct elf_input *in, uint32_t type)
{
	const Elf64_Shdr *symsh, *strsh;
	struct elf_sym *syms = NULL;
	Elf64_Sym *raw = NULL;
	char *strtab = NULL;
	size_t k, n = 0, nraw;
	void *buf;
	int rc;

	rc = symtab_find(in, type, &symsh, &strsh);
	if (rc != DW_OK)
		return rc == DW_ENOTFOUND ? DW_OK : rc;
	rc = input_read_alloc(in, strsh->sh_offset, strsh->sh_size, 1, &buf);
	strtab = buf;
	if (rc == DW_OK)
		rc = input_read_alloc(in, symsh->sh_offset, symsh->sh_size, 0,
		                      &buf);
	raw = rc == DW_OK ? buf : NULL;
	nraw = (size_t)(symsh->sh_size / sizeof(Elf64_Sym));
	if (rc == DW_OK && nraw > 0) {
		syms = malloc(nraw * sizeof *syms);
		rc = syms ? DW_OK : DW_ENOMEM;
	}
	for (k = 0; rc == DW_OK && k < nraw; k++) {
		const Elf64_Sym *s = &raw[k];

		if (!sym_wanted(s, strtab, strsh->sh_size))
			continue;
		syms[n++] =
		    (struct elf_sym){s->st_value, s->st_size, s->st_name,
		                     sym_rank(s, strtab + s->st_name)};
	}
	free(raw);
	if (rc != DW_OK || n == 0) {
		free(syms);
		free(strtab);
		return rc;
	}
	f->nsyms = syms_sort(syms, n);
	f->syms = syms;
	f->strtab = strtab;
	return DW_OK;
}

static void
file_clear(struct elf_file *f)
{
	free(f->segs);
	free(f->syms);
	free(f->strtab);
	f->segs = NULL;
	f->syms = NULL;
	f->strtab = NULL;
	f->nsegs = 0;
	f->nsyms = 0;
}

/* .symtab has the static functions; a stripped file (or one whose .symtab
 * is damaged) still has .dynsym. */
static int
file_load(struct elf_file *f)
{
	struct elf_input in = {.fd = -1};
	int rc;

	rc = input_open(&in, f->path);
	if (rc == DW_OK)
		rc = input_sections(&in);
	if (rc == DW_OK)
		rc = file_segments(f, &in);
	if (rc == DW_OK) {
		rc = file_symbols(f, &in, SHT_SYMTAB);
		if (rc == DW_EFORMAT || (rc == DW_OK && f->nsyms == 0))
			rc = file_symbols(f, &in, SHT_DYNSYM);
	}
	input_close(&in);
	if (rc != DW_OK)
		file_clear(f);
	return rc;
}

/* --- resolver --------------------------------------------------------- */

struct elf_resolver *
elf_resolver_new(void)
{
	return calloc(1, sizeof(struct elf_resolver));
}

void
elf_resolver_free(struct elf_resolver *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->n; i++) {
		file_clear(&r->files[i]);
		free(r->files[i].path);
	}
	free(r->files);
	free(r);
}

static int
resolver_reserve(struct elf_resolver *r)
{
	struct elf_file *v;
	size_t cap;

	if (r->n < r->cap)
		return DW_OK;
	cap = r->cap ? r->cap * 2 : 8;
	if (cap > SIZE_MAX / sizeof *v)
		return DW_ENOMEM;
	v = realloc(r->files, cap * sizeof *v);
	if (!v)
		return DW_ENOMEM;
	r->files = v;
	r->cap = cap;
	return DW_OK;
}

/* Returns the cached file for path, loading it on first use.  A load
 * failure is cached too, except running out of memory, which may pass. */
static int
resolver_file(struct elf_resolver *r, const char *path, struct elf_file **out)
{
	struct elf_file *f;
	size_t i;

	for (i = 0; i < r->n; i++) {
		size_t k = (r->last + i) % r->n;

		if (strcmp(r->files[k].path, path) == 0) {
			r->last = k;
			*out = &r->files[k];
			return r->files[k].err;
		}
	}
	if (resolver_reserve(r) != DW_OK)
		return DW_ENOMEM;
	f = &r->files[r->n];
	*f = (struct elf_file){.path = strdup(path)};
	if (!f->path)
		return DW_ENOMEM;
	f->err = file_load(f);
	if (f->err == DW_ENOMEM) {
		free(f->path);
		return DW_ENOMEM;
	}
	r->last = r->n++;
	*out = f;
	return f->err;
}

/* Turns a run-time address of the mapping into a vaddr of the file through
 * the PT_LOAD segment holding its file offset. */
static const struct elf_seg *
file_vaddr(const struct elf_file *f, const struct elf_mapping *mp,
           uint64_t addr, uint64_t *vaddr)
{
	uint64_t delta = addr - mp->start, off;
	size_t i;

	if (mp->offset > UINT64_MAX - delta)
		return NULL;
	off = mp->offset + delta;
	for (i = 0; i < f->nsegs; i++) {
		const struct elf_seg *s = &f->segs[i];

		if (off >= s->offset && off - s->offset < s->filesz) {
			*vaddr = off - s->offset + s->vaddr;
			return s;
		}
	}
	return NULL;
}

/* The symbol containing vaddr; one of size 0 (hand-written assembly)
 * covers up to the next symbol, within the segment. */
static const struct elf_sym *
file_lookup(const struct elf_file *f, const struct elf_seg *seg, uint64_t vaddr)
{
	const struct elf_sym *s;
	size_t lo = 0, hi = f->nsyms;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->syms[mid].value <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	s = &f->syms[lo - 1];
	if (s->size > 0)
		return vaddr - s->value < s->size ? s : NULL;
	return s->value >= seg->vaddr ? s : NULL;
}

int
elf_resolve(struct elf_resolver *r, const struct elf_module_map *m,
            uint64_t addr, char *name, size_t len, uint64_t *sym_start)
{
	const struct elf_mapping *mp;
	const struct elf_seg *seg;
	const struct elf_sym *s;
	struct elf_file *f;
	uint64_t vaddr;
	size_t n;
	int rc;

	if (!r || !m || !name || len == 0)
		return DW_EINVAL;
	name[0] = '\0';
	mp = elf_maps_find(m, addr);
	if (!mp)
		return DW_ENOTFOUND;
	rc = resolver_file(r, mp->path, &f);
	if (rc != DW_OK)
		return rc;
	seg = file_vaddr(f, mp, addr, &vaddr);
	s = seg ? file_lookup(f, seg, vaddr) : NULL;
	if (!s)
		return DW_ENOTFOUND;
	n = strnlen(f->strtab + s->name, len - 1);
	memcpy(name, f->strtab + s->name, n);
	name[n] = '\0';
	if (sym_start)
		*sym_start = addr - (vaddr - s->value);
	return DW_OK;
}
