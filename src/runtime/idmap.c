/* The u64 -> pointer map (idmap.h). */
#include <stdlib.h>

#include "runtime/idmap.h"

/* The marker a removal leaves: probing goes on past it. */
static char gone;
#define GONE ((void *)&gone)

static size_t
idmap_home(uint64_t id, size_t cap)
{
	/* Fibonacci hashing: consecutive ids spread over the table */
	return (size_t)((id * 0x9e3779b97f4a7c15u) >> 17) & (cap - 1);
}

/* The slot holding id, or SIZE_MAX. */
static size_t
idmap_find(const struct idmap *m, uint64_t id)
{
	if (!m->cap)
		return SIZE_MAX;
	size_t i = idmap_home(id, m->cap);
	for (size_t k = 0; k < m->cap; k++, i = (i + 1) & (m->cap - 1)) {
		const struct idmap_ent *e = &m->e[i];
		if (!e->val)
			return SIZE_MAX;
		if (e->val != GONE && e->id == id)
			return i;
	}
	return SIZE_MAX;
}

/* Rebuilds the table at cap slots, without removal markers. */
static int
idmap_rebuild(struct idmap *m, size_t cap)
{
	struct idmap_ent *e = calloc(cap, sizeof *e);
	if (!e)
		return -1;
	for (size_t i = 0; i < m->cap; i++) {
		struct idmap_ent *o = &m->e[i];
		if (!o->val || o->val == GONE)
			continue;
		size_t j = idmap_home(o->id, cap);
		while (e[j].val)
			j = (j + 1) & (cap - 1);
		e[j] = *o;
	}
	free(m->e);
	m->e = e;
	m->cap = cap;
	m->used = m->n;
	return 0;
}

int
idmap_put(struct idmap *m, uint64_t id, void *val)
{
	size_t i = idmap_find(m, id);
	if (i != SIZE_MAX) {
		m->e[i].val = val;
		return 0;
	}
	/* at most 3/4 full, markers included (a rebuild clears them, so
	 * its cost is spread over the insertions that made them); the
	 * table doubles when entries pass half of it, never shrinks */
	if (4 * (m->used + 1) > 3 * m->cap) {
		size_t cap = m->cap ? m->cap : 64;
		while (2 * (m->n + 1) > cap)
			cap *= 2;
		if (idmap_rebuild(m, cap) < 0)
			return -1;
	}
	i = idmap_home(id, m->cap);
	while (m->e[i].val && m->e[i].val != GONE)
		i = (i + 1) & (m->cap - 1);
	if (!m->e[i].val)
		m->used++;
	m->e[i].id = id;
	m->e[i].val = val;
	m->n++;
	return 0;
}

void *
idmap_get(const struct idmap *m, uint64_t id)
{
	size_t i = idmap_find(m, id);
	return i == SIZE_MAX ? NULL : m->e[i].val;
}

void *
idmap_take(struct idmap *m, uint64_t id)
{
	size_t i = idmap_find(m, id);
	if (i == SIZE_MAX)
		return NULL;
	void *v = m->e[i].val;
	m->e[i].val = GONE;
	m->n--;
	return v;
}

void *
idmap_next(const struct idmap *m, size_t *pos, uint64_t *id)
{
	for (; *pos < m->cap; (*pos)++) {
		const struct idmap_ent *e = &m->e[*pos];
		if (e->val && e->val != GONE) {
			(*pos)++;
			if (id)
				*id = e->id;
			return e->val;
		}
	}
	return NULL;
}

void
idmap_fini(struct idmap *m)
{
	free(m->e);
	*m = (struct idmap)IDMAP_INIT;
}
