/*
 * An output written on a thread of its own (outpipe.h): a ring of
 * OP_NBLK blocks, the caller filling one, the thread writing the others
 * oldest first.
 */
#include <stdlib.h>
#include <string.h>

#include "output/outpipe.h"

static void *
run(void *arg)
{
	opipe *p = arg;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		unsigned i;
		dw_err err = DW_OK;

		while (!p->queued && !p->stop)
			pthread_cond_wait(&p->work, &p->mu);
		if (!p->queued)
			break;
		i = p->head;
		if (p->err == DW_OK) {
			pthread_mutex_unlock(&p->mu);
			err = p->put(p->ctx, p->out, p->blk[i], p->len[i]);
			pthread_mutex_lock(&p->mu);
		}
		if (p->err == DW_OK)
			p->err = err;
		p->head = (i + 1) % OP_NBLK;
		p->queued--;
		pthread_cond_signal(&p->room);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

dw_err
op_start(opipe *p, ob *out, size_t size, op_put_fn put, void *ctx)
{
	memset(p, 0, sizeof *p);
	p->cur.fd = -1;
	p->out = out;
	p->put = put;
	p->ctx = ctx;
	for (unsigned i = 0; i < OP_NBLK; i++)
		if (!(p->blk[i] = malloc(size)))
			return DW_ENOMEM;
	p->cur.buf = p->blk[0];
	p->cur.cap = size;
	if (pthread_mutex_init(&p->mu, NULL) != 0)
		return DW_OK; /* no thread: written at op_submit */
	if (pthread_cond_init(&p->work, NULL) != 0) {
		pthread_mutex_destroy(&p->mu);
		return DW_OK;
	}
	if (pthread_cond_init(&p->room, NULL) != 0) {
		pthread_cond_destroy(&p->work);
		pthread_mutex_destroy(&p->mu);
		return DW_OK;
	}
	p->made = true;
	p->threaded = pthread_create(&p->thread, NULL, run, p) == 0;
	return DW_OK;
}

dw_err
op_submit(opipe *p)
{
	dw_err err;

	if (!p->cur.len)
		return p->threaded ? DW_OK : p->err;
	if (!p->threaded) {
		if (p->err == DW_OK)
			p->err = p->put(p->ctx, p->out, p->cur.buf, p->cur.len);
		p->cur.len = 0;
		return p->err;
	}
	pthread_mutex_lock(&p->mu);
	p->len[p->fill] = p->cur.len;
	p->queued++;
	pthread_cond_signal(&p->work);
	/* the next block is the oldest queued when every one is */
	while (p->queued == OP_NBLK)
		pthread_cond_wait(&p->room, &p->mu);
	err = p->err;
	pthread_mutex_unlock(&p->mu);
	p->fill = (p->fill + 1) % OP_NBLK;
	p->cur.buf = p->blk[p->fill];
	p->cur.len = 0;
	return err;
}

static void
stop(opipe *p, bool drop)
{
	if (!p->threaded)
		return;
	pthread_mutex_lock(&p->mu);
	if (drop && p->err == DW_OK)
		p->err = DW_ESTATE;
	p->stop = true;
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	p->threaded = false;
}

dw_err
op_finish(opipe *p)
{
	dw_err err = op_submit(p);

	stop(p, false);
	return err != DW_OK ? err : p->err;
}

void
op_free(opipe *p)
{
	stop(p, true);
	if (p->made) {
		pthread_cond_destroy(&p->room);
		pthread_cond_destroy(&p->work);
		pthread_mutex_destroy(&p->mu);
		p->made = false;
	}
	for (unsigned i = 0; i < OP_NBLK; i++) {
		free(p->blk[i]);
		p->blk[i] = NULL;
	}
	p->cur.buf = NULL;
	p->cur.len = p->cur.cap = 0;
}
