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

dw_err
pf_z_start(pf_writer *w)
{
	w->pk = &w->out;
	if (plain_asked() || !pf_z_available())
		return DW_OK;
#ifdef DW_HAVE_LIBDEFLATE
	w->z = calloc(1, sizeof *w->z);
	if (!w->z || !(w->z->c = libdeflate_alloc_compressor(1)))
		return DW_ENOMEM;
	w->z->cap = libdeflate_zlib_compress_bound(w->z->c, PZ_CHUNK);
	w->z->out = malloc(w->z->cap);
	w->raw.buf = malloc(PZ_CHUNK);
	if (!w->z->out || !w->raw.buf)
		return DW_ENOMEM;
	w->raw.cap = PZ_CHUNK;
	w->raw.len = 0;
	w->pk = &w->raw;
#endif
	return DW_OK;
}

static size_t
varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80)
		v >>= 7, n++;
	return n;
}

/* The chunk's packets as one compressed packet in the file. */
static dw_err
chunk(pf_writer *w)
{
	size_t n = 0, inner;
	dw_err err;
	pb b;

	if (!w->raw.len)
		return DW_OK;
#ifdef DW_HAVE_LIBDEFLATE
	n = libdeflate_zlib_compress(w->z->c, w->raw.buf, w->raw.len, w->z->out,
	                             w->z->cap);
#endif
	if (!n)
		return DW_EIO; /* cannot happen: the buffer is the bound */
	inner = 2 + varint_len(n) + n; /* key of field 50: two bytes */
	err = ob_need(&w->out, 1 + varint_len(inner) + inner);
	if (err != DW_OK)
		return err;
	b.p = (uint8_t *)ob_end(&w->out);
	pb_key(&b, F_TRACE_PACKET, 2);
	pb_varint(&b, inner);
	pb_bytes(&b, F_COMPRESSED_PACKETS, w->z->out, n);
	ob_commit(&w->out, (char *)b.p);
	w->raw.len = 0;
	w->chunks++;
	return DW_OK;
}

dw_err
pf_flush(pf_writer *w)
{
	return w->pk == &w->out ? ob_flush(&w->out) : chunk(w);
}

dw_err
pf_z_finish(pf_writer *w)
{
	return w->pk == &w->out ? DW_OK : chunk(w);
}

void
pf_z_free(pf_writer *w)
{
	if (w->z) {
#ifdef DW_HAVE_LIBDEFLATE
		libdeflate_free_compressor(w->z->c);
#endif
		free(w->z->out);
		free(w->z);
	}
	free(w->raw.buf);
	w->z = NULL;
	w->raw.buf = NULL;
}
