/*
 * References that travel: the owner's count of holders per process, and
 * the bytes a reference becomes when it is handed to another process
 * (docs/wire-protocol.md, "References").
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/rt.h"
#include "runtime/wire_err.h"
#include "runtime/work.h"

#define REF_MAGIC     "DWRF"
#define REF_VALUE_MAX (1u << 30)

int
holders_add(struct holders *h, int pid, int n)
{
	for (int i = 0; i < h->n; i++)
		if (h->pid[i] == pid) {
			h->cnt[i] += n;
			h->total += n;
			return 0;
		}
	if (h->n == h->cap) {
		int cap = h->cap ? 2 * h->cap : 4;
		int *p = realloc(h->pid, (size_t)cap * sizeof *p);
		if (p)
			h->pid = p;
		int *c = p ? realloc(h->cnt, (size_t)cap * sizeof *c) : NULL;
		if (!c)
			return -1;
		h->cnt = c;
		h->cap = cap;
	}
	h->pid[h->n] = pid;
	h->cnt[h->n++] = n;
	h->total += n;
	return 0;
}

static void
holders_remove(struct holders *h, int i)
{
	h->total -= h->cnt[i];
	h->n--;
	h->pid[i] = h->pid[h->n];
	h->cnt[i] = h->cnt[h->n];
}

int
holders_del(struct holders *h, int pid)
{
	for (int i = 0; i < h->n; i++)
		if (h->pid[i] == pid) {
			if (h->cnt[i] == 1)
				holders_remove(h, i);
			else
				h->cnt[i]--, h->total--;
			return 0;
		}
	return -1;
}

void
holders_drop(struct holders *h, int pid)
{
	for (int i = 0; i < h->n; i++)
		if (h->pid[i] == pid) {
			holders_remove(h, i);
			return;
		}
}

void
holders_free(struct holders *h)
{
	free(h->pid);
	free(h->cnt);
	memset(h, 0, sizeof *h);
}

/*
 * Layout: "DWRF", u8 kind, u8 flags (1 value follows, 2 it is an error),
 * u16 0, u32 where, u32 whence, u64 id, u32 to, u32 error code, then the
 * value (or the error message).
 */
int
ref_encode(const struct ref *r, void **bytes, size_t *len)
{
	size_t vl = r->has_value ? r->vlen : 0;
	unsigned char *p = malloc(REF_BYTES + vl);
	if (!p)
		return DW_ENOMEM;
	memcpy(p, REF_MAGIC, 4);
	p[4] = (unsigned char)r->kind;
	p[5] = (unsigned char)((r->has_value ? 1 : 0) | (r->err ? 2 : 0));
	wire_put_u16(p + 6, 0);
	wire_put_u32(p + 8, (uint32_t)r->where);
	wire_put_u32(p + 12, (uint32_t)r->whence);
	wire_put_u64(p + 16, r->id);
	wire_put_u32(p + 24, (uint32_t)r->to);
	wire_put_u32(p + 28, wire_err_put(r->err));
	if (vl)
		memcpy(p + REF_BYTES, r->value, vl);
	*bytes = p;
	*len = REF_BYTES + vl;
	return DW_OK;
}

int
ref_decode(const void *bytes, size_t len, int kind, struct ref *r)
{
	const unsigned char *p = bytes;
	memset(r, 0, sizeof *r);
	if (!p || len < REF_BYTES || memcmp(p, REF_MAGIC, 4) || p[4] != kind ||
	    (p[5] & ~3u) || wire_get_u16(p + 6) ||
	    len - REF_BYTES > REF_VALUE_MAX) {
		rt_set_err(0, "not a dwork %s reference (%zu bytes)",
		           kind == REF_CHANNEL ? "channel" : "future", len);
		return DW_EFORMAT;
	}
	r->kind = kind;
	r->has_value = p[5] & 1;
	r->where = (int)wire_get_u32(p + 8);
	r->whence = (int)wire_get_u32(p + 12);
	r->id = wire_get_u64(p + 16);
	r->to = (int)wire_get_u32(p + 24);
	r->err =
	    (p[5] & 2) ? wire_err_get(wire_get_u32(p + 28), DW_EREMOTE) : 0;
	r->value = p + REF_BYTES;
	r->vlen = len - REF_BYTES;
	if ((p[5] & 2) && r->err == DW_OK)
		r->err = DW_EREMOTE;
	if (r->where < 1 || (!r->has_value && r->vlen)) {
		rt_set_err(0, "malformed reference");
		return DW_EFORMAT;
	}
	if (r->to != dw_myid()) {
		rt_set_err(0,
		           "this reference was handed to process %d, not "
		           "to process %d",
		           r->to, dw_myid());
		return DW_EINVAL;
	}
	return DW_OK;
}
