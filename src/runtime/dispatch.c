/*
 * What the transport calls up through, so that it knows no module by
 * name: a table of frame handlers by frame type, the hooks the I/O
 * thread's timer runs, the handler of a link that ended, and the
 * observers told that a process has gone.  Modules register at start
 * (rt_attach, init.c) before the I/O thread runs; the tables are only
 * read afterwards, so reading them takes no lock.
 */
#include <stddef.h>
#include <stdlib.h>

#include "runtime/rt.h"

#define DISP_HOOKS 8

static disp_frame_fn handlers[WIRE_TYPE_MAX + 1];
static disp_seen_fn seen;
static disp_peek_fn peek;
static disp_tick_fn ticks[DISP_HOOKS];
static int nticks;
static disp_gone_fn gones[DISP_HOOKS];
static int ngones;
static disp_lost_fn lost;
static disp_wake_fn wakes[DISP_HOOKS];
static int nwakes;

void
disp_clear(void)
{
	for (size_t i = 0; i <= WIRE_TYPE_MAX; i++)
		handlers[i] = NULL;
	seen = NULL;
	peek = NULL;
	nticks = ngones = nwakes = 0;
	lost = NULL;
}

void
disp_on_frame(unsigned type, disp_frame_fn fn)
{
	if (type <= WIRE_TYPE_MAX)
		handlers[type] = fn;
}

void
disp_on_peek(disp_peek_fn fn)
{
	peek = fn;
}

void
disp_on_seen(disp_seen_fn fn)
{
	seen = fn;
}

/* Adds fn to a list once (a second registration changes nothing). */
static void
disp_add(void **list, int *n, void *fn)
{
	for (int i = 0; i < *n; i++)
		if (list[i] == fn)
			return;
	if (*n < DISP_HOOKS)
		list[(*n)++] = fn;
}

void
disp_on_tick(disp_tick_fn fn)
{
	disp_add((void **)ticks, &nticks, (void *)fn);
}

void
disp_on_gone(disp_gone_fn fn)
{
	disp_add((void **)gones, &ngones, (void *)fn);
}

void
disp_on_wake(disp_wake_fn fn)
{
	disp_add((void **)wakes, &nwakes, (void *)fn);
}

void
disp_wake(void)
{
	for (int i = 0; i < nwakes; i++)
		wakes[i]();
}

void
disp_on_lost(disp_lost_fn fn)
{
	lost = fn;
}

void
disp_frame(void *arg, struct conn *c, const struct wire_hdr *h,
           unsigned char *p)
{
	(void)arg;
	if (seen)
		seen(c);
	if (peek && peek(c, h, p))
		return;
	disp_frame_fn fn = h->type <= WIRE_TYPE_MAX ? handlers[h->type] : NULL;
	if (fn) {
		fn(c, h, p);
		return;
	}
	conn_fail(c, "unexpected frame type %d", h->type);
	free(p);
}

void
disp_tick(uint64_t n)
{
	for (int i = 0; i < nticks; i++)
		ticks[i](n);
}

void
disp_lost(struct conn *c, const char *why)
{
	if (lost)
		lost(c, why);
	else
		loop_run((void (*)(void *))conn_close, c);
}

void
disp_gone(int pid)
{
	for (int i = 0; i < ngones; i++)
		gones[i](pid);
}
