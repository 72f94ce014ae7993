/*
 * elfsym: resolves functions of this PIE executable (static and global)
 * and of a shared library (exported, and static through .symtab), falls
 * back to .dynsym on a "stripped" copy, and survives garbage, truncated
 * and mutated ELF files.
 */
#include "common/elfsym.h"
#include "tu_tmp.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Keep the function whole and under its own name (gcc would otherwise
 * make "name.constprop.0" clones); clang has no such attribute. */
#define NOCLONE
#ifdef __has_attribute
#if __has_attribute(noclone)
#undef NOCLONE
#define NOCLONE __attribute__((noclone))
#endif
#endif

typedef int (*elfsym_lib_fn)(int);

int elfsym_lib_exported(int x);
elfsym_lib_fn elfsym_lib_get_static(void);
int elfsym_test_global(int x);

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "elfsym_test:%d: FAIL: ", __LINE__);   \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			failures++;                                            \
		}                                                              \
	} while (0)

#define FAKE_BASE UINT64_C(0x100000000000) /* far from anything mapped */
#define FAKE_SIZE UINT64_C(0x100000)

static int failures;
static volatile int sink;
static char tmpdir[256];

static __attribute__((noinline)) NOCLONE int
elfsym_test_static(int x)
{
	int i;

	for (i = 0; i < x; i++)
		sink += i * 5;
	return sink;
}

__attribute__((noinline)) int
elfsym_test_global(int x)
{
	int i;

	for (i = 0; i < x; i++)
		sink ^= i + 11;
	return sink;
}

static uint64_t
fn_addr(elfsym_lib_fn fn)
{
	return (uint64_t)(uintptr_t)fn;
}

static char *
tmp_path(const char *name)
{
	static char buf[8][PATH_MAX];
	static int next;
	char *p = buf[next++ % 8];

	snprintf(p, PATH_MAX, "%s/%s", tmpdir, name);
	return p;
}

static int
write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	size_t put;

	if (!f)
		return -1;
	put = fwrite(data, 1, len, f);
	if (fclose(f) != 0 || put != len)
		return -1;
	return 0;
}

static unsigned char *
read_file(const char *path, size_t *len)
{
	unsigned char *buf = NULL;
	struct stat st;
	FILE *f = fopen(path, "rb");

	if (!f)
		return NULL;
	if (fstat(fileno(f), &st) == 0 && st.st_size > 0)
		buf = malloc((size_t)st.st_size);
	if (buf && fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = buf ? (size_t)st.st_size : 0;
	return buf;
}

static const char *
exe_path(void)
{
	static char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);

	path[n > 0 ? n : 0] = '\0';
	return path;
}

/* Resolves addr and addr + 4 and checks both name fn_name, starting at
 * addr. */
static void
check_fn(struct elf_resolver *r, const struct elf_module_map *m, uint64_t addr,
         const char *fn_name)
{
	uint64_t start = 0, off;
	char name[128];
	int rc;

	for (off = 0; off <= 4; off += 4) {
		rc = elf_resolve(r, m, addr + off, name, sizeof name, &start);
		CHECK(rc == DW_OK, "%s+%u: rc %d (%s)", fn_name, (unsigned)off,
		      rc, dw_strerror(rc));
		CHECK(strcmp(name, fn_name) == 0, "%s+%u: resolved as '%s'",
		      fn_name, (unsigned)off, name);
		CHECK(rc != DW_OK || start == addr,
		      "%s+%u: start 0x%llx, expected 0x%llx", fn_name,
		      (unsigned)off, (unsigned long long)start,
		      (unsigned long long)addr);
	}
}

static void
test_self(void)
{
	struct elf_module_map m = ELF_MODULE_MAP_INIT;
	struct elf_resolver *r = elf_resolver_new();
	const struct elf_mapping *mp;
	char name[128], small[5];
	uint64_t start = 1;
	int rc;

	sink += elfsym_test_static(3) + elfsym_test_global(3);
	sink += elfsym_lib_exported(3) + elfsym_lib_get_static()(3);
	CHECK(r != NULL, "elf_resolver_new");
	rc = elf_maps_read_self(&m);
	CHECK(rc == DW_OK && m.n > 0, "elf_maps_read_self: rc %d, %zu maps", rc,
	      m.n);
	mp = elf_maps_find(&m, fn_addr(elfsym_test_global));
	CHECK(mp && strcmp(mp->path, exe_path()) == 0,
	      "the executable's mapping is %s, expected %s",
	      mp ? mp->path : "(none)", exe_path());

	check_fn(r, &m, fn_addr(elfsym_test_static), "elfsym_test_static");
	check_fn(r, &m, fn_addr(elfsym_test_global), "elfsym_test_global");
	check_fn(r, &m, fn_addr(elfsym_lib_exported), "elfsym_lib_exported");
	check_fn(r, &m, fn_addr(elfsym_lib_get_static()), "elfsym_lib_static");

	rc = elf_resolve(r, &m, 1, name, sizeof name, &start);
	CHECK(rc == DW_ENOTFOUND && name[0] == '\0' && start == 1,
	      "address 1: rc %d, name '%s'", rc, name);
	rc = elf_resolve(r, &m, FAKE_BASE, name, sizeof name, NULL);
	CHECK(rc == DW_ENOTFOUND, "unmapped address: rc %d", rc);

	rc = elf_resolve(r, &m, fn_addr(elfsym_test_global), small,
	                 sizeof small, NULL);
	CHECK(rc == DW_OK && strcmp(small, "elfs") == 0,
	      "truncated name: rc %d, '%s'", rc, small);
	rc = elf_resolve(r, &m, fn_addr(elfsym_test_global), small, 0, NULL);
	CHECK(rc == DW_EINVAL, "len 0: rc %d", rc);

	elf_resolver_free(r);
	elf_maps_free(&m);
	CHECK(m.n == 0 && m.v == NULL, "elf_maps_free leaves an empty map");
}

static void
test_maps_add(void)
{
	struct elf_module_map m = ELF_MODULE_MAP_INIT;
	const struct elf_mapping *mp;

	CHECK(elf_maps_add(&m, 0x3000, 0x4000, 0, "/c") == DW_OK, "add c");
	CHECK(elf_maps_add(&m, 0x1000, 0x2000, 0, "/a") == DW_OK, "add a");
	CHECK(elf_maps_add(&m, 0x1000, 0x2000, 0, "/a") == DW_OK, "re-add a");
	CHECK(m.n == 2, "an equal mapping is not added twice: %zu", m.n);
	CHECK(elf_maps_add(&m, 0x2000, 0x1000, 0, "/x") == DW_EINVAL,
	      "start >= end");
	CHECK(elf_maps_add(&m, 0x5000, 0x6000, 0, "") == DW_EINVAL,
	      "empty path");
	CHECK(elf_maps_add(&m, 0x5000, 0x6000, UINT64_MAX - 10, "/x") ==
	          DW_EINVAL,
	      "offset overflow");
	CHECK(elf_maps_add(&m, 0x1800, 0x3800, 0x800, "/b") == DW_OK, "add b");
	CHECK(m.n == 1, "an overlapping mapping replaces: %zu", m.n);
	mp = elf_maps_find(&m, 0x1800);
	CHECK(mp && strcmp(mp->path, "/b") == 0, "find b");
	CHECK(elf_maps_find(&m, 0x3800) == NULL, "end is exclusive");
	CHECK(elf_maps_find(&m, 0x17ff) == NULL, "before start");
	elf_maps_free(&m);
}

/* A copy of the library whose .symtab is hidden (its type set to
 * SHT_PROGBITS) still resolves exported functions through .dynsym. */
static void
test_dynsym_fallback(void)
{
	struct elf_module_map self = ELF_MODULE_MAP_INIT;
	struct elf_module_map m = ELF_MODULE_MAP_INIT;
	struct elf_resolver *r = elf_resolver_new();
	const struct elf_mapping *lib;
	const char *copy = tmp_path("stripped.so");
	unsigned char *data = NULL;
	Elf64_Ehdr eh;
	Elf64_Shdr sh;
	size_t len = 0, i, k;
	char name[128];
	int rc;

	elf_maps_read_self(&self);
	lib = elf_maps_find(&self, fn_addr(elfsym_lib_exported));
	CHECK(lib != NULL, "no mapping for the library");
	if (lib)
		data = read_file(lib->path, &len);
	CHECK(data && len > sizeof eh, "cannot read the library");
	if (!data || len <= sizeof eh)
		goto out;
	memcpy(&eh, data, sizeof eh);
	for (i = 0, k = 0; i < eh.e_shnum; i++) {
		size_t at = eh.e_shoff + i * sizeof sh;

		if (at + sizeof sh > len)
			break;
		memcpy(&sh, data + at, sizeof sh);
		if (sh.sh_type == SHT_SYMTAB) {
			sh.sh_type = SHT_PROGBITS;
			memcpy(data + at, &sh, sizeof sh);
			k++;
		}
	}
	CHECK(k == 1, "the library has %zu .symtab sections", k);
	CHECK(write_file(copy, data, len) == 0, "write %s", copy);
	for (i = 0; i < self.n; i++)
		if (strcmp(self.v[i].path, lib->path) == 0)
			elf_maps_add(&m, self.v[i].start, self.v[i].end,
			             self.v[i].offset, copy);
	check_fn(r, &m, fn_addr(elfsym_lib_exported), "elfsym_lib_exported");
	rc = elf_resolve(r, &m, fn_addr(elfsym_lib_get_static()), name,
	                 sizeof name, NULL);
	CHECK(rc == DW_ENOTFOUND, "static function without .symtab: rc %d '%s'",
	      rc, name);
out:
	free(data);
	elf_resolver_free(r);
	elf_maps_free(&m);
	elf_maps_free(&self);
}

static void
expect_error(const char *path, int want)
{
	struct elf_module_map m = ELF_MODULE_MAP_INIT;
	struct elf_resolver *r = elf_resolver_new();
	static const uint64_t at[] = {0, 0x10, 0x1234, 0x4000, FAKE_SIZE - 1};
	char name[64];
	size_t i;
	int rc;

	CHECK(elf_maps_add(&m, FAKE_BASE, FAKE_BASE + FAKE_SIZE, 0, path) ==
	          DW_OK,
	      "add %s", path);
	for (i = 0; i < sizeof at / sizeof at[0]; i++) {
		strcpy(name, "junk");
		rc = elf_resolve(r, &m, FAKE_BASE + at[i], name, sizeof name,
		                 NULL);
		CHECK(rc == want && name[0] == '\0',
		      "%s at +0x%llx: rc %d (%s), expected %d (%s)", path,
		      (unsigned long long)at[i], rc, dw_strerror(rc), want,
		      dw_strerror(want));
	}
	elf_resolver_free(r);
	elf_maps_free(&m);
}

static void
test_garbage(void)
{
	unsigned char noise[8192];
	unsigned char *exe;
	size_t len, i;

	srand(12345);
	for (i = 0; i < sizeof noise; i++)
		noise[i] = (unsigned char)rand();
	exe = read_file(exe_path(), &len);
	CHECK(exe && len > 10000, "cannot read %s", exe_path());
	if (!exe || len <= 10000)
		return;
	CHECK(exe[EI_CLASS] == ELFCLASS64 &&
	          ((Elf64_Ehdr *)(void *)exe)->e_type == ET_DYN,
	      "the test executable is not a 64-bit PIE (ET_DYN)");

	write_file(tmp_path("noise"), noise, sizeof noise);
	expect_error(tmp_path("noise"), DW_EFORMAT);
	write_file(tmp_path("empty"), noise, 0);
	expect_error(tmp_path("empty"), DW_EFORMAT);
	write_file(tmp_path("trunc200"), exe, 200);
	expect_error(tmp_path("trunc200"), DW_EFORMAT);
	write_file(tmp_path("trunc10000"), exe, 10000);
	expect_error(tmp_path("trunc10000"), DW_EFORMAT);
	memcpy(noise, exe, 4096);
	noise[EI_CLASS] = ELFCLASS32;
	write_file(tmp_path("class32"), noise, sizeof noise);
	expect_error(tmp_path("class32"), DW_EFORMAT);
	expect_error(tmp_path("does-not-exist"), DW_ENOENT);
	expect_error(tmpdir, DW_EFORMAT);
	expect_error("/dev/zero", DW_EFORMAT);
	free(exe);
}

/* Damages bytes where the parser looks (headers, section headers) or
 * anywhere, with values that stress the bound checks. */
static void
mutate(unsigned char *data, size_t len, size_t shoff)
{
	static const unsigned char vals[] = {0, 0xff, 0x7f, 0x80, 1, 0x40};
	int n = 1 + rand() % 8, k;

	for (k = 0; k < n; k++) {
		size_t at;

		switch (rand() % 3) {
		case 0:
			at = (size_t)rand() % 64;
			break;
		case 1:
			at = shoff < len
			         ? shoff + (size_t)rand() % (len - shoff)
			         : 0;
			break;
		default:
			at = (size_t)rand() % len;
			break;
		}
		data[at] = rand() % 2 ? vals[rand() % sizeof vals]
		                      : (unsigned char)rand();
	}
}

static void
test_mutations(void)
{
	struct elf_module_map self = ELF_MODULE_MAP_INIT;
	const struct elf_mapping *mp;
	const char *path = tmp_path("mutant");
	uint64_t fn = fn_addr(elfsym_test_global);
	unsigned char *exe, *copy;
	size_t len, shoff;
	int iter, ok = 0;

	elf_maps_read_self(&self);
	mp = elf_maps_find(&self, fn);
	exe = read_file(exe_path(), &len);
	copy = exe ? malloc(len) : NULL;
	CHECK(mp && exe && copy, "setup");
	if (!mp || !exe || !copy)
		goto out;
	memcpy(&shoff, exe + offsetof(Elf64_Ehdr, e_shoff), sizeof shoff);
	srand(777);
	for (iter = 0; iter < 400; iter++) {
		struct elf_module_map m = ELF_MODULE_MAP_INIT;
		struct elf_resolver *r = elf_resolver_new();
		char name[64];
		int rc;

		memcpy(copy, exe, len);
		mutate(copy, len, shoff);
		write_file(path, copy, len);
		elf_maps_add(&m, mp->start, mp->end, mp->offset, path);
		memset(name, 'x', sizeof name);
		rc = elf_resolve(r, &m, fn + 4, name, sizeof name, NULL);
		CHECK(memchr(name, '\0', sizeof name) != NULL,
		      "iteration %d: name not terminated", iter);
		ok += rc == DW_OK;
		elf_resolver_free(r);
		elf_maps_free(&m);
	}
	CHECK(ok > 0, "no mutant resolved at all");
out:
	free(copy);
	free(exe);
	elf_maps_free(&self);
}

static void
cleanup(void)
{
	static const char *names[] = {"noise",      "empty",   "trunc200",
	                              "trunc10000", "class32", "stripped.so",
	                              "mutant"};
	size_t i;

	for (i = 0; i < sizeof names / sizeof names[0]; i++)
		unlink(tmp_path(names[i]));
	rmdir(tmpdir);
}

int
main(void)
{
	if (!mkdtemp(tu_tmp_template(tmpdir, sizeof tmpdir, "elfsym_test"))) {
		perror("elfsym_test: mkdtemp");
		return 1;
	}
	test_self();
	test_maps_add();
	test_dynsym_fallback();
	test_garbage();
	test_mutations();
	cleanup();
	if (failures) {
		fprintf(stderr, "elfsym_test: %d failure(s)\n", failures);
		return 1;
	}
	printf("elfsym_test: ok\n");
	return 0;
}
