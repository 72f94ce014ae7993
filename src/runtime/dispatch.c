/* The frame dispatcher: routes each frame a link delivers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/call.h"
#include "runtime/rt.h"
#include "runtime/rtrace.h"
#include "runtime/work.h"

void
call_on_frame(void *arg, struct conn *c, const struct wire_hdr *h,
              unsigned char *p)
{
	(void)arg;
	if (rt.role == RT_MASTER) {
		pthread_mutex_lock(&rt.lock);
		struct worker *w = cl_find(c->peer);
		if (w)
			w->last_heard = rt_now_ms();
		pthread_mutex_unlock(&rt.lock);
	}
	switch (h->type) {
	case WIRE_RESULT:
	case WIRE_DONE:
		call_complete(c, h, p);
		return;
	case WIRE_CALL:
		call_enqueue(c, h, p);
		return;
	case WIRE_REQ:
		req_on_frame(c, h->ref, p, h->payload);
		return;
	case WIRE_ANSWER:
		call_answer(c, h, p);
		return;
	case WIRE_CANCEL:
		req_on_cancel(c->peer, h->ref);
		break;
	case WIRE_FETCH:
	case WIRE_FREE:
		call_fetch_kept(c, h, h->type == WIRE_FREE);
		break;
	case WIRE_PING:
		conn_send_msg(c, WIRE_PONG, h->ref, p, h->payload, NULL, 0);
		break;
	case WIRE_PONG:
		break;
	case WIRE_CREDIT:
		flow_credit(c, h->ref);
		break;
	case WIRE_INTERRUPT:
		if (rt.role == RT_WORKER && c == rt.master)
			call_note_interrupt();
		else
			conn_fail(c,
			          "INTERRUPT from process %d, not the master",
			          c->peer);
		break;
	case WIRE_CLOCK_PING:
		rtr_on_clock_ping(c, h->ref, p, h->payload);
		break;
	case WIRE_CLOCK_PONG:
		if (rt.role == RT_MASTER)
			rtr_on_pong(c, p, h->payload);
		break;
	case WIRE_SYNC:
		if (rt.role == RT_WORKER && c == rt.master)
			rtr_on_sync(p, h->payload);
		break;
	case WIRE_FILE:
		if (rt.role == RT_MASTER)
			rtr_on_file(c, h->ref, p, h->payload);
		break;
	case WIRE_EXIT:
		if (rt.role != RT_WORKER || c != rt.master) {
			conn_fail(c, "EXIT from process %d, not the master",
			          c->peer);
			break;
		}
		pthread_mutex_lock(&rt.lock);
		rt.exiting = 1;
		pthread_cond_broadcast(&rt.cv);
		pthread_cond_broadcast(&rt.jobs_cv);
		pthread_mutex_unlock(&rt.lock);
		break;
	default:
		conn_fail(c, "unexpected frame type %d", h->type);
	}
	free(p);
}
