/*
 * The Paraver writer: PREFIX.prv (header and records), PREFIX.pcf and
 * PREFIX.row.  Each file is written as PREFIX.EXT.tmp and renamed when
 * the merge ends well, so a failed merge leaves no partial trace.
 *
 * Paraver numbers applications, tasks, threads, nodes and CPUs from 1:
 * one application; Paraver task = tracer task + 1; each thread its own
 * CPU.  Records: "1:cpu:appl:task:thread:begin:end:state",
 * "2:cpu:appl:task:thread:time:type:value[:type:value...]",
 * "3:cpu:appl:task:thread:lsend:psend:cpu:appl:task:thread:lrecv:precv:
 * size:tag".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/safefile.h"
#include "output/outbuf.h"
#include "output/outfile.h"
#include "output/prv_int.h"

enum { F_PRV, F_PCF, F_ROW, F_N };
static const char *const exts[F_N] = {".prv", ".pcf", ".row"};

/* Event types by their low bits: ":TYPE:" made once.  Slot i starts
 * as type i, so that every hit is right. */
#define PRV_TYPES 64u
typedef struct prv_type {
	uint32_t type;
	uint32_t n; /* bytes of s used */
	char s[16];
} prv_type;

typedef struct prv_writer {
	mg_writer base;
	char *path[F_N], *tmp[F_N];
	ob out;
	bool opened, ended;
	char *pre; /* "cpu:1:task:thread:" of thread i at i * PRV_PRE */
	uint8_t *pre_len;
	uint32_t nthreads;
	ob_near t_time, t_other; /* record times, other times */
	prv_type types[PRV_TYPES];
} prv_writer;

#define PRV_LINE 512 /* room for any record line but long event lists */
#define PRV_PRE  32  /* bytes of a thread's prefix, copied whole */

static dw_err
fail(prv_writer *p, dw_err err, const char *what, const char *path, int errnum)
{
	return of_fail(&p->base, err, what, path, errnum);
}

/* ---- Header ------------------------------------------------------------ */

static dw_err
put_u64(prv_writer *p, uint64_t v, char sep)
{
	dw_err err = ob_need(&p->out, 24);
	char *e;

	if (err != DW_OK)
		return err;
	e = ob_u64(ob_end(&p->out), v);
	if (sep)
		*e++ = sep;
	ob_commit(&p->out, e);
	return DW_OK;
}

static dw_err
put_str(prv_writer *p, const char *s)
{
	size_t n = strlen(s);
	dw_err err = ob_need(&p->out, n);

	if (err == DW_OK)
		ob_commit(&p->out, ob_mem(ob_end(&p->out), s, n));
	return err;
}

static void
header_date(const mg_info *info, char *buf, size_t len)
{
	time_t t = info->start_real_ns
	               ? (time_t)(info->start_real_ns / 1000000000)
	               : time(NULL);
	struct tm tm;

	if (!localtime_r(&t, &tm) ||
	    !strftime(buf, len, "%d/%m/%Y at %H:%M", &tm))
		snprintf(buf, len, "01/01/1970 at 00:00");
}

/* "#Paraver (dd/mm/yyyy at hh:mm):end_ns:nodes(cpus,...):1:
 *  tasks(threads:node,...),0" as Extrae writes it */
static dw_err
header(prv_writer *p, const mg_info *info)
{
	char date[64];
	dw_err err;

	header_date(info, date, sizeof date);
	err = put_str(p, "#Paraver (");
	if (err == DW_OK)
		err = put_str(p, date);
	if (err == DW_OK)
		err = put_str(p, "):");
	if (err == DW_OK)
		err = put_u64(p, info->duration, '_');
	if (err == DW_OK)
		err = put_str(p, "ns:");
	if (err == DW_OK)
		err = put_u64(p, info->nnodes, '(');
	for (size_t i = 0; err == DW_OK && i < info->nnodes; i++)
		err = put_u64(p, info->nodes[i].ncpus,
		              i + 1 < info->nnodes ? ',' : ')');
	if (err == DW_OK)
		err = put_str(p, ":1:");
	if (err == DW_OK)
		err = put_u64(p, info->ntasks, '(');
	for (size_t i = 0; err == DW_OK && i < info->ntasks; i++) {
		err = put_u64(p, info->tasks[i].nthreads, ':');
		if (err == DW_OK)
			err = put_u64(p, info->tasks[i].node + 1,
			              i + 1 < info->ntasks ? ',' : ')');
	}
	/* Extrae's suffix: the number of communicators defined (none) */
	return err == DW_OK ? put_str(p, ",0\n") : err;
}

/*
 * "cpu:1:task:thread:" of every thread, each in PRV_PRE bytes so that a
 * record copies a constant size (a variable-size copy costs more than
 * the rest of the line).  CPU and task ids are below 2^21, threads below
 * 2^17: at most 26 characters.
 */
static dw_err
prefixes(prv_writer *p, const mg_info *info)
{
	p->nthreads = (uint32_t)info->nthreads;
	p->pre = calloc(info->nthreads + 1, PRV_PRE);
	p->pre_len = malloc(info->nthreads + 1);
	if (!p->pre || !p->pre_len)
		return DW_ENOMEM;
	for (size_t i = 0; i < info->nthreads; i++) {
		const mg_thread *t = &info->threads[i];
		int n = snprintf(p->pre + i * PRV_PRE, PRV_PRE,
		                 "%u:1:%u:%u:", t->cpu + 1, t->task + 1,
		                 t->num + 1);

		if (n < 0 || n >= PRV_PRE)
			return DW_EINVAL;
		p->pre_len[i] = (uint8_t)n;
	}
	return DW_OK;
}

static void
type_set(prv_type *t, uint32_t type)
{
	char *e = t->s;

	t->type = type;
	*e++ = ':';
	e = ob_u64(e, type);
	*e++ = ':';
	t->n = (uint32_t)(e - t->s);
}

static dw_err
prv_begin(mg_writer *w, const mg_info *info)
{
	prv_writer *p = (prv_writer *)w;
	dw_err err = ob_open(&p->out, p->tmp[F_PRV]);

	if (err != DW_OK)
		return fail(p, err, "create", p->tmp[F_PRV], p->out.errnum);
	p->opened = true;
	ob_near_init(&p->t_time);
	ob_near_init(&p->t_other);
	for (uint32_t i = 0; i < PRV_TYPES; i++)
		type_set(&p->types[i], i);
	err = prefixes(p, info);
	if (err == DW_OK)
		err = header(p, info);
	if (err != DW_OK && err != DW_ENOMEM)
		return fail(p, err, "write", p->tmp[F_PRV], p->out.errnum);
	return err;
}

/* ---- Records ---------------------------------------------------------------
 */

static char *
put_thread(const prv_writer *p, char *e, uint32_t thread)
{
	memcpy(e, p->pre + (size_t)thread * PRV_PRE, PRV_PRE);
	return e + p->pre_len[thread];
}

/* ":TYPE:" at e (storing 16 bytes); returns the end. */
static inline char *
put_type(prv_writer *p, char *e, uint32_t type)
{
	prv_type *t = &p->types[type % PRV_TYPES];

	if (__builtin_expect(t->type != type, 0))
		type_set(t, type);
	memcpy(e, t->s, 16);
	return e + t->n;
}

static char *
line_state(prv_writer *p, char *e, const mg_rec *r)
{
	*e++ = '1';
	*e++ = ':';
	e = put_thread(p, e, r->thread);
	e = ob_u64_near(&p->t_time, e, r->time);
	*e++ = ':';
	e = ob_u64_near(&p->t_other, e, r->u.state.end);
	*e++ = ':';
	e = ob_u64(e, r->u.state.state);
	*e++ = '\n';
	return e;
}

static char *
line_comm(prv_writer *p, char *e, const mg_rec *r)
{
	*e++ = '3';
	*e++ = ':';
	e = put_thread(p, e, r->thread);
	e = ob_u64_near(&p->t_time, e, r->time);
	*e++ = ':';
	e = ob_u64_near(&p->t_other, e, r->u.comm.phy_send);
	*e++ = ':';
	e = put_thread(p, e, r->u.comm.recv_thread);
	e = ob_u64_near(&p->t_other, e, r->u.comm.log_recv);
	*e++ = ':';
	e = ob_u64_near(&p->t_other, e, r->u.comm.phy_recv);
	*e++ = ':';
	e = ob_u64(e, r->u.comm.size);
	*e++ = ':';
	e = ob_u64(e, r->u.comm.tag);
	*e++ = '\n';
	return e;
}

/* An event line, a few pairs at a time so any number fits. */
static dw_err
line_event(prv_writer *p, const mg_rec *r)
{
	char *e = ob_end(&p->out);

	*e++ = '2';
	*e++ = ':';
	e = put_thread(p, e, r->thread);
	e = ob_u64_near(&p->t_time, e, r->time);
	for (uint32_t i = 0; i < r->u.event.n; i++) {
		if ((i & 7) == 7) {
			dw_err err;

			ob_commit(&p->out, e);
			if ((err = ob_need(&p->out, PRV_LINE)) != DW_OK)
				return err;
			e = ob_end(&p->out);
		}
		e = put_type(p, e, r->u.event.pairs[i].type);
		e = ob_u64(e, r->u.event.pairs[i].value);
	}
	*e++ = '\n';
	ob_commit(&p->out, e);
	return DW_OK;
}

static dw_err
prv_record(mg_writer *w, const mg_rec *r)
{
	prv_writer *p = (prv_writer *)w;
	dw_err err = ob_need(&p->out, PRV_LINE);

	if (err == DW_OK) {
		if (r->kind == MG_STATE)
			ob_commit(&p->out, line_state(p, ob_end(&p->out), r));
		else if (r->kind == MG_COMM)
			ob_commit(&p->out, line_comm(p, ob_end(&p->out), r));
		else
			err = line_event(p, r);
	}
	if (err != DW_OK)
		return fail(p, err, "write", p->tmp[F_PRV], p->out.errnum);
	return DW_OK;
}

/* ---- End
 * ---------------------------------------------------------------------- */

static dw_err
write_text(prv_writer *p, int k, const mg_info *info)
{
	int fd = sf_create(p->tmp[k], 0644);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	int errnum;

	if (fd >= 0 && !f)
		close(fd);
	if (!f)
		return fail(p, dw_err_from_errno(errno), "create", p->tmp[k],
		            errno);
	if (k == F_PCF)
		pcf_write(f, info);
	else
		row_write(f, info);
	errnum = ferror(f) ? EIO : 0;
	if (fclose(f) && !errnum)
		errnum = errno;
	if (errnum)
		return fail(p, dw_err_from_errno(errnum), "write", p->tmp[k],
		            errnum);
	return DW_OK;
}

static dw_err
prv_end(mg_writer *w, const mg_info *info)
{
	prv_writer *p = (prv_writer *)w;
	dw_err err = ob_close(&p->out);

	p->opened = false;
	if (err != DW_OK)
		return fail(p, err, "write", p->tmp[F_PRV], p->out.errnum);
	err = write_text(p, F_PCF, info);
	if (err == DW_OK)
		err = write_text(p, F_ROW, info);
	for (int k = 0; err == DW_OK && k < F_N; k++)
		err = of_commit(&p->base, p->tmp[k], p->path[k]);
	p->ended = err == DW_OK;
	return err;
}

static void
prv_free(mg_writer *w)
{
	prv_writer *p = (prv_writer *)w;

	if (p->opened)
		ob_discard(&p->out);
	for (int k = 0; k < F_N; k++)
		of_names_free(p->path[k], p->tmp[k], !p->ended);
	free(p->pre);
	free(p->pre_len);
	free(p);
}

static const mg_writer_ops prv_ops = {
    .name = "paraver",
    .begin = prv_begin,
    .record = prv_record,
    .end = prv_end,
    .free = prv_free,
};

dw_err
prv_writer_new(const char *prefix, mg_writer **out)
{
	prv_writer *p = calloc(1, sizeof *p);

	*out = NULL;
	if (!p)
		return DW_ENOMEM;
	p->base.ops = &prv_ops;
	p->out.fd = -1;
	for (int k = 0; k < F_N; k++) {
		if (of_names(&p->path[k], &p->tmp[k], prefix, exts[k]) !=
		    DW_OK) {
			p->ended = true; /* nothing to remove */
			prv_free(&p->base);
			return DW_ENOMEM;
		}
	}
	*out = &p->base;
	return DW_OK;
}
