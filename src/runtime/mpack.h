/*
 * A strict MessagePack codec for the subset typed arguments use
 * (docs/runtime.md, "Typed arguments"): integers, floats, strings,
 * binary, arrays and ext values on write; on read every type of the
 * specification, so that a peer's nil, bool or map is named in the error
 * instead of being misread.  Ours rather than libmsgpack's so that the
 * core builds on a machine without libmsgpack-dev; every read is bounded
 * by the buffer and tests/fuzz/mpack_fuzz.c drives the reader.
 */
#ifndef DW_RUNTIME_MPACK_H
#define DW_RUNTIME_MPACK_H

#include <stddef.h>
#include <stdint.h>

/* A growing output buffer; err is sticky (out of memory, too large). */
struct mp_w {
	unsigned char *p;
	size_t len, cap;
	int err;
};

void mp_put_int(struct mp_w *w, int64_t v);
void mp_put_f64(struct mp_w *w, double v);
void mp_put_str(struct mp_w *w, const char *s, size_t n);
void mp_put_bin(struct mp_w *w, const void *b, size_t n);
void mp_put_array(struct mp_w *w, size_t n);
void mp_put_ext(struct mp_w *w, int8_t type, const void *b, size_t n);

enum mp_kind {
	MP_NIL = 1,
	MP_BOOL,
	MP_INT,  /* i holds it (an unsigned value over INT64_MAX is MP_UINT) */
	MP_UINT, /* u holds a value over INT64_MAX */
	MP_FLOAT,
	MP_STR,
	MP_BIN,
	MP_ARRAY, /* n elements follow */
	MP_MAP,   /* n key/value pairs follow */
	MP_EXT,
};

/* One decoded header: for str, bin and ext, data/n is the body (within
 * the buffer); for arrays and maps, n counts what follows. */
struct mp_obj {
	int kind;
	int64_t i;
	uint64_t u;
	double f;
	int fbits; /* 32 or 64 for MP_FLOAT */
	int8_t ext;
	uint32_t n;
	const unsigned char *data;
};

struct mp_r {
	const unsigned char *p;
	size_t len, pos;
};

/* Reads the next header; 0, or -1 when the buffer ends inside it or the
 * byte is the one MessagePack never uses (0xc1). */
int mp_next(struct mp_r *r, struct mp_obj *o);
/* Skips one whole value (nested up to depth levels); 0 or -1. */
int mp_skip(struct mp_r *r, int depth);
/* The MessagePack name of a kind, for messages ("float64", "str", …). */
const char *mp_name(const struct mp_obj *o);

#endif
