/*
 * The OTF2 writer's definitions (otf2.c writes the events): strings,
 * the clock, the system tree, regions, groups and metrics, written at the
 * end of the trace when every label is known.
 */
#ifdef DW_HAVE_OTF2

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/labels.h"
#include "output/otf2_int.h"

/* ---- End: close the events, write the definitions ------------------------ */

typedef struct o2_defs {
	otf2_writer *o;
	OTF2_GlobalDefWriter *gw;
	OTF2_ErrorCode e;
} o2_defs;

/* A string definition; its id (0 after an error). */
static uint32_t
str(o2_defs *d, const char *s)
{
	uint32_t id = d->o->nstrings;

	if (d->e != OTF2_SUCCESS)
		return 0;
	d->e = OTF2_GlobalDefWriter_WriteString(d->gw, id, s ? s : "");
	d->o->nstrings++;
	return id;
}

static void
def_clock(o2_defs *d, const mg_info *info)
{
	if (d->e == OTF2_SUCCESS)
		d->e = OTF2_GlobalDefWriter_WriteClockProperties(
		    d->gw, 1000000000u, d->o->offset, info->duration,
		    info->start_real_ns > 0 ? (uint64_t)info->start_real_ns
		                            : OTF2_UNDEFINED_TIMESTAMP);
}

/* Node 0 the machine, node i + 1 host i; group i task i; location i
 * thread i. */
static void
def_system(o2_defs *d, const mg_info *info)
{
	uint32_t name = str(d, info->program), cls = str(d, "machine");

	if (d->e == OTF2_SUCCESS)
		d->e = OTF2_GlobalDefWriter_WriteSystemTreeNode(
		    d->gw, 0, name, cls, OTF2_UNDEFINED_SYSTEM_TREE_NODE);
	cls = str(d, "node");
	for (size_t i = 0; d->e == OTF2_SUCCESS && i < info->nnodes; i++) {
		name = str(d, info->nodes[i].name);
		if (d->e == OTF2_SUCCESS)
			d->e = OTF2_GlobalDefWriter_WriteSystemTreeNode(
			    d->gw, (uint32_t)i + 1, name, cls, 0);
	}
	for (size_t i = 0; d->e == OTF2_SUCCESS && i < info->ntasks; i++) {
		name = str(d, info->tasks[i].name);
		if (d->e == OTF2_SUCCESS)
			d->e = OTF2_GlobalDefWriter_WriteLocationGroup(
			    d->gw, (uint32_t)i, name,
			    OTF2_LOCATION_GROUP_TYPE_PROCESS,
			    info->tasks[i].node + 1,
			    OTF2_UNDEFINED_LOCATION_GROUP);
	}
	for (size_t i = 0; d->e == OTF2_SUCCESS && i < info->nthreads; i++) {
		name = str(d, info->threads[i].name);
		if (d->e == OTF2_SUCCESS)
			d->e = OTF2_GlobalDefWriter_WriteLocation(
			    d->gw, i, name, OTF2_LOCATION_TYPE_CPU_THREAD,
			    d->o->loc[i].nevents, info->threads[i].task);
	}
}

static void
def_regions(o2_defs *d, const mg_info *info)
{
	otf2_writer *o = d->o;
	char buf[64];

	for (uint32_t i = 0; d->e == OTF2_SUCCESS && i < o->nregions; i++) {
		const o2_region *r = &o->regions[i];
		const mg_state_label *sl =
		    r->kind == NEST_STATE
		        ? lb_state(info->labels, (uint32_t)r->id)
		        : NULL;
		const char *s = r->kind == NEST_FUNC ? lb_func(info, r->id)
		                : sl                 ? sl->name
		                                     : NULL;
		uint32_t name, desc;

		if (!s) {
			snprintf(buf, sizeof buf, "%s %llu",
			         r->kind == NEST_FUNC ? "function" : "State",
			         (unsigned long long)r->id);
			s = buf;
		}
		name = str(d, s);
		desc = str(d, r->kind == NEST_FUNC ? "user function"
		                                   : "Paraver state");
		if (d->e == OTF2_SUCCESS)
			d->e = OTF2_GlobalDefWriter_WriteRegion(
			    d->gw, i, name, name, desc,
			    r->kind == NEST_FUNC ? OTF2_REGION_ROLE_FUNCTION
			                         : OTF2_REGION_ROLE_ARTIFICIAL,
			    OTF2_PARADIGM_USER, OTF2_REGION_FLAG_NONE, o->empty,
			    0, 0);
	}
}

/* Groups: 0 the locations (communication ranks), 1 the ranks of the
 * communicator, 2 the state regions, 3 the function regions. */
static void
def_groups(o2_defs *d, const mg_info *info)
{
	otf2_writer *o = d->o;
	uint64_t *m = malloc((info->nthreads + o->nregions + 1) * sizeof *m);
	uint32_t n;

	if (!m) {
		d->e = OTF2_ERROR_MEM_ALLOC_FAILED;
		return;
	}
	for (size_t i = 0; i < info->nthreads; i++)
		m[i] = i;
	if (d->e == OTF2_SUCCESS)
		d->e = OTF2_GlobalDefWriter_WriteGroup(
		    d->gw, 0, str(d, "threads"), OTF2_GROUP_TYPE_COMM_LOCATIONS,
		    OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
		    (uint32_t)info->nthreads, m);
	if (d->e == OTF2_SUCCESS)
		d->e = OTF2_GlobalDefWriter_WriteGroup(
		    d->gw, 1, str(d, "all threads"), OTF2_GROUP_TYPE_COMM_GROUP,
		    OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
		    (uint32_t)info->nthreads, m);
	if (d->e == OTF2_SUCCESS)
		d->e = OTF2_GlobalDefWriter_WriteComm(
		    d->gw, 0, str(d, "dwork messages"), 1, OTF2_UNDEFINED_COMM,
		    OTF2_COMM_FLAG_NONE);
	for (int k = NEST_STATE; k <= NEST_FUNC; k++) {
		n = 0;
		for (uint32_t i = 0; i < o->nregions; i++)
			if (o->regions[i].kind == k)
				m[n++] = i;
		if (d->e == OTF2_SUCCESS)
			d->e = OTF2_GlobalDefWriter_WriteGroup(
			    d->gw, (uint32_t)k + 1,
			    str(d, k == NEST_STATE ? "States" : "Functions"),
			    OTF2_GROUP_TYPE_REGIONS, OTF2_PARADIGM_USER,
			    OTF2_GROUP_FLAG_NONE, n, m);
	}
	free(m);
}

/* A metric per event type: member i and class i. */
static void
def_metrics(o2_defs *d, const mg_info *info)
{
	otf2_writer *o = d->o;
	char buf[64];

	for (uint32_t i = 0; d->e == OTF2_SUCCESS && i < o->nmetrics; i++) {
		const mg_type_label *t =
		    lb_type(info->labels, o->metric_type[i]);
		uint32_t name, desc, unit;
		OTF2_MetricMemberRef mm = i;

		snprintf(buf, sizeof buf, "event type %u", o->metric_type[i]);
		name = str(d, t ? t->name : buf);
		desc = str(d, buf);
		unit = o->empty;
		if (d->e == OTF2_SUCCESS)
			d->e = OTF2_GlobalDefWriter_WriteMetricMember(
			    d->gw, i, name, desc, OTF2_METRIC_TYPE_USER,
			    OTF2_METRIC_ABSOLUTE_POINT, OTF2_TYPE_UINT64,
			    OTF2_BASE_DECIMAL, 0, unit);
		if (d->e == OTF2_SUCCESS)
			d->e = OTF2_GlobalDefWriter_WriteMetricClass(
			    d->gw, i, 1, &mm, OTF2_METRIC_ASYNCHRONOUS,
			    OTF2_RECORDER_KIND_ABSTRACT);
	}
}

/* Closes every location's events (each gets a writer, so each has its
 * file) and writes the (empty) local definition files. */

dw_err
o2_write_defs(otf2_writer *o, const mg_info *info)
{
	o2_defs d = {o, OTF2_Archive_GetGlobalDefWriter(o->ar), OTF2_SUCCESS};

	if (!d.gw)
		return o2_fail(o, OTF2_ERROR_MEM_ALLOC_FAILED, "write");
	o->empty = str(&d, "");
	def_clock(&d, info);
	def_system(&d, info);
	def_regions(&d, info);
	def_groups(&d, info);
	def_metrics(&d, info);
	if (d.e == OTF2_SUCCESS)
		d.e = OTF2_Archive_CloseGlobalDefWriter(o->ar, d.gw);
	return d.e == OTF2_SUCCESS ? DW_OK : o2_fail(o, d.e, "write");
}

#else
typedef int otf2_defs_unused; /* this build has no libotf2 (writers.c) */
#endif /* DW_HAVE_OTF2 */
