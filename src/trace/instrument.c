/*
 * Compiler instrumentation: a program built with -finstrument-functions
 * calls these two hooks at every function's entry and exit.  They record
 * FUNC_ENTER/FUNC_EXIT like dwt_func_enter/exit; names come from the
 * symbol tables at fini (funcs.c).  Two filters bound the cost: name
 * patterns (decided once per address and thread) and a minimum duration
 * (a call that recorded nothing inside and ended sooner is taken back).
 */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "common/elfsym.h"
#include "trace/record.h"

#define INS_NOINST   __attribute__((no_instrument_function))
#define INS_CACHE    512
#define INS_PATTERNS 32

DW_API void __cyg_profile_func_enter(void *fn, void *site) INS_NOINST;
DW_API void __cyg_profile_func_exit(void *fn, void *site) INS_NOINST;

struct ins_cache { /* per thread: address -> recorded or not */
	uint64_t addr[INS_CACHE];
	uint8_t ok[INS_CACHE];
};

static int ins_filter;                 /* name patterns are set */
static uint64_t ins_min_ticks;         /* 0: no duration filter */
static char *ins_pat[2][INS_PATTERNS]; /* [0] include, [1] exclude */
static int ins_npat[2];
static pthread_mutex_t ins_lock = PTHREAD_MUTEX_INITIALIZER;
static struct elf_resolver *ins_res;
static struct elf_module_map ins_maps;
static __thread struct ins_cache *ins_tc
    __attribute__((tls_model("initial-exec")));

static void INS_NOINST
ins_split(const char *list, int which)
{
	for (int i = 0; i < ins_npat[which]; i++)
		free(ins_pat[which][i]);
	ins_npat[which] = 0;
	while (list && *list && ins_npat[which] < INS_PATTERNS) {
		size_t n = strcspn(list, ",");
		if (n) {
			char *p = strndup(list, n);
			if (p)
				ins_pat[which][ins_npat[which]++] = p;
		}
		list += n + (list[n] == ',');
	}
}

/* Called by dwt_init with the settings (trc.lock held). */
void INS_NOINST
ins_configure(const dwt_config *c, uint64_t ticks_per_s)
{
	ins_split(c->instrument_include, 0);
	ins_split(c->instrument_exclude, 1);
	ins_filter = ins_npat[0] || ins_npat[1];
	ins_min_ticks = (uint64_t)((unsigned __int128)c->instrument_min_ns *
	                           ticks_per_s / 1000000000u);
}

static int INS_NOINST
ins_match(const char *name, int which)
{
	for (int i = 0; i < ins_npat[which]; i++)
		if (fnmatch(ins_pat[which][i], name, 0) == 0)
			return 1;
	return 0;
}

/* Resolves an address once per thread (slow path: the lock, the symbol
 * tables) and keeps the verdict. */
static int INS_NOINST
ins_decide(uint64_t a)
{
	char name[256] = "";
	pthread_mutex_lock(&ins_lock);
	if (!ins_res && (ins_res = elf_resolver_new()))
		elf_maps_read_self(&ins_maps);
	if (ins_res && !elf_maps_find(&ins_maps, a))
		elf_maps_read_self(&ins_maps); /* dlopen'd since */
	if (ins_res)
		elf_resolve(ins_res, &ins_maps, a, name, sizeof name, NULL);
	pthread_mutex_unlock(&ins_lock);
	int ok = (!ins_npat[0] || ins_match(name, 0)) && !ins_match(name, 1);
	return ok;
}

static int INS_NOINST
ins_allowed(uint64_t a)
{
	struct ins_cache *tc = ins_tc;
	if (rec_unlikely(!tc) && !(tc = ins_tc = calloc(1, sizeof *tc)))
		return 1;
	size_t i = (a >> 4) % INS_CACHE;
	if (rec_likely(tc->addr[i] == a))
		return tc->ok[i];
	int ok = ins_decide(a);
	tc->addr[i] = a;
	tc->ok[i] = (uint8_t)ok;
	return ok;
}

DW_API void
__cyg_profile_func_enter(void *fn, void *site)
{
	(void)site;
	if (!__atomic_load_n(&trc_on, __ATOMIC_RELAXED))
		return;
	uint64_t a = (uint64_t)(uintptr_t)fn;
	if (ins_filter && !ins_allowed(a))
		return;
	struct buf *t = trc_self;
	unsigned char *at = t ? t->pos : NULL;
	uint64_t before = t ? t->last : 0;
	rec_one(FMT_R_FUNC_ENTER, 0, a);
	if (rec_unlikely(!t || t != trc_self || t->pos != at + FMT_REC_SIZE))
		at = NULL; /* registered or switched segment: no take-back */
	if ((t = trc_self)) {
		t->fe_pos = at;
		t->fe_last = before;
		if (rec_unlikely(t->fncache[(a >> 4) % BUF_FNCACHE] != a))
			fn_note(t, a);
	}
}

DW_API void
__cyg_profile_func_exit(void *fn, void *site)
{
	(void)site;
	if (!__atomic_load_n(&trc_on, __ATOMIC_RELAXED))
		return;
	uint64_t a = (uint64_t)(uintptr_t)fn;
	if (ins_filter && !ins_allowed(a))
		return;
	struct buf *t = trc_self;
	if (ins_min_ticks && t && t->fe_pos &&
	    t->pos == t->fe_pos + FMT_REC_SIZE &&
	    clk_ticks() - t->last < ins_min_ticks) {
		/* a short call with nothing inside: take its entry back */
		__atomic_store_n((uint32_t *)t->fe_pos, 0, __ATOMIC_RELEASE);
		t->pos = t->fe_pos;
		t->last = t->fe_last;
		t->nrec--;
		t->fe_pos = NULL;
		return;
	}
	rec_one(FMT_R_FUNC_EXIT, 0, a);
}
