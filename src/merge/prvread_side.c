/*
 * The files beside a Paraver trace (prvread_int.h): PREFIX.pcf, the
 * labels of states and event values, and PREFIX.row, the names of
 * nodes, tasks and threads; read when they are there, never through a
 * link.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/safefile.h"
#include "merge/prvread_int.h"

/* ---- Labels (.pcf) ------------------------------------------------------- */

static int
state_cmp(const void *a, const void *b)
{
	const mg_state_label *x = a, *y = b;

	return (x->state > y->state) - (x->state < y->state);
}

static int
type_cmp(const void *a, const void *b)
{
	const mg_type_label *x = a, *y = b;

	return (x->type > y->type) - (x->type < y->type);
}

static int
value_cmp(const void *a, const void *b)
{
	const mg_value_label *x = a, *y = b;

	return (x->value > y->value) - (x->value < y->value);
}

static mg_state_label *
pcf_state(pr_ctx *c, uint64_t state)
{
	mg_labels *l = &c->labels;
	mg_state_label *a;

	for (size_t i = 0; i < l->nstates; i++)
		if (l->states[i].state == state)
			return &l->states[i];
	a = realloc(l->states, (l->nstates + 1) * sizeof *a);
	if (!a)
		return NULL;
	l->states = a;
	a = &l->states[l->nstates++];
	a->state = (uint32_t)state;
	a->rgb = 0x808080;
	a->name = NULL;
	return a;
}

/* "NUMBER   rest": the number, and the rest trimmed. */
static bool
pcf_numbered(char *line, uint64_t *v, char **rest)
{
	const char *p = line;
	char *e;

	while (*p == ' ' || *p == '\t')
		p++;
	if (!pr_num(&p, v))
		return false;
	while (*p == ' ' || *p == '\t')
		p++;
	*rest = (char *)p;
	e = *rest + strlen(*rest);
	while (e > *rest && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = '\0';
	return true;
}

static dw_err
pcf_state_line(pr_ctx *c, char *line, bool colour)
{
	uint64_t v;
	char *rest;
	unsigned r, g, b;
	mg_state_label *s;

	if (!pcf_numbered(line, &v, &rest) || v > UINT32_MAX)
		return DW_OK;
	s = pcf_state(c, v);
	if (!s)
		return DW_ENOMEM;
	if (colour) {
		if (sscanf(rest, "{%u,%u,%u}", &r, &g, &b) == 3)
			s->rgb =
			    (r & 0xff) << 16 | (g & 0xff) << 8 | (b & 0xff);
	} else {
		s->name = pr_keep(c, rest, strlen(rest));
		if (!s->name)
			return DW_ENOMEM;
	}
	return DW_OK;
}

/* An EVENT_TYPE block: its types (first), then VALUES for all of them. */
typedef struct pr_block {
	size_t first; /* index of its first type in labels.types */
	mg_value_label *values;
	size_t nvalues;
} pr_block;

static dw_err
pcf_type_line(pr_ctx *c, char *line)
{
	uint64_t gradient, type;
	char *rest;
	const char *p;
	mg_type_label *a;

	if (!pcf_numbered(line, &gradient, &rest))
		return DW_OK;
	p = rest;
	if (!pr_num(&p, &type) || type > UINT32_MAX)
		return DW_OK;
	while (*p == ' ' || *p == '\t')
		p++;
	a = realloc(c->labels.types, (c->labels.ntypes + 1) * sizeof *a);
	if (!a)
		return DW_ENOMEM;
	c->labels.types = a;
	a = &c->labels.types[c->labels.ntypes++];
	memset(a, 0, sizeof *a);
	a->type = (uint32_t)type;
	a->name = pr_keep(c, p, strlen(p));
	return a->name ? DW_OK : DW_ENOMEM;
}

static dw_err
pcf_value_line(pr_ctx *c, pr_block *b, char *line)
{
	uint64_t v;
	char *rest;
	mg_value_label *a;

	if (!pcf_numbered(line, &v, &rest))
		return DW_OK;
	a = realloc(b->values, (b->nvalues + 1) * sizeof *a);
	if (!a)
		return DW_ENOMEM;
	b->values = a;
	a[b->nvalues].value = v;
	a[b->nvalues].name = pr_keep(c, rest, strlen(rest));
	if (!a[b->nvalues++].name)
		return DW_ENOMEM;
	return DW_OK;
}

/* Gives the block's values to each of its types, a copy each. */
static dw_err
pcf_block_end(pr_ctx *c, pr_block *b)
{
	dw_err err = DW_OK;

	if (b->nvalues)
		qsort(b->values, b->nvalues, sizeof *b->values, value_cmp);
	for (size_t i = b->first; i < c->labels.ntypes; i++) {
		mg_type_label *t = &c->labels.types[i];

		t->values = malloc((b->nvalues + 1) * sizeof *t->values);
		if (!t->values) {
			err = DW_ENOMEM;
			break;
		}
		if (b->nvalues)
			memcpy(t->values, b->values,
			       b->nvalues * sizeof *t->values);
		t->nvalues = b->nvalues;
	}
	free(b->values);
	memset(b, 0, sizeof *b);
	b->first = c->labels.ntypes;
	return err;
}

enum pcf_section { S_NONE, S_STATES, S_COLORS, S_TYPES, S_VALUES };

dw_err
pr_pcf_read(pr_ctx *c, FILE *f)
{
	enum pcf_section sec = S_NONE;
	pr_block b = {0};
	dw_err err = DW_OK;

	while (err == DW_OK && pr_next_line(c, f) >= 0) {
		char *l = c->line;

		if (pr_eol(l)) {
			if (sec == S_TYPES || sec == S_VALUES)
				err = pcf_block_end(c, &b);
			sec = S_NONE;
		} else if (!strcmp(l, "STATES")) {
			sec = S_STATES;
		} else if (!strcmp(l, "STATES_COLOR")) {
			sec = S_COLORS;
		} else if (!strcmp(l, "EVENT_TYPE")) {
			if (sec == S_TYPES || sec == S_VALUES)
				err = pcf_block_end(c, &b);
			b.first = c->labels.ntypes;
			sec = S_TYPES;
		} else if (!strcmp(l, "VALUES") && sec == S_TYPES) {
			sec = S_VALUES;
		} else if (sec == S_STATES || sec == S_COLORS) {
			err = pcf_state_line(c, l, sec == S_COLORS);
		} else if (sec == S_TYPES) {
			err = pcf_type_line(c, l);
		} else if (sec == S_VALUES) {
			err = pcf_value_line(c, &b, l);
		}
	}
	if (err == DW_OK && (sec == S_TYPES || sec == S_VALUES))
		err = pcf_block_end(c, &b);
	free(b.values);
	return err;
}

void
pr_labels_finish(pr_ctx *c)
{
	mg_labels *l = &c->labels;
	size_t k = 0;

	for (size_t i = 0; i < l->nstates; i++)
		if (!l->states[i].name) {
			char buf[32];

			snprintf(buf, sizeof buf, "State %u",
			         l->states[i].state);
			l->states[i].name = pr_keep(c, buf, strlen(buf));
			if (!l->states[i].name)
				l->states[i].name = "";
		}
	if (l->nstates)
		qsort(l->states, l->nstates, sizeof *l->states, state_cmp);
	if (l->ntypes)
		qsort(l->types, l->ntypes, sizeof *l->types, type_cmp);
	/* One label a type: the first block that named it. */
	for (size_t i = 0; i < l->ntypes; i++) {
		if (k == 0 || l->types[k - 1].type != l->types[i].type)
			l->types[k++] = l->types[i];
		else
			free(l->types[i].values);
	}
	l->ntypes = k;
}

/* ---- Names (.row) -------------------------------------------------------- */

dw_err
pr_row_read(pr_ctx *c, FILE *f)
{
	char level[32];
	uint64_t n = 0, i = 0;
	enum { L_OTHER, L_NODE, L_APPL, L_TASK, L_THREAD } at = L_OTHER;

	while (pr_next_line(c, f) >= 0) {
		unsigned long long size;
		const char **slot = NULL;
		char *name;

		if (sscanf(c->line, "LEVEL %31s SIZE %llu", level, &size) ==
		    2) {
			at = !strcmp(level, "NODE")     ? L_NODE
			     : !strcmp(level, "APPL")   ? L_APPL
			     : !strcmp(level, "TASK")   ? L_TASK
			     : !strcmp(level, "THREAD") ? L_THREAD
			                                : L_OTHER;
			n = size;
			i = 0;
			continue;
		}
		if (pr_eol(c->line) || i >= n)
			continue;
		if (at == L_NODE && i < c->info.nnodes)
			slot = &c->nodes[i].name;
		else if (at == L_APPL && i == 0)
			slot = &c->info.program;
		else if (at == L_TASK && i < c->info.ntasks)
			slot = &c->tasks[i].name;
		else if (at == L_THREAD && i < c->info.nthreads)
			slot = &c->threads[i].name;
		i++;
		if (!slot)
			continue;
		name = pr_keep(c, c->line, strlen(c->line));
		if (!name)
			return DW_ENOMEM;
		*slot = name;
	}
	return DW_OK;
}

dw_err
pr_default_names(pr_ctx *c)
{
	char buf[64];

	for (size_t i = 0; i < c->info.nnodes; i++)
		if (!c->nodes[i].name) {
			snprintf(buf, sizeof buf, "node %zu", i + 1);
			if (!(c->nodes[i].name = pr_keep(c, buf, strlen(buf))))
				return DW_ENOMEM;
		}
	for (size_t i = 0; i < c->info.ntasks; i++)
		if (!c->tasks[i].name) {
			snprintf(buf, sizeof buf, "task %zu", i + 1);
			if (!(c->tasks[i].name = pr_keep(c, buf, strlen(buf))))
				return DW_ENOMEM;
		}
	for (size_t i = 0; i < c->info.nthreads; i++)
		if (!c->threads[i].name) {
			snprintf(buf, sizeof buf, "task %u thread %u",
			         c->threads[i].task + 1, c->threads[i].num + 1);
			if (!(c->threads[i].name =
			          pr_keep(c, buf, strlen(buf))))
				return DW_ENOMEM;
		}
	if (!c->info.program)
		c->info.program = "";
	return DW_OK;
}

/* Reads PREFIX.EXT beside the .prv, when it is there. */
dw_err
pr_side_file(pr_ctx *c, const char *ext, dw_err (*read)(pr_ctx *, FILE *))
{
	size_t n = strlen(c->path);
	char *p = malloc(n + 8);
	FILE *f;
	dw_err err;

	if (!p)
		return DW_ENOMEM;
	memcpy(p, c->path, n + 1);
	if (prvread_is_prv(p))
		p[n - 4] = '\0';
	strcat(p, ext);
	/* a sibling is never read through a link (it may be planted) */
	int fd = sf_open_read(p);
	f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (fd >= 0 && !f)
		close(fd);
	if (!f && errno == ELOOP)
		rd_report_file(c->errs, p,
		               "is a symbolic link: refused (never followed)");
	free(p);
	if (!f)
		return DW_OK;
	err = read(c, f);
	fclose(f);
	return err;
}
