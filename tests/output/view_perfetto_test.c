/*
 * The Perfetto writer (merge/perfetto.c).  What it writes is read back by
 * a protobuf decoder written here from the field numbers of Perfetto's
 * published protos (not from the writer's tables), which replays what a
 * viewer would: per sequence the incremental clock, the interned names,
 * the slices' stack and the flows.  The figures it finds are the known
 * answers of the golden traces of view_util.h and agree with our own
 * .prv on random traces.  Golden text: tests/data/perfetto/trace_a.txt
 * is what `protoc --decode=perfetto.protos.Trace` printed for trace A
 * against Perfetto's trace.proto; the same fields read by this decoder
 * must match it packet by packet (so the field numbers and types are
 * Perfetto's, checked by a real protobuf implementation once).
 *
 * The writer compresses its packets (TracePacket.compressed_packets,
 * field 50) when built with libdeflate, unless DWORK_PERFETTO_PLAIN is
 * set: the decoder inflates them with zlib as trace_processor does (one
 * zlib or gzip stream a packet, ending where the bytes end, holding a
 * Trace of plain packets, under 512 KB a packet) and every check runs on
 * both outputs, which must hold the same packets byte for byte.
 */
#include "view_util.h"

#ifdef DW_HAVE_ZLIB
#include <zlib.h>
#endif

#include "output/perfetto_int.h" /* pf_z_available */

#define PD_DEPTH 8
#define PD_SEQS  64
#define PD_NAMES 4096

/* ---- The schema: the fields we write, named as Perfetto's protos ------ */

enum pd_kind { K_U, K_BOOL, K_STR, K_FIX64, K_MSG, K_ENUM_TE, K_ENUM_CLK };

typedef struct pd_field {
	const char *msg; /* the message it is a field of */
	unsigned num;
	const char *name;
	enum pd_kind kind;
	const char *sub; /* K_MSG: its type */
} pd_field;

static const pd_field schema[] = {
    {"Trace", 1, "packet", K_MSG, "TracePacket"},
    {"TracePacket", 8, "timestamp", K_U, NULL},
    {"TracePacket", 10, "trusted_packet_sequence_id", K_U, NULL},
    {"TracePacket", 11, "track_event", K_MSG, "TrackEvent"},
    {"TracePacket", 12, "interned_data", K_MSG, "InternedData"},
    {"TracePacket", 13, "sequence_flags", K_U, NULL},
    {"TracePacket", 6, "clock_snapshot", K_MSG, "ClockSnapshot"},
    {"TracePacket", 59, "trace_packet_defaults", K_MSG, "Defaults"},
    {"TracePacket", 60, "track_descriptor", K_MSG, "TrackDescriptor"},
    {"TracePacket", 87, "first_packet_on_sequence", K_BOOL, NULL},
    {"TrackEvent", 9, "type", K_ENUM_TE, NULL},
    {"TrackEvent", 10, "name_iid", K_U, NULL},
    {"TrackEvent", 4, "debug_annotations", K_MSG, "DebugAnnotation"},
    {"TrackEvent", 36, "flow_ids_old", K_U, NULL},
    {"TrackEvent", 42, "terminating_flow_ids_old", K_U, NULL},
    {"DebugAnnotation", 1, "name_iid", K_U, NULL},
    {"DebugAnnotation", 3, "uint_value", K_U, NULL},
    {"InternedData", 2, "event_names", K_MSG, "Interned"},
    {"InternedData", 3, "debug_annotation_names", K_MSG, "Interned"},
    {"Interned", 1, "iid", K_U, NULL},
    {"Interned", 2, "name", K_STR, NULL},
    {"Defaults", 58, "timestamp_clock_id", K_U, NULL},
    {"Defaults", 11, "track_event_defaults", K_MSG, "TEDefaults"},
    {"TEDefaults", 11, "track_uuid", K_U, NULL},
    {"ClockSnapshot", 1, "clocks", K_MSG, "Clock"},
    {"ClockSnapshot", 2, "primary_trace_clock", K_ENUM_CLK, NULL},
    {"Clock", 1, "clock_id", K_U, NULL},
    {"Clock", 2, "timestamp", K_U, NULL},
    {"Clock", 3, "is_incremental", K_BOOL, NULL},
    {"TrackDescriptor", 1, "uuid", K_U, NULL},
    {"TrackDescriptor", 2, "name", K_STR, NULL},
    {"TrackDescriptor", 3, "process", K_MSG, "Process"},
    {"TrackDescriptor", 4, "thread", K_MSG, "Thread"},
    {"Process", 1, "pid", K_U, NULL},
    {"Process", 6, "process_name", K_STR, NULL},
    {"Thread", 1, "pid", K_U, NULL},
    {"Thread", 2, "tid", K_U, NULL},
    {"Thread", 5, "thread_name", K_STR, NULL},
};

static const pd_field *
field_of(const char *msg, unsigned num)
{
	for (size_t i = 0; i < sizeof schema / sizeof schema[0]; i++)
		if (!strcmp(schema[i].msg, msg) && schema[i].num == num)
			return &schema[i];
	return NULL;
}

/* ---- What the decoder finds --------------------------------------------- */

typedef struct pd_seq {
	bool started;          /* incremental state cleared */
	uint64_t time;         /* the incremental clock */
	char *names[PD_NAMES]; /* interned on this sequence, by iid */
	uint32_t stack[256];   /* open slices: name iids */
	uint64_t begin[256];
	uint32_t depth;
} pd_seq;

typedef struct pd_out {
	bool ok;      /* every byte decoded, every rule held */
	char **lines; /* per packet, sorted fields, "\n"-joined */
	size_t nlines, caplines;
	vu_counts c;
	pd_seq seq[PD_SEQS];
	uint64_t flows_open[256], nflows_open;
	/* the packet being read */
	char buf[8192];
	size_t len;
	uint64_t p_ts, p_seq, te_type, te_name, flow, flow_end;
	bool has_ts, has_te;
	uint32_t in_iid;
	const char *in_name;
	bool in_debug; /* inside interned_data.debug_annotation_names */
	uint64_t end_max;
	/* the packets' bytes as a plain file would hold them */
	uint8_t *plain;
	size_t nplain, capplain;
	uint64_t chunks, top_plain; /* top-level packets: compressed, not */
} pd_out;

static void
bad(pd_out *o, const char *why)
{
	if (o->ok)
		fprintf(stderr, "perfetto decode: %s\n", why);
	o->ok = false;
}

/* Text as protoc prints a string (C escapes, octal for the rest). */
static void
escape(char *out, size_t cap, const uint8_t *s, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n && k + 5 < cap; i++) {
		uint8_t ch = s[i];

		if (ch == '"' || ch == '\\' || ch == '\'') {
			out[k++] = '\\';
			out[k++] = (char)ch;
		} else if (ch == '\n' || ch == '\r' || ch == '\t') {
			out[k++] = '\\';
			out[k++] = ch == '\n' ? 'n' : ch == '\r' ? 'r' : 't';
		} else if (ch < 0x20 || ch >= 0x7f) {
			k += (size_t)snprintf(out + k, cap - k, "\\%03o", ch);
		} else {
			out[k++] = (char)ch;
		}
	}
	out[k] = 0;
}

static void
line(pd_out *o, const char *path, const char *name, const char *val)
{
	int n = snprintf(o->buf + o->len, sizeof o->buf - o->len, "%s%s: %s\n",
	                 path, name, val);

	if (n < 0 || (size_t)n >= sizeof o->buf - o->len)
		bad(o, "packet too large for the test");
	else
		o->len += (size_t)n;
}

static bool
varint(const uint8_t **p, const uint8_t *e, uint64_t *v)
{
	*v = 0;
	for (int s = 0; s < 64 && *p < e; s += 7) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* The semantic side of one scalar field. */
static void
scalar(pd_out *o, const char *msg, const char *name, uint64_t v,
       const uint8_t *s, size_t n)
{
	if (!strcmp(msg, "TracePacket") && !strcmp(name, "timestamp"))
		o->p_ts = v, o->has_ts = true;
	else if (!strcmp(msg, "TracePacket") &&
	         !strcmp(name, "trusted_packet_sequence_id"))
		o->p_seq = v;
	else if (!strcmp(msg, "TrackEvent") && !strcmp(name, "type"))
		o->te_type = v;
	else if (!strcmp(msg, "TrackEvent") && !strcmp(name, "name_iid"))
		o->te_name = v;
	else if (!strcmp(name, "flow_ids_old"))
		o->flow = v;
	else if (!strcmp(name, "terminating_flow_ids_old"))
		o->flow_end = v;
	else if (!strcmp(msg, "Interned") && !strcmp(name, "iid"))
		o->in_iid = (uint32_t)v;
	else if (!strcmp(msg, "Interned") && !strcmp(name, "name"))
		o->in_name = strndup((const char *)s, n);
	else if (!strcmp(msg, "Thread") && !strcmp(name, "thread_name"))
		vu_add(&o->c, "thread_name", 1);
	else if (!strcmp(msg, "Process") && !strcmp(name, "process_name"))
		vu_add(&o->c, "process_name", 1);
}

static void interned_done(pd_out *o);

static void
message(pd_out *o, const char *msg, const uint8_t *p, const uint8_t *e,
        const char *path)
{
	while (p < e && o->ok) {
		uint64_t key, v = 0;
		const pd_field *f;
		char val[4200], sub[256];
		const uint8_t *s = NULL;

		if (!varint(&p, e, &key))
			return bad(o, "truncated key");
		f = field_of(msg, (unsigned)(key >> 3));
		if (!f) {
			fprintf(stderr, "perfetto decode: %s field %u\n", msg,
			        (unsigned)(key >> 3));
			return bad(o, "a field Perfetto's protos do not have");
		}
		if ((key & 7) == 2) {
			if (!varint(&p, e, &v) || v > (uint64_t)(e - p))
				return bad(o, "truncated length");
			s = p;
			p += v;
		} else if ((key & 7) == 1) {
			if (e - p < 8)
				return bad(o, "truncated fixed64");
			for (int i = 7; i >= 0; i--)
				v = v << 8 | p[i];
			p += 8;
		} else if ((key & 7) != 0 || !varint(&p, e, &v)) {
			return bad(o, "bad wire type or varint");
		}
		if ((f->kind == K_MSG || f->kind == K_STR) !=
		        ((key & 7) == 2) ||
		    (f->kind == K_FIX64) != ((key & 7) == 1))
			return bad(o, "wire type against the schema");
		if (f->kind == K_MSG) {
			snprintf(sub, sizeof sub, "%s%s.", path, f->name);
			o->in_debug =
			    !strcmp(f->name, "debug_annotation_names") ||
			    (o->in_debug && !strcmp(f->sub, "Interned"));
			message(o, f->sub, s, s + v, sub);
			if (!strcmp(f->sub, "Interned"))
				interned_done(o);
			continue;
		}
		if (f->kind == K_STR)
			escape(val + 1, sizeof val - 2, s, v),
			    val[0] = '"', strcat(val, "\"");
		else if (f->kind == K_BOOL)
			snprintf(val, sizeof val, "%s", v ? "true" : "false");
		else if (f->kind == K_ENUM_TE)
			snprintf(val, sizeof val, "%s",
			         v == 1   ? "TYPE_SLICE_BEGIN"
			         : v == 2 ? "TYPE_SLICE_END"
			         : v == 3 ? "TYPE_INSTANT"
			                  : "?");
		else if (f->kind == K_ENUM_CLK)
			snprintf(val, sizeof val, "%s",
			         v == 6 ? "BUILTIN_CLOCK_BOOTTIME" : "?");
		else
			snprintf(val, sizeof val, "%llu",
			         (unsigned long long)v);
		line(o, path, f->name, val);
		scalar(o, msg, f->name, v, s, s ? v : 0);
	}
}

static void
interned_done(pd_out *o)
{
	pd_seq *q = o->p_seq < PD_SEQS ? &o->seq[o->p_seq] : NULL;

	if (!o->in_debug && q && o->in_iid && o->in_iid < PD_NAMES &&
	    o->in_name) {
		free(q->names[o->in_iid]);
		q->names[o->in_iid] = (char *)o->in_name;
	} else {
		free((char *)o->in_name);
	}
	o->in_name = NULL;
	o->in_iid = 0;
}

/* A track event's effect on its sequence. */
static void
replay(pd_out *o)
{
	pd_seq *q;
	char key[90];
	const char *name;

	if (!o->p_seq || o->p_seq >= PD_SEQS)
		return bad(o, "event on no sequence");
	q = &o->seq[o->p_seq];
	if (!q->started || !o->has_ts)
		return bad(o, "event before its sequence's state or time");
	q->time += o->p_ts; /* the incremental clock */
	if (q->time > o->end_max)
		o->end_max = q->time;
	name = o->te_name < PD_NAMES ? q->names[o->te_name] : NULL;
	if (o->te_type != 2 && !name)
		return bad(o, "a name not interned on its sequence");
	if (o->te_type == 1) {
		if (q->depth == 256)
			return bad(o, "too deep");
		q->stack[q->depth] = (uint32_t)o->te_name;
		q->begin[q->depth++] = q->time;
	} else if (o->te_type == 2) {
		if (!q->depth)
			return bad(o, "an end without a begin");
		q->depth--;
		name = q->names[q->stack[q->depth]];
		snprintf(key, sizeof key, "ns.%s", name);
		vu_add(&o->c, key, (long long)(q->time - q->begin[q->depth]));
		snprintf(key, sizeof key, "n.%s", name);
		vu_add(&o->c, key, 1);
		vu_add(&o->c, "slices", 1);
	} else if (o->te_type == 3) {
		vu_add(&o->c, "instants", 1);
		snprintf(key, sizeof key, "i.%s", name);
		vu_add(&o->c, key, 1);
	} else {
		return bad(o, "an event type we do not write");
	}
	if (o->flow) {
		vu_add(&o->c, "flows", 1);
		if (o->nflows_open < 256)
			o->flows_open[o->nflows_open++] = o->flow;
	}
	if (o->flow_end) {
		for (uint64_t i = 0; i < o->nflows_open; i++)
			if (o->flows_open[i] == o->flow_end) {
				o->flows_open[i] =
				    o->flows_open[--o->nflows_open];
				vu_add(&o->c, "flows_paired", 1);
				return;
			}
		bad(o, "a flow ends that did not begin");
	}
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The packet's lines, sorted (protoc prints by field number, we read in
 * wire order). */
static char *
sorted(char *text)
{
	char *v[512], *s, *out;
	size_t n = 0, len = strlen(text);

	for (s = strtok(text, "\n"); s && n < 512; s = strtok(NULL, "\n"))
		v[n++] = s;
	qsort(v, n, sizeof *v, cmp_str);
	out = malloc(len + 2);
	out[0] = 0;
	for (size_t i = 0; i < n; i++)
		strcat(strcat(out, v[i]), "\n");
	return out;
}

static uint8_t *
slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b = NULL;
	long len;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (b = malloc((size_t)len + 1)) &&
	    fread(b, 1, (size_t)len, f) == (size_t)len)
		*n = (size_t)len;
	else
		free(b), b = NULL;
	fclose(f);
	return b;
}

static void
plain_add(pd_out *o, const uint8_t *s, size_t n)
{
	if (o->nplain + n > o->capplain) {
		o->capplain = 2 * (o->nplain + n);
		o->plain = realloc(o->plain, o->capplain);
		REQUIRE(o->plain);
	}
	memcpy(o->plain + o->nplain, s, n);
	o->nplain += n;
}

/* One plain packet (its bytes from p to e). */
static void
packet(pd_out *o, const uint8_t *p, const uint8_t *e)
{
	o->len = 0;
	o->has_ts = o->has_te = false;
	o->p_seq = o->te_type = o->te_name = o->flow = o->flow_end = 0;
	message(o, "TracePacket", p, e, "packet.");
	if (strstr(o->buf, "packet.sequence_flags: 1\n") && o->p_seq < PD_SEQS)
		o->seq[o->p_seq].started = true;
	if (strstr(o->buf, "packet.track_event.type:"))
		replay(o);
	vu_add(&o->c, "packets", 1);
	o->buf[o->len] = 0;
	if (o->nlines == o->caplines) { /* doubled: 100k packets a trace */
		o->caplines = o->caplines ? 2 * o->caplines : 256;
		o->lines = realloc(o->lines, o->caplines * sizeof *o->lines);
		REQUIRE(o->lines);
	}
	o->lines[o->nlines++] = sorted(o->buf);
}

/* A packet's compressed_packets (field 50) as the only field: the bytes
 * from *s, *n of them; false when it is not one. */
static bool
compressed(const uint8_t *p, const uint8_t *e, const uint8_t **s, size_t *n)
{
	uint64_t key, len;

	if (!varint(&p, e, &key) || key != (50 << 3 | 2) ||
	    !varint(&p, e, &len) || len != (uint64_t)(e - p))
		return false;
	*s = p;
	*n = (size_t)len;
	return true;
}

#ifdef DW_HAVE_ZLIB
/* The bytes inflated as trace_processor's gzip_decompressor.cc does
 * (zlib or gzip, 32 + MAX_WBITS) and DecompressToBuffer's single frame:
 * one stream that ends where the bytes end.  NULL when it is not. */
static uint8_t *
inflate_all(const uint8_t *s, size_t n, size_t *out)
{
	z_stream z = {0};
	size_t cap = 4 * n + 4096;
	uint8_t *b = malloc(cap);
	int r = Z_OK;

	*out = 0;
	if (!b || inflateInit2(&z, 32 + MAX_WBITS) != Z_OK) {
		free(b);
		return NULL;
	}
	z.next_in = (Bytef *)s;
	z.avail_in = (uInt)n;
	while (r == Z_OK) {
		if (*out == cap) {
			cap *= 2;
			b = realloc(b, cap);
			REQUIRE(b);
		}
		z.next_out = b + *out;
		z.avail_out = (uInt)(cap - *out);
		r = inflate(&z, Z_NO_FLUSH);
		*out = cap - z.avail_out;
	}
	inflateEnd(&z);
	if (r != Z_STREAM_END || z.avail_in) {
		free(b);
		return NULL;
	}
	return b;
}
#endif

/* A Trace's packets from p to e; inner: inside compressed_packets. */
static void
packets(pd_out *o, const uint8_t *p, const uint8_t *e, bool inner)
{
	while (o->ok && p < e) {
		const uint8_t *at = p, *s;
		uint64_t key, len;
		size_t n;

		if (!varint(&p, e, &key) || key != (1 << 3 | 2) ||
		    !varint(&p, e, &len) || len > (uint64_t)(e - p))
			return bad(o, "not a Trace of packets");
		if (!compressed(p, p + len, &s, &n)) {
			plain_add(o, at, (size_t)(p + len - at));
			packet(o, p, p + len);
			o->top_plain += !inner;
			p += len;
			continue;
		}
		/* trace_processor stops on compressed packets inside
		 * compressed ones (proto_trace_reader.cc) */
		if (inner)
			return bad(o,
			           "compressed packets inside compressed ones");
		if (p + len - at >= 512 * 1024)
			return bad(o, "a compressed packet of 512 KB or more");
#ifdef DW_HAVE_ZLIB
		{
			size_t m;
			uint8_t *b = inflate_all(s, n, &m);

			if (!b)
				return bad(o, "compressed_packets not one zlib "
				              "stream");
			o->chunks++;
			packets(o, b, b + m, true);
			free(b);
		}
#else
		(void)s, (void)n;
		return bad(o, "compressed packets, and no zlib to read them");
#endif
		p += len;
	}
}

static void
decode(const char *path, pd_out *o)
{
	size_t n = 0;
	uint8_t *b = slurp(path, &n);

	memset(o, 0, sizeof *o);
	o->ok = b != NULL;
	if (b)
		packets(o, b, b + n, false);
	for (size_t i = 0; i < PD_SEQS; i++) {
		if (o->seq[i].depth)
			bad(o, "a slice left open at the end");
		for (size_t k = 0; k < PD_NAMES; k++)
			free(o->seq[i].names[k]);
	}
	vu_add(&o->c, "bytes", (long long)n);
	free(b);
}

static void
pd_free(pd_out *o)
{
	for (size_t i = 0; i < o->nlines; i++)
		free(o->lines[i]);
	free(o->lines);
	free(o->plain);
}

/* protoc's text: the scalar fields with their paths, packet by packet. */
static size_t
golden(const char *path, char ***out)
{
	FILE *f = fopen(path, "r");
	char l[4400], stack[PD_DEPTH][64], buf[8192];
	int depth = 0;
	size_t n = 0, len = 0;

	*out = NULL;
	if (!f)
		return 0;
	while (fgets(l, sizeof l, f)) {
		char *s = l + strspn(l, " ");
		size_t k = strlen(s);

		if (k && s[k - 1] == '\n')
			s[--k] = 0;
		if (k > 2 && !strcmp(s + k - 2, " {")) {
			s[k - 2] = 0;
			if (depth < PD_DEPTH)
				snprintf(stack[depth++], 64, "%s", s);
			if (depth == 1)
				len = 0, buf[0] = 0;
		} else if (!strcmp(s, "}")) {
			if (--depth == 0) {
				*out = realloc(*out, (n + 1) * sizeof **out);
				(*out)[n++] = sorted(buf);
			}
		} else if (depth > 0) {
			for (int i = 0; i < depth && len < sizeof buf - 200;
			     i++)
				len += (size_t)snprintf(buf + len,
				                        sizeof buf - len, "%s.",
				                        stack[i]);
			len += (size_t)snprintf(buf + len, sizeof buf - len,
			                        "%s\n", s);
		}
	}
	fclose(f);
	return n;
}

/* ---- The tests ----------------------------------------------------------- */

/* The outputs checked: plain (DWORK_PERFETTO_PLAIN=1), the default
 * (compressed when the writer can) and DWORK_PERFETTO_PLAIN=0 (the
 * default too). */
enum { M_PLAIN, M_DEFAULT, M_ZERO, NMODES };
static const char *const mode_name[] = {"plain", "default", "PLAIN=0"};

static void
set_mode(int m)
{
	if (m == M_DEFAULT)
		unsetenv("DWORK_PERFETTO_PLAIN");
	else
		setenv("DWORK_PERFETTO_PLAIN", m == M_PLAIN ? "1" : "0", 1);
}

/* The file's top-level packets are what mode m writes: plain ones only,
 * or (when this build compresses) compressed ones only. */
static void
check_mode(int m, const pd_out *o)
{
	if (m == M_PLAIN || !pf_z_available()) {
		CHECK_EQ_U64(o->chunks, 0);
		CHECK(o->top_plain > 0);
	} else {
		CHECK(o->chunks > 0);
		CHECK_EQ_U64(o->top_plain, 0);
	}
}

/* The same packets, byte for byte, as the plain output's. */
static void
check_same(const pd_out *o, const pd_out *plain)
{
	CHECK_EQ_U64(o->nplain, plain->nplain);
	CHECK(o->nplain == plain->nplain &&
	      !memcmp(o->plain, plain->plain, o->nplain));
}

static void
check_trace_a(const pd_out *o)
{
	char gold[800];
	char **g;
	size_t ng;

	CHECK(o->ok);
	/* the known answers (view_util.h) */
	CHECK_EQ_U64(vu_get(&o->c, "ns.Running"), 1600);
	CHECK_EQ_U64(vu_get(&o->c, "ns.Waiting a message"), 100);
	CHECK_EQ_U64(vu_get(&o->c, "ns.Idle"), 300);
	CHECK_EQ_U64(vu_get(&o->c, "n.compute"), 2);
	CHECK_EQ_U64(vu_get(&o->c, "n.inner"), 1);
	CHECK_EQ_U64(vu_get(&o->c, "ns.compute"), 500 + 600);
	CHECK_EQ_U64(vu_get(&o->c, "ns.inner"), 100);
	CHECK_EQ_U64(vu_get(&o->c, "slices"), 11 + 3);
	CHECK_EQ_U64(vu_get(&o->c, "i.Phase: five \"5\""), 1);
	CHECK_EQ_U64(vu_get(&o->c, "i.Event type 1001"), 1);
	CHECK_EQ_U64(vu_get(&o->c, "instants"), 2 + 2);
	CHECK_EQ_U64(vu_get(&o->c, "flows"), 1);
	CHECK_EQ_U64(vu_get(&o->c, "flows_paired"), 1);
	CHECK_EQ_U64(vu_get(&o->c, "thread_name"), 2);
	CHECK_EQ_U64(vu_get(&o->c, "process_name"), 2);
	CHECK_EQ_U64(o->end_max, 1000);
	/* the same fields as Perfetto's protos, read by protoc (from the
	 * plain output; the compressed one holds the same packets) */
	snprintf(gold, sizeof gold, "%s/trace_a.txt", PF_DATA_DIR);
	ng = golden(gold, &g);
	CHECK(ng > 0);
	CHECK_EQ_U64(ng, o->nlines);
	for (size_t i = 0; i < ng && i < o->nlines; i++)
		if (strcmp(g[i], o->lines[i])) {
			fprintf(stderr,
			        "packet %zu: protoc read\n%swe read\n%s", i,
			        g[i], o->lines[i]);
			tu_failures++;
			break;
		}
	for (size_t i = 0; i < ng; i++)
		free(g[i]);
	free(g);
}

static void
test_trace_a(void)
{
	const char *dir = tu_tmpdir("view-pf-a");
	char prefix[600], pf[700];
	rd_errlist errs;
	mg_report rep;
	pd_out o[NMODES];

	vu_trace_a(dir);
	snprintf(prefix, sizeof prefix, "%s/out", dir);
	snprintf(pf, sizeof pf, "%s.pftrace", prefix);
	for (int m = 0; m < NMODES; m++) {
		set_mode(m);
		rd_errlist_init(&errs, stderr);
		CHECK(vu_merge(dir, prefix, "perfetto", &rep, &errs) == DW_OK);
		CHECK_EQ_U64(rd_errlist_count(&errs), 0);
		decode(pf, &o[m]);
		check_trace_a(&o[m]);
		check_mode(m, &o[m]);
		check_same(&o[m], &o[M_PLAIN]);
		rd_errlist_free(&errs);
	}
	for (int m = 0; m < NMODES; m++)
		pd_free(&o[m]);
	unsetenv("DWORK_PERFETTO_PLAIN");
	tu_rmtree(dir);
}

/* A trace of n steps a thread (vu_trace_random_n) merged into Paraver
 * and Perfetto in each mode: the figures a viewer finds equal our
 * .prv's, and the packets are the plain output's.  Returns the
 * compressed packets of the default output. */
static uint64_t
random_trace(uint64_t seed, int n)
{
	static const struct {
		const char *prv, *name;
	} st[] = {{"state.0", "ns.Idle"},
	          {"state.1", "ns.Running"},
	          {"state.3", "ns.Waiting a message"},
	          {"state.5", "ns.Synchronization"}};
	const char *dir = tu_tmpdir("view-pf-r");
	char prefix[600], pf[700];
	pd_out o[NMODES];
	uint64_t chunks;

	vu_trace_random_n(dir, seed, n);
	snprintf(prefix, sizeof prefix, "%s/out", dir);
	snprintf(pf, sizeof pf, "%s.pftrace", prefix);
	for (int m = M_PLAIN; m <= M_DEFAULT; m++) {
		rd_errlist errs;
		mg_report rep;
		vu_counts prv;

		set_mode(m);
		rd_errlist_init(&errs, stderr);
		CHECK(vu_merge(dir, prefix, "prv,perfetto", &rep, &errs) ==
		      DW_OK);
		vu_prv_counts(prefix, &prv);
		decode(pf, &o[m]);
		CHECK(o[m].ok);
		check_mode(m, &o[m]);
		check_same(&o[m], &o[M_PLAIN]);
		CHECK_EQ_U64(vu_get(&o[m].c, "flows"), vu_get(&prv, "comms"));
		CHECK_EQ_U64(vu_get(&o[m].c, "flows_paired"),
		             vu_get(&prv, "comms"));
		CHECK_EQ_U64(vu_get(&o[m].c, "instants"),
		             vu_get(&prv, "events") +
		                 2 * vu_get(&prv, "comms"));
		for (size_t i = 0; i < sizeof st / sizeof st[0]; i++)
			CHECK_EQ_U64(vu_get(&o[m].c, st[i].name),
			             vu_get(&prv, st[i].prv));
		printf("perfetto: seed %llu, %s: %lld packets (%llu "
		       "compressed packets), %lld bytes, %.1f bytes per "
		       "record\n",
		       (unsigned long long)seed, mode_name[m],
		       vu_get(&o[m].c, "packets"),
		       (unsigned long long)o[m].chunks,
		       vu_get(&o[m].c, "bytes"),
		       (double)vu_get(&o[m].c, "bytes") /
		           (double)(rep.states + rep.events + rep.comms + 1));
		rd_errlist_free(&errs);
	}
	chunks = o[M_DEFAULT].chunks;
	pd_free(&o[M_PLAIN]);
	pd_free(&o[M_DEFAULT]);
	unsetenv("DWORK_PERFETTO_PLAIN");
	tu_rmtree(dir);
	return chunks;
}

static void
test_random(void)
{
	for (uint64_t seed = 1; seed <= 4; seed++)
		random_trace(seed, 300);
	/* 80,000 records, about 1.6 MB of packets: several compressed
	 * packets, names interned and clocks carried across them */
	if (pf_z_available())
		CHECK(random_trace(5, 20000) > 1);
	else
		random_trace(5, 20000);
}

/* A damaged input merges up to the cut; a bad output leaves nothing. */
static void
test_errors(void)
{
	for (int m = M_PLAIN; m <= M_DEFAULT; m++) {
		const char *dir = tu_tmpdir("view-pf-bad");
		char prefix[600], path[1200];
		rd_errlist errs;
		mg_report rep;
		pd_out o;

		set_mode(m);
		vu_trace_a(dir);
		snprintf(path, sizeof path,
		         "%s/gold.100.00000000000000a1.0.dwt", dir);
		REQUIRE(truncate(path, FMT_HEADER_PAGE + 64 + 3 * 16 + 5) == 0);
		snprintf(prefix, sizeof prefix, "%s/out", dir);
		rd_errlist_init(&errs, NULL);
		CHECK(vu_merge(dir, prefix, "perfetto", &rep, &errs) == DW_OK);
		CHECK(rd_errlist_count(&errs) > 0);
		snprintf(path, sizeof path, "%s.pftrace", prefix);
		decode(path, &o);
		CHECK(o.ok);
		check_mode(m, &o);
		CHECK(vu_get(&o.c, "slices") > 0);
		pd_free(&o);
		snprintf(prefix, sizeof prefix, "%s/no/such/dir/out", dir);
		CHECK(vu_merge(dir, prefix, "perfetto", &rep, &errs) != DW_OK);
		snprintf(path, sizeof path, "%s.pftrace.tmp", prefix);
		CHECK(!vu_exists(path));
		rd_errlist_free(&errs);
		tu_rmtree(dir);
	}
	unsetenv("DWORK_PERFETTO_PLAIN");
}

int
main(void)
{
	printf("perfetto: this build %s its packets\n",
	       pf_z_available() ? "compresses" : "does not compress");
	test_trace_a();
	test_random();
	test_errors();
	return tu_report("view_perfetto");
}
