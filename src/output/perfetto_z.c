/*
 * The Perfetto writer's compressed chunks (perfetto_int.h): the packets
 * are written into a chunk of up to PZ_CHUNK bytes, and a full chunk
 * becomes one TracePacket whose compressed_packets (field 50) holds it
 * as a zlib stream: the bytes of a serialized Trace of those packets,
 * which trace_processor (and so ui.perfetto.dev) inflates and reads
 * packet by packet as if they were in the file itself, interned names
 * and incremental clocks included (docs/merge.md says where in its
 * source).  Compressed with libdeflate at level 1: on our output it
 * takes about 30% fewer instructions than zlib's level 1 (docs/merge.md
 * has the figures).  Without libdeflate, or with DWORK_PERFETTO_PLAIN
 * set, the packets go to the file as they are.
 *
 * Either way the blocks are handed to a thread of their own
 * (output/outpipe.h) that compresses and writes them while the writer
 * encodes the next: deflate is about 60% of the writer's instructions,
 * and the chunks, their order and so the file are the same as when one
 * thread did both.
 */
#include <stdlib.h>
#include <string.h>

#ifdef DW_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#include "output/pbenc.h"
#include "output/perfetto_int.h"

/* Bytes of packets a chunk holds.  Perfetto's proto asks for a
 * compressed packet under 512 KB with its header, which the bound of a
 * chunk this size keeps even for bytes that do not compress; compressing
 * more at once gains under 1% here. */
#define PZ_CHUNK (256u << 10)

enum { F_TRACE_PACKET = 1, F_COMPRESSED_PACKETS = 50 };

struct pf_z {
#ifdef DW_HAVE_LIBDEFLATE
	struct libdeflate_compressor *c;
#endif
	uint8_t *out; /* a chunk compressed */
	size_t cap;
	uint64_t chunks; /* compressed packets written */
};

bool
pf_z_available(void)
{
#ifdef DW_HAVE_LIBDEFLATE
	return true;
#else
	return false;
#endif
}

/* DWORK_PERFETTO_PLAIN set, and not to "0": plain packets. */
static bool
plain_asked(void)
{
	const char *v = getenv("DWORK_PERFETTO_PLAIN");

	return v && *v && strcmp(v, "0") != 0;
}

static size_t
varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80)
		v >>= 7, n++;
	return n;
}

/* A chunk's packets as one compressed packet in the file (the pipe's
 * thread). */
static dw_err
put_chunk(void *ctx, ob *out, const char *buf, size_t len)
{
	struct pf_z *z = ctx;
	size_t n = 0, inner;
	dw_err err;
	pb b;

#ifdef DW_HAVE_LIBDEFLATE
	n = libdeflate_zlib_compress(z->c, buf, len, z->out, z->cap);
#else
	(void)z, (void)buf, (void)len;
#endif
	if (!n)
		return DW_EIO; /* cannot happen: the buffer is the bound */
	inner = 2 + varint_len(n) + n; /* key of field 50: two bytes */
	err = ob_need(out, 1 + varint_len(inner) + inner);
	if (err != DW_OK)
		return err;
	b.p = (uint8_t *)ob_end(out);
	pb_key(&b, F_TRACE_PACKET, 2);
	pb_varint(&b, inner);
	pb_bytes(&b, F_COMPRESSED_PACKETS, z->out, n);
	ob_commit(out, (char *)b.p);
	z->chunks++;
	return DW_OK;
}

/* Plain packets into the file as they are (the pipe's thread). */
static dw_err
put_plain(void *ctx, ob *out, const char *buf, size_t len)
{
	(void)ctx;
	return ob_write(out, buf, len);
}

dw_err
pf_z_start(pf_writer *w)
{
	if (plain_asked() || !pf_z_available())
		return op_start(&w->pipe, &w->out, OB_SIZE, put_plain, NULL);
#ifdef DW_HAVE_LIBDEFLATE
	w->z = calloc(1, sizeof *w->z);
	if (!w->z || !(w->z->c = libdeflate_alloc_compressor(1)))
		return DW_ENOMEM;
	w->z->cap = libdeflate_zlib_compress_bound(w->z->c, PZ_CHUNK);
	w->z->out = malloc(w->z->cap);
	if (!w->z->out)
		return DW_ENOMEM;
#endif
	return op_start(&w->pipe, &w->out, PZ_CHUNK, put_chunk, w->z);
}

dw_err
pf_z_finish(pf_writer *w)
{
	dw_err err = op_finish(&w->pipe);

	w->chunks = w->z ? w->z->chunks : 0;
	return err;
}

void
pf_z_free(pf_writer *w)
{
	op_free(&w->pipe); /* first: its thread uses w->z */
	if (w->z) {
#ifdef DW_HAVE_LIBDEFLATE
		libdeflate_free_compressor(w->z->c);
#endif
		free(w->z->out);
		free(w->z);
	}
	w->z = NULL;
}
