/* The MessagePack codec of mpack.h: big-endian, smallest form on write. */
#include <stdlib.h>
#include <string.h>

#include "runtime/mpack.h"

#define MP_MAX ((size_t)UINT32_MAX)

static int
mp_room(struct mp_w *w, size_t n)
{
	if (w->err)
		return -1;
	if (n > MP_MAX || w->len + n < w->len) {
		w->err = 1;
		return -1;
	}
	if (w->len + n <= w->cap)
		return 0;
	size_t cap = w->cap ? w->cap : 64;
	while (cap < w->len + n)
		cap *= 2;
	unsigned char *p = realloc(w->p, cap);
	if (!p) {
		w->err = 1;
		return -1;
	}
	w->p = p;
	w->cap = cap;
	return 0;
}

static void
mp_be(struct mp_w *w, unsigned char tag, uint64_t v, int bytes)
{
	if (mp_room(w, 1 + (size_t)bytes) < 0)
		return;
	w->p[w->len++] = tag;
	for (int i = bytes - 1; i >= 0; i--)
		w->p[w->len++] = (unsigned char)(v >> (8 * i));
}

void
mp_put_int(struct mp_w *w, int64_t v)
{
	if (v >= 0 && v < 128)
		mp_be(w, (unsigned char)v, 0, 0);
	else if (v < 0 && v >= -32)
		mp_be(w, (unsigned char)(0xe0 | (v + 32)), 0, 0);
	else if (v >= 0)
		v <= UINT8_MAX    ? mp_be(w, 0xcc, (uint64_t)v, 1)
		: v <= UINT16_MAX ? mp_be(w, 0xcd, (uint64_t)v, 2)
		: v <= UINT32_MAX ? mp_be(w, 0xce, (uint64_t)v, 4)
		                  : mp_be(w, 0xcf, (uint64_t)v, 8);
	else
		v >= INT8_MIN    ? mp_be(w, 0xd0, (uint64_t)v & 0xff, 1)
		: v >= INT16_MIN ? mp_be(w, 0xd1, (uint64_t)v & 0xffff, 2)
		: v >= INT32_MIN ? mp_be(w, 0xd2, (uint64_t)v & 0xffffffff, 4)
		                 : mp_be(w, 0xd3, (uint64_t)v, 8);
}

void
mp_put_f64(struct mp_w *w, double v)
{
	uint64_t b;
	memcpy(&b, &v, sizeof b);
	mp_be(w, 0xcb, b, 8);
}

/* A header with a length: the fix form's tag, then 8/16/32-bit tags. */
static void
mp_len(struct mp_w *w, size_t n, unsigned fix, size_t fixmax,
       const unsigned char tags[3])
{
	if (n > MP_MAX) {
		w->err = 1;
		return;
	}
	if (fix && n <= fixmax)
		mp_be(w, (unsigned char)(fix | n), 0, 0);
	else if (tags[0] && n <= UINT8_MAX)
		mp_be(w, tags[0], n, 1);
	else if (n <= UINT16_MAX)
		mp_be(w, tags[1], n, 2);
	else
		mp_be(w, tags[2], n, 4);
}

static void
mp_bytes(struct mp_w *w, const void *b, size_t n)
{
	if (n && mp_room(w, n) == 0) {
		memcpy(w->p + w->len, b, n);
		w->len += n;
	}
}

void
mp_put_str(struct mp_w *w, const char *s, size_t n)
{
	static const unsigned char t[3] = {0xd9, 0xda, 0xdb};
	mp_len(w, n, 0xa0, 31, t);
	mp_bytes(w, s, n);
}

void
mp_put_bin(struct mp_w *w, const void *b, size_t n)
{
	static const unsigned char t[3] = {0xc4, 0xc5, 0xc6};
	mp_len(w, n, 0, 0, t);
	mp_bytes(w, b, n);
}

void
mp_put_array(struct mp_w *w, size_t n)
{
	static const unsigned char t[3] = {0, 0xdc, 0xdd};
	mp_len(w, n, 0x90, 15, t);
}

void
mp_put_ext(struct mp_w *w, int8_t type, const void *b, size_t n)
{
	static const unsigned char t[3] = {0xc7, 0xc8, 0xc9};
	mp_len(w, n, 0, 0, t);
	if (mp_room(w, 1) == 0)
		w->p[w->len++] = (unsigned char)type;
	mp_bytes(w, b, n);
}

/* ---- reading ---- */

static int
mp_get(struct mp_r *r, int bytes, uint64_t *v)
{
	if (r->len - r->pos < (size_t)bytes)
		return -1;
	*v = 0;
	for (int i = 0; i < bytes; i++)
		*v = *v << 8 | r->p[r->pos++];
	return 0;
}

/* A body of n bytes at the current position. */
static int
mp_body(struct mp_r *r, struct mp_obj *o, uint64_t n)
{
	if (n > r->len - r->pos)
		return -1;
	o->n = (uint32_t)n;
	o->data = r->p + r->pos;
	r->pos += (size_t)n;
	return 0;
}

static int
mp_sized(struct mp_r *r, struct mp_obj *o, int kind, int bytes)
{
	uint64_t n;
	o->kind = kind;
	if (mp_get(r, bytes, &n) < 0)
		return -1;
	if (kind == MP_ARRAY || kind == MP_MAP) {
		o->n = (uint32_t)n;
		return 0;
	}
	if (kind == MP_EXT) {
		uint64_t t;
		if (mp_get(r, 1, &t) < 0)
			return -1;
		o->ext = (int8_t)(uint8_t)t;
	}
	return mp_body(r, o, n);
}

static int
mp_num(struct mp_r *r, struct mp_obj *o, unsigned char b)
{
	uint64_t v;
	static const int sz[4] = {1, 2, 4, 8};
	if (b == 0xca || b == 0xcb) {
		if (mp_get(r, b == 0xca ? 4 : 8, &v) < 0)
			return -1;
		o->kind = MP_FLOAT;
		o->fbits = b == 0xca ? 32 : 64;
		if (b == 0xca) {
			uint32_t u = (uint32_t)v;
			float f;
			memcpy(&f, &u, sizeof f);
			o->f = f;
		} else {
			memcpy(&o->f, &v, sizeof o->f);
		}
		return 0;
	}
	int bytes = sz[(b - (b >= 0xd0 ? 0xd0 : 0xcc)) & 3];
	if (mp_get(r, bytes, &v) < 0)
		return -1;
	if (b >= 0xd0) { /* signed: extend from its width */
		int sh = 64 - 8 * bytes;
		o->i = sh ? (int64_t)(v << sh) >> sh : (int64_t)v;
		o->kind = MP_INT;
	} else if (v > INT64_MAX) {
		o->u = v;
		o->kind = MP_UINT;
	} else {
		o->i = (int64_t)v;
		o->kind = MP_INT;
	}
	return 0;
}

int
mp_next(struct mp_r *r, struct mp_obj *o)
{
	memset(o, 0, sizeof *o);
	if (r->pos >= r->len)
		return -1;
	unsigned char b = r->p[r->pos++];
	if (b < 0x80 || b >= 0xe0) {
		o->kind = MP_INT;
		o->i = b < 0x80 ? b : (int64_t)b - 256;
		return 0;
	}
	if (b < 0x90)
		return o->kind = MP_MAP, o->n = b & 15, 0;
	if (b < 0xa0)
		return o->kind = MP_ARRAY, o->n = b & 15, 0;
	if (b < 0xc0)
		return o->kind = MP_STR, mp_body(r, o, b & 31);
	switch (b) {
	case 0xc0:
		return o->kind = MP_NIL, 0;
	case 0xc1:
		return -1;
	case 0xc2:
	case 0xc3:
		return o->kind = MP_BOOL, o->i = b & 1, 0;
	case 0xc4:
		return mp_sized(r, o, MP_BIN, 1);
	case 0xc5:
		return mp_sized(r, o, MP_BIN, 2);
	case 0xc6:
		return mp_sized(r, o, MP_BIN, 4);
	case 0xc7:
		return mp_sized(r, o, MP_EXT, 1);
	case 0xc8:
		return mp_sized(r, o, MP_EXT, 2);
	case 0xc9:
		return mp_sized(r, o, MP_EXT, 4);
	case 0xd9:
		return mp_sized(r, o, MP_STR, 1);
	case 0xda:
		return mp_sized(r, o, MP_STR, 2);
	case 0xdb:
		return mp_sized(r, o, MP_STR, 4);
	case 0xdc:
		return mp_sized(r, o, MP_ARRAY, 2);
	case 0xdd:
		return mp_sized(r, o, MP_ARRAY, 4);
	case 0xde:
		return mp_sized(r, o, MP_MAP, 2);
	case 0xdf:
		return mp_sized(r, o, MP_MAP, 4);
	}
	if (b >= 0xd4 && b <= 0xd8) { /* fixext 1, 2, 4, 8, 16 */
		uint64_t t;
		if (mp_get(r, 1, &t) < 0)
			return -1;
		o->kind = MP_EXT;
		o->ext = (int8_t)(uint8_t)t;
		return mp_body(r, o, 1u << (b - 0xd4));
	}
	return mp_num(r, o, b);
}

int
mp_skip(struct mp_r *r, int depth)
{
	struct mp_obj o;
	if (depth <= 0 || mp_next(r, &o) < 0)
		return -1;
	if (o.kind != MP_ARRAY && o.kind != MP_MAP)
		return 0;
	uint64_t n = o.kind == MP_MAP ? 2 * (uint64_t)o.n : o.n;
	/* every element takes at least one byte: a count beyond what is
	 * left cannot be honest, and would cost a long loop */
	if (n > r->len - r->pos)
		return -1;
	for (uint64_t k = 0; k < n; k++)
		if (mp_skip(r, depth - 1) < 0)
			return -1;
	return 0;
}

const char *
mp_name(const struct mp_obj *o)
{
	switch (o->kind) {
	case MP_NIL:
		return "nil";
	case MP_BOOL:
		return "bool";
	case MP_INT:
	case MP_UINT:
		return "integer";
	case MP_FLOAT:
		return o->fbits == 32 ? "float32" : "float64";
	case MP_STR:
		return "str";
	case MP_BIN:
		return "bin";
	case MP_ARRAY:
		return "array";
	case MP_MAP:
		return "map";
	case MP_EXT:
		return o->ext == 1 ? "future" : o->ext == 2 ? "channel" : "ext";
	}
	return "nothing";
}
