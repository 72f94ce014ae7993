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
	char name[512];
	if (!r) {
		srcl_close(sl);
		return;
	}
	elf_maps_read_self(&m);
	for (size_t i = 0; i < s->cap; i++) {
		uint64_t a = s->v[i];
		if (!a)
			continue;
		fn_write_line(sl, a);
		if (fn_is_named(a))
			continue;
		if (elf_resolve(r, &m, a, name, sizeof name, NULL) != DW_OK) {
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
