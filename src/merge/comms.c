/*
 * Communications: the parts of a message (a send and a receive, each
 * with a logical and a physical time, from one record or two) matched by
 * (sender task, receiver task, id).  A message is written at its send:
 * its first send part places it in the output queue, and it is complete
 * when both sides have both times (or when waiting longer would hold up
 * the output).  A receive that still precedes its send after clock
 * correction is moved to just after the send.
 */
#include <stdlib.h>
#include <string.h>

#include "merge/mg_int.h"

enum { M_SL = 1, M_SP = 2, M_RL = 4, M_RP = 8 };
enum { M_FREE, M_OPEN, M_DROPPED };
#define M_REPORT_MAX 10 /* unmatched messages described one by one */

struct mg_msg {
	uint32_t stask, rtask;
	uint64_t id;
	int64_t sl, sp, rl, rp;
	uint32_t sthread, rthread;
	const mg_proc *sproc, *rproc;
	uint64_t size;
	uint32_t tag;
	uint8_t have;
	uint8_t state;
	bool rjoint;   /* the receive's two times are one recorded point */
	bool slog;     /* sthread came from a logical part */
	bool rlog;     /* rthread came from a logical part */
	bool placed;   /* in the output queue */
	bool in_table; /* findable by its key */
	uint32_t next; /* free list */
};

void
comms_init(mg_comms *cm)
{
	memset(cm, 0, sizeof *cm);
	cm->free = MG_NONE;
}

void
comms_free(mg_comms *cm)
{
	free(cm->pool);
	free(cm->slots);
	memset(cm, 0, sizeof *cm);
}

/* ---- The table ------------------------------------------------------------
 */

static uint32_t
key_hash(uint32_t s, uint32_t r, uint64_t id)
{
	uint64_t h = id * 0x9e3779b97f4a7c15ull;

	h ^= ((uint64_t)s << 32 | r) * 0xc2b2ae3d27d4eb4full;
	return (uint32_t)(h >> 32 ^ h);
}

static uint32_t
msg_hash(const mg_msg *m)
{
	return key_hash(m->stask, m->rtask, m->id);
}

static bool
table_grow(mg_comms *cm)
{
	uint32_t cap = cm->nslots ? cm->nslots * 2 : 1024;
	uint32_t *v = calloc(cap, sizeof *v);

	if (!v)
		return false;
	for (uint32_t i = 0; i < cm->nslots; i++) {
		uint32_t j;

		if (!cm->slots[i])
			continue;
		j = msg_hash(&cm->pool[cm->slots[i] - 1]) & (cap - 1);
		while (v[j])
			j = (j + 1) & (cap - 1);
		v[j] = cm->slots[i];
	}
	free(cm->slots);
	cm->slots = v;
	cm->nslots = cap;
	return true;
}

/* The slot of the key: holding its message, or empty. */
static uint32_t
table_slot(const mg_comms *cm, uint32_t s, uint32_t r, uint64_t id)
{
	uint32_t j = key_hash(s, r, id) & (cm->nslots - 1);

	for (; cm->slots[j]; j = (j + 1) & (cm->nslots - 1)) {
		const mg_msg *m = &cm->pool[cm->slots[j] - 1];

		if (m->stask == s && m->rtask == r && m->id == id)
			break;
	}
	return j;
}

/* Removes slot j, shifting back the entries that probed past it. */
static void
table_remove(mg_comms *cm, uint32_t m)
{
	mg_msg *g = &cm->pool[m];
	uint32_t mask = cm->nslots - 1;
	uint32_t j = table_slot(cm, g->stask, g->rtask, g->id);
	uint32_t k = j;

	g->in_table = false;
	cm->slots[j] = 0;
	cm->used--;
	for (;;) {
		uint32_t home;

		k = (k + 1) & mask;
		if (!cm->slots[k])
			return;
		home = msg_hash(&cm->pool[cm->slots[k] - 1]) & mask;
		if (((k - home) & mask) >= ((k - j) & mask)) {
			cm->slots[j] = cm->slots[k];
			cm->slots[k] = 0;
			j = k;
		}
	}
}

static uint32_t
pool_get(mg_comms *cm)
{
	uint32_t m;

	if (cm->free != MG_NONE) {
		m = cm->free;
		cm->free = cm->pool[m].next;
	} else {
		if (cm->npool == cm->cappool) {
			uint32_t cap = cm->cappool ? cm->cappool * 2 : 256;
			mg_msg *v = realloc(cm->pool, cap * sizeof *v);

			if (!v)
				return MG_NONE;
			cm->pool = v;
			cm->cappool = cap;
		}
		m = cm->npool++;
	}
	return m; /* the caller sets every field */
}

void
comms_release(mg_ctx *c, uint32_t m)
{
	mg_comms *cm = &c->cm;

	if (cm->pool[m].in_table)
		table_remove(cm, m);
	cm->pool[m].state = M_FREE;
	cm->pool[m].next = cm->free;
	cm->free = m;
}

/* The open message of the key, or a new one; MG_NONE without memory. */
static uint32_t
msg_find(mg_comms *cm, uint32_t s, uint32_t r, uint64_t id)
{
	uint32_t j, m;

	if ((cm->used + 1) * 4 > cm->nslots * 3 && !table_grow(cm))
		return MG_NONE;
	j = table_slot(cm, s, r, id);
	if (cm->slots[j])
		return cm->slots[j] - 1;
	m = pool_get(cm);
	if (m == MG_NONE)
		return m;
	cm->pool[m] = (mg_msg){.stask = s,
	                       .rtask = r,
	                       .id = id,
	                       .state = M_OPEN,
	                       .in_table = true};
	cm->slots[j] = m + 1;
	cm->used++;
	return m;
}

/* ---- Parts ------------------------------------------------------------------
 */

static bool
matched(const mg_msg *g)
{
	return (g->have & (M_SL | M_SP)) && (g->have & (M_RL | M_RP));
}

static bool
complete(const mg_msg *g)
{
	return (g->have & (M_SL | M_SP)) == (M_SL | M_SP) &&
	       (g->have & (M_RL | M_RP)) == (M_RL | M_RP);
}

static void
msg_side(mg_msg *g, const mg_stream *s, const rd_rec *r, int64_t t,
         unsigned bits)
{
	bool recv = bits & (M_RL | M_RP);
	bool logical = bits & (M_SL | M_RL);
	uint32_t *thread = recv ? &g->rthread : &g->sthread;
	bool *fromlog = recv ? &g->rlog : &g->slog;
	const mg_proc **proc = recv ? &g->rproc : &g->sproc;

	if (bits & M_SL)
		g->sl = t;
	if (bits & M_SP)
		g->sp = t;
	if (bits & M_RL)
		g->rl = t;
	if (bits & M_RP)
		g->rp = t;
	if (!*proc || (logical && !*fromlog)) {
		*thread = s->gthread;
		*proc = s->proc;
		*fromlog = logical;
	}
	if (!recv || !(g->have & (M_SL | M_SP))) {
		g->size = r->u.comm.size;
		g->tag = r->u.comm.tag;
	}
	if (recv && (bits & (M_RL | M_RP)) == (M_RL | M_RP))
		g->rjoint = true;
	g->have |= bits;
}

static unsigned
part_bits(const rd_rec *r)
{
	unsigned f = r->u.comm.flags;
	bool log = f & RD_COMM_LOGICAL, phy = f & RD_COMM_PHYSICAL;

	if (!log && !phy) /* neither given: both */
		log = phy = true;
	if (f & RD_COMM_RECV)
		return (log ? M_RL : 0) | (phy ? M_RP : 0);
	return (log ? M_SL : 0) | (phy ? M_SP : 0);
}

static void
report_late(mg_ctx *c, const mg_msg *g)
{
	c->rep.unmatched_recvs++;
	if (c->cm.reported++ < M_REPORT_MAX)
		rd_problem(c->errs,
		           "message %llu from task %u to task %u: receive "
		           "read after its send was given up (window full); "
		           "unmatched",
		           (unsigned long long)g->id, g->stask, g->rtask);
}

dw_err
comms_part(mg_ctx *c, mg_stream *s, const rd_rec *r, int64_t t)
{
	bool recv = r->u.comm.flags & RD_COMM_RECV;
	uint32_t me = s->proc->task, other = r->u.comm.partner_task;
	unsigned bits = part_bits(r);
	uint32_t m = msg_find(&c->cm, recv ? other : me, recv ? me : other,
	                      r->u.comm.id);
	mg_msg *g;

	if (m == MG_NONE)
		return DW_ENOMEM;
	g = &c->cm.pool[m];
	if (g->state == M_DROPPED && recv) {
		report_late(c, g);
		comms_release(c, m);
		return DW_OK;
	}
	if (g->state == M_DROPPED) { /* its id reused: a new message */
		comms_release(c, m);
		return comms_part(c, s, r, t);
	}
	if (g->have & bits) {
		c->rep.duplicate_parts++;
		return DW_OK;
	}
	msg_side(g, s, r, t, bits);
	/* only the head's message lets records go: another one completed
	 * waits behind it (the queue's pressure flushes anyway) */
	if (g->placed && m == c->q.wait && complete(g))
		c->q.kick = true;
	if (recv || g->placed)
		return DW_OK;
	g->placed = true;
	if (!c->q.n && complete(g)) /* it is the head */
		c->q.kick = true;
	return oq_place(c, m);
}

/* ---- Completion
 * --------------------------------------------------------------- */

/* Counts a receive moved after its send, against the clocks' error. */
static void
repair_count(mg_ctx *c, const mg_msg *g, int64_t shift)
{
	int64_t es = mg_clock_err(&g->sproc->clk, g->sp);
	int64_t er = mg_clock_err(&g->rproc->clk, g->rp);

	c->rep.recv_moved++;
	c->rep.recv_total_shift += (uint64_t)shift;
	if ((uint64_t)shift > c->rep.recv_max_shift)
		c->rep.recv_max_shift = (uint64_t)shift;
	if (es >= 0 && er >= 0 && es + er > 0 && shift > es + er)
		c->rep.recv_beyond++;
}

/* Fills the missing times and moves a receive that precedes its send. */
static void
finalize(mg_ctx *c, mg_msg *g)
{
	int64_t end = c->t0 + (int64_t)c->duration;
	bool one_point =
	    g->rjoint || (g->have & (M_RL | M_RP)) != (M_RL | M_RP);

	if (!(g->have & M_SL))
		g->sl = g->sp;
	if (!(g->have & M_SP))
		g->sp = g->sl;
	if (g->sl > g->sp) { /* the send was placed at its first part */
		g->sl = g->sp;
		c->rep.lsend_fixed++;
	}
	if (!(g->have & M_RL))
		g->rl = g->rp;
	if (!(g->have & M_RP))
		g->rp = g->rl;
	/* Extrae's convention: the physical receive is when the receiving
	 * thread has the message, never before its logical receive. */
	if (g->rl > g->rp)
		g->rp = g->rl;
	if (g->rp < g->sp) {
		int64_t to = g->sp < end ? g->sp + 1 : end;

		repair_count(c, g, to - g->rp);
		if (one_point || g->rl == g->rp || g->rl < to)
			g->rl = to;
		g->rp = to;
	}
	if (g->in_table)
		table_remove(&c->cm, (uint32_t)(g - c->cm.pool));
}

static void
report_unmatched(mg_ctx *c, const mg_msg *g, bool send)
{
	if (send)
		c->rep.unmatched_sends++;
	else
		c->rep.unmatched_recvs++;
	if (c->cm.reported++ >= M_REPORT_MAX)
		return;
	rd_problem(c->errs,
	           "message %llu from task %u to task %u: %s at %lld ns has "
	           "no %s; not written",
	           (unsigned long long)g->id, g->stask, g->rtask,
	           send ? "send" : "receive",
	           (long long)((send ? (g->have & M_SL ? g->sl : g->sp)
	                             : (g->have & M_RL ? g->rl : g->rp)) -
	                       c->t0),
	           send ? "receive" : "send");
}

/*
 * Whether the message at the head of the output queue can go: 1 write
 * it (finalized), 2 skip it (an unmatched send, given up), 0 wait.
 * pressed: the queue is past its soft (1) or hard (2) limit; final: no
 * more records will come.
 */
int
comms_head(mg_ctx *c, uint32_t m, int pressed, bool final)
{
	mg_msg *g = &c->cm.pool[m];

	if (complete(g) || (matched(g) && (pressed || final))) {
		finalize(c, g);
		return 1;
	}
	if (!matched(g) && (pressed > 1 || final)) {
		report_unmatched(c, g, true);
		g->state = M_DROPPED;
		g->placed = false;
		if (final || !g->in_table)
			comms_release(c, m);
		return 2;
	}
	return 0;
}

static uint64_t
rel(const mg_ctx *c, int64_t t)
{
	uint64_t r = t > c->t0 ? (uint64_t)(t - c->t0) : 0;

	return r < c->duration ? r : c->duration;
}

void
comms_rec(mg_ctx *c, uint32_t m, mg_rec *r)
{
	const mg_msg *g = &c->cm.pool[m];

	memset(r, 0, sizeof *r);
	r->kind = MG_COMM;
	r->thread = g->sthread;
	r->time = rel(c, g->sl);
	r->u.comm.recv_thread = g->rthread;
	r->u.comm.tag = g->tag;
	r->u.comm.phy_send = rel(c, g->sp);
	r->u.comm.log_recv = rel(c, g->rl);
	r->u.comm.phy_recv = rel(c, g->rp);
	r->u.comm.size = g->size;
}

/* After the last record: receives whose send never came. */
void
comms_finish(mg_ctx *c)
{
	mg_comms *cm = &c->cm;
	for (uint32_t m = 0; m < cm->npool; m++) {
		mg_msg *g = &cm->pool[m];

		if (g->state == M_FREE)
			continue;
		if (g->state == M_OPEN && !g->placed)
			report_unmatched(c, g, false);
		comms_release(c, m);
	}
	if (cm->reported > M_REPORT_MAX)
		rd_problem(c->errs,
		           "%llu more unmatched messages not described",
		           (unsigned long long)(cm->reported - M_REPORT_MAX));
}
