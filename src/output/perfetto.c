/*
 * The Perfetto writer: PREFIX.pftrace, Perfetto's native protobuf trace
 * (a `Trace` of `TracePacket`s with track events), which ui.perfetto.dev
 * and trace_processor open without the size limits of the JSON format.
 * docs/merge.md describes the mapping; the field numbers used are listed
 * in pf_field (perfetto_enc.c), from Perfetto's published protos.
 *
 * The encoder is our own (about 60 lines, in perfetto_enc.c): the
 * subset is small and fixed, every message is written once, and a protobuf
 * library would need generated code for Perfetto's whole schema to write five
 * messages.
 *
 * Each thread is one packet sequence (trusted_packet_sequence_id =
 * thread + 1) with its own incremental clock (id 64): a packet's
 * timestamp is the nanoseconds since the previous packet of its thread,
 * one to three bytes.  Names are interned per sequence (an iid is
 * global, its string is sent on a sequence the first time that sequence
 * uses it).  The default track of a sequence is its thread's, so events
 * carry no track.  States and functions are slices (SLICE_BEGIN and
 * SLICE_END, nested as merge/nest.h nests them), events instants,
 * communications an instant on the sender carrying a flow id and one on
 * the receiver, at its receive time, terminating it.  A receive waits in
 * its thread's queue until that thread's time reaches it, so every
 * sequence's timestamps only grow.
 *
 * The packets go to the file in chunks compressed with deflate, each one
 * TracePacket.compressed_packets, when the build has libdeflate and
 * DWORK_PERFETTO_PLAIN is not set (perfetto_z.c); else as they are.
 * Either way a thread of their own compresses and writes them
 * (output/outpipe.h) while this one encodes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/labels.h"
#include "output/outfile.h"
#include "output/perfetto_int.h"

static dw_err
fail(pf_writer *w, dw_err err, const char *what, const char *path)
{
	return of_fail(&w->base, err, what, path, w->out.errnum);
}

/* ---- Receives: each thread's queue, by time --------------------------------
 */

static bool
recv_less(const pf_recv *a, const pf_recv *b)
{
	return a->time < b->time || (a->time == b->time && a->flow < b->flow);
}

static dw_err
recv_push(pf_thread *th, const pf_recv *r)
{
	uint32_t i;

	if (th->nrecv == th->caprecv) {
		uint32_t cap = th->caprecv ? 2 * th->caprecv : 8;
		pf_recv *v = realloc(th->recv, cap * sizeof *v);

		if (!v)
			return DW_ENOMEM;
		th->recv = v;
		th->caprecv = cap;
	}
	for (i = th->nrecv++; i && recv_less(r, &th->recv[(i - 1) / 2]);
	     i = (i - 1) / 2)
		th->recv[i] = th->recv[(i - 1) / 2];
	th->recv[i] = *r;
	return DW_OK;
}

static pf_recv
recv_pop(pf_thread *th)
{
	pf_recv top = th->recv[0], last = th->recv[--th->nrecv];
	uint32_t i = 0;

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= th->nrecv)
			break;
		if (c + 1 < th->nrecv &&
		    recv_less(&th->recv[c + 1], &th->recv[c]))
			c++;
		if (!recv_less(&th->recv[c], &last))
			break;
		th->recv[i] = th->recv[c];
		i = c;
	}
	if (th->nrecv)
		th->recv[i] = last;
	return top;
}

/* Writes the receives of thread due before t (or at t, when at). */
static dw_err
recv_flush(pf_writer *w, uint32_t thread, uint64_t t, bool at)
{
	pf_thread *th = &w->th[thread];
	dw_err err = DW_OK;

	while (err == DW_OK && th->nrecv &&
	       (th->recv[0].time < t || (at && th->recv[0].time == t))) {
		pf_recv r = recv_pop(th);
		pf_ev e = {
		    .type = TE_INSTANT, .name = r.name, .flow_end = r.flow};

		err = pf_packet(w, thread, r.time, &e);
	}
	return err;
}

/* A packet of thread at t, after what is due there. */
static inline dw_err
pf_at(pf_writer *w, uint32_t thread, uint64_t t, bool at, const pf_ev *e)
{
	const pf_thread *th = &w->th[thread];
	dw_err err = DW_OK;

	if (th->nrecv &&
	    (th->recv[0].time < t || (at && th->recv[0].time == t)))
		err = recv_flush(w, thread, t, at);
	return err == DW_OK ? pf_packet(w, thread, t, e) : err;
}

/* ---- Regions (nest callbacks) ----------------------------------------------
 */

static dw_err
pf_open(void *ctx, uint32_t thread, int kind, uint64_t id, uint64_t t)
{
	pf_writer *w = ctx;
	pf_ev e = {.type = TE_BEGIN, .name = pf_slice_iid(w, kind, id)};

	return e.name ? pf_at(w, thread, t, false, &e) : DW_ENOMEM;
}

static dw_err
pf_close(void *ctx, uint32_t thread, int kind, uint64_t id, uint64_t begin,
         uint64_t end, unsigned flags)
{
	pf_ev e = {.type = TE_END};

	(void)kind, (void)id, (void)begin, (void)flags;
	return pf_at(ctx, thread, end, true, &e);
}

static const nest_ops pf_nest_ops = {pf_open, pf_close};

/* ---- Records ----------------------------------------------------------------
 */

static dw_err
events(pf_writer *w, const mg_rec *r)
{
	dw_err err = DW_OK;

	for (uint32_t i = 0; err == DW_OK && i < r->u.event.n; i++) {
		const mg_pair *pr = &r->u.event.pairs[i];
		bool labelled;
		pf_ev e = {.type = TE_INSTANT};

		if (pr->type == LB_TYPE_FUNC) {
			err =
			    nest_func(&w->nest, r->thread, r->time, pr->value);
		} else if (pr->type == LB_TYPE_RUN ||
		           pr->type == LB_TYPE_BATCH) {
			err = nest_run(&w->nest, r->thread, r->time,
			               pr->type == LB_TYPE_RUN ? NEST_RUN
			                                       : NEST_BATCH,
			               pr->value);
		} else if (pr->type != LB_TYPE_FUNC_LINE) {
			err = nest_touch(&w->nest, r->thread, r->time);
			e.name = pf_event_iid(w, pr, &labelled);
			e.has_value = !labelled;
			e.value = pr->value;
			if (err == DW_OK)
				err = e.name ? pf_at(w, r->thread, r->time,
				                     true, &e)
				             : DW_ENOMEM;
		}
	}
	return err;
}

/* The receive's time: when the receiver has the message (the later of
 * its two times; never before the send). */
static uint64_t
recv_time(const mg_rec *r)
{
	uint64_t t = r->u.comm.log_recv > r->u.comm.phy_recv
	                 ? r->u.comm.log_recv
	                 : r->u.comm.phy_recv;

	return t > r->time ? t : r->time;
}

static dw_err
message(pf_writer *w, const mg_rec *r)
{
	pf_ev e = {.type = TE_INSTANT, .name = pf_kind_iid(w, r->u.comm.tag)};
	pf_recv rv = {recv_time(r), 0, e.name};
	dw_err err = nest_touch(&w->nest, r->thread, r->time);

	if (!e.name)
		return DW_ENOMEM;
	e.flow = rv.flow = ++w->flows;
	e.has_value = true; /* the message's size */
	e.value = r->u.comm.size;
	if (err == DW_OK)
		err = pf_at(w, r->thread, r->time, true, &e);
	return err == DW_OK ? recv_push(&w->th[r->u.comm.recv_thread], &rv)
	                    : err;
}

static dw_err
pf_record(mg_writer *mw, const mg_rec *r)
{
	pf_writer *w = (pf_writer *)mw;
	dw_err err;

	if (r->thread >= w->info->nthreads ||
	    (r->kind == MG_COMM && r->u.comm.recv_thread >= w->info->nthreads))
		return DW_OK; /* not in the shape: cannot happen */
	if (r->kind == MG_STATE)
		err = nest_state(&w->nest, r->thread, r->time, r->u.state.end,
		                 r->u.state.state);
	else if (r->kind == MG_EVENT)
		err = events(w, r);
	else
		err = message(w, r);
	return err == DW_OK ? DW_OK : fail(w, err, "write", w->tmp);
}

/* ---- Begin: the tracks and each sequence's first packet ------------------ */

static dw_err
pf_begin(mg_writer *mw, const mg_info *info)
{
	pf_writer *w = (pf_writer *)mw;
	dw_err err = ob_open(&w->out, w->tmp);

	if (err != DW_OK)
		return fail(w, err, "create", w->tmp);
	w->opened = true;
	w->pk = &w->pipe.cur;
	err = pf_z_start(w);
	if (err != DW_OK)
		return fail(w, err, "write", w->tmp);
	w->info = info;
	w->runtime = lb_is_runtime(info->labels);
	err = nest_init(&w->nest, (uint32_t)info->nthreads, &pf_nest_ops, w);
	if (err == DW_OK)
		err = pf_tables(w, info);
	for (uint32_t i = 0; err == DW_OK && i < info->nthreads; i++)
		err = pf_sequence_start(w, i);
	for (uint32_t k = 0; err == DW_OK && k < info->ntasks; k++)
		if (info->tasks[k].nthreads)
			err = pf_process_track(w, k);
	return err == DW_OK ? DW_OK : fail(w, err, "write", w->tmp);
}

/* ---- End --------------------------------------------------------------------
 */

static dw_err
pf_end(mg_writer *mw, const mg_info *info)
{
	pf_writer *w = (pf_writer *)mw;
	dw_err err;

	w->info = info;
	err = nest_finish(&w->nest);
	for (uint32_t i = 0; err == DW_OK && i < info->nthreads; i++)
		err = recv_flush(w, i, UINT64_MAX, true);
	if (err == DW_OK)
		err = pf_z_finish(w);
	if (err != DW_OK)
		return fail(w, err, "write", w->tmp);
	w->opened = false;
	err = ob_close(&w->out);
	if (err != DW_OK)
		return fail(w, err, "write", w->tmp);
	err = of_commit(&w->base, w->tmp, w->path);
	if (err != DW_OK)
		return err;
	w->ended = true;
	return DW_OK;
}

static void
pf_free(mg_writer *mw)
{
	pf_writer *w = (pf_writer *)mw;

	pf_z_free(w); /* its thread writes the file */
	if (w->opened)
		ob_discard(&w->out);
	for (size_t i = 0; w->th && i < w->nthreads; i++) {
		free(w->th[i].sent);
		free(w->th[i].recv);
	}
	for (uint32_t i = 0; i < w->nnames; i++)
		free(w->names[i].s);
	for (int k = 0; k < 3; k++)
		free(w->func_iid[k]);
	nest_free(&w->nest);
	free(w->pairs);
	free(w->names);
	free(w->th);
	free(w->state_iid);
	free(w->type_iid);
	of_names_free(w->path, w->tmp, !w->ended);
	free(w);
}

static const mg_writer_ops pf_ops = {
    .name = "perfetto",
    .begin = pf_begin,
    .record = pf_record,
    .end = pf_end,
    .free = pf_free,
};

dw_err
perfetto_writer_new(const char *prefix, mg_writer **out)
{
	pf_writer *w = calloc(1, sizeof *w);

	*out = NULL;
	if (!w)
		return DW_ENOMEM;
	w->base.ops = &pf_ops;
	w->out.fd = -1;
	w->pk = &w->pipe.cur;
	if (of_names(&w->path, &w->tmp, prefix, ".pftrace") != DW_OK) {
		w->ended = true;
		pf_free(&w->base);
		return DW_ENOMEM;
	}
	*out = &w->base;
	return DW_OK;
}
