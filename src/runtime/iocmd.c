/*
 * Handing work to the I/O thread: waking it (loop_wake), running a
 * function there and waiting for it (loop_run, drained by
 * loop_commands), and work put off to the end of its current batch of
 * events (loop_later, drained by loop_free_batch).  Below the links
 * and the dispatch, which use it; the loop (loop.c) drains it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "runtime/rt.h"

struct iocmd {
	struct iocmd *next;
	void (*fn)(void *);
	void *arg;
	int done;
};

void
loop_wake(void)
{
	uint64_t one = 1;
	ssize_t w = write(rt.evfd, &one, sizeof one);
	(void)w;
}

void
loop_run(void (*fn)(void *), void *arg)
{
	if (pthread_equal(pthread_self(), rt.io) || !rt.io_running) {
		fn(arg);
		return;
	}
	struct iocmd c = {.fn = fn, .arg = arg};
	pthread_mutex_lock(&rt.lock);
	c.next = rt.cmds;
	rt.cmds = &c;
	loop_wake();
	while (!c.done)
		rt_cond_wait(&rt.cv, &rt.lock, NULL, DWT_STATE_SYNCHRONIZATION);
	pthread_mutex_unlock(&rt.lock);
}

void
loop_commands(void)
{
	pthread_mutex_lock(&rt.lock);
	struct iocmd *c = rt.cmds;
	rt.cmds = NULL;
	pthread_mutex_unlock(&rt.lock);
	while (c) {
		struct iocmd *n = c->next;
		c->fn(c->arg);
		pthread_mutex_lock(&rt.lock);
		c->done = 1;
		pthread_cond_broadcast(&rt.cv);
		pthread_mutex_unlock(&rt.lock);
		c = n;
	}
}

/* Work put off until the current epoll batch is handled, because an
 * event of the batch may still point at the memory it frees (later_lock;
 * any thread may add, the I/O thread runs them). */
struct later {
	void (*fn)(void *);
	void *p;
};
static pthread_mutex_t later_lock = PTHREAD_MUTEX_INITIALIZER;
static struct later *later;
static size_t nlater, maxlater;

void
loop_later(void (*fn)(void *), void *p)
{
	int io = rt.io_running && pthread_equal(pthread_self(), rt.io);
	if (!rt.io_running) {
		fn(p);
		return;
	}
	pthread_mutex_lock(&later_lock);
	if (nlater == maxlater) {
		size_t m = maxlater ? maxlater * 2 : 16;
		struct later *b = realloc(later, m * sizeof *b);
		if (b)
			later = b, maxlater = m;
	}
	if (nlater < maxlater) /* else kept rather than risked */
		later[nlater++] = (struct later){fn, p};
	pthread_mutex_unlock(&later_lock);
	if (!io)
		loop_wake(); /* freed at the end of the loop's next batch */
}

void
loop_free_batch(void)
{
	pthread_mutex_lock(&later_lock);
	struct later *b = later;
	size_t n = nlater;
	later = NULL;
	nlater = maxlater = 0;
	pthread_mutex_unlock(&later_lock);
	for (size_t i = 0; i < n; i++)
		b[i].fn(b[i].p);
	free(b);
}
