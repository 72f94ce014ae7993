/*
 * A map from u64 ids to pointers: the runtime's one hash table (pending
 * calls by id, kept results by call id, workers by process id).  Open
 * addressing with linear probing; a removed entry leaves a marker so
 * that removing while walking the table is safe, and the markers go
 * when the table is rebuilt on a later insertion.
 *
 * Not locked: the structure that holds the map guards it with its own
 * lock (said where each map is declared).  Values are never NULL.
 */
#ifndef DW_RUNTIME_IDMAP_H
#define DW_RUNTIME_IDMAP_H

#include <stddef.h>
#include <stdint.h>

struct idmap_ent {
	uint64_t id;
	void *val; /* NULL: free; idmap_gone: removed */
};

struct idmap {
	struct idmap_ent *e;
	size_t cap;  /* a power of two, or 0 before the first insertion */
	size_t n;    /* entries */
	size_t used; /* entries and removal markers */
};

#define IDMAP_INIT                                                             \
	{                                                                      \
		NULL, 0, 0, 0                                                  \
	}

/* Sets id to val (replacing what it held).  0, or -1 out of memory (the
 * map is unchanged). */
int idmap_put(struct idmap *m, uint64_t id, void *val);
/* The value of id, or NULL. */
void *idmap_get(const struct idmap *m, uint64_t id);
/* Removes id and returns its value, or NULL. */
void *idmap_take(struct idmap *m, uint64_t id);
/* Walks the entries: *pos starts at 0; each call returns the next value
 * (its id in *id when id is not NULL), NULL at the end.  The entry just
 * returned, or any other, may be removed meanwhile; none may be added. */
void *idmap_next(const struct idmap *m, size_t *pos, uint64_t *id);
/* Frees the table (not the values). */
void idmap_fini(struct idmap *m);

#endif
