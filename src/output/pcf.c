/*
 * The .pcf: Paraver's configuration of a trace — default view options,
 * the state names and colours, and the event types with their values.
 */
#include <inttypes.h>

#include "output/prv_int.h"

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

/* Extrae's gradient block: the colours of the event types' gradient
 * indices (the first number of an EVENT_TYPE line). */
static void
pcf_gradient(FILE *f)
{
	static const char *names[15] = {"Gradient 0",
	                                "Grad. 1/MPI Events",
	                                "Grad. 2/OMP Events",
	                                "Grad. 3/OMP locks",
	                                "Grad. 4/User func",
	                                "Grad. 5/User Events",
	                                "Grad. 6/General Events",
	                                "Grad. 7/Hardware Counters"};

	static const unsigned char green[15][2] = {
	    {255, 2},   {244, 13},  {232, 25},  {220, 37},  {209, 48},
	    {197, 60},  {185, 72},  {173, 84},  {162, 95},  {150, 107},
	    {138, 119}, {127, 130}, {115, 142}, {103, 154}, {91, 166}};

	fputs("GRADIENT_COLOR\n", f);
	for (unsigned i = 0; i < 15; i++)
		fprintf(f, "%-4u {0,%u,%u}\n", i, green[i][0], green[i][1]);
	fputs("\n\nGRADIENT_NAMES\n", f);
	for (unsigned i = 0; i < 15; i++) {
		if (names[i])
			fprintf(f, "%-4u %s\n", i, names[i]);
		else
			fprintf(f, "%-4u Gradient %u\n", i, i);
	}
	fputs("\n\n", f);
}

/* The gradient index Extrae gives a type: its own events are "General
 * Events" (6), the tracing mode 9, everything else 0. */
static unsigned
pcf_gradient_of(uint32_t type)
{
	if (type == 40000018u)
		return 9;
	return type >= 40000000u && type < 41000000u ? 6 : 0;
}

static void
pcf_type(FILE *f, const mg_type_label *t)
{
	fprintf(f, "EVENT_TYPE\n%u    %-10u ", pcf_gradient_of(t->type),
	        t->type);
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
	pcf_gradient(f);
	for (size_t i = 0; i < lb->ntypes; i++)
		pcf_type(f, &lb->types[i]);
}
