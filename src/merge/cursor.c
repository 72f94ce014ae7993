/*
 * Reading a stream for the merge: one reader decodes records (with their
 * corrected times) into a ring; the merge takes them in order; the state
 * lookahead reads ahead in the same ring to find where the state shown
 * now ends, so that a state record is written at its start without
 * holding anything back.  A state longer than the whole ring sends the
 * lookahead to a second reader of the file, which then stays ahead.
 */
#include <stdlib.h>
#include <string.h>

#include "merge/decode.h"
#include "merge/mg_int.h"

static dw_err
cursor_open(mg_cursor *u, const mg_stream *s)
{
	memset(u, 0, sizeof *u);
	mg_tconv_init(&u->tc, &s->proc->clk);
	u->floors = s->floors;
	u->nfloors = s->nfloors;
	return rd_thread_open(s->path, NULL, &u->rd);
}

void
cursor_floors(mg_cursor *u)
{
	for (; u->fi < u->nfloors && u->floors[u->fi].index <= u->next; u->fi++)
		if (u->tc.last < u->floors[u->fi].t)
			u->tc.last = u->floors[u->fi].t;
	u->fat = u->fi < u->nfloors ? u->floors[u->fi].index : UINT64_MAX;
}

void
cursor_close(mg_cursor *u)
{
	rd_thread_close(u->rd);
	u->rd = NULL;
	stack_free(&u->st);
}

dw_err
stream_open_ring(mg_stream *s, size_t ring)
{
	s->ring = malloc(ring * sizeof *s->ring);
	if (!s->ring)
		return DW_ENOMEM;
	s->rmask = ring - 1;
	s->pos = s->tail = s->la_pos = 0;
	s->run = (mg_run){0};
	return cursor_open(&s->fill, s);
}

void
stream_close(mg_stream *s)
{
	cursor_close(&s->fill);
	cursor_close(&s->la);
	free(s->ring);
	s->ring = NULL;
}

/* Decodes more records into the ring (which has room): on one thread,
 * all the room there is, following the groups and runs as a decoding
 * thread does (mg_ent.next), so that the merge seldom looks ahead; one
 * record when a decoding thread is to take the stream over (the merge's
 * thread decodes only what it needs before). */
bool
stream_fill(mg_stream *s)
{
	uint64_t t;

	if (s->dec)
		return !s->eof && dec_more(s);
	if (s->eof)
		return false;
	t = cursor_fill(&s->fill, s->ring, s->rmask, &s->run, s->tail,
	                s->fill_one ? s->tail + 1 : s->pos + s->rmask + 1,
	                &s->eof);
	if (t == s->tail)
		return false;
	s->tail = t;
	return true;
}

/* ---- State stacks ------------------------------------------------------ */

void
stack_free(mg_stack *s)
{
	free(s->v);
	memset(s, 0, sizeof *s);
}

void
stack_push_slow(mg_stack *s, uint32_t state)
{
	if (s->n == s->cap && !s->over) {
		uint32_t cap = s->cap ? s->cap * 2 : 16;
		uint32_t *v =
		    cap <= MG_STACK_MAX ? realloc(s->v, cap * sizeof *v) : NULL;

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

/* ---- Lookahead ------------------------------------------------------------
 */

/* Record i through the second reader (opened and moved as needed). */
static const mg_ent *
la_far(mg_stream *s, uint64_t i)
{
	if (s->la_eof)
		return NULL;
	if (!s->la.rd && cursor_open(&s->la, s) != DW_OK) {
		s->la_eof = true;
		return NULL;
	}
	if (s->la.next == i + 1)
		return &s->la_ent;
	while (s->la.next <= i) {
		if (!cursor_decode(&s->la, &s->la_ent)) {
			s->la_eof = true;
			return NULL;
		}
	}
	return &s->la_ent;
}

/* Record i (i >= pos) for the lookahead when it is not in the ring yet:
 * decoded into it while it has room, else read by the second reader. */
static const mg_ent *
la_slow(mg_stream *s, uint64_t i)
{
	while (i >= s->tail && s->tail - s->pos <= s->rmask && !s->eof)
		stream_fill(s);
	if (i < s->tail)
		return &s->ring[i & s->rmask];
	return s->eof ? NULL : la_far(s, i);
}

static inline const mg_ent *
la_at(mg_stream *s, uint64_t i)
{
	return i < s->tail ? &s->ring[i & s->rmask] : la_slow(s, i);
}

/*
 * The stream has just taken its records of time t and shows `shown`:
 * the time of the next group (records of one time) after which it shows
 * something else, or the stream's end.  The lookahead stops after the
 * group that changed, which the merge reaches next.
 */
int64_t
lookahead_next(mg_stream *s, int64_t t, uint32_t shown)
{
	const mg_ent *e = la_at(s, s->la_pos);

	while (e && e->t <= t) /* catch up with the merge */
		e = la_at(s, ++s->la_pos);
	while (e) {
		int64_t g = e->t;
		uint32_t after;

		do {
			after = e->shown;
			e = la_at(s, ++s->la_pos);
		} while (e && e->t == g);
		if (after != shown)
			return g;
	}
	return s->end > t ? s->end : t; /* (the end is never before) */
}
