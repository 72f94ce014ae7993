/*
 * Dense ids for dwork's own event types whose values name something
 * (functions, for now): the runtime writes a 32-bit hash of the name
 * with a label for it; the merge gives every name of a class an id
 * 1..N in name order, the same on every process of the trace, and
 * labels those ids instead.  Paraver labels histogram columns only
 * when the values are few and small, and the same program gets the
 * same ids in every run.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "merge/mg_int.h"
#include "tracefile/events.h"

/* The types whose values name something, and the class (id space) of
 * each: a function called and the same function running share ids. */
static const struct {
	uint32_t type;
	int cls;
} dense_types[] = {
    {TF_EV_FUNCTION, 0},
    {TF_EV_CALL, 0},
};
#define NDENSE (sizeof dense_types / sizeof dense_types[0])

int
dense_class_slow(uint32_t type)
{
	for (size_t i = 0; i < NDENSE; i++)
		if (dense_types[i].type == type)
			return dense_types[i].cls;
	return -1;
}

/* ---- A process's values: hash -> name -> id ------------------------ */

struct dm_ent {
	uint64_t value; /* 0: empty slot */
	const char *name;
	uint32_t id;
};

struct mg_dmap {
	struct dm_ent *v;
	uint32_t cap, n;
	uint64_t last_value; /* one-entry cache of the merge's lookups */
	uint32_t last_id;
};

static uint32_t
dm_hash(uint64_t v, uint32_t cap)
{
	return (uint32_t)(v * 0x9e3779b97f4a7c15ull >> 32) & (cap - 1);
}

static struct dm_ent *
dm_find(const mg_dmap *m, uint64_t value)
{
	uint32_t j;

	if (!m || !m->cap)
		return NULL;
	for (j = dm_hash(value, m->cap); m->v[j].value;
	     j = (j + 1) & (m->cap - 1))
		if (m->v[j].value == value)
			return &m->v[j];
	return NULL;
}

static bool
dm_grow(mg_dmap *m)
{
	uint32_t cap = m->cap ? m->cap * 2 : 64;
	struct dm_ent *v = calloc(cap, sizeof *v);

	if (!v)
		return false;
	for (uint32_t i = 0; i < m->cap; i++) {
		uint32_t j;

		if (!m->v[i].value)
			continue;
		for (j = dm_hash(m->v[i].value, cap); v[j].value;
		     j = (j + 1) & (cap - 1))
			;
		v[j] = m->v[i];
	}
	free(m->v);
	m->v = v;
	m->cap = cap;
	return true;
}

/* Adds value (non-zero) to *mp, made on first use; a name already
 * there stays (the first label wins). */
static dw_err
dm_put(mg_dmap **mp, uint64_t value, const char *name)
{
	mg_dmap *m = *mp;
	struct dm_ent *e;
	uint32_t j;

	if (!m && !(m = *mp = calloc(1, sizeof *m)))
		return DW_ENOMEM;
	if ((e = dm_find(m, value))) {
		if (!e->name)
			e->name = name;
		return DW_OK;
	}
	if ((m->n + 1) * 2 > m->cap && !dm_grow(m))
		return DW_ENOMEM;
	for (j = dm_hash(value, m->cap); m->v[j].value;
	     j = (j + 1) & (m->cap - 1))
		;
	m->v[j] = (struct dm_ent){value, name, 0};
	m->n++;
	return DW_OK;
}

static void
dm_free(mg_dmap *m)
{
	if (m)
		free(m->v);
	free(m);
}

dw_err
dense_seen(mg_proc *p, int cls, uint64_t value)
{
	mg_dmap *m = p->dmap[cls];

	if (m && m->last_value == value)
		return DW_OK;
	if (dm_put(&p->dmap[cls], value, NULL) != DW_OK)
		return DW_ENOMEM;
	p->dmap[cls]->last_value = value;
	return DW_OK;
}

static uint64_t
dense_id_slow(mg_proc *p, int cls, uint64_t value)
{
	mg_dmap *m = p->dmap[cls];
	const struct dm_ent *e = dm_find(m, value);

	if (!e) /* the scan read the same records: cannot happen */
		return value;
	m->last_value = value;
	m->last_id = e->id;
	return e->id;
}

uint64_t
dense_id(mg_proc *p, int cls, uint64_t value)
{
	mg_dmap *m = p->dmap[cls];

	if (!value)
		return 0;
	if (m && m->last_id && m->last_value == value)
		return m->last_id;
	return dense_id_slow(p, cls, value);
}

/* ---- Building the ids ---------------------------------------------- */

/* Puts every label a process gave a value of a class's types into
 * *m. */
static dw_err
labels_put(const rd_proc *l, int cls, mg_dmap **m)
{
	for (size_t j = 0; l && j < l->nvalues; j++) {
		const rd_value_label *v = &l->values[j];

		if (v->value && dense_class(v->type) == cls &&
		    dm_put(m, v->value, v->name) != DW_OK)
			return DW_ENOMEM;
	}
	return DW_OK;
}

/* A name for a value no process labels: its hash in hex. */
static const char *
anon_name(mg_ctx *c, uint64_t value)
{
	char buf[32];

	snprintf(buf, sizeof buf, "0x%08" PRIx64, value);
	return model_strdup(c, buf);
}

/* Names every value each process met or labels (its own label, else
 * another process's, else its hash); all of them in *all. */
static dw_err
name_values(mg_ctx *c, int cls, mg_dmap **all)
{
	for (size_t i = 0; i < c->nprocs; i++)
		if (labels_put(c->procs[i].labels, cls, all) != DW_OK)
			return DW_ENOMEM;
	for (size_t i = 0; i < c->nprocs; i++) {
		mg_proc *p = &c->procs[i];

		if (labels_put(p->labels, cls, &p->dmap[cls]) != DW_OK)
			return DW_ENOMEM;
		for (uint32_t k = 0; p->dmap[cls] && k < p->dmap[cls]->cap;
		     k++) {
			struct dm_ent *e = &p->dmap[cls]->v[k];
			const struct dm_ent *a;

			if (!e->value || e->name)
				continue;
			a = dm_find(*all, e->value);
			e->name =
			    a && a->name ? a->name : anon_name(c, e->value);
			if (!e->name)
				return DW_ENOMEM;
		}
	}
	return DW_OK;
}

static int
str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The class's names, sorted and unique: id k names names[k - 1]. */
static dw_err
sort_names(mg_ctx *c, int cls)
{
	mg_dclass *d = &c->names.dense[cls];
	size_t n = 0, k = 0;

	for (size_t i = 0; i < c->nprocs; i++)
		n += c->procs[i].dmap[cls] ? c->procs[i].dmap[cls]->n : 0;
	if (!(d->names = malloc((n ? n : 1) * sizeof *d->names)))
		return DW_ENOMEM;
	for (size_t i = 0; i < c->nprocs; i++) {
		const mg_dmap *m = c->procs[i].dmap[cls];

		for (uint32_t j = 0; m && j < m->cap; j++)
			if (m->v[j].value)
				d->names[k++] = m->v[j].name;
	}
	if (k)
		qsort(d->names, k, sizeof *d->names, str_cmp);
	d->n = 0;
	for (size_t i = 0; i < k; i++)
		if (!d->n || strcmp(d->names[d->n - 1], d->names[i]))
			d->names[d->n++] = d->names[i];
	return DW_OK;
}

static void
assign_ids(mg_ctx *c, int cls)
{
	const mg_dclass *d = &c->names.dense[cls];

	for (size_t i = 0; i < c->nprocs; i++) {
		mg_dmap *m = c->procs[i].dmap[cls];

		for (uint32_t j = 0; m && j < m->cap; j++) {
			const char **f;

			if (!m->v[j].value)
				continue;
			f = bsearch(&m->v[j].name, d->names, d->n,
			            sizeof *d->names, str_cmp);
			m->v[j].id = (uint32_t)(f - d->names) + 1;
		}
		if (m)
			m->last_value = 0, m->last_id = 0;
	}
}

/* ---- Their labels --------------------------------------------------- */

static int
type_cmp(const void *a, const void *b)
{
	const mg_type_label *x = a, *y = b;

	return x->type < y->type ? -1 : x->type > y->type;
}

/* The label of type, added (named "Event type N") when missing. */
static mg_type_label *
type_get(mg_ctx *c, uint32_t type)
{
	mg_labels *lb = &c->names.labels;
	mg_type_label key = {.type = type}, *t, *v;
	char buf[64];

	t = lb->ntypes ? bsearch(&key, lb->types, lb->ntypes, sizeof *lb->types,
	                         type_cmp)
	               : NULL;
	if (t)
		return t;
	snprintf(buf, sizeof buf, "Event type %u", type);
	v = realloc(lb->types, (lb->ntypes + 1) * sizeof *v);
	if (!v)
		return NULL;
	lb->types = v;
	v[lb->ntypes] = (mg_type_label){.type = type};
	if (!(v[lb->ntypes].name = model_strdup(c, buf)))
		return NULL;
	lb->ntypes++;
	qsort(lb->types, lb->ntypes, sizeof *lb->types, type_cmp);
	return bsearch(&key, lb->types, lb->ntypes, sizeof *lb->types,
	               type_cmp);
}

/* The values of a dense type: its label of 0 ("End"), then the ids. */
static dw_err
type_values(mg_ctx *c, uint32_t type, const mg_dclass *d)
{
	mg_type_label *t = type_get(c, type);
	mg_value_label *v;
	size_t k = 0;

	if (!t)
		return DW_ENOMEM;
	if (!(v = malloc((d->n + 1) * sizeof *v)))
		return DW_ENOMEM;
	if (t->nvalues && t->values[0].value == 0)
		v[k++] = t->values[0];
	for (uint32_t i = 0; i < d->n; i++)
		v[k++] = (mg_value_label){i + 1, d->names[i]};
	free(t->values);
	t->values = v;
	t->nvalues = k;
	return DW_OK;
}

dw_err
dense_build(mg_ctx *c)
{
	for (int cls = 0; cls < MG_DENSE_NCLS; cls++) {
		mg_dmap *all = NULL;
		dw_err err = name_values(c, cls, &all);

		dm_free(all);
		if (err == DW_OK)
			err = sort_names(c, cls);
		if (err != DW_OK)
			return err;
		assign_ids(c, cls);
		for (size_t i = 0; i < NDENSE; i++)
			if (dense_types[i].cls == cls &&
			    c->names.dense[cls].n &&
			    type_values(c, dense_types[i].type,
			                &c->names.dense[cls]) != DW_OK)
				return DW_ENOMEM;
	}
	return DW_OK;
}

void
dense_free(mg_ctx *c)
{
	for (int cls = 0; cls < MG_DENSE_NCLS; cls++) {
		free(c->names.dense[cls].names);
		c->names.dense[cls].names = NULL;
		for (size_t i = 0; i < c->nprocs; i++) {
			dm_free(c->procs[i].dmap[cls]);
			c->procs[i].dmap[cls] = NULL;
		}
	}
}
