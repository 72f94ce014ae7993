/*
 * Labels of the merged trace: Paraver's standard states with the states,
 * event types and values the processes defined, and one id per user
 * function name (the same function in two processes gets one id).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "merge/mg_int.h"
#include "merge/pipe.h"

/* Paraver's standard states (the numbers and colours stock Paraver
 * configurations expect). */
static const mg_state_label std_states[] = {
    {0, 0x75c3ff, "Idle"},
    {1, 0x0000ff, "Running"},
    {2, 0xffffff, "Not created"},
    {3, 0xff0000, "Waiting a message"},
    {4, 0xff00ae, "Blocking Send"},
    {5, 0xb30000, "Synchronization"},
    {6, 0x00ff00, "Test/Probe"},
    {7, 0xffff00, "Scheduling and Fork/Join"},
    {8, 0xeb0000, "Wait/WaitAll"},
    {9, 0x00a200, "Blocked"},
    {10, 0xff00ff, "Immediate Send"},
    {11, 0x6464b1, "Immediate Receive"},
    {12, 0xacae29, "I/O"},
    {13, 0xff901a, "Group Communication"},
    {14, 0x02ffb1, "Tracing Disabled"},
    {15, 0xc0e000, "Others"},
    {16, 0x424242, "Send Receive"},
    {17, 0xff0060, "Memory transfer"},
    {18, 0xa9a9a9, "Profiling"},
    {19, 0xa90000, "On-line analysis"},
    {20, 0x006dff, "Remote memory access"},
    {21, 0xc83d44, "Atomic memory operation"},
    {22, 0xc84200, "Memory ordering operation"},
    {23, 0x002900, "Distributed locking"},
    {24, 0x8b79b1, "Overhead"},
    {25, 0x747474, "One-sided op"},
    {26, 0xc83259, "Startup latency"},
    {27, 0xffab62, "Waiting links"},
    {28, 0x0044bd, "Data copy"},
    {29, 0x342b00, "RTT"},
    {30, 0xff2e00, "Allocating memory"},
    {31, 0x64d820, "Freeing memory"},
    {32, 0x76b900, "Configuring accelerator"},
    {33, 0x50b9a0, "Stream Registration"},
};
#define NSTD (sizeof std_states / sizeof std_states[0])

/* Colours for user states that gave none. */
static const uint32_t palette[] = {
    0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd, 0x8c564b,
    0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf, 0xaec7e8, 0xffbb78,
};

/* ---- A string table: name -> id ---------------------------------------- */

struct mg_strtab {
	const char **keys;
	uint32_t *ids;
	uint32_t cap, n;
};

static uint32_t
str_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

static bool
strtab_grow(mg_strtab *t)
{
	mg_strtab n = {0};

	n.cap = t->cap ? t->cap * 2 : 64;
	n.keys = calloc(n.cap, sizeof *n.keys);
	n.ids = calloc(n.cap, sizeof *n.ids);
	if (!n.keys || !n.ids) {
		free(n.keys);
		free(n.ids);
		return false;
	}
	for (uint32_t i = 0; i < t->cap; i++) {
		uint32_t j;

		if (!t->keys[i])
			continue;
		for (j = str_hash(t->keys[i]) & (n.cap - 1); n.keys[j];
		     j = (j + 1) & (n.cap - 1))
			;
		n.keys[j] = t->keys[i];
		n.ids[j] = t->ids[i];
	}
	n.n = t->n;
	free(t->keys);
	free(t->ids);
	*t = n;
	return true;
}

/* The slot of s: holding it, or the empty one where it goes. */
static uint32_t
strtab_slot(const mg_strtab *t, const char *s)
{
	uint32_t j = str_hash(s) & (t->cap - 1);

	while (t->keys[j] && strcmp(t->keys[j], s))
		j = (j + 1) & (t->cap - 1);
	return j;
}

/* ---- Function and line ids ---------------------------------------------
 *
 * As Extrae's merger numbers them: id 1 of each of the two types is the
 * unknown one ("??", "??:0 [??:0, ??]"), then each new name takes the
 * next id in the order the merge first meets it (time order).  Lines
 * are labelled as Extrae labels them: "file.c:7 [/path/file.c:7, module]".
 */

/* Per process: the function and line ids of each address met. */
struct mg_fmap {
	uint64_t *addrs; /* open addressing, 0 empty (address 0 kept apart) */
	uint32_t *fids, *lids;
	uint32_t cap, n;
	uint32_t zero_fid, zero_lid;
};

/* The id of name in table k (a copy is kept), given a new one if needed;
 * 0 when out of memory. */
static uint32_t
name_id(mg_names *nm, int k, const char *name)
{
	mg_strtab *t = nm->ids[k];
	mg_idnames *v = &nm->tab[k];
	uint32_t j;
	char *d;

	if ((t->n + 1) * 2 > t->cap && !strtab_grow(t))
		return 0;
	j = strtab_slot(t, name);
	if (t->keys[j])
		return t->ids[j];
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 64;
		char **a = realloc(v->names, cap * sizeof *a);

		if (!a)
			return 0;
		v->names = a;
		v->cap = cap;
	}
	if (!(d = strdup(name)))
		return 0;
	v->names[v->n++] = d;
	t->keys[j] = d;
	t->ids[j] = (uint32_t)v->n;
	t->n++;
	return t->ids[j];
}

static dw_err
fmap_build(mg_ctx *c, mg_proc *p)
{
	(void)c;
	p->fmap = calloc(1, sizeof *p->fmap);
	return p->fmap ? DW_OK : DW_ENOMEM;
}

static void
fmap_free(mg_fmap *m)
{
	if (!m)
		return;
	free(m->addrs);
	free(m->fids);
	free(m->lids);
	free(m);
}

/* A name for an address no label names: module and offset, or hex. */
static void
func_anon(const mg_proc *p, uint64_t addr, char *buf, size_t len)
{
	const rd_module *m = p->labels ? rd_proc_module(p->labels, addr) : NULL;
	const char *base;

	if (!m) {
		snprintf(buf, len, "0x%" PRIx64, addr);
		return;
	}
	base = strrchr(m->path, '/');
	snprintf(buf, len, "%s+0x%" PRIx64, base ? base + 1 : m->path,
	         addr - m->start + m->foff);
}

static bool
fmap_grow(mg_fmap *m)
{
	uint32_t cap = m->cap ? m->cap * 2 : 64;
	uint64_t *a = calloc(cap, sizeof *a);
	uint32_t *f = calloc(cap, sizeof *f), *l = calloc(cap, sizeof *l);

	if (!a || !f || !l) {
		free(a);
		free(f);
		free(l);
		return false;
	}
	for (uint32_t i = 0; i < m->cap; i++) {
		uint32_t j =
		    (uint32_t)(m->addrs[i] * 0x9e3779b97f4a7c15ull >> 40) &
		    (cap - 1);

		if (!m->addrs[i])
			continue;
		while (a[j])
			j = (j + 1) & (cap - 1);
		a[j] = m->addrs[i];
		f[j] = m->fids[i];
		l[j] = m->lids[i];
	}
	free(m->addrs);
	free(m->fids);
	free(m->lids);
	m->addrs = a, m->fids = f, m->lids = l, m->cap = cap;
	return true;
}

/* Extrae's line label: the file's base name and line, then the path,
 * line and module; "??" for what is unknown. */
static uint32_t
line_id(mg_ctx *c, const mg_proc *p, uint64_t addr)
{
	const rd_line_label *l =
	    p->labels ? rd_proc_func_line(p->labels, addr) : NULL;
	const rd_module *m = p->labels ? rd_proc_module(p->labels, addr) : NULL;
	const char *file = l ? l->name : "??", *base = strrchr(file, '/');
	char buf[4096 + 1024];

	snprintf(buf, sizeof buf, "%s:%u [%s:%u, %s]", base ? base + 1 : file,
	         l ? l->line : 0, file, l ? l->line : 0, m ? m->path : "??");
	return name_id(&c->names, MG_IDS_LINE, buf);
}

static uint32_t
func_id_of(mg_ctx *c, const mg_proc *p, uint64_t addr)
{
	const char *name =
	    p->labels ? rd_proc_func_name(p->labels, addr) : NULL;
	char buf[320];

	if (!name) {
		func_anon(p, addr, buf, sizeof buf);
		name = buf;
	}
	return name_id(&c->names, MG_IDS_FUNC, name);
}

uint32_t
names_func(mg_ctx *c, mg_proc *p, uint64_t addr, uint32_t *lid)
{
	mg_fmap *m = p->fmap;
	uint32_t j;

	c->names.used_funcs = true;
	if (addr == 0) {
		/* no address: the unknown function, as Extrae's 0x0 entry */
		*lid = 1;
		return 1;
	}
	if ((m->n + 1) * 2 > m->cap && !fmap_grow(m))
		return *lid = 0;
	j = (uint32_t)(addr * 0x9e3779b97f4a7c15ull >> 40) & (m->cap - 1);
	while (m->addrs[j] && m->addrs[j] != addr)
		j = (j + 1) & (m->cap - 1);
	if (!m->addrs[j]) {
		m->fids[j] = func_id_of(c, p, addr);
		m->lids[j] = line_id(c, p, addr);
		m->addrs[j] = addr;
		m->n++;
		if (c->pipe) /* perhaps a new name: for the writer's copy */
			pipe_names_added(c->pipe);
	}
	*lid = m->lids[j];
	return m->fids[j];
}

/* ---- States ------------------------------------------------------------- */

static int
state_cmp(const void *a, const void *b)
{
	const mg_state_label *x = a, *y = b;

	return x->state < y->state ? -1 : x->state > y->state;
}

static mg_state_label *
state_find(mg_labels *lb, uint32_t state)
{
	for (size_t i = 0; i < lb->nstates; i++)
		if (lb->states[i].state == state)
			return &lb->states[i];
	return NULL;
}

/* A state a process defined: names a standard one anew, or adds one. */
static void
state_add(mg_labels *lb, const rd_state_label *s, bool *defined)
{
	mg_state_label *d = state_find(lb, s->state);

	if (d && defined[d - lb->states])
		return; /* an earlier process defined it: it wins */
	if (!d) {
		d = &lb->states[lb->nstates++];
		d->state = s->state;
		d->rgb = palette[s->state % (sizeof palette / sizeof *palette)];
	}
	defined[d - lb->states] = true;
	d->name = s->name;
	if (s->rgb != RD_NO_COLOR)
		d->rgb = s->rgb & 0xffffff;
}

static dw_err
states_build(mg_ctx *c)
{
	mg_labels *lb = &c->names.labels;
	size_t n = NSTD;
	bool *defined;

	for (size_t i = 0; i < c->nprocs; i++)
		if (c->procs[i].labels)
			n += c->procs[i].labels->nstates;
	lb->states = malloc(n * sizeof *lb->states);
	defined = calloc(n, sizeof *defined);
	if (!lb->states || !defined) {
		free(defined);
		return DW_ENOMEM;
	}
	memcpy(lb->states, std_states, sizeof std_states);
	lb->nstates = NSTD;
	for (size_t i = 0; i < c->nprocs; i++) {
		const rd_proc *l = c->procs[i].labels;

		for (size_t j = 0; l && j < l->nstates; j++)
			state_add(lb, &l->states[j], defined);
	}
	free(defined);
	qsort(lb->states, lb->nstates, sizeof *lb->states, state_cmp);
	return DW_OK;
}

/* ---- Event types and values ------------------------------------------------
 */

/* A type or value label of some process, with its place in process
 * order: of equal keys the first one wins. */
struct tv {
	uint32_t type;
	uint64_t value;
	const char *name;
	size_t order;
	bool is_value;
};

static int
tv_cmp(const void *a, const void *b)
{
	const struct tv *x = a, *y = b;

	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	if (x->is_value != y->is_value)
		return x->is_value ? 1 : -1;
	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int
type_cmp(const void *a, const void *b)
{
	const mg_type_label *x = a, *y = b;

	return x->type < y->type ? -1 : x->type > y->type;
}

static mg_type_label *
type_find(mg_labels *lb, uint32_t type)
{
	mg_type_label key = {.type = type};

	return lb->ntypes ? bsearch(&key, lb->types, lb->ntypes,
	                            sizeof *lb->types, type_cmp)
	                  : NULL;
}

static struct tv *
tv_collect(const mg_ctx *c, size_t *n)
{
	size_t k = 0, cap = 0;
	struct tv *v;

	for (size_t i = 0; i < c->nprocs; i++)
		if (c->procs[i].labels)
			cap += c->procs[i].labels->ntypes +
			       c->procs[i].labels->nvalues;
	v = malloc((cap ? cap : 1) * sizeof *v);
	for (size_t i = 0; v && i < c->nprocs; i++) {
		const rd_proc *l = c->procs[i].labels;

		for (size_t j = 0; l && j < l->ntypes; j++, k++)
			v[k] = (struct tv){l->types[j].type, 0,
			                   l->types[j].name, k, false};
		for (size_t j = 0; l && j < l->nvalues; j++, k++)
			v[k] =
			    (struct tv){l->values[j].type, l->values[j].value,
			                l->values[j].name, k, true};
	}
	*n = k;
	if (v)
		qsort(v, k, sizeof *v, tv_cmp);
	return v;
}

/* One type label from the sorted run v[0 .. n-1] of one type. */
static dw_err
type_from_run(mg_ctx *c, const struct tv *v, size_t n, mg_type_label *t)
{
	char buf[64];
	size_t k = 0;

	t->type = v[0].type;
	t->name = v[0].is_value ? NULL : v[0].name;
	t->values = malloc(n * sizeof *t->values);
	if (!t->values)
		return DW_ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (v[i].is_value &&
		    (!k || t->values[k - 1].value != v[i].value))
			t->values[k++] =
			    (mg_value_label){v[i].value, v[i].name};
	t->nvalues = k;
	if (!t->name) {
		snprintf(buf, sizeof buf, "Event type %u", t->type);
		if (!(t->name = model_strdup(c, buf)))
			return DW_ENOMEM;
	}
	return DW_OK;
}

static dw_err
types_build(mg_ctx *c)
{
	mg_labels *lb = &c->names.labels;
	size_t n, i = 0;
	struct tv *v = tv_collect(c, &n);
	dw_err err = DW_OK;

	lb->types = calloc(n + 1, sizeof *lb->types);
	if (!v || !lb->types) {
		free(v);
		return DW_ENOMEM;
	}
	while (err == DW_OK && i < n) {
		size_t j = i + 1;

		while (j < n && v[j].type == v[i].type)
			j++;
		err = type_from_run(c, v + i, j - i, &lb->types[lb->ntypes++]);
		i = j;
	}
	free(v);
	return err;
}

dw_err
names_build(mg_ctx *c)
{
	dw_err err = DW_OK;

	for (int k = 0; k < MG_IDS_N; k++)
		if (!(c->names.ids[k] = calloc(1, sizeof *c->names.ids[k])))
			return DW_ENOMEM;
	/* Extrae's first entries, whatever follows. */
	if (name_id(&c->names, MG_IDS_FUNC, "??") != 1 ||
	    name_id(&c->names, MG_IDS_LINE, "??:0 [??:0, ??]") != 1)
		return DW_ENOMEM;
	err = states_build(c);
	if (err == DW_OK)
		err = types_build(c);
	if (err == DW_OK)
		err = dense_build(c);
	for (size_t i = 0; err == DW_OK && i < c->nprocs; i++)
		err = fmap_build(c, &c->procs[i]);
	return err;
}

/* A type whose values are the names of table k. */
static dw_err
ids_type(mg_ctx *c, int k, uint32_t type, const char *name)
{
	mg_labels *lb = &c->names.labels;
	const mg_idnames *v = &c->names.tab[k];
	mg_type_label *t = type_find(lb, type);

	if (t) {
		free(t->values);
	} else {
		mg_type_label *a =
		    realloc(lb->types, (lb->ntypes + 1) * sizeof *a);

		if (!a)
			return DW_ENOMEM;
		lb->types = a;
		t = &lb->types[lb->ntypes++];
	}
	*t = (mg_type_label){.type = type, .name = name};
	t->values = malloc((v->n + 1) * sizeof *t->values);
	if (!t->values)
		return DW_ENOMEM;
	t->values[0] = (mg_value_label){0, "End"};
	for (size_t i = 0; i < v->n; i++)
		t->values[i + 1] = (mg_value_label){i + 1, v->names[i]};
	t->nvalues = v->n + 1;
	return DW_OK;
}

dw_err
names_finish(mg_ctx *c)
{
	mg_labels *lb = &c->names.labels;

	if (!c->names.used_funcs)
		return DW_OK;
	if (ids_type(c, MG_IDS_FUNC, MG_TYPE_FUNC, "User function") ||
	    ids_type(c, MG_IDS_LINE, MG_TYPE_FUNC_LINE, "User function line"))
		return DW_ENOMEM;
	qsort(lb->types, lb->ntypes, sizeof *lb->types, type_cmp);
	return DW_OK;
}

const char *
names_func_name(const mg_info *info, uint64_t id)
{
	const mg_names *nm = info->func_ctx;
	const mg_idnames *v = &nm->tab[MG_IDS_FUNC];

	if (!id)
		return "End";
	return id <= v->n ? v->names[id - 1] : NULL;
}

void
names_free(mg_ctx *c)
{
	mg_names *nm = &c->names;

	for (size_t i = 0; i < nm->labels.ntypes; i++)
		free(nm->labels.types[i].values);
	free(nm->labels.types);
	free(nm->labels.states);
	for (int k = 0; k < MG_IDS_N; k++) {
		for (size_t i = 0; i < nm->tab[k].n; i++)
			free(nm->tab[k].names[i]);
		free(nm->tab[k].names);
		if (nm->ids[k]) {
			free(nm->ids[k]->keys);
			free(nm->ids[k]->ids);
			free(nm->ids[k]);
		}
	}
	for (size_t i = 0; i < c->nprocs; i++)
		fmap_free(c->procs[i].fmap);
	dense_free(c);
}
