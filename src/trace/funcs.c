/* At fini: name every user function address this process recorded, on
 * the host where it ran (a PIE's addresses mean nothing elsewhere). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/elfsym.h"
#include "trace/tracer.h"

static int
set_add(struct addrset *s, uint64_t a)
{
	if (a == 0)
		return 0;
	if (2 * (s->n + 1) > s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		uint64_t *v = calloc(cap, sizeof *v);
		if (!v)
			return -1;
		for (size_t i = 0; i < s->cap; i++) {
			if (!s->v[i])
				continue;
			size_t j = (s->v[i] * 0x9e3779b97f4a7c15u) & (cap - 1);
			while (v[j])
				j = (j + 1) & (cap - 1);
			v[j] = s->v[i];
		}
		free(s->v);
		s->v = v;
		s->cap = cap;
	}
	size_t j = (a * 0x9e3779b97f4a7c15u) & (s->cap - 1);
	while (s->v[j] && s->v[j] != a)
		j = (j + 1) & (s->cap - 1);
	if (!s->v[j]) {
		s->v[j] = a;
		s->n++;
	}
	return 0;
}

void
fn_note(struct buf *b, uint64_t addr)
{
	pthread_mutex_lock(&trc.lock);
	if (set_add(&b->fns, addr) == 0)
		b->fncache[(addr >> 4) % BUF_FNCACHE] = addr;
	pthread_mutex_unlock(&trc.lock);
}

void
fn_set_free(struct addrset *s)
{
	free(s->v);
	memset(s, 0, sizeof *s);
}

static int
fn_is_named(uint64_t a)
{
	for (struct label *l = trc.labels; l; l = l->next)
		if (l->kind == FMT_L_FUNC && l->len >= 8 &&
		    fmt_get_u64(l->data) == a)
			return 1;
	return 0;
}

static void
fn_write_name(uint64_t a, const char *name)
{
	size_t n = strlen(name);
	unsigned char pl[8 + 512];
	if (n > 512)
		n = 512;
	fmt_put_u64(pl, a);
	memcpy(pl + 8, name, n);
	lbl_write(FMT_L_FUNC, pl, (uint32_t)(8 + n));
}

/* /tmp/perf-PID.map, as perf reads it: "START SIZE name" a line (hex,
 * no 0x needed), written by JITs (Julia with ENABLE_JITPROFILING or
 * perf support, V8, the JVM's agents) for code with no ELF symbol. */
struct perfmap {
	struct perfsym {
		uint64_t start, size;
		char *name;
	} * v;
	size_t n, cap;
};

static void
perfmap_load(struct perfmap *pm)
{
	char path[64], line[1024];
	snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		char *s = line, *e;
		uint64_t start = strtoull(s, &e, 16), size;
		if (e == s || *e != ' ')
			continue;
		size = strtoull(s = e + 1, &e, 16);
		if (e == s || *e != ' ' || !size)
			continue;
		s = e + 1;
		s[strcspn(s, "\n")] = 0;
		if (!*s)
			continue;
		if (pm->n == pm->cap) {
			size_t cap = pm->cap ? 2 * pm->cap : 256;
			struct perfsym *v = realloc(pm->v, cap * sizeof *v);
			if (!v)
				break;
			pm->v = v, pm->cap = cap;
		}
		if (!(pm->v[pm->n].name = strdup(s)))
			break;
		pm->v[pm->n].start = start;
		pm->v[pm->n++].size = size;
	}
	fclose(f);
}

/* The latest entry holding a (a JIT may reuse memory: the last wins). */
static const char *
perfmap_find(const struct perfmap *pm, uint64_t a)
{
	for (size_t i = pm->n; i-- > 0;)
		if (a >= pm->v[i].start && a - pm->v[i].start < pm->v[i].size)
			return pm->v[i].name;
	return NULL;
}

static void
perfmap_free(struct perfmap *pm)
{
	for (size_t i = 0; i < pm->n; i++)
		free(pm->v[i].name);
	free(pm->v);
}

/* file:line of address a, when the debug information has it. */
static void
fn_write_line(struct srcl *sl, uint64_t a)
{
	unsigned char pl[16 + 1024];
	uint32_t line;
	if (srcl_find(sl, a, (char *)pl + 16, sizeof pl - 16, &line))
		return;
	fmt_put_u64(pl, a);
	fmt_put_u32(pl + 8, line);
	fmt_put_u32(pl + 12, 0);
	lbl_write(FMT_L_FUNC_LINE, pl,
	          (uint32_t)(16 + strlen((char *)pl + 16)));
}

static void
fn_resolve_all(const struct addrset *s)
{
	struct elf_module_map m = ELF_MODULE_MAP_INIT;
	struct elf_resolver *r = elf_resolver_new();
	struct srcl *sl = srcl_open();
	struct perfmap pm = {0};
	char name[512];
	if (!r) {
		srcl_close(sl);
		return;
	}
	elf_maps_read_self(&m);
	perfmap_load(&pm);
	for (size_t i = 0; i < s->cap; i++) {
		uint64_t a = s->v[i];
		if (!a)
			continue;
		fn_write_line(sl, a);
		if (fn_is_named(a))
			continue;
		int ok =
		    elf_resolve(r, &m, a, name, sizeof name, NULL) == DW_OK;
		const char *jit = ok ? NULL : perfmap_find(&pm, a);
		if (jit) { /* code with no ELF symbol: named as perf does */
			snprintf(name, sizeof name, "%s", jit);
		} else if (!ok) {
			const struct elf_mapping *mp = elf_maps_find(&m, a);
			const char *base = mp ? strrchr(mp->path, '/') : NULL;
			snprintf(name, sizeof name, "0x%" PRIx64 "%s%s", a,
			         base ? " in " : "", base ? base + 1 : "");
		}
		fn_write_name(a, name);
	}
	elf_resolver_free(r);
	elf_maps_free(&m);
	srcl_close(sl);
	perfmap_free(&pm);
}

void
fn_name_seen(void)
{
	struct addrset s = {0};
	for (struct buf *b = trc.bufs; b; b = b->next) {
		if (b->gen != trc.gen)
			continue;
		for (size_t i = 0; i < b->fns.cap; i++)
			if (b->fns.v[i])
				set_add(&s, b->fns.v[i]);
	}
	if (s.n)
		fn_resolve_all(&s);
	free(s.v);
}
