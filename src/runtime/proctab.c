/*
 * The process table: the workers by id, pinning one, the link to a
 * process, and the queries (dw_myid, dw_procs, dw_workers, ...).  A
 * service every module calls, so it sits below them: it calls nothing
 * above the links (conn.c), and reaches a worker's peers through the
 * hook peer.c sets (cl_on_peer_conn).  The workers' lifecycle (joining,
 * losing, removing) is cluster.c's.
 */
#include <stdlib.h>

#include "runtime/idmap.h"
#include "runtime/rt.h"

/* Workers by id, so that a lookup per frame costs the same for 4 or
 * 4096.  Guarded by rt.lock. */
static struct idmap wtab = IDMAP_INIT;

/* A worker's link to another worker (peer_conn, set by peer_attach). */
static struct conn *(*peer_route)(int pid, int *err);

int
cl_tab_add(struct worker *w)
{
	return idmap_put(&wtab, (uint64_t)w->id, w) < 0 ? DW_ENOMEM : DW_OK;
}

void
cl_tab_del(struct worker *w)
{
	if (idmap_get(&wtab, (uint64_t)w->id) == w)
		idmap_take(&wtab, (uint64_t)w->id);
}

void
cl_tab_fini(void)
{
	idmap_fini(&wtab);
}

struct worker *
cl_find(int id)
{
	return idmap_get(&wtab, (uint64_t)id);
}

struct worker *
cl_pin(int id)
{
	pthread_mutex_lock(&rt.lock);
	struct worker *w = cl_find(id);
	if (w)
		w->pins++;
	pthread_mutex_unlock(&rt.lock);
	return w;
}

/* rt.lock held.  The link goes with it: a future or job that still
 * names it holds its own reference (conn_ref). */
void
cl_free_worker(struct worker *w)
{
	conn_unref(w->conn); /* closed when it was lost */
	free(w);
}

void
cl_unpin(struct worker *w)
{
	pthread_mutex_lock(&rt.lock);
	if (--w->pins == 0 && w->unlinked)
		cl_free_worker(w);
	pthread_mutex_unlock(&rt.lock);
}

void
cl_on_peer_conn(struct conn *(*fn)(int pid, int *err))
{
	peer_route = fn;
}

struct conn *
cl_conn_of(int pid, int *err)
{
	pthread_mutex_lock(&rt.lock);
	struct conn *c = NULL;
	struct worker *w = rt.role == RT_MASTER ? cl_find(pid) : NULL;
	if (rt.role == RT_WORKER && pid > 1 && pid != rt.myid && peer_route) {
		pthread_mutex_unlock(&rt.lock);
		return peer_route(pid, err); /* worker to worker (peer.c) */
	}
	if (rt.role == RT_WORKER && pid == 1)
		c = rt.master;
	else if (w && w->state == W_ACTIVE)
		c = w->conn;
	if (c)
		conn_ref(c);
	pthread_mutex_unlock(&rt.lock);
	if (c)
		return c;
	if (w || (rt.role == RT_MASTER && pid > 1 && pid < rt.next_id)) {
		*err = DW_EEXITED;
		rt_set_err(pid, "worker %d has exited", pid);
	} else {
		*err = DW_ENOTFOUND;
		rt_set_err(pid, "there is no process %d", pid);
	}
	return NULL;
}

/* ---- queries ---- */

int
cl_list(int *ids, int max, int with_master)
{
	pthread_mutex_lock(&rt.lock);
	int n = 0;
	if (with_master) {
		if (ids && n < max)
			ids[n] = rt.myid ? rt.myid : 1;
		n++;
	}
	int count = 0;
	for (struct worker *w = rt.workers; w; w = w->next)
		count += w->state == W_ACTIVE;
	/* the list runs newest first: write ids in increasing order */
	int k = n + count;
	for (struct worker *w = rt.workers; w; w = w->next)
		if (w->state == W_ACTIVE) {
			k--;
			if (ids && k < max)
				ids[k] = w->id;
		}
	n += count;
	pthread_mutex_unlock(&rt.lock);
	return n;
}

DW_API int
dw_myid(void)
{
	return rt.myid ? rt.myid : 1;
}

DW_API int
dw_nprocs(void)
{
	return rt.role == RT_WORKER ? 0 : cl_list(NULL, 0, 1);
}

DW_API int
dw_nworkers(void)
{
	int n = cl_list(NULL, 0, 0);
	return n ? n : 1;
}

DW_API int
dw_procs(int *ids, int max)
{
	return cl_list(ids, max, 1);
}

DW_API int
dw_workers(int *ids, int max)
{
	int n = cl_list(ids, max, 0);
	if (n)
		return n;
	if (ids && max > 0)
		ids[0] = 1;
	return 1;
}
