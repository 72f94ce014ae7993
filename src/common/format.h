/*
 * Intermediate trace file format: constants and byte-level helpers shared
 * by the tracer (writer) and the reader.  docs/trace-format.md is the
 * specification; this header must agree with it.
 */
#ifndef DW_COMMON_FORMAT_H
#define DW_COMMON_FORMAT_H

#include <stdint.h>
#include <string.h>

#define FMT_MAGIC_PROCESS "DWTPROC" /* 8 bytes with the NUL */
#define FMT_MAGIC_THREAD  "DWTTHRD"
#define FMT_VERSION_MAJOR 1
#define FMT_VERSION_MINOR                                                      \
	2 /* 1.1: THREAD_END, PROCESS_NAME, boot id;                           \
	    1.2: an event in a state push or pop */
#define FMT_BOM         0x01020304u
#define FMT_HEADER_PAGE 4096u /* space the header occupies in the file */

enum fmt_file_kind { FMT_FILE_PROCESS = 1, FMT_FILE_THREAD = 2 };
enum fmt_clock_kind { FMT_CLOCK_TSC = 1, FMT_CLOCK_MONO_RAW = 2 };
enum fmt_flags {
	FMT_FLAG_ENDED = 1u,     /* dwt_fini ran */
	FMT_FLAG_CIRCULAR = 2u,  /* circular mode: segments may be reused */
	FMT_FLAG_TRIMMED = 4u,   /* the last segment of the file was cut
	                            after its last record by dwt_fini */
	FMT_FLAG_OWN_CLOCK = 8u, /* the clock is this process's own (the
	                            test skew hook): it shares no host's */
};

/* File header field offsets (both kinds). */
enum fmt_hdr_off {
	FMT_H_MAGIC = 0,         /* 8 bytes */
	FMT_H_VMAJOR = 8,        /* u16 */
	FMT_H_VMINOR = 10,       /* u16 */
	FMT_H_SIZE = 12,         /* u32: bytes of defined header fields */
	FMT_H_BOM = 16,          /* u32: 0x01020304 in the writer's order */
	FMT_H_KIND = 20,         /* u32: enum fmt_file_kind */
	FMT_H_UID = 24,          /* u64: process uid (random per process) */
	FMT_H_PID = 32,          /* u32 */
	FMT_H_PPID = 36,         /* u32 */
	FMT_H_TASK = 40,         /* u32 */
	FMT_H_NTASKS = 44,       /* u32 */
	FMT_H_THREAD = 48,       /* u32 (thread files) */
	FMT_H_NTHREADS = 52,     /* u32 */
	FMT_H_CLOCK = 56,        /* u32: enum fmt_clock_kind */
	FMT_H_FLAGS = 60,        /* u32: enum fmt_flags */
	FMT_H_INIT_TICKS = 64,   /* u64 */
	FMT_H_INIT_NS = 72,      /* u64: CLOCK_MONOTONIC_RAW ns */
	FMT_H_INIT_REAL_NS = 80, /* u64: CLOCK_REALTIME ns (the date) */
	FMT_H_TICKS_PER_S = 88,  /* u64: estimated at init */
	FMT_H_SEGMENT_SIZE = 96, /* u64 */
	FMT_H_END_TICKS = 104,   /* u64: 0 until fini */
	FMT_H_END_NS = 112,      /* u64 */
	FMT_H_LOST_DISK = 120,   /* u64 */
	FMT_H_LOST_CAP = 128,    /* u64 */
	FMT_H_SEG_REUSED = 136,  /* u64 */
	FMT_H_RECORDS = 144,     /* u64: records stored, updated at segment
	                            switches and fini */
	FMT_H_HOST = 152,        /* char[64], NUL padded */
	FMT_H_PROGRAM = 216,     /* char[64], NUL padded */
	FMT_H_END_1_0 = 280,     /* header_size of version 1.0 */
	FMT_H_BOOT_ID = 280,     /* char[40]: the host's boot id, NUL padded
	                            (1.1) */
	FMT_H_END = 320,         /* header_size written (1.1) */
};

/* Segment header (thread files). */
#define FMT_SEG_MAGIC 0x47535744u /* "DWSG" little-endian */
enum fmt_seg_off {
	FMT_S_MAGIC = 0,   /* u32, written last */
	FMT_S_SIZE = 4,    /* u32: segment header size (64) */
	FMT_S_SEQ = 8,     /* u64: 1, 2, 3 ... in writing order */
	FMT_S_TICKS = 16,  /* u64: calibration pair, and the time base */
	FMT_S_NS = 24,     /* u64 */
	FMT_S_THREAD = 32, /* u32 */
	FMT_S_END = 64,
};

/* Records: 16 bytes, w0 = kind << 28 | delta, a (u32), b (u64). */
#define FMT_REC_SIZE    16u
#define FMT_KIND_SHIFT  28
#define FMT_DELTA_MASK  0x0fffffffu
#define FMT_DELTA_LIMIT (1u << 28)
enum fmt_rec_kind {
	FMT_R_EVENT = 1,      /* a type, b value */
	FMT_R_STATE_PUSH = 2, /* a state; b 0, or (1.2) an event at the same
	                         time: its type << 32 | its 32-bit value */
	FMT_R_STATE_POP = 3,  /* a 0; or (1.2) a an event's type, b its
	                         value, the event coming before the pop */
	FMT_R_FUNC_ENTER = 4, /* b address */
	FMT_R_FUNC_EXIT = 5,  /* b address */
	FMT_R_COMM = 6,       /* 2 slots: a tag, b id; then a partner task,
	                         b size, delta bits: flags | thread << 3 */
	FMT_R_SYNC = 7,       /* 2 slots: a ref task, b local ns; then
	                         a rtt ns (saturated), b offset ns (i64) */
	FMT_R_NEWBASE = 8,    /* b absolute ticks; delta 0 */
	FMT_R_THREAD_END = 9, /* the thread exited (its last record); a 0,
	                         b 0 (since 1.1) */
	FMT_R_CONT = 15,      /* second slot of a 2-slot record */
};
#define FMT_COMM_THREAD_SHIFT 3
#define FMT_COMM_THREAD_ANY   0xffffffu

/* Process file label records (TLV after the header page). */
#define FMT_TLV_MAX 65536u /* largest payload a reader accepts */
enum fmt_tlv_kind {
	FMT_L_TYPE = 1,        /* u32 type, u32 0, name */
	FMT_L_VALUE = 2,       /* u32 type, u32 0, u64 value, name */
	FMT_L_STATE = 3,       /* u32 state, u32 rgb (0xffffffff none), name */
	FMT_L_FUNC = 4,        /* u64 address, name */
	FMT_L_THREAD_NAME = 5, /* u32 thread, u32 0, name */
	FMT_L_MODULE = 6,      /* u64 start, u64 end, u64 offset, path */
	FMT_L_CALIB = 7,       /* u64 ticks, u64 ns */
	FMT_L_IDENTITY = 8,    /* u64 ticks, u32 task, u32 ntasks */
	FMT_L_END = 9,         /* u64 ticks, u64 ns */
	FMT_L_PROCESS_NAME = 10, /* u32 0, u32 0, name (since 1.1) */
	FMT_L_FUNC_LINE = 11,    /* u64 address, u32 line, u32 0, source file
	                            path (since 1.1) */
};

static inline void
fmt_put_u16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static inline void
fmt_put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline void
fmt_put_u64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint16_t
fmt_get_u16(const unsigned char *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t
fmt_get_u32(const unsigned char *p)
{
	/* Spelled out so that compilers make it one load (a loop is not). */
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t
fmt_get_u64(const unsigned char *p)
{
	return (uint64_t)fmt_get_u32(p) | (uint64_t)fmt_get_u32(p + 4) << 32;
}

#endif
