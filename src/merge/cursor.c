/*
 * Stream cursors (records with corrected times), state stacks, and the
 * state lookahead: a second cursor on the same file that finds where
 * the state shown now ends, so that a state record can be written at
 * its start without holding anything.
 */
#include <stdlib.h>
#include <string.h>

#include "merge/mg_int.h"

dw_err
cursor_open(mg_cursor *u, const char *path, mg_clock *k)
{
	memset(u, 0, sizeof *u);
	mg_tconv_init(&u->tc, k);
	return rd_thread_open(path, NULL, &u->rd);
}

void
cursor_close(mg_cursor *u)
{
	rd_thread_close(u->rd);
	u->rd = NULL;
	u->have = false;
}

bool
cursor_peek(mg_cursor *u)
{
	if (u->have)
		return true;
	if (!u->rd || !rd_thread_next(u->rd, &u->rec))
		return false;
	u->t = mg_time(&u->tc, u->rec.ticks);
	u->have = true;
	return true;
}

/* ---- State stacks ------------------------------------------------------ */

void
stack_free(mg_stack *s)
{
	free(s->v);
	memset(s, 0, sizeof *s);
}

static void
stack_push(mg_stack *s, uint32_t state)
{
	if (s->n == s->cap && !s->over) {
		uint32_t cap = s->cap ? s->cap * 2 : 16;
		uint32_t *v = cap <= MG_STACK_MAX ? realloc(s->v, cap * sizeof *v)
		                                  : NULL;

		if (!v) {
			s->over++;
			return;
		}
		s->v = v;
		s->cap = cap;
	}
	if (s->over)
		s->over++;
	else
		s->v[s->n++] = state;
}

/* Applies a state record; false for any other kind. */
bool
stack_apply(mg_stack *s, const rd_rec *r)
{
	if (r->kind == FMT_R_STATE_PUSH) {
		stack_push(s, r->u.state.state);
	} else if (r->kind == FMT_R_STATE_POP) {
		if (s->over)
			s->over--;
		else if (s->n)
			s->n--;
		else
			s->bad_pops++;
	} else {
		return false;
	}
	return true;
}

/* The innermost state; Idle when none is entered. */
uint32_t
stack_shown(const mg_stack *s)
{
	return s->n ? s->v[s->n - 1] : MG_STATE_IDLE;
}

/* ---- Lookahead ------------------------------------------------------------ */

/* Applies the lookahead's next group (records of one time); its time. */
static int64_t
la_group(mg_stream *s)
{
	int64_t t = s->la.t;

	do {
		stack_apply(&s->la_st, &s->la.rec);
		s->la.have = false;
	} while (cursor_peek(&s->la) && s->la.t == t);
	return t;
}

/*
 * The stream has just applied its records of time t and shows `shown`:
 * the time of the next group after which it shows something else, or the
 * stream's end.  The lookahead is never behind the caller: it stops at
 * the group that changed, which the caller reaches next.
 */
int64_t
lookahead_next(mg_stream *s, int64_t t, uint32_t shown)
{
	while (cursor_peek(&s->la) && s->la.t <= t)
		la_group(s);
	while (cursor_peek(&s->la)) {
		int64_t g = la_group(s);

		if (stack_shown(&s->la_st) != shown)
			return g;
	}
	return s->end;
}
