/*
 * The protobuf wire encoding the Perfetto writer needs (output/perfetto.c):
 * varints, keys, fixed64, bytes and nested messages written forward into a
 * buffer the caller made room for.  Written from the protobuf encoding's
 * documentation; no library.
 */
#ifndef DW_OUTPUT_PBENC_H
#define DW_OUTPUT_PBENC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- Protobuf encoding ----------------------------------------------------
 */

typedef struct pb {
	uint8_t *p;
} pb;

static inline void
pb_varint(pb *b, uint64_t v)
{
	while (v >= 0x80) {
		*b->p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*b->p++ = (uint8_t)v;
}

static inline void
pb_key(pb *b, unsigned field, unsigned wire)
{
	pb_varint(b, (uint64_t)field << 3 | wire);
}

static inline void
pb_uint(pb *b, unsigned field, uint64_t v)
{
	pb_key(b, field, 0);
	pb_varint(b, v);
}

static inline void
pb_fixed64(pb *b, unsigned field, uint64_t v)
{
	pb_key(b, field, 1);
	for (int i = 0; i < 8; i++)
		*b->p++ = (uint8_t)(v >> (8 * i));
}

static inline void
pb_bytes(pb *b, unsigned field, const void *s, size_t n)
{
	pb_key(b, field, 2);
	pb_varint(b, n);
	memcpy(b->p, s, n);
	b->p += n;
}

/* A nested message: pb_open reserves one byte for its length, pb_close
 * writes it; a body of 128 bytes or more (an interned name, a
 * descriptor: rare) is moved forward by one for a second length byte.
 * Every message here is under 16 KiB, and the buffer has room for the
 * byte (the caller makes room for a whole packet and more). */
static inline uint8_t *
pb_open(pb *b, unsigned field)
{
	uint8_t *at;

	pb_key(b, field, 2);
	at = b->p;
	b->p += 1;
	return at;
}

static inline void
pb_close(pb *b, uint8_t *at)
{
	size_t n = (size_t)(b->p - (at + 1));

	if (__builtin_expect(n < 0x80, 1)) {
		at[0] = (uint8_t)n;
		return;
	}
	memmove(at + 2, at + 1, n);
	at[0] = (uint8_t)(n | 0x80);
	at[1] = (uint8_t)(n >> 7);
	b->p++;
}

#endif
