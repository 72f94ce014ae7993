/*
 * The .pcf: Paraver's configuration of a trace — default view options,
 * the state names and colours, and the event types with their values.
 */
#include <inttypes.h>

#include "merge/prv_int.h"

void
prv_put_name(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? ' ' : *s, f);
}

static void
pcf_options(FILE *f)
{
	fputs("DEFAULT_OPTIONS\n\n"
	      "LEVEL               THREAD\n"
	      "UNITS               NANOSEC\n"
	      "LOOK_BACK           100\n"
	      "SPEED               1\n"
	      "FLAG_ICONS          ENABLED\n"
	      "NUM_OF_STATE_COLORS 1000\n"
	      "YMAX_SCALE          37\n\n\n"
	      "DEFAULT_SEMANTIC\n\n"
	      "THREAD_FUNC          State As Is\n\n\n",
	      f);
}

static void
pcf_states(FILE *f, const mg_labels *lb)
{
	fputs("STATES\n", f);
	for (size_t i = 0; i < lb->nstates; i++) {
		fprintf(f, "%-4u ", lb->states[i].state);
		prv_put_name(f, lb->states[i].name);
		fputc('\n', f);
	}
	fputs("\n\nSTATES_COLOR\n", f);
	for (size_t i = 0; i < lb->nstates; i++) {
		uint32_t c = lb->states[i].rgb;

		fprintf(f, "%-4u {%u,%u,%u}\n", lb->states[i].state,
		        c >> 16 & 0xff, c >> 8 & 0xff, c & 0xff);
	}
	fputs("\n\n", f);
}

static void
pcf_type(FILE *f, const mg_type_label *t)
{
	fprintf(f, "EVENT_TYPE\n0    %-10u ", t->type);
	prv_put_name(f, t->name);
	fputc('\n', f);
	if (t->nvalues)
		fputs("VALUES\n", f);
	for (size_t i = 0; i < t->nvalues; i++) {
		fprintf(f, "%-6" PRIu64 " ", t->values[i].value);
		prv_put_name(f, t->values[i].name);
		fputc('\n', f);
	}
	fputs("\n\n", f);
}

void
pcf_write(FILE *f, const mg_info *info)
{
	const mg_labels *lb = info->labels;

	pcf_options(f);
	pcf_states(f, lb);
	for (size_t i = 0; i < lb->ntypes; i++)
		pcf_type(f, &lb->types[i]);
}
