/* Process files: the header and the label records (TLVs) after it. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tracefile/reader_int.h"

#define TLV_HEAD 8u

static uint64_t
round8(uint64_t n)
{
	return (n + 7) & ~(uint64_t)7;
}

/* Room for one more element of size in *arr (n used, *cap allocated). */
static bool
grow(void **arr, size_t *cap, size_t n, size_t size)
{
	size_t ncap;
	void *p;

	if (n < *cap)
		return true;
	ncap = *cap ? *cap * 2 : 16;
	if (ncap > SIZE_MAX / size)
		return false;
	p = realloc(*arr, ncap * size);
	if (!p)
		return false;
	*arr = p;
	*cap = ncap;
	return true;
}

/* Allocation sizes of the tables while they are being filled. */
struct caps {
	size_t types, values, states, funcs, lines, threads, modules, calib,
	    ident;
};

/* ---- Decoding one TLV ------------------------------------------------ */

/* Payload bytes a kind needs before its name (0: unknown kind). */
static uint32_t
tlv_fixed(uint32_t kind)
{
	switch (kind) {
	case FMT_L_TYPE:
	case FMT_L_STATE:
	case FMT_L_FUNC:
	case FMT_L_THREAD_NAME:
	case FMT_L_PROCESS_NAME:
		return 8;
	case FMT_L_VALUE:
	case FMT_L_CALIB:
	case FMT_L_IDENTITY:
	case FMT_L_END:
		return 16;
	case FMT_L_MODULE:
		return 24;
	case FMT_L_FUNC_LINE:
		return 16;
	default:
		return 0;
	}
}

static bool
tlv_names(rd_proc *p, struct caps *c, uint32_t kind, const unsigned char *d,
          uint32_t len, uint64_t off)
{
	uint32_t fixed = tlv_fixed(kind);
	char *name = rd_strndup(d + fixed, len - fixed);

	if (!name)
		return false;
	switch (kind) {
	case FMT_L_TYPE:
		if (!grow((void **)&p->types, &c->types, p->ntypes,
		          sizeof *p->types))
			break;
		p->types[p->ntypes++] = (rd_type_label){
		    .type = fmt_get_u32(d), .name = name, .offset = off};
		return true;
	case FMT_L_VALUE:
		if (!grow((void **)&p->values, &c->values, p->nvalues,
		          sizeof *p->values))
			break;
		p->values[p->nvalues++] =
		    (rd_value_label){.type = fmt_get_u32(d),
		                     .value = fmt_get_u64(d + 8),
		                     .name = name,
		                     .offset = off};
		return true;
	case FMT_L_STATE:
		if (!grow((void **)&p->states, &c->states, p->nstates,
		          sizeof *p->states))
			break;
		p->states[p->nstates++] =
		    (rd_state_label){.state = fmt_get_u32(d),
		                     .rgb = fmt_get_u32(d + 4),
		                     .name = name,
		                     .offset = off};
		return true;
	case FMT_L_FUNC:
		if (!grow((void **)&p->funcs, &c->funcs, p->nfuncs,
		          sizeof *p->funcs))
			break;
		p->funcs[p->nfuncs++] = (rd_func_label){
		    .addr = fmt_get_u64(d), .name = name, .offset = off};
		return true;
	case FMT_L_FUNC_LINE:
		if (!grow((void **)&p->lines, &c->lines, p->nlines,
		          sizeof *p->lines))
			break;
		p->lines[p->nlines++] =
		    (rd_line_label){.addr = fmt_get_u64(d),
		                    .line = fmt_get_u32(d + 8),
		                    .name = name,
		                    .offset = off};
		return true;
	case FMT_L_THREAD_NAME:
		if (!grow((void **)&p->threads, &c->threads, p->nthreads,
		          sizeof *p->threads))
			break;
		p->threads[p->nthreads++] = (rd_thread_label){
		    .thread = fmt_get_u32(d), .name = name, .offset = off};
		return true;
	case FMT_L_PROCESS_NAME:
		free(p->pname); /* the latest wins */
		p->pname = name;
		return true;
	default: /* FMT_L_MODULE */
		if (!grow((void **)&p->modules, &c->modules, p->nmodules,
		          sizeof *p->modules))
			break;
		p->modules[p->nmodules++] =
		    (rd_module){.start = fmt_get_u64(d),
		                .end = fmt_get_u64(d + 8),
		                .foff = fmt_get_u64(d + 16),
		                .path = name,
		                .offset = off};
		return true;
	}
	free(name);
	return false;
}

static bool
tlv_times(rd_proc *p, struct caps *c, uint32_t kind, const unsigned char *d)
{
	rd_pair pair = {fmt_get_u64(d), fmt_get_u64(d + 8)};

	switch (kind) {
	case FMT_L_CALIB:
		if (!grow((void **)&p->calib, &c->calib, p->ncalib,
		          sizeof *p->calib))
			return false;
		p->calib[p->ncalib++] = pair;
		return true;
	case FMT_L_IDENTITY:
		if (!grow((void **)&p->ident, &c->ident, p->nident,
		          sizeof *p->ident))
			return false;
		p->ident[p->nident++] =
		    (rd_identity){.ticks = pair.ticks,
		                  .task = fmt_get_u32(d + 8),
		                  .ntasks = fmt_get_u32(d + 12)};
		return true;
	default: /* FMT_L_END */
		p->has_end = true;
		p->end = pair;
		return true;
	}
}

/* Applies the TLV at off; DW_EFORMAT (reported) when it is corrupt. */
static dw_err
tlv_apply(rd_proc *p, struct caps *c, const char *name, uint64_t off,
          const unsigned char *tlv, rd_errlist *errs)
{
	uint32_t kind = fmt_get_u32(tlv), len = fmt_get_u32(tlv + 4);
	uint32_t fixed = tlv_fixed(kind);
	const unsigned char *d = tlv + TLV_HEAD;
	bool ok;

	if (fixed == 0)
		return DW_OK; /* unknown kind: skipped */
	if (len < fixed) {
		rd_report(errs, name, off,
		          "label record of kind %u has a payload of %u bytes, "
		          "too short; labels after it ignored",
		          kind, len);
		return DW_EFORMAT;
	}
	if (kind == FMT_L_IDENTITY && (fmt_get_u32(d + 8) >= RD_TASK_MAX ||
	                               fmt_get_u32(d + 12) > RD_TASK_MAX)) {
		rd_report(errs, name, off,
		          "identity label with task %u of %u is out of range "
		          "(at most %u tasks); ignored",
		          fmt_get_u32(d + 8), fmt_get_u32(d + 12), RD_TASK_MAX);
		return DW_OK;
	}
	if (kind == FMT_L_CALIB || kind == FMT_L_IDENTITY || kind == FMT_L_END)
		ok = tlv_times(p, c, kind, d);
	else
		ok = tlv_names(p, c, kind, d, len, off);
	return ok ? DW_OK : DW_ENOMEM;
}

/* ---- Walking the TLVs ------------------------------------------------ */

/* True when every byte from off to the end of the file is zero. */
static bool
rest_is_zero(rd_src *s, uint64_t off, rd_errlist *errs)
{
	while (off < s->size) {
		uint64_t left = s->size - off;
		size_t n = left < 4096 ? (size_t)left : 4096;
		const unsigned char *b = rd_src_get(s, off, n, errs);

		if (!b)
			return false;
		for (size_t i = 0; i < n; i++)
			if (b[i])
				return false;
		off += n;
	}
	return true;
}

/*
 * Checks the TLV head at off; returns its full size (with padding), or 0
 * at the end of the labels (reported when the end is a corrupt record).
 */
static uint64_t
tlv_size(rd_src *s, uint64_t off, rd_errlist *errs)
{
	uint64_t left = s->size - off, total;
	const unsigned char *h = NULL;
	uint32_t kind, len;

	if (left >= TLV_HEAD)
		h = rd_src_get(s, off, TLV_HEAD, errs);
	if (!h || fmt_get_u32(h) == 0) {
		if (!s->failed && !rest_is_zero(s, off, errs) && !s->failed)
			rd_report(
			    errs, s->name, off, "%s",
			    h ? "label record of kind 0 followed by non-zero "
			        "bytes; labels after it ignored"
			      : "label record cut by the end of the file");
		return 0;
	}
	kind = fmt_get_u32(h);
	len = fmt_get_u32(h + 4);
	if (len > FMT_TLV_MAX) {
		rd_report(errs, s->name, off + 4,
		          "label record of kind %u has length %u, over the "
		          "limit of %u; labels after it ignored",
		          kind, len, FMT_TLV_MAX);
		return 0;
	}
	total = TLV_HEAD + round8(len);
	if (total > left) {
		rd_report(errs, s->name, off,
		          "label record of kind %u and length %u cut by the "
		          "end of the file",
		          kind, len);
		return 0;
	}
	return total;
}

static dw_err
tlv_walk(rd_proc *p, rd_src *s, rd_errlist *errs)
{
	struct caps caps = {0};
	uint64_t off = FMT_HEADER_PAGE, total;
	const unsigned char *tlv;
	dw_err err = DW_OK;

	if (s->size < FMT_HEADER_PAGE)
		rd_report(
		    errs, s->name, s->size,
		    "file ends inside the header page: truncated, no labels");
	while (off < s->size && (total = tlv_size(s, off, errs)) != 0) {
		tlv = rd_src_get(s, off, (size_t)total, errs);
		if (!tlv)
			break;
		err = tlv_apply(p, &caps, s->name, off, tlv, errs);
		if (err != DW_OK)
			break;
		off += total;
	}
	p->data_end = off;
	if (err == DW_EFORMAT)
		err = DW_OK;
	return err == DW_OK && s->failed ? DW_EIO : err;
}

/* ---- Tables: sorted, one entry a key (the latest) -------------------- */

static int
u64_cmp(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int
rd_type_label_key(const void *a, const void *b)
{
	return u64_cmp(((const rd_type_label *)a)->type,
	               ((const rd_type_label *)b)->type);
}

static int
rd_state_label_key(const void *a, const void *b)
{
	return u64_cmp(((const rd_state_label *)a)->state,
	               ((const rd_state_label *)b)->state);
}

static int
rd_func_label_key(const void *a, const void *b)
{
	return u64_cmp(((const rd_func_label *)a)->addr,
	               ((const rd_func_label *)b)->addr);
}

static int
rd_line_label_key(const void *a, const void *b)
{
	return u64_cmp(((const rd_line_label *)a)->addr,
	               ((const rd_line_label *)b)->addr);
}

static int
rd_thread_label_key(const void *a, const void *b)
{
	return u64_cmp(((const rd_thread_label *)a)->thread,
	               ((const rd_thread_label *)b)->thread);
}

static int
rd_module_key(const void *a, const void *b)
{
	return u64_cmp(((const rd_module *)a)->start,
	               ((const rd_module *)b)->start);
}

static int
rd_value_label_key(const void *a, const void *b)
{
	const rd_value_label *x = a, *y = b;

	return x->type != y->type ? u64_cmp(x->type, y->type)
	                          : u64_cmp(x->value, y->value);
}

/* How one table is sorted: its key, and where offset and name sit. */
struct table {
	size_t size;
	int (*key)(const void *, const void *);
	size_t off_at, name_at;
};

static uint64_t
elem_off(const struct table *tb, const void *e)
{
	uint64_t v;

	memcpy(&v, (const char *)e + tb->off_at, sizeof v);
	return v;
}

static void
elem_free_name(const struct table *tb, void *e)
{
	char *name;

	memcpy(&name, (char *)e + tb->name_at, sizeof name);
	free(name);
}

static int
elem_cmp(const void *a, const void *b, void *arg)
{
	const struct table *tb = arg;
	int c = tb->key(a, b);

	return c ? c : u64_cmp(elem_off(tb, a), elem_off(tb, b));
}

/* Sorts by (key, offset) and keeps the last entry of each key. */
static void
table_sort(const struct table *tb, void *arr, size_t *n)
{
	char *base = arr;
	size_t k = 0;

	if (*n == 0)
		return;
	qsort_r(arr, *n, tb->size, elem_cmp, (void *)tb);
	for (size_t i = 0; i < *n; i++) {
		char *e = base + i * tb->size;

		if (i + 1 < *n && tb->key(e, e + tb->size) == 0) {
			elem_free_name(tb, e);
			continue;
		}
		if (k != i)
			memcpy(base + k * tb->size, e, tb->size);
		k++;
	}
	*n = k;
}

#define RD_TABLE(T, name)                                                      \
	{                                                                      \
		sizeof(T), T##_key, offsetof(T, offset), offsetof(T, name)     \
	}

static void
tables_sort(rd_proc *p)
{
	static const struct table types = RD_TABLE(rd_type_label, name),
	                          values = RD_TABLE(rd_value_label, name),
	                          states = RD_TABLE(rd_state_label, name),
	                          funcs = RD_TABLE(rd_func_label, name),
	                          lines = RD_TABLE(rd_line_label, name),
	                          threads = RD_TABLE(rd_thread_label, name),
	                          modules = RD_TABLE(rd_module, path);

	table_sort(&types, p->types, &p->ntypes);
	table_sort(&values, p->values, &p->nvalues);
	table_sort(&states, p->states, &p->nstates);
	table_sort(&funcs, p->funcs, &p->nfuncs);
	table_sort(&lines, p->lines, &p->nlines);
	table_sort(&threads, p->threads, &p->nthreads);
	table_sort(&modules, p->modules, &p->nmodules);
}

/* ---- Opening --------------------------------------------------------- */

static dw_err
proc_read(rd_proc *p, rd_src *s, rd_errlist *errs)
{
	dw_err err = rd_src_header(s, FMT_FILE_PROCESS, errs, &p->hdr);

	if (err == DW_OK)
		err = tlv_walk(p, s, errs);
	if (err == DW_OK)
		tables_sort(p);
	if (err == DW_OK && !(p->path = strdup(s->name)))
		err = DW_ENOMEM;
	return err;
}

static dw_err
proc_finish(rd_proc *p, rd_src *s, dw_err err, rd_proc **out)
{
	rd_src_close(s);
	if (err != DW_OK) {
		rd_proc_close(p);
		p = NULL;
	}
	*out = p;
	return err;
}

dw_err
rd_proc_open(const char *path, rd_errlist *errs, rd_proc **out)
{
	rd_proc *p = calloc(1, sizeof *p);
	rd_src s;
	dw_err err;

	*out = NULL;
	if (!p)
		return DW_ENOMEM;
	err = rd_src_open(&s, path, TLV_HEAD + FMT_TLV_MAX + 8, errs);
	if (err == DW_OK)
		err = proc_read(p, &s, errs);
	return proc_finish(p, &s, err, out);
}

dw_err
rd_proc_open_mem(const char *name, const void *buf, size_t len,
                 rd_errlist *errs, rd_proc **out)
{
	rd_proc *p = calloc(1, sizeof *p);
	rd_src s;
	dw_err err;

	*out = NULL;
	if (!p)
		return DW_ENOMEM;
	err = rd_src_mem(&s, name, buf, len);
	if (err == DW_OK)
		err = proc_read(p, &s, errs);
	return proc_finish(p, &s, err, out);
}

void
rd_proc_close(rd_proc *p)
{
	if (!p)
		return;
	free(p->pname);
	for (size_t i = 0; i < p->ntypes; i++)
		free(p->types[i].name);
	for (size_t i = 0; i < p->nvalues; i++)
		free(p->values[i].name);
	for (size_t i = 0; i < p->nstates; i++)
		free(p->states[i].name);
	for (size_t i = 0; i < p->nfuncs; i++)
		free(p->funcs[i].name);
	for (size_t i = 0; i < p->nlines; i++)
		free(p->lines[i].name);
	for (size_t i = 0; i < p->nthreads; i++)
		free(p->threads[i].name);
	for (size_t i = 0; i < p->nmodules; i++)
		free(p->modules[i].path);
	free(p->types);
	free(p->values);
	free(p->states);
	free(p->funcs);
	free(p->lines);
	free(p->threads);
	free(p->modules);
	free(p->calib);
	free(p->ident);
	free(p->path);
	free(p);
}

/* ---- Lookups --------------------------------------------------------- */

static const void *
find(const void *key, const void *arr, size_t n, size_t size,
     int (*cmp)(const void *, const void *))
{
	return n ? bsearch(key, arr, n, size, cmp) : NULL;
}

const char *
rd_proc_type_name(const rd_proc *p, uint32_t type)
{
	rd_type_label k = {.type = type};
	const rd_type_label *l =
	    find(&k, p->types, p->ntypes, sizeof k, rd_type_label_key);

	return l ? l->name : NULL;
}

const char *
rd_proc_value_name(const rd_proc *p, uint32_t type, uint64_t value)
{
	rd_value_label k = {.type = type, .value = value};
	const rd_value_label *l =
	    find(&k, p->values, p->nvalues, sizeof k, rd_value_label_key);

	return l ? l->name : NULL;
}

const rd_state_label *
rd_proc_state(const rd_proc *p, uint32_t state)
{
	rd_state_label k = {.state = state};

	return find(&k, p->states, p->nstates, sizeof k, rd_state_label_key);
}

const char *
rd_proc_func_name(const rd_proc *p, uint64_t addr)
{
	rd_func_label k = {.addr = addr};
	const rd_func_label *l =
	    find(&k, p->funcs, p->nfuncs, sizeof k, rd_func_label_key);

	return l ? l->name : NULL;
}

const rd_line_label *
rd_proc_func_line(const rd_proc *p, uint64_t addr)
{
	rd_line_label k = {.addr = addr};

	return find(&k, p->lines, p->nlines, sizeof k, rd_line_label_key);
}

const char *
rd_proc_thread_name(const rd_proc *p, uint32_t thread)
{
	rd_thread_label k = {.thread = thread};
	const rd_thread_label *l =
	    find(&k, p->threads, p->nthreads, sizeof k, rd_thread_label_key);

	return l ? l->name : NULL;
}

const rd_module *
rd_proc_module(const rd_proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->nmodules;

	/* The last module starting at or before addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->modules[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= p->modules[lo - 1].end)
		return NULL;
	return &p->modules[lo - 1];
}
