/*
 * The regions as the JSON document DLB's TALP 3.5 writes (live.h,
 * docs/runtime.md "Regions" gives the mapping), so TALP-Pages and other
 * TALP tooling read dwork's regions as an MPI program's.  A dwork
 * process plays an MPI rank's part (one CPU: its counted threads' useful
 * time is summed as one rank's), its host a node's, the runtime's calls
 * MPI's; the base figures are TALP's and the efficiencies are computed
 * from them with TALP's formulas (DLB's perf_metrics.h, hybrid model v1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/live.h"

struct talp_base {
	size_t np, nodes;
	uint64_t useful, mpi, issued, cycles, instr;
	double max_proc, mpi_of_max, max_node;
	const struct talp_proc *uncounted; /* one without counters */
};

static const char *
host_of(const struct talp_proc *p)
{
	return p->host && p->host[0] ? p->host : "unknown";
}

static uint64_t
mpi_of(const struct talp_region *r, const struct talp_proc *p)
{
	return r->elapsed_ns > p->useful_ns ? r->elapsed_ns - p->useful_ns : 0;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The distinct hosts of n names, sorted into h (n slots). */
static size_t
hosts_sorted(const char **h, size_t n)
{
	qsort(h, n, sizeof *h, cmp_str);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!k || strcmp(h[k - 1], h[i]))
			h[k++] = h[i];
	return k;
}

static size_t
host_index(const char **h, size_t nh, const char *name)
{
	for (size_t i = 0; i < nh; i++)
		if (!strcmp(h[i], name))
			return i;
	return 0;
}

/* The largest mean useful time of the processes on one host. */
static double
max_node(const struct talp_region *r, const char **h, size_t nh)
{
	double best = 0;
	for (size_t k = 0; k < nh; k++) {
		double sum = 0;
		size_t n = 0;
		for (size_t i = 0; i < r->np; i++)
			if (!strcmp(host_of(&r->p[i]), h[k]))
				sum += (double)r->p[i].useful_ns, n++;
		if (n && sum / (double)n > best)
			best = sum / (double)n;
	}
	return best;
}

static void
talp_base_of(const struct talp_region *r, const char **h, struct talp_base *b)
{
	memset(b, 0, sizeof *b);
	b->np = r->np;
	for (size_t i = 0; i < r->np; i++) {
		const struct talp_proc *p = &r->p[i];
		b->useful += p->useful_ns;
		b->mpi += mpi_of(r, p);
		b->issued += p->issued;
		b->cycles += p->cycles;
		b->instr += p->instr;
		if (p->hwc && !b->uncounted)
			b->uncounted = p;
		if ((double)p->useful_ns > b->max_proc) {
			b->max_proc = (double)p->useful_ns;
			b->mpi_of_max = (double)mpi_of(r, p);
		}
		h[i] = host_of(p);
	}
	b->nodes = hosts_sorted(h, r->np);
	b->max_node = max_node(r, h, b->nodes);
}

static double
ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

static void
talp_app(FILE *f, const struct talp_region *r, const struct talp_base *b)
{
	double np = b->np ? (double)b->np : 1;
	double u = (double)b->useful, m = (double)b->mpi;
	double un = u / np, mn = m / np;
	fputs("    ", f);
	live_json_str(f, r->name);
	fprintf(f,
	        ": {\n      \"numCpus\": %zu,\n      \"numMpiRanks\": %zu,\n"
	        "      \"numNodes\": %zu,\n      \"avgCpus\": %.1f,\n"
	        "      \"cycles\": %llu,\n      \"instructions\": %llu,\n"
	        "      \"numMeasurements\": %d,\n      \"numMpiCalls\": %llu,\n"
	        "      \"numOmpParallels\": 0,\n      \"numOmpTasks\": 0,\n"
	        "      \"elapsedTime\": %llu,\n      \"usefulTime\": %llu,\n"
	        "      \"mpiTime\": %llu,\n      \"ompLoadImbalanceTime\": 0,\n"
	        "      \"ompSchedulingTime\": 0,\n"
	        "      \"ompSerializationTime\": 0,\n",
	        b->np, b->np, b->nodes, np,
	        (unsigned long long)(b->uncounted ? 0 : b->cycles),
	        (unsigned long long)(b->uncounted ? 0 : b->instr), r->runs,
	        (unsigned long long)b->issued,
	        (unsigned long long)r->elapsed_ns,
	        (unsigned long long)b->useful, (unsigned long long)b->mpi);
	fprintf(
	    f,
	    "      \"usefulNormdApp\": %.0f,\n      \"mpiNormdApp\": %.0f,\n"
	    "      \"maxUsefulNormdProc\": %.0f,\n"
	    "      \"maxUsefulNormdNode\": %.0f,\n"
	    "      \"mpiNormdOfMaxUseful\": %.0f,\n",
	    un, mn, b->max_proc, b->max_node, b->mpi_of_max);
	fprintf(f,
	        "      \"parallelEfficiency\": %.4f,\n"
	        "      \"mpiParallelEfficiency\": %.4f,\n"
	        "      \"mpiCommunicationEfficiency\": %.4f,\n"
	        "      \"mpiLoadBalance\": %.4f,\n"
	        "      \"mpiLoadBalanceIn\": %.4f,\n"
	        "      \"mpiLoadBalanceOut\": %.4f,\n"
	        "      \"ompParallelEfficiency\": 1.0000,\n"
	        "      \"ompLoadBalance\": 1.0000,\n"
	        "      \"ompSchedulingEfficiency\": 1.0000,\n"
	        "      \"ompSerializationEfficiency\": 1.0000\n    }",
	        ratio(u, u + m), ratio(u, u + m), ratio(b->max_proc, un + mn),
	        ratio(un, b->max_proc), ratio(b->max_node, b->max_proc),
	        ratio(un, b->max_node));
}

static void
talp_procs(FILE *f, const struct talp_region *r, const char **h, size_t nh)
{
	fputs("    ", f);
	live_json_str(f, r->name);
	fputs(": [", f);
	for (size_t i = 0; i < r->np; i++) {
		const struct talp_proc *p = &r->p[i];
		fprintf(f,
		        "%s\n      {\"rank\": %d, \"nodeId\": %zu, "
		        "\"hostname\": ",
		        i ? "," : "", p->id, host_index(h, nh, host_of(p)));
		live_json_str(f, host_of(p));
		fprintf(f,
		        ", \"numCpus\": 1, \"avgCpus\": 1.0, "
		        "\"cycles\": %llu, \"instructions\": %llu, "
		        "\"numMeasurements\": %d, \"numMpiCalls\": %llu, "
		        "\"elapsedTime\": %llu, \"usefulTime\": %llu, "
		        "\"mpiTime\": %llu}",
		        (unsigned long long)(p->hwc ? 0 : p->cycles),
		        (unsigned long long)(p->hwc ? 0 : p->instr), r->runs,
		        (unsigned long long)p->issued,
		        (unsigned long long)r->elapsed_ns,
		        (unsigned long long)p->useful_ns,
		        (unsigned long long)mpi_of(r, p));
	}
	fputs("\n    ]", f);
}

/* The processes and hosts of all regions (a process counts once). */
static void
talp_resources(FILE *f, const struct talp_region *r, int n)
{
	size_t all = 0;
	for (int i = 0; i < n; i++)
		all += r[i].np;
	const char **h = calloc(all + 1, sizeof *h);
	int *ids = calloc(all + 1, sizeof *ids);
	size_t nh = 0, np = 0;
	for (int i = 0; h && ids && i < n; i++)
		for (size_t k = 0; k < r[i].np; k++) {
			size_t j = 0;
			while (j < np && ids[j] != r[i].p[k].id)
				j++;
			if (j < np)
				continue;
			ids[np++] = r[i].p[k].id;
			h[nh++] = host_of(&r[i].p[k]);
		}
	nh = h ? hosts_sorted(h, nh) : 0;
	fprintf(f,
	        "  \"resources\": {\n    \"numCpus\": %zu,\n"
	        "    \"numNodes\": %zu,\n    \"numMpiRanks\": %zu\n  },\n",
	        np, nh, np);
	free(h);
	free(ids);
}

/* TALP writes 0 for counters it did not read (no PAPI): so do we, and
 * say why, so that no reader takes them for a count. */
static void
talp_counters(FILE *f, const struct talp_proc *unc)
{
	char why[300];
	if (!unc) {
		live_json_str(f, "user-mode cycles and instructions of the "
		                 "counted threads (perf_event_open)");
		return;
	}
	snprintf(why, sizeof why,
	         "not measured: process %d on %s: no hardware counters "
	         "(perf_event_open: %s); cycles and instructions are 0, as "
	         "TALP writes them without PAPI",
	         unc->id, host_of(unc),
	         unc->hwc > 0 && unc->hwc < 255 ? strerror(unc->hwc)
	                                        : "its counters were not told");
	live_json_str(f, why);
}

void
talp_write(FILE *f, const struct talp_region *r, int n)
{
	char ts[32];
	time_t now = time(NULL);
	struct tm tm;
	strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", localtime_r(&now, &tm));
	fprintf(f,
	        "{\n  \"dlbVersion\": \"3.5.0\",\n  \"timestamp\": \"%s\",\n",
	        ts);
	talp_resources(f, r, n);
	fputs("  \"Application\": {\n", f);
	size_t most = 1;
	for (int i = 0; i < n; i++)
		most = r[i].np > most ? r[i].np : most;
	const char **h = calloc(most, sizeof *h);
	for (int i = 0; h && i < n; i++) {
		struct talp_base b;
		talp_base_of(&r[i], h, &b);
		talp_app(f, &r[i], &b);
		fputs(i + 1 < n ? ",\n" : "\n", f);
	}
	fputs("  },\n  \"Process\": {\n", f);
	const struct talp_proc *unc = NULL;
	for (int i = 0; h && i < n; i++) {
		struct talp_base b;
		talp_base_of(&r[i], h, &b);
		talp_procs(f, &r[i], h, b.nodes);
		fputs(i + 1 < n ? ",\n" : "\n", f);
		unc = unc ? unc : b.uncounted;
	}
	fputs("  },\n  \"dwork\": {\"counters\": ", f);
	talp_counters(f, unc);
	fputs(", \"mapping\": \"docs/runtime.md, Regions\"}\n}\n", f);
	free(h);
}
