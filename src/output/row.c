/*
 * The .row: the names Paraver shows for each level of the trace's
 * objects — CPUs and nodes (hosts), the application, tasks, threads.
 * Plain ASCII, one name a line.
 */
#include "output/prv_int.h"

/* Control characters become spaces, bytes outside ASCII '?' (Paraver
 * reads the .row byte by byte). */
static void
row_put(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		fputc(ch < 0x20 ? ' ' : ch >= 0x7f ? '?' : ch, f);
	}
}

static void
row_level(FILE *f, const char *level, size_t n)
{
	fprintf(f, "LEVEL %s SIZE %zu\n", level, n);
}

static void
row_cpus(FILE *f, const mg_info *info)
{
	row_level(f, "CPU", info->ncpus);
	for (size_t n = 0; n < info->nnodes; n++) {
		for (uint32_t i = 0; i < info->nodes[n].ncpus; i++) {
			fprintf(f, "%u.", info->nodes[n].first_cpu + i + 1);
			row_put(f, info->nodes[n].name);
			fputc('\n', f);
		}
	}
	fputc('\n', f);
}

static void
row_names(FILE *f, const char *level, size_t n,
          const char *(*name)(const mg_info *, size_t), const mg_info *info)
{
	row_level(f, level, n);
	for (size_t i = 0; i < n; i++) {
		row_put(f, name(info, i));
		fputc('\n', f);
	}
	fputc('\n', f);
}

static const char *
node_name(const mg_info *info, size_t i)
{
	return info->nodes[i].name;
}

static const char *
appl_name(const mg_info *info, size_t i)
{
	(void)i;
	return info->program;
}

static const char *
task_name(const mg_info *info, size_t i)
{
	return info->tasks[i].name;
}

static const char *
thread_name(const mg_info *info, size_t i)
{
	return info->threads[i].name;
}

void
row_write(FILE *f, const mg_info *info)
{
	row_cpus(f, info);
	row_names(f, "NODE", info->nnodes, node_name, info);
	row_names(f, "APPL", 1, appl_name, info);
	row_names(f, "TASK", info->ntasks, task_name, info);
	row_names(f, "THREAD", info->nthreads, thread_name, info);
}
